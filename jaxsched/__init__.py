"""jaxsched: batched JAX simulators of LLM-serving schedulers.

Engines, one package each, all behind one protocol (`jaxsched.engine`):
- `jaxsched.dp`: data-parallel decode workers behind a barrier (BF-IO paper),
- `jaxsched.kv`: one engine under a KV-memory limit (WAIT paper),
- `jaxsched.offline`, `jaxsched.interval`: batches present at t = 0 under a KV limit, with
  known (paper 002) or interval-predicted (paper 003) output lengths,
- `jaxsched.budget`: one engine with a token budget per batch (paper 004).

Shared by the engines: `simulate` (the runner: seed chunks, devices, progress, early stop),
`simulate_points` (a grid of parameter points in one vmapped run) and its `Results`,
`run_sweep` (grids x seeds, resumable), `tune` (evolution strategies over any engine's Params,
a population x seeds per generation in one vmapped run), `multihost`, request workloads (`workload`), the
array `kernels`, the double-float `clock` and iteration `timing`, `stats`, `histogram`,
`results` files and the report figure (`plots`). What one engine alone uses lives in its
package: `kv.fluid` and `kv.tune` (the WAIT fluid model and the optax tuner),
`budget.fluid` and `budget.timing`, `dp.energy` and `dp.timing`, `dp.plots` and `kv.plots`.

    import jaxsched as js
    cfg = js.dp.DPConfig(policy="bfio", num_steps=2000)
    res = js.simulate(cfg, seeds=range(64))        # params default to js.dp.make_params(cfg)

The names below are imported on first use (PEP 562), so that `import jaxsched` and the command
line's `--help` and `--version` do not pay for importing JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

from .registry import ENGINES as _ENGINE_REGISTRY
from .version import __version__ as __version__  # the one place it is written

# Every built-in engine's package, as `jaxsched.<name>` (the names of `jaxsched.registry.ENGINES`).
ENGINES = _ENGINE_REGISTRY.names()
# name -> (module, attribute or None for the module itself)
_LAZY = {
    **{name: (f"jaxsched.{name}", None) for name in ENGINES},
    "workload": ("jaxsched.workload", None),
    "Engine": ("jaxsched.engine", "Engine"),
    "Metric": ("jaxsched.engine", "Metric"),
    "register_policy": ("jaxsched.registry", "register_policy"),
    "register_engine": ("jaxsched.registry", "register_engine"),
    "engine_of": ("jaxsched.engine", "engine_of"),
    "get_engine": ("jaxsched.engine", "get_engine"),
    "ConfigError": ("jaxsched.errors", "ConfigError"),
    "Results": ("jaxsched.run", "Results"),
    "simulate": ("jaxsched.run", "simulate"),
    "simulate_points": ("jaxsched.run", "simulate_points"),
    "run_sweep": ("jaxsched.sweep", "run_sweep"),
    "tune": ("jaxsched.tune", None),
    **{
        name: ("jaxsched.workload", name)
        for name in (
            "BivariateNormal",
            "BurstGPTLike",
            "Constant",
            "Geometric",
            "Independent",
            "Trace",
            "UniformInt",
            "read_trace",
        )
    },
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'jaxsched' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    value = value if attr is None else getattr(value, attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
