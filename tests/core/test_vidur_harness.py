"""The Vidur comparison harness (benchmarks/vidur): its pure parts without Vidur, and one slow
end-to-end run of `python -m benchmarks.vidur.compare --quick` when Vidur is set up."""

from __future__ import annotations

import json
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.vidur import compare, harness
from benchmarks.vidur.vidur_predictor import (
    batch_counts,
    batch_time_s,
    check_spec,
    linear_batch_time_s,
    paper_batch_time_s,
)
from jaxsched.budget import BudgetConfig, make_params, request_stream
from jaxsched.budget.timing import budget_batch_time_s, budget_linear_time_s
from jaxsched.clock import split12
from jaxsched.workload import read_trace

LOADS = (1, 63, 64, 65, 200, 512, 4096, 32768)


@pytest.mark.parametrize("c_s, a, b0", [(0.0455, 0.00018, 64), (0.03, 0.0003, 0), (0.0, 0.0001, 16)])
def test_paper_predictor_equals_jaxsched_timing(c_s, a, b0):
    a_hi, a_lo = split12(a)
    for load in LOADS:
        want = budget_batch_time_s(jnp.int32(load), c_s, a_hi, a_lo, b0).to_numpy()
        assert paper_batch_time_s(load, c_s, a, b0) == float(want), load


def test_linear_predictor_equals_jaxsched_timing():
    coefs = (0.00018, 0.00025, 5e-8)
    for prefill, decode, context in ((0, 1, 0), (512, 0, 0), (300, 120, 180_000), (7, 256, 1_000_000)):
        want = budget_linear_time_s(
            jnp.int32(prefill), jnp.int32(decode), jnp.int32(context), 0.0455, coefs, jnp.int32(-1)
        ).to_numpy()
        got = linear_batch_time_s(prefill, decode, context, 0.0455, *coefs)
        assert got == pytest.approx(float(want), rel=1e-12, abs=0.0)


def _request(processed: int, prefill_done: bool):
    return SimpleNamespace(num_processed_tokens=processed, is_prefill_complete=prefill_done)


def test_batch_counts_context_drops_vidurs_prefill_token():
    # A decoding request that has loaded a 100-token prompt and 5 decode tokens: Vidur counts
    # 106 processed tokens (the prefill's bonus token), jaxsched's P + D is 105. A request in
    # its second chunk has 512 prompt tokens loaded in both.
    batch = SimpleNamespace(
        requests=[_request(106, True), _request(512, False)],
        total_num_tokens=1 + 300,
        num_prefill_tokens=300,
        num_decode_tokens=1,
    )
    assert batch_counts(batch) == (301, 300, 1, 105 + 512)
    spec = check_spec(dict(model="paper", c_s=0.0455, a_s_per_token=0.00018, b0=64))
    assert batch_time_s(spec, *batch_counts(batch)) == paper_batch_time_s(301, 0.0455, 0.00018, 64)


def test_check_spec_refuses_bad_specs():
    with pytest.raises(ValueError, match="model"):
        check_spec(dict(model="forest"))
    with pytest.raises(ValueError, match="missing"):
        check_spec(dict(model="paper", c_s=0.04))
    with pytest.raises(ValueError, match="extra"):
        check_spec(dict(model="paper", c_s=0.04, a_s_per_token=1e-4, b0=64, decode_s_per_token=1.0))
    with pytest.raises(ValueError, match=">= 0"):
        check_spec(dict(model="paper", c_s=-1.0, a_s_per_token=1e-4, b0=64))


def test_trace_conversion_round_trips_through_read_trace(tmp_path):
    rng = np.random.default_rng(3)
    n = 40
    t = np.cumsum(rng.exponential(0.7, n))
    src = harness.write_vidur_csv(tmp_path / "src.csv", t - t[0], rng.integers(1, 900, n), rng.integers(1, 90, n))
    # The prefix file jaxsched replays reads back as the first rows of the source.
    prefix = read_trace(harness.trace_prefix_csv(src, 25, tmp_path / "prefix.csv"), times=True)
    full = read_trace(src, times=True)
    np.testing.assert_array_equal(prefix.arrival_s, full.arrival_s[:25])
    np.testing.assert_array_equal(prefix.prompt, full.prompt[:25])
    # jaxsched's replay of it, from the seed that starts at row 0, written for Vidur.
    cfg = BudgetConfig(workload=(prefix,), arrival_mode="trace", horizon_s=100.0, num_requests=25, table_size=64)
    params = make_params(cfg, rate_scale=0.5)
    seed = compare.trace_start_seed(25)
    stream = request_stream(cfg, params, seed, 40)
    np.testing.assert_array_equal(stream["row"], np.arange(25))
    back = read_trace(harness.stream_to_vidur_csv(tmp_path / "vidur.csv", stream), times=True)
    arrivals = harness.stream_arrivals_s(stream)
    np.testing.assert_array_equal(back.arrival_s, arrivals - arrivals[0])
    np.testing.assert_array_equal(back.prompt, stream["vp"])
    np.testing.assert_array_equal(back.output, stream["vd"] + 1)
    np.testing.assert_allclose(arrivals, prefix.arrival_s / 0.5, rtol=1e-6)


def test_write_vidur_csv_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="nondecreasing"):
        harness.write_vidur_csv(tmp_path / "x.csv", np.array([1.0, 0.5]), np.array([3, 3]), np.array([2, 2]))
    with pytest.raises(ValueError, match=">= 1"):
        harness.write_vidur_csv(tmp_path / "x.csv", np.array([0.0, 0.5]), np.array([0, 3]), np.array([2, 2]))
    with pytest.raises(ValueError, match=">= 1"):
        harness.vidur_decode_tokens(np.array([0, 4]))
    with pytest.raises(ValueError, match="scheduler"):
        harness.vidur_args("lightllm", "t.csv", "out", max_requests=8, chunk_size=64, max_tokens=64, num_blocks=64)


def test_per_request_times_from_recorded_batches():
    # Request 0 (v_p 10, v_d 2) arrives at 0; request 1 (v_p 4, v_d 1) at 0.5. Batches:
    # [0, 1): prefill of 0; [1, 2): decode 0 + prefill 1; [2, 3): decode 0, decode 1.
    stream = dict(
        id=np.array([0, 1]),
        t_hi=np.array([0.0, 0.5], np.float32),
        t_lo=np.zeros(2, np.float32),
        vp=np.array([10, 4]),
        vd=np.array([2, 1]),
    )
    batches = dict(
        start_s=np.array([0.0, 1.0, 2.0]),
        tau_s=np.array([1.0, 1.0, 1.0]),
        id=np.array([[0, -1], [0, 1], [0, 1]]),
        dp=np.array([[10, 0], [0, 4], [0, 0]]),
        dd=np.array([[0, 0], [1, 0], [1, 1]]),
    )
    per = harness.per_request_from_batches(batches, stream)
    np.testing.assert_allclose(per["ttft_s"], [1.0, 1.5])
    np.testing.assert_allclose(per["e2e_s"], [3.0, 2.5])
    np.testing.assert_allclose(per["tpot_s"], [1.0, 1.0])
    np.testing.assert_allclose(per["tpot_vidur_s"], [2.0 / 3.0, 0.5])


def test_agreement_rows_and_tolerance():
    x = np.linspace(1.0, 2.0, 101)
    jv = dict(ttft_s=x, e2e_s=x, tpot_s=x, tpot_vidur_s=x)
    vr = dict(ttft_s=x, e2e_s=x * 1.02, tpot_s=x * 1.10)
    rows = {(r["quantity"], r["stat"]): r for r in harness.agreement(jv, vr, 0.05)}
    assert rows[("ttft_s", "mean")]["rel_diff"] == 0.0 and rows[("ttft_s", "p99")]["ok"]
    assert rows[("e2e_s", "p50")]["ok"] and not rows[("tpot_s", "p90")]["ok"]
    cell = dict(
        rows=list(rows.values()),
        scheduler="sarathi",
        restarts=dict(jaxsched=0, vidur=0),
        jax_max_batch_requests=5,
        max_requests=8,
    )
    assert compare.explain(rows[("tpot_s", "p90")], cell) == "UNEXPLAINED"
    assert compare.explain(rows[("ttft_s", "p90")], cell) == ""
    assert compare.explain(rows[("tpot_s", "p90")], dict(cell, restarts=dict(jaxsched=0, vidur=3))).startswith("memory")
    assert compare.explain(rows[("tpot_s", "p90")], dict(cell, jax_max_batch_requests=8)).startswith("request cap")
    orca = dict(cell, scheduler="orca", vidur_num_blocks=4096, max_requests=256)
    assert compare.explain(rows[("tpot_s", "p90")], orca).startswith("memory: Vidur's Orca reserves")
    # tpot_s alone beyond tolerance while Vidur's normalisation agrees: the TPOT definition.
    vr_def = dict(vr, tpot_s=x)
    rows_def = harness.agreement(dict(jv, tpot_s=x * 1.1), vr_def, 0.05)
    bad = next(r for r in rows_def if r["quantity"] == "tpot_s" and r["stat"] == "mean")
    assert compare.explain(bad, dict(cell, rows=rows_def)).startswith("TPOT normalisation")
    paired = harness.paired_differences(jv, vr)
    assert paired["ttft_s"]["frac_equal_1us"] == 1.0
    assert paired["e2e_s"]["max_abs_s"] == pytest.approx(0.04)


def test_skip_message_when_vidur_is_absent(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VIDUR_VENV", str(tmp_path / "no-venv"))
    monkeypatch.setenv("VIDUR_SRC", str(tmp_path / "no-src"))
    assert harness.missing_reason(harness.vidur_paths()) is not None
    assert compare.main(["--quick", "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.startswith(harness.SKIP_MESSAGE)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_quick_comparison_agrees_with_vidur(tmp_path):
    why = harness.missing_reason(harness.vidur_paths())
    if why is not None:
        pytest.skip(f"Vidur is not set up ({why}); run benchmarks/vidur/setup.sh")
    assert compare.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "agreement_quick.json").read_text())
    assert [c["scheduler"] for c in report["cells"]] == list(harness.SCHEDULERS)
    for cell in report["cells"]:
        assert cell["restarts"] == dict(jaxsched=0, vidur=0)
        for q in ("ttft_s", "e2e_s", "tpot_vidur_def_s"):
            assert cell["paired"][q]["max_abs_s"] < 1e-6, (cell["scheduler"], q)


# ------------------------------------------------------------------------------------ speed


def test_speed_requests_per_second_and_load_helpers():
    from benchmarks.vidur import speed

    assert speed.requests_per_second(2048, 0.5) == 4096.0
    assert speed.requests_per_second(0, 1.0) == 0.0
    for bad in ((10, 0.0), (10, -1.0), (-1, 1.0), (float("nan"), 1.0)):
        with pytest.raises(ValueError):
            speed.requests_per_second(*bad)
    line = "13:33:49 up 19:45,  0 user,  load average: 4.60, 5.37, 7.15"
    assert speed.load_1min(line) == 4.60
    assert speed.load_1min("10:00  up 1 day, 2 users, load averages: 1.25 1.00 0.90") == 1.25
    assert speed.confirmed([line.replace("4.60", "1.20")])
    assert not speed.confirmed([line.replace("4.60", "1.20"), line])


def test_speed_schedule_interleaves_vidur_and_jaxsched():
    from benchmarks.vidur import speed

    order = speed.schedule(2, (1, 64))
    assert order == [("vidur", 0), ("jax", 1), ("jax", 64), ("vidur", 1), ("jax", 1), ("jax", 64)]
    assert speed.median([3.0, 1.0, 2.0]) == 2.0 and np.isnan(speed.median([]))


def test_speed_map_rates_are_the_loads_of_capacity():
    from benchmarks.vidur import speed
    from jaxsched.budget import capacity_tokens_per_s

    rates = speed.map_rates()
    assert len(rates) == len(speed.MAP_LOADS) == 15
    # rho = lambda (m_p + m_d) t_b / b with Fig. 1's 129 + 112 tokens and eq. (2.3) at b = 512.
    cap = capacity_tokens_per_s(512, 0.0455, 0.00018, 64)
    np.testing.assert_allclose(np.array(rates) * 241 / cap, speed.MAP_LOADS, rtol=1e-5)
    cmd = speed.map_command(speed.Path("m.csv"), rates, seeds=4, horizon_s=100.0, burn_in_s=20.0, q=1024)
    assert cmd[:3] == ["jaxsched", "--no-compile-cache", "sweep"] and cmd[-1] == "m.csv"
    assert "policy=sarathi,vllm,orca,ft" in cmd and f"rates=[{rates[0]:g}]," in cmd[cmd.index("--axis", 6) + 1]


def test_speed_skip_message_when_vidur_is_absent(tmp_path, monkeypatch, capsys):
    from benchmarks.vidur import speed

    monkeypatch.setenv("VIDUR_VENV", str(tmp_path / "no-venv"))
    monkeypatch.setenv("VIDUR_SRC", str(tmp_path / "no-src"))
    assert speed.main(["--quick", "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.startswith(harness.SKIP_MESSAGE)
    assert not (tmp_path / "out").exists()
