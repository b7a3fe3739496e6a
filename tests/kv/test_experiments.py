"""Experiments E1-E4 and Theorem 1's scaling sweep of the WAIT paper (jaxsched.kv.experiments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxsched.cli import main
from jaxsched.errors import ConfigError
from jaxsched.kv import POLICIES
from jaxsched.kv import experiments as kx
from jaxsched.kv.fluid import equilibrium, nested_check, nested_segments, wait_check
from jaxsched.stats import loglog_slope


def test_rates_hit_the_requested_load():
    for exp in kx.EXPERIMENTS.values():
        for rho in (0.3, 0.9):
            t = exp.types(rho)
            assert t.load == pytest.approx(rho, rel=1e-12)
            r = t.rates / t.rates[0]
            assert np.allclose(r, np.asarray(exp.rate_ratio) / exp.rate_ratio[0])
    with pytest.raises(ConfigError, match="load"):
        kx.EXPERIMENTS["e1"].rates(1.0)


def test_wait_rule_meets_condition_9_within_capacity():
    t = kx.EXPERIMENTS["e1"].types(0.7)
    n, verdict = kx.wait_rule(t, 0.1)
    chk = wait_check(t, n)
    assert verdict == "strict" and chk.strict.all() and chk.fits
    # at least (1 + slack) times the fluid per-stage counts
    assert np.all(n >= 1.1 * equilibrium(t).per_stage * (1 - 1e-9))
    # E4: ten types whose one-request-per-stage memory alone exceeds C: WAIT cannot run
    n4, v4 = kx.wait_rule(kx.EXPERIMENTS["e4"].types(0.5), 0.1)
    assert n4 is None and v4.startswith("infeasible")


def test_nested_rule_is_strict_and_decreasing_on_e3():
    t = kx.EXPERIMENTS["e3"].types(0.7)
    n, verdict = kx.nested_rule(t, 0.1, 0.02)
    chk = nested_check(nested_segments(t), n)
    assert verdict == "(10) strict" and chk.first_strict and chk.ratios.all() and chk.fits
    assert np.all(np.diff(n) <= 0)  # tail-rate thresholds 15:14:12:8 shape


def test_registered_policies_follow_the_registry():
    names = kx.registered_policies()
    assert set(names) == set(POLICIES)
    assert names[0] == "wait"
    with pytest.raises(ConfigError, match="policies"):
        kx.registered_policies(["nope"])


def test_fit_slope_recovers_synthetic_power_laws():
    T = np.array([100.0, 200, 400, 800, 1600])
    rng = np.random.default_rng(0)
    for slope in (-0.5, -1.0):
        y = 3.0 * T**slope * np.exp(rng.normal(0, 0.02, T.size))
        s, ci, n = loglog_slope(T, y)
        assert n == 5 and abs(s - slope) < 0.05 and 0 < ci < 0.1
    # exact data: zero-width CI; non-positive values are left out of the log fit
    s, ci, n = loglog_slope(T, np.r_[T[:4] ** -1.0, -1.0])
    assert n == 4 and s == pytest.approx(-1.0) and ci == pytest.approx(0.0, abs=1e-9)


def test_scaling_instances_sit_on_and_inside_condition_9():
    for inst in kx.SCALING_INSTANCES:
        dt = inst.d0_s + inst.d1_s_per_token * inst.threshold * (inst.decode + 1) * (inst.prefill + inst.decode / 2)
        cap = inst.threshold / inst.rate
        if inst.name == "equality":
            assert dt == cap and inst.capacity_tokens == 6  # C = M* = 6 tokens
        else:
            assert dt < cap


def _check_rows(rows, policies, loads):
    assert [(r["policy"], r["load"]) for r in rows] == [(p, l) for l in loads for p in policies]
    for r in rows:
        assert r["seeds"] >= 1 and r["rate_total_req_s"] > 0
        assert 0 < r["throughput"] <= 1.05 * r["fluid_throughput"]
        assert 0 < r["ttft_mean"] <= r["latency_mean"] <= r["latency_p99"] * 1.1
        assert r["peak_memory_tokens"] <= r["capacity_tokens"]
        assert r["dropped_arrivals"] == 0 and r["status"] == "ok", r["issues"]


def test_e1_quick_point_shape_and_sanity():
    rows = kx.run_experiment("e1", quick=True, loads=(0.5,), policies=["wait", "fcfs"], batch_limits=(None,))
    _check_rows(rows, ["wait", "fcfs"], (0.5,))
    assert rows[0]["rule"] == "(9) strict" and rows[1]["thresholds"] == "-"
    # C = 1.2 M*: memory binds. WAIT holds its M^pi, FCFS comes near C.
    for r in rows:
        assert r["capacity_tokens"] == math.ceil(1.2 * r["fluid_memory_tokens"] * (1 - 1e-12))
        assert r["peak_memory_tokens"] >= 0.85 * r["capacity_tokens"]


def test_e3_nested_wait_reaches_fluid_throughput_at_a_stable_rate():
    # C = M^pi of its thresholds; the window throughput (no warm-up, no drain) meets the load.
    rows = kx.run_experiment(
        "e3",
        loads=(0.5,),
        policies=["nested_wait"],
        seeds=2,
        num_requests=4000,
        batch_limits=(None,),
        capacities=("mpi",),
    )
    _check_rows(rows, ["nested_wait"], (0.5,))
    assert rows[0]["throughput_ratio"] > 0.9
    assert "(10) strict" in rows[0]["rule"]


def test_e4_wait_is_reported_infeasible_not_run():
    exp = kx.EXPERIMENTS["e4"]
    r = kx.run_point(exp, "wait", 0.5, [0], 100)
    assert r["rule"].startswith("infeasible") and math.isnan(r["throughput"])
    assert r["status"] == "infeasible" and "infeasible" in kx.experiment_table([r])


def test_threshold_rules_refuse_instead_of_falling_back():
    # E4: no integer Nested WAIT thresholds meet (10) within C (all ones already need more than
    # C), so the rule says so and the point is not run, as WAIT's is not.
    types = kx.EXPERIMENTS["e4"].types(0.5)
    n, verdict = kx.nested_rule(types, 0.1, 0.02)
    assert n is None and verdict.startswith("infeasible") and "M^pi > C" in verdict
    r = kx.run_point(kx.EXPERIMENTS["e4"], "nested_wait", 0.5, [0], 100)
    assert r["status"] == "infeasible" and math.isnan(r["throughput"])
    # Where (10) can hold (E3 at rho = 0.5), the rule returns strict thresholds.
    n, verdict = kx.nested_rule(kx.EXPERIMENTS["e3"].types(0.5), 0.1, 0.02)
    assert n is not None and verdict == "(10) strict"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["e1", "e2", "e3", "e4"])
def test_quick_experiments_all_policies(name):
    rows = kx.run_experiment(name, quick=True)
    exp = kx.EXPERIMENTS[name]
    assert len(rows) == (
        len(exp.quick_loads) * len(exp.quick_batch_limits) * len(exp.quick_capacities) * len(kx.registered_policies())
    )
    for r in rows:
        if not math.isnan(r["throughput"]):
            assert 0 < r["throughput"] <= 1.05 * r["fluid_throughput"]


def test_scaling_point_gap_estimator():
    inst = kx.SCALING_INSTANCES[1]  # strict: backlog O(1), the gap is small and positive
    r = kx.scaling_point(inst, 200.0, range(8))
    assert 0 < r["gap"] < 0.5 and r["in_system"] < 3 * inst.threshold * (inst.decode + 1) + 10
    assert r["gap_ci"] < r["gap_raw_ci"]  # the arrival control variate reduces the noise


@pytest.mark.slow
def test_scaling_quick_slopes():
    rows, fits = kx.run_scaling(quick=True)
    f = {x["instance"]: x for x in fits}
    assert f["equality"]["gap_slope"] > -0.8 and f["strict"]["gap_slope"] < -0.8
    assert f["equality"]["latency_slope"] > 0.2 and abs(f["strict"]["latency_slope"]) < 0.1


# --------------------------------------------------------------------------- CLI


def test_cli_kv_experiment_quick(tmp_path, capsys):
    rc = main(
        [
            "kv",
            "experiment",
            "e3",
            "--quick",
            "--policies",
            "nested_wait",
            "--seeds",
            "1",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "| Nested WAIT |" in out and "paper's claim" in out
    assert (tmp_path / "e3.csv").exists() and (tmp_path / "e3.png").stat().st_size > 0


def test_cli_kv_run(capsys):
    rc = main(["kv", "run", "--policy", "fcfs", "--num-requests", "200", "--seeds", "2", "--table-size", "512"])
    out = capsys.readouterr().out
    assert rc == 0 and "| throughput_tokens_per_s |" in out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["kv", "experiment", "e9"], "must be one of e1, e2, e3, e4, scaling"),
        (["kv", "experiment", "e1", "--policies", "nope"], "policies"),
        (["kv", "experiment", "scaling", "--seeds", "1"], "--seeds"),
        (["kv", "experiment", "e1", "--batch-limits", "none,x"], "--batch-limits"),
        (["kv", "experiment", "e1", "--batch-limits", "0"], "batch_limits"),
        (["kv", "experiment", "e1", "--capacity", "mstar,nope"], "--capacity"),
        (["kv", "experiment", "e1", "--loads", "0.5,1.2"], "load"),
        (["kv", "experiment", "e1", "--loads", "half"], "--loads"),
        (["kv", "run", "--decode", "10,x"], "--decode"),
        (["kv", "run", "--policy", "nope"], "--policy"),
    ],
)
def test_cli_kv_bad_arguments(argv, msg, capsys):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own checks (choices)
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert "error" in err and msg in err


def test_cli_kv_needs_a_subcommand():
    with pytest.raises(SystemExit) as e:
        main(["kv"])
    assert e.value.code == 2


def test_request_table_grows_until_no_arrival_is_lost():
    # A burst into an 8-slot table loses arrivals; the runner doubles the table until none is
    # lost, and with the growth capped it returns the lossy run, which the row then flags.
    from jaxsched.kv import make_params
    from jaxsched.kv.config import KVConfig
    from jaxsched.kv.experiments.runner import _run_growing_table
    from jaxsched.kv.metrics import stability_issues

    cfg = KVConfig(
        prefill_tokens=(5,), decode_tokens=(5,), policy="fcfs", num_requests=60, table_size=8, arrivals_per_step=8
    )
    params = make_params(cfg, rates=(1e5,), d0_s=0.01, d1_s_per_token=1e-6, capacity_tokens=1000, check_stability=False)
    grown, met = _run_growing_table(cfg, params, [0, 1], table_limit=1024)
    assert grown.table_size > 8 and not met["table_overflow"].any()
    assert stability_issues(met, 60) == []
    capped, lossy = _run_growing_table(cfg, params, [0, 1], table_limit=8)
    assert capped.table_size == 8 and lossy["table_overflow"].sum() > 0
    assert "full request table" in "; ".join(stability_issues(lossy, 60))


def test_invalid_rows_are_visible_in_the_table():
    rows = kx.run_experiment(
        "e1", quick=True, seeds=1, policies=["fcfs"], loads=(0.5,), num_requests=200, batch_limits=(None,)
    )
    assert rows[0]["status"] == "ok" and rows[0]["dropped_arrivals"] == 0
    bad = dict(rows[0], status="invalid", issues="7 arrivals lost to a full request table")
    table = kx.experiment_table([rows[0], bad])
    assert "| ok |" in table and "**INVALID**: 7 arrivals lost" in table


def test_one_batch_limit_for_every_policy():
    # The same B binds WAIT as it binds the vLLM-style policy: at rho = 0.5 an uncapped WAIT
    # batch holds hundreds of requests, so B = 16 costs it most of its throughput.
    rows = kx.run_experiment(
        "e1", seeds=1, loads=(0.5,), policies=["wait", "vllm"], num_requests=400, batch_limits=(None, 16)
    )
    by = {(r["policy"], r["batch_limit"]): r for r in rows}
    assert [(r["policy"], r["batch_limit"]) for r in rows] == [
        ("wait", "none"),
        ("vllm", "none"),
        ("wait", 16),
        ("vllm", 16),
    ]
    for pol in ("wait", "vllm"):
        assert by[pol, 16]["throughput"] < 0.5 * by[pol, "none"]["throughput"]
        # 16 requests per >= 10 ms iteration cannot carry ~27k request-stages/s: said a priori.
        assert by[pol, 16]["status"] == "overloaded"
        assert "overloaded by the batch limit" in by[pol, 16]["issues"]
        assert by[pol, 16]["dropped_arrivals"] == 0  # its table holds every arrival
    assert "| 16 |" in kx.experiment_table(rows)
    with pytest.raises(ConfigError, match="batch_limits"):
        kx.run_experiment("e1", quick=True, batch_limits=(0,))


def test_prefill_price_option_of_the_experiments(capsys):
    # A prefill token at 5 d1 makes every prefill batch longer: latency rises at the same load.
    kw = dict(seeds=1, loads=(0.5,), policies=["fcfs"], num_requests=300, batch_limits=(None,))
    plain = kx.run_experiment("e1", **kw)[0]
    priced = kx.run_experiment("e1", prefill_price=5.0, **kw)[0]
    assert plain["prefill_price"] == "eq1" and priced["prefill_price"] == 5.0
    assert priced["latency_mean"] > plain["latency_mean"] and priced["status"] == "ok"
    assert main(["kv", "experiment", "e1", "--prefill-price", "-1"]) == 2
    assert "prefill_price" in capsys.readouterr().err
    assert main(["kv", "experiment", "scaling", "--prefill-price", "2"]) == 2


# --------------------------------------------------------------------------- regime and steady state


def test_capacity_rules_follow_the_fluid_memory():
    exp = kx.EXPERIMENTS["e3"]
    for load in (0.5, 0.9):
        mstar = equilibrium(exp.types(load)).memory
        c, what = kx.capacity_for(exp, load, "mstar")
        assert c == math.ceil(1.2 * mstar * (1 - 1e-12)) and what == "1.2 M*"
        # "mpi": the memory of Nested WAIT's thresholds, which then fit C exactly.
        c, what = kx.capacity_for(exp, load, "mpi")
        th, _ = kx.thresholds_for(exp, "nested_wait", exp.types(load, kx.Hardware(capacity_tokens=c)))
        assert th is not None and what == "M^pi(nested_wait)"
        assert nested_check(nested_segments(exp.types(load)), th).memory <= c
    assert kx.capacity_for(exp, 0.5, "hardware") == (110_000, "hardware")
    with pytest.raises(ConfigError, match="capacity rule"):
        kx.capacity_for(exp, 0.5, "nope")
    # E4: no integer Nested WAIT thresholds meet (10) at rho = 0.5, whatever C.
    with pytest.raises(ConfigError, match="no thresholds"):
        kx.capacity_for(kx.EXPERIMENTS["e4"], 0.5, "mpi")


def test_steady_plan_grows_with_the_load():
    exp = kx.EXPERIMENTS["e2"]
    lo, hi = kx.steady_plan(exp, 0.5, 100), kx.steady_plan(exp, 0.9, 100)
    assert hi.relax_s > 10 * lo.relax_s  # (lifetime at dT*) / (1 - rho)
    rate = exp.types(0.9).total_rate
    assert hi.burn_in == math.ceil(exp.burn_in_relax * hi.relax_s * rate)
    assert hi.window == math.ceil(exp.window_relax * hi.relax_s * rate)
    assert hi.num_requests == hi.window + 2 * hi.burn_in
    assert kx.steady_plan(exp, 0.5, 10**6).window == 10**6  # the least window wins


def test_settling_flags_a_growing_queue_and_unfinished_requests():
    from jaxsched.kv.metrics import settling

    flat = dict(
        in_system_open=np.array([52.0, 55, 60]),
        in_system_mid=np.array([50.0, 60, 55]),
        in_system_close=np.array([52.0, 57, 56]),
        num_measured_completed=np.array([1000.0, 1000, 1000]),
        table_overflow=np.zeros(3),
    )
    mean, half, first, issues = settling(flat, 1000)
    assert issues == [] and abs(mean) < 0.01 and half > 0 and abs(first) < 0.01
    growing = dict(flat, in_system_close=np.array([200.0, 220, 190]))
    assert "queue still growing" in settling(growing, 1000)[3][0]
    late = dict(flat, in_system_open=np.array([0.0, 0, 0]))  # settled only mid-window
    assert "burn-in too short" in settling(late, 1000)[3][0]
    unfinished = dict(flat, num_measured_completed=np.array([1000.0, 990, 1000]))
    assert settling(unfinished, 1000)[3] == ["10 measured requests not completed by the horizon"]


def test_overload_bound_names_the_limit():
    from jaxsched.kv.experiments.runner import overload

    t = kx.EXPERIMENTS["e1"].types(0.5)
    assert overload("wait", t, None) == "" and overload("wait", t, 4096) == ""
    assert "batch limit" in overload("wait", t, 128)
    assert "chunk budget" in overload("sarathi", kx.EXPERIMENTS["e1"].types(0.8), None)


def test_an_unsettled_row_is_marked():
    # E1 at rho = 0.5: the Sarathi-style chunk budget keeps up with the prefills on paper but
    # not in the run: its queue grows through the window.
    rows = kx.run_experiment("e1", seeds=1, loads=(0.5,), policies=["sarathi"], num_requests=1000, batch_limits=(None,))
    r = rows[0]
    assert r["status"] == "unsettled" and "queue still growing" in r["issues"]
    assert r["throughput_ratio"] < 0.9 and r["queue_growth"] > 0.05
    assert "unsettled (growth +" in kx.experiment_table(rows)


def test_cli_exits_1_when_a_row_lost_arrivals(tmp_path, monkeypatch, capsys):
    # Whatever the status, a row whose table lost arrivals makes the command fail loudly.
    rows = kx.run_experiment(
        "e1", quick=True, seeds=1, policies=["fcfs"], loads=(0.5,), num_requests=200, batch_limits=(None,)
    )
    lossy = dict(
        rows[0],
        status="unsettled",
        dropped_arrivals=12.0,
        issues="queue still growing (+30.0% of the arrivals per half window)",
    )
    monkeypatch.setattr(kx, "run_experiment", lambda *a, **k: [rows[0], lossy])
    rc = main(["kv", "experiment", "e1", "--out", str(tmp_path), "--quiet"])
    captured = capsys.readouterr()
    assert rc == 1 and "arrivals lost" in captured.err and "12 arrivals lost" in captured.out


def test_summary_tables_read_the_experiment_csv(tmp_path):
    from benchmarks.kv_summary import tables
    from jaxsched.results import write_csv

    rows = kx.run_experiment(
        "e4", seeds=1, loads=(0.5,), policies=["wait", "fcfs"], num_requests=200, batch_limits=(None,)
    )
    text = tables(write_csv(tmp_path / "e4.csv", rows))
    assert "E4, C = 1.2 M*, B = none" in text
    assert "| WAIT | infeasible |" in text
    fcfs = rows[1]
    assert f"| FCFS | {fcfs['throughput_ratio']:.3f}, {fcfs['latency_mean']:.3g} s" in text
