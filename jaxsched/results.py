"""Results files: rows in CSV written atomically, read back, and rendered as markdown tables.

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


def read_rows(path: str | Path) -> list[dict]:
    """Rows of an existing CSV results file as dicts of strings ([] if absent)."""
    path = Path(path)
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


class ResultsFile:
    """A resumable results file: one row per finished unit of work, keyed by a column.

    Every driver that runs a list of jobs (sweep points, theorem runs) resumes the same way:
    rows already in the file are kept as they are, their keys are `done`, and each new row is
    appended by rewriting the whole file atomically, so a kill at any moment (even SIGKILL)
    leaves the old file or the new one, never a torn row. Temporaries of an interrupted write
    are removed when the file is opened. `writer=False` (other processes of a multi-host job)
    reads nothing and writes nothing.
    """

    def __init__(self, path: str | Path, key: str, *, writer: bool = True):
        self.path, self.key, self.writer = Path(path), key, writer
        if writer:
            for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
                stale.unlink()
        self.rows: list[dict] = read_rows(self.path) if writer else []

    @property
    def done(self) -> set[str]:
        """Keys of the rows already in the file."""
        return {r[self.key] for r in self.rows}

    def append(self, row: Mapping[str, object]) -> None:
        """Add one row (it must carry the key column) and rewrite the file atomically."""
        if self.key not in row:
            raise KeyError(f"results row lacks its key column {self.key!r}")
        self.rows.append(dict(row))
        if self.writer:
            write_csv(self.path, self.rows)


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
