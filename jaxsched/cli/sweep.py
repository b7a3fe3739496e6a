"""`jaxsched sweep`: a grid of any engine's Config and Params fields times seeds, resumable."""
from __future__ import annotations

import argparse
from typing import Any

from ..engine import ENGINE_MODULES, Engine, get_engine
from ..errors import ConfigError, require_int
from ..sweep import parse_axis, parse_value, run_sweep, sweep_fields

# Options that only the dp engine takes (kv sets its run length with --set max_epochs=N).
DP_ONLY = ("steps", "trace", "workload", "semantics")


def _settings(engine: Engine, items: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """--set name=value items split into (Config fields, make_params keywords)."""
    cfg_f, par_f = sweep_fields(engine)
    cfg, par = {}, {}
    for text in items:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise ConfigError(f"--set must look like name=value, got {text!r}")
        if name not in cfg_f | par_f:
            raise ConfigError(f"--set {name!r} must be a {engine.Config.__name__} field or a "
                              f"{engine.name} make_params keyword: {sorted(cfg_f | par_f)}")
        (cfg if name in cfg_f else par)[name] = parse_value(value)
    return cfg, par


def _dp_base(a: argparse.Namespace, cfg: dict[str, Any]):
    from ..dp import DPConfig
    from ..workload import read_trace
    from .dp import WORKLOADS
    workload = read_trace(a.trace, order="resample") if a.trace else WORKLOADS[a.workload or "burstgpt_like"]()
    return DPConfig(**{"num_steps": a.steps or 2000, "workload": workload,
                       "semantics": a.semantics or "paper", **cfg})


def cmd_sweep(a: argparse.Namespace) -> int:
    engine = get_engine(a.engine)
    axes: dict[str, list] = {}
    for text in a.axis:
        name, values = parse_axis(text)
        axes[name] = values
    cfg, par = _settings(engine, a.set)
    if engine.name == "dp":
        base = _dp_base(a, cfg)
    else:
        given = [f"--{o}" for o in DP_ONLY if getattr(a, o) is not None]
        if given:
            raise ConfigError(f"{', '.join(given)} apply to the dp engine only "
                              "(set any Config field with --set name=value)")
        base = engine.Config(**cfg)
    seeds = range(a.seed_start, a.seed_start + require_int(a.seeds, "--seeds", lo=1))
    out = run_sweep(base, axes, seeds, a.out, params=par, memory_budget_mb=a.memory_mb,
                    progress=not a.quiet)
    print(f"results: {out}")
    return 0


def add_parsers(sub) -> None:
    """The engine-generic `jaxsched sweep` command."""
    w = sub.add_parser("sweep", help="a grid of configurations x seeds, one resumable row per point",
                       description="Axes and --set take any field of the engine's Config or any "
                                   "keyword of its make_params (e.g. dp: num_workers, policy, "
                                   "step_const_s; kv: policy, capacity_tokens, rates). Values in "
                                   "brackets are sequences: --set prefill_tokens=[10,10].")
    w.add_argument("--engine", default="dp", choices=list(ENGINE_MODULES), help="engine (default dp)")
    w.add_argument("--axis", action="append", default=[], required=True,
                   help="name=v1,v2,...; repeat for more axes")
    w.add_argument("--set", action="append", default=[], help="name=value fixed for every point")
    w.add_argument("--seeds", type=int, default=64, help="seeds per point (default 64)")
    w.add_argument("--seed-start", type=int, default=0)
    w.add_argument("--steps", type=int, default=None, help="dp: decode steps per run (default 2000)")
    w.add_argument("--trace", help="dp: CSV trace to resample per seed")
    w.add_argument("--workload", choices=["bivariate_normal", "burstgpt_like"], default=None,
                   help="dp: request-length workload (default burstgpt_like)")
    w.add_argument("--semantics", choices=["paper", "theory"], default=None,
                   help="dp: step semantics (default paper)")
    w.add_argument("--memory-mb", type=float, default=1024.0, help="memory budget per seed chunk")
    w.add_argument("--out", default="results/sweep.csv", help="results file (resumed if it exists)")
    w.add_argument("--quiet", action="store_true")
    w.set_defaults(func=cmd_sweep)
