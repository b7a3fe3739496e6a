"""`jaxsched sweep`: a grid of any engine's Config and Params fields times seeds, resumable."""

from __future__ import annotations

import argparse
import importlib
import math
from typing import Any

from ..dp.registry import SEMANTICS as DP_SEMANTICS
from ..dp.registry import WORKLOADS as DP_WORKLOADS
from ..errors import ConfigError, Reads, require_int
from ..outputs import check_file
from ..registry import ENGINES
from .base import Interrupted, add_trace_format, check_file_outputs, check_options, command, config_path, save_resolved

# Options that only the dp engine takes (kv sets its run length with --set max_steps=N).
DP_ONLY = ("num_steps", "trace", "workload", "semantics")
# The options of --trace: read by the dp engine, and only with a trace.
TRACE_OPTIONS = ("trace_format", "trace_columns")
SWEEP_READS = {
    **{o: (Reads("engine", ("dp",)),) for o in DP_ONLY},
    **{o: (Reads("engine", ("dp",)), Reads("--trace", ("FILE",))) for o in TRACE_OPTIONS},
}
# The dp flags that set a Config field, {dest: field}: the field must not also be in --set or --axis.
FLAG_FIELDS = {"num_steps": "num_steps", "semantics": "semantics", "workload": "workload", "trace": "workload"}
SET_TWICE = tuple(
    (dest, f"{how} {field}", f"both set {field}") for dest, field in FLAG_FIELDS.items() for how in ("--set", "--axis")
)


def renamed_fields(engine: str) -> dict[str, str]:
    """{old name: new name} of `engine`'s renamed Config / make_params fields: the `RENAMED`
    table of a built-in engine's registry (`jaxsched.<engine>.registry`), {} if it has none or
    the engine was registered from user code. --set and --axis (in flags or --config files)
    accept an old name and mean the new one."""
    entry = ENGINES[engine]
    if not entry.builtin:
        return {}
    reg = importlib.import_module(f"jaxsched.{engine}.registry")
    return dict(getattr(reg, "RENAMED", {}))


def _field_name(name: str, renamed: dict[str, str], flag: str, seen) -> str:
    """`name` with an old (renamed) field name replaced by the new one; ConfigError if the
    field is already in `seen` under either name."""
    new = renamed.get(name, name)
    if new in seen:
        also = f" (as {new!r}; {name!r} is its old name)" if new != name else ""
        raise ConfigError(f"{flag} {name!r} is given twice{also}; give each name once")
    return new


def _settings(engine: str, items: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """--set name=value items split into (Config fields, make_params keywords); old names of
    renamed fields (`renamed_fields`) mean the new ones."""
    from ..engine import get_engine
    from ..sweep import parse_value, sweep_fields

    cfg_f, par_f = sweep_fields(get_engine(engine))  # the live engine's, any registered one
    renamed = renamed_fields(engine)
    cfg, par = {}, {}
    for text in items:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise ConfigError(f"--set must look like name=value, got {text!r}")
        if name in renamed:
            name = _field_name(name, renamed, "--set", cfg | par)
        if name not in cfg_f | par_f:
            raise ConfigError(
                f"--set {name!r} must be a {engine} Config field or make_params "
                f"keyword: {', '.join(sorted(cfg_f | par_f))}"
            )
        if name in cfg or name in par:
            raise ConfigError(f"--set {name!r} is given twice; give each name once")
        try:
            (cfg if name in cfg_f else par)[name] = parse_value(value)
        except ConfigError as e:
            raise ConfigError(f"--set {name}: {e}") from None
    return cfg, par


def _axes(items: list[str], fixed: set[str], renamed: dict[str, str] | None = None) -> dict[str, list]:
    """--axis items as {name: values}; each name once, and not also fixed by --set; old names
    of renamed fields (`renamed`, {old: new}) mean the new ones."""
    from ..sweep import parse_axis

    if not items:
        raise ConfigError("--axis is required: give at least one axis, name=v1,v2,...")
    axes: dict[str, list] = {}
    for text in items:
        name, values = parse_axis(text)
        if name in (renamed or {}):
            name = _field_name(name, renamed, "--axis", axes)
        if name in axes:
            raise ConfigError(f"--axis {name!r} is given twice; list all its values in one --axis {name}=v1,v2,...")
        if name in fixed:
            raise ConfigError(f"--axis {name!r} is also fixed by --set; give it one or the other")
        axes[name] = values
    return axes


def _dp_base(a: argparse.Namespace, cfg: dict[str, Any]):
    from ..dp import DPConfig
    from .dp import workload_from_args

    return DPConfig(
        **{
            "num_steps": 2000 if a.num_steps is None else a.num_steps,
            "workload": workload_from_args(a),
            "semantics": a.semantics or "paper",
            **cfg,
        }
    )


def cmd_sweep(a: argparse.Namespace) -> int:
    if not (isinstance(a.memory_mb, float) and math.isfinite(a.memory_mb) and a.memory_mb > 0):
        raise ConfigError(f"--memory-mb must be a finite number > 0, got {a.memory_mb!r}")
    from ..buckets import check_max_waste

    try:
        check_max_waste(a.bucket_waste)
    except ConfigError:
        raise ConfigError(
            f"--bucket-waste must be a number in [1, 1e6] (the most work a padded "
            f"point may do relative to its own), got {a.bucket_waste!r}"
        ) from None
    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    require_int(a.seed_start, "--seed-start", lo=0, hi=2**32 - n_seeds)
    cfg, par = _settings(a.engine, a.set)
    axes = _axes(a.axis, set(cfg) | set(par), renamed_fields(a.engine))
    fields = [f"--set {k}" for k in cfg] + [f"--axis {k}" for k in axes]
    chosen = {"engine": a.engine, "--trace": "FILE" if a.trace else "none"}
    check_options(a, SWEEP_READS, chosen, SET_TWICE, also=fields)
    out = check_file(a.out, "--out")
    check_file_outputs(out)
    if a.engine == "dp":
        base = _dp_base(a, cfg)
    else:
        from ..engine import get_engine

        base = get_engine(a.engine).Config(**cfg)
    from ..sweep import run_sweep

    seeds = range(a.seed_start, a.seed_start + n_seeds)
    try:
        out = run_sweep(
            base,
            axes,
            seeds,
            out,
            params=par,
            memory_budget_mb=a.memory_mb,
            progress=not a.quiet,
            buckets=not a.no_buckets,
            bucket_waste=a.bucket_waste,
            switch_policies=a.switch_policies,
        )
    except KeyboardInterrupt:
        # Every finished point is a row of the file already (written as it finishes).
        if not out.exists():
            raise Interrupted("no point had finished; nothing was written") from None
        save_resolved(a, config_path(out))
        raise Interrupted(f"the finished points are in {out}; the same command resumes from there") from None
    # Written with the results, so that a command refused by validation leaves no options file.
    conf, ok = save_resolved(a, config_path(out))
    print(f"results: {out}\noptions: {conf}")
    return 0 if ok else 1


def sweep_fields() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """{engine: (Config fields, make_params keywords)} a sweep may vary, for `sweep --help`: each
    built-in engine's `registry.CONFIG_FIELDS` and `PARAMS_FIELDS` (JAX-free; a test checks them
    against the live engines). The command itself checks names against the live engine, so an
    engine registered from user code sweeps too."""
    out = {}
    for name, entry in ENGINES.items():
        if entry.builtin:
            reg = importlib.import_module(f"jaxsched.{name}.registry")
            out[name] = (reg.CONFIG_FIELDS, reg.PARAMS_FIELDS)
    return out


def add_parsers(sub) -> None:
    """The engine-generic `jaxsched sweep` command."""
    fields = "; ".join(f"{e}: {', '.join(c + p)}" for e, (c, p) in sweep_fields().items())
    old = "; ".join(f"{e} {o} (= {n})" for e in sweep_fields() for o, n in renamed_fields(e).items())
    w = command(
        sub,
        "sweep",
        help="a grid of configurations x seeds, one resumable row per point",
        description="A grid of configurations x seeds, one resumable row per point. Axes "
        "and --set take any field of the engine's Config or any keyword of "
        "its make_params. Values in brackets are sequences: --set "
        f"prefill_tokens=[10,10].\n\nSweepable names: {fields}."
        + (f"\n\nOld names still accepted: {old}." if old else ""),
    )
    w.add_argument("--engine", default="dp", choices=ENGINES.names(), help="engine")
    w.add_argument(
        "--axis", action="append", default=[], help="name=v1,v2,... (required; repeat for more axes, each name once)"
    )
    w.add_argument("--set", action="append", default=[], help="name=value fixed for every point")
    w.add_argument("--seeds", type=int, default=64, help="seeds per point")
    w.add_argument("--seed-start", type=int, default=0, help="first seed")
    w.add_argument("--num-steps", "--steps", type=int, default=None, help="dp: decode steps per run (default 2000)")
    w.add_argument(
        "--trace",
        metavar="FILE",
        help="dp: trace whose lengths each seed resamples (a path, or a name of `jaxsched data list`; "
        "any layout of docs/traces.md); replaces --workload",
    )
    add_trace_format(w)
    w.add_argument(
        "--trace-columns",
        metavar="PROMPT,OUTPUT",
        default=None,
        help="--trace: the header names of its prompt and output columns (default: a known layout, "
        "or two columns with known names)",
    )
    w.add_argument(
        "--workload", choices=DP_WORKLOADS, default=None, help="dp: request-length workload (default burstgpt_like)"
    )
    w.add_argument("--semantics", choices=DP_SEMANTICS, default=None, help="dp: step semantics (default paper)")
    w.add_argument("--memory-mb", type=float, default=1024.0, help="memory budget per seed chunk, MB")
    w.add_argument(
        "--bucket-waste",
        type=float,
        default=2.0,
        help="size buckets: points of different sizes share one compiled program when "
        "padding makes none do more than this many times its own work (>= 1)",
    )
    w.add_argument(
        "--no-buckets", action="store_true", help="compile each distinct configuration on its own (same rows, slower)"
    )
    w.add_argument(
        "--switch-policies",
        action="store_true",
        help="dp: one program per bucket for all the policies of an axis, each run "
        "computing every policy's choice (less compiling, more simulating)",
    )
    w.add_argument(
        "--out",
        default="results/sweep.csv",
        help="CSV file, one row per point (resumed if it exists: rows whose settings, "
        "seeds and code revision match are kept, others added)",
    )
    w.add_argument("--quiet", action="store_true", help="no progress output")
    w.set_defaults(func=cmd_sweep)
