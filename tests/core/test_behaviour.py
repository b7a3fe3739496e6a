"""Behaviour is pinned: the recorded outputs of fixed commands are reproduced bit for bit.

`benchmarks/results/behaviour/` holds the CSV files of `python -m benchmarks.behaviour record`
for every engine and driver. These tests run the commands afresh and require every numeric cell
to be equal (wall-clock columns aside); the default run covers the two cheapest, `-m slow` all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import behaviour

RECORDED = Path(behaviour.__file__).resolve().parent / "results" / "behaviour"


def _check(names: list[str], tmp_path: Path) -> None:
    behaviour.record(tmp_path, names)
    for name in names:
        assert (tmp_path / name).is_dir(), name
    diffs = behaviour.compare(RECORDED, tmp_path)
    assert not diffs, "\n".join(diffs[:20])


def test_compare_finds_a_changed_cell(tmp_path):
    # The comparison itself must catch a one-ulp change in one cell.
    rows = (RECORDED / "run" / "run.csv").read_text().splitlines()
    header = rows[0].split(",")
    col = header.index("avg_imbalance_tokens")
    cells = rows[1].split(",")
    cells[col] = repr(float(cells[col]) * (1 + 2**-52))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.csv").write_text("\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n")
    diffs = behaviour.compare(RECORDED, tmp_path)
    assert len(diffs) == 1 and "avg_imbalance_tokens" in diffs[0]


def test_quick_commands_reproduce_the_record(tmp_path):
    _check(["run", "sweep_kv"], tmp_path)


@pytest.mark.slow
def test_every_command_reproduces_the_record(tmp_path):
    names = [n for n in behaviour.commands(tmp_path) if n not in ("run", "sweep_kv")]
    _check(names, tmp_path)
