"""Hand-worked checks of the plain-Python kv reference simulator (tests/reference/kv.py) alone.

Every expected value is derived by hand in the comments from docs/kv-semantics.md. Times use
dyadic constants (d0, d1, gaps that are multiples of 1/16) so every float32 operation is exact
and the hand arithmetic is the simulator's arithmetic. These tests pin the oracle before it is
used to check the vectorized engine (tests/kv/test_properties.py).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference import kv as ref

F32 = np.float32
# Two types with rates (1, 1): type_cdf = (0.5, 1.0), so v = 0.25 draws type 0 and v = 0.75 type 1.
V = {0: 0.25, 1: 0.75}


def run(types: list[int], gaps: list[float], **kwargs: Any) -> dict[str, Any]:
    """simulate() on a finite stream of the given candidate types and gaps (all accepted)."""
    kwargs.setdefault("rates", [1.0] * len(kwargs["prefill"]))
    kwargs.setdefault("num_requests", len(types))
    if len(kwargs["prefill"]) == 1:
        type_u = [0.5] * len(types)
    else:
        type_u = [V[j] for j in types]
    return ref.simulate(gaps=gaps, type_u=type_u, **kwargs)


def column(res: dict[str, Any], key: str, kinds: tuple[int, ...] = (2,)) -> list[Any]:
    """One field over the epochs of the given kinds (times as Python floats)."""
    out = []
    for row in res["epochs"]:
        if row["kind"] in kinds:
            v = row[key]
            out.append(float(v) if isinstance(v, np.floating) else v)
    return out


def lat(res: dict[str, Any], key: str = "latency") -> list[float]:
    return [float(res["requests"][i][key]) for i in sorted(res["requests"])]


# ---------------------------------------------------------------------------------------------
# Double-float time
# ---------------------------------------------------------------------------------------------
def _exact(x: ref.DF) -> Fraction:
    return Fraction(float(x.hi)) + Fraction(float(x.lo))


@given(st.floats(0, 1e6, width=32), st.floats(0, 1e3, width=32), st.floats(0, 1e3, width=32))
@settings(max_examples=200, deadline=None)
def test_two_sum_and_add_are_error_free(a: float, b: float, c: float) -> None:
    s, e = ref.two_sum(F32(a), F32(b))
    assert Fraction(float(s)) + Fraction(float(e)) == Fraction(a) + Fraction(b)
    assert s == F32(F32(a) + F32(b))
    # Adding two float32 gaps to a clock: the double-float holds the exact sum whenever it
    # fits in 48 bits, and stays normalized (hi = fl(hi + lo)).
    x = ref.add_f32(ref.add_f32(ref.ZERO, F32(a)), F32(b))
    y = ref.add_f32(x, F32(c))
    assert _exact(x) == Fraction(a) + Fraction(b)
    assert abs(_exact(y) - (Fraction(a) + Fraction(b) + Fraction(c))) <= abs(_exact(y)) * Fraction(1, 2**44)
    assert y.hi == F32(y.hi + y.lo)


@given(st.floats(0, 1e5, width=32), st.floats(0, 1e5, width=32), st.floats(-(2.0**-10), 2.0**-10, width=32))
@settings(max_examples=200, deadline=None)
def test_sub_is_the_rounded_difference(a: float, b: float, tiny: float) -> None:
    x = ref.add_f32(ref.from_float64(a), F32(tiny))
    y = ref.from_float64(b)
    d = ref.sub(x, y)
    exact = _exact(x) - _exact(y)
    # Within one float32 ulp of the exact difference (both clocks are exact double-floats).
    ulp = Fraction(float(np.spacing(F32(abs(float(exact)))))) if exact != 0 else Fraction(0)
    assert abs(Fraction(float(d)) - exact) <= ulp


def test_from_float64_le_and_to_float64() -> None:
    x = ref.from_float64(0.1)
    assert x.hi == F32(0.1) and float(x.hi) + float(x.lo) == pytest.approx(0.1, rel=1e-15)
    assert ref.to_float64(x) == float(x.hi) + float(x.lo)
    assert ref.le(x, x)
    assert ref.le(ref.DF(F32(1.0), F32(-1e-9)), ref.DF(F32(1.0), F32(0.0)))
    assert not ref.le(ref.DF(F32(1.0), F32(1e-9)), ref.DF(F32(1.0), F32(0.0)))
    assert ref.le(ref.DF(F32(1.0), F32(1e-3)), ref.DF(F32(2.0), F32(-1e-3)))


def test_long_clock_stays_exact_where_float32_drifts() -> None:
    # 20000 iterations of tau = float32(0.001): the double-float clock equals the exact sum of
    # the float32 taus to ~1e-14 relative; a plain float32 accumulator is off by far more.
    tau = F32(0.001)
    t, naive = ref.ZERO, F32(0.0)
    for _ in range(20000):
        t = ref.add_f32(t, tau)
        naive = F32(naive + tau)
    exact = 20000 * float(tau)
    assert abs(ref.to_float64(t) - exact) <= 1e-12 * exact
    assert abs(float(naive) - exact) > 1e-6 * exact
    # A latency taken late in the run is still exact to float32 rounding.
    arrival = ref.add_f32(ref.ZERO, F32(3.0))
    assert ref.sub(t, arrival) == F32(exact - 3.0)


def test_iteration_time_is_an_exact_double_float() -> None:
    assert ref.iteration_time(6, F32(7 / 16), F32(1 / 16)) == ref.DF(F32(13 / 16), F32(0.0))
    # d1 = float32(0.1) has 24 significant bits: d1 * tokens is not a float32, but the
    # double-float tau holds d0 + d1 * tokens exactly (to ~2^-48 relative).
    d0, d1 = F32(0.25), F32(0.1)
    for tokens in (1, 7, 4095, 4096, 123456, 2**30 - 1):
        tau = ref.iteration_time(tokens, d0, d1)
        exact = Fraction(float(d0)) + Fraction(float(d1)) * tokens
        assert abs(_exact(tau) - exact) <= exact * Fraction(1, 2**46)
        assert tau.hi == F32(tau.hi + tau.lo)
    hi, lo = ref.split12(F32(0.1))
    assert Fraction(float(hi)) + Fraction(float(lo)) == Fraction(float(F32(0.1)))
    assert int(np.array(hi).view(np.uint32)) & 0xFFF == 0


def test_add_double_floats() -> None:
    x = ref.add_f32(ref.from_float64(1000.0), F32(1e-4))
    y = ref.iteration_time(3, F32(0.1), F32(0.3))
    z = ref.add(x, y)
    assert abs(_exact(z) - (_exact(x) + _exact(y))) <= _exact(z) * Fraction(1, 2**46)
    assert ref.add(ref.ZERO, y) == y


# ---------------------------------------------------------------------------------------------
# Arrivals
# ---------------------------------------------------------------------------------------------
def test_kv_uniform_matches_jaxsched_rng() -> None:
    from jaxsched import rng

    assert (rng.STREAM_KV_GAP, rng.STREAM_KV_TYPE) == (ref.STREAM_KV_GAP, ref.STREAM_KV_TYPE)
    idx = np.arange(300, dtype=np.uint32)
    for seed in (0, 1, 12345, 2**32 - 1):
        for stream in (ref.STREAM_KV_GAP, ref.STREAM_KV_TYPE):
            want = np.asarray(rng.uniform(np.uint32(seed), idx, stream))
            got = np.array([ref.kv_uniform(seed, int(i), stream) for i in idx], np.float32)
            np.testing.assert_array_equal(got, want)


def test_type_cdf() -> None:
    cdf, lam = ref.type_cdf([1.0, 3.0])
    assert lam == 4.0 and cdf == [[F32(0.25), F32(1.0)]]
    cdf, lam = ref.type_cdf([[1.0, 1.0], [2.0, 2.0]])
    assert lam == 4.0 and cdf == [[F32(0.25), F32(0.5)], [F32(0.5), F32(1.0)]]
    cdf, _ = ref.type_cdf([0.1, 0.2, 0.3])
    assert cdf[0][2] == F32(1.0) and cdf[0][0] == F32(0.1 / (0.1 + 0.2 + 0.3))


def test_thinning_by_period() -> None:
    # Periods of 1 s: p0 rates (1, 1) (busiest, cdf (0.5, 1)), p1 rates (0.5, 0.5) (cdf (0.25, 0.5)).
    # Candidates at 0.5 (p0), 1.5 (p1), 2.5 (p0), 3.5 (p1), 3.75 (p1) with v = .75, .75, .75, .3, .2:
    # 0.5 -> type 1; 1.5 -> rejected (.75 >= .5); 2.5 -> type 1; 3.5 -> type 1 (.25 <= .3 < .5);
    # 3.75 -> type 0 (.2 < .25). N = 4 accepted: candidate 4 is the last one examined.
    res = ref.simulate(
        prefill=[1, 1],
        decode=[1, 1],
        policy="fcfs",
        rates=[[1.0, 1.0], [0.5, 0.5]],
        period_s=1.0,
        d0=0.25,
        d1=0.125,
        capacity=10,
        gaps=[0.5, 1.0, 1.0, 1.0, 0.25, 1.0],
        type_u=[0.75, 0.75, 0.75, 0.3, 0.2, 0.1],
        num_requests=4,
    )
    got = [(a["index"], float(a["t_hi"]), a["accepted"], a["type"]) for a in res["arrivals"]]
    assert got == [(0, 0.5, True, 1), (1, 1.5, False, -1), (2, 2.5, True, 1), (3, 3.5, True, 1), (4, 3.75, True, 0)]
    assert [res["requests"][i]["type"] for i in range(4)] == [1, 1, 1, 0]
    assert res["metrics"]["num_arrived"] == 4 and res["metrics"]["num_completed"] == 4


# ---------------------------------------------------------------------------------------------
# One request alone: (l, l') = (2, 3), 4 iterations of 2, 3, 4, 5 tokens
# ---------------------------------------------------------------------------------------------
# vllm / sarathi with one-token blocks and no watermark: C = 5 tokens = 5 blocks.
BLOCKS1 = dict(block_size=1, watermark=0.0)


@pytest.mark.parametrize(
    "policy,thresholds", [("wait", [1]), ("nested_wait", [1]), ("fcfs", None), ("vllm", None), ("sarathi", None)]
)
def test_single_request(policy: str, thresholds: list[int] | None) -> None:
    # d0 = 1, d1 = 0.5, arrival at 0.5. Epoch 1 (t=0): nothing due, idle jump to 0.5.
    # Then tau = 1 + .5 * 2, 3, 4, 5 = 2, 2.5, 3, 3.5: batches start at 0.5, 2.5, 5, 8; the last
    # ends at 11.5. TTFT = 2.5 - .5 = 2, latency = 11.5 - .5 = 11. Memory = footprint l + k.
    # vllm: the prefill is admitted (1 <= cap, 1 * 2 <= 4096, 2 blocks <= 5), then it decodes
    # (3, 4, 5 blocks <= 5). sarathi: the prefill (2 tokens) fits the 512-token chunk, then it
    # decodes. Same run for every policy.
    extra = BLOCKS1 if policy in ("vllm", "sarathi") else {}
    res = run(
        [0], [0.5], prefill=[2], decode=[3], policy=policy, thresholds=thresholds, d0=1.0, d1=0.5, capacity=5, **extra
    )
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 2, 2, 2, 4]
    assert column(res, "tokens") == [2, 3, 4, 5]
    assert column(res, "memory_tokens") == [2, 3, 4, 5]
    assert column(res, "tau_s") == [2.0, 2.5, 3.0, 3.5]
    assert [b["start_s"] for b in res["batches"]] == [0.5, 2.5, 5.0, 8.0]
    assert [b["counts"] for b in res["batches"]] == [[[1, 0, 0, 0]], [[0, 1, 0, 0]], [[0, 0, 1, 0]], [[0, 0, 0, 1]]]
    assert lat(res, "ttft") == [2.0] and lat(res) == [11.0]
    m = res["metrics"]
    assert m["throughput_tokens_per_s"] == 4 / 11.5  # l' + 1 = 4 tokens
    assert m["decode_throughput_tokens_per_s"] == 3 / 11.5
    assert (m["latency_mean_s"], m["ttft_mean_s"], m["latency_p99_exact_s"]) == (11.0, 2.0, 11.0)
    # Histogram quantiles (b = 5): 11 = 8 * (1 + 12/32) lies in the bin [8 (1 + 12/32),
    # 8 (1 + 13/32)) of midpoint 8 * (1 + 12.5/32) = 11.125; 2 is a bin's lower edge: 2 (1 + .5/32).
    assert (m["latency_p50_s"], m["latency_p99_s"]) == (11.125, 11.125)
    assert (m["ttft_p50_s"], m["ttft_p99_s"]) == (2.03125, 2.03125)
    assert (m["busy_s"], m["end_time_s"], m["idle_s"]) == (11.0, 11.5, 0.5)
    assert (m["peak_memory_tokens"], m["overflow_count"], m["preemption_count"]) == (5, 0, 0)
    assert (m["num_batches"], m["num_epochs"], m["done"], m["stalled"]) == (4, 6, 1, 0)


# ---------------------------------------------------------------------------------------------
# The Prop 4 instance (notes/001.md §5): l = (1, 1), l' = (1, 2), C = 9, d0 + 9 d1 = 1
# ---------------------------------------------------------------------------------------------
PROP4 = dict(prefill=[1, 1], decode=[1, 2], d0=7 / 16, d1=1 / 16, capacity=9)


def test_prop4_wait_short_run() -> None:
    # WAIT, per-stage thresholds (1, 1) (M^pi = 1*(1+2) + 1*(1+2+3) = 9 = C); pairs (type 0,
    # type 1) arrive at 0.5 and 1.5; N = 4, drain.
    # t=0: idle to .5. t=.5: insert r0 (t0), r1 (t1); both types fire; B = both prefills,
    #   2 tokens, tau = 7/16 + 2/16 = 9/16 -> t = 1.0625; TTFT .5625 each.
    # t=1.0625: stage-0 queues empty: WAIT pauses the decodes too; idle to 1.5.
    # t=1.5: insert r2 (t0), r3 (t1); N reached (draining). B = r2, r3 (stage 0, 1 token each),
    #   r0, r1 (stage 1, 2 each): 6 tokens, memory 6, tau 13/16 -> t = 2.3125. r0 completes
    #   (latency 1.8125), TTFT of r2, r3 = .8125.
    # t=2.3125: r2 (stage 1: 2), r3 (stage 1: 2), r1 (stage 2: 3): 7 tokens, tau 14/16 -> 3.1875.
    #   r2 (latency 1.6875) and r1 (2.6875) complete.
    # t=3.1875: r3 (stage 2: 3): tau 10/16 -> 3.8125, latency 2.3125. t=3.8125: empty, done.
    res = run([0, 1, 0, 1], [0.5, 0.0, 1.0, 0.0], policy="wait", thresholds=[1, 1], **PROP4)
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 3, 2, 2, 2, 4]
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.5, 2.3125, 3.1875]
    assert column(res, "tokens") == [2, 6, 7, 3]
    assert column(res, "memory_tokens") == [2, 6, 7, 3]
    assert [b["counts"] for b in res["batches"]] == [
        [[1, 0, 0], [1, 0, 0]],
        [[1, 1, 0], [1, 1, 0]],
        [[0, 1, 0], [0, 1, 1]],
        [[0, 0, 0], [0, 0, 1]],
    ]
    assert lat(res) == [1.8125, 2.6875, 1.6875, 2.3125]
    assert lat(res, "ttft") == [0.5625, 0.5625, 0.8125, 0.8125]
    m = res["metrics"]
    assert m["latency_mean_s"] == 2.125 and m["ttft_mean_s"] == 0.6875
    assert m["throughput_tokens_per_s"] == 10 / 3.8125  # (1+1) + (2+1) per pair
    assert m["decode_throughput_tokens_per_s"] == 6 / 3.8125
    assert (m["busy_s"], m["end_time_s"], m["idle_s"]) == (2.875, 3.8125, 0.9375)
    assert (m["peak_memory_tokens"], m["num_batches"], m["num_epochs"]) == (7, 4, 7)


def test_prop4_wait_equilibrium() -> None:
    # One pair per second at t = 1, 2, ..., 6. From t = 3 on every batch is the equilibrium batch
    # of App. A.3: type 0 stages 0, 1 and type 1 stages 0, 1, 2, memory 1+2+1+2+3 = 9 = C, and
    # tau = 7/16 + 9/16 = 1 exactly, so the next pair is due the moment the batch ends.
    # Warm-up: t=1: 2 prefills (tau 9/16), idle to 2; t=2: 6 tokens (tau 13/16), idle to 3.
    # Drain after t=6 (N = 12): t=7: type 0 stage 1 (2) + type 1 stages 1, 2 (2 + 3) = 7;
    # t=7+14/16: type 1 stage 2 (3).
    pairs = 6
    res = run([0, 1] * pairs, [1.0, 0.0] * pairs, policy="wait", thresholds=[1, 1], **PROP4)
    starts = [b["start_s"] for b in res["batches"]]
    assert starts == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.875]
    assert column(res, "memory_tokens") == [2, 6, 9, 9, 9, 9, 7, 3]
    assert column(res, "tau_s")[2:6] == [1.0] * 4
    equilibrium = [[1, 1, 0], [1, 1, 1]]
    assert [b["counts"] for b in res["batches"]][2:6] == [equilibrium] * 4
    m = res["metrics"]
    assert m["peak_memory_tokens"] == 9 and m["overflow_count"] == 0
    assert m["num_completed"] == 12 and m["preemption_count"] == 0
    # In equilibrium a type-0 request waits 0 and finishes in 2 s, a type-1 one in 3 s (pairs
    # arriving at 3 and 4); the type-1 request of the pair at 5 ends in the shorter drain batch
    # at 7 + 14/16: latency 2.875.
    assert lat(res)[4:10] == [2.0, 3.0, 2.0, 3.0, 2.0, 2.875]


def test_prop4_fcfs_burst_preempts_newest() -> None:
    # FCFS, five type-1 requests (l=1, l'=2) at t=.5 (N = 5).
    # t=.5: all five prefills: 5 tokens (<= 9), tau 12/16 -> 1.25. All at stage 1 (KV 2 each).
    # t=1.25: prefix r0..r3 = 8 <= 9, r4 would make 10: B = r0..r3, P = {r4} (restart).
    #   memory 8 (r4 no longer counts), tau 15/16 -> 2.1875; r0..r3 at stage 2 (KV 3).
    # t=2.1875: r0, r1, r2 = 9; r3 would make 12: P = {r3}; r4 (non-resident) just waits.
    #   tau 1 -> 3.1875: r0..r2 complete (latency 2.6875).
    # t=3.1875: r3 (recompute, stage 2: 3) + r4 (recompute, stage 1: 2) = 5, tau 12/16 -> 3.9375;
    #   r3 completes (3.4375). t=3.9375: r4 (stage 2: 3), tau 10/16 -> 4.5625 (latency 4.0625).
    res = run([1] * 5, [0.5, 0, 0, 0, 0], policy="fcfs", **PROP4)
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.25, 2.1875, 3.1875, 3.9375]
    assert column(res, "tokens") == [5, 8, 9, 5, 3]
    assert column(res, "memory_tokens") == [5, 8, 9, 5, 3]
    assert column(res, "preempted") == [0, 1, 1, 0, 0]
    assert column(res, "preempted_ids") == [[], [4], [3], [], []]
    assert column(res, "batch_ids") == [[0, 1, 2, 3, 4], [0, 1, 2, 3], [0, 1, 2], [3, 4], [4]]
    assert lat(res) == [2.6875, 2.6875, 2.6875, 3.4375, 4.0625]
    assert lat(res, "ttft") == [0.75] * 5  # a restart does not record a second first token
    m = res["metrics"]
    assert (m["preemption_count"], m["peak_memory_tokens"], m["overflow_count"]) == (2, 9, 0)
    assert [res["requests"][i]["preemptions"] for i in range(5)] == [0, 0, 0, 1, 1]


def test_prop4_wait_burst_never_exceeds_mpi() -> None:
    # The same burst under WAIT (1, 1): one request per stage per batch, memory <= M^pi = 9,
    # and nothing is ever preempted. Drain: t=.5: r0 prefill (tau 8/16 -> 1); t=1: r0 s1 + r1 s0
    # (3 tokens, tau 10/16 -> 1.625); t=1.625: r0 s2 + r1 s1 + r2 s0 = 6 (tau 13/16 -> 2.4375),
    # r0 completes with latency 1.9375.
    res = run([1] * 5, [0.5, 0, 0, 0, 0], policy="wait", thresholds=[1, 1], **PROP4)
    assert [b["start_s"] for b in res["batches"]][:3] == [0.5, 1.0, 1.625]
    assert column(res, "tokens")[:3] == [1, 3, 6]
    assert max(column(res, "memory_tokens")) <= 9
    assert lat(res)[0] == 1.9375
    m = res["metrics"]
    assert m["preemption_count"] == 0 and m["overflow_count"] == 0 and m["num_completed"] == 5


# ---------------------------------------------------------------------------------------------
# vllm and sarathi (§6): blocks, watermark, caps, restarts, chunked prefills
# ---------------------------------------------------------------------------------------------
D16 = dict(d0=7 / 16, d1=1 / 16)  # tau = (7 + tokens) / 16


def test_vllm_restarts_the_newest_running_request() -> None:
    # l = 1, l' = 2, C = 5, one-token blocks, no watermark: num_blocks = 5. r0, r1 at .5 (N = 2).
    # t=.5: both waiting; pos 1, 2: cap ok, 2 * 1 <= 4096, blocks 1 + 1 <= 5: prefill batch
    #   {r0, r1}, 2 tokens, tau 9/16 -> 1.0625 (TTFT .5625 each).
    # t=1.0625: nothing waits: decode batch, blocks 2 + 2 <= 5: {r0, r1}, 4 tokens -> 1.75.
    # t=1.75: blocks 3 + 3 > 5: B = {r0}, P = {r1} (restart; its KV no longer counts): memory 3,
    #   tau 10/16 -> 2.375, r0 completes (latency 1.875).
    # t=2.375: r1 waits (stage 2): admitted, a prefill recomputing 1 + 2 = 3 tokens -> 3.0; that
    #   was its last iteration: latency 2.5 (no second TTFT).
    res = run([0, 0], [0.5, 0.0], policy="vllm", prefill=[1], decode=[2], capacity=5, **D16, **BLOCKS1)
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 2, 2, 2, 4]
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.0625, 1.75, 2.375]
    assert column(res, "batch_ids") == [[0, 1], [0, 1], [0], [1]]
    assert column(res, "preempted_ids") == [[], [], [1], []]
    assert column(res, "tokens") == [2, 4, 3, 3]
    assert column(res, "memory_tokens") == [2, 4, 3, 3]
    assert lat(res) == [1.875, 2.5] and lat(res, "ttft") == [0.5625, 0.5625]
    m = res["metrics"]
    assert (m["preemption_count"], m["peak_memory_tokens"], m["overflow_count"]) == (1, 4, 0)


@pytest.mark.parametrize(
    "limits,batch_ids,preempted",
    [
        # Watermark: C = 10, blocks of 2 tokens: num_blocks = 5, watermark_blocks = floor(.2 * 5) = 1.
        # t=.5: r0..r2 wait (work 2, 1 block each); pos 3 fails max_tokens_in_batch (3 * 2 > 4):
        #   prefill {r0, r1}, 4 tokens, tau 11/16 -> 1.1875. Now r0, r1 hold 2 blocks each (work 3).
        # t=1.1875: r2: used 4 + 1 > 5 - 1 (watermark): no admission; decode {r0, r1} (4 <= 5
        #   blocks), 6 tokens -> 2.0, both complete (latency 1.5).
        # t=2.0: r2 prefill (2 tokens) -> 2.5625; t=2.5625: decode (3) -> 3.1875, latency 2.6875.
        (dict(watermark=0.2), [[0, 1], [0, 1], [2], [2]], [[], [], [], []]),
        # No watermark but batch_size_cap = 2: at 1.1875 running 2 + 1 > 2: the same run.
        (dict(watermark=0.0, batch_size_cap=2), [[0, 1], [0, 1], [2], [2]], [[], [], [], []]),
        # Neither: at 1.1875 r2 is admitted (4 + 1 <= 5): prefill {r2}, memory 3 + 3 + 2 = 8,
        # tau 9/16 -> 1.75. t=1.75: decode blocks 2 + 2 + 2 > 5: {r0, r1}, r2 restarts; 6 tokens ->
        # 2.5625 (r0, r1 latency 2.0625). t=2.5625: r2 recomputes 3 tokens -> 3.1875 (2.6875).
        (dict(watermark=0.0), [[0, 1], [2], [0, 1], [2]], [[], [], [2], []]),
    ],
)
def test_vllm_admission_limits(limits: dict[str, Any], batch_ids: list, preempted: list) -> None:
    res = run(
        [0, 0, 0],
        [0.5, 0, 0],
        policy="vllm",
        prefill=[2],
        decode=[1],
        capacity=10,
        block_size=2,
        max_tokens_in_batch=4,
        **limits,
        **D16,
    )
    assert column(res, "batch_ids") == batch_ids
    assert column(res, "preempted_ids") == preempted
    assert lat(res)[2] == 2.6875 and res["metrics"]["num_completed"] == 3
    if not preempted[2]:
        assert [b["start_s"] for b in res["batches"]] == [0.5, 1.1875, 2.0, 2.5625]
        assert column(res, "tokens") == [4, 6, 2, 3] and lat(res) == [1.5, 1.5, 2.6875]
    else:
        assert column(res, "memory_tokens") == [4, 8, 6, 3] and lat(res)[:2] == [2.0625, 2.0625]


def test_sarathi_chunked_prefill_over_three_iterations() -> None:
    # l = 5, l' = 1, chunk_size = 2, one-token blocks, C = 6, one request at .5.
    # t=.5: new request, budget 2: chunk min(2, 5) = 2 (prefilled 2 < 5: no stage yet); it now
    #   holds the KV of its whole prefill: memory 5. tau 9/16 -> 1.0625.
    # t=1.0625: continuing prefill, chunk 2 (prefilled 4) -> 1.625. t=1.625: the last token,
    #   chunk 1: prefilled 5 >= 5: stage 1 (TTFT 1.625 + 8/16 - .5 = 1.625), -> 2.125.
    # t=2.125: decode, chunk = work 6 -> 2.9375, latency 2.4375.
    res = run([0], [0.5], policy="sarathi", prefill=[5], decode=[1], capacity=6, chunk_size=2, **D16, **BLOCKS1)
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 2, 2, 2, 4]
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.0625, 1.625, 2.125]
    assert column(res, "chunks") == [[2], [2], [1], [6]]
    assert column(res, "tokens") == [2, 2, 1, 6]
    assert column(res, "memory_tokens") == [5, 5, 5, 6]
    assert [b["counts"] for b in res["batches"]] == [[[1, 0]], [[1, 0]], [[1, 0]], [[0, 1]]]
    assert res["requests"][0]["chunks"] == [0, 1] and res["requests"][0]["batches"] == [2, 3]
    assert lat(res, "ttft") == [1.625] and lat(res) == [2.4375]


def test_sarathi_decodes_first_and_restarts_the_newest() -> None:
    # l = 2, l' = 2, chunk_size = 3, one-token blocks, C = 6. r0 at .5, r1 at 1.
    # t=.5: r0 new, chunk min(3, 2) = 2: whole prefill, stage 1 -> 1.0625 (TTFT .5625).
    # t=1.0625: r1 inserted. Decode r0 (chunk 3) takes one token of the budget: 3 - 1 = 2 left;
    #   r1: before 0 < 2, blocks 3 + 2 <= 6: chunk min(2, 2) = 2, stage 1. 5 tokens, memory 5,
    #   tau 12/16 -> 1.8125 (TTFT .8125).
    # t=1.8125: holders r0 (4 blocks), r1 (3): 7 > 6: keep r0, restart r1 (resident at the
    #   decision, so not a new request in this batch). 4 tokens -> 2.5, r0 completes (2.0).
    # t=2.5: r1 (stage 1, nothing prefilled) is new: chunk min(3, 3) = 3 recomputes it, stage 2
    #   -> 3.125. t=3.125: decode 4 -> 3.8125, latency 2.8125.
    res = run([0, 0], [0.5, 0.5], policy="sarathi", prefill=[2], decode=[2], capacity=6, chunk_size=3, **D16, **BLOCKS1)
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.0625, 1.8125, 2.5, 3.125]
    assert column(res, "batch_ids") == [[0], [0, 1], [0], [1], [1]]
    assert column(res, "chunks") == [[2], [3, 2], [4], [3], [4]]
    assert column(res, "preempted_ids") == [[], [], [1], [], []]
    assert column(res, "memory_tokens") == [2, 5, 4, 3, 4]
    assert lat(res) == [2.0, 2.8125] and lat(res, "ttft") == [0.5625, 0.8125]
    assert res["metrics"]["preemption_count"] == 1 and res["metrics"]["overflow_count"] == 0


def test_histogram_bins_match_the_engine_mirror() -> None:
    from jaxsched.histogram import bit_bin_host as histogram_bin

    xs = [
        0.0,
        2.0**-21,
        np.nextafter(F32(2.0**-20), F32(0)),
        2.0**-20,
        1e-3,
        0.1,
        1.0,
        1.5,
        2.0,
        11.0,
        12345.678,
        np.nextafter(F32(2.0**20), F32(0)),
        2.0**20,
        3e7,
    ]
    for b in (0, 3, 5):
        want = histogram_bin(np.asarray(xs, np.float32), b)
        assert [ref.hist_bin(F32(x), b) for x in xs] == want.tolist()
    # Midpoints (b = 5): 1 -> bin [1, 1 + 1/32): 1 + .5/32; 0 below 2^-20; 2^20 at the top.
    assert ref.hist_quantile([F32(1.0)], 0.5, 5) == 1.015625
    assert ref.hist_quantile([F32(1e-7)], 0.5, 5) == 0.0
    assert ref.hist_quantile([F32(5e6)], 0.5, 5) == 2.0**20
    assert ref.hist_quantile([], 0.5, 5) == 0.0
    # The ceil(q n)-th smallest: q = .5 of (1, 3, 100) is 3 = 2 (1 + 16/32): 2 (1 + 16.5/32).
    assert ref.hist_quantile([F32(100.0), F32(1.0), F32(3.0)], 0.5, 5) == 3.03125


# ---------------------------------------------------------------------------------------------
# Nested WAIT: segment gating and the memory check (members before paused residents)
# ---------------------------------------------------------------------------------------------
def test_nested_wait_gating_and_memory_check() -> None:
    # l = 1, l' = (1, 2): segments {0, 1} (n1 = 2) and {2} (n2 = 1). C = 4, d0 = 7/16, d1 = 1/16.
    # Types r0..r4 = 0, 1, 1, 0, 1; r0..r3 at .5, r4 at 100 (N = 5: no draining before 100).
    # t=.5: S_0 = 4 >= 2, S_2 = 0 < 1: i* = 1. B0 = r0, r1 (stage 0, rank < 2). Memory 2.
    #   tau 9/16 -> 1.0625 (TTFT .5625).
    # t=1.0625: i* = 1; B0 = r2, r3 (stage 0), r0, r1 (stage 1). Contributors 2+2+1+1 = 6 > 4:
    #   by id r0 (2), r1 (4), r2 would make 5: r2, r3 dropped (non-resident: they just leave
    #   B). B = r0, r1: 4 tokens,
    #   tau 11/16 -> 1.75. r0 (l'=1) completes (latency 1.25); r1 at stage 2.
    # t=1.75: S_0 = 2, S_2 = 1: i* = 2. B0 = r1, r2, r3; 3 + 1 + 1 = 5 > 4: drop r3. B = r1, r2:
    #   tau 11/16 -> 2.4375. r1 completes (1.9375); r2 at stage 1 (TTFT 1.9375).
    # t=2.4375: S_0 = 1 < 2: i* = 0, nothing runs; resident r2 (2) fits. Idle to 100.
    # t=100: r4 inserted, N reached: draining, i* = L. B0 = r3, r4 (stage 0), r2 (stage 1):
    #   2 + 1 + 1 = 4. tau 11/16 -> 100.6875 (TTFT r3 100.1875, r4 .6875).
    # t=100.6875: B0 = r2 (stage 2), r3, r4 (stage 1): 3 + 2 + 2 = 7 > 4: keep r2 (3); r3, r4
    #   are dropped, both resident: P = {r3, r4}. B = r2: tau 10/16 -> 101.3125, r2 completes (100.8125).
    # t=101.3125: r3, r4 recompute at stage 1 (2 + 2 = 4): tau 11/16 -> 102; r3 completes (101.5).
    # t=102: r4 stage 2 (3): tau 10/16 -> 102.625; latency 2.625. Then done.
    res = run(
        [0, 1, 1, 0, 1],
        [0.5, 0, 0, 0, 99.5],
        policy="nested_wait",
        thresholds=[2, 1],
        prefill=[1, 1],
        decode=[1, 2],
        d0=7 / 16,
        d1=1 / 16,
        capacity=4,
    )
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 2, 2, 3, 2, 2, 2, 2, 4]
    assert [b["start_s"] for b in res["batches"]] == [0.5, 1.0625, 1.75, 100.0, 100.6875, 101.3125, 102.0]
    assert column(res, "batch_ids") == [[0, 1], [0, 1], [1, 2], [2, 3, 4], [2], [3, 4], [4]]
    assert column(res, "preempted_ids") == [[], [], [], [], [3, 4], [], []]
    assert column(res, "memory_tokens") == [2, 4, 4, 4, 3, 4, 3]
    assert lat(res) == [1.25, 1.9375, 100.8125, 101.5, 2.625]
    assert lat(res, "ttft") == [0.5625, 0.5625, 1.9375, 100.1875, 0.6875]
    m = res["metrics"]
    assert (m["preemption_count"], m["peak_memory_tokens"], m["overflow_count"]) == (2, 4, 0)
    assert m["num_batches"] == 7 and m["stalled"] == 0


def test_nested_wait_drops_paused_residents_before_members() -> None:
    # l = 1, l' = (1, 3), segments {0, 1} (n1 = 1) and {2, 3} (n2 = 2); C = 4; d0 = 7/16,
    # d1 = 1/16. r0 (type 1) at .5, r1 (type 1) at 2, r2 (type 0) at 3, r3 (type 0) at 100 (N = 4).
    # t=.5: i* = 1 (S_2 = 0 < 2): r0 prefill, tau 8/16 -> 1. t=1: S_0 = 0: idle to 2.
    # t=2: B = r0 (s1: 2), r1 (s0: 1); tau 10/16 -> 2.625. r0 at stage 2 (KV 3), r1 at 1 (KV 2).
    # t=2.625: S_0 = 0, i* = 0: B empty; the residents (5 > C) would be preempted, but without a
    #   batch P is discarded: idle to 3.
    # t=3: S_0 = 1, S_2 = 1 < 2: i* = 1. B0 = r1 (s1: 2), r2 (s0: 1); r0 is a paused resident
    #   (3). Order r1, r2, r0: 2 + 1 = 3, + 3 > 4: r0 is preempted, B = r1, r2 (tau 10/16 ->
    #   3.625). (Dropping newest first would have emptied the batch instead.) Idle to 100.
    # t=100: r3 arrives, draining (i* = L). B0 by id: r0 (s2, recompute: 3), r1 (s2: 3),
    #   r2 (s1: 2), r3 (s0: 1): keep r0; r1, r2 preempted, r3 leaves B. tau 10/16 -> 100.625.
    # t=100.625: r0 (s3: 4) fills C: tau 11/16 -> 101.3125, r0 completes (100.8125).
    # t=101.3125: r1 (s2: 3), then r2 would make 5: B = r1, tau 10/16 -> 101.9375.
    # t=101.9375: r1 (s3: 4): tau 11/16 -> 102.625, latency 100.625.
    # t=102.625: r2 (s1: 2) + r3 (s0: 1): tau 10/16 -> 103.25; r2 completes (100.25).
    # t=103.25: r3 (s1: 2): tau 9/16 -> 103.8125, latency 3.8125.
    res = run(
        [1, 1, 0, 0],
        [0.5, 1.5, 1.0, 97.0],
        policy="nested_wait",
        thresholds=[1, 2],
        prefill=[1, 1],
        decode=[1, 3],
        d0=7 / 16,
        d1=1 / 16,
        capacity=4,
    )
    assert [b["start_s"] for b in res["batches"]] == [
        0.5,
        2.0,
        3.0,
        100.0,
        100.625,
        101.3125,
        101.9375,
        102.625,
        103.25,
    ]
    assert column(res, "batch_ids") == [[0], [0, 1], [1, 2], [0], [0], [1], [1], [2, 3], [3]]
    assert column(res, "preempted_ids") == [[], [], [0], [1, 2], [], [], [], [], []]
    assert column(res, "completed") == [0, 0, 0, 0, 1, 0, 1, 1, 1]
    assert lat(res) == [100.8125, 100.625, 100.25, 3.8125]
    assert lat(res, "ttft") == [0.5, 0.625, 0.625, 3.25]
    assert res["metrics"]["preemption_count"] == 3 and res["metrics"]["peak_memory_tokens"] == 4


def test_nested_wait_merged_segments() -> None:
    # l' = (1, 2, 3) merged into segments {0..2} (n1 = 1) and {3} (n2 = 1): bounds (2, 3).
    # One type-2 request (l'=3) alone with N = 1: draining from the start, i* = L: it runs its
    # 4 iterations back to back (tokens 1, 2, 3, 4 with l = 1).
    res = ref.simulate(
        prefill=[1, 1, 1],
        decode=[1, 2, 3],
        policy="nested_wait",
        rates=[1, 1, 1],
        d0=0.5,
        d1=0.25,
        capacity=10,
        thresholds=[1, 1],
        segment_bounds=[2, 3],
        gaps=[1.0],
        type_u=[0.9],
        num_requests=1,
    )
    assert column(res, "tokens") == [1, 2, 3, 4]
    assert lat(res) == [0.75 + 1.0 + 1.25 + 1.5]
    assert ref.stage_segment(0, (2, 3)) == 0 and ref.stage_segment(2, (2, 3)) == 0
    assert ref.stage_segment(3, (2, 3)) == 1


# ---------------------------------------------------------------------------------------------
# End of run, horizon, table overflow, insertion limit
# ---------------------------------------------------------------------------------------------
SMALL = dict(prefill=[1], decode=[1], d0=1.0, d1=0.5, capacity=6)


def test_force_clear_drops_what_is_left() -> None:
    # WAIT n = 2 (M^pi = 2 * (1 + 2) = 6), arrivals .5, .5, 5 (N = 3).
    # t=.5: r0, r1 prefill (2 tokens, tau 2 -> 2.5). t=2.5: stage-0 queue empty: idle to 5.
    # t=5: r2 inserted; force_clear: 1 < 2, nothing fires; N arrived: all three dropped (r0, r1
    # are still at stage 1).
    res = run([0, 0, 0], [0.5, 0.0, 4.5], policy="wait", thresholds=[2], end_mode="force_clear", **SMALL)
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 3, 4]
    m = res["metrics"]
    assert (m["num_arrived"], m["num_completed"], m["num_dropped"], m["num_in_system"]) == (3, 0, 3, 0)
    assert m["throughput_tokens_per_s"] == 0.0 and m["end_time_s"] == 5.0
    # Drain: at t=5 every type with requests fires: r2 (1) + r0, r1 (2 each) = 5 tokens, tau 3.5
    # -> 8.5 (r0, r1 latency 8); then r2 at stage 1 (2 tokens, tau 2) -> 10.5, latency 5.5.
    res = run([0, 0, 0], [0.5, 0.0, 4.5], policy="wait", thresholds=[2], **SMALL)
    assert [b["start_s"] for b in res["batches"]] == [0.5, 5.0, 8.5]
    assert column(res, "tokens") == [2, 5, 2]
    assert lat(res) == [8.0, 8.0, 5.5]
    assert res["metrics"]["num_dropped"] == 0 and res["metrics"]["num_completed"] == 3


def test_horizon_run() -> None:
    # No N, T = 3.5; candidates every 1 s (at 1, 2, 3; the one at 4 > T exhausts the stream).
    # WAIT n = 1, d0 = .25, d1 = .125. t=1: r0 prefill (tau .375 -> 1.375); paused, idle to 2.
    # t=2: r1 s0 + r0 s1 (3 tokens, tau .625 -> 2.625), r0 completes (1.625); idle to 3.
    # t=3: r2 s0 + r1 s1 -> 3.625, r1 completes after T (not counted in the throughput).
    # t=3.625 >= T: done. Throughput = 2 tokens (r0) / T.
    res = ref.simulate(
        prefill=[1],
        decode=[1],
        policy="wait",
        thresholds=[1],
        rates=[1.0],
        d0=0.25,
        d1=0.125,
        capacity=3,
        gaps=lambda i: 1.0,
        type_u=lambda i: 0.5,
        horizon_s=3.5,
    )
    assert [row["kind"] for row in res["epochs"]] == [3, 2, 3, 2, 3, 2, 4]
    assert [b["start_s"] for b in res["batches"]] == [1.0, 2.0, 3.0]
    m = res["metrics"]
    assert (m["num_arrived"], m["num_completed"], m["num_in_system"]) == (3, 2, 1)
    assert m["throughput_tokens_per_s"] == 2 / 3.5 and m["decode_throughput_tokens_per_s"] == 1 / 3.5
    assert m["latency_mean_s"] == 1.625 and m["end_time_s"] == 3.625 and m["done"] == 1
    # The horizon is checked before insertion: an epoch at t = T ends the run.
    res = ref.simulate(
        prefill=[1],
        decode=[1],
        policy="fcfs",
        rates=[1.0],
        d0=0.25,
        d1=0.125,
        capacity=3,
        gaps=lambda i: 1.0,
        type_u=lambda i: 0.5,
        horizon_s=2.0,
    )
    assert res["epochs"][-1]["kind"] == 4 and float(res["epochs"][-1]["t_hi"]) == 2.0
    assert res["metrics"]["num_arrived"] == 1


def test_insertion_limit_only_changes_epoch_count() -> None:
    # Five arrivals due at .5 with A = 2: epochs insert 2, 2 (kind 1), then 1 and the batch.
    base = dict(prefill=[1, 1], decode=[1, 2], policy="fcfs", d0=7 / 16, d1=1 / 16, capacity=9)
    r8 = run([1, 0, 1, 1, 0], [0.5, 0, 0, 0, 0], **base)
    r2 = run([1, 0, 1, 1, 0], [0.5, 0, 0, 0, 0], arrivals_per_step=2, **base)
    assert [row["kind"] for row in r2["epochs"]][:4] == [3, 1, 1, 2]
    assert column(r2, "inserted", (1, 2))[:3] == [2, 2, 1]
    for key in ("start_s", "counts", "tokens", "memory_tokens", "batch_ids"):
        assert [b[key] for b in r2["batches"]] == [b[key] for b in r8["batches"]]
    m2, m8 = dict(r2["metrics"]), dict(r8["metrics"])
    assert m2.pop("num_epochs") == m8.pop("num_epochs") + 2
    assert m2 == m8


def test_table_overflow_is_counted() -> None:
    # Q = 2, three arrivals at .5: the third (id 2, slot 0) finds request 0 in its slot.
    res = run([0, 0, 0], [0.5, 0, 0], policy="fcfs", table_size=2, **SMALL)
    m = res["metrics"]
    assert m["table_overflow"] == 1 and m["num_completed"] == 2 and m["num_arrived"] == 3
    assert [res["requests"][i]["inserted"] for i in range(3)] == [True, True, False]
    assert column(res, "inserted", (2,))[0] == 2


def test_ring_table_loses_an_arrival_whose_slot_is_held() -> None:
    # The table is a ring of Q = 2 slots: request id sits in slot id mod 2. fcfs, l = (1, 1),
    # l' = (1, 5), d0 = 1, d1 = .5, C = 20. r0 (type 1) and r1 (type 0) at .5, r2 and r3 (type 0)
    # at 3. t=.5: prefills r0, r1 (2 tokens, tau 2 -> 2.5). t=2.5: r0, r1 at stage 1 (2 + 2,
    # tau 3 -> 5.5); r1 completes and frees slot 1. t=5.5: r2 (slot 0) finds r0 (id 2 - Q) still
    # there: lost, although slot 1 is empty; r3 (slot 1) is inserted.
    res = run(
        [1, 0, 0, 0],
        [0.5, 0, 2.5, 0],
        policy="fcfs",
        prefill=[1, 1],
        decode=[1, 5],
        d0=1.0,
        d1=0.5,
        capacity=20,
        table_size=2,
    )
    assert [res["requests"][i]["inserted"] for i in range(4)] == [True, True, False, True]
    assert column(res, "inserted", (1, 2, 3, 4)) == [0, 2, 0, 1] + [0] * (len(res["epochs"]) - 4)
    assert column(res, "batch_ids")[:3] == [[0, 1], [0, 1], [0, 3]]
    m = res["metrics"]
    assert (m["table_overflow"], m["num_arrived"], m["num_completed"]) == (1, 4, 3)


# ---------------------------------------------------------------------------------------------
# Invariants on random runs of the reference
# ---------------------------------------------------------------------------------------------
def random_case(rnd: random.Random, policy: str) -> dict[str, Any]:
    """A small random config (m <= 3) with exponential gaps and random type draws."""
    m = rnd.randint(1, 3)
    if policy == "nested_wait":
        prefill = [rnd.randint(1, 4)] * m
        decode = sorted(rnd.sample(range(1, 7), m))
        L = rnd.randint(1, m)
        bounds = sorted(rnd.sample(decode[:-1], L - 1)) + [decode[-1]]
    else:
        prefill = [rnd.randint(1, 4) for _ in range(m)]
        decode = [rnd.randint(1, 5) for _ in range(m)]
        bounds = None
    need = [(d + 1) * p + d * (d + 1) // 2 for p, d in zip(prefill, decode)]
    if policy == "wait":
        thresholds = [rnd.randint(1, 3) for _ in range(m)]
        capacity = sum(n * w for n, w in zip(thresholds, need)) + rnd.randint(0, 5)
    elif policy == "nested_wait":
        thresholds = sorted((rnd.randint(1, 3) for _ in bounds), reverse=True)
        capacity = max(p + d for p, d in zip(prefill, decode)) + rnd.randint(0, 20)
    else:
        thresholds = None
        capacity = max(p + d for p, d in zip(prefill, decode)) + rnd.randint(0, 20)
    limits: dict[str, Any] = {}
    if policy in ("vllm", "sarathi"):
        # Valid limits (make_params): the longest request's blocks fit above the watermark, and
        # (vllm) max_tokens_in_batch >= max_j (l_j + l'_j).
        longest = max(p + d for p, d in zip(prefill, decode))
        block = rnd.randint(1, 4)
        watermark = rnd.choice([0.0, 0.01, 0.1])
        capacity = longest + rnd.randint(0, 20)
        while capacity // block - math.floor(watermark * (capacity // block)) < -(-longest // block):
            capacity += 1
        limits = dict(block_size=block, watermark=watermark, batch_size_cap=rnd.randint(1, 6))
        if policy == "vllm":
            limits["max_tokens_in_batch"] = longest + rnd.randint(0, 12)
        else:
            limits["chunk_size"] = rnd.randint(1, 10)
    n = rnd.randint(1, 25)
    gaps = [F32(rnd.expovariate(2.0)) for _ in range(4 * n + 10)]
    type_u = [F32(rnd.randrange(2**24) / 2**24) for _ in range(4 * n + 10)]
    rates = [rnd.uniform(0.2, 2.0) for _ in range(m)]
    return dict(
        prefill=prefill,
        decode=decode,
        policy=policy,
        rates=rates,
        thresholds=thresholds,
        capacity=capacity,
        segment_bounds=bounds,
        d0=F32(rnd.uniform(0.05, 0.5)),
        d1=F32(rnd.uniform(0.0, 0.05)),
        gaps=gaps,
        type_u=type_u,
        num_requests=n,
        end_mode=rnd.choice(ref.END_MODES),
        table_size=rnd.randint(3, 30),
        arrivals_per_step=rnd.randint(1, 4),
        **limits,
    )


def check_invariants(case: dict[str, Any], res: dict[str, Any]) -> None:
    m_ = res["metrics"]
    # Conservation.
    assert m_["num_arrived"] == (m_["num_completed"] + m_["num_in_system"] + m_["num_dropped"] + m_["table_overflow"])
    assert m_["done"] == 1 and m_["stalled"] == 0
    if case["end_mode"] == "drain":
        assert m_["num_in_system"] == 0 and m_["num_dropped"] == 0
    # Clock: batches advance t by tau exactly; idle jumps never go back; busy is the sum of tau.
    busy = ref.ZERO
    rows = res["epochs"]
    for row, nxt in zip(rows, rows[1:]):
        t = ref.DF(row["t_hi"], row["t_lo"])
        t_next = ref.DF(nxt["t_hi"], nxt["t_lo"])
        if row["kind"] == 2:
            tau = ref.DF(row["tau_hi"], row["tau_lo"])
            assert ref.add(t, tau) == t_next
            assert tau == ref.iteration_time(row["tokens"], case["d0"], case["d1"])
            busy = ref.add(busy, tau)
            assert sum(map(sum, row["counts"])) == len(row["batch_ids"]) > 0
        elif row["kind"] == 1:
            assert t_next == t
        else:
            assert ref.le(t, t_next)
    assert m_["busy_s"] == ref.to_float64(busy)
    assert m_["num_batches"] == len(res["batches"])
    assert m_["peak_memory_tokens"] == max([b["memory_tokens"] for b in res["batches"]], default=0)
    # Per request: l'_j + 1 processings; FIFO (a request is never processed for the k-th time
    # before an earlier one of its group: its type under WAIT, any type otherwise). Not sarathi:
    # decode-first lets newer residents decode while an older restarted request recomputes in
    # chunks, and a newer request may be admitted in the epoch an older holder is restarted.
    reqs = res["requests"]
    for i, r in reqs.items():
        d = case["decode"][r["type"]]
        if r["latency"] is not None:
            assert len(r["batches"]) == d + 1 and r["latency"] >= r["ttft"] > 0
        for i2 in range(i):
            r2 = reqs[i2]  # earlier id
            if case["policy"] == "wait" and r2["type"] != r["type"]:
                continue
            if not r2["inserted"] or not r["inserted"] or case["policy"] == "sarathi":
                continue
            for k, b in enumerate(r["batches"]):
                if k < len(r2["batches"]):
                    assert r2["batches"][k] <= b
                else:  # r2 never got its k-th iteration: it must have left (done or dropped)
                    assert r2["latency"] is not None or m_["num_dropped"] > 0
    if case["policy"] == "wait":
        n = case["thresholds"]
        bound = sum(nj * ((d + 1) * p + d * (d + 1) // 2) for nj, p, d in zip(n, case["prefill"], case["decode"]))
        for b in res["batches"]:
            assert all(c <= n[j] for j, row in enumerate(b["counts"]) for c in row)
            assert b["memory_tokens"] <= bound and b["preempted"] == 0
        assert m_["overflow_count"] == 0
    if case["policy"] == "fcfs":
        for b in res["batches"]:
            assert b["memory_tokens"] == b["tokens"] <= case["capacity"]
        assert m_["overflow_count"] == 0
    if case["policy"] in ("nested_wait", "vllm", "sarathi"):
        assert all(b["memory_tokens"] <= case["capacity"] for b in res["batches"])
        assert m_["overflow_count"] == 0
    if case["policy"] in ("vllm", "sarathi"):
        # Admission keeps the holders (running, partial) plus the admitted within the cap, and
        # only they are ever processed.
        for b in res["batches"]:
            assert len(b["batch_ids"]) <= case["batch_size_cap"]
            assert b["tokens"] == sum(b["chunks"])


@pytest.mark.parametrize("policy", ref.POLICIES)
def test_invariants_on_random_runs(policy: str) -> None:
    rnd = random.Random(hash(policy) % 1000 + 17)
    for _ in range(40):
        case = random_case(rnd, policy)
        check_invariants(case, ref.simulate(**case))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ref.POLICIES)
def test_invariants_on_random_runs_slow(policy: str) -> None:
    rnd = random.Random(4242 + len(policy))
    for _ in range(600):
        case = random_case(rnd, policy)
        check_invariants(case, ref.simulate(**case))


def test_empirical_quantile() -> None:
    assert ref.empirical_quantile([], 0.5) == 0.0
    assert ref.empirical_quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert ref.empirical_quantile(list(range(100)), 0.99) == 98
    assert math.isclose(ref.empirical_quantile([5.0], 0.99), 5.0)
