"""Monte-Carlo sweeps: a grid of configurations times seeds, with resumable results.

`run_sweep(base, axes, seeds, out)` runs every point of the grid spanned by `axes` (DPConfig
fields such as num_workers, or make_params keywords such as step_const_s) over the same seeds,
vmapped, in seed chunks that fit a memory budget. Each finished point becomes one row of a tidy
CSV results file (the point's configuration, n, and mean / std / 95% CI half-width of every
metric), written atomically (a temporary file renamed over the old one). A sweep killed at any
moment, even by SIGKILL, resumes where it stopped: points whose row exists are skipped, and no
row is lost or duplicated. Rows are keyed by `point`, a canonical string of the grid values
and seeds.
"""
from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .dp.config import DPConfig, make_params
from .dp import METRICS
from .errors import ConfigError, require_int
from .multihost import broadcast_from_writer, is_writer, simulate_multihost
from .results import write_csv
from .stats import mean_ci

_CONFIG_FIELDS = {f.name for f in dataclasses.fields(DPConfig)} - {"workload", "record_loads"}
_PARAM_FIELDS = {"step_const_s", "per_token_s", "noise_lo", "noise_hi", "fp_rate", "fn_rate",
                 "idle_power_w", "max_power_w", "power_exponent"}


def grid_points(axes: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the axis values, in row-major order of `axes`."""
    for name, values in axes.items():
        if name not in _CONFIG_FIELDS | _PARAM_FIELDS:
            raise ConfigError(f"sweep axis {name!r} must be a DPConfig field or a make_params keyword: "
                              f"{sorted(_CONFIG_FIELDS | _PARAM_FIELDS)}")
        if len(values) == 0:
            raise ConfigError(f"sweep axis {name!r} must have at least one value")
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def point_key(point: Mapping, seeds: Sequence[int]) -> str:
    """Canonical identity of a grid point and its seeds (the resume key)."""
    return json.dumps({"point": {k: point[k] for k in sorted(point)},
                       "seeds": [int(seeds[0]), int(seeds[-1]), len(seeds)]}, sort_keys=True)


def seeds_per_chunk(config: DPConfig, memory_budget_mb: float) -> int:
    """Seeds per vmapped chunk so that the engine's state and temporaries fit the budget.

    The estimate counts the slot arrays (12 bytes per slot, 20 with predictions, times 4 for the
    step's temporaries), the pool and the delay histogram; it errs on the large side.
    """
    G, B, R, W = config.num_workers, config.slots_per_worker, config.pool_size, config.window
    per_slot = 20 if config.horizon > 0 else 12
    per_seed = 4 * G * B * per_slot + 4 * G * B * 4 * (W if config.horizon > 0 else 1) \
        + 64 * R + 4 * config.delay_bins
    if config.record_loads:
        per_seed += config.num_steps * (3 * G + 3) * 4
    return max(1, int(memory_budget_mb * 2**20 // per_seed))


def read_rows(out: Path) -> list[dict]:
    """Rows of an existing results file ([] if absent)."""
    if not out.is_file():
        return []
    with out.open(newline="") as f:
        return list(csv.DictReader(f))


def run_sweep(base: DPConfig, axes: Mapping[str, Sequence], seeds: Sequence[int], out: str | Path, *,
              memory_budget_mb: float = 1024.0, progress: bool = True,
              on_point: Callable[[int, dict], None] | None = None,
              metrics: Sequence[str] = METRICS) -> Path:
    """Run the grid `axes` over `seeds`, appending one row per finished point to `out`."""
    out = Path(out)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("seeds must be a non-empty sequence of integers")
    points = grid_points(axes)
    # Validate every point before anything compiles.
    prepared = []
    for p in points:
        cfg_kw = {k: v for k, v in p.items() if k in _CONFIG_FIELDS}
        par_kw = {k: v for k, v in p.items() if k in _PARAM_FIELDS}
        cfg = dataclasses.replace(base, **cfg_kw)
        prepared.append((p, cfg, make_params(cfg, **par_kw), point_key(p, seeds)))
    # Temporaries of a write that a kill interrupted hold nothing the results file lacks.
    if is_writer():
        for stale in out.parent.glob(f".{out.name}.*.tmp"):
            stale.unlink()
    rows = read_rows(out) if is_writer() else []
    # Every process must run the same points (they gather together): process 0's file decides.
    done = set(broadcast_from_writer(sorted(r["point"] for r in rows)))
    todo = [x for x in prepared if x[3] not in done]
    t0 = time.perf_counter()
    for n, (p, cfg, params, key) in enumerate(todo, 1):
        chunk = min(len(seeds), seeds_per_chunk(cfg, memory_budget_mb))
        res = simulate_multihost(cfg, params, seeds, seed_chunk=chunk)
        row = {"point": key, **{k: _plain(v) for k, v in p.items()}, "policy": cfg.policy,
               "horizon": cfg.horizon, "num_workers": cfg.num_workers,
               "slots_per_worker": cfg.slots_per_worker, "pool_size": cfg.pool_size,
               "semantics": cfg.semantics, "workload": cfg.workload.name, "num_steps": cfg.num_steps,
               "n": len(seeds), "seed_first": seeds[0], "seed_last": seeds[-1], "wall_s": res.wall_s}
        for m in metrics:
            mean, std, half, _ = mean_ci(res.metrics[m])
            row.update({f"{m}_mean": mean, f"{m}_std": std, f"{m}_ci95": half})
        rows.append(row)
        if is_writer():
            write_csv(out, rows)  # atomic: a kill leaves the old file or the new one
        if on_point is not None:
            on_point(n, row)
        if progress and is_writer():
            el = time.perf_counter() - t0
            eta = el / n * (len(todo) - n)
            sys.stderr.write(f"\r  sweep: {len(done) + n}/{len(prepared)} points, {el:6.1f} s elapsed, "
                             f"ETA {eta:6.1f} s ")
            sys.stderr.flush()
    if progress and todo:
        sys.stderr.write("\n")
    return out


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def parse_axis(text: str) -> tuple[str, list]:
    """'name=v1,v2,...' -> (name, values); values become int or float where they parse."""
    name, sep, vals = text.partition("=")
    if not sep or not name.strip() or not vals.strip():
        raise ConfigError(f"--axis must look like name=v1,v2,..., got {text!r}")

    def conv(v: str):
        for t in (int, float):
            try:
                return t(v)
            except ValueError:
                pass
        return v

    return name.strip(), [conv(v.strip()) for v in vals.split(",") if v.strip()]
