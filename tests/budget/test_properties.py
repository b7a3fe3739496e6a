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
from tests.reference.kv import DF

LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"),
        Independent(Constant(5), UniformInt(1, 4), name="b"))
HORIZON = 12.0


def _config(policy: str, m: int, **kw) -> BudgetConfig:
    return BudgetConfig(workload=LAWS[:m], policy=policy, horizon_s=HORIZON, burn_in_s=2.0,
                        table_size=kw.pop("table_size", 16), max_steps=6000, record_members=True,
                        snapshots=8, **kw)


def _requests(cfg, params, seed: int) -> list:
    s = request_stream(cfg, params, seed, 600)
    return [(DF(np.float32(h), np.float32(lo)), int(t), int(p), int(d))
            for h, lo, t, p, d in zip(s["t_hi"], s["t_lo"], s["type"], s["vp"], s["vd"])]


def compare(cfg: BudgetConfig, kw: dict, seed: int) -> None:
    """Run the engine and the reference on the same requests; assert they agree."""
    params = make_params(cfg, **kw)
    res = simulate(cfg, params, [seed], record=True, warn=False)
    eng = batches(res, 0)
    opts = {k: kw[k] for k in ("budget", "max_requests", "prefill_cap", "K_p", "K_d", "alpha",
                               "beta") if k in kw}
    out = ref.simulate(_requests(cfg, params, seed), cfg.policy, c=kw["c_s"],
                       a=kw["a_s_per_token"], b0=kw["b0"], attention=cfg.attention,
                       attention_prefix=cfg.attention_prefix, phase_first=cfg.phase_first,
                       inner_order=cfg.inner_order, type_order=cfg.type_order,
                       horizon=cfg.horizon_s, burn_in=cfg.burn_in_s, table_size=cfg.table_size,
                       snapshots=cfg.snapshots, **opts)
    rb = out["batches"]
    assert len(rb) == len(eng["load"]), (len(rb), len(eng["load"]))
    for k, b in enumerate(rb):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo), k
        assert (eng["tau_hi"][k], eng["tau_lo"][k]) == (b["tau"].hi, b["tau"].lo), k
        assert eng["load"][k] == b["load"]
        on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
        got = {int(i): (int(p), int(d)) for i, p, d in
               zip(eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on])}
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
    for key in ("latency_mean_s", "ttft_mean_s", "tbt_mean_s", "throughput_tokens_per_s",
                "mean_requests_in_system", "mean_tokens_in_system", "idle_fraction"):
        if key in rm:
            assert m[key] == pytest.approx(rm[key], rel=1e-5, abs=1e-9), key


def _kw(draw, policy: str, m: int) -> dict:
    b = draw(st.integers(1, 40))
    kw = dict(budget=b, max_requests=draw(st.integers(1, 10)),
              rates=[draw(st.floats(0.2, 3.0)) for _ in range(m)],
              c_s=draw(st.sampled_from([0.05, 0.3, 1.0])),
              a_s_per_token=draw(st.sampled_from([0.0, 0.01, 0.0373])),
              b0=draw(st.integers(0, 10)))
    if policy in ("vllm", "ft"):
        kw["prefill_cap"] = draw(st.integers(12, 40))
    if policy == "wc":
        kw["K_p"] = draw(st.integers(1, 6))
        kw["K_d"] = draw(st.integers(1, 6))
    return kw


CASES = [
    ("sarathi", 1, {}), ("orca", 1, {}), ("vllm", 1, {}), ("ft", 1, {}),
    ("wc", 1, dict(phase_first="prefill", inner_order="srpt")),
    ("wc", 2, dict(phase_first="decode", inner_order="fcfs")),
    ("priority", 2, dict(type_order=(1, 0))),
    ("sarathi", 2, dict(attention=True, attention_prefix=True, table_size=8)),
]


@pytest.mark.parametrize("policy,m,static", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_engine_matches_reference(policy, m, static, data, seed):
    cfg = _config(policy, m, **static)
    kw = _kw(data.draw, policy, m)
    if cfg.attention:
        kw["alpha"] = data.draw(st.sampled_from([1e-4, 3.3e-3]))
        kw["beta"] = data.draw(st.sampled_from([0.0, 2.1e-3]))
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
    compare(cfg, kw, seed)


def test_backlog_matches_reference():
    # A backlog present at t = 0 is the reference's requests arriving at time 0, in entry order.
    from jaxsched.budget import request_lengths
    from jaxsched.budget.config import BACKLOG_ID
    import jax.numpy as jnp
    cfg = BudgetConfig(workload=LAWS, policy="wc", horizon_s=HORIZON, table_size=32,
                       max_steps=6000, record_members=True, initial_requests=(5, 4),
                       inner_order="srpt")
    kw = dict(rates=[0.5, 0.5], budget=9, max_requests=4, c_s=0.3, a_s_per_token=0.01, b0=2)
    params = make_params(cfg, **kw)
    types = np.repeat([0, 1], [5, 4])
    vp, vd = request_lengths(cfg, jnp.uint32(11), jnp.asarray(BACKLOG_ID + np.arange(9)),
                             jnp.asarray(types))
    backlog = [(DF(np.float32(0), np.float32(0)), int(t), int(p), int(d))
               for t, p, d in zip(types, np.asarray(vp), np.asarray(vd))]
    res = simulate(cfg, params, [11], record=True, warn=False)
    eng = batches(res, 0)
    out = ref.simulate(backlog + _requests(cfg, params, 11), "wc", budget=9, max_requests=4,
                       c=0.3, a=0.01, b0=2, inner_order="srpt", horizon=HORIZON, table_size=32)
    assert len(out["batches"]) == len(eng["load"])
    for k, b in enumerate(out["batches"]):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo)
        assert eng["load"][k] == b["load"]
