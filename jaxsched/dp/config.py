"""Validated run configuration of the dp engine: static config and traced params.

`DPConfig` fixes array shapes and code paths (changing it recompiles); `DPParams` holds the
numbers a sweep may vary without recompiling (it is an equinox Module of arrays, so `vmap`
batches over it). Every invalid value raises one `ConfigError` naming the field and the allowed
range, when the object is built, before anything compiles.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import equinox as eqx
import jax.numpy as jnp

from ..errors import (
    ConfigError,
    Reads,
    changed_fields,
    changed_keywords,
    merge_reads,
    reads_from,
    refuse_ignored,
    require,
    require_choice,
    require_float,
    require_int,
)
from ..workload import INT32_MAX, BurstGPTLike, Workload
from .registry import POLICIES, PREDICTORS, SEMANTICS

# The loads headroom below int32 that the wide accumulators need (see jaxsched/accumulate.py).
LOAD_LIMIT = INT32_MAX - 2**24
# Queueing delays are histogrammed on a log grid from DELAY_MIN_S to DELAY_MAX_S (bin 0 holds
# exact zeros; jaxsched.histogram) so that the p99 needs no per-request storage.
DELAY_MIN_S = 1e-4
DELAY_MAX_S = 1e5
# Largest per-step drift (tokens). It keeps the drift draw's integer product 24 bits * 65 below
# 2^31 (see jaxsched.dp.engine.step_drift) and is far above speculative decoding's few tokens.
DRIFT_MAX = 64
# Cap on the step counter and on the cumulative drift D_k (both int32; slot bases are s - D_k).
STEP_LIMIT = INT32_MAX // 4


def default_step_const_s(slots_per_worker: int) -> float:
    """Barrier overhead C of one decode step (s): (B * 0.6 ms + 35 ms) / 16 (BF-IO paper)."""
    return (slots_per_worker * 0.6e-3 + 35e-3) / 16


DEFAULT_PER_TOKEN_S = 1.5 * 2 * 576 * 61e-6 / 2**20
"""Per-token attention time t_l (s/token) of the BF-IO paper's experiments."""

# What reads BF-IO's predictions' error parameters (make_params keywords): the predictor that
# draws them. `jaxsched run` reads --noise, --fp-rate and --fn-rate under the same conditions.
PREDICTOR_READS = {
    "noise_lo": (Reads("predictor", ("noisy",)),),
    "noise_hi": (Reads("predictor", ("noisy",)),),
    "fp_rate": (Reads("predictor", ("classifier",)),),
    "fn_rate": (Reads("predictor", ("classifier",)),),
}


def option_reads() -> dict[str, tuple[Reads, ...]]:
    """What reads each DPConfig field and make_params keyword that not every run reads: the
    policies' registry options first (BF-IO reads its kernel, lookahead, predictor and the
    predictions' error rates; user policies' options too), then the predictor's."""
    return merge_reads(reads_from(POLICIES, "policy"), PREDICTOR_READS)


@dataclass(frozen=True)
class DPConfig:
    """Static configuration of a dp run.

    num_workers G, slots_per_worker B, pool_size R: the shapes. lookahead_steps H: BF-IO's
    lookahead, in decode steps (0 = the per-step valley fill; formerly `horizon`).
    semantics: "paper" (the BF-IO paper's experiment simulator) or "theory" (the dynamics of
    its proofs). num_steps: decode steps per scan.
    burn_in_steps: steps not measured (theory semantics). workload: request-length source (see
    jaxsched.workload).
    lookahead_decay: BF-IO (H >= 1) weighs window row h by round(128 * decay^h).
    bfio_kernel: the BF-IO H = 0 assignment kernel, a name in kernels.BFIO_VARIANTS ("vf": valley
    fill; "vf_ls", "vf_ls_chain": with local search; "ms_ls", "ms_ls_chain": multi-start;
    "ms_lf": 41 starts and level fills, the most exact and the costliest; "round_lpt", "window":
    for the theory semantics; see the kernel table of docs/papers/000-bfio.md).
    delay_bins: bins of the queueing-delay histogram (p99).
    drift: (lo, hi), semantics "theory" only: in step k every active request grows by a common
    delta_k uniform on {lo, ..., hi} tokens (BF-IO Theorem 3) instead of 1; (1, 1) is the plain
    +1 growth and draws nothing. See docs/dp-semantics.md.
    policy_set: () (default: the config runs `policy`), or two or more policy names of which
    each run picks one by its traced `DPParams.policy_index` (`DPEngine.switch`): one compiled
    program for all of them, each run computing every policy's choice (a `lax.switch` under
    `vmap` is a select). `policy` is then policy_set[0].
    """

    num_workers: int = 16
    slots_per_worker: int = 72
    pool_size: int = 64
    lookahead_steps: int = 0
    policy: str = "bfio"
    semantics: str = "paper"
    predictor: str = "oracle"
    num_steps: int = 2000
    burn_in_steps: int = 0
    workload: Workload = field(default_factory=BurstGPTLike)
    lookahead_decay: float = 0.7
    bfio_kernel: str = "vf"
    delay_bins: int = 512
    drift: tuple[int, int] = (1, 1)
    policy_set: tuple[str, ...] = ()

    def __post_init__(self):
        G = require_int(self.num_workers, "num_workers (G)", lo=1, hi=65536)
        B = require_int(self.slots_per_worker, "slots_per_worker (B)", lo=1, hi=65536)
        require_int(self.pool_size, "pool_size (R)", lo=1, hi=65536)
        H = require_int(self.lookahead_steps, "lookahead_steps (H)", lo=0, hi=4096)
        require_int(self.num_steps, "num_steps", lo=1, hi=STEP_LIMIT)
        require_int(self.burn_in_steps, "burn_in_steps", lo=0, hi=self.num_steps - 1)
        require_int(self.delay_bins, "delay_bins", lo=2, hi=65536)
        require_choice(self.policy, "policy", POLICIES)
        self._check_policy_set()
        require_choice(self.semantics, "semantics", SEMANTICS)
        require_choice(self.predictor, "predictor", PREDICTORS)
        lo, hi = self._check_drift()
        wl = self.workload
        # An instance, not its class: a class has the attributes too, as unbound functions.
        require(
            not isinstance(wl, type) and hasattr(wl, "sample") and hasattr(wl, "max_prompt"),
            "workload",
            "a jaxsched.workload workload instance (e.g. BurstGPTLike())",
            wl,
        )
        # Integer safety: the largest possible worker load must leave headroom in int32 for
        # G * max(L) (the imbalance) and for the wide accumulators. A request grows by at most
        # `hi` per step over its o steps, so its load is at most s + hi * o.
        max_len = wl.max_prompt + hi * wl.max_output
        # "ms_lf" also runs valley fill on loads jittered by up to 2 median request sizes.
        max_load = (B + 2 * (self.bfio_kernel == "ms_lf")) * max_len
        if G * max_load > LOAD_LIMIT:
            growth = "max output" if hi == 1 else f"drift hi {hi} * max output"
            raise ConfigError(
                f"num_workers * slots_per_worker * (max prompt + {growth}) = {G} * {B} * {max_len} "
                f"= {G * max_load} could overflow int32 loads; it must be <= {LOAD_LIMIT} "
                f"(reduce G or B, or cap the workload's lengths)"
            )
        if hi * self.num_steps > STEP_LIMIT:
            # The cumulative drift D_k <= hi * k is int32 and slot bases are s - D_k.
            raise ConfigError(
                f"drift hi * num_steps = {hi} * {self.num_steps} = {hi * self.num_steps} could "
                f"overflow the int32 cumulative drift; it must be <= {STEP_LIMIT} "
                "(lower num_steps or drift)"
            )
        require_float(self.lookahead_decay, "lookahead_decay", lo=0.0, hi=1.0, lo_open=True)
        from ..kernels import BFIO_VARIANTS

        require_choice(self.bfio_kernel, "bfio_kernel", BFIO_VARIANTS)
        if "bfio" in self.policies and H > 0:
            # The lookahead score sums w_h * (s - G * overflow) over the window in int32.
            from ..kernels import window_weights

            wsum = int(window_weights(H + 1, self.lookahead_decay).sum())
            bound = wsum * (G + 1) * wl.max_prompt
            if bound > LOAD_LIMIT:
                raise ConfigError(
                    f"lookahead score bound sum(w) * (G + 1) * max prompt = {wsum} * {G + 1} * "
                    f"{wl.max_prompt} = {bound} could overflow int32; it must be <= {LOAD_LIMIT} "
                    "(lower lookahead_steps (H) or lookahead_decay, or G)"
                )
            # A projected row adds up to H * projection_drift tokens of future growth per slot.
            proj = B * (max_len + self.projection_drift * H)
            if proj > LOAD_LIMIT:
                raise ConfigError(
                    f"projected lookahead loads slots_per_worker * (max load per slot + "
                    f"projection drift * lookahead_steps (H)) = {B} * ({max_len} + {self.projection_drift} "
                    f"* {H}) = {proj} could overflow int32; it must be <= {LOAD_LIMIT} "
                    "(lower lookahead_steps (H), drift or B)"
                )
        if self.semantics == "theory" and wl.num_requests is not None:
            raise ConfigError(
                "semantics 'theory' needs an unbounded request stream; got a workload "
                f"with num_requests = {wl.num_requests} (use a resampled trace)"
            )

    def _check_drift(self) -> tuple[int, int]:
        """Validate `drift` and store it as a tuple of Python ints (hashable); returns it."""
        allowed = f"a pair (lo, hi) of integers with 0 <= lo <= hi <= {DRIFT_MAX}"
        d = self.drift
        require(isinstance(d, (tuple, list)) and len(d) == 2, "drift", allowed, d)
        lo = require_int(d[0], "drift lo", lo=0, hi=DRIFT_MAX)
        hi = require_int(d[1], "drift hi", lo=0, hi=DRIFT_MAX)
        require(lo <= hi, "drift", allowed, d)
        # The paper's experiment simulator grows every request by exactly one token per step.
        require(
            (lo, hi) == (1, 1) or self.semantics == "theory",
            "drift",
            f"(1, 1) with semantics {self.semantics!r} (a drift other than (1, 1) needs "
            f"semantics 'theory'; there {allowed})",
            d,
        )
        object.__setattr__(self, "drift", (lo, hi))
        return lo, hi

    def _check_policy_set(self) -> None:
        """Validate `policy_set` and store it as a tuple of str."""
        ps = self.policy_set
        allowed = "() or a tuple of two or more distinct policy names, policy_set[0] == policy"
        require(isinstance(ps, (tuple, list)) and all(isinstance(p, str) for p in ps), "policy_set", allowed, ps)
        if ps:
            for p in ps:
                require_choice(p, "policy_set entry", POLICIES)
            require(len(ps) >= 2 and len(set(ps)) == len(ps) and ps[0] == self.policy, "policy_set", allowed, ps)
        object.__setattr__(self, "policy_set", tuple(ps))

    @property
    def policies(self) -> tuple[str, ...]:
        """The policies a run of this config may run: policy_set, or (policy,)."""
        return self.policy_set or (self.policy,)

    @property
    def num_requests(self) -> int | None:
        """Finite number of requests (sequential traces) or None for an unbounded stream."""
        return self.workload.num_requests

    @property
    def window(self) -> int:
        """Rows of the lookahead window, H + 1."""
        return self.lookahead_steps + 1

    @property
    def projection_drift(self) -> int:
        """Growth per future step in the lookahead projection: the mean drift rounded down."""
        return (self.drift[0] + self.drift[1]) // 2


class DPSizes(eqx.Module):
    """The sizes of one run padded into a larger config (a size bucket), as traced int32
    scalars: num_workers G <= config.num_workers, slots_per_worker B <= config.slots_per_worker,
    pool_size R <= config.pool_size, lookahead_steps H <= config.lookahead_steps (both >= 1
    or both 0). Workers g >= G, slots b >= B of each worker, pool entries p >= R and lookahead
    rows h > H exist in the arrays but never hold a request and enter no metric or score, so the
    run's metrics are bitwise those of the unpadded run (`DPEngine.pad`, tests/dp/test_buckets.py).
    lookahead_weights int32[config.window]: the run's own window weights
    (`window_weights(H + 1, its lookahead_decay)`, the same integers), 0 beyond its H: the decay
    rides in the params too (`VALUE_FIELDS`), so runs of different decays share a bucket."""

    num_workers: jnp.ndarray
    slots_per_worker: jnp.ndarray
    pool_size: jnp.ndarray
    lookahead_steps: jnp.ndarray
    lookahead_weights: jnp.ndarray


class DPParams(eqx.Module):
    """Traced parameters of a dp run (scalars; vmap over them for grids).

    step_const_s: barrier overhead C per step (s). per_token_s: t_l (s/token).
    noise_lo, noise_hi: multiplicative prediction noise o * U[1 - lo, 1 + hi] ("noisy").
    fp_rate, fn_rate: error rates of the "finishes within H" classifier ("classifier").
    idle_power_w, max_power_w, power_exponent: per-worker power P = idle + (max - idle) * u^exp.
    sizes: the run's sizes inside a size bucket (`DPSizes`), or None.
    """

    step_const_s: jnp.ndarray
    per_token_s: jnp.ndarray
    noise_lo: jnp.ndarray
    noise_hi: jnp.ndarray
    fp_rate: jnp.ndarray
    fn_rate: jnp.ndarray
    idle_power_w: jnp.ndarray
    max_power_w: jnp.ndarray
    power_exponent: jnp.ndarray
    # The run's own sizes when it runs padded inside a size bucket (`DPEngine.pad`); None: the
    # config's shapes are the run's sizes. Not part of a results key: the point's config is.
    sizes: DPSizes | None = eqx.field(default=None, metadata={"identity": False})
    # int32 index into config.policy_set when the config switches policies (`DPEngine.switch`).
    policy_index: jnp.ndarray | None = eqx.field(default=None, metadata={"identity": False})


def make_params(
    config: DPConfig,
    *,
    step_const_s: float | None = None,
    per_token_s: float = DEFAULT_PER_TOKEN_S,
    noise_lo: float = 0.0,
    noise_hi: float = 0.0,
    fp_rate: float = 0.0,
    fn_rate: float = 0.0,
    idle_power_w: float = 100.0,
    max_power_w: float = 400.0,
    power_exponent: float = 0.7,
) -> DPParams:
    """Validated DPParams with the BF-IO paper's defaults (C depends on B).

    Options the run ignores are refused here (one ConfigError naming the option and what reads
    it, `option_reads`): a DPConfig field set away from its default or a keyword given, where
    neither the config's policies nor its predictor read it (noise_hi with policy fcfs or with
    predictor oracle; lookahead_steps with policy jsq_tokens). Here and not in DPConfig, which
    the engine rebuilds under each policy of a policy set (`DPEngine.switch`). Inside
    `errors.as_one_grid` (a sweep's points, a comparison of policies sharing one base config
    and these keywords) the grid refuses only an option that none of its points reads.
    """
    require(
        isinstance(config, DPConfig),
        "config",
        "a DPConfig (dp.make_params builds the dp engine's params)",
        type(config).__name__,
    )
    keywords = dict(
        step_const_s=step_const_s,
        per_token_s=per_token_s,
        noise_lo=noise_lo,
        noise_hi=noise_hi,
        fp_rate=fp_rate,
        fn_rate=fn_rate,
        idle_power_w=idle_power_w,
        max_power_w=max_power_w,
        power_exponent=power_exponent,
    )
    if step_const_s is None:
        step_const_s = default_step_const_s(config.slots_per_worker)
    vals = dict(
        step_const_s=require_float(step_const_s, "step_const_s", lo=0.0, lo_open=True),
        per_token_s=require_float(per_token_s, "per_token_s", lo=0.0),
        noise_lo=require_float(noise_lo, "noise_lo", lo=0.0, hi=1.0),
        noise_hi=require_float(noise_hi, "noise_hi", lo=0.0, hi=10.0),
        fp_rate=require_float(fp_rate, "fp_rate", lo=0.0, hi=1.0),
        fn_rate=require_float(fn_rate, "fn_rate", lo=0.0, hi=1.0),
        idle_power_w=require_float(idle_power_w, "idle_power_w", lo=0.0),
        max_power_w=require_float(max_power_w, "max_power_w", lo=0.0),
        power_exponent=require_float(power_exponent, "power_exponent", lo=0.0, lo_open=True),
    )
    require(vals["max_power_w"] >= vals["idle_power_w"], "max_power_w", ">= idle_power_w", vals["max_power_w"])
    reads = option_reads()
    given = changed_fields(config, [f.name for f in dataclasses.fields(config) if f.name in reads])
    given += [k for k in changed_keywords(make_params, keywords) if k in reads]
    refuse_ignored(given, {"policy": config.policies, "predictor": config.predictor}, reads)
    # Predicted lengths must stay in int32 range: o_max * (1 + noise_hi) < 2^24.
    if config.workload.max_output * (1 + vals["noise_hi"]) > 2**24:
        raise ConfigError(
            "noise_hi must keep predicted lengths <= 2^24 tokens, got "
            f"{noise_hi} with max output {config.workload.max_output}"
        )
    return DPParams(**{k: jnp.float32(v) for k, v in vals.items()})
