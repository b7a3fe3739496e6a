"""Size buckets of the kv engine: a run padded into a larger config (table_size Q and
arrivals_per_step A) gives bitwise the metrics and trajectories of the unpadded run, and a
sweep over those sizes compiles once per bucket.

The padded runs of one test share one bucket config, so they also share one compiled program
(`simulate_points`), the way a sweep runs them. The sizes are chosen so that some runs lose
arrivals to a full ring (table_overflow > 0: the ring must wrap at the run's Q, not the
bucket's) and others do not, and so that the float sums over the table cross the 256-element
rows of `kernels.ordered_sum`.
"""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.buckets import plan_buckets
from jaxsched.errors import ConfigError
from jaxsched.kv import KVConfig, make_params
from jaxsched.kv.engine import ENGINE
from jaxsched.results import run_key
from jaxsched.run import simulate, simulate_points
from jaxsched.sweep import run_sweep
from tests.sweep_checks import COMPILES as _COMPILES
from tests.sweep_checks import block_compiles as _block_compiles

SIZES = ENGINE.size_fields


def _same_runs(configs: list[KVConfig], capacity: dict, seeds=(0, 1), **params_kw) -> list:
    """Every config alone equals the same config padded into `capacity`, all padded runs in one
    simulate_points call: metrics and recorded trajectories bitwise. Returns the unpadded
    results."""
    alone = [simulate(c, make_params(c, **params_kw), seeds, warn=False, record=True) for c in configs]
    padded = [ENGINE.pad(c, make_params(c, **params_kw), capacity) for c in configs]
    bucket = padded[0][0]
    assert all(b == bucket for b, _ in padded)
    assert all(getattr(bucket, f) == capacity.get(f, getattr(configs[0], f)) for f in SIZES)
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=True)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k]), (c, k, a.metrics[k], b.metrics[k])
        assert a.trajectories.keys() == b.trajectories.keys()
        for k, v in a.trajectories.items():
            # The points of one simulate_points call share the longest point's rows; a run's
            # rows after its end are zeros (kind 0), as in the unpadded recording.
            w, n = b.trajectories[k], v.shape[1]
            assert np.array_equal(v, w[:, :n]) and not np.any(w[:, n:]), (c, k)
        # The ring's check reads the run's own losses.
        assert ENGINE.check(c, a.metrics) == ENGINE.check(c, b.metrics)
    return alone


# Each case compiles three programs (several seconds each): WAIT runs by default, the other
# policies with -m slow.
POLICIES = ["wait", "nested_wait", "fcfs", "vllm", "sarathi"]


@pytest.mark.parametrize("policy", [pytest.param(p, marks=() if p == "wait" else pytest.mark.slow) for p in POLICIES])
def test_padded_equals_unpadded(policy):
    # Q = 40 loses most arrivals to its ring (it wraps at 40 inside 300 slots); Q = 270 loses
    # none and spans two 256-slot rows of the float sums; A = 3 and 9 inside 12.
    configs = [
        KVConfig(policy=policy, num_requests=90, table_size=Q, arrivals_per_step=A) for Q, A in [(40, 3), (270, 9)]
    ]
    alone = _same_runs(configs, {"table_size": 300, "arrivals_per_step": 12})
    assert alone[0].metrics["table_overflow"].min() > 0
    assert alone[1].metrics["table_overflow"].max() == 0


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["nested_wait", "sarathi"])
def test_padded_options_equal_unpadded(policy):
    # The options that change the epoch: a horizon, force_clear, the prefill price, burn-in
    # and the shared batch limits.
    configs = [
        KVConfig(
            policy=policy,
            num_requests=80,
            table_size=Q,
            arrivals_per_step=A,
            end_mode="force_clear",
            prefill_price=True,
        )
        for Q, A in [(7, 2), (130, 5)]
    ]
    configs.append(dataclasses.replace(configs[1], num_requests=None, horizon_s=0.15))
    for c in configs[2:]:
        _same_runs(
            [c],
            {"table_size": 150, "arrivals_per_step": 8},
            d1_prefill_s_per_token=3e-6,
            batch_limit=9,
            token_limit=400,
        )
    _same_runs(
        configs[:2],
        {"table_size": 150, "arrivals_per_step": 8},
        burn_in_requests=10,
        d1_prefill_s_per_token=3e-6,
        batch_limit=9,
        token_limit=400,
    )


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["wait", "nested_wait", "fcfs"]),
    st.integers(1, 48),
    st.integers(1, 8),
    st.integers(0, 40),
    st.integers(0, 6),
    st.integers(0, 2**16),
)
def test_padded_equals_unpadded_random(policy, Q, A, extra_q, extra_a, seed):
    A = min(A, Q)
    cfg = KVConfig(policy=policy, num_requests=50, table_size=Q, arrivals_per_step=A)
    _same_runs([cfg], {"table_size": Q + extra_q, "arrivals_per_step": min(A + extra_a, Q + extra_q)}, seeds=(seed,))


def test_pad_refuses_bad_capacity():
    cfg = KVConfig(num_requests=20, table_size=16, arrivals_per_step=4)
    par = make_params(cfg)
    with pytest.raises(ConfigError, match="capacity table_size"):
        ENGINE.pad(cfg, par, {"table_size": 15})
    with pytest.raises(ConfigError, match="capacity arrivals_per_step"):
        ENGINE.pad(cfg, par, {"arrivals_per_step": 3})
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, {"num_requests": 40})
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, {"m": 3})  # the number of types is not a size
    with pytest.raises(ConfigError, match="capacity"):
        ENGINE.pad(cfg, par, [32])
    with pytest.raises(ConfigError, match="arrivals_per_step"):
        ENGINE.pad(cfg, par, {"arrivals_per_step": 17})  # A > Q: no valid bucket
    with pytest.raises(ConfigError, match="padded"):
        ENGINE.pad(cfg, ENGINE.pad(cfg, par, {"table_size": 32})[1], {"table_size": 32})


def test_padding_keeps_the_results_key():
    cfg = KVConfig(num_requests=20, table_size=16)
    par = make_params(cfg)
    bucket, padded = ENGINE.pad(cfg, par, {"table_size": 64})
    assert bucket.table_size == 64 and int(padded.sizes.table_size) == 16
    assert run_key("kv", cfg, par, [0, 1]) == run_key("kv", cfg, padded, [0, 1])


def test_working_set_is_monotone_in_the_sizes():
    base = KVConfig()
    work = {
        (Q, A): ENGINE.working_set_bytes(dataclasses.replace(base, table_size=Q, arrivals_per_step=A))
        for Q in (1, 8, 64, 512, 4096, 65536)
        for A in (1, 4, 64, 4096)
        if A <= Q
    }
    for (Q, A), w in work.items():
        for (Q2, A2), w2 in work.items():
            if Q <= Q2 and A <= A2:
                assert w <= w2, ((Q, A), (Q2, A2))
    assert work[(4096, 4096)] > work[(4096, 1)]


def test_plan_keeps_waste():
    base = KVConfig(num_requests=100)
    configs = [
        dataclasses.replace(base, table_size=Q, arrivals_per_step=A, policy=p)
        for p in ("wait", "fcfs")
        for Q in (16, 64, 256, 512, 1024, 2048, 4096, 8192)
        for A in (1, 8, 64)
        if A <= Q
    ]
    plan = plan_buckets(ENGINE, configs)
    assert sorted(i for b in plan for i in b.members) == list(range(len(configs)))
    for b in plan:
        for i in b.members:
            c = configs[i]
            assert c.policy == b.config.policy
            assert all(getattr(c, f) <= getattr(b.config, f) for f in SIZES)
            assert ENGINE.working_set_bytes(b.config) <= 2 * ENGINE.working_set_bytes(c)
    assert len(plan) < len(configs) // 2


def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path):
    base = KVConfig(policy="fcfs", num_requests=70)
    axes = {"table_size": [20, 48], "arrivals_per_step": [2, 6]}
    n0 = len(_COMPILES)
    with pytest.warns(RuntimeWarning, match="full"):  # Q = 20 loses arrivals: warned per point
        bucketed = run_sweep(base, axes, range(3), tmp_path / "b.csv", progress=False)
    plan = plan_buckets(
        ENGINE,
        [
            dataclasses.replace(base, table_size=q, arrivals_per_step=a)
            for q in axes["table_size"]
            for a in axes["arrivals_per_step"]
        ],
    )
    assert len(plan) == 1 and plan[0].padded
    assert _block_compiles(n0) == 1
    n1 = len(_COMPILES)
    with pytest.warns(RuntimeWarning, match="full"):
        alone = run_sweep(base, axes, range(3), tmp_path / "a.csv", progress=False, buckets=False)
    assert _block_compiles(n1) == 4
    rows_b, rows_a = (
        {r["key"]: r for r in csv.DictReader(path.read_text().splitlines())} for path in (bucketed, alone)
    )
    assert rows_b.keys() == rows_a.keys() and len(rows_a) == 4
    cols = [c for c in next(iter(rows_a.values())) if c.endswith(("_mean", "_std", "_ci95"))]
    assert "table_overflow_mean" in cols
    for k, r in rows_a.items():
        assert rows_b[k]["table_size"] == r["table_size"]  # the point's own config
        for col in cols:
            assert rows_b[k][col] == r[col], (r["point"], col)
    assert any(float(r["table_overflow_mean"]) > 0 for r in rows_a.values())
