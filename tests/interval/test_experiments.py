"""Paper 003's checks and experiments (jaxsched.interval.experiments), reduced sizes; the full
runs with `-m slow`. Each report's own check (`ok`) is what the command's exit status says."""

from __future__ import annotations

import pytest

from jaxsched.interval import experiments as ix
from jaxsched.interval import theory


def test_examples_reproduce_exactly():
    rep = ix.examples(quick=True)
    assert rep.ok and len(rep.rows) == 3
    assert [r["tel"] for r in rep.rows] == [5, 9, 12]


def test_cor48_values_and_fit():
    rep = ix.cor48(quick=True)
    assert rep.ok
    assert {r["u"] for r in rep.rows} >= {10, 100, 200}
    fit = rep.rows[-1]
    assert fit["u"] == "fit" and fit["trace"] > 0.9999


def test_two_point_quick_matches_theorem_52():
    rep = ix.two_point(quick=True)
    assert rep.ok
    for r in rep.rows:
        assert abs(r["al"] - r["thm52"]) < 0.05
        assert r["thm51"] == pytest.approx(theory.thm51_cr(r["alpha"], r["t"]))


def test_geometric_quick_formulas():
    rep = ix.geometric(quick=True)
    for r in rep.rows:
        if r["law"] == "LG":
            assert r["lemma46"] == pytest.approx(r["thm53"], abs=2e-3)
        assert 1.0 <= r["lemma46"] < 1.7
        assert r["amin"] > 0.5


def test_lower_bound_quick_is_below_the_printed_bound():
    rep = ix.lower_bound(quick=True)
    assert rep.ok
    assert all(r["sim"] < r["printed"] and r["formula"] <= r["max_ratio"] + 1e-9 for r in rep.rows)


def test_section6_quick_rows_and_claim():
    rep = ix.section6(quick=True, sizes=(300,), capacities=(8192,))
    assert rep.ok
    assert len(rep.rows) == len(ix.SECTION6_INTERVALS) * len(ix.SECTION6_POLICIES)
    for r in rep.rows:
        if r["policy"] in ("hsf", "amax"):
            assert r["evictions"] == 0
    hsf = {(r["experiment"], r["n"]): r["unit"] for r in rep.rows if r["policy"] == "hsf"}
    # H-SF never sees the intervals: one schedule per instance in every experiment.
    assert len(set(hsf.values())) == 1
    amax = {r["experiment"]: r["unit"] for r in rep.rows if r["policy"] == "amax"}
    assert amax["exp1 [1,1000]"] > amax["exp2 buckets"] > amax["exp3 x=0.1"]
    # each panel's y axis in its own unit (unit steps: steps; linear model: s)
    assert all(y == f"average latency ({t.rsplit(', ', 1)[1]})" for t, (_, y) in rep.plot["axes"].items())
    assert {y for _, y in rep.plot["axes"].values()} == {"average latency (steps)", "average latency (s)"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["two_point", "geometric", "lower_bound", "section6"])
def test_full_experiments(name):
    rep = ix.EXPERIMENTS[name]()
    assert rep.ok, rep.markdown
