"""Compare ordering algorithms on the same instances: latency metrics and solver wall times.

Every experiment of paper 002 asks one question: on these n-request instances with KV limit M,
what does each algorithm's order give? `evaluate` answers it for any subset of `ALGORITHMS`:
the JAX policies (FCFS, MC-SF, MC-SF2, Sorted-F with each Phase-1 solver) run vmapped over the
instances; the LP orders (Sorted-LP, LP-Swap) are solved by HiGHS on the host, one instance at
a time (`lp.py`). Every order then goes through the same executor (`instances.execute`), under
each requested step-time model. Solver wall time excludes JAX compilation (reported apart).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import require_choice
from .config import instance_params
from .instances import compiled_orders, execute, policy_config
from .registry import STEP_MODELS as STEP_MODEL_REGISTRY


@dataclass(frozen=True)
class Algorithm:
    """An ordering algorithm: a JAX policy name (kind "policy") or an LP order ("lp")."""

    kind: str
    name: str
    label: str


ALGORITHMS = {
    a.name: a
    for a in (
        Algorithm("policy", "fcfs", "FCFS"),
        Algorithm("policy", "mcsf", "MC-SF"),
        Algorithm("policy", "mcsf2", "MC-SF2"),
        Algorithm("policy", "sorted_f_dp", "Sorted-F (DP)"),
        Algorithm("policy", "sorted_f_scaled", "Sorted-F (Scaled DP)"),
        Algorithm("policy", "sorted_f_swap", "Sorted-F (Swap)"),
        Algorithm("policy", "sorted_f_quantile", "Sorted-F (Quantile)"),
        Algorithm("lp", "sorted_lp", "Sorted-LP"),
        Algorithm("lp", "lp_swap", "LP-Swap"),
    )
}
# {name: make_params keywords} of the registered step-time models (registry.STEP_MODELS).
STEP_MODELS = {name: entry.fn for name, entry in STEP_MODEL_REGISTRY.items()}


@dataclass
class Evaluation:
    """One algorithm on S instances: its orders (int32[S, n]), metrics per step model
    ({model: {metric: float64[S]}}), solver run seconds for all S instances (compilation
    excluded) and compile seconds."""

    algorithm: Algorithm
    orders: np.ndarray
    metrics: dict[str, dict[str, np.ndarray]]
    solve_s: float
    compile_s: float


def solve(
    name: str,
    s: np.ndarray,
    o: np.ndarray,
    M: int,
    seeds: Sequence[int],
    *,
    options: Mapping | None = None,
    lp_options: Mapping | None = None,
    y: np.ndarray | None = None,
    progress=None,
) -> tuple[np.ndarray, float, float]:
    """(orders int32[S, n], solve seconds, compile seconds) of algorithm `name` on the instances
    (s, o: int[S, n] tokens) with KV limit M. options: OfflineConfig solver options (dp_width,
    epsilon, ...); lp_options: keywords of lp.relaxed_lp (e.g. time_step); y: the LP starts
    (float64[S, n]) already solved, so that Sorted-LP and LP-Swap share one LP per instance
    (their solve time then excludes the LP)."""
    alg = ALGORITHMS[require_choice(name, "algorithm", tuple(ALGORITHMS))]
    s, o = np.atleast_2d(s), np.atleast_2d(o)
    if alg.kind == "lp":
        from . import lp

        t0 = time.perf_counter()
        out = lp.lp_orders(
            s, o, M, alg.name, progress=progress, y=y, **({} if y is not None else dict(lp_options or {}))
        )
        return np.asarray(out, np.int32), time.perf_counter() - t0, 0.0
    config = policy_config(alg.name, s.shape[1], **dict(options or {}))
    compile_s, run = compiled_orders(config, instance_params(M), s, o, seeds)
    t0 = time.perf_counter()
    out = run()
    return out, time.perf_counter() - t0, compile_s


def evaluate(
    names: Sequence[str],
    s: np.ndarray,
    o: np.ndarray,
    M: int,
    seeds: Sequence[int],
    *,
    models: Sequence[str] = ("unit",),
    options: Mapping | None = None,
    lp_options: Mapping | None = None,
    progress=None,
) -> dict[str, Evaluation]:
    """Each algorithm of `names` on the instances (s, o: int[S, n]) with KV limit M, executed
    under each step-time model of `models` (keys of STEP_MODELS). progress: a `Progress`
    advanced once per algorithm (len(names) units; the caller declares the total). The relaxed LP is solved
    once per instance for both LP orders;
    its time is added to each LP order's solve time (what either alone would cost)."""
    for m in models:
        require_choice(m, "step model", tuple(STEP_MODELS))
    y, lp_s = None, 0.0
    if sum(ALGORITHMS[require_choice(n, "algorithm", tuple(ALGORITHMS))].kind == "lp" for n in names) > 1:
        from .lp import relaxed_lps

        t0 = time.perf_counter()
        y = relaxed_lps(np.atleast_2d(s), np.atleast_2d(o), M, **dict(lp_options or {}))
        lp_s = time.perf_counter() - t0
    out = {}
    for name in names:
        lp = ALGORITHMS[name].kind == "lp"
        order, solve_s, compile_s = solve(
            name, s, o, M, seeds, options=options, lp_options=lp_options, y=y if lp else None
        )
        solve_s += lp_s if lp else 0.0
        metrics = {m: execute(instance_params(M, **STEP_MODELS[m]), s, o, order) for m in models}
        out[name] = Evaluation(ALGORITHMS[name], order, metrics, solve_s, compile_s)
        if progress is not None:
            progress.advance(1, name)
    return out


def phase1_batches(
    s: np.ndarray, o: np.ndarray, M: int, solver: str, *, dp_width: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted-F's Phase 1 on each instance (s, o: int[S, n]) with solver "dp" (exact, table
    width dp_width >= M) or "swap": (order int32[S, n], batch int32[S, n]), batch[i] the index
    of the Phase-1 batch request i joined (selection order; n for requests never chosen)."""
    import functools

    import jax
    import jax.numpy as jnp

    from . import sorted_f

    require_choice(solver, "solver", ("dp", "swap"))
    fn = functools.partial(sorted_f.exact_dp, cap=int(dp_width or M)) if solver == "dp" else sorted_f.local_swap
    run = jax.jit(jax.vmap(lambda s, o: sorted_f.phase1(s, o, M, fn)))
    order, batch = run(jnp.asarray(np.atleast_2d(s), jnp.int32), jnp.asarray(np.atleast_2d(o), jnp.int32))
    return np.asarray(order), np.asarray(batch)
