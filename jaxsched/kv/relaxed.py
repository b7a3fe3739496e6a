"""A differentiable relaxation of the thresholded kv engine (WAIT and Nested WAIT).

The exact engine (docs/kv-semantics.md) tracks requests one by one; thresholds enter only
through hard tests (`queue >= n`) and integer takes (`min(n, count)`), so its outputs are
piecewise constant in the thresholds. This module replaces it by a count model whose outputs
are smooth functions of real-valued thresholds, for gradient-based tuning (jaxsched.kv.tune):

- State: S[r, k] >= 0, the (real) number of requests of row r at stage k. WAIT: one row per
  type, stages 0..l'_j. Nested WAIT: one row (all types mixed), stages 0..max l'_j.
- Threshold groups g: WAIT group j = row j, entry queue (j, 0); Nested WAIT group i = segment i,
  entry queue (0, e_i). Each (r, k) belongs to one group.
- One step = "idle until something can fire, then one batch", as in the engine (§5): the GPU
  idles until the first arrival-gated entry queue reaches its threshold (mean time: deficit /
  rate; smooth deficit T softplus((n - S) / T), smooth min over WAIT's types), then
    gate_g = sigmoid((S_entry_g - n_g + 1/2) / T)    (the hard test S >= n for integer S),
  Nested WAIT takes the prefix product of the gates (segment i runs only if 1..i all do), WAIT
  uses each gate alone; batch b[r, k] = gate_{g(r,k)} * softmin_T(S[r, k], n_g).
- Iteration time tau = d0 * P(some batch) + d1 * sum b (l + k) (eq. (1)); arrivals during the
  idle wait and during the batch are Poisson(rate * time), replaced by reparameterized lognormals
  of the same mean and variance; processed requests at stage k survive to k + 1 with the
  probability q_k (1 for WAIT below l'_j; for Nested WAIT the share of the arrival rate whose
  decode length exceeds k) with Binomial noise as a reparameterized Gaussian. The noise matters:
  with means only, a queue at the boundary of (9) / (10) never builds up, so the relaxation would
  not see why the fluid thresholds are slow.
- Memory at a batch start: every request at stage >= 1 (resident) plus the stage-0 members,
  each l + k tokens, as in §5 step 6 (preemption is not modelled: the objective pays a smooth
  penalty for memory above C instead).
- Over a window of steps after a burn-in: throughput = completed tokens (l'_j + 1 per request,
  the engine's count) / time; mean latency = time-averaged number in system / arrival rate
  (Little's law); overflow = time average of softplus-smoothed (memory - C)_+ / C.

As T -> 0 the gates and mins become the engine's hard tests (the remaining differences: real
counts and Gaussian noise in place of integers and Poisson, mean-field type mix at a stage for
Nested WAIT, no restart preemption, no end-of-run drain). Units: tokens, requests, seconds.

The tuning experiment built on it (`jaxsched tune e3|e4`) is `jaxsched.kv.tuning`; its
operating points and results: docs/kv-experiments.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..errors import require, require_float, require_int
from .config import KVConfig
from .fluid import FluidTypes, equilibrium

RELAXED_POLICIES = ("wait", "nested_wait")


@dataclass(frozen=True)
class RelaxedConfig:
    """Static settings of the relaxation.

    steps: number of steps (batches, each with its idle wait) simulated per sample.
    burn_steps: steps discarded before the metrics window (start-up transient), < steps.
    samples: independent noise samples averaged per objective evaluation.
    noise: True = Gaussian Poisson / Binomial noise (reparameterized); False = means only.
    grad_decay: in [0, 1], the factor applied to the gradient flowing back through the state
    at every step (values are unchanged). Through hundreds of sharp gates the exact gradient of
    a noisy path explodes (a chaotic recurrence: 1e20 and more at T = 0.1); damping keeps the
    gradient of the last ~1 / (1 - grad_decay) steps' dynamics (a truncated-BPTT estimator,
    biased but finite). 1 = exact gradient.
    """

    steps: int = 1500
    burn_steps: int = 500
    samples: int = 8
    noise: bool = True
    grad_decay: float = 0.9

    def __post_init__(self):
        require_int(self.steps, "steps", lo=2)
        require_int(self.burn_steps, "burn_steps", lo=0, hi=self.steps - 1)
        require_int(self.samples, "samples", lo=1)
        require(isinstance(self.noise, bool), "noise", "True or False", self.noise)
        require_float(self.grad_decay, "grad_decay", lo=0.0, hi=1.0)


class RelaxedSystem(eqx.Module):
    """Arrays of one kv system in the row x stage layout (build with `relaxed_system`).

    R rows, K stages, G threshold groups.
    valid: float32[R, K] 1 where stage k exists for row r. work: float32[R, K] l + k tokens.
    survive: float32[R, K] probability that a request processed at (r, k) goes on to k + 1.
    done_tokens: float32[R, K] tokens credited per request completing at (r, k) (l'_j + 1).
    rate: float32[R] arrivals/s into (r, 0). group: int32[R, K] threshold group of (r, k).
    entry_row, entry_stage: int32[G] the queue whose count gates group g.
    gated: bool[G] groups whose entry is a stage-0 queue (the idle wait ends when one fires).
    init_state: float32[R, K] fluid per-stage counts, the start state.
    d0_s, d1_s_per_token, capacity_tokens: float32 scalars (eq. (1), C).
    nested: static, True = prefix-product gates (Nested WAIT), False = independent (WAIT).
    """

    valid: jnp.ndarray
    work: jnp.ndarray
    survive: jnp.ndarray
    done_tokens: jnp.ndarray
    rate: jnp.ndarray
    group: jnp.ndarray
    entry_row: jnp.ndarray
    entry_stage: jnp.ndarray
    gated: jnp.ndarray
    init_state: jnp.ndarray
    d0_s: jnp.ndarray
    d1_s_per_token: jnp.ndarray
    capacity_tokens: jnp.ndarray
    nested: bool = eqx.field(static=True)

    @property
    def total_rate(self) -> jnp.ndarray:
        """Lambda = sum of the row rates, requests/s."""
        return jnp.sum(self.rate)


def relaxed_system(
    config: KVConfig, *, rates, d0_s: float, d1_s_per_token: float, capacity_tokens: float
) -> RelaxedSystem:
    """The relaxation of `config` (policy "wait" or "nested_wait") at constant rates [m] req/s."""
    require(config.policy in RELAXED_POLICIES, "policy", f"one of {RELAXED_POLICIES} for the relaxation", config.policy)
    rates = np.asarray(rates, np.float64)
    require(
        rates.shape == (config.m,) and bool(np.all(rates > 0)),
        "rates",
        f"an array [m = {config.m}] of rates > 0 (req/s)",
        rates.tolist(),
    )
    d0 = require_float(d0_s, "d0_s", lo=0.0, lo_open=True)
    d1 = require_float(d1_s_per_token, "d1_s_per_token", lo=0.0)
    C = require_float(capacity_tokens, "capacity_tokens", lo=0.0, lo_open=True)
    pre = np.asarray(config.prefill_tokens, np.float64)
    dec = np.asarray(config.decode_tokens, np.int64)
    K = config.num_stages
    k = np.arange(K)
    dt = equilibrium(FluidTypes(prefill=pre, decode=dec, rates=rates, d0=d0, d1=d1, capacity=C)).iteration_time
    if config.policy == "wait":
        valid = (k[None, :] <= dec[:, None]).astype(np.float64)
        work = (pre[:, None] + k[None, :]) * valid
        survive = (k[None, :] < dec[:, None]).astype(np.float64)
        done = np.where(k[None, :] == dec[:, None], dec[:, None] + 1.0, 0.0)
        group = np.repeat(np.arange(config.m)[:, None], K, axis=1)
        entry_row, entry_stage = np.arange(config.m), np.zeros(config.m, np.int64)
        init = rates[:, None] * dt * valid
        rate = rates
    else:
        # reach[k]: arrival rate of the types still in the system at stage k (l'_j >= k).
        reach = np.array([rates[dec >= kk].sum() for kk in k])
        ends = np.array([rates[dec == kk].sum() for kk in k])
        valid = (reach > 0).astype(np.float64)[None, :]
        work = (pre[0] + k[None, :]) * valid
        survive = np.where(reach > 0, 1.0 - ends / np.where(reach > 0, reach, 1.0), 0.0)[None, :]
        done = np.where(ends > 0, k + 1.0, 0.0)[None, :]
        group = config.stage_segment()[None, :].astype(np.int64)
        entry_stage = config.segment_entry().astype(np.int64)
        entry_row = np.zeros_like(entry_stage)
        init = (reach * dt)[None, :]
        rate = rates.sum(keepdims=True)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return RelaxedSystem(
        valid=f32(valid),
        work=f32(work),
        survive=f32(survive),
        done_tokens=f32(done),
        rate=f32(rate),
        group=jnp.asarray(group, jnp.int32),
        entry_row=jnp.asarray(entry_row, jnp.int32),
        entry_stage=jnp.asarray(entry_stage, jnp.int32),
        gated=jnp.asarray(entry_stage == 0),
        init_state=f32(init),
        d0_s=f32(d0),
        d1_s_per_token=f32(d1),
        capacity_tokens=f32(C),
        nested=config.policy == "nested_wait",
    )


def _softmin(a: jnp.ndarray, b: jnp.ndarray, temp) -> jnp.ndarray:
    """min(a, b) smoothed: a - T softplus((a - b) / T) (error <= T log 2), clipped at 0."""
    return jnp.maximum(a - temp * jax.nn.softplus((a - b) / temp), 0.0)


def _noisy(mean: jnp.ndarray, var: jnp.ndarray, eps: jnp.ndarray, on: bool) -> jnp.ndarray:
    """mean + sqrt(var) eps (a reparameterized Gaussian), or the mean when noise is off."""
    if not on:
        return mean
    # The noise scale is held constant under differentiation: gradients flow through the means
    # only (d sqrt(var) is unbounded near 0 and made long back-propagations explode).
    return mean + jax.lax.stop_gradient(jnp.sqrt(jnp.maximum(var, 0.0))) * eps


def _poisson_like(mean: jnp.ndarray, eps: jnp.ndarray, on: bool) -> jnp.ndarray:
    """A reparameterized stand-in for Poisson(mean) >= 0: the lognormal with the same mean and
    variance, mean exp(s eps - s^2 / 2) with s^2 = log(1 + 1 / mean). (A Gaussian clipped at 0
    overstates small means: +18% at mean 0.56.) s is constant under differentiation."""
    if not on:
        return mean
    s = jax.lax.stop_gradient(jnp.sqrt(jnp.log1p(1.0 / jnp.maximum(mean, 1e-6))))
    return mean * jnp.exp(s * eps - 0.5 * s * s)


class StepOut(eqx.Module):
    """Per-step outputs (scalars): dt_s (idle + busy time), in_system (requests at the start),
    done_tokens (tokens of requests completed), memory_tokens (at the batch start), busy (the
    probability that a batch ran)."""

    dt_s: jnp.ndarray
    in_system: jnp.ndarray
    done_tokens: jnp.ndarray
    memory_tokens: jnp.ndarray
    busy: jnp.ndarray


def step(
    sys: RelaxedSystem,
    thresholds: jnp.ndarray,
    temp,
    state: jnp.ndarray,
    eps: tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray],
    noise: bool,
):
    """One idle wait plus one (soft) batch. thresholds: float[G]; state: float[R, K] counts;
    eps: standard normals ([R], [R], [R, K]) for idle arrivals, busy arrivals, survivals."""
    n = thresholds
    lam = sys.total_rate
    in_system = jnp.sum(state)
    # Idle until the first arrival-gated entry queue reaches its threshold.
    entry = lambda s: s[sys.entry_row, sys.entry_stage]  # noqa: E731
    deficit = temp * jax.nn.softplus((n - entry(state)) / temp)
    wait_s = deficit / sys.rate[sys.entry_row]
    scale = temp / lam
    idle = -scale * jax.nn.logsumexp(jnp.where(sys.gated, -wait_s / scale, -jnp.inf))
    idle = jnp.maximum(idle, 0.0)
    arr = _poisson_like(sys.rate * idle, eps[0], noise)
    state = state.at[:, 0].add(arr)
    sig = jax.nn.sigmoid((entry(state) - n + 0.5) / temp)
    gate = jnp.cumprod(sig) if sys.nested else sig
    any_batch = gate[0] if sys.nested else 1.0 - jnp.prod(1.0 - sig)
    b = gate[sys.group] * _softmin(state, n[sys.group], temp) * sys.valid
    memory = jnp.sum(state[:, 1:] * sys.work[:, 1:]) + jnp.sum(b[:, 0] * sys.work[:, 0])
    busy = any_batch * sys.d0_s + sys.d1_s_per_token * jnp.sum(b * sys.work)
    moved = _noisy(b * sys.survive, b * sys.survive * (1.0 - sys.survive), eps[2], noise)
    moved = jnp.clip(moved, 0.0, b)
    done = jnp.sum((b - moved) * sys.done_tokens)
    shifted = jnp.pad(moved[:, :-1], ((0, 0), (1, 0)))
    arr2 = _poisson_like(sys.rate * busy, eps[1], noise)
    state = ((state - b + shifted) * sys.valid).at[:, 0].add(arr2)
    return state, StepOut(idle + busy, in_system, done, memory, any_batch)


class RelaxedMetrics(eqx.Module):
    """Window metrics of one sample (scalars): throughput_tokens_per_s, latency_mean_s (Little),
    overflow (time-averaged smoothed (memory - C)_+ / C), busy_fraction (batches per step)."""

    throughput_tokens_per_s: jnp.ndarray
    latency_mean_s: jnp.ndarray
    overflow: jnp.ndarray
    busy_fraction: jnp.ndarray


def run(sys: RelaxedSystem, cfg: RelaxedConfig, thresholds: jnp.ndarray, temp, key: jax.Array) -> RelaxedMetrics:
    """Simulate one noise sample for cfg.steps steps; metrics over the steps after the burn-in.

    thresholds: float[G] (real, > 0; group order of the engine's thresholds). temp: the gate /
    min temperature in requests (> 0). key: jax PRNG key of the noise.
    """
    R, K = sys.valid.shape
    k1, k2, k3 = jax.random.split(key, 3)
    H = cfg.steps
    eps = (jax.random.normal(k1, (H, R)), jax.random.normal(k2, (H, R)), jax.random.normal(k3, (H, R, K)))
    thresholds = jnp.asarray(thresholds, jnp.float32)

    def body(state, e):
        frozen = jax.lax.stop_gradient(state)
        state = frozen + cfg.grad_decay * (state - frozen)
        return step(sys, thresholds, temp, state, e, cfg.noise)

    _, out = jax.lax.scan(body, sys.init_state, eps)
    w = (jnp.arange(H) >= cfg.burn_steps).astype(jnp.float32)
    time_s = jnp.sum(w * out.dt_s)
    C = sys.capacity_tokens
    over = 0.01 * C * jax.nn.softplus((out.memory_tokens - C) / (0.01 * C)) / C
    return RelaxedMetrics(
        throughput_tokens_per_s=jnp.sum(w * out.done_tokens) / time_s,
        latency_mean_s=jnp.sum(w * out.in_system * out.dt_s) / time_s / sys.total_rate,
        overflow=jnp.sum(w * over * out.dt_s) / time_s,
        busy_fraction=jnp.sum(w * out.busy) / jnp.sum(w),
    )


def run_mean(sys: RelaxedSystem, cfg: RelaxedConfig, thresholds: jnp.ndarray, temp, key: jax.Array) -> RelaxedMetrics:
    """`run` averaged over cfg.samples independent noise samples (vmapped)."""
    keys = jax.random.split(key, cfg.samples)
    out = jax.vmap(lambda k: run(sys, cfg, thresholds, temp, k))(keys)
    return jax.tree_util.tree_map(lambda x: jnp.mean(x, axis=0), out)


def objective(
    sys: RelaxedSystem,
    cfg: RelaxedConfig,
    thresholds: jnp.ndarray,
    temp,
    key: jax.Array,
    *,
    lam: float,
    memory_weight: float,
) -> jnp.ndarray:
    """Throughput (tokens/s) - lam * mean latency (s) - memory_weight * overflow, to maximize.

    lam: tokens/s per s of latency. memory_weight: tokens/s charged per unit of the
    time-averaged relative overflow (memory above C, as a fraction of C).
    """
    m = run_mean(sys, cfg, thresholds, temp, key)
    return m.throughput_tokens_per_s - lam * m.latency_mean_s - memory_weight * m.overflow
