"""A Vidur execution-time predictor that returns jaxsched's budget-engine batch time.

Two halves:
- pure functions (NumPy only, importable from jaxsched's environment and from Vidur's): the
  batch time of paper 004's eq. (2.3), c + a max(0, b' - b0), and of the linear model
  c + a_p prefill + a_d decode + a_c context (docs/budget-semantics.md §2 step 5), with the
  same float32 constants as `jaxsched.budget.timing`, so that both simulators charge the same
  seconds for the same batch; and `batch_counts`, which reads (b', prefill, decode, context)
  off a Vidur batch.
- `install(spec)`, run inside Vidur's interpreter: registers a predictor class under Vidur's
  `linear_regression` key of its predictor registry (at run time; Vidur's files are not
  edited), so `--execution_time_predictor_config_type linear_regression` selects it.

Run as a module from Vidur's source root with this folder on PYTHONPATH,
`python -m vidur_predictor ARGS`: it reads the batch-time spec (JSON) from the environment
variable JAXSCHED_VIDUR_BATCH_TIME, installs the predictor and runs `vidur.main` with ARGS.
"""

from __future__ import annotations

import json
import os
import runpy
from typing import Any, Mapping

import numpy as np

ENV_SPEC = "JAXSCHED_VIDUR_BATCH_TIME"
MODELS = ("paper", "linear", "kv")
PAPER_KEYS = ("c_s", "a_s_per_token", "b0")
LINEAR_KEYS = ("c_s", "prefill_s_per_token", "decode_s_per_token", "context_s_per_token")
KV_KEYS = ("d0_s", "d1_s_per_token")


def paper_batch_time_s(tokens: int, c_s: float, a_s_per_token: float, b0: int) -> float:
    """Seconds of a batch of `tokens` tokens under eq. (2.3): c + a max(0, b' - b0).

    c and a are rounded to float32 as jaxsched's make_params stores them; the product of a
    float32 and an integer below 2^15 and its sum with c are exact in float64 for the
    magnitudes used here (c ~ 0.05 s, a ~ 1e-4 s/token), as jaxsched's double-float is."""
    excess = max(0, int(tokens) - int(b0))
    return float(np.float32(c_s)) + float(np.float32(a_s_per_token)) * excess


def linear_batch_time_s(
    prefill: int,
    decode: int,
    context: int,
    c_s: float,
    prefill_s_per_token: float,
    decode_s_per_token: float,
    context_s_per_token: float,
) -> float:
    """Seconds of a batch under the linear model: c + a_p prefill + a_d decode + a_c context.

    prefill, decode: tokens of the batch in each phase; context: sum over its requests of the
    tokens already in their KV cache. Each product is rounded to float32 on its own (int ->
    float32 to nearest even), as `jaxsched.budget.timing.budget_linear_time_s` does, then
    summed in float64 in the order prefill, decode, context (jaxsched sums them in a
    double-float: the two agree to about 2^-48 relative)."""
    t = float(np.float32(c_s))
    for coef, count in (
        (prefill_s_per_token, prefill),
        (decode_s_per_token, decode),
        (context_s_per_token, context),
    ):
        t += float(np.float32(coef) * np.float32(int(count)))
    return t


def kv_batch_time_s(tokens: int, d0_s: float, d1_s_per_token: float) -> float:
    """Seconds of a batch under the kv engine's eq. (1), d0 + d1 * tokens (docs/kv-semantics.md
    §2), with tokens = the sum over the batch of l_j + k (a prefill: its prompt, or prompt plus
    generated tokens for a restarted request's recompute; a decode at stage k: its context
    l_j + k).

    d0 and d1 are rounded to float32 as jaxsched.kv's make_params stores them; d1 * tokens is
    exact in float64 for tokens < 2^29 (24 by 29 significant bits) and the sum rounds once, while
    jaxsched sums the exact products in a double-float (`jaxsched.timing.iteration_time_s`):
    the two agree to about 2^-48 relative."""
    return float(np.float32(d0_s)) + float(np.float32(d1_s_per_token)) * int(tokens)


def check_spec(spec: Mapping[str, Any]) -> dict:
    """The batch-time spec as a plain dict, validated: {"model": "paper", c_s, a_s_per_token,
    b0} or {"model": "linear", c_s, prefill_s_per_token, decode_s_per_token,
    context_s_per_token} (s, s/token, tokens). ValueError naming the first problem."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"batch-time spec must be a mapping, got {type(spec).__name__}")
    model = spec.get("model")
    if model not in MODELS:
        raise ValueError(f"batch-time spec 'model' must be one of {MODELS}, got {model!r}")
    keys = PAPER_KEYS if model == "paper" else LINEAR_KEYS
    if model == "kv":
        keys = KV_KEYS
    missing = [k for k in keys if k not in spec]
    extra = sorted(set(spec) - set(keys) - {"model"})
    if missing or extra:
        raise ValueError(f"batch-time spec for model {model!r} needs exactly {keys}: missing {missing}, extra {extra}")
    out = {"model": model}
    for k in keys:
        v = spec[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
            raise ValueError(f"batch-time spec {k!r} must be a finite number >= 0, got {v!r}")
        out[k] = int(v) if k == "b0" else float(v)
    return out


def batch_time_s(spec: Mapping[str, Any], tokens: int, prefill: int, decode: int, context: int) -> float:
    """Seconds of a batch with `tokens` = prefill + decode tokens and `context` KV tokens
    before it, under the checked spec's model (`check_spec`)."""
    if spec["model"] == "kv":
        # The kv engine's tokens: Vidur's prefill tokens (a restarted request's prompt already
        # holds its generated tokens, `Request.restart`) plus, per decoding request, its 1 token
        # and its context num_processed_tokens - 1 = l_j + k - 1. Exact when no prefill is
        # chunked (vllm, orca): a request in its prefill then has processed nothing.
        return kv_batch_time_s(int(prefill) + int(decode) + int(context), spec["d0_s"], spec["d1_s_per_token"])
    if spec["model"] == "paper":
        return paper_batch_time_s(tokens, spec["c_s"], spec["a_s_per_token"], spec["b0"])
    return linear_batch_time_s(
        prefill,
        decode,
        context,
        spec["c_s"],
        spec["prefill_s_per_token"],
        spec["decode_s_per_token"],
        spec["context_s_per_token"],
    )


def batch_counts(batch: Any) -> tuple[int, int, int, int]:
    """(tokens, prefill, decode, context) of a Vidur `Batch` at its scheduling time.

    context is jaxsched's P_i + D_i summed over the batch's requests: the prompt and decode
    tokens loaded before this batch. Vidur counts the token produced by the prefill's last
    iteration as processed (num_processed_tokens jumps from P to P + 1 when the prefill
    completes), which jaxsched's D_i does not, hence the -1 for requests past their prefill."""
    context = sum(r.num_processed_tokens - (1 if r.is_prefill_complete else 0) for r in batch.requests)
    return batch.total_num_tokens, batch.num_prefill_tokens, batch.num_decode_tokens, context


def install(spec: Mapping[str, Any]) -> type:
    """Register a predictor returning `batch_time_s(spec, ...)` for every batch under Vidur's
    `linear_regression` predictor key (replacing Vidur's linear-regression predictor for this
    process only). Returns the class. Needs Vidur importable (run inside Vidur's venv)."""
    from vidur.entities import ExecutionTime
    from vidur.execution_time_predictor.base_execution_time_predictor import BaseExecutionTimePredictor
    from vidur.execution_time_predictor.execution_time_predictor_registry import ExecutionTimePredictorRegistry
    from vidur.types import ExecutionTimePredictorType

    spec = check_spec(spec)

    class FixedExecutionTime(ExecutionTime):
        """An ExecutionTime whose model and total times are one given number of seconds (the
        per-operation fields are 0: the batch time is not split into layers)."""

        def __init__(self, num_layers: int, seconds: float) -> None:
            super().__init__(num_layers, *([0.0] * 19))
            self._seconds = seconds

        @property
        def model_time(self) -> float:
            return self._seconds

        @property
        def total_time(self) -> float:
            return self._seconds

    def get_execution_time(self, batch, pipeline_stage: int) -> ExecutionTime:
        seconds = batch_time_s(spec, *batch_counts(batch))
        return FixedExecutionTime(self._num_layers_per_pipeline_stage, seconds)

    # Vidur's base class declares one abstract method per operation; none is called once
    # get_execution_time is replaced, but the class must define them to be instantiable.
    namespace = {name: (lambda self, batch: 0.0) for name in BaseExecutionTimePredictor.__abstractmethods__}
    namespace["get_execution_time"] = get_execution_time
    namespace["__doc__"] = "jaxsched's budget-engine batch time (benchmarks/vidur/vidur_predictor.py)."
    cls = type("JaxschedBatchTimePredictor", (BaseExecutionTimePredictor,), namespace)
    key = ExecutionTimePredictorType.LINEAR_REGRESSION
    ExecutionTimePredictorRegistry.unregister(key)
    ExecutionTimePredictorRegistry.register(key, cls)
    return cls


def main() -> None:
    """Install the predictor from $JAXSCHED_VIDUR_BATCH_TIME and run `vidur.main` with this
    process's arguments (sys.argv[1:])."""
    raw = os.environ.get(ENV_SPEC)
    if raw is None:
        raise SystemExit(f"{ENV_SPEC} is not set (a JSON batch-time spec, see check_spec)")
    install(json.loads(raw))
    runpy.run_module("vidur.main", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
