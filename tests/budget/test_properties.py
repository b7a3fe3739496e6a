"""Differential tests: the vectorized budget engine against the plain-Python reference.

tests/reference/budget.py follows docs/budget-semantics.md literally, one epoch at a time with
np.float32 double-float time. Both run the same requests (`jaxsched.budget.request_stream`),
and these tests require, for every policy:
- identical batch compositions: the same batches in the same order, each with the same
  members and (prefill, decode) tokens per request;
- identical batch start times and durations, bitwise (double-float words), hence identical
  first-token and departure times;
- the same rejections, end state, departures in the window and windowed means (latency, TTFT,
  TBT to 1e-5 relative: compensated float32 sums against exact ones).

Compilation dominates (one engine compile per static config), so each case fixes a few static
configs and hypothesis draws the traced parameters (rates, budget, M, batch-time constants,
K_p, K_d) and the seed; `-m slow` draws more examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.budget import BudgetConfig, batches, make_params, request_stream, simulate
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from tests.reference import budget as ref
from tests.reference.kv import DF, to_float64

LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"), Independent(Constant(5), UniformInt(1, 4), name="b"))
HORIZON = 12.0


def _config(policy: str, m: int, **kw) -> BudgetConfig:
    return BudgetConfig(
        workload=LAWS[:m],
        policy=policy,
        horizon_s=HORIZON,
        burn_in_s=2.0,
        table_size=kw.pop("table_size", 16),
        max_steps=6000,
        record_members=True,
        snapshots=8,
        **kw,
    )


def _requests(cfg, params, seed: int) -> list:
    s = request_stream(cfg, params, seed, 600)
    return [
        (DF(np.float32(h), np.float32(lo)), int(t), int(p), int(d))
        for h, lo, t, p, d in zip(s["t_hi"], s["t_lo"], s["type"], s["vp"], s["vd"])
    ]


def compare(cfg: BudgetConfig, kw: dict, seed: int) -> None:
    """Run the engine and the reference on the same requests; assert they agree."""
    params = make_params(cfg, **kw)
    res = simulate(cfg, params, [seed], record=True, warn=False)
    eng = batches(res, 0)
    opts = {k: kw[k] for k in ("budget", "max_requests", "prefill_cap", "K_p", "K_d", "alpha", "beta") if k in kw}
    if cfg.memory_overhead != "off":
        names = {
            "swap": ("swap_a1_s_per_token", "swap_a2_s"),
            "recompute": ("recompute_b1_s_per_token2", "recompute_b2_s"),
        }[cfg.memory_overhead]
        opts.update(
            memory_overhead=cfg.memory_overhead,
            kv_limit=kw["kv_limit_tokens"],
            c1=kw.get(names[0], 0.0),
            c2=kw.get(names[1], 0.0),
        )
    out = ref.simulate(
        _requests(cfg, params, seed),
        cfg.policy,
        c=kw["c_s"],
        a=kw["a_s_per_token"],
        b0=kw["b0"],
        attention=cfg.attention,
        attention_prefix=cfg.attention_prefix,
        phase_first=cfg.phase_first,
        inner_order=cfg.inner_order,
        type_order=cfg.type_order,
        horizon=cfg.horizon_s,
        burn_in=cfg.burn_in_s,
        table_size=cfg.table_size,
        snapshots=cfg.snapshots,
        admission_cap=cfg.admission_cap,
        **opts,
    )
    rb = out["batches"]
    assert len(rb) == len(eng["load"]), (len(rb), len(eng["load"]))
    for k, b in enumerate(rb):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo), k
        assert (eng["tau_hi"][k], eng["tau_lo"][k]) == (b["tau"].hi, b["tau"].lo), k
        assert eng["load"][k] == b["load"]
        on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
        got = {int(i): (int(p), int(d)) for i, p, d in zip(eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on])}
        assert got == {int(i): (int(p), int(d)) for i, (p, d) in b["members"].items()}, k
    m = {k: v[0] for k, v in res.metrics.items()}
    rm = out["metrics"]
    for key in ("num_rejected", "requests_end", "tokens_end", "num_departed"):
        if key in rm:
            assert m[key] == rm[key], key
    assert m["partial_batch_fraction"] == pytest.approx(rm["partial_batch_fraction"], abs=1e-12)
    snaps = [x for x in out["snapshots"] if x is not None]
    assert res.metrics["requests_end"][0] == rm["requests_end"]
    assert len(snaps) == cfg.snapshots
    for key in ("token_growth_per_s", "request_growth_per_s"):
        assert m[key] == pytest.approx(rm[key], rel=1e-4, abs=1e-6), key
    for key in (
        "latency_mean_s",
        "ttft_mean_s",
        "tbt_mean_s",
        "throughput_tokens_per_s",
        "mean_requests_in_system",
        "mean_tokens_in_system",
        "idle_fraction",
    ):
        if key in rm:
            assert m[key] == pytest.approx(rm[key], rel=1e-5, abs=1e-9), key


def _kw(draw, policy: str, m: int) -> dict:
    b = draw(st.integers(1, 40))
    kw = dict(
        budget=b,
        max_requests=draw(st.integers(1, 10)),
        rates=[draw(st.floats(0.2, 3.0)) for _ in range(m)],
        c_s=draw(st.sampled_from([0.05, 0.3, 1.0])),
        a_s_per_token=draw(st.sampled_from([0.0, 0.01, 0.0373])),
        b0=draw(st.integers(0, 10)),
    )
    if policy in ("vllm", "ft"):
        kw["prefill_cap"] = draw(st.integers(12, 40))
    if policy == "wc":
        kw["K_p"] = draw(st.integers(1, 6))
        kw["K_d"] = draw(st.integers(1, 6))
    return kw


CASES = [
    ("sarathi", 1, {}),
    ("orca", 1, {}),
    ("vllm", 1, {}),
    ("ft", 1, {}),
    ("wc", 1, dict(phase_first="prefill", inner_order="srpt")),
    ("wc", 2, dict(phase_first="decode", inner_order="fcfs")),
    ("priority", 2, dict(type_order=(1, 0))),
    ("sarathi", 2, dict(attention=True, attention_prefix=True, table_size=8)),
    # The KV-memory overhead (A.2) in its quadratic form (the harder arithmetic), after the
    # attention terms; the linear form is hand-checked in test_memory_overhead_hand.
    ("orca", 2, dict(attention=True, memory_overhead="recompute")),
    # M capping the requests started and unfinished (Vidur's admission): vllm and orca, whose
    # batches it changes most, and wc's SRPT prefill first, where partly loaded prompts wait.
    ("vllm", 1, dict(admission_cap="running")),
    ("orca", 1, dict(admission_cap="running")),
    ("wc", 2, dict(phase_first="prefill", inner_order="srpt", admission_cap="running")),
]


def _memory_kw(draw) -> dict:
    """A KV limit that binds often at these sizes (a batch holds up to ~40 requests of <= 17
    tokens) and coefficients of a size that changes batch times visibly."""
    return dict(
        kv_limit_tokens=draw(st.integers(0, 60)),
        recompute_b1_s_per_token2=draw(st.sampled_from([0.0, 1e-4, 3.7e-3])),
        recompute_b2_s=draw(st.sampled_from([0.0, 0.05, 0.21])),
    )


@pytest.mark.parametrize("policy,m,static", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_engine_matches_reference(policy, m, static, data, seed):
    cfg = _config(policy, m, **static)
    kw = _kw(data.draw, policy, m)
    if cfg.attention:
        kw["alpha"] = data.draw(st.sampled_from([1e-4, 3.3e-3]))
        kw["beta"] = data.draw(st.sampled_from([0.0, 2.1e-3]))
    if cfg.memory_overhead != "off":
        kw.update(_memory_kw(data.draw))
    compare(cfg, kw, seed)


@pytest.mark.slow
@pytest.mark.parametrize("policy,m,static", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_engine_matches_reference_many(policy, m, static, data, seed):
    cfg = _config(policy, m, **static)
    kw = _kw(data.draw, policy, m)
    if cfg.attention:
        kw["alpha"] = data.draw(st.floats(0.0, 1e-2))
        kw["beta"] = data.draw(st.floats(0.0, 1e-2))
    if cfg.memory_overhead != "off":
        kw.update(_memory_kw(data.draw))
        kw["recompute_b1_s_per_token2"] = data.draw(st.floats(0.0, 1e-2))
    compare(cfg, kw, seed)


def test_backlog_matches_reference():
    # A backlog present at t = 0 is the reference's requests arriving at time 0, in entry order.
    import jax.numpy as jnp

    from jaxsched.budget import request_lengths
    from jaxsched.budget.config import BACKLOG_ID

    cfg = BudgetConfig(
        workload=LAWS,
        policy="wc",
        horizon_s=HORIZON,
        table_size=32,
        max_steps=6000,
        record_members=True,
        initial_requests=(5, 4),
        inner_order="srpt",
    )
    kw = dict(rates=[0.5, 0.5], budget=9, max_requests=4, c_s=0.3, a_s_per_token=0.01, b0=2)
    params = make_params(cfg, **kw)
    types = np.repeat([0, 1], [5, 4])
    vp, vd = request_lengths(cfg, jnp.uint32(11), jnp.asarray(BACKLOG_ID + np.arange(9)), jnp.asarray(types))
    backlog = [
        (DF(np.float32(0), np.float32(0)), int(t), int(p), int(d))
        for t, p, d in zip(types, np.asarray(vp), np.asarray(vd))
    ]
    res = simulate(cfg, params, [11], record=True, warn=False)
    eng = batches(res, 0)
    out = ref.simulate(
        backlog + _requests(cfg, params, 11),
        "wc",
        budget=9,
        max_requests=4,
        c=0.3,
        a=0.01,
        b0=2,
        inner_order="srpt",
        horizon=HORIZON,
        table_size=32,
    )
    assert len(out["batches"]) == len(eng["load"])
    for k, b in enumerate(out["batches"]):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo)
        assert eng["load"][k] == b["load"]


def test_memory_overhead_hand():
    """(A.2) on a hand-computed batch: the timing functions, the reference's batch times, and
    the engine (swap form) on the same requests."""
    import jax.numpy as jnp

    from jaxsched.budget.timing import budget_memory_overhead_s, kv_excess_tokens
    from jaxsched.clock import DF as JDF

    # Members by entry 0, 1, 2 holding 5, 7, 4 KV tokens after the batch, limit 9: excess 7
    # charged newest first: entry 2 all 4, entry 1 the remaining 3, entry 0 nothing.
    kv = jnp.array([5, 7, 4, 0], jnp.int32)
    older = jnp.array([0, 5, 12, 16], jnp.int32)
    x = kv_excess_tokens(kv, older, jnp.int32(9))
    assert x.tolist() == [0, 3, 4, 0]
    assert kv_excess_tokens(kv, older, jnp.int32(16)).tolist() == [0, 0, 0, 0]
    assert kv_excess_tokens(kv, older, jnp.int32(0)).tolist() == [5, 7, 4, 0]
    zero = JDF(jnp.float32(1.0), jnp.float32(0.0))
    fence = jnp.int32(-1)
    # swap: 0.5 * (3 + 4) + 0.25 * 2 = 4.0; recompute: 0.5 * (9 + 16) + 0.25 * 2 = 13.0.
    swap = budget_memory_overhead_s(zero, x, False, 0.5, 0.25, fence)
    rec = budget_memory_overhead_s(zero, x, True, 0.5, 0.25, fence)
    assert float(swap.hi) + float(swap.lo) == 5.0
    assert float(rec.hi) + float(rec.lo) == 14.0
    # A square above 2^16 uses both halves: x = 300, 300^2 = 90000 = 65536 + 24464.
    big = budget_memory_overhead_s(
        JDF(jnp.float32(0.0), jnp.float32(0.0)), jnp.array([300, 0], jnp.int32), True, 1.0, 0.0, fence
    )
    assert float(big.hi) == 90000.0
    # The reference: c = 1 s per batch, a = 0; requests (entry order) of (v_p, v_d) = (4, 2),
    # (3, 1), (5, 1) at t = 0, budget 20, KV limit 6. Batch 1 prefills all three: KV after =
    # 4, 3, 5 (sum 12, excess 6): entry 2 takes 5, entry 1 takes 1 -> swap 1 + 0.5 * 6 + 0.1 * 2.
    reqs = [(0.0, 0, 4, 2), (0.0, 0, 3, 1), (0.0, 0, 5, 1)]
    common = dict(budget=20, c=1.0, a=0.0, b0=0, horizon=100.0, kv_limit=6)
    out = ref.simulate(reqs, "sarathi", memory_overhead="swap", c1=0.5, c2=0.1, **common)
    taus = [to_float64(b["tau"]) for b in out["batches"]]
    # Batch 2 decodes all three: KV after = 5, 4, 6 (15, excess 9): entry 2 all 6, entry 1 3
    # -> 1 + 0.5 * 9 + 0.1 * 2. Batch 3 decodes entry 0 alone: KV 6, no excess -> 1.
    assert taus == pytest.approx([4.2, 5.7, 1.0], abs=1e-6)
    out = ref.simulate(reqs, "sarathi", memory_overhead="recompute", c1=0.5, c2=0.1, **common)
    taus = [to_float64(b["tau"]) for b in out["batches"]]
    # recompute: batch 1: 1 + 0.5 (25 + 1) + 0.2 = 14.2; batch 2: 1 + 0.5 (36 + 9) + 0.2 = 23.7.
    assert taus == pytest.approx([14.2, 23.7, 1.0], abs=1e-5)
    # The engine, swap form: a backlog of three (4, 2) requests at t = 0 (entries 0, 1, 2) and
    # arrivals too rare to come (1e-6/s over 50 s). Batch 1 prefills 12 tokens: KV 4 + 4 + 4,
    # excess 6 -> entry 2 takes 4, entry 1 takes 2: 1 + 0.5 * 6 + 0.1 * 2. Batch 2 decodes the
    # three: KV 15, excess 9 -> 5 and 4: 1 + 4.5 + 0.2. Batch 3: KV 18, excess 12 -> 6 and 6.
    cfg = BudgetConfig(
        workload=(Independent(Constant(4), Constant(2)),),
        policy="sarathi",
        horizon_s=50.0,
        table_size=8,
        record_members=True,
        initial_requests=(3,),
        memory_overhead="swap",
        max_steps=400,
    )
    params = make_params(
        cfg,
        rates=[1e-6],
        budget=20,
        c_s=1.0,
        a_s_per_token=0.0,
        b0=0,
        kv_limit_tokens=6,
        swap_a1_s_per_token=0.5,
        swap_a2_s=0.1,
    )
    eng = batches(simulate(cfg, params, [0], record=True, warn=False), 0)
    assert eng["load"].tolist() == [12, 3, 3]
    assert eng["tau_s"].tolist() == pytest.approx([4.2, 5.7, 7.2], abs=1e-6)
    out = ref.simulate([(0.0, 0, 4, 2)] * 3, "sarathi", memory_overhead="swap", c1=0.5, c2=0.1, **common)
    assert [(b["tau"].hi, b["tau"].lo) for b in out["batches"]] == list(
        zip(eng["tau_hi"].tolist(), eng["tau_lo"].tolist())
    )


def test_snapshots_at_one_event_have_no_growth():
    # At 0.22 requests/s no event falls between the snapshot grid points after the burn-in:
    # every snapshot is taken at the same event (t = 11.06 s), so the times do not vary and the
    # growth slopes are 0 in both (a polynomial fit there returned a meaningless 0.226).
    cfg = _config("wc", 1, phase_first="prefill", inner_order="srpt")
    kw = dict(budget=1, max_requests=1, rates=[0.21875], c_s=0.05, a_s_per_token=0.0, b0=0)
    compare(cfg, kw, 1)
    m = simulate(cfg, make_params(cfg, **kw), [1], warn=False).metrics
    assert m["token_growth_per_s"][0] == 0.0 and m["request_growth_per_s"][0] == 0.0
