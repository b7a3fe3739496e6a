"""benchmarks/mutation.py plants each bug by replacing one exact text: every such text must
occur exactly once in its file, or the mutation run stops at that mutant."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.mutation import MUTANTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("m", MUTANTS, ids=[m.what for m in MUTANTS])
def test_each_mutant_replaces_one_occurrence_of_a_real_line(m):
    text = (ROOT / m.path).read_text()
    assert text.count(m.old) == 1, f"{m.path}: {m.old!r} occurs {text.count(m.old)} times"
    assert m.old != m.new
    assert all((ROOT / t.split("::")[0]).exists() for t in m.tests)
