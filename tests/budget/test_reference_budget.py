"""Hand-checked tests of the budget reference simulator (tests/reference/budget.py).

Most cases use c = 1.0, a = 0.0 so that every batch lasts exactly 1 s and times are integers
(plus the exact arrival times), which makes the expected trajectories easy to derive by hand
from docs/budget-semantics.md.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.reference.budget import simulate
from tests.reference.kv import DF, from_float64, iteration_time, to_float64

UNIT = dict(c=1.0, a=0.0, b0=0, horizon=1000.0)


def members(res):
    return [b["members"] for b in res["batches"]]


def starts(res):
    return [to_float64(b["t0"]) for b in res["batches"]]


def f(x):
    return None if x is None else to_float64(x)


def non_wc(res, budget):
    """Indices of the batches with load != min(b, available)."""
    return [k for k, b in enumerate(res["batches"]) if b["load"] != min(budget, b["available"])]


# --------------------------------------------------------------------------------------------
# One tiny hand-computed case per policy
# --------------------------------------------------------------------------------------------
def test_sarathi_hand():
    reqs = [(0.0, 0, 5, 2), (0.0, 0, 6, 1), (1.5, 0, 10, 1)]
    res = simulate(reqs, "sarathi", budget=8, **UNIT)
    assert members(res) == [
        {0: (5, 0), 1: (3, 0)},
        {0: (0, 1), 1: (3, 0)},
        {0: (0, 1), 1: (0, 1), 2: (6, 0)},  # decodes first, then the new prompt chunked
        {2: (4, 0)},
        {2: (0, 1)},
    ]
    assert starts(res) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [b["load"] for b in res["batches"]] == [8, 4, 8, 4, 1]
    assert [b["available"] for b in res["batches"]] == [11, 4, 12, 4, 1]
    r = res["requests"]
    assert [f(x["first_token"]) for x in r] == [1.0, 2.0, 4.0]
    assert [f(x["departure"]) for x in r] == [3.0, 3.0, 5.0]
    assert [[float(g) for g in x["tbt"]] for x in r] == [[1.0, 1.0], [1.0], [1.0]]
    assert res["metrics"]["num_batches"] == 5
    assert res["metrics"]["partial_batch_fraction"] == 0.0


def test_orca_hand_gate():
    reqs = [(0.0, 0, 5, 2), (0.0, 0, 6, 1), (1.5, 0, 10, 1)]
    res = simulate(reqs, "orca", budget=8, **UNIT)
    assert members(res) == [
        {0: (5, 0), 1: (3, 0)},
        {1: (3, 0), 0: (0, 1)},  # every prefill fully loaded: decodes join
        {2: (8, 0)},  # r2 not fully loaded: the gate keeps the decodes out
        {2: (2, 0), 0: (0, 1), 1: (0, 1)},
        {2: (0, 1)},
    ]
    r = res["requests"]
    assert [f(x["first_token"]) for x in r] == [1.0, 2.0, 4.0]
    assert [f(x["departure"]) for x in r] == [4.0, 4.0, 5.0]
    assert [float(g) for g in r[0]["tbt"]] == [1.0, 2.0]
    assert [float(g) for g in r[1]["tbt"]] == [2.0]
    assert non_wc(res, 8) == []


def test_vllm_hand():
    reqs = [(0.0, 0, 5, 2), (0.0, 0, 6, 1), (1.5, 0, 3, 1)]
    res = simulate(reqs, "vllm", budget=8, prefill_cap=8, **UNIT)
    assert members(res) == [
        {0: (5, 0)},  # 5 + 6 > cap: whole prompts only, stop at r1
        {1: (6, 0)},  # prefill first, r0 waits to decode
        {2: (3, 0)},
        {0: (0, 1), 1: (0, 1), 2: (0, 1)},
        {0: (0, 1)},
    ]
    assert [b["partial"] for b in res["batches"]] == [True, False, False, False, False]
    assert non_wc(res, 8) == [0, 1, 2]
    r = res["requests"]
    assert [f(x["departure"]) for x in r] == [5.0, 4.0, 4.0]
    assert [float(g) for g in r[0]["tbt"]] == [3.0, 1.0]
    assert res["metrics"]["partial_batch_fraction"] == pytest.approx(1 / 5)
    # Whole prompts stop at the first that does not fit (r2 would fit, it is not taken).
    res = simulate([(0.0, 0, 5, 1), (0.0, 0, 6, 1), (0.0, 0, 2, 1)], "vllm", budget=8, prefill_cap=8, **UNIT)
    assert members(res)[:2] == [{0: (5, 0)}, {1: (6, 0), 2: (2, 0)}]
    # ... and at M requests.
    res = simulate([(0.0, 0, 1, 1)] * 3, "ft", budget=8, max_requests=2, prefill_cap=8, **UNIT)
    assert members(res) == [{0: (1, 0), 1: (1, 0)}, {0: (0, 1), 1: (0, 1)}, {2: (1, 0)}, {2: (0, 1)}]


def test_ft_hand():
    reqs = [(0.0, 0, 5, 2), (0.0, 0, 6, 1), (1.5, 0, 3, 1)]
    res = simulate(reqs, "ft", budget=8, prefill_cap=8, **UNIT)
    assert members(res) == [
        {0: (5, 0)},
        {0: (0, 1)},  # decode first: r1's prompt is blocked
        {0: (0, 1)},
        {1: (6, 0)},  # r1 + r2 = 9 > cap
        {1: (0, 1)},
        {2: (3, 0)},
        {2: (0, 1)},
    ]
    assert starts(res) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert [b["partial"] for b in res["batches"]] == [True, False, True, True, False, False, False]
    r = res["requests"]
    assert [f(x["departure"]) for x in r] == [3.0, 5.0, 7.0]
    assert float(r[2]["tbt"][0]) == 1.0


def test_wc_srpt_and_caps():
    reqs = [(0.0, 0, 5, 1), (0.0, 0, 6, 1), (0.0, 0, 2, 1)]
    res = simulate(reqs, "wc", budget=8, inner_order="srpt", **UNIT)
    assert members(res) == [
        {2: (2, 0), 0: (5, 0), 1: (1, 0)},  # shortest remaining prompt first
        {0: (0, 1), 2: (0, 1), 1: (5, 0)},
        {1: (0, 1)},
    ]
    res = simulate(reqs, "wc", budget=8, inner_order="srpt", K_p=2, **UNIT)
    assert members(res)[0] == {0: (5, 0), 1: (3, 0)}  # r2 is not among the 2 oldest
    res = simulate(reqs, "wc", budget=8, inner_order="srpt", K_d=1, **UNIT)
    assert members(res) == [
        {2: (2, 0), 0: (5, 0), 1: (1, 0)},
        {0: (0, 1), 1: (5, 0)},  # only the oldest decoding request
        {1: (0, 1)},  # K_d = 1 again: r2 waits although budget is left
        {2: (0, 1)},
    ]


def test_wc_prefill_first_and_M():
    reqs = [(0.0, 0, 5, 2), (0.0, 0, 6, 1)]
    res = simulate(reqs, "wc", budget=8, phase_first="prefill", K_p=1, **UNIT)
    assert members(res) == [{0: (5, 0)}, {1: (6, 0), 0: (0, 1)}, {0: (0, 1), 1: (0, 1)}]
    assert non_wc(res, 8) == [0]  # K_p = 1 < b breaks work conservation
    res = simulate(reqs, "wc", budget=8, max_requests=1, **UNIT)
    assert members(res) == [{0: (5, 0)}, {0: (0, 1)}, {0: (0, 1)}, {1: (6, 0)}, {1: (0, 1)}]


def test_priority_hand():
    reqs = [(0.0, 0, 3, 1), (0.0, 1, 4, 2), (0.0, 1, 3, 1)]
    res = simulate(reqs, "priority", budget=6, type_order=(1, 0), **UNIT)
    assert members(res) == [
        {1: (4, 0), 2: (2, 0)},
        {1: (0, 1), 2: (1, 0), 0: (3, 0)},
        {1: (0, 1), 2: (0, 1), 0: (0, 1)},
    ]
    res = simulate(reqs, "priority", budget=6, **UNIT)  # type_order (0, 1)
    assert members(res) == [
        {0: (3, 0), 1: (3, 0)},
        {0: (0, 1), 1: (1, 0), 2: (3, 0)},
        {1: (0, 1), 2: (0, 1)},
        {1: (0, 1)},
    ]
    assert [f(x["departure"]) for x in res["requests"]] == [2.0, 4.0, 3.0]


# --------------------------------------------------------------------------------------------
# Time: batch durations, attention terms, arrivals, idle, window metrics, snapshots
# --------------------------------------------------------------------------------------------
def test_batch_time_affine():
    reqs = [(0.0, 0, 100, 1), (0.0, 0, 30, 1)]
    res = simulate(reqs, "sarathi", budget=512, c=0.0455, a=0.00018, b0=64, horizon=10.0)
    b = res["batches"]
    assert [x["load"] for x in b] == [130, 2]
    assert b[0]["tau"] == iteration_time(66, np.float32(0.0455), np.float32(0.00018))
    assert to_float64(b[0]["tau"]) == pytest.approx(0.0455 + 0.00018 * 66, rel=1e-6)
    assert b[1]["tau"] == DF(np.float32(0.0455), np.float32(0.0))  # load <= b0: tau = c
    assert b[1]["t0"] == b[0]["tau"]
    lat = res["requests"][0]["departure"]
    assert to_float64(lat) == pytest.approx(2 * 0.0455 + 0.00018 * 66, rel=1e-6)


@pytest.mark.parametrize("prefix, second", [(False, 2.0), (True, 2.25)])
def test_attention_terms(prefix, second):
    reqs = [(0.0, 0, 6, 3), (0.0, 0, 4, 2)]
    res = simulate(
        reqs, "sarathi", budget=8, attention=True, attention_prefix=prefix, alpha=2.0**-4, beta=2.0**-3, **UNIT
    )
    b = res["batches"]
    assert b[0]["members"] == {0: (6, 0), 1: (2, 0)}
    # S1 = 36 + 4 = 40, S2 = 0, S3 = 0 (nothing loaded before).
    assert to_float64(b[0]["tau"]) == 1.0 + 40 / 16
    assert b[1]["members"] == {0: (0, 1), 1: (2, 0)}
    # S1 = 4, S2 = (6 + 0) * 1 = 6, S3 = 2 * 2 = 4.
    assert to_float64(b[1]["tau"]) == second
    # Third batch: decode r0 (P + D = 7) and r1 (P + D = 4): S2 = 11.
    assert b[2]["members"] == {0: (0, 1), 1: (0, 1)}
    assert to_float64(b[2]["tau"]) == 1.0 + 11 / 8


def test_arrivals_join_after_decision_and_idle_jump():
    reqs = [(0.0, 0, 4, 2), (0.5, 0, 2, 1), (10.1, 0, 1, 1)]
    res = simulate(reqs, "sarathi", budget=8, c=1.0, a=0.0, b0=0, horizon=20.0, snapshots=4)
    assert members(res) == [
        {0: (4, 0)},  # r1 arrives at 0.5, during the batch: not in it
        {0: (0, 1), 1: (2, 0)},
        {0: (0, 1), 1: (0, 1)},
        {2: (1, 0)},
        {2: (0, 1)},
    ]
    b = res["batches"]
    assert b[0]["available"] == 4 and b[0]["in_system"] == 1
    assert b[3]["t0"] == from_float64(10.1)  # the clock jumps exactly to the arrival
    assert b[3]["t0"].lo != 0
    r = res["requests"]
    assert float(r[1]["tbt"][0]) == 1.0
    assert r[1]["departure"] == from_float64(3.0)
    m = res["metrics"]
    t10 = to_float64(from_float64(10.1))
    # Idle: the jump 3 -> 10.1, and from the early end (12.1, empty) to the horizon.
    assert m["idle_fraction"] == pytest.approx((t10 - 3.0 + 20.0 - (t10 + 2.0)) / 20)
    assert m["throughput_tokens_per_s"] == pytest.approx(11 / 20)
    assert m["throughput_requests_per_s"] == pytest.approx(3 / 20)
    assert m["mean_requests_in_system"] == pytest.approx((1 + 2 + 2 + 1 + 1) / 20)
    assert m["mean_tokens_in_system"] == pytest.approx((2 + 2 + 0 + 1 + 0) / 20)
    assert m["ttft_mean_s"] == pytest.approx((1.0 + 1.5 + (t10 + 1 - 10.1)) / 3, rel=1e-6)
    assert m["latency_mean_s"] == pytest.approx((3.0 + 2.5 + 2.0) / 3, rel=1e-6)
    assert m["tbt_mean_s"] == pytest.approx(1.0)
    assert m["requests_end"] == 0 and m["tokens_end"] == 0
    # Snapshots on g = 0, 5, 10, 15: the first deciding epoch at or after each; the run ends
    # at t = 12.1 with an empty system, so the last one is (15, 0, 0).
    s = res["snapshots"]
    assert s[0] == (0.0, 1, 6)
    assert s[1] == (t10, 1, 2) and s[2] == (t10, 1, 2)
    assert s[3] == (15.0, 0, 0)


def test_window_clipping_and_horizon_end():
    reqs = [(0.0, 0, 4, 2), (0.5, 0, 2, 1), (10.25, 0, 1, 2)]
    res = simulate(reqs, "sarathi", budget=8, c=1.0, a=0.0, b0=0, horizon=11.0, burn_in=2.5, snapshots=2)
    # The run ends at the first epoch at or after the horizon: 11.25, r2 still decoding.
    assert starts(res) == [0.0, 1.0, 2.0, 10.25]
    m = res["metrics"]
    W = 8.5
    assert m["requests_end"] == 1 and m["tokens_end"] == 2
    assert m["num_batches"] == 4
    assert m["throughput_tokens_per_s"] == pytest.approx(9 / W)  # r0, r1 leave at 3
    assert m["mean_requests_in_system"] == pytest.approx((2 * 0.5 + 1 * 0.75) / W)
    assert m["mean_tokens_in_system"] == pytest.approx((0 * 0.5 + 2 * 0.75) / W)
    assert m["idle_fraction"] == pytest.approx(7.25 / W)
    assert m["tbt_mean_s"] == pytest.approx(1.0)  # the two decode tokens at t = 3
    assert m["ttft_mean_s"] == pytest.approx((1.0 + 1.5) / 2)
    assert m["latency_mean_s"] == pytest.approx((3.0 + 2.5) / 2)
    # grid 2.5, 6.75: the idle jump at 3 (empty system) is the first deciding epoch after 2.5,
    # the batch epoch at 10.25 the first after 6.75.
    assert res["snapshots"] == [(3.0, 0, 0), (10.25, 1, 3)]
    assert m["request_growth_per_s"] == pytest.approx(1 / 7.25)
    assert m["token_growth_per_s"] == pytest.approx(3 / 7.25)


def test_df_arrivals_accepted():
    t = from_float64(0.3)
    res = simulate([(t, 0, 2, 1)], "sarathi", budget=8, **UNIT)
    assert res["batches"][0]["t0"] == t


def test_stuck_policy_raises():
    with pytest.raises(RuntimeError):
        simulate([(0.0, 0, 9, 1)], "vllm", budget=8, prefill_cap=8, **UNIT)


# --------------------------------------------------------------------------------------------
# Buffer (§4)
# --------------------------------------------------------------------------------------------
def test_rejection_three_simultaneous():
    reqs = [(0.0, 0, 1, 1)] * 3 + [(0.5, 0, 1, 1), (1.5, 0, 1, 1)]
    res = simulate(reqs, "sarathi", budget=8, table_size=2, **UNIT)
    r = res["requests"]
    assert [x["rejected"] for x in r] == [False, False, True, True, False]
    assert [x["entry"] for x in r] == [0, 1, None, None, 2]
    assert r[2]["departure"] is None and r[2]["first_token"] is None
    assert members(res)[0] == {0: (1, 0), 1: (1, 0)}
    assert res["metrics"]["num_rejected"] == 2 and res["metrics"]["overflowed"] == 1
    ok = simulate(reqs[:3], "sarathi", budget=8, table_size=3, **UNIT)
    assert ok["metrics"]["overflowed"] == 0 and ok["metrics"]["num_rejected"] == 0


def test_rejection_slot_held_by_old_request():
    # Only one request is present at t = 3, but it holds the slot of entry 2 (= 0 mod 2).
    reqs = [(0.0, 0, 1, 5), (0.0, 0, 1, 1), (2.5, 0, 1, 1)]
    res = simulate(reqs, "sarathi", budget=8, table_size=2, **UNIT)
    assert [x["rejected"] for x in res["requests"]] == [False, False, True]
    assert res["batches"][3]["in_system"] == 1


# --------------------------------------------------------------------------------------------
# Work conservation and policy identities on random small cases
# --------------------------------------------------------------------------------------------
def random_case(rng: random.Random, m: int = 1):
    n = rng.randint(2, 8)
    times = sorted(rng.choice([0.0, 0.5, 1.0, 2.5, 3.0, 4.25, 7.0]) for _ in range(n))
    return [(t, rng.randrange(m), rng.randint(1, 12), rng.randint(1, 5)) for t in times]


@pytest.mark.parametrize("policy", ["sarathi", "orca", "wc", "priority"])
def test_work_conserving(policy):
    rng = random.Random(4)
    for case in range(30):
        reqs = random_case(rng, m=2)
        b = rng.randint(1, 10)
        kw = dict(budget=b, max_requests=b + rng.randint(0, 3), **UNIT)
        if policy == "wc":
            kw.update(
                phase_first=rng.choice(["decode", "prefill"]),
                inner_order=rng.choice(["fcfs", "srpt"]),
                K_p=rng.choice([None, b, b + 2]),
                K_d=rng.choice([None, b, b + 1]),
            )
        if policy == "priority":
            kw.update(type_order=rng.choice([(0, 1), (1, 0)]))
        res = simulate(reqs, policy, **kw)
        assert non_wc(res, b) == [], (case, reqs, kw)
        assert all(not x["partial"] for x in res["batches"])
        assert all(x["departure"] is not None for x in res["requests"])  # every request served


@pytest.mark.parametrize("policy", ["vllm", "ft"])
def test_not_work_conserving(policy):
    res = simulate([(0.0, 0, 6, 3), (0.5, 0, 2, 3)], policy, budget=8, prefill_cap=8, **UNIT)
    assert non_wc(res, 8) != []


def test_sarathi_is_wc_decode_first_fcfs():
    rng = random.Random(7)
    for case in range(30):
        reqs = random_case(rng)
        b = rng.randint(1, 10)
        M = rng.randint(1, 12)
        kw = dict(budget=b, max_requests=M, c=0.0455, a=0.00018, b0=rng.choice([0, 2, 64]), horizon=50.0)
        s = simulate(reqs, "sarathi", **kw)
        w = simulate(reqs, "wc", phase_first="decode", inner_order="fcfs", **kw)
        assert [(x["t0"], x["tau"], x["members"]) for x in s["batches"]] == [
            (x["t0"], x["tau"], x["members"]) for x in w["batches"]
        ], case
        assert all(len(x["members"]) <= M and x["load"] <= b for x in s["batches"])


def test_orca_is_wc_prefill_first_fcfs():
    """With unlimited K the orca gate never binds: the prefill phase stops early only at b or
    M, and then nothing more can join; otherwise every prefill was loaded completely."""
    rng = random.Random(11)
    for case in range(30):
        reqs = random_case(rng)
        kw = dict(budget=rng.randint(1, 10), max_requests=rng.randint(1, 12), **UNIT)
        o = simulate(reqs, "orca", **kw)
        w = simulate(reqs, "wc", phase_first="prefill", **kw)
        assert [(x["t0"], x["members"]) for x in o["batches"]] == [(x["t0"], x["members"]) for x in w["batches"]], case


def test_fig5_like():
    """A Fig. 5-like case (budget 8, prefill cap 8): r0 = (6 prompt, 3 decode) at 0 and
    r1 = (2, 3) at 0.5. vLLM's second batch is prefill-only while r0's decode waits; FT's second
    to fourth batches decode r0 alone while r1's prompt is blocked; Sarathi never idles tokens."""
    reqs = [(0.0, 0, 6, 3), (0.5, 0, 2, 3)]
    kw = dict(budget=8, prefill_cap=8, **UNIT)
    v = simulate(reqs, "vllm", **kw)
    assert members(v) == [
        {0: (6, 0)},
        {1: (2, 0)},
        {0: (0, 1), 1: (0, 1)},
        {0: (0, 1), 1: (0, 1)},
        {0: (0, 1), 1: (0, 1)},
    ]
    assert non_wc(v, 8) == [1]
    ft = simulate(reqs, "ft", **kw)
    assert members(ft) == [
        {0: (6, 0)},
        {0: (0, 1)},
        {0: (0, 1)},
        {0: (0, 1)},
        {1: (2, 0)},
        {1: (0, 1)},
        {1: (0, 1)},
        {1: (0, 1)},
    ]
    assert non_wc(ft, 8) == [1, 2, 3]
    s = simulate(reqs, "sarathi", **kw)
    assert members(s)[1] == {0: (0, 1), 1: (2, 0)}
    assert non_wc(s, 8) == []
    assert f(s["requests"][1]["departure"]) == 5.0 < f(ft["requests"][1]["departure"]) == 8.0


# --------------------------------------------------------------------------------------------
# Stability sanity (paper setting: 129 / 112 tokens, 14.3 req/s, b = 512)
# --------------------------------------------------------------------------------------------
def poisson_requests(rate: float, horizon: float, seed: int):
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t >= horizon:
            return out
        out.append((t, 0, 129, 112))


STAB = dict(budget=512, max_requests=256, prefill_cap=512, c=0.0455, a=0.00018, b0=64)


def _stability(horizon: float, unstable: tuple[str, ...]):
    reqs = poisson_requests(14.3, horizon, seed=1)
    end = {}
    for policy in ("sarathi", "orca") + unstable:
        res = simulate(reqs, policy, horizon=horizon, **STAB)
        end[policy] = res["metrics"]
        assert res["metrics"]["overflowed"] == 0
    for p in ("sarathi", "orca"):
        assert end[p]["requests_end"] < 300, (p, end[p]["requests_end"])
        assert end[p]["partial_batch_fraction"] == 0.0
    for p in unstable:
        assert end[p]["requests_end"] > 2 * max(end["sarathi"]["requests_end"], end["orca"]["requests_end"]), p
        assert end[p]["request_growth_per_s"] > 2 * max(
            end["sarathi"]["request_growth_per_s"], end["orca"]["request_growth_per_s"], 1.0
        )
    return end


def test_stability_short():
    _stability(40.0, ("ft",))


@pytest.mark.slow
def test_stability_long():
    end = _stability(300.0, ("ft", "vllm"))
    assert end["ft"]["requests_end"] > 1000 and end["vllm"]["requests_end"] > 600
