"""jaxsched: batched JAX simulators of LLM-serving schedulers.

Engines, one package each, all behind one protocol (`jaxsched.engine`):
- `jaxsched.dp`: data-parallel decode workers behind a barrier (BF-IO paper),
- `jaxsched.kv`: one engine under a KV-memory limit (WAIT paper).

Shared by every engine: `simulate` (the runner: seed chunks, devices, progress, early stop) and
its `Results`, `run_sweep` (grids x seeds, resumable), `multihost`, request workloads
(`workload`), `fluid` models, `timing` and `energy` models, `stats`, `histogram`, `results`
files, `plots` and the optax `tune`r.

    import jaxsched as js
    cfg = js.dp.DPConfig(policy="bfio", num_steps=2000)
    res = js.simulate(cfg, seeds=range(64))        # params default to js.dp.make_params(cfg)
"""
from . import dp, kv, workload
from .engine import ENGINE_MODULES, Engine, Metric, Policy, engine_of, get_engine
from .errors import ConfigError
from .run import Results, simulate
from .sweep import run_sweep
from .workload import (BivariateNormal, BurstGPTLike, Constant, Geometric, Independent, Trace,
                       UniformInt, read_trace)

__version__ = "0.1.0"
__all__ = ["dp", "kv", "workload", "Engine", "Metric", "Policy", "ENGINE_MODULES", "engine_of",
           "get_engine", "ConfigError", "Results", "simulate", "run_sweep", "BivariateNormal",
           "BurstGPTLike", "Constant", "Geometric", "Independent", "Trace", "UniformInt",
           "read_trace"]
