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
duplicated; a row damaged since it was written (its `row_sha` checksum, `results.ResultsFile`)
is moved aside and its point runs again. Rows are keyed by `key`, a hash of everything that
changes their numbers (every Config and Params field, the workload's content, the full seed
list, the package version and its code revision: `results.run_key`), so rerunning with other
settings or other code into the same file adds rows and never returns old ones. `point` keeps
the grid values readable, and the columns of `results.key_columns` show every setting the key
hashes (`config`, `params`, `trace_sha`, `seeds_sha`, `num_seeds`, `code`), so that rows of
different keys never look alike.

Points share compiled programs: the points still to run are grouped into size buckets
(`jaxsched.buckets`: equal configurations but for the sizes an engine can pad, sizes within
`bucket_waste` times each point's work), and each bucket's points x seeds run as one vmapped
`simulate_points` call of one program. Every row is bitwise the row the point would get
alone. A bucket's rows are written when it ends, in grid order.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .buckets import DEFAULT_MAX_WASTE, check_max_waste, plan_buckets
from .engine import Engine, engine_of
from .errors import ConfigError, as_one_grid, require_float
from .multihost import broadcast_from_writer, is_writer, simulate_multihost
from .outputs import check_file
from .progress import Progress, Share
from .results import ResultsFile, key_columns
from .rng import check_seeds
from .run import seeds_for_budget, simulate_points
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
            raise ConfigError(
                f"sweep axis {name!r} must be a {engine.Config.__name__} field or a "
                f"{engine.name} make_params keyword: {sorted(cfg_f | par_f)}"
            )
        if len(values) == 0:
            raise ConfigError(f"sweep axis {name!r} must have at least one value")
        seen = [json.dumps(_jsonable(v)) for v in values]
        dup = sorted({v for v in seen if seen.count(v) > 1})
        if dup:
            raise ConfigError(f"sweep axis {name!r} must not repeat a value, got {', '.join(dup)} more than once")
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def point_label(engine: Engine, point: Mapping) -> str:
    """The grid values of a point as canonical JSON (the readable `point` column)."""
    return json.dumps({"engine": engine.name, "point": {k: _jsonable(point[k]) for k in sorted(point)}}, sort_keys=True)


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
    """([(point, config, params, key)] per point, {key: its columns}): every point validated
    before anything compiles; the columns (`results.key_columns`) show what each key hashes.
    The points are one grid (`errors.as_one_grid`): an option the base config or `params` set
    is refused only if no point reads it (a BF-IO option over a policy axis with FCFS is)."""
    cfg_f, _ = sweep_fields(engine)
    out, described = [], {}
    with as_one_grid():
        for p in points:
            cfg = dataclasses.replace(base, **{k: v for k, v in p.items() if k in cfg_f})
            par_kw = {**params, **{k: v for k, v in p.items() if k not in cfg_f}}
            par = engine.make_params(cfg, **par_kw)
            cols = key_columns(engine.name, cfg, par, seeds)
            out.append((p, cfg, par, cols["key"]))
            described[cols["key"]] = cols
    return out, described


def _row(
    engine: Engine,
    cols: Mapping[str, object],
    point: dict,
    cfg: Any,
    seeds: list[int],
    values: Mapping[str, np.ndarray],
    wall_s: float,
    metrics: Sequence[str],
) -> dict:
    """A point's row: its key, grid values, configuration, seeds, code and statistics; the
    long JSON cells (`config`, `params`) come last, after the metrics, so that tables stay
    readable."""
    cols = dict(cols)
    long = {k: cols.pop(k) for k in ("config", "params", "user_policies", "extra") if k in cols}
    row = {
        "key": cols.pop("key"),
        "point": point_label(engine, point),
        **{k: _cell(v) for k, v in point.items()},
        **engine.describe(cfg),
        "n": len(seeds),
        "seed_first": seeds[0],
        "seed_last": seeds[-1],
        "num_seeds": cols.pop("num_seeds"),
        "seeds_sha": cols.pop("seeds_sha"),
        "trace_sha": cols.pop("trace_sha"),
        "version": cols.pop("version"),
        **cols,
        "wall_s": wall_s,
    }
    for m in metrics:
        mean, std, half, _ = mean_ci(values[m])
        row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_ci95": half})
    row.update(long)
    return row


def _cell(v: Any) -> Any:
    """A grid value as one CSV cell (sequences joined by '/')."""
    v = _jsonable(v)
    return "/".join(map(str, v)) if isinstance(v, list) else v


def run_sweep(
    base: Any,
    axes: Mapping[str, Sequence],
    seeds: Sequence[int],
    out: str | Path,
    *,
    params: Mapping[str, Any] | None = None,
    memory_budget_mb: float = 1024.0,
    progress: bool = True,
    on_point: Callable[[int, dict], None] | None = None,
    metrics: Sequence[str] | None = None,
    buckets: bool = True,
    bucket_waste: float = DEFAULT_MAX_WASTE,
    switch_policies: bool = False,
) -> Path:
    """Run the grid `axes` over `seeds` for `base`'s engine, one row per finished point in `out`.

    params: make_params keywords shared by every point (an axis overrides them).
    metrics: the metrics summarized (default every metric of the engine).
    on_point(n, row) is called after each point that ran.
    buckets: pad points of different sizes into shared programs (`jaxsched.buckets`);
    bucket_waste: the most work a padded point may do relative to its own (>= 1). False runs
    each distinct configuration as its own program (points that differ only in params still
    share one). switch_policies: a bucket's points of several policies run in one program
    that computes every policy in every run (`jaxsched.buckets`; less compiling, more
    simulating). Rows are the same either way.
    """
    engine = engine_of(base)
    out = Path(out)
    seeds = check_seeds(seeds).tolist()
    memory_budget_mb = require_float(memory_budget_mb, "memory_budget_mb", lo=0.0, lo_open=True)
    if not isinstance(buckets, bool):
        raise ConfigError(f"buckets must be True or False, got {buckets!r}")
    bucket_waste = check_max_waste(bucket_waste)
    if not isinstance(switch_policies, bool):
        raise ConfigError(f"switch_policies must be True or False, got {switch_policies!r}")
    metrics = tuple(engine.METRICS) if metrics is None else tuple(metrics)
    for m in metrics:
        if m not in engine.METRICS:
            raise ConfigError(
                f"metrics must be names among {engine.name}'s metrics ({', '.join(engine.METRICS)}), got {m!r}"
            )
    _, par_f = sweep_fields(engine)
    for k in params or {}:
        if k not in par_f:
            raise ConfigError(f"params key {k!r} must be a {engine.name} make_params keyword: {sorted(par_f)}")
    prepared, described = _prepare(engine, base, grid_points(engine, axes), dict(params or {}), seeds)
    if is_writer():
        check_file(out, "out")
    results = ResultsFile(out, "key", writer=is_writer())
    # Every process must run the same points (they gather together): process 0's file decides.
    done = set(broadcast_from_writer(sorted(results.done)))
    todo = [x for x in prepared if x[3] not in done]
    plan = plan_buckets(
        engine, [cfg for _, cfg, _, _ in todo], bucket_waste if buckets else None, switch=switch_policies
    )
    bar = Progress("sweep, points", len(prepared), enabled=progress and is_writer())
    start = len(prepared) - len(todo)
    bar.update(start)
    n = 0
    for b, bucket in enumerate(plan, 1):
        members = [todo[i] for i in bucket.members]
        detail = f"bucket {b}/{len(plan)} ({len(members)} points)"
        for (p, cfg, par, key), values, wall_s in _run_bucket(
            engine, bucket, members, seeds, memory_budget_mb, bar, start, detail
        ):
            n += 1
            row = _row(engine, described[key], p, cfg, seeds, values, wall_s, metrics)
            results.append(row)
            if on_point is not None:
                on_point(n, row)
        start += len(members)
        bar.update(start, detail)
    bar.close()
    return results.path


def _stackable(params: list) -> bool:
    """Whether the params share one tree and every array shape (so `simulate_points` can stack
    them); points of one config may differ, e.g. in the length of a periodic rate profile."""
    import jax

    shapes = [(jax.tree_util.tree_structure(p), [np.shape(x) for x in jax.tree_util.tree_leaves(p)]) for p in params]
    return all(s == shapes[0] for s in shapes)


def _run_bucket(
    engine: Engine,
    bucket,
    members: list,
    seeds: list[int],
    memory_budget_mb: float,
    bar: Progress,
    start: float,
    detail: str,
):
    """[((point, config, params, key), metrics {name: float64[S]}, wall_s)] of a bucket's
    points: one `simulate_points` call (one program, points x seeds vmapped) on one process;
    across `jax.distributed` processes one `simulate_multihost` per point, still of one
    program. wall_s is each point's share of the bucket's wall time. The bucket advances
    `bar` from `start` by one unit per point."""
    import jax

    cap = {f: getattr(bucket.config, f) for f in engine.size_fields}
    params = []
    for _, cfg, par, _ in members:
        if bucket.padded:
            cfg, par = engine.pad(cfg, par, cap)
        if bucket.policies:
            cfg, par = engine.switch(cfg, par, bucket.policies)
        params.append(par)
    config = bucket.config
    chunk = seeds_for_budget(engine, config, memory_budget_mb)
    if len(members) == 1 or jax.process_count() > 1 or not _stackable(params):
        res = [
            simulate_multihost(
                config,
                par,
                seeds,
                engine=engine,
                warn=False,
                seed_chunk=min(len(seeds), chunk),
                progress=Share(bar, start + i, 1, detail),
            )
            for i, par in enumerate(params)
        ]
        walls = [r.wall_s for r in res]
    else:
        res = simulate_points(
            config,
            params,
            seeds,
            engine=engine,
            warn=False,
            seed_chunk=min(len(seeds) * len(params), chunk),
            progress=Share(bar, start, len(params), detail),
        )
        walls = [r.wall_s / len(res) for r in res]
    out = []
    for m, r, wall in zip(members, res, walls):
        for msg in engine.check(m[1], r.metrics):  # the point's own config, not the bucket's
            warnings.warn(f"point {point_label(engine, m[0])}: {msg}", RuntimeWarning, stacklevel=3)
        out.append((m, r.metrics, wall))
    return out


def parse_axis(text: str) -> tuple[str, list]:
    """'name=v1,v2,...' -> (name, values). Values become int or float where they parse; a value
    in brackets is a sequence: 'rates=[1000,500],[2000,1000]' -> [(1000, 500), (2000, 1000)]."""
    name, sep, vals = text.partition("=")
    if not sep or not name.strip() or not vals.strip():
        raise ConfigError(f"--axis must look like name=v1,v2,..., got {text!r}")
    try:
        return name.strip(), [parse_value(v) for v in _split_top(vals)]
    except ConfigError as e:
        raise ConfigError(f"--axis {name.strip()}: {e}") from None


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
    """Split on commas outside brackets; '' (as in '[]') is no items, and an empty item among
    others ('2,,3', a trailing comma) is one ConfigError: dropped silently, it would hide a
    value the user meant to give."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    parts = [p.strip() for p in parts]
    if parts == [""]:
        return []
    if not all(parts):
        raise ConfigError(f"a list of values must not have an empty entry, got {text!r}")
    return parts
