"""Trace-driven arrivals of the budget engine and paper 004's Fig. 9 experiment.

- Trace mode (docs/budget-semantics.md §1): reading arrival times, bad inputs (one ConfigError
  naming the field), the replay's request list against the reference's own construction
  (`tests/reference/budget.py: trace_requests`, bitwise), and the engine against the reference
  on a small synthetic trace written to tmp_path (same batches, bitwise times), at two
  rate_scales sharing one compiled step.
- `fig9` at reduced size on the shared Azure trace (skipped when ../shared/data is absent).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jaxsched.budget import BudgetConfig, batches, make_params, request_stream
from jaxsched.budget.config import enough_steps, trace_load
from jaxsched.errors import ConfigError
from jaxsched.run import simulate_points
from jaxsched.workload import Constant, Independent, Trace, read_trace
from jaxsched.workload.arrivals import trace_gaps_s, trace_max_arrivals
from tests.reference import budget as ref

AZURE = Path(__file__).resolve().parents[3] / "shared" / "data" / "azure_llm_2023_conv.csv"

# A small synthetic trace: 23 rows over ~6 s with bursts (equal timestamps: several arrivals at
# one instant) and lengths that vary by row. Prompts up to 19 tokens, outputs up to 5.
_T = np.array(
    [
        0.0,
        0.05,
        0.05,
        0.05,
        0.4,
        0.9,
        1.0,
        1.0,
        1.3,
        2.2,
        2.25,
        2.3,
        3.0,
        3.05,
        3.1,
        3.1,
        3.1,
        4.0,
        4.7,
        5.0,
        5.5,
        5.9,
        6.1,
    ]
)
_P = (np.arange(23) * 7) % 19 + 1
_O = (np.arange(23) * 3) % 5 + 1


def _write_trace(path: Path, numeric: bool = False) -> Path:
    """The synthetic trace as an Azure-layout CSV (date-times, or seconds when numeric)."""
    base = np.datetime64("2023-11-16T18:15:46.0000000", "ns")
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for t, p, o in zip(_T, _P, _O):
        when = base + np.timedelta64(int(round(t * 1e9)), "ns")
        stamp = f"{t:.7f}" if numeric else str(when).replace("T", " ")
        lines.append(f"{stamp},{p},{o}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory) -> Trace:
    return read_trace(_write_trace(tmp_path_factory.mktemp("fig9") / "small.csv"), times=True)


def _cfg(trace: Trace, **kw) -> BudgetConfig:
    base = dict(
        workload=(trace,),
        arrival_mode="trace",
        policy="sarathi",
        horizon_s=14.0,
        burn_in_s=1.0,
        table_size=64,
        record_members=True,
        snapshots=8,
        attention=True,
        attention_prefix=True,
    )
    return BudgetConfig(**{**base, **kw})


# ------------------------------------------------------------------------------ reading times
def test_read_trace_times(tmp_path, small_trace):
    assert small_trace.arrival_s == pytest.approx(_T, abs=1e-12)
    assert small_trace.prompt.tolist() == _P.tolist()
    numeric = read_trace(_write_trace(tmp_path / "numeric.csv", numeric=True), times=True)
    assert np.array_equal(numeric.arrival_s, _T - _T[0])
    # Lengths-only reading is unchanged: no times, and the trace compares unequal to a timed one.
    plain = read_trace(tmp_path / "numeric.csv")
    assert plain.arrival_s is None and plain != numeric and plain.prompt.tolist() == _P.tolist()


def test_read_azure_times():
    if not AZURE.is_file():
        pytest.skip(f"shared data {AZURE} is absent (see ../shared/data/README.md)")
    tr = read_trace(AZURE, times=True)
    assert tr.prompt.size == 19366
    t = tr.arrival_s
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0)
    # 18:15:46.6805900 -> 19:14:08.4025270, exact to the 100 ns of the file's stamps.
    assert t[-1] == pytest.approx(3501.721937, abs=1e-9)
    assert t[1] == pytest.approx(4.314579, abs=1e-9)


# ------------------------------------------------------------------------------ bad inputs
def _bad(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "case, needle",
    [
        ("rate_scale_zero", r"rate_scale must be a finite number >= 1e-06"),
        ("rate_scale_negative", r"rate_scale must be a finite number >= 1e-06"),
        ("rate_scale_nan", r"rate_scale must be"),
        ("rates_in_trace_mode", r"rates must be None when arrival_mode is 'trace'"),
        ("untimed_trace", r"workload must be a Trace with arrival times"),
        ("length_law", r"workload must be a Trace with arrival times"),
        ("one_row", r"workload must be a Trace with >= 2 rows"),
        ("zero_span", r"workload must be a Trace with >= 2 rows whose arrival times span > 0"),
        ("backlog", r"initial_requests must be None when arrival_mode is 'trace'"),
        ("times_unordered", r"arrival_s must be nondecreasing"),
    ],
)
def test_trace_mode_bad_inputs(case, needle, small_trace):
    def run():
        if case.startswith("rate_scale"):
            value = {"rate_scale_zero": 0.0, "rate_scale_negative": -2.0, "rate_scale_nan": float("nan")}[case]
            return make_params(_cfg(small_trace), rate_scale=value)
        if case == "rates_in_trace_mode":
            return make_params(_cfg(small_trace), rates=[1.0])
        if case == "untimed_trace":
            return _cfg(Trace(_P, _O))
        if case == "length_law":
            return _cfg(Independent(Constant(3), Constant(2)))
        if case == "one_row":
            return _cfg(Trace(_P[:1], _O[:1], arrival_s=[0.0]))
        if case == "zero_span":
            return _cfg(Trace(_P[:3], _O[:3], arrival_s=[1.0, 1.0, 1.0]))
        if case == "backlog":
            return _cfg(small_trace, initial_requests=(2,))
        return Trace(_P[:3], _O[:3], arrival_s=[0.0, 2.0, 1.0])

    with pytest.raises(ConfigError, match=needle) as info:
        run()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "text, needle",
    [
        (None, r"does not exist"),
        ("ContextTokens,GeneratedTokens\n5,1\n6,2\n", r"needs an arrival-time column"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,5,1\n2023-11-16 18:15:45,6,2\n",
            r"line 3: arrival times must be nondecreasing",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,5,1\nsoon,6,2\n",
            r"line 3: arrival time must be an ISO date-time",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n1.5,5,1\nnan,6,2\n",
            r"line 3: arrival time must be a finite number",
        ),
    ],
)
def test_read_trace_times_bad_files(tmp_path, text, needle):
    path = tmp_path / "missing.csv" if text is None else _bad(tmp_path, "t.csv", text)
    with pytest.raises(ConfigError, match=needle) as info:
        read_trace(path, times=True)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------------ the replay
def test_replay_bound_and_gaps():
    g = trace_gaps_s(_T)
    assert g[0] == pytest.approx((_T[-1] - _T[0]) / 22) and g[1:] == pytest.approx(np.diff(_T))
    # Brute force over every starting row of a periodic replay.
    T = np.concatenate([[0.0], np.cumsum(np.tile(np.roll(g, -1), 6))])
    for w in (0.0, 0.05, 1.0, 3.3, 6.4, 13.0):
        brute = max(int(np.sum((T[r:] - T[r]) <= w * (1 + 1e-6))) for r in range(23))
        assert trace_max_arrivals(_T, w) == brute, w


def test_request_stream_matches_reference_replay(small_trace):
    cfg = enough_steps(_cfg(small_trace), rate_scale=1.7)
    for seed, scale in ((0, 1.7), (5, 0.6)):
        params = make_params(cfg, rate_scale=scale)
        s = request_stream(cfg, params, seed, 200)
        want, rows = ref.trace_requests(
            small_trace.prompt, small_trace.output, small_trace.arrival_s, seed, rate_scale=scale, horizon=cfg.horizon_s
        )
        assert len(want) == s["id"].size > 23  # the horizon spans a wrap-around
        assert s["row"].tolist() == rows
        assert [(a.hi, a.lo) for a, _, _, _ in want] == list(zip(s["t_hi"], s["t_lo"]))
        assert s["vp"].tolist() == [p for _, _, p, _ in want]
        assert s["vd"].tolist() == [d for _, _, _, d in want]
        assert set(s["type"].tolist()) == {0}
    # Seeds start at different rows (the trace has 23: a few seeds cover several).
    starts = {int(request_stream(cfg, make_params(cfg, rate_scale=1.0), k, 200)["row"][0]) for k in range(6)}
    assert len(starts) >= 3


def _compare(eng: dict, out: dict) -> None:
    """Same batches in the same order (members and tokens), bitwise start times and durations."""
    rb = out["batches"]
    assert len(rb) == len(eng["load"]) > 20
    for k, b in enumerate(rb):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo), k
        assert (eng["tau_hi"][k], eng["tau_lo"][k]) == (b["tau"].hi, b["tau"].lo), k
        on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
        got = {int(i): (int(p), int(d)) for i, p, d in zip(eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on])}
        assert got == {int(i): (int(p), int(d)) for i, (p, d) in b["members"].items()}, k


def test_engine_matches_reference_on_a_trace(small_trace):
    """Two rate_scales (one compiled step: the scale is traced), two seeds; the reference
    builds its requests itself from the trace."""
    scales = (0.8, 2.3)
    cfg = enough_steps(_cfg(small_trace), rate_scale=max(scales))
    kw = dict(budget=12, max_requests=6, c_s=0.05, a_s_per_token=0.01, b0=2, alpha=1e-3, beta=2e-3)
    params = [make_params(cfg, rate_scale=s, **kw) for s in scales]
    seeds = [3, 11]
    results = simulate_points(cfg, params, seeds, record=True, warn=False)
    for scale, res in zip(scales, results):
        for i, seed in enumerate(seeds):
            reqs, _ = ref.trace_requests(
                small_trace.prompt,
                small_trace.output,
                small_trace.arrival_s,
                seed,
                rate_scale=scale,
                horizon=cfg.horizon_s,
            )
            out = ref.simulate(
                reqs,
                "sarathi",
                c=kw["c_s"],
                a=kw["a_s_per_token"],
                b0=kw["b0"],
                budget=kw["budget"],
                max_requests=kw["max_requests"],
                alpha=kw["alpha"],
                beta=kw["beta"],
                attention=True,
                attention_prefix=True,
                horizon=cfg.horizon_s,
                burn_in=cfg.burn_in_s,
                table_size=cfg.table_size,
                snapshots=cfg.snapshots,
            )
            _compare(batches(res, i), out)
            m = {k: v[i] for k, v in res.metrics.items()}
            for key in ("num_departed", "requests_end", "tokens_end", "num_rejected"):
                assert m[key] == out["metrics"][key], key
            assert m["latency_mean_s"] == pytest.approx(out["metrics"]["latency_mean_s"], rel=1e-5)
    # Same seed: bitwise the same run (here in the other lane of the batch); another seed:
    # another run.
    again = simulate_points(cfg, params[::-1], seeds[::-1], record=True, warn=False)
    for k, v in results[1].metrics.items():
        assert np.array_equal(again[0].metrics[k][::-1], v, equal_nan=True), k
    m1 = results[1].metrics["latency_mean_s"]
    assert m1[0] != m1[1]


# ------------------------------------------------------------------------------ Fig. 9
def test_fig9_reduced(tmp_path):
    if not AZURE.is_file():
        pytest.skip(f"shared data {AZURE} is absent (see ../shared/data/README.md)")
    from jaxsched.budget.experiments import EXPERIMENTS, FIG9_RATE_SCALE, fig9
    from jaxsched.plots import plot_offline
    from jaxsched.results import write_csv

    assert "fig9" in EXPERIMENTS
    rep = fig9(seeds=2, trace_path=AZURE, horizon_s=150.0, burn_in_s=30.0, table_size=512)
    assert rep.ok, rep.markdown
    assert [r["budget"] for r in rep.rows] == [128, 512, 1024]
    for r in rep.rows:
        for name in ("ttft", "latency"):
            q = [r[f"{name}_{t}_s"] for t in ("p50", "p90", "p99")]
            assert 0 < q[0] <= q[1] <= q[2], (r["budget"], name, q)
        assert r["latency_p50_s"] > r["ttft_p50_s"]
        assert r["num_departed"] > 100
        for key in ("moderate_lowest_e2e", "largest_lowest_ttft", "smallest_much_worse"):
            assert r[key] in ("yes", "no", "unclear")
    # The offered load follows eq. (2.3)'s capacity b / t_b: 128 is above it at the default rate.
    loads = [r["load"] for r in rep.rows]
    assert loads[0] > 1 > loads[1] > loads[2]
    cfg = BudgetConfig(workload=(read_trace(AZURE, times=True),), arrival_mode="trace")
    assert loads[1] == pytest.approx(trace_load(cfg, FIG9_RATE_SCALE, 512))
    assert "lowest median E2E latency" in rep.markdown and "| 1024 |" in rep.markdown
    assert write_csv(tmp_path / "fig9.csv", rep.rows).is_file()
    assert plot_offline(rep, tmp_path / "fig9.png").stat().st_size > 1000
