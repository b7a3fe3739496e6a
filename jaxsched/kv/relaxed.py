"""A differentiable relaxation of the thresholded kv engine (WAIT and Nested WAIT).

The exact engine (docs/kv-semantics.md) tracks requests one by one; thresholds enter only
through hard tests (`queue >= n`) and integer takes (`min(n, count)`), so its outputs are
piecewise constant in the thresholds. This module replaces it by a count model whose outputs
are smooth functions of real-valued thresholds, for gradient-based tuning (jaxsched.tune):

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

Tuning experiments (`tune_setup`, `tune_experiment`, `jaxsched tune e3|e4`): the E3 / E4
operating points are documented at `_POINTS`. A held-out comparison in the exact engine is
only meaningful between stable systems, so `exact_comparison` checks every arm
(`stability_issues`: no dropped arrivals, no arrivals lost to a full request table, every
request completed, every seed finished) and marks the comparison invalid otherwise (the CLI
then exits with status 2). E4 keeps the notes' workload and one segment per type at
Lambda = 50 req/s, rho = 0.6, n_1* = 32.5, but with a request table Q = 32768: the engine's
table is a ring, and Q = 8192 was shorter than the ~16.3k arrivals during a 500-token request's
stay, so ~17% of the arrivals were lost for every threshold set (a table artifact, not an
overload: with Q = 32768 the fluid thresholds lose none, complete all N = 15000 requests and
have a mean latency of 103.8 s against the fluid 103 s).
"""
from __future__ import annotations

from dataclasses import dataclass

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..errors import require, require_float, require_int
from .config import KVConfig
from ..fluid import FluidTypes, equilibrium

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


def relaxed_system(config: KVConfig, *, rates, d0_s: float, d1_s_per_token: float,
                   capacity_tokens: float) -> RelaxedSystem:
    """The relaxation of `config` (policy "wait" or "nested_wait") at constant rates [m] req/s."""
    require(config.policy in RELAXED_POLICIES, "policy", f"one of {RELAXED_POLICIES} for the "
            "relaxation", config.policy)
    rates = np.asarray(rates, np.float64)
    require(rates.shape == (config.m,) and bool(np.all(rates > 0)), "rates",
            f"an array [m = {config.m}] of rates > 0 (req/s)", rates.tolist())
    d0 = require_float(d0_s, "d0_s", lo=0.0, lo_open=True)
    d1 = require_float(d1_s_per_token, "d1_s_per_token", lo=0.0)
    C = require_float(capacity_tokens, "capacity_tokens", lo=0.0, lo_open=True)
    pre = np.asarray(config.prefill_tokens, np.float64)
    dec = np.asarray(config.decode_tokens, np.int64)
    K = config.num_stages
    k = np.arange(K)
    dt = equilibrium(FluidTypes(prefill=pre, decode=dec, rates=rates, d0=d0, d1=d1,
                                capacity=C)).iteration_time
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
        valid=f32(valid), work=f32(work), survive=f32(survive), done_tokens=f32(done),
        rate=f32(rate), group=jnp.asarray(group, jnp.int32),
        entry_row=jnp.asarray(entry_row, jnp.int32),
        entry_stage=jnp.asarray(entry_stage, jnp.int32),
        gated=jnp.asarray(entry_stage == 0), init_state=f32(init), d0_s=f32(d0),
        d1_s_per_token=f32(d1), capacity_tokens=f32(C), nested=config.policy == "nested_wait")


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


def step(sys: RelaxedSystem, thresholds: jnp.ndarray, temp, state: jnp.ndarray,
         eps: tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray], noise: bool):
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


def run(sys: RelaxedSystem, cfg: RelaxedConfig, thresholds: jnp.ndarray, temp,
        key: jax.Array) -> RelaxedMetrics:
    """Simulate one noise sample for cfg.steps steps; metrics over the steps after the burn-in.

    thresholds: float[G] (real, > 0; group order of the engine's thresholds). temp: the gate /
    min temperature in requests (> 0). key: jax PRNG key of the noise.
    """
    R, K = sys.valid.shape
    k1, k2, k3 = jax.random.split(key, 3)
    H = cfg.steps
    eps = (jax.random.normal(k1, (H, R)), jax.random.normal(k2, (H, R)),
           jax.random.normal(k3, (H, R, K)))
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
        busy_fraction=jnp.sum(w * out.busy) / jnp.sum(w))


def run_mean(sys: RelaxedSystem, cfg: RelaxedConfig, thresholds: jnp.ndarray, temp,
             key: jax.Array) -> RelaxedMetrics:
    """`run` averaged over cfg.samples independent noise samples (vmapped)."""
    keys = jax.random.split(key, cfg.samples)
    out = jax.vmap(lambda k: run(sys, cfg, thresholds, temp, k))(keys)
    return jax.tree_util.tree_map(lambda x: jnp.mean(x, axis=0), out)


def objective(sys: RelaxedSystem, cfg: RelaxedConfig, thresholds: jnp.ndarray, temp,
              key: jax.Array, *, lam: float, memory_weight: float) -> jnp.ndarray:
    """Throughput (tokens/s) - lam * mean latency (s) - memory_weight * overflow, to maximize.

    lam: tokens/s per s of latency. memory_weight: tokens/s charged per unit of the
    time-averaged relative overflow (memory above C, as a fraction of C).
    """
    m = run_mean(sys, cfg, thresholds, temp, key)
    return m.throughput_tokens_per_s - lam * m.latency_mean_s - memory_weight * m.overflow


# ---------------------------------------------------------------------------------------------
# E3 / E4 operating points for tuning, and the held-out comparison in the exact engine


@dataclass(frozen=True)
class TuneSetup:
    """An operating point of Nested WAIT for threshold tuning (static; see `tune_setup`).

    config: the exact engine's KVConfig (policy nested_wait, finite N, drain).
    rates: (m,) req/s; d0_s (s), d1_s_per_token (s/token), capacity_tokens C.
    lam: tokens/s per s of mean latency in the objective throughput - lam * latency.
    memory_weight: tokens/s per unit of relative overflow (relaxation only).
    throughput_star: fluid throughput (8), tokens/s; latency_fluid: fluid latency
    dT* sum_j (lambda_j / Lambda)(l'_j + 1), s (every stage one fluid iteration).
    relaxed: the relaxation's RelaxedConfig. learning_rate: Adam's, on log-thresholds.
    """
    name: str
    config: KVConfig
    rates: tuple[float, ...]
    d0_s: float
    d1_s_per_token: float
    capacity_tokens: int
    lam: float
    memory_weight: float
    throughput_star: float
    latency_fluid: float
    relaxed: RelaxedConfig
    learning_rate: float = 0.03

    def exact_params(self, thresholds):
        """KVParams of the exact engine with integer thresholds (None = the fluid default)."""
        from .config import make_params
        return make_params(self.config, rates=self.rates, d0_s=self.d0_s,
                           d1_s_per_token=self.d1_s_per_token,
                           capacity_tokens=self.capacity_tokens, thresholds=thresholds)

    def segments(self):
        """The fluid module's Segments of this setup (one segment per type)."""
        from ..fluid import nested_segments
        types = FluidTypes(prefill=np.asarray(self.config.prefill_tokens, float),
                           decode=np.asarray(self.config.decode_tokens),
                           rates=np.asarray(self.rates), d0=self.d0_s, d1=self.d1_s_per_token,
                           capacity=float(self.capacity_tokens))
        return nested_segments(types)

    def system(self) -> RelaxedSystem:
        """The relaxation of this setup."""
        return relaxed_system(self.config, rates=self.rates, d0_s=self.d0_s,
                              d1_s_per_token=self.d1_s_per_token,
                              capacity_tokens=float(self.capacity_tokens))


# Workloads of notes/001.md §4: (prefill, decode lengths, rate ratios).
_WORKLOADS = {
    "e3": (10, (20, 40, 80, 160), (20, 40, 80, 160)),
    "e4": (60, tuple(range(50, 501, 50)), (23, 11, 8, 7, 6, 4, 3, 2, 1, 1)),
}
# Operating points: total rate Lambda (req/s), load rho = d1 A, fluid entry threshold
# n_1* = Lambda dT* (sets d0 = (n_1* / Lambda)(1 - rho)), requests N, table size Q, relaxation
# steps / burn-in, Adam learning rate (on log-thresholds; smaller for E4, whose objective
# falls off a cliff once n_1 < n_1*, a cliff the damped gradients do not climb back).
# n_1* is kept small for fast exact runs. E3: n_1* = 6 is an integer, so the fluid n_1 = 6 sits
# on the first line of (10) (arrivals per iteration = n_1: a critical stage-0 queue), and the
# later fluid values (5.6, 4.8, 3.2) are rounded up (the authors' code, make_params' default),
# above their inflow; the tail-rate practical rule gives the same integers. This is the room:
# notes §3.2, the paper's thresholds sit on the boundary of (10). E4: n_1* = 32.5 (rounded
# thresholds 33:22:16:12:9:6:4:2:1:1, all above the fluid values, half the paper's
# 66:43:32:24:17:11:7:4:2:1); its last segments receive fewer than one request per stage and
# iteration. The table size Q matters for E4: the engine's request table is a ring (request id
# in slot id mod Q), so Q must exceed the arrivals during the longest stay, about
# Lambda (l'_max + 1) dT* = 50 * 501 * 0.65 = 16.3k requests (every stage one fluid iteration).
# With Q = 8192 a long request still held its slot when id + Q arrived, and ~17% of the
# arrivals were lost (table_overflow) for the fluid and the tuned thresholds alike: not an
# overload of the policy but a too-small table, which also hid the slow requests from the
# metrics. Q = 32768 (2x the bound; `tune_setup` checks Q >= 1.5x it) gives zero losses, all
# N requests completed and a mean latency within 2% of the fluid one for the fluid thresholds
# (checked on the held-out seeds by `exact_comparison`, which refuses an unstable comparison).
_POINTS = {
    "e3": dict(total_rate=20.0, rho=0.6, n1=6.0, num_requests=12_000, table_size=4096,
               steps=1500, burn=500, lr=0.03),
    "e4": dict(total_rate=50.0, rho=0.6, n1=32.5, num_requests=15_000, table_size=32_768,
               steps=2500, burn=1000, lr=0.01),
}
# Margin of Q over the arrivals during the longest fluid stay, Lambda (l'_max + 1) dT*.
_TABLE_MARGIN = 1.5
TUNE_SETUPS = tuple(_POINTS)


def tune_setup(name: str, *, num_requests: int | None = None, lam: float | None = None,
               lam_factor: float = 0.1, capacity_factor: float = 1.5,
               samples: int = 8) -> TuneSetup:
    """The E3 / E4 operating point `name` (documented in `_POINTS`).

    C = capacity_factor * M^pi of the rounded fluid thresholds (room for the segment queues).
    lam default: lam_factor * throughput* / latency_fluid: with lam_factor = 1 a 1% change of
    throughput and a 1% change of latency (relative to the fluid values) move the objective
    equally; the default 0.1 prices 1% of throughput like 10% of latency.
    """
    require(name in _POINTS, "name", f"one of {TUNE_SETUPS}", name)
    pre, dec, ratio = _WORKLOADS[name]
    pt = _POINTS[name]
    ratio = np.asarray(ratio, np.float64)
    rates = pt["total_rate"] * ratio / ratio.sum()
    dec_a = np.asarray(dec)
    work = float(np.dot(rates, (dec_a + 1) * (pre + dec_a / 2)))
    d1 = pt["rho"] / work
    d0 = pt["n1"] / pt["total_rate"] * (1 - pt["rho"])
    N = pt["num_requests"] if num_requests is None else require_int(num_requests, "num_requests",
                                                                      lo=1)
    config = KVConfig(prefill_tokens=(pre,) * len(dec), decode_tokens=dec, policy="nested_wait",
                      num_requests=N, table_size=pt["table_size"], max_epochs=400_000)
    from .config import _segment_work, default_thresholds
    # The ring table must outlast the longest stay (see _POINTS), else arrivals are lost:
    # Lambda (l'_max + 1) dT* = (l'_max + 1) n_1* arrivals.
    stay = float((dec_a.max() + 1) * pt["n1"])
    require(pt["table_size"] >= _TABLE_MARGIN * stay, "table_size",
            f">= {_TABLE_MARGIN} x the arrivals during the longest fluid stay ({stay:.0f})",
            pt["table_size"])
    n_fluid = default_thresholds(config, rates, d0, d1, 1e12)
    C = int(np.ceil(capacity_factor * float(np.dot(n_fluid, _segment_work(config)))))
    eq = equilibrium(FluidTypes(prefill=np.full(len(dec), float(pre)), decode=dec_a, rates=rates,
                                d0=d0, d1=d1, capacity=float(C)))
    lat = eq.iteration_time * float(np.dot(rates / rates.sum(), dec_a + 1))
    lam = lam_factor * eq.throughput / lat if lam is None else require_float(lam, "lam", lo=0.0)
    return TuneSetup(name=name, config=config, rates=tuple(rates.tolist()), d0_s=d0,
                     d1_s_per_token=d1, capacity_tokens=C, lam=lam,
                     memory_weight=10.0 * eq.throughput, throughput_star=eq.throughput,
                     latency_fluid=lat,
                     relaxed=RelaxedConfig(steps=pt["steps"], burn_steps=pt["burn"],
                                           samples=samples),
                     learning_rate=pt["lr"])


def fluid_baselines(setup: TuneSetup) -> dict[str, np.ndarray]:
    """Fluid-derived integer thresholds: "fluid" = ceil(c_min Lambda_i) (make_params' default),
    "practical" = the tail-rate rule of Sec. 6.2 with the batch limit B = sum_i s_i c_min
    Lambda_i (the fluid batch; rounded up as the authors' code does)."""
    from .config import default_thresholds
    from ..fluid import nested_thresholds, nested_thresholds_practical
    seg = setup.segments()
    fluid = default_thresholds(setup.config, np.asarray(setup.rates), setup.d0_s,
                               setup.d1_s_per_token, float(setup.capacity_tokens))
    B = int(round(float(np.dot(seg.stages, nested_thresholds(seg)))))
    return {"fluid": np.asarray(fluid, np.int64),
            "practical": np.asarray(nested_thresholds_practical(seg, B), np.int64)}


def relaxed_objective(setup: TuneSetup):
    """objective(thresholds, key, temperature) of the relaxation for jaxsched.tune.tune, in
    units of throughput* (so its gradients are O(1)): (thr - lam lat - w overflow) / thr*."""
    sys = setup.system()
    scale = 1.0 / setup.throughput_star

    def fn(thresholds, key, temp):
        return scale * objective(sys, setup.relaxed, thresholds, temp, key, lam=setup.lam,
                                 memory_weight=setup.memory_weight)
    return fn


def exact_objective(setup: TuneSetup, thresholds, seeds) -> dict[str, np.ndarray]:
    """Run the exact engine with integer thresholds on `seeds`; per-seed metrics plus
    "objective" = throughput_tokens_per_s - lam * latency_mean_s (tokens/s)."""
    from .run import simulate
    res = simulate(setup.config, setup.exact_params(thresholds), seeds)
    out = dict(res.metrics)
    out["objective"] = out["throughput_tokens_per_s"] - setup.lam * out["latency_mean_s"]
    out["wall_s"] = np.full(len(seeds), res.wall_s)
    return out


def stability_issues(metrics: dict[str, np.ndarray], num_requests: int | None) -> list[str]:
    """Why per-seed exact metrics [S] do not describe a stable run ([] when they do).

    A run counts as stable when no arrival was dropped (num_dropped) or lost to a full request
    table (table_overflow), every seed finished (done) without stalling, and every one of the
    num_requests requests completed (None: every arrival). An overloaded system fails at least
    one of these, and its throughput and latency then describe a truncated run.
    """
    out = []
    for key, what in (("num_dropped", "dropped arrivals"),
                      ("table_overflow", "arrivals lost to a full request table")):
        total = int(np.sum(metrics[key]))
        if total:
            out.append(f"{total} {what}")
    target = metrics["num_arrived"] if num_requests is None else num_requests
    unfinished = int(np.sum(np.asarray(target, np.float64) - metrics["num_completed"]))
    if unfinished:
        out.append(f"{unfinished} requests not completed")
    for key, what in (("done", "seeds not finished"), ("stalled", "seeds stalled")):
        bad = int(np.sum(metrics[key] == 0)) if key == "done" else int(np.sum(metrics[key] > 0))
        if bad:
            out.append(f"{bad} {what}")
    return out


def exact_comparison(setup: TuneSetup, candidates: dict[str, np.ndarray], seeds: list[int], *,
                     log=None) -> dict:
    """Exact runs of every candidate (label -> int thresholds [L]; "tuned" first) on the same
    seeds, paired differences tuned - baseline of the objective, and the stability guard.

    Returns {"exact": label -> per-seed metrics, "diffs": baseline -> mean_ci tuple,
    "issues": label -> stability_issues, "valid": True only when every arm is stable,
    "table": markdown of the arms, "diff_table": markdown of the differences, "wall_s"}.
    A difference between arms of which one is unstable is reported but marked invalid.
    """
    import time

    from ..results import format_value, markdown_table
    from ..stats import mean_ci
    say = log or (lambda msg: None)
    exact, done, t1 = {}, {}, time.perf_counter()
    for label, th in candidates.items():
        k = tuple(np.asarray(th).tolist())
        if k not in done:  # equal thresholds give equal runs: simulate once
            done[k] = exact_objective(setup, th, seeds)
        exact[label] = done[k]
        say(f"exact {label} {np.asarray(th).tolist()}: objective "
            f"{exact[label]['objective'].mean():.1f}")
    wall = time.perf_counter() - t1
    N = setup.config.num_requests
    issues = {label: stability_issues(m, N) for label, m in exact.items()}
    diffs = {b: mean_ci(exact["tuned"]["objective"] - exact[b]["objective"])
             for b in candidates if b != "tuned"}
    rows = []
    for label, th in candidates.items():
        m = exact[label]
        mo, _, ho, _ = mean_ci(m["objective"])
        rows.append([label, str(np.asarray(th).tolist()),
                     f"{format_value(mo)} ± {format_value(ho)}",
                     format_value(m["throughput_tokens_per_s"].mean()),
                     format_value(m["latency_mean_s"].mean()),
                     format_value(m["preemption_count"].mean()),
                     format_value(m["num_dropped"].sum() + m["table_overflow"].sum()),
                     format_value(m["num_completed"].mean()),
                     "yes" if not issues[label] else "NO: " + "; ".join(issues[label])])
    table = markdown_table(["thresholds", "n", "objective (tokens/s) ± 95% CI",
                            "throughput (tokens/s)", "latency (s)", "preemptions",
                            "dropped + table overflow", "completed per seed", "stable"], rows)
    dl = []
    for b, d in diffs.items():
        ok = not issues["tuned"] and not issues[b]
        dl.append([f"tuned - {b}", format_value(d[0]),
                   f"[{format_value(d[0] - d[2])}, {format_value(d[0] + d[2])}]",
                   "yes" if abs(d[0]) > d[2] else "no",
                   "yes" if ok else "NO (an arm is unstable)"])
    diff_table = markdown_table(["difference", "mean", "95% CI", "excludes 0", "valid"], dl)
    return {"exact": exact, "diffs": diffs, "issues": issues,
            "valid": not any(issues.values()), "table": table, "diff_table": diff_table,
            "wall_s": wall}


def tune_experiment(name: str, *, steps: int = 200, lam: float | None = None,
                    seeds=range(1000, 1032), out_dir=None, key: int = 0,
                    log=None) -> dict:
    """`jaxsched tune e3|e4`: tune the Nested WAIT thresholds of `name` on the relaxation, round
    them, and compare them with the fluid-derived thresholds in the exact engine on `seeds`
    (held out: the relaxation only ever sees jax PRNG keys derived from `key`).

    Steps: (1) jaxsched.tune.tune from the real fluid thresholds c_min Lambda_i; (2) rounding by
    jaxsched.tune.integer_search around the tuned values on the relaxation at temperature 0.05
    (16 samples, one fixed key); (3) `exact_comparison`: exact runs of tuned, "fluid" and
    "practical" thresholds on the same seeds (common random numbers), per-seed objective
    throughput - lam * latency, the 95% CI of the paired differences tuned - baseline
    (jaxsched.results.mean_ci), and the stability guard (valid = no arm drops arrivals, loses
    them to a full table or leaves requests unfinished).
    out_dir: writes thresholds.json, history.csv, tuning.png, heldout.csv, comparison.md.
    Returns {"setup", "result", "tuned", "baselines", "exact", "diffs", "issues", "valid",
    "markdown", wall times}.
    """
    import dataclasses
    import time
    from pathlib import Path

    import optax

    from ..tune import integer_search, tune
    from ..fluid import nested_thresholds
    say = log or (lambda msg: None)
    setup = tune_setup(name, lam=lam)
    seeds = [int(s) for s in seeds]
    init = nested_thresholds(setup.segments())
    t0 = time.perf_counter()
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(setup.learning_rate))
    res = tune(relaxed_objective(setup), init, steps=steps, key=jax.random.PRNGKey(key),
               optimizer=opt,
               progress=lambda i, v: say(f"step {i}: objective {v:.4f}") if i % 25 == 0 else None)
    fine = dataclasses.replace(setup, relaxed=dataclasses.replace(setup.relaxed, samples=16))
    fn = jax.jit(relaxed_objective(fine))
    score_key = jax.random.PRNGKey(key + 1)
    score = lambda x: float(fn(jnp.asarray(x, jnp.float32), score_key, 0.05))  # noqa: E731
    tuned, _ = integer_search(score, res.thresholds)
    tune_wall = time.perf_counter() - t0
    say(f"tuned {np.round(res.thresholds, 3).tolist()} -> {tuned.tolist()} ({tune_wall:.1f} s)")
    candidates = {"tuned": tuned, **fluid_baselines(setup)}
    cmp = exact_comparison(setup, candidates, seeds, log=say)
    verdict = ("All arms stable: the comparison is valid." if cmp["valid"] else
               "**INVALID comparison**: at least one arm dropped arrivals, lost them to a full "
               "request table or left requests unfinished (column stable); its throughput and "
               "latency describe a truncated run.")
    md = (f"# jaxsched tune {name}\n\nOperating point: rates {np.round(setup.rates, 4).tolist()} "
          f"req/s, d0 = {setup.d0_s:.6g} s, d1 = {setup.d1_s_per_token:.6g} s/token, "
          f"C = {setup.capacity_tokens} tokens, N = {setup.config.num_requests} requests, "
          f"Q = {setup.config.table_size}, segments {list(setup.config.segment_bounds)}; "
          f"lam = {setup.lam:.6g} (tokens/s)/s; {len(seeds)} held-out seeds "
          f"{seeds[0]}..{seeds[-1]}.\n\n{cmp['table']}\n\n{verdict}\n\nPaired differences "
          f"of the objective (same seeds):\n\n{cmp['diff_table']}\n\nWall: tuning + rounding "
          f"{tune_wall:.1f} s, exact runs {cmp['wall_s']:.1f} s.\n")
    out = {"setup": setup, "result": res, "tuned": tuned, "baselines": candidates,
           "exact": cmp["exact"], "diffs": cmp["diffs"], "issues": cmp["issues"],
           "valid": cmp["valid"], "markdown": md, "tune_wall_s": tune_wall,
           "exact_wall_s": cmp["wall_s"]}
    if out_dir is not None:
        _write_experiment(Path(out_dir), out, seeds)
    return out


def _write_experiment(out: Path, run: dict, seeds: list[int]) -> None:
    """The files of `tune_experiment` (see there)."""
    import json

    from ..plots import plot_tuning
    from ..results import write_csv
    out.mkdir(parents=True, exist_ok=True)
    setup, res = run["setup"], run["result"]
    doc = {"experiment": setup.name, "lam": setup.lam, "rates": list(setup.rates),
           "d0_s": setup.d0_s, "d1_s_per_token": setup.d1_s_per_token,
           "capacity_tokens": setup.capacity_tokens, "num_requests": setup.config.num_requests,
           "tuned_real": res.thresholds.tolist(),
           **{k: np.asarray(v).tolist() for k, v in run["baselines"].items()},
           "diffs": {k: {"mean": d[0], "half_width_95": d[2], "n": d[3]}
                     for k, d in run["diffs"].items()},
           "valid": run["valid"], "issues": run["issues"],
           "tune_wall_s": run["tune_wall_s"], "exact_wall_s": run["exact_wall_s"]}
    (out / "thresholds.json").write_text(json.dumps(doc, indent=2))
    h = res.history
    write_csv(out / "history.csv", ({"step": int(h["step"][i]), "objective": h["objective"][i],
                                     "temperature": h["temperature"][i],
                                     **{f"n{j + 1}": h["thresholds"][i, j]
                                        for j in range(h["thresholds"].shape[1])}}
                                    for i in range(len(h["step"]))))
    plot_tuning(h, out / "tuning.png", title=f"{setup.name}: relaxed objective / throughput*")
    write_csv(out / "heldout.csv", ({"thresholds": label, "seed": s, **{
        k: m[k][i] for k in ("objective", "throughput_tokens_per_s", "latency_mean_s",
                             "preemption_count", "num_completed", "num_dropped",
                             "table_overflow")}}
        for label, m in run["exact"].items() for i, s in enumerate(seeds)))
    (out / "comparison.md").write_text(run["markdown"])
