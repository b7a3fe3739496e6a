"""Gradient-based tuning of an array of thresholds against a differentiable objective: the
optimizer of `jaxsched tune`, whose experiment (operating points, held-out comparison in the
exact engine) is jaxsched.kv.tuning.

`tune(objective_fn, init_thresholds, steps=..., key=...)` maximizes
`objective_fn(thresholds, key, temperature) -> scalar` over a real array of any shape (WAIT's
per-type thresholds, Nested WAIT's per-segment thresholds) with an optax optimizer. The
optimizer works on z = log(thresholds), so thresholds stay positive and a step changes them by
a relative amount whatever their scale. The temperature (passed through to the
objective, e.g. the gate temperature of jaxsched.kv.relaxed) decays geometrically from
`temperature[0]` to `temperature[1]` over the steps (annealing: smooth early, close to the hard
engine late). Every step draws a fresh key (a new noise sample of a stochastic objective).

The result's thresholds are exp(mean of z) over a window of `average_frac` of the steps
(iterate averaging, which damps the noise of stochastic gradients): with select="best" the
window whose mean recorded objective is highest (a guard against a late excursion, e.g. past
a stability cliff, that the gradients do not undo), with select="last" the final window.
Round them before handing them to an exact engine (`round_thresholds`, `integer_search`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..errors import require, require_float, require_int

Objective = Callable[[jnp.ndarray, jax.Array, jnp.ndarray], jnp.ndarray]


@dataclass
class TuneResult:
    """thresholds: float64 array of the input shape (the averaged tuned values).
    history: {"step": int[S], "objective": float[S] (the objective at each step's thresholds,
    before the update), "temperature": float[S], "thresholds": float[S, *shape]}.
    wall_s: seconds spent (compilation included)."""

    thresholds: np.ndarray
    history: dict[str, np.ndarray]
    wall_s: float


def temperatures(steps: int, start: float, end: float) -> np.ndarray:
    """float64[steps]: geometric schedule from start to end (both > 0)."""
    if steps == 1:
        return np.array([end], np.float64)
    return start * (end / start) ** (np.arange(steps) / (steps - 1))


def round_thresholds(thresholds) -> np.ndarray:
    """Nearest integers, at least 1 (int64, same shape): what the exact engines accept."""
    return np.maximum(np.rint(np.asarray(thresholds, np.float64)), 1).astype(np.int64)


def tune(
    objective_fn: Objective,
    init_thresholds,
    *,
    steps: int,
    key: jax.Array,
    optimizer: optax.GradientTransformation | None = None,
    temperature: tuple[float, float] = (1.0, 0.2),
    average_frac: float = 0.2,
    select: str = "best",
    progress: Callable[[int, float], None] | None = None,
) -> TuneResult:
    """Maximize objective_fn over thresholds > 0 (see the module docstring).

    objective_fn(thresholds float32[*shape], key, temperature float32 scalar) -> float scalar,
    differentiable in thresholds (jit-compatible). init_thresholds: array of any shape, > 0.
    optimizer: an optax transformation on log-thresholds (default: global-norm clipping at 1
    and Adam with learning rate 0.03). temperature: (start, end) of the geometric schedule.
    select: "best" or "last" window of the averaged result (module docstring).
    progress(step, objective) is called after every step.
    """
    import time

    steps = require_int(steps, "steps", lo=1)
    init = np.asarray(init_thresholds, np.float64)
    require(
        init.size >= 1 and bool(np.all(np.isfinite(init)) and np.all(init > 0)),
        "init_thresholds",
        "a non-empty array of finite values > 0",
        init.tolist(),
    )
    t0, t1 = (require_float(t, "temperature", lo=0.0, lo_open=True) for t in temperature)
    average_frac = require_float(average_frac, "average_frac", lo=0.0, hi=1.0, lo_open=True)
    require(select in ("best", "last"), "select", "'best' or 'last'", select)
    if optimizer is None:
        optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.03))
    temps = temperatures(steps, t0, t1)

    def loss(z, k, temp):
        return -objective_fn(jnp.exp(z), k, temp)

    @jax.jit
    def update(z, opt_state, k, temp):
        value, grad = jax.value_and_grad(loss)(z, k, temp)
        # A non-finite gradient (a rare noise sample) skips the step instead of poisoning z.
        grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
        upd, opt_state = optimizer.update(grad, opt_state, z)
        return optax.apply_updates(z, upd), opt_state, -value

    start = time.perf_counter()
    z = jnp.log(jnp.asarray(init, jnp.float32))
    opt_state = optimizer.init(z)
    hist_obj, hist_th = np.empty(steps), np.empty((steps, *init.shape))
    for i in range(steps):
        key, sub = jax.random.split(key)
        hist_th[i] = np.exp(np.asarray(z, np.float64))
        z, opt_state, value = update(z, opt_state, sub, jnp.float32(temps[i]))
        hist_obj[i] = float(value)
        if progress is not None:
            progress(i, hist_obj[i])
    w = max(1, int(round(average_frac * steps)))
    start_at = steps - w
    if select == "best":
        # hist_obj[i] is the objective at hist_th[i]: window means, best last on ties.
        means = np.convolve(hist_obj, np.ones(w) / w, mode="valid")
        start_at = int(len(means) - 1 - np.argmax(means[::-1]))
    final = np.exp(np.mean(np.log(hist_th[start_at : start_at + w]), axis=0))
    history = {"step": np.arange(steps), "objective": hist_obj, "temperature": temps, "thresholds": hist_th}
    return TuneResult(np.asarray(final, np.float64), history, time.perf_counter() - start)


def integer_search(
    objective_fn: Callable[[np.ndarray], float], start, *, radius: int = 1, max_box: int = 729, max_passes: int = 5
) -> tuple[np.ndarray, float]:
    """Round real thresholds by a local search over integers >= 1 (maximizing objective_fn).

    objective_fn(int64 array of start's shape) -> float (e.g. the relaxation at a low
    temperature with a fixed key: common random numbers make the comparisons fair).
    If (2 radius + 1)^size <= max_box: every integer point within `radius` of round(start) in
    each coordinate is evaluated. Otherwise coordinate descent from round(start): moves of one
    coordinate by +-1..radius, best improvement first, at most max_passes passes.
    Returns (best integer array, its objective).
    """
    import itertools

    x0 = round_thresholds(start)
    radius = require_int(radius, "radius", lo=0)
    offsets = range(-radius, radius + 1)
    if (2 * radius + 1) ** x0.size <= max_box:
        best, best_v = x0, float(objective_fn(x0))
        for d in itertools.product(offsets, repeat=x0.size):
            x = np.maximum(x0 + np.asarray(d, np.int64).reshape(x0.shape), 1)
            v = float(objective_fn(x))
            if v > best_v:
                best, best_v = x, v
        return best, best_v
    best, best_v = x0, float(objective_fn(x0))
    for _ in range(max_passes):
        improved = False
        for i in range(x0.size):
            for d in offsets:
                if d == 0:
                    continue
                x = best.copy().reshape(-1)
                x[i] = max(1, x[i] + d)
                x = x.reshape(x0.shape)
                v = float(objective_fn(x))
                if v > best_v:
                    best, best_v, improved = x, v, True
        if not improved:
            break
    return best, best_v
