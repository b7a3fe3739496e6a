"""`jaxsched check theorems`: prediction formulas, fitting helpers, and the quick grid's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxsched.dp.theorems import (
    DEFAULT_KERNEL,
    DEFAULT_T1_KERNEL,
    Point,
    admission_margin,
    all_checks,
    check_theorems,
    expected_max_normal,
    fcfs_prediction,
    ols,
    ratio_slopes,
    snapshot_var,
    theorem_grid,
)
from jaxsched.stats import t975

# E[max of G iid N(0, 1)] (notes/000.md section 1.1; G = 2: 1/sqrt(pi)).
E_MAX = {
    1: 0.0,
    2: 0.5642,
    4: 1.0294,
    8: 1.4236,
    16: 1.7660,
    32: 2.0697,
    64: 2.3437,
    128: 2.5946,
    256: 2.8269,
    512: 3.0439,
}


@pytest.mark.parametrize("G,value", sorted(E_MAX.items()))
def test_expected_max_normal_table(G, value):
    assert expected_max_normal(G) == pytest.approx(value, abs=1e-4)


def test_expected_max_normal_exact_and_monte_carlo():
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)
    assert expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-9)
    x = np.random.default_rng(0).standard_normal((200_000, 10)).max(1)
    assert expected_max_normal(10) == pytest.approx(x.mean(), abs=4 * x.std() / math.sqrt(x.size))
    with pytest.raises(ValueError):
        expected_max_normal(0)


def test_snapshot_var_closed_forms():
    # Theorem 1: the prompt variance (s_max^2 - 1) / 12; Theorem 2: + (1 - p) / p^2 (C15).
    assert snapshot_var(20, None) == pytest.approx(399 / 12)
    assert snapshot_var(20, 0.1) == pytest.approx(399 / 12 + 0.9 / 0.01)
    assert snapshot_var(4, 0.2, (1, 1)) == pytest.approx(15 / 12 + 0.8 / 0.04)
    assert snapshot_var(20, 0.1, (0, 0)) == pytest.approx(399 / 12)  # no growth at all
    # A constant drift d scales the age part by d^2.
    assert snapshot_var(20, 0.1, (3, 3)) == pytest.approx(399 / 12 + 9 * 0.9 / 0.01)


def test_snapshot_var_random_drift_monte_carlo():
    """E over drift paths of Var(s + H(A) | path) by simulation: slots of one step share the path."""
    rng = np.random.default_rng(1)
    p, s_max, lo, hi = 0.2, 10, 1, 4
    n_paths, n_slots, depth = 400, 4000, 120
    var = []
    for _ in range(n_paths):
        path = rng.integers(lo, hi + 1, depth)  # delta_k, delta_{k-1}, ...
        csum = np.concatenate([[0], np.cumsum(path)])
        age = np.minimum(rng.geometric(p, n_slots) - 1, depth)  # P(A = a) = p (1-p)^a
        u = rng.integers(1, s_max + 1, n_slots) + csum[age]
        var.append(u.var())
    assert np.mean(var) == pytest.approx(snapshot_var(s_max, p, (lo, hi)), rel=0.03)


def test_fcfs_prediction_formula():
    assert fcfs_prediction(16, 64, 11.0) == pytest.approx(16 * 11.0 * 8 * 1.7660, rel=1e-4)


def test_ols_exact_and_ci():
    x = np.arange(1.0, 11.0)
    fit = ols(np.stack([np.ones_like(x), x], 1), 3.0 + 0.5 * x)
    assert fit.coef == pytest.approx([3.0, 0.5]) and fit.ci95 == pytest.approx([0, 0], abs=1e-9)
    # Noisy line: slope and its standard error agree with the textbook formulas.
    rng = np.random.default_rng(2)
    y = 1.0 + 2.0 * x + rng.normal(0, 0.3, x.size)
    fit = ols(np.stack([np.ones_like(x), x], 1), y)
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (icpt + slope * x)
    se = math.sqrt(resid @ resid / (x.size - 2) / ((x - x.mean()) @ (x - x.mean())))
    assert fit.coef[1] == pytest.approx(slope) and fit.se[1] == pytest.approx(se)
    assert fit.ci95[1] == pytest.approx(t975(8) * se)
    # Too few points for a CI.
    assert np.isnan(ols(np.ones((1, 1)), [2.0]).ci95).all()


def test_ols_ci_coverage():
    """About 95% of the CIs cover the true slope."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 8)
    X = np.stack([np.ones_like(x), x], 1)
    hits = 0
    for _ in range(400):
        f = ols(X, 0.7 * x + rng.normal(0, 0.1, x.size))
        hits += abs(f.coef[1] - 0.7) <= f.ci95[1]
    assert 0.91 <= hits / 400 <= 0.99


def test_ratio_slopes_recovers_exponents():
    G = np.repeat([8, 16, 64, 256], 4)
    B = np.tile([16, 64, 256, 1024], 4)
    r = 0.3 * B**0.5 * np.log(G) ** 0.25
    s = ratio_slopes(G, B, r)
    assert s["B"][0] == pytest.approx(0.5) and s["logG"][0] == pytest.approx(0.25)
    # Only B varies: the log G slope is not fitted.
    s = ratio_slopes([8, 8, 8], [16, 64, 256], [1.0, 2.0, 4.0])
    assert s["B"][0] == pytest.approx(0.5) and math.isnan(s["logG"][0])


def test_points_and_pool_sizes():
    t1 = Point(1, 8, 64, 20)
    assert t1.pool_size() == 8 * 64 and t1.gap_bound == 20
    t2 = Point(2, 16, 64, 20, 0.1)
    assert t2.pool_size() >= 16 * 64 * 0.1 + 6 * math.sqrt(16 * 64 * 0.1) and t2.gap_bound == 200
    cfg = t2.config("bfio", "vf", 10)
    assert cfg.semantics == "theory" and cfg.burn_in_steps == 80 and cfg.num_steps == 180
    assert Point(3, 8, 64, 20, 0.1, drift=(1, 4)).config("fcfs", "vf", 10).drift == (1, 4)
    full = theorem_grid()
    assert {p.G for p in full} == {8, 16, 32, 64, 128, 256} and {p.B for p in full} == {16, 64, 256, 1024}
    assert {p.drift for p in full if p.theorem == 3} == {(0, 0), (0, 2), (1, 4)}
    # The growth fit of the main family sees every G and every B with both policies.
    main = [p for p in full if p.theorem == 2 and p.s_max == 20 and p.p == 0.1]
    both = [p for p in main if p.bfio]
    assert len(main) == 24 and len(both) == 21
    assert {p.G for p in both} == {p.G for p in main} and {p.B for p in both} == {p.B for p in main}
    assert all(p.bfio for p in full if p.theorem != 2 or p.s_max != 20)
    assert sum(1 + p.bfio for p in full) == 111


def test_round_lpt_partitions_are_s_max_balanced():
    """Theorem 1's kernel: a fixed multiset of G B prompts (s_max = 20) dealt to G empty workers
    of B slots ends with max - min <= s_max - 1, every worker holding exactly B."""
    from jaxsched.kernels import BFIO_VARIANTS

    rng = np.random.default_rng(4)
    fn = BFIO_VARIANTS[DEFAULT_T1_KERNEL]
    for G, B in ((3, 5), (8, 16), (16, 7), (64, 4)):
        sizes = rng.integers(1, 21, G * B).astype(np.int32)
        w, _, _ = fn(np.zeros(G, np.int32), np.full(G, B, np.int32), sizes, np.ones(G * B, bool))
        w = np.asarray(w)
        assert (np.bincount(w, minlength=G) == B).all()
        loads = np.bincount(w, weights=sizes, minlength=G)
        assert loads.max() - loads.min() <= 19, (G, B, loads)


def test_checks_fail_on_bad_rows():
    """The check logic flags a wrong FCFS value, a BF-IO bound breach and a bad round."""
    base = dict(
        group="g",
        G="8",
        B="64",
        sigma="1",
        s_max="20",
        theorem="1",
        full_at_end="True",
        imb_ci95="0",
        gap_ci95="0",
        gap_bound="20",
        imbalance_bound="140",
        prediction="100",
    )
    rows = [
        dict(base, policy="fcfs", imb_mean="100", gap_mean="50"),
        dict(base, policy="bfio", imb_mean="10", gap_mean="5", round_gap_max="20"),
    ]
    assert [c.status for c in all_checks(rows)[0]] == ["PASS", "PASS", "PASS", "PASS", "INFO", "INFO"]
    # Above the bound: reported where one admission cannot absorb a step's removal spread
    # (kappa/phi < 1: B = 64, s_max = 4, p = 0.2), failed where it can (B = 4096, s_max = 20).
    t2 = dict(
        base,
        policy="bfio",
        theorem="2",
        group="t2",
        G="64",
        B="64",
        s_max="4",
        p="0.2",
        drift_lo="1",
        drift_hi="1",
        imb_mean="10",
        gap_mean="25",
    )
    assert admission_margin(t2) < 1 and admission_margin(rows[1]) == math.inf
    checks = all_checks(rows + [t2])[0]
    assert checks[1].status == "PASS" and "t2 G=64 B=64: gap 1.25 x bound" in checks[5].detail
    big = dict(t2, B="4096", s_max="20", p="0.1")
    assert admission_margin(big) > 1 and all_checks(rows + [big])[0][1].status == "FAIL"
    rows[0]["imb_mean"] = "120"
    rows[1].update(gap_mean="25", round_gap_max="21")
    assert [c.status for c in all_checks(rows)[0]][:3] == ["FAIL", "FAIL", "FAIL"]


def test_quick_grid_checks(tmp_path):
    """The reduced grid: every check passes, and a rerun resumes without running anything."""
    ok, checks, report = check_theorems(tmp_path, quick=True, progress=False, plots=False)
    text = report.read_text()
    assert ok, text
    status = {c.name: c.status for c in checks}
    assert status["FCFS imbalance = G sigma sqrt(B) e_G"] == "PASS"
    assert status["T1 rounds: max - min <= s_max"] == "PASS"
    assert "| T2 s_max=20 p=0.1 | 8 | 64 |" in text
    # BF-IO ran with the proofs' kernels: window fill (max - min) for Theorems 2 and 3, round
    # LPT for Theorem 1's rounds.
    import csv

    with (tmp_path / "results.csv").open() as f:
        kernels = {(r["theorem"], r["kernel"]) for r in csv.DictReader(f) if r["policy"] == "bfio"}
    assert kernels == {("1", DEFAULT_T1_KERNEL), ("2", DEFAULT_KERNEL), ("3", DEFAULT_KERNEL)}
    assert (DEFAULT_KERNEL, DEFAULT_T1_KERNEL) == ("window", "round_lpt")
    before = (tmp_path / "results.csv").read_text()
    ok2, _, _ = check_theorems(tmp_path, quick=True, progress=False, plots=False)
    assert ok2 and (tmp_path / "results.csv").read_text() == before


def test_grid_buckets_equal_single_runs(tmp_path):
    """The grid's size buckets: Theorem 2's quick points padded into one program per policy give
    the rows of one program per run, bitwise in every statistic; large runs are never padded."""
    import csv

    from jaxsched.dp.theorems import COMPILE_S, plan_grid, run_cost_s, run_grid, theorem_grid
    from tests.sweep_checks import COMPILES as names

    pts = [pt for pt in theorem_grid(quick=True) if pt.theorem in (1, 2)]
    run = lambda out, waste: run_grid(
        pts,
        tmp_path / out,
        kernel="window",
        t1_kernel="round_lpt",
        measured=4,
        seeds=[0, 1, 2],
        progress=False,
        bucket_waste=waste,
    )
    n0 = len(names)
    alone = run("alone.csv", None)
    n1 = len(names)
    padded = run("padded.csv", 8.0)
    blocks = lambda a, b: sum("run_block" in n for n in names[a:b])
    # Six runs: T1 (8, 64) and T2 (8, 16), (8, 64), each FCFS and BF-IO, one program each;
    # bucketed, T2's pairs share one program per policy (T1's runs reuse their programs).
    assert blocks(n0, n1) == 6 and blocks(n1, len(names)) == 2
    key = lambda r: (r["theorem"], r["G"], r["B"], r["policy"])
    a, b = {key(r): r for r in alone}, {key(r): r for r in padded}
    assert a.keys() == b.keys() and len(a) == 6
    for k, r in a.items():
        for col in (
            "imb_mean",
            "imb_std",
            "imb_ci95",
            "gap_mean",
            "gap_std",
            "gap_ci95",
            "full_at_end",
            "round_gap_max",
            "pool_size",
            "num_steps",
        ):
            assert r[col] == b[k][col], (k, col)
    with (tmp_path / "padded.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 6
    # A run that simulates for longer than a compilation keeps its own program; the short ones
    # share buckets, each bucket's runs still costing less than a compilation.
    jobs = [(pt, pol, "window") for pt in theorem_grid() if pt.theorem == 2 and pt.p == 0.1 for pol in ("fcfs", "bfio")]
    plan = plan_grid(jobs, 48, 32)
    costly = [b for b in plan if run_cost_s(b.config, 32) > COMPILE_S]
    assert costly and all(len(b.members) == 1 and not b.padded for b in costly)
    assert any(b.padded for b in plan) and len(plan) < len(jobs)
    assert sorted(i for b in plan for i in b.members) == list(range(len(jobs)))


def test_cli_check_rejects_bad_arguments(capsys):
    from jaxsched.cli import main

    assert main(["check", "nothing"]) == 2
    assert "must be one of theorems" in capsys.readouterr().err
    for flag in ("--kernel", "--t1-kernel"):  # argparse's choices: exit 2, one line
        with pytest.raises(SystemExit) as e:
            main(["check", "theorems", flag, "nope"])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {flag}: invalid choice" in err and len(err.strip().splitlines()) == 1
    assert main(["check", "theorems", "--seeds", "1"]) == 2
    assert main(["check", "theorems", "--bucket-waste", "0.5"]) == 2
    assert "--bucket-waste must be a number in [1, 1e6]" in capsys.readouterr().err


def test_grid_rows_describe_themselves_and_rows_of_other_code_or_config_are_not_reused(tmp_path, monkeypatch):
    """Every row of results.csv carries a sweep row's describing columns (`results.key_columns`);
    a row of other code, or of another config, is kept as it was and never stands in for a
    run: the run is computed again and its row added beside it."""
    import csv
    import json

    from jaxsched import results
    from jaxsched.dp.theorems import run_grid
    from jaxsched.results import code_sha, seeds_sha

    pt = Point(2, 2, 4, 5, 0.5, bfio=False)  # one small FCFS run of Theorem 2's model, 20 steps
    out = tmp_path / "results.csv"

    def run(measured: int = 2) -> list[dict]:
        return run_grid(
            [pt], out, kernel="window", t1_kernel="round_lpt", measured=measured, seeds=[0, 1], progress=False
        )

    def stored() -> list[dict]:
        with out.open(newline="") as f:
            return list(csv.DictReader(f))

    monkeypatch.setattr(results, "code_sha", lambda: "0123456789abcdef")
    (other,) = run()
    monkeypatch.undo()
    (row,) = run()
    assert other["code"] == "0123456789abcdef" and row["code"] == code_sha()
    assert row["key"] != other["key"] and stored() == [other, row]
    for column in ("config", "params", "seeds_sha", "num_seeds", "code", "version", "trace_sha", "extra"):
        assert column in row, column
    assert row["num_seeds"] == "2" and row["seeds_sha"] == seeds_sha([0, 1])
    config = json.loads(row["config"])
    assert (config["policy"], config["num_workers"], config["slots_per_worker"]) == ("fcfs", 2, 4)
    assert config["bfio_kernel"] == "vf"  # FCFS reads no kernel: its config keeps the default
    assert json.loads(row["params"])["step_const_s"] > 0
    assert json.loads(row["extra"])["point"]["G"] == 2
    assert run() == [row] and len(stored()) == 2  # the same code and settings: resumed
    (longer,) = run(measured=3)  # another config (more steps): computed again, beside the others
    assert json.loads(longer["config"])["num_steps"] > config["num_steps"]
    assert longer["key"] not in (row["key"], other["key"]) and stored() == [other, row, longer]
