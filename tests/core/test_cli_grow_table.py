"""`--grow-table` on the run commands of kv, budget and network: a seed that loses work to a
full table runs again with twice the slots, so the rows equal a large table's; a table size
that is not a power of two is one `jaxsched: error` line naming table_size."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from jaxsched.cli import main
from jaxsched.kv import METRICS

KV = ["kv", "run", "--num-requests", "90", "--seeds", "3", "--quiet"]


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _run(tmp_path: Path, name: str, *extra: str) -> list[dict]:
    out = tmp_path / f"{name}.csv"
    assert main([*KV, *extra, "--out", str(out)]) == 0
    return _rows(out)


def test_kv_run_grow_table_gives_the_large_tables_rows(tmp_path):
    small = _run(tmp_path, "small", "--table-size", "16")
    big = _run(tmp_path, "big", "--table-size", "128")
    grown = _run(tmp_path, "grown", "--table-size", "16", "--grow-table")
    assert all(float(r["table_overflow"]) > 0 for r in small)  # 16 slots lose arrivals
    assert all(float(r["table_overflow"]) == 0 for r in big)
    for g, b in zip(grown, big, strict=True):
        assert {k: g[k] for k in METRICS} == {k: b[k] for k in METRICS}


@pytest.mark.parametrize(
    "argv",
    [
        [*KV, "--table-size", "100", "--grow-table"],
        ["budget", "run", "--table-size", "1000", "--grow-table", "--quiet"],
        ["network", "run", "--table-size", "100", "--grow-table", "--quiet"],
    ],
)
def test_grow_table_needs_a_power_of_two(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsched: error: table_size (Q) must be a power of two"), err
