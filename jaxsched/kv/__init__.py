"""KV-memory engine of the WAIT paper (Ao, Luo, Simchi-Levi, Wang 2025).

The engine (docs/kv-semantics.md): `KVConfig` (static) and `KVParams` (traced, built by
`make_params`), `simulate(config, params, seeds) -> KVResults` (jit + vmap over seeds, lax.scan
over decision epochs), policies by name in `POLICIES` ("wait", "nested_wait", "fcfs", "vllm",
"sarathi").

`fluid`: the host-side fluid benchmark (equilibrium, WAIT / Nested WAIT thresholds, the root
theta of Lemma 8 and the memory bound), float64 NumPy with the typo corrections of the reading
guide notes/001.md.
"""
from .config import KVConfig, KVParams, make_params
from ..fluid import (Equilibrium, FluidTypes, MemoryBound, NestedCheck, Segments, WaitCheck,
                    bisect, equilibrium, nested_check, nested_memory_bound, nested_segments,
                    nested_thresholds, nested_thresholds_practical, stage_work, theta_lower_bound,
                    theta_root, wait_c_range, wait_check, wait_thresholds,
                    wait_thresholds_practical)
from .metrics import METRICS
from .policies import POLICIES
from .run import KVResults, simulate

__all__ = ["KVConfig", "KVParams", "KVResults", "METRICS", "POLICIES", "make_params", "simulate",
           "Equilibrium", "FluidTypes", "MemoryBound", "NestedCheck", "Segments", "WaitCheck",
           "bisect", "equilibrium", "nested_check", "nested_memory_bound", "nested_segments",
           "nested_thresholds", "nested_thresholds_practical", "stage_work", "theta_lower_bound",
           "theta_root", "wait_c_range", "wait_check", "wait_thresholds",
           "wait_thresholds_practical"]
