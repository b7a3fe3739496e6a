"""Monte-Carlo sweeps of any engine: a grid of configurations times seeds, with resumable results.

`run_sweep(base, axes, seeds, out)` runs every point of the grid spanned by `axes` over the same
seeds, for the engine whose Config `base` is. An axis is a field of that engine's Config (for
dp: num_workers, policy, ...; for kv: policy, table_size, ...) or a keyword of its
`make_params` (dp: step_const_s, ...; kv: rates, capacity_tokens, ...); `params` fixes params
keywords for every point. Seeds run vmapped in chunks that fit a memory budget, over every
local device and every `jax.distributed` process (`jaxsched.multihost`).

Each finished point becomes one row of a tidy CSV results file (the point's values, the
engine's configuration columns, n, and mean / std / 95% CI half-width of every metric), written
atomically (a temporary file renamed over the old one). A sweep killed at any moment, even by
SIGKILL, resumes where it stopped: points whose row exists are skipped, and no row is lost or
duplicated. Rows are keyed by `key`, a hash of everything that changes their numbers (every
Config and Params field, the workload's content, the full seed list, the package version:
`results.run_key`), so rerunning with other settings into the same file adds rows and never
returns old ones; `point` keeps the grid values readable.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .engine import Engine, engine_of
from .errors import ConfigError, require_float
from .multihost import broadcast_from_writer, is_writer, simulate_multihost
from .progress import Progress
from . import __version__
from .outputs import check_file
from .results import ResultsFile, run_key
from .rng import check_seeds
from .run import seeds_for_budget
from .stats import mean_ci


def sweep_fields(engine: Engine) -> tuple[set[str], set[str]]:
    """(Config fields, make_params keywords) that `engine` can sweep."""
    return set(engine.config_fields()), set(engine.params_fields())


def grid_points(engine: Engine, axes: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the axis values, in row-major order of `axes` (names validated)."""
    cfg_f, par_f = sweep_fields(engine)
    if not isinstance(axes, Mapping):
        raise ConfigError(f"axes must be a mapping {{name: [values]}}, got {axes!r}")
    for name, values in axes.items():
        if not isinstance(values, (list, tuple, range, np.ndarray)):
            raise ConfigError(f"sweep axis {name!r} must be a list of values, got {values!r}")
        if name not in cfg_f | par_f:
            raise ConfigError(f"sweep axis {name!r} must be a {engine.Config.__name__} field or a "
                              f"{engine.name} make_params keyword: {sorted(cfg_f | par_f)}")
        if len(values) == 0:
            raise ConfigError(f"sweep axis {name!r} must have at least one value")
        seen = [json.dumps(_jsonable(v)) for v in values]
        dup = sorted({v for v in seen if seen.count(v) > 1})
        if dup:
            raise ConfigError(f"sweep axis {name!r} must not repeat a value, got {', '.join(dup)} "
                              "more than once")
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def point_label(engine: Engine, point: Mapping) -> str:
    """The grid values of a point as canonical JSON (the readable `point` column)."""
    return json.dumps({"engine": engine.name,
                       "point": {k: _jsonable(point[k]) for k in sorted(point)}}, sort_keys=True)


def _jsonable(v: Any) -> Any:
    """Grid values as JSON: tuples become lists, workloads their names."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (tuple, list, np.ndarray)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return getattr(v, "name", repr(v))


def _prepare(engine: Engine, base: Any, points: list[dict], params: Mapping, seeds: list[int]):
    """(point, config, params, key) per point, every one validated before anything compiles."""
    cfg_f, _ = sweep_fields(engine)
    out = []
    for p in points:
        cfg = dataclasses.replace(base, **{k: v for k, v in p.items() if k in cfg_f})
        par_kw = {**params, **{k: v for k, v in p.items() if k not in cfg_f}}
        par = engine.make_params(cfg, **par_kw)
        out.append((p, cfg, par, run_key(engine.name, cfg, par, seeds)))
    return out


def _row(engine: Engine, key: str, point: dict, cfg: Any, seeds: list[int], res,
         metrics: Sequence[str]) -> dict:
    row = {"key": key, "point": point_label(engine, point), **{k: _cell(v) for k, v in point.items()},
           **engine.describe(cfg), "n": len(seeds), "seed_first": seeds[0], "seed_last": seeds[-1],
           "version": __version__, "wall_s": res.wall_s}
    for m in metrics:
        mean, std, half, _ = mean_ci(res.metrics[m])
        row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_ci95": half})
    return row


def _cell(v: Any) -> Any:
    """A grid value as one CSV cell (sequences joined by '/')."""
    v = _jsonable(v)
    return "/".join(map(str, v)) if isinstance(v, list) else v


def run_sweep(base: Any, axes: Mapping[str, Sequence], seeds: Sequence[int], out: str | Path, *,
              params: Mapping[str, Any] | None = None, memory_budget_mb: float = 1024.0,
              progress: bool = True, on_point: Callable[[int, dict], None] | None = None,
              metrics: Sequence[str] | None = None) -> Path:
    """Run the grid `axes` over `seeds` for `base`'s engine, one row per finished point in `out`.

    params: make_params keywords shared by every point (an axis overrides them).
    metrics: the metrics summarized (default every metric of the engine).
    on_point(n, row) is called after each point that ran.
    """
    engine = engine_of(base)
    out = Path(out)
    seeds = check_seeds(seeds).tolist()
    memory_budget_mb = require_float(memory_budget_mb, "memory_budget_mb", lo=0.0, lo_open=True)
    metrics = tuple(engine.METRICS) if metrics is None else tuple(metrics)
    for m in metrics:
        if m not in engine.METRICS:
            raise ConfigError(f"metrics must be names among {engine.name}'s metrics "
                              f"({', '.join(engine.METRICS)}), got {m!r}")
    _, par_f = sweep_fields(engine)
    for k in params or {}:
        if k not in par_f:
            raise ConfigError(f"params key {k!r} must be a {engine.name} make_params keyword: "
                              f"{sorted(par_f)}")
    prepared = _prepare(engine, base, grid_points(engine, axes), dict(params or {}), seeds)
    if is_writer():
        check_file(out, "out")
    results = ResultsFile(out, "key", writer=is_writer())
    # Every process must run the same points (they gather together): process 0's file decides.
    done = set(broadcast_from_writer(sorted(results.done)))
    todo = [x for x in prepared if x[3] not in done]
    bar = Progress("sweep", len(prepared), enabled=progress and is_writer())
    bar.update(len(done))
    for n, (p, cfg, par, key) in enumerate(todo, 1):
        chunk = min(len(seeds), seeds_for_budget(engine, cfg, memory_budget_mb))
        res = simulate_multihost(cfg, par, seeds, engine=engine, seed_chunk=chunk)
        row = _row(engine, key, p, cfg, seeds, res, metrics)
        results.append(row)
        if on_point is not None:
            on_point(n, row)
        bar.advance(1, f"points; last {res.wall_s:.1f} s")
    bar.close()
    return results.path


def parse_axis(text: str) -> tuple[str, list]:
    """'name=v1,v2,...' -> (name, values). Values become int or float where they parse; a value
    in brackets is a sequence: 'rates=[1000,500],[2000,1000]' -> [(1000, 500), (2000, 1000)]."""
    name, sep, vals = text.partition("=")
    if not sep or not name.strip() or not vals.strip():
        raise ConfigError(f"--axis must look like name=v1,v2,..., got {text!r}")
    return name.strip(), [parse_value(v) for v in _split_top(vals)]


def parse_value(text: str) -> Any:
    """One value of an axis or a --set: int, float, '[a,b,...]' (a tuple of those), or a string."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return tuple(parse_value(v) for v in _split_top(text[1:-1]))
    for t in (int, float):
        try:
            return t(text)
        except ValueError:
            pass
    return {"None": None, "true": True, "false": False}.get(text, text)


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets, dropping empty items."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]
