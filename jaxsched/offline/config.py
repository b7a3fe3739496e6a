"""Configuration of the offline engine: n requests at t = 0 on one worker with KV limit M.

`OfflineConfig` (static) names the request batch (`workload`: a `jaxsched.workload.Batch`, or a
`Trace` with order="sequential" for one fixed instance), the ordering policy and the step
budget. `make_params` builds the traced `OfflineParams`: the KV limit M and the step-time model.

Step-time model (the paper gives no coefficients, so the linear model's are assumed):
duration of step t = step_const_s + per_decode_s * (requests decoding at t)
                     + per_prefill_token_s * (prompt tokens of requests admitted at t)
                     + per_kv_token_s * (KV tokens held at t).
The default (1, 0, 0, 0) is the papers' unit step, so times in seconds equal step counts.
`LINEAR_STEP_MODEL` is a documented guess in the spirit of the Vidur regression the paper cites.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require, require_choice, require_float, require_int
from .policies import POLICIES

# Unit steps (the papers' model): every step lasts 1 "second", i.e. times are step counts.
UNIT_STEP_MODEL = dict(step_const_s=1.0, per_decode_s=0.0, per_prefill_token_s=0.0,
                       per_kv_token_s=0.0)
# ASSUMED coefficients of a linear step-time model for a 70B model on two A100s (the paper's
# setting, M = 16,492): 25 ms fixed cost per step, 0.1 ms per decoding request, 0.05 ms per
# prompt token prefilled (about 20k prefill tokens/s), 2 us per KV token read. The paper and
# its Vidur source give no numbers; these only set plausible relative weights.
LINEAR_STEP_MODEL = dict(step_const_s=0.025, per_decode_s=1e-4, per_prefill_token_s=5e-5,
                         per_kv_token_s=2e-6)
# The KV limit of the paper's real-data experiment (LLaMA2-70B on 2 x A100).
PAPER_CAPACITY_TOKENS = 16_492
INT_LIMIT = 2**30


@dataclass(frozen=True)
class OfflineConfig:
    """Static configuration of an offline run.

    workload: the n requests of each run: `Batch(base, n)` (lengths drawn per seed) or a
      `Trace(prompt, output, order="sequential")` (the same instance for every seed), or the
      name of a request mix of `workloads.named` ("uniform", ..., "mix", "azure"; what a sweep's
      `--set workload=NAME` gives), resolved to its Batch with `num_requests` requests.
    num_requests: n for a workload given by name (default: the mix's own, e.g. 100); given
      with a Batch, it resizes the Batch to n jobs. The size of a size bucket
      (`OfflineEngine.pad`): runs of different n share one compiled program.
    policy: the order the executor admits requests in (`POLICIES`).
    max_steps: scan steps after which a run is cut (default: the sum of the largest possible
      outputs, which bounds any makespan since each request alone fits).
    Options of Sorted-F's Phase-1 solvers (read only by the policy named; paper 002, §5):
    dp_width: static table width of the exact DP (`sorted_f_dp`), tokens; M must not exceed
      it (default 256: the paper's synthetic M = 100 fits). Memory per instance is about (n + 1)(dp_width + 1)(4 + 4 ceil(n / 32)) bytes.
    epsilon, scale_b: the scaled DP's (`sorted_f_scaled`) accuracy and scale: weights are
      divided by lambda = max(1, epsilon M / scale_b) and rounded up. The paper gives no
      values; 0.1 and 100 are ASSUMED (notes/002.md §6).
    quantile, sample_fraction: quantile greedy's (`sorted_f_quantile`) thresholds are the
      `quantile`-quantiles of s + o and of o over a random sample of max(1, floor(
      sample_fraction |I|)) remaining requests (the paper's 0.3 and 0.5).
    """
    workload: Any
    policy: str = "mcsf"
    max_steps: int | None = None
    num_requests: int | None = None
    dp_width: int = 256
    epsilon: float = 0.1
    scale_b: int = 100
    quantile: float = 0.3
    sample_fraction: float = 0.5

    def __post_init__(self):
        from .workloads import named
        w = resolve_batch(self, lambda name, n: named(name, n)[0])
        require_int(w.num_requests, "workload.num_requests (n)", lo=1, hi=1 << 20)
        # Quantile greedy hashes (round, request) as round * 2^16 + index (sorted_f.py).
        require(self.policy != "sorted_f_quantile" or w.num_requests <= 1 << 16,
                "workload.num_requests (n)", "<= 65536 with policy sorted_f_quantile",
                w.num_requests)
        require_choice(self.policy, "policy", tuple(POLICIES))
        if self.max_steps is not None:
            require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)
        require_int(self.dp_width, "dp_width", lo=2, hi=1 << 20)
        require_float(self.epsilon, "epsilon", lo=1e-3, hi=1.0)
        require_int(self.scale_b, "scale_b", lo=1, hi=100_000)
        require(self.scale_b / self.epsilon <= 1 << 20, "scale_b / epsilon",
                "<= 2^20 (the scaled DP's table width)", self.scale_b / self.epsilon)
        require_float(self.quantile, "quantile", lo=0.0, hi=1.0)
        require_float(self.sample_fraction, "sample_fraction", lo=1e-6, hi=1.0)

    @property
    def n(self) -> int:
        return int(self.workload.num_requests)

    @property
    def steps(self) -> int:
        """Scan steps of a run (max_steps, or n times the largest output: a bound on any
        makespan)."""
        if self.max_steps is not None:
            return self.max_steps
        fixed = fixed_instance(self)
        if fixed is not None:
            return max(1, int(fixed[1].sum()))
        return min(INT_LIMIT, self.n * int(self.workload.max_output))


def resolve_batch(config, named):
    """The batch workload of an offline or interval config, set on the (frozen) config: a name
    is resolved by `named(name, num_requests)`; anything else must be a Batch or a sequential
    Trace (a fixed number of jobs, all at t = 0). A given `num_requests` that differs from a
    Batch's n resizes the Batch to it (the first num_requests jobs of the same law: what
    `dataclasses.replace(config, num_requests=n)` asks for, e.g. in a sweep over n); a
    sequential Trace is one fixed instance, so there it must equal the Trace's n."""
    from ..workload import Finite
    w = config.workload
    if isinstance(w, str):
        try:
            resolved = named(w, config.num_requests)
        except FileNotFoundError as e:
            raise ConfigError(f"workload: {e}") from None
        object.__setattr__(config, "workload", resolved)
    elif config.num_requests is not None and config.num_requests != getattr(
            w, "num_requests", None):
        if not (isinstance(w, Finite) and not isinstance(w, type)):
            raise ConfigError("num_requests must equal the workload's own n for a fixed "
                              "instance (a sequential Trace); it resizes a Batch or names a "
                              "request mix's n")
        n = require_int(config.num_requests, "num_requests (n)", lo=1, hi=1 << 20)
        object.__setattr__(config, "workload", replace(w, num_requests=n))
    w = config.workload
    require(not isinstance(w, type) and hasattr(w, "sample") and
            getattr(w, "num_requests", None) is not None, "workload",
            "a Batch(base, n) or a Trace with order='sequential' (a fixed number of "
            "jobs, all at t = 0)", w)
    return w


def fixed_instance(config: OfflineConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """(prompt, output) of a fixed-instance workload (a sequential Trace), else None."""
    w = config.workload
    if getattr(w, "order", None) == "sequential" and hasattr(w, "prompt"):
        return np.asarray(w.prompt, np.int64), np.asarray(w.output, np.int64)
    return None


class OfflineSizes(eqx.Module):
    """The size of one run padded into a larger config (a size bucket), as a traced int32
    scalar: num_requests n <= config.n. Jobs i >= n exist in the arrays but are never
    admitted, counted or ranked among the run's own (offline: they never fit, s + o > M;
    interval: they are never eligible), and every metric sums the run's own n jobs only, so
    the metrics are bitwise those of the unpadded run (`OfflineEngine.pad`,
    tests/offline/test_buckets.py, tests/interval/test_buckets.py)."""
    num_requests: jnp.ndarray


class OfflineParams(eqx.Module):
    """Traced parameters: KV limit M (tokens) and the step-time model's coefficients (s).
    sizes: the run's own size inside a size bucket (`OfflineSizes`), or None."""
    capacity_tokens: jnp.ndarray
    step_const_s: jnp.ndarray
    per_decode_s: jnp.ndarray
    per_prefill_token_s: jnp.ndarray
    per_kv_token_s: jnp.ndarray
    # The run's own n when it runs padded inside a size bucket (`OfflineEngine.pad`); None:
    # the config's n is the run's. Not part of a results key: the point's config is.
    sizes: OfflineSizes | None = eqx.field(default=None, metadata={"identity": False})


def make_params(config: OfflineConfig, *, capacity_tokens: int = PAPER_CAPACITY_TOKENS,
                step_const_s: float = 1.0, per_decode_s: float = 0.0,
                per_prefill_token_s: float = 0.0, per_kv_token_s: float = 0.0) -> OfflineParams:
    """Validated params. capacity_tokens: the KV limit M (tokens); with a fixed instance every
    request must fit alone (s + o <= M); in drawn batches a request that cannot is dropped and
    counted (`num_dropped`). The step-time keywords: see the module docstring (defaults: unit
    steps)."""
    if not isinstance(config, OfflineConfig):
        raise ConfigError(f"config must be an OfflineConfig, got {type(config).__name__}")
    M = require_int(capacity_tokens, "capacity_tokens (M)", lo=2, hi=INT_LIMIT // 4)
    fixed = fixed_instance(config)
    if fixed is not None:
        need = int((fixed[0] + fixed[1]).max())
        require(need <= M, "capacity_tokens (M)", f"at least the largest s + o of the instance "
                f"({need}), so that every request fits alone", M)
    if config.policy == "sorted_f_dp":
        require(M <= config.dp_width, "capacity_tokens (M)", f"<= dp_width ({config.dp_width}), "
                "the exact DP's table width", M)
    return instance_params(M, step_const_s=step_const_s, per_decode_s=per_decode_s,
                           per_prefill_token_s=per_prefill_token_s, per_kv_token_s=per_kv_token_s)


def instance_params(capacity_tokens: int, *, step_const_s: float = 1.0, per_decode_s: float = 0.0,
                    per_prefill_token_s: float = 0.0, per_kv_token_s: float = 0.0) -> OfflineParams:
    """Validated params without a Config, for explicit instances (`instances.execute`): the KV
    limit M (tokens) and the step-time model (module docstring; default unit steps)."""
    M = require_int(capacity_tokens, "capacity_tokens (M)", lo=2, hi=INT_LIMIT // 4)
    coefs = dict(step_const_s=step_const_s, per_decode_s=per_decode_s,
                 per_prefill_token_s=per_prefill_token_s, per_kv_token_s=per_kv_token_s)
    for k, v in coefs.items():
        require_float(v, k, lo=0.0, hi=1e6)
    require(step_const_s + per_decode_s > 0, "step_const_s", "> 0 or per_decode_s > 0 (a step "
            "that holds a request must take time)", step_const_s)
    return OfflineParams(jnp.int32(M), *(jnp.float32(v) for v in coefs.values()))
