"""Configuration of the offline engine: n requests at t = 0 on one worker with KV limit M.

`OfflineConfig` (static) names the request batch (`workload`: a `jaxsched.workload.Batch`, or a
`Trace` with order="sequential" for one fixed instance), the ordering policy and the step
budget. `make_params` builds the traced `OfflineParams`: the KV limit M and the step-time model.
The params, the step-time model and its constants are the batch model shared with the interval
engine (`jaxsched.batchmodel`), re-exported here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..batchmodel import (
    INT_LIMIT,
    LINEAR_STEP_MODEL,
    PAPER_CAPACITY_TOKENS,
    UNIT_STEP_MODEL,
    OfflineParams,
    OfflineSizes,
    instance_params,
    resolve_batch,
)
from ..errors import (
    ConfigError,
    changed_fields,
    reads_from,
    refuse_ignored,
    require,
    require_choice,
    require_float,
    require_int,
)
from .registry import POLICIES
from .workloads import named

__all__ = [
    "OfflineConfig",
    "OfflineParams",
    "OfflineSizes",
    "make_params",
    "instance_params",
    "fixed_instance",
    "INT_LIMIT",
    "LINEAR_STEP_MODEL",
    "PAPER_CAPACITY_TOKENS",
    "UNIT_STEP_MODEL",
]


@dataclass(frozen=True)
class OfflineConfig:
    """Static configuration of an offline run.

    workload: the n requests of each run: `Batch(base, n)` (lengths drawn per seed) or a
      `Trace(prompt, output, order="sequential")` (the same instance for every seed), or the
      name of a request mix of `workloads.named` ("uniform", ..., "mix", "azure"; what a sweep's
      `--set workload=NAME` gives), resolved to its Batch with `num_requests` requests.
    num_requests: n for a workload given by name (default: the mix's own, e.g. 100); given
      with a Batch, it resizes the Batch to n jobs. The size of a size bucket
      (`Engine.pad`, `batchmodel.pad_into`): runs of different n share one compiled
      program.
    policy: the order the executor admits requests in (`POLICIES`).
    max_steps: scan steps after which a run is cut (default: the sum of the largest possible
      outputs, which bounds any makespan since each request alone fits).
    Options of Sorted-F's Phase-1 solvers (read only by the policy named; paper 002, §5):
    dp_width: static table width of the exact DP (`sorted_f_dp`), tokens; M must not exceed
      it (default 256: the paper's synthetic M = 100 fits). Memory per instance is about (n + 1)(dp_width +
      1)(4 + 4 ceil(n / 32)) bytes.
    epsilon, scale_b: the scaled DP's (`sorted_f_scaled`) accuracy and scale: weights are
      divided by lambda = max(1, epsilon M / scale_b) and rounded up. The paper gives no
      values; 0.1 and 100 are ASSUMED (notes/002.md §6).
    quantile, sample_fraction: quantile greedy's (`sorted_f_quantile`) thresholds are the
      `quantile`-quantiles of s + o and of o over a random sample of max(1, floor(
      sample_fraction |I|)) remaining requests (the paper's 0.3 and 0.5).
    slots: rows of the table of running requests (`state.ActiveTable`), whose size sets the
      cost of every admission check (default `engine.DEFAULT_SLOTS`, at most n). A run that
      needs more stops and runs again with twice the rows (`engine.regrow`), so the value never
      changes a result, only the speed; it is not part of a results key.
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
    slots: int | None = field(default=None, metadata={"identity": False})

    def __post_init__(self):
        w = resolve_batch(self.workload, self.num_requests, lambda name, n: named(name, n)[0])
        if w is not self.workload:
            # The one field the config normalizes in place (a name or a resize becomes the
            # Batch it stands for). A factory would change the public API: configs are built
            # as OfflineConfig(workload="uniform", ...) and resized by
            # dataclasses.replace(config, num_requests=n) in sweeps, and the resolved Batch is
            # what the results keys hash.
            object.__setattr__(self, "workload", w)
        require_int(w.num_requests, "workload.num_requests (n)", lo=1, hi=1 << 20)
        # Quantile greedy hashes (round, request) as round * 2^16 + index (sorted_f.py).
        require(
            self.policy != "sorted_f_quantile" or w.num_requests <= 1 << 16,
            "workload.num_requests (n)",
            "<= 65536 with policy sorted_f_quantile",
            w.num_requests,
        )
        require_choice(self.policy, "policy", tuple(POLICIES))
        if self.max_steps is not None:
            require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)
        if self.slots is not None:
            require_int(self.slots, "slots", lo=1, hi=1 << 20)
        require_int(self.dp_width, "dp_width", lo=2, hi=1 << 20)
        require_float(self.epsilon, "epsilon", lo=1e-3, hi=1.0)
        require_int(self.scale_b, "scale_b", lo=1, hi=100_000)
        require(
            self.scale_b / self.epsilon <= 1 << 20,
            "scale_b / epsilon",
            "<= 2^20 (the scaled DP's table width)",
            self.scale_b / self.epsilon,
        )
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


def fixed_instance(config: OfflineConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """(prompt, output) of a fixed-instance workload (a sequential Trace), else None."""
    w = config.workload
    if getattr(w, "order", None) == "sequential" and hasattr(w, "prompt"):
        return np.asarray(w.prompt, np.int64), np.asarray(w.output, np.int64)
    return None


def make_params(
    config: OfflineConfig,
    *,
    capacity_tokens: int = PAPER_CAPACITY_TOKENS,
    step_const_s: float = 1.0,
    per_decode_s: float = 0.0,
    per_prefill_token_s: float = 0.0,
    per_kv_token_s: float = 0.0,
) -> OfflineParams:
    """Validated params. capacity_tokens: the KV limit M (tokens); with a fixed instance every
    request must fit alone (s + o <= M); in drawn batches a request that cannot is dropped and
    counted (`num_dropped`). The step-time keywords: see `jaxsched.batchmodel` (defaults: unit
    steps).

    A solver option of the config set away from its default for a policy that does not read it
    (epsilon with policy fcfs; the readers are `POLICIES`' options) is refused here, with one
    ConfigError naming the option and its readers. Here and not in OfflineConfig: the
    comparisons of `compare.evaluate` build one config per algorithm from one set of solver
    options (each reads its own), and run them without make_params. Inside
    `errors.as_one_grid` (a sweep's points) the grid refuses only an option that none of its
    points reads."""
    if not isinstance(config, OfflineConfig):
        raise ConfigError(f"config must be an OfflineConfig, got {type(config).__name__}")
    reads = reads_from(POLICIES, "policy")
    options = changed_fields(config, [f.name for f in dataclasses.fields(config) if f.name in reads])
    refuse_ignored(options, {"policy": config.policy}, reads)
    M = require_int(capacity_tokens, "capacity_tokens (M)", lo=2, hi=INT_LIMIT // 4)
    fixed = fixed_instance(config)
    if fixed is not None:
        need = int((fixed[0] + fixed[1]).max())
        require(
            need <= M,
            "capacity_tokens (M)",
            f"at least the largest s + o of the instance ({need}), so that every request fits alone",
            M,
        )
    if config.policy == "sorted_f_dp":
        require(
            M <= config.dp_width,
            "capacity_tokens (M)",
            f"<= dp_width ({config.dp_width}), the exact DP's table width",
            M,
        )
    return instance_params(
        M,
        step_const_s=step_const_s,
        per_decode_s=per_decode_s,
        per_prefill_token_s=per_prefill_token_s,
        per_kv_token_s=per_kv_token_s,
    )
