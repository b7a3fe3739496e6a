"""benchmarks/tune_optuna.py: Optuna one candidate at a time against jaxsched.tune's batched
CMA-ES on the same budget. The quick Sarathi comparison writes a report whose two methods
evaluated the same number of candidates x seeds, both starting at the baseline with the same
engine numbers, whose best-so-far traces and speed ratio follow from the recorded rows, and the
ranking of infeasible candidates is jaxsched.tune's own."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("optuna", reason="optuna is a benchmark-only dependency: pip install 'jaxsched[bench]'")
pytest.importorskip("evosax", reason="the ES side needs evosax: pip install 'jaxsched[tune]'")

from benchmarks import tune_optuna as B  # noqa: E402
from jaxsched import tune as T  # noqa: E402


def test_fitness_is_jaxsched_tunes():
    """The penalised fitness Optuna is told equals jaxsched.tune's for feasible, violating and
    non-finite candidates, and for a maximised objective."""
    objective = T.parse_objective("min a", ["b<=2", "c>=1"])
    cases = [
        {"a": [1.0, 3.0], "b": [1.0, 2.0], "c": [1.0, 5.0]},  # feasible
        {"a": [1.0, 3.0], "b": [3.0, 4.0], "c": [0.0, 0.5]},  # both constraints broken
        {"a": [np.nan, 1.0], "b": [1.0, 1.0], "c": [2.0, 2.0]},  # objective not finite
    ]
    for obj in (objective, T.Objective("a", "max", objective.constraints)):
        for case in cases:
            m = {k: np.asarray(v) for k, v in case.items()}
            mine, theirs = B.fitness(m, obj), T._score(m, obj)
            assert mine["feasible"] == theirs["feasible"]
            assert mine["fitness"] == theirs["fitness"]
            assert mine["objective"] == theirs["objective"] or math.isnan(theirs["objective"])


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    stem = tmp_path_factory.mktemp("tune_optuna") / "sarathi"
    report = B.main(["sarathi", "--quick", "--out", str(stem)])
    return stem, report


def test_quick_report_structure(quick):
    stem, report = quick
    on_disk = json.loads(stem.with_name("sarathi.json").read_text())
    assert on_disk["settings"] == report["settings"] and len(on_disk["runs"]) == 2
    assert stem.with_name("sarathi.png").stat().st_size > 0
    assert "| round | method |" in stem.with_name("sarathi.md").read_text()
    s = on_disk["settings"]
    assert len(on_disk["load"]["before"]) == len(on_disk["load"]["after"]) == 3
    assert [r["method"] for r in on_disk["runs"]] == ["optuna", "es"]
    budget = s["population"] * s["generations"]
    for run in on_disk["runs"]:
        # The same evaluation budget: candidates x training seeds.
        assert run["candidates"] == len(run["rows"]) == budget
        assert run["evaluations"] == budget * len(s["train_seeds"])
        assert 0 < run["first_call_s"] <= run["wall_s"] and run["compiles"] >= 1 and run["compile_s"] > 0
        times = [t for t, _ in run["trace"]]
        assert times == sorted(times) and times[-1] <= run["wall_s"]
        best = [f for _, f in run["trace"] if f is not None]
        assert best == sorted(best, reverse=True)
        feasible = [r["fitness"] for r in run["rows"] if r["feasible"]]
        assert run["best_fitness"] == min(feasible) == best[-1]
        for r in run["rows"]:
            assert r["feasible"] == (r["fitness"] < B.INFEASIBLE)
        assert run["held_out"]["tuned_feasible"] in (True, False)


def test_same_start_same_numbers(quick):
    """Both start at the baseline, and the one-candidate evaluation gives the batched search's
    numbers for it."""
    _, report = quick
    opt, es = report["runs"]
    base = report["settings"]["baseline"]
    assert opt["rows"][0]["candidate"] == es["rows"][0]["candidate"] == base
    assert opt["rows"][0]["objective"] == es["rows"][0]["objective"]
    assert opt["rows"][0]["fitness"] == es["rows"][0]["fitness"]


def test_speed_ratio_follows_from_the_rows(quick):
    _, report = quick
    opt, es = report["runs"]
    (rnd,) = report["rounds"]
    assert rnd["target_fitness"] == max(opt["best_fitness"], es["best_fitness"])
    for run, t in ((opt, rnd["t_optuna_s"]), (es, rnd["t_es_s"])):
        reached = [r["t"] for r in run["rows"] if r["feasible"] and r["fitness"] <= rnd["target_fitness"]]
        assert t == min(reached)
    assert rnd["speed_ratio"] == rnd["t_optuna_s"] / rnd["t_es_s"]
    assert rnd["total_ratio"] == opt["wall_s"] / es["wall_s"]
    assert report["summary"]["speed_ratio"] == rnd["speed_ratio"]


def test_refuses_to_overwrite(quick):
    stem, _ = quick
    with pytest.raises(SystemExit, match="--overwrite"):
        B.main(["sarathi", "--quick", "--out", str(stem)])
