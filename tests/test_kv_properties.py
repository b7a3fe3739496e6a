"""Differential tests: the vectorized kv engine (jaxsched.kv) against the plain-Python reference.

tests/reference_kv.py follows docs/kv-semantics.md literally, one request at a time with
np.float32 double-float time. These tests run both on the same seeds and require
- the same candidate stream: the reference recomputes every candidate time a_i, its period,
  the thinning and the type from the engine's gaps e_i (`arrival_stream`, §3), bitwise;
- the same per-epoch trajectory (§9), exactly: kind, t_hi / t_lo at the epoch start (bitwise),
  tau (hi, lo; bitwise), batch tokens, batch memory, preempted, completed, inserted, in_system
  and the batch composition counts [m, K1];
- the same metrics (§8): counts, peak memory, overflows, preemptions exactly; busy, end and
  last-completion times bitwise (float64 of the same double-floats); throughputs to 1e-12
  relative (same float64 division); latency / TTFT means within 1e-5 relative (compensated
  float32 sums in the engine, exact sums in the reference); p50 / p99 within half a histogram bin
  (plus float32 log slack) of the exact empirical quantile.

Compilation dominates the cost (one engine compile per static KVConfig), so each default case
fixes one small config and hypothesis draws the traced parameters (rates, d0, d1, capacity,
thresholds) and the seeds; `-m slow` adds cases whose configs (lengths, N, A, Q, end mode,
policy) are drawn per example as well.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

kv = pytest.importorskip("jaxsched.kv.run", reason="the kv engine (jaxsched.kv.run) is not importable")
from jaxsched.kv import KVConfig, make_params  # noqa: E402
from jaxsched.kv.arrivals import arrival_stream  # noqa: E402
from jaxsched.kv.config import hist_ratio, work_per_request  # noqa: E402

try:  # pytest's default import mode puts tests/ itself on sys.path
    import reference_kv as ref
except ImportError:  # tests/ imported as a package
    from tests import reference_kv as ref

BLOCK = 256  # epochs per jitted block: small runs stop after a block or two
SEEDS_PER_EXAMPLE = 3
EXACT_METRICS = ("num_arrived", "num_completed", "num_in_system", "num_dropped", "table_overflow",
                 "peak_memory_tokens", "overflow_count", "preemption_count", "num_batches",
                 "num_epochs", "busy_s", "end_time_s", "idle_s", "last_completion_s", "done",
                 "stalled")
CLOSE_METRICS = ("throughput_tokens_per_s", "decode_throughput_tokens_per_s")
MEAN_METRICS = ("latency_mean_s", "ttft_mean_s")
QUANTILE_METRICS = ("latency_p50_s", "latency_p99_s", "ttft_p50_s", "ttft_p99_s")
TRAJ_INT = ("kind", "tokens", "memory_tokens", "preempted", "completed", "inserted", "in_system")


# ---------------------------------------------------------------------------------------------
# Running both and comparing
# ---------------------------------------------------------------------------------------------
def _gaps(config: KVConfig, params, seed: int, need: int) -> tuple[dict, int]:
    """arrival_stream of at least `need` candidates (n rounded up to a power of two: few compiles)."""
    n = 64
    while n < need:
        n *= 2
    return arrival_stream(config, params, seed, n), n


def run_reference(config: KVConfig, params, rates, seed: int, period_s: float = 1.0,
                  candidates: int = 64) -> tuple[dict, dict]:
    """The reference run of `seed` on the engine's gaps, and the stream it was given."""
    while True:
        stream, n = _gaps(config, params, seed, candidates)
        try:
            res = ref.simulate(
                prefill=config.prefill_tokens, decode=config.decode_tokens, policy=config.policy,
                rates=np.asarray(rates, np.float64).tolist(), period_s=period_s,
                d0=float(params.d0_s), d1=float(params.d1_s_per_token),
                capacity=int(params.capacity_tokens),
                thresholds=np.asarray(params.thresholds).tolist() if config.num_thresholds else None,
                gaps=stream["gap_s"], seed=seed, num_requests=config.num_requests,
                horizon_s=config.horizon_s, end_mode=config.end_mode, table_size=config.table_size,
                arrivals_per_step=config.arrivals_per_step, max_epochs=config.max_epochs,
                segment_bounds=config.segment_bounds)
            return res, stream
        except IndexError:  # the run needed more candidates than fetched
            candidates = 2 * n


def check_stream(res: dict, stream: dict) -> None:
    """Every candidate the reference examined matches the engine's candidate, bitwise."""
    for a in res["arrivals"]:
        i = a["index"]
        assert not stream["exhausted"][i]
        assert (a["t_hi"], a["t_lo"]) == (stream["t_hi"][i], stream["t_lo"][i]), f"candidate {i}"
        assert a["accepted"] == bool(stream["accepted"][i]), f"candidate {i}"
        if a["accepted"]:
            assert a["type"] == int(stream["type"][i]), f"candidate {i}"


def check_trajectory(config: KVConfig, traj: dict[str, np.ndarray], s: int, res: dict) -> None:
    """Engine rows of seed index s (kind != 0) equal the reference's epochs, field by field."""
    live = np.flatnonzero(traj["kind"][s] != 0)
    rows = res["epochs"]
    assert len(live) == len(rows), f"{len(live)} engine epochs vs {len(rows)} reference epochs"
    assert np.array_equal(live, np.arange(len(rows))), "engine epochs must form a prefix"
    K1 = config.num_stages
    for e, row in enumerate(rows):
        where = f"epoch {e} (kind {row['kind']})"
        for key in TRAJ_INT:
            assert int(traj[key][s, e]) == row[key], f"{key} at {where}"
        for key in ("t_hi", "t_lo", "tau_hi", "tau_lo"):
            got = traj[key][s, e]
            assert got.dtype == np.float32 and got == row[key], f"{key} at {where}: {got!r} vs {row[key]!r}"
        counts = np.zeros((config.m, K1), np.int64)
        counts[:, :len(row["counts"][0])] = row["counts"]
        np.testing.assert_array_equal(traj["counts"][s, e], counts, err_msg=f"counts at {where}")


def check_metrics(config: KVConfig, got: dict[str, float], want: dict[str, float]) -> None:
    for key in EXACT_METRICS:
        assert got[key] == want[key], f"{key}: engine {got[key]!r} vs reference {want[key]!r}"
    for key in CLOSE_METRICS:
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=0.0), key
    for key in MEAN_METRICS:
        assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-12), key
    half_bin = 0.5 * hist_ratio(config.hist_bins) + 1e-4  # + float32 log slack at bin edges
    for key in QUANTILE_METRICS:
        if want[key] == 0.0 or got[key] == 0.0:
            assert got[key] == want[key] == 0.0 or want[key] < 1e-6, key
            continue
        assert abs(math.log(got[key] / want[key])) <= half_bin, f"{key}: {got[key]} vs {want[key]}"


def compare(config: KVConfig, rates, seeds: list[int], **param_kwargs: Any) -> list[dict]:
    """Run the engine (record=True) and the reference on every seed; assert they agree."""
    params = make_params(config, rates=rates, **param_kwargs)
    # The reference recomputes the per-period cdf from the rates: it must be the params' one.
    cdf, _ = ref.type_cdf(np.asarray(rates, np.float64).tolist())
    np.testing.assert_array_equal(np.asarray(cdf, np.float32), np.asarray(params.type_cdf))
    assert ref.split12(float(params.d1_s_per_token)) == (params.d1_hi, params.d1_lo)
    period = param_kwargs.get("period_s", 1.0)
    assert ref.F32(1.0 / float(period)) == params.inv_period_s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # table overflow is compared, not warned
        out = kv.simulate(config, params, seeds, record=True, block_epochs=BLOCK)
    results = []
    for s, seed in enumerate(seeds):
        res, stream = run_reference(config, params, rates, seed, param_kwargs.get("period_s", 1.0))
        check_stream(res, stream)
        check_trajectory(config, out.trajectories, s, res)
        got = {k: float(v[s]) for k, v in out.metrics.items()}
        check_metrics(config, got, res["metrics"])
        assert got["done"] == 1.0, "raise max_epochs in the test config"
        results.append(res)
    return results


# ---------------------------------------------------------------------------------------------
# Parameter strategies
# ---------------------------------------------------------------------------------------------
def _max_d1(config: KVConfig, rates) -> float:
    """Largest stable d1 (d1 * A < 1, A at the time-averaged rates), s/token."""
    mean = np.asarray(rates, np.float64).reshape(-1, config.m).mean(axis=0)
    return 1.0 / float(np.dot(mean, work_per_request(config)))


@st.composite
def params_for(draw, config: KVConfig, periods: int = 1) -> dict[str, Any]:
    """rates ([m] or [P, m]), d0, d1 (stable), capacity and thresholds valid for `config`."""
    m = config.m
    rate = st.floats(0.2, 3.0)
    if periods == 1:
        rates = [draw(rate) for _ in range(m)]
    else:
        rates = [[draw(rate) for _ in range(m)] for _ in range(periods)]
    d0 = draw(st.floats(0.02, 1.0))
    d1 = draw(st.floats(0.0, 0.9)) * _max_d1(config, rates)
    out: dict[str, Any] = dict(rates=rates, d0_s=d0, d1_s_per_token=d1)
    if config.policy == "wait":
        n = [draw(st.integers(1, 3)) for _ in range(m)]
        need = int(np.dot(n, work_per_request(config)))
        out.update(thresholds=n, capacity_tokens=need + draw(st.integers(0, 6)))
    elif config.policy == "nested_wait":
        L = config.num_thresholds
        out.update(thresholds=[draw(st.integers(1, 3)) for _ in range(L)],
                   capacity_tokens=config.max_len + draw(st.integers(0, 4 * config.max_len)))
    else:
        out.update(thresholds=None,
                   capacity_tokens=config.max_len + draw(st.integers(0, 4 * config.max_len)))
    if periods > 1:
        out["period_s"] = draw(st.sampled_from([0.5, 1.0, 2.5]))
    return out


seeds_st = st.lists(st.integers(0, 2**32 - 1), min_size=SEEDS_PER_EXAMPLE,
                    max_size=SEEDS_PER_EXAMPLE, unique=True)
SETTINGS = dict(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_case(config: KVConfig, periods: int, data) -> list[dict]:
    p = data.draw(params_for(config, periods), label="params")
    seeds = data.draw(seeds_st, label="seeds")
    rates = p.pop("rates")
    return compare(config, rates, seeds, **p)


# ---------------------------------------------------------------------------------------------
# Default cases: one small config each (one compile), parameters and seeds drawn
# ---------------------------------------------------------------------------------------------
CASES: dict[str, tuple[KVConfig, int]] = {
    # WAIT, 2 types, A = 2 (insert-only epochs), drain.
    "wait": (KVConfig(prefill_tokens=(1, 2), decode_tokens=(1, 3), policy="wait",
                      num_requests=16, table_size=24, arrivals_per_step=2, max_epochs=1024), 1),
    # WAIT, 3 types, force_clear, a small table (overflow possible).
    "wait_force_clear": (KVConfig(prefill_tokens=(2, 1, 3), decode_tokens=(2, 1, 1), policy="wait",
                                  num_requests=14, end_mode="force_clear", table_size=8,
                                  arrivals_per_step=3, max_epochs=1024), 1),
    # Nested WAIT, one segment per type; small C provokes the newest-first memory check.
    "nested_wait": (KVConfig(prefill_tokens=(2, 2, 2), decode_tokens=(1, 2, 4),
                             policy="nested_wait", num_requests=16, table_size=24,
                             max_epochs=1024), 1),
    # FCFS with time-varying rates (2 periods, thinning) and a horizon as well as N.
    "fcfs_periods": (KVConfig(prefill_tokens=(1, 3), decode_tokens=(2, 1), policy="fcfs",
                              num_requests=16, horizon_s=12.0, table_size=10, arrivals_per_step=2,
                              max_epochs=1024), 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
@given(data=st.data())
@settings(**SETTINGS)
def test_engine_matches_reference(case: str, data) -> None:
    config, periods = CASES[case]
    _check_case(config, periods, data)


# Horizon-only run (no N: stream exhausted by T) and nested_wait with merged segments.
SLOWER_CASES: dict[str, tuple[KVConfig, int]] = {
    "wait_horizon": (KVConfig(prefill_tokens=(1, 2), decode_tokens=(2, 1), policy="wait",
                              num_requests=None, horizon_s=6.0, table_size=32,
                              max_epochs=1024), 1),
    "nested_merged_force_clear": (KVConfig(prefill_tokens=(1, 1, 1), decode_tokens=(1, 3, 4),
                                           policy="nested_wait", segment_bounds=(3, 4),
                                           num_requests=14, end_mode="force_clear",
                                           table_size=24, arrivals_per_step=1,
                                           max_epochs=1024), 1),
}


@pytest.mark.parametrize("case", sorted(SLOWER_CASES))
@given(data=st.data())
@settings(**dict(SETTINGS, max_examples=6))
def test_engine_matches_reference_more_modes(case: str, data) -> None:
    config, periods = SLOWER_CASES[case]
    _check_case(config, periods, data)


def test_the_comparison_sees_preemption_and_overflow() -> None:
    # A fixed instance that exercises restart preemption (fcfs, tight C) and the Prop 4 load:
    # the comparison above would be vacuous if these never happened.
    config, _ = CASES["fcfs_periods"]
    res = compare(config, [[3.0, 3.0], [1.0, 1.0]], [0, 1, 2], d0_s=0.05, d1_s_per_token=0.01,
                  capacity_tokens=config.max_len + 1, period_s=1.0)
    assert sum(r["metrics"]["preemption_count"] for r in res) > 0
    config, _ = CASES["nested_wait"]
    res = compare(config, [3.0, 2.0, 1.0], [0, 1, 2], d0_s=0.05, d1_s_per_token=0.005,
                  capacity_tokens=config.max_len, thresholds=[2, 1, 1])
    assert sum(r["metrics"]["preemption_count"] for r in res) > 0


# ---------------------------------------------------------------------------------------------
# Slow: configs drawn per example (a compile each)
# ---------------------------------------------------------------------------------------------
@st.composite
def configs(draw) -> tuple[KVConfig, int]:
    policy = draw(st.sampled_from(["wait", "nested_wait", "fcfs"]))
    m = draw(st.integers(1, 3))
    if policy == "nested_wait":
        prefill = (draw(st.integers(1, 4)),) * m
        decode = tuple(sorted(draw(st.lists(st.integers(1, 6), min_size=m, max_size=m, unique=True))))
        L = draw(st.integers(1, m))
        cuts = sorted(draw(st.lists(st.sampled_from(decode[:-1]), min_size=L - 1, max_size=L - 1,
                                    unique=True))) if m > 1 else []
        bounds = tuple(cuts) + (decode[-1],)
    else:
        prefill = tuple(draw(st.integers(1, 4)) for _ in range(m))
        decode = tuple(draw(st.integers(1, 5)) for _ in range(m))
        bounds = None
    finite = draw(st.booleans())
    horizon = draw(st.sampled_from([None, 5.0, 15.0])) if finite else draw(st.sampled_from([5.0, 15.0]))
    config = KVConfig(prefill_tokens=prefill, decode_tokens=decode, policy=policy,
                      num_requests=draw(st.integers(1, 30)) if finite else None, horizon_s=horizon,
                      end_mode=draw(st.sampled_from(["drain", "force_clear"])),
                      table_size=draw(st.integers(2, 40)), arrivals_per_step=draw(st.integers(1, 5)),
                      max_epochs=2048, segment_bounds=bounds)
    return config, draw(st.sampled_from([1, 1, 2, 3]))


@pytest.mark.slow
@given(data=st.data())
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_engine_matches_reference_drawn_configs(data) -> None:
    config, periods = data.draw(configs(), label="config")
    _check_case(config, periods, data)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES) + sorted(SLOWER_CASES))
@given(data=st.data())
@settings(**dict(SETTINGS, max_examples=80, derandomize=False))
def test_engine_matches_reference_many(case: str, data) -> None:
    config, periods = {**CASES, **SLOWER_CASES}[case]
    _check_case(config, periods, data)
