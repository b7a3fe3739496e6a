"""Unit tests of the budget engine (docs/budget-semantics.md): hand-computed runs, invariants,
work conservation, Theorem 1, reproducibility and bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jaxsched.budget import POLICIES, BudgetConfig, batches, make_params, rates_for_load, request_stream, simulate
from jaxsched.budget.metrics import growth_slopes
from jaxsched.errors import ConfigError
from jaxsched.workload import Constant, Independent, Poisson

UNIT = dict(c_s=1.0, a_s_per_token=0.0, b0=0)  # every batch lasts exactly 1 s


def small(policy="sarathi", prompt=3, decode=2, horizon=40.0, **kw) -> BudgetConfig:
    law = Independent(Constant(prompt), Constant(decode), name="small")
    return BudgetConfig(
        workload=(law,), policy=policy, horizon_s=horizon, table_size=64, max_steps=4000, record_members=True, **kw
    )


def test_registry_matches_config():
    for name in POLICIES:
        assert BudgetConfig(policy=name).policy == name
    with pytest.raises(ConfigError, match="policy must be one of " + re.escape(str(tuple(POLICIES)))):
        BudgetConfig(policy="nope")


def test_sarathi_burst_hand_computed():
    # Three requests of 3 prefill + 2 decode tokens arriving microseconds apart; budget 4,
    # 1 s batches. At a_0 only r0 is visible (3 prefill). Then r0 decodes 1 + r1 prefills 3;
    # r0's last decode (departs at a_0 + 3) + r1 decode + r2 prefills 2; r1's last decode + r2's
    # last prefill; r2 decodes twice.
    cfg = small(horizon=30.0, num_requests=3)
    p = make_params(cfg, rates=[1e6], budget=4, max_requests=8, **UNIT)
    res = simulate(cfg, p, [3], record=True)
    b = batches(res, 0)
    np.testing.assert_array_equal(b["load"], [3, 4, 4, 2, 1, 1])
    np.testing.assert_array_equal(b["prefill"], [3, 3, 2, 1, 0, 0])
    np.testing.assert_array_equal(b["decode"], [0, 1, 2, 1, 1, 1])
    np.testing.assert_array_equal(b["tau_s"], 1.0)
    s = request_stream(cfg, p, 3, 8)
    a = s["t_hi"].astype(np.float64) + s["t_lo"]
    np.testing.assert_allclose(b["start_s"], a[0] + np.arange(6), rtol=0, atol=1e-9)
    m = {k: v[0] for k, v in res.metrics.items()}
    assert m["num_departed"] == 3
    assert m["throughput_tokens_per_s"] == pytest.approx(15 / 30.0)
    ends = a[0] + np.array([3.0, 4.0, 6.0])
    assert m["latency_mean_s"] == pytest.approx(np.mean(ends - a[:3]), rel=1e-6)
    firsts = a[0] + np.array([1.0, 2.0, 4.0])
    assert m["ttft_mean_s"] == pytest.approx(np.mean(firsts - a[:3]), rel=1e-6)
    assert m["tbt_mean_s"] == pytest.approx(1.0, rel=1e-6)  # every decode token 1 s apart
    # Requests in system over the six 1 s batches: 1, 3, 3 (r0 leaves at the batch end), 2, 1,
    # 1; unprocessed tokens after each decision: 5 - 3, 12 - 4, 8 - 4, 4 - 2, 2 - 1, 1 - 1.
    assert m["mean_requests_in_system"] == pytest.approx(11 / 30.0, rel=1e-6)
    assert m["mean_tokens_in_system"] == pytest.approx(17 / 30.0, rel=1e-6)
    assert m["idle_fraction"] == pytest.approx((30.0 - 6.0) / 30.0, rel=1e-5)


def test_arrivals_join_after_the_decision():
    # One request at a time: a request arriving during a batch waits for the next decision.
    cfg = small(horizon=20.0, num_requests=2)
    p = make_params(cfg, rates=[0.5], budget=64, **UNIT)
    res = simulate(cfg, p, [0], record=True)
    s = request_stream(cfg, p, 0, 8)
    a = s["t_hi"].astype(np.float64) + s["t_lo"]
    b = batches(res, 0)
    starts = b["start_s"]
    assert starts[0] == pytest.approx(a[0], abs=1e-9)  # idle jump to the first arrival
    for t0, members in zip(starts, b["entry"]):
        present = set(members[members >= 0])
        assert (1 in present) == (a[1] <= t0 + 1e-12)


@pytest.mark.parametrize("policy", ["sarathi", "orca", "wc"])
def test_work_conserving_policies_fill_every_batch(policy):
    # With M >= b every batch has load min(b, available tokens) (eq. (2.6)).
    law = Independent(Poisson(20.0), Poisson(6.0), name="p")
    cfg = BudgetConfig(workload=(law,), policy=policy, horizon_s=60.0, table_size=256, record_members=True)
    p = make_params(cfg, rates=[3.0], budget=48, max_requests=64, **UNIT)
    res = simulate(cfg, p, range(3), record=True)
    assert np.all(res.metrics["partial_batch_fraction"] == 0)
    for s in range(3):
        b = batches(res, s)
        np.testing.assert_array_equal(b["load"], np.minimum(48, b["available"]))
        assert b["load"].size > 50 and np.any(b["available"] > 48)


@pytest.mark.parametrize("policy", ["vllm", "ft"])
def test_non_work_conserving_policies_leave_partial_batches(policy):
    cfg = BudgetConfig(policy=policy, horizon_s=60.0)
    p = make_params(cfg, rates=[14.3])
    res = simulate(cfg, p, [0])
    assert res.metrics["partial_batch_fraction"][0] > 0.2


def test_fig1_split_and_growth_above_capacity():
    # Fig. 1: at 14.3 qps (rho = 0.85 with the assumed a) Sarathi and Orca stay bounded while
    # FasterTransformer and vLLM grow; Theorem 1(b): at rho = 1.25 every policy grows, by at
    # least a tenth of the offered tokens per second. One vmapped run per policy.
    from jaxsched.run import simulate_points

    grow = {}
    for policy in POLICIES:
        cfg = BudgetConfig(policy=policy, horizon_s=120.0, burn_in_s=30.0)
        over = rates_for_load(cfg, 1.25)
        res = simulate_points(cfg, [make_params(cfg, rates=[14.3]), make_params(cfg, rates=over)], range(2), warn=False)
        grow[policy] = res[0].metrics["token_growth_per_s"].mean()
        assert np.all(res[1].metrics["token_growth_per_s"] > 0.1 * over[0] * 241), policy
    assert grow["sarathi"] < 100 and grow["orca"] < 100
    assert grow["vllm"] > 200 and grow["ft"] > 2000


def test_chunking_is_bitwise_invisible():
    cfg = BudgetConfig(policy="orca", horizon_s=15.0)
    p = make_params(cfg, rates=[14.3])
    a = simulate(cfg, p, range(6), seed_chunk=6).metrics
    b = simulate(cfg, p, range(6), seed_chunk=4).metrics
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_rejections_mark_overflow():
    cfg = BudgetConfig(policy="ft", horizon_s=60.0, table_size=64)
    with pytest.warns(RuntimeWarning, match="rejected arrivals"):
        res = simulate(cfg, make_params(cfg, rates=[14.3]), [0])
    assert res.metrics["overflowed"][0] == 1 and res.metrics["num_rejected"][0] > 0


def test_growth_slopes_least_squares():
    t = np.array([[0.0, 1.0, 2.0, 3.0, 9.0]])
    y = 2.0 * t + 1.0
    np.testing.assert_allclose(growth_slopes(t, y, np.array([4])), [2.0])
    assert np.isnan(growth_slopes(t, y, np.array([1]))[0])


def test_request_stream_matches_inserted_requests():
    cfg = small(horizon=30.0)
    p = make_params(cfg, rates=[2.0], budget=16, **UNIT)
    res = simulate(cfg, p, [5], record=True)
    s = request_stream(cfg, p, 5, 200)
    b = batches(res, 0)
    seen = np.unique(np.concatenate([r[r >= 0] for r in b["id"]]))
    ids = s["id"][(s["t_hi"].astype(np.float64) + s["t_lo"]) < 30.0 - 1.0]
    assert set(ids) <= set(seen.tolist()) | set(ids[-3:].tolist())


# --------------------------------------------------------------------------- bad input

BAD_PARAMS = [
    (dict(budget=0), "budget must be an integer >= 1"),
    (dict(budget=2**15 + 1), "budget must be an integer >= 1 and <= 32768"),
    (dict(max_requests=0), "max_requests must be"),
    (dict(rates=[0.0]), "rates must be finite and > 0"),
    (dict(rates=[float("nan")]), "rates must be finite and > 0"),
    (dict(rates=[1.0, 2.0]), "rates must be an array"),
    (dict(c_s=0.0, a_s_per_token=0.0), "c_s must be > 0"),
    (dict(c_s=-1.0), "c_s must be a finite number >= 0"),
    (dict(b0=-1), "b0 must be"),
    (dict(K_p=0), "K_p must be"),
    (dict(alpha=1e-6), "alpha must be 0"),
    (dict(period_s=0.0), "period_s must be"),
]


@pytest.mark.parametrize("kw,msg", BAD_PARAMS)
def test_bad_params(kw, msg):
    with pytest.raises(ConfigError, match=re.escape(msg)):
        make_params(BudgetConfig(), **kw)


BAD_CONFIG = [
    (dict(policy="x"), "policy must be one of"),
    (dict(horizon_s=0.0), "horizon_s must be"),
    (dict(burn_in_s=600.0), "burn_in_s must be in [0, horizon_s"),
    (dict(table_size=0), "table_size (Q) must be"),
    (dict(snapshots=1), "snapshots must be"),
    (dict(type_order=(1,)), "type_order must be a permutation"),
    (dict(attention_prefix=True), "attention_prefix must be False unless attention"),
    (dict(phase_first="both"), "phase_first must be one of"),
    (dict(workload=("fig1",)), "workload[0] must be a length law"),
    (dict(workload=()), "workload must be a length law or a non-empty tuple"),
]


@pytest.mark.parametrize("kw,msg", BAD_CONFIG)
def test_bad_config(kw, msg):
    with pytest.raises(ConfigError, match=re.escape(msg)):
        BudgetConfig(**kw)


def test_non_positive_lengths_rejected():
    with pytest.raises(ConfigError, match="Constant.value must be an integer >= 1"):
        Independent(Constant(0), Constant(5))
    with pytest.raises(ConfigError, match="Poisson.mean must be"):
        Poisson(0.0)


def test_vllm_and_ft_batches_are_single_phase():
    cfg = BudgetConfig(policy="vllm", horizon_s=40.0, record_members=True, table_size=1024)
    res = simulate(cfg, make_params(cfg, rates=[14.3]), [1], record=True)
    b = batches(res, 0)
    assert np.all((b["prefill"] == 0) | (b["decode"] == 0))
    assert np.all(b["prefill"] <= 512) and np.all(b["decode"] <= 256)


def test_prefill_cap_must_fit_a_prompt():
    cfg = BudgetConfig(policy="vllm")
    with pytest.raises(ConfigError, match=re.escape("prefill_cap must be >= the largest prompt")):
        make_params(cfg, prefill_cap=100)
    # sarathi never reads it: given there, it is refused as an option the run ignores.
    with pytest.raises(ConfigError, match=r"^prefill_cap is read only by policy vllm, ft; policy sarathi ignores it$"):
        make_params(BudgetConfig(policy="sarathi"), prefill_cap=100)


def test_max_steps_must_reach_the_horizon():
    cfg = BudgetConfig(max_steps=1000)
    with pytest.raises(ConfigError, match=r"max_steps must be >= \d+ \(horizon_s / t\(1\)"):
        make_params(cfg, rates=[14.3])


def test_simulate_points_equals_simulate():
    # vmap over (rate, budget) points and seeds: each point's results bitwise those of its own run.
    from jaxsched.run import simulate_points

    cfg = BudgetConfig(policy="orca", horizon_s=30.0)
    ps = [make_params(cfg, rates=[r], budget=b) for r, b in [(10.0, 512), (14.3, 256), (16.0, 1024)]]
    res = simulate_points(cfg, ps, range(3), seed_chunk=4)
    assert len({float(r.metrics["throughput_tokens_per_s"].mean()) for r in res}) == 3
    for p, r in zip(ps, res):
        ref = simulate(cfg, p, range(3))
        for k in ref.metrics:
            np.testing.assert_array_equal(ref.metrics[k], r.metrics[k], err_msg=k)
    with pytest.raises(ConfigError, match="params_list must be a non-empty list"):
        simulate_points(cfg, [], range(2))


def test_backlog_drains_in_the_fluid_time():
    # Prop. 2(a) / section 4.2: a work-conserving engine drains f(0) in f(0) / delta, with the
    # corrected workload f = (m_p + m_d) Z_p + m_d Z_d (every backlog request is in prefill).
    from jaxsched.budget.config import capacity_tokens_per_s
    from jaxsched.budget.experiments import TWO_TYPES
    from jaxsched.budget.fluid import budget_drain_time_s, budget_workload

    cfg = BudgetConfig(
        workload=TWO_TYPES, horizon_s=300.0, table_size=4096, initial_requests=(250, 250), drain_fraction=0.02
    )
    rates = rates_for_load(cfg, 0.5)
    res = simulate(cfg, make_params(cfg, rates=rates, max_requests=512), range(3))
    from jaxsched.budget import mean_lengths

    ml = mean_lengths(cfg)
    x0 = res.metrics["backlog_tokens"]
    assert np.mean(x0) == pytest.approx(budget_workload(ml[:, 0], ml[:, 1], [250, 250], [0, 0]), rel=0.02)
    fluid = np.array([budget_drain_time_s(0.98 * x, rates, ml[:, 0], ml[:, 1], capacity_tokens_per_s(512)) for x in x0])
    assert np.mean(res.metrics["drain_time_s"] / fluid) == pytest.approx(1.0, abs=0.1)
    # The paper's swapped coefficients m_p Z_p + (m_p + m_d) Z_d give f(0) = m_p Z_p here, a
    # drain time the simulation exceeds by more than the tolerance.
    swapped = budget_workload(ml[:, 0], np.zeros(2), [250, 250], [0, 0])
    t_swapped = budget_drain_time_s(0.98 * swapped, rates, ml[:, 0], ml[:, 1], capacity_tokens_per_s(512))
    assert np.mean(res.metrics["drain_time_s"]) / t_swapped > 1.15


def test_fluid_drain_time_is_infinite_at_capacity():
    from jaxsched.budget.fluid import budget_drain_time_s

    assert budget_drain_time_s(1e6, [10.0], [100.0], [100.0], 2000.0) == float("inf")
    assert budget_drain_time_s(1e6, [5.0], [100.0], [100.0], 2000.0) == pytest.approx(1e3)


def test_backlog_validation():
    with pytest.raises(ConfigError, match=re.escape("initial_requests must be None or a tuple of m = 1")):
        BudgetConfig(initial_requests=(1, 2))
    with pytest.raises(ConfigError, match=re.escape("initial_requests[0] must be an integer >= 0 and <= 64")):
        BudgetConfig(initial_requests=(65,), table_size=64)
