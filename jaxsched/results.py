"""Results tables: per-run rows in CSV, and mean / 95% confidence-interval summaries.

One format for every engine: a row per (configuration, seed) with the configuration's columns
first and each metric in the unit its name says. Files are written atomically (temporary file
and rename), so an interrupted run never leaves a half-written table.
"""
from __future__ import annotations

import csv
import math
import os
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30; the normal 1.96 beyond.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """Two-sided 95% Student-t quantile for df degrees of freedom (>= 1)."""
    return _T975[df - 1] if df <= len(_T975) else 1.96


def mean_ci(values: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean, std, half-width of the 95% CI of the mean, n); half-width is nan for n = 1."""
    x = np.asarray(values, np.float64)
    n = x.size
    mean = float(x.mean()) if n else math.nan
    std = float(x.std(ddof=1)) if n > 1 else math.nan
    half = t975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan
    return mean, std, half, n


def write_csv(path: str | Path, rows: Iterable[Mapping[str, object]]) -> Path:
    """Write dict rows to CSV atomically; columns in first-seen order."""
    rows = list(rows)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    columns: list[str] = []
    for r in rows:
        columns += [c for c in r if c not in columns]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            for r in rows:
                w.writerow({k: _fmt(v) for k, v in r.items()})
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _fmt(v: object) -> object:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


def format_value(x: float) -> str:
    """Four significant digits, scientific outside [1e-3, 1e6)."""
    if not math.isfinite(x):
        return "nan"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
        return f"{x:.3e}"
    return f"{x:.4g}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
