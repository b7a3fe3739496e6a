"""`jaxsched.tune`: fields, objectives and constraints read and checked before any work; a
search whose generations each run as one batch of the same compiled program, deterministic for
a seed, whose recorded objectives are the engine's own numbers, with refused and infeasible
candidates ranked last and their reasons kept; the held-out comparison with its CI."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import jaxsched.run as run_mod
from jaxsched import tune as T
from jaxsched.budget import BudgetConfig
from jaxsched.budget import make_params as budget_params
from jaxsched.dp import DPConfig
from jaxsched.dp import make_params as dp_params
from jaxsched.dp.engine import ENGINE as ENGINE_DP
from jaxsched.errors import ConfigError
from jaxsched.run import simulate
from tests.sweep_checks import COMPILES, block_compiles

CFG = BudgetConfig(policy="sarathi", horizon_s=6.0, burn_in_s=1.0, table_size=64)
FIXED = {"rates": [10.0]}
OBJ = T.Objective("latency_mean_s", "min")


def test_field_values():
    f = T.Field("budget", 64, 2048, "int")
    assert [f.value(u) for u in (0.0, 0.5, 1.0, -3.0, 7.0)] == [64, 1056, 2048, 64, 2048]
    assert isinstance(f.value(0.3), int)
    g = T.Field("c_s", 0.001, 0.1, "log")
    assert math.isclose(g.value(0.5), 0.01, rel_tol=1e-12)
    h = T.Field("prefill_cap", kind="choice", choices=(256, 512, 1024))
    assert [h.value(u) for u in (0.0, 0.33, 0.34, 0.99, 1.0)] == [256, 256, 512, 1024, 1024]


@pytest.mark.parametrize(
    "text, needle",
    [
        ("budget", "--field must look like"),
        ("budget=64", "--field must look like"),
        ("budget=64:32:int", "low must be < high"),
        ("budget=64.5:128:int", "an integer for an int field"),
        ("c_s=0:1:log", "> 0 on a log scale"),
        ("c_s=0:1:cubic", "kind must be one of"),
        ("c_s=a:1", "low and high must be numbers"),
        ("cap=1||2", "a choice must not be empty"),
        ("cap=1|1", "at least two distinct values"),
        ("c_s=0:inf", "a finite number"),
    ],
)
def test_bad_fields(text, needle):
    with pytest.raises(ConfigError, match=needle):
        T.parse_field(text)


def test_parse_objective_and_constraints():
    o = T.parse_objective("max throughput_tokens_per_s", ["ttft_p99_s<=2.5", "num_departed >= 10"])
    assert o == T.Objective(
        "throughput_tokens_per_s",
        "max",
        (T.Constraint("ttft_p99_s", "<=", 2.5), T.Constraint("num_departed", ">=", 10.0)),
    )
    for bad in ("throughput", "best x", "min", "max  "):
        with pytest.raises(ConfigError, match="--objective must look like"):
            T.parse_objective(bad)
    # A linear combination of metrics, evaluated seed by seed.
    o = T.parse_objective("max a - 36.5*b + 2e-3 * c")
    assert o.terms() == [(1.0, "a"), (-36.5, "b"), (0.002, "c")] and o.metrics() == ["a", "b", "c"]
    m = {"a": np.array([1.0, 2.0]), "b": np.array([0.5, 0.25]), "c": np.array([1000.0, 0.0])}
    assert o.per_seed(m).tolist() == [1.0 - 36.5 * 0.5 + 2.0, 2.0 - 36.5 * 0.25]
    for bad in ("min a b", "min a -", "min 2*", "min a+a", "min *a", "min a--b", "min 3"):
        with pytest.raises(ConfigError, match="objective metric must"):
            T.parse_objective(bad)
    for bad in ("ttft<2", "ttft<=x", "<=2", "ttft<=nan"):
        with pytest.raises(ConfigError, match="--constraint must look like"):
            T.parse_constraint(bad)


@pytest.fixture
def no_simulation(monkeypatch):
    monkeypatch.setattr(run_mod, "simulate_points", lambda *a, **k: pytest.fail("simulated before the check"))


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(fields=[T.Field("bogus", 1, 2)]), "field 'bogus' must be a make_params keyword of engine 'budget'"),
        (dict(fields=[T.Field("budget", 1, 2, "int")] * 2), "is given twice"),
        (dict(fields=[T.Field("prefill_cap", 64, 1024, "int")]), "prefill_cap is read only by policy"),
        (dict(objective=T.Objective("nope")), "metric 'nope' must be a metric of engine 'budget'"),
        (
            dict(objective=T.Objective("latency_mean_s", "min", (T.Constraint("x", "<=", 1),))),
            "metric 'x' must be a metric",
        ),
        (dict(train_seeds=[0, 1], test_seeds=[1, 2]), "must be disjoint"),
        (dict(train_seeds=[0]), "train_seeds must be at least two seeds"),
        (dict(train_seeds=[0, 0]), "distinct seeds"),
        (dict(fixed={"budget": 64}), "both tuned and fixed"),
        (dict(baseline={"c_s": 0.1}), "baseline 'c_s' must be a tuned field"),
        (dict(baseline={"budget": 0}), "budget"),  # refused by make_params itself
        (dict(searcher="adam"), "searcher must be one of"),
        (dict(population=2), "population must be an integer >= 4"),
        (dict(generations=0), "generations must be an integer >= 1"),
    ],
)
def test_bad_input_is_refused_before_any_simulation(kw, needle, no_simulation):
    args = dict(
        fields=[T.Field("budget", 64, 1024, "int")], objective=OBJ, fixed=FIXED, train_seeds=[0, 1], test_seeds=[5, 6]
    )
    args.update(kw)
    fields, objective = args.pop("fields"), args.pop("objective")
    with pytest.raises(ConfigError, match=needle):
        T.tune(CFG, fields, objective, **args)


def test_score_ranks_feasible_first_and_keeps_reasons():
    obj = T.Objective("latency_mean_s", "max", (T.Constraint("ttft_p99_s", "<=", 2.0),))
    ok = T._score({"latency_mean_s": np.array([3.0, 5.0]), "ttft_p99_s": np.array([1.0, 2.0])}, obj)
    bad = T._score({"latency_mean_s": np.array([9.0, 9.0]), "ttft_p99_s": np.array([3.0, 3.0])}, obj)
    worse = T._score({"latency_mean_s": np.array([9.0, 9.0]), "ttft_p99_s": np.array([5.0, 5.0])}, obj)
    nan = T._score({"latency_mean_s": np.array([np.nan, 1.0]), "ttft_p99_s": np.array([1.0, 1.0])}, obj)
    refused = T._score({"latency_mean_s": np.array([1.0]), "ttft_p99_s": np.array([1.0])}, obj, "refused by x")
    assert ok["feasible"] and ok["fitness"] == -4.0 and ok["objective"] == 4.0
    assert not bad["feasible"] and bad["reason"] == "ttft_p99_s <= 2 not met (mean 3)"
    assert ok["fitness"] < bad["fitness"] < worse["fitness"] < refused["fitness"]
    assert not nan["feasible"] and "not finite" in nan["reason"]
    assert refused["reason"] == "refused by x" and math.isnan(refused["objective"])


def test_a_refused_candidate_runs_the_baseline_in_its_place_and_is_marked():
    points = T._Points(_engine(), CFG, FIXED, {"max_requests": 8}, {})
    rows = T._evaluate(points, [{"max_requests": 0}, {"max_requests": 4}], [0, 1], OBJ)
    assert not rows[0]["feasible"] and rows[0]["reason"].startswith("refused: max_requests")
    assert rows[1]["feasible"]
    own = simulate(CFG, budget_params(CFG, max_requests=4, **FIXED), [0, 1]).metrics["latency_mean_s"]
    assert rows[1]["objective"] == float(np.mean(own))


def _engine():
    from jaxsched.engine import engine_of

    return engine_of(CFG)


def _search(seed: int = 3):
    return T.tune(
        CFG,
        [T.Field("budget", 64, 1024, "int"), T.Field("max_requests", 1, 16, "int")],
        OBJ,
        fixed=FIXED,
        train_seeds=[0, 1],
        test_seeds=[10, 11, 12],
        population=6,
        generations=3,
        seed=seed,
    )


def test_a_search_is_one_program_deterministic_and_reports_the_engines_numbers():
    since = len(COMPILES)
    res = _search()
    # Every generation (and the held-out pair, whose chunk has another shape) reuses programs:
    # the 18 candidates compile one block program, the held-out run at most one more.
    assert 1 <= block_compiles(since) <= 2
    assert len(res.history) == 18 and all(h["feasible"] for h in res.history)
    again = _search()
    assert again.history == res.history and again.best == res.best and again.test == res.test
    assert _search(seed=4).history != res.history
    # The best row is the lowest objective seen, and its number is the engine's own.
    best = min(res.history, key=lambda h: h["objective"])
    assert res.best == {"budget": best["budget"], "max_requests": best["max_requests"]}
    own = simulate(CFG, budget_params(CFG, **FIXED, **res.best), [0, 1]).metrics["latency_mean_s"]
    assert res.best_train == float(np.mean(own))
    # Held out: the paired difference is the difference of the two runs' means.
    t = res.test
    assert math.isclose(t["difference"][0], t["tuned"][0] - t["baseline"][0], rel_tol=1e-9, abs_tol=1e-12)
    assert t["difference"][1] >= 0 and isinstance(t["verdict"], str)
    assert res.baseline == {"budget": 512, "max_requests": budget_params.__kwdefaults__["max_requests"]}


def test_held_out_of_the_baseline_against_itself_finds_nothing():
    eng = _engine()
    t = T.held_out(eng, CFG, FIXED, {"budget": 256}, {"budget": 256}, [0, 1, 2], OBJ)
    assert t["difference"] == (0.0, 0.0) and t["tuned"] == t["baseline"]
    assert t["verdict"].startswith("tuning found nothing significantly better")
    # Constrained metrics are reported for both, as their own runs give them.
    obj = T.Objective("latency_mean_s", "min", (T.Constraint("num_departed", ">=", 1e9),))
    t = T.held_out(eng, CFG, FIXED, {"budget": 256}, {"budget": 512}, [0, 1], obj)
    own = [simulate(CFG, budget_params(CFG, budget=b, **FIXED), [0, 1]).metrics["num_departed"] for b in (256, 512)]
    assert t["constraints"] == {"num_departed": tuple(float(np.mean(x)) for x in own)}
    assert not t["tuned_feasible"] and t["verdict"] == "the tuned values break a constraint on the held-out seeds"


def test_write_gives_history_summary_and_plot(tmp_path):
    res = _search()
    files = T.write(res, tmp_path)
    lines = files["history"].read_text().splitlines()
    assert len(lines) == 1 + 18 and lines[0].startswith("generation,index,budget,max_requests,objective")
    assert "held-out seeds (3)" in files["summary"].read_text()
    assert files["plot"].stat().st_size > 5000
    best = T.best_so_far(res.history)
    assert len(best) == 3 and all(b1 >= b2 for b1, b2 in zip(best, best[1:]))


def test_the_command_line(tmp_path, capsys):
    from jaxsched.cli import main

    out = tmp_path / "t"
    argv = [
        *("tune", "budget", "--set", "policy=sarathi", "--set", "horizon_s=6", "--set", "burn_in_s=1"),
        *("--set", "table_size=64", "--set", "rates=[10.0]", "--field", "budget=64:1024:int"),
        *("--objective", "min latency_mean_s", "--population", "4", "--generations", "2"),
        *("--train-seeds", "2", "--seeds", "2", "--out", str(out), "--quiet"),
    ]
    assert main(argv) == 0
    assert {p.name for p in out.iterdir()} == {"history.csv", "summary.md", "convergence.png", "config.toml"}
    assert len(files := (out / "history.csv").read_text().splitlines()) == 1 + 8, files
    assert "| budget | 512 |" in capsys.readouterr().out
    # The options file repeats the run; a named folder of an earlier run is not replaced.
    assert main(["tune", "--config", str(out / "config.toml")]) == 2
    assert "--out would replace" in capsys.readouterr().err
    for bad, needle in (
        (["tune", "budget", "--steps", "5"], "--steps is read only by tuner e3, e4"),
        (["tune", "e3", "--field", "budget=1:2"], "--field is read only by tuner an engine name"),
        (["tune", "bogus"], "must be e3 or e4 (kv's gradient tuner) or an engine"),
        (["tune", "budget", "--objective", "min latency_mean_s"], "--field is required"),
        (["tune", "budget", "--field", "budget=64:128:int"], "--objective is required"),
        (["tune", "budget", "--field", "nope=1:2", "--objective", "min latency_mean_s"], "field 'nope' must be"),
    ):
        assert main(bad) == 2, bad
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (bad, err)


def test_encode_is_the_inverse_of_decode_and_the_search_starts_at_the_baseline(monkeypatch):
    fields = [T.parse_field(t) for t in ("budget=64:1024:int", "th[3]=1:64:int", "c=1|2|4", "a=0.001:0.1:log")]
    values = {"budget": 100, "th": (1, 32, 64), "c": 4, "a": 0.001}
    back = T.decode(fields, T.encode(fields, values))
    assert math.isclose(back.pop("a"), 0.001, rel_tol=1e-12) and back == {k: v for k, v in values.items() if k != "a"}
    for bad in ({"budget": 2000}, {"th": (1, 2)}, {"c": 3}, {"a": None}):
        assert T.encode(fields, {**values, **bad}) is None
    starts = []
    real = T._searcher
    monkeypatch.setattr(T, "_searcher", lambda *a: starts.append(a[-1]) or real(*a))
    one = dict(fixed=FIXED, train_seeds=[0, 1], test_seeds=[2, 3], population=4, generations=1)
    res = T.tune(CFG, fields[:1], OBJ, baseline={"budget": 160}, **one)
    T.tune(CFG, fields[:1], OBJ, baseline={"budget": 2000}, **one)
    assert starts == [[0.1], None]  # (160 - 64) / 960; a baseline outside the range: the centre
    # The baseline in range is the first candidate evaluated.
    assert res.history[0]["budget"] == 160 and res.history[1]["budget"] != 160


DP = DPConfig(num_workers=3, slots_per_worker=4, pool_size=6, policy="bfio", lookahead_steps=2, num_steps=40)
DP_OBJ = T.Objective("avg_imbalance_tokens", "min")


def test_config_fields_tune_as_values_in_one_program():
    # BF-IO's lookahead H (a size) and decay (a value field) are DPConfig fields: every candidate
    # runs padded into the bucket of the largest H, one program, and its numbers are those of its
    # own unpadded config.
    fields = [T.Field("lookahead_steps", 1, 4, "int"), T.Field("lookahead_decay", 0.2, 1.0)]
    since = len(COMPILES)
    res = T.tune(DP, fields, DP_OBJ, train_seeds=[0, 1], test_seeds=[5, 6], population=5, generations=2, seed=1)
    assert 1 <= block_compiles(since) <= 2
    assert res.baseline == {"lookahead_steps": 2, "lookahead_decay": 0.7}
    assert len({(h["lookahead_steps"], h["lookahead_decay"]) for h in res.history}) >= 5
    for h in res.history[:4] + [min(res.history, key=lambda h: h["fitness"])]:
        own = dataclasses.replace(DP, lookahead_steps=h["lookahead_steps"], lookahead_decay=h["lookahead_decay"])
        assert h["objective"] == float(np.mean(simulate(own, dp_params(own), [0, 1]).metrics["avg_imbalance_tokens"]))
    # H = 0 is another kernel: a candidate there is refused with its reason, not run.
    points = T._Points(ENGINE_DP, DP, {}, {"lookahead_steps": 2}, {"lookahead_steps": 3})
    rows = T._evaluate(points, [{"lookahead_steps": 0}], [0, 1], DP_OBJ)
    assert not rows[0]["feasible"] and "lookahead_steps" in rows[0]["reason"]


@pytest.mark.parametrize(
    "field, needle",
    [
        (T.Field("num_workers", 1.0, 4.0), "a single integer"),
        (T.Field("policy", choices=("fcfs", "bfio"), kind="choice"), "Config field it pads"),
    ],
)
def test_bad_config_fields_are_one_error(field, needle, no_simulation):
    with pytest.raises(ConfigError, match=needle):
        T.check_problem(DP, [field], DP_OBJ)


@pytest.mark.parametrize("searcher", T.SEARCHERS)
def test_the_search_finds_the_optimum_known_by_enumeration(searcher):
    # A small synthetic problem on the budget engine: 8 request caps x 4 token budgets, every
    # point's objective known by running them all; both searchers reach the best one.
    fields = [T.Field("max_requests", 1, 8, "int"), T.Field("budget", kind="choice", choices=(64, 128, 256, 512))]
    grid = [{"max_requests": m, "budget": b} for m in range(1, 9) for b in (64, 128, 256, 512)]
    runs = run_mod.simulate_points(CFG, [budget_params(CFG, **FIXED, **g) for g in grid], [0, 1], warn=False)
    values = [float(np.mean(r.metrics["latency_mean_s"])) for r in runs]
    optima = [g for g, v in zip(grid, values) if v == min(values)]
    assert len(optima) < len(grid) // 4  # few optima (budgets beyond what a batch holds tie)
    res = T.tune(
        CFG,
        fields,
        OBJ,
        fixed=FIXED,
        train_seeds=[0, 1],
        test_seeds=[7, 8],
        searcher=searcher,
        population=8,
        generations=6,
        seed=0,
    )
    assert res.best in optima and res.best_train == min(values)
