"""Checks shared by the size-bucket tests of every engine: programs compiled in this test
process, counted through `jax.monitoring`, and two sweeps' results files compared row by row.

One listener for the whole process (registered on import): `COMPILES` lists the name of every
function the backend compiled, in order; a test notes `len(COMPILES)` before a call and
counts what was added after it.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

import jax

COMPILES: list[str] = []


def _listen(event: str, duration: float, **kw) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES.append(str(kw.get("fun_name", "")))


jax.monitoring.register_event_duration_secs_listener(_listen)


def block_compiles(since: int) -> int:
    """Block programs (the runner's scanned steps, `run_block`) compiled since `since` entries
    of COMPILES."""
    return sum("run_block" in name for name in COMPILES[since:])


def same_rows(a: Path, b: Path, n: int, columns: Sequence[str] = ()) -> dict[str, dict]:
    """Assert that the sweeps' results files `a` and `b` hold the same n row keys and, row by
    row, equal `columns` and every statistic (`*_mean`, `*_std`, `*_ci95`) bit for bit (the
    same decimal text); returns a's rows {key: row}."""
    rows_a, rows_b = ({r["key"]: r for r in csv.DictReader(Path(p).read_text().splitlines())} for p in (a, b))
    assert rows_a.keys() == rows_b.keys() and len(rows_a) == n, (len(rows_a), len(rows_b))
    for k, r in rows_a.items():
        for col, v in r.items():
            if col in columns or col.endswith(("_mean", "_std", "_ci95")):
                assert rows_b[k][col] == v, (r["point"], col, v, rows_b[k][col])
    return rows_a


def refuses_common_capacities(engine, config, params, field: str) -> None:
    """Assert that `engine.pad` refuses, with one ConfigError each, what every engine must: a
    capacity below the config's `field`, a field that is not a size, a capacity that is not a
    mapping, and params already padded."""
    import pytest

    from jaxsched.errors import ConfigError

    own = getattr(config, field)
    with pytest.raises(ConfigError, match=f"capacity {field}"):
        engine.pad(config, params, {field: own - 1})
    with pytest.raises(ConfigError, match="size fields"):
        engine.pad(config, params, {"not_a_size": 1})
    with pytest.raises(ConfigError, match="capacity"):
        engine.pad(config, params, [own])
    with pytest.raises(ConfigError, match="padded"):
        engine.pad(config, engine.pad(config, params, {field: 2 * own})[1], {field: 2 * own})


def bucketed_sweep_equals_alone(
    base,
    axes: dict,
    tmp_path: Path,
    params: dict,
    buckets: int,
    alone: int,
    columns: Sequence[str] = (),
    seeds=range(3),
) -> None:
    """Run the sweep `axes` over `base` with size buckets and without: the bucketed one
    compiles `buckets` block programs, the other `alone`, and both write the same rows."""
    from jaxsched.sweep import run_sweep

    n0 = len(COMPILES)
    bucketed = run_sweep(base, axes, seeds, tmp_path / "b.csv", params=params, progress=False)
    assert block_compiles(n0) == buckets
    n1 = len(COMPILES)
    single = run_sweep(base, axes, seeds, tmp_path / "a.csv", params=params, progress=False, buckets=False)
    assert block_compiles(n1) == alone
    same_rows(single, bucketed, alone, columns)
