"""Size buckets of the budget engine: a run padded into a larger table_size and
arrivals_per_step gives bitwise the metrics and trajectories of the unpadded run, and a sweep
over table sizes compiles once per bucket.

The padded runs of one test share one bucket config, so they also share one compiled program
(`simulate_points`), the way a sweep runs them. The loads are high enough that the ring wraps
many times and small tables reject arrivals, so the ring's `entry mod Q` is exercised.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.buckets import plan_buckets
from jaxsched.budget import BudgetConfig, make_params
from jaxsched.budget.engine import ENGINE
from jaxsched.errors import ConfigError
from jaxsched.run import simulate, simulate_points
from jaxsched.sweep import run_sweep
from jaxsched.workload import Independent, Poisson
from tests.sweep_checks import COMPILES as _COMPILES
from tests.sweep_checks import block_compiles as _block_compiles
from tests.sweep_checks import refuses_common_capacities, same_rows

SIZES = ("table_size", "arrivals_per_step")
# Two request types (priority orders them); prompts up to 86 tokens, decodes up to 70.
LAWS = (Independent(Poisson(20), Poisson(12), name="short"), Independent(Poisson(8), Poisson(30), name="long"))
# About 1.3 times the token capacity of b = 64 in 10 ms + 0.2 ms/token batches: queues grow,
# the ring wraps and the small tables overflow.
PARAMS = {
    "rates": [30.0, 20.0],
    "budget": 64,
    "max_requests": 16,
    "c_s": 0.01,
    "a_s_per_token": 0.0002,
    "b0": 8,
}
# vLLM's and FasterTransformer's whole-prompt cap (make_params refuses it for the others).
PREFILL_CAP = {"vllm": 96, "ft": 96}


def _config(Q: int, A: int, policy: str = "sarathi", **kw) -> BudgetConfig:
    return BudgetConfig(
        workload=LAWS, policy=policy, horizon_s=4.0, table_size=Q, arrivals_per_step=A, max_steps=6_000, **kw
    )


def _same_runs(configs: list[BudgetConfig], capacity: dict, seeds=(0, 1, 2), **params_kw) -> None:
    """Every config alone equals the same config padded into `capacity`, all padded runs in one
    simulate_points call: metrics bitwise; trajectories bitwise once `ENGINE.trim` has cut
    them to the run's own steps (the runs of one call share the longest run's length) and,
    per slot, to its own Q slots."""
    kw = lambda c: {
        **PARAMS,
        **({"prefill_cap": PREFILL_CAP[c.policy]} if c.policy in PREFILL_CAP else {}),
        **params_kw,
    }
    alone = [simulate(c, make_params(c, **kw(c)), seeds, warn=False, record=True) for c in configs]
    padded = [ENGINE.pad(c, make_params(c, **kw(c)), capacity) for c in configs]
    bucket = padded[0][0]
    assert all(b == bucket for b, _ in padded)
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=True)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True), (c, k, a.metrics[k], b.metrics[k])
        for k in ("entry", "id", "dp", "dd") if c.record_members else ():
            # The padded slots never hold a request (entry -1, the rest 0).
            assert np.all(b.trajectories[k][..., c.table_size :] <= 0), (c, k)
        own = ENGINE.trim(c, b.trajectories)
        assert own.keys() == a.trajectories.keys()
        for k, v in a.trajectories.items():
            assert v.shape == own[k].shape and np.array_equal(v, own[k]), (c, k)
        assert np.all(a.metrics["done"] == 1)


POLICIES = {
    "sarathi": {},
    "orca": {},
    "vllm": {},
    "ft": {},
    # SRPT sorts the ring: padded slots must sort last and take nothing.
    "wc": {"inner_order": "srpt", "phase_first": "prefill"},
    "priority": {"type_order": (1, 0)},
}
# Each case compiles three programs (about 3-8 s each on one CPU core): sarathi (FCFS prefix
# sums on the ring), vllm (whole prompts), wc (the SRPT sort) and priority (per-type phases)
# run by default; orca and ft, built from the same phases, with -m slow.
_DEFAULT = ("sarathi", "vllm", "wc", "priority")


@pytest.mark.parametrize("policy", [pytest.param(p, marks=() if p in _DEFAULT else pytest.mark.slow) for p in POLICIES])
def test_padded_equals_unpadded(policy):
    # Table sizes inside the bucket of 40 slots, odd and even, one a power of two (the
    # ordered sums' tree): 13 overflows, 32 rarely; arrivals 3 and 5 per step of 7.
    configs = [_config(Q, A, policy, record_members=True, **POLICIES[policy]) for Q, A in [(13, 3), (32, 5)]]
    _same_runs(configs, {"table_size": 40, "arrivals_per_step": 7})


# The options that change the step: the batch-time terms read the table (the KV overhead's
# FCFS prefix sums from the oldest member, the attention sums), a backlog fills it at t = 0,
# a finite stream drains it.
OPTIONS = [
    pytest.param(
        {"attention": True, "attention_prefix": True},
        {"alpha": 1e-6, "beta": 2e-7},
        id="attention",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        {"memory_overhead": "swap"},
        {"kv_limit_tokens": 300, "swap_a1_s_per_token": 1e-5, "swap_a2_s": 1e-3},
        id="swap",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        {"memory_overhead": "recompute"},
        {"kv_limit_tokens": 300, "recompute_b1_s_per_token2": 1e-8, "recompute_b2_s": 1e-3},
        id="recompute",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        {"initial_requests": (6, 4), "num_requests": 300, "burn_in_s": 1.0}, {}, id="backlog", marks=pytest.mark.slow
    ),
]


@pytest.mark.parametrize("options, params_kw", OPTIONS)
def test_padded_options_equal_unpadded(options, params_kw):
    configs = [_config(Q, A, "wc", **options) for Q, A in [(16, 4), (27, 2)]]
    _same_runs(configs, {"table_size": 33, "arrivals_per_step": 4}, **params_kw)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(POLICIES)), st.integers(10, 40), st.integers(1, 8), st.integers(0, 30), st.integers(0, 4))
def test_padded_equals_unpadded_random(policy, Q, A, extra_q, extra_a):
    A = min(A, Q)
    cfg = _config(Q, A, policy, **POLICIES[policy])
    cap = {"table_size": Q + extra_q, "arrivals_per_step": min(A + extra_a, Q + extra_q)}
    _same_runs([cfg], cap, seeds=(5, 6))


def test_pad_refuses_bad_capacity():
    cfg = _config(16, 4)
    par = make_params(cfg, **PARAMS)
    refuses_common_capacities(ENGINE, cfg, par, "table_size")
    with pytest.raises(ConfigError, match="capacity arrivals_per_step"):
        ENGINE.pad(cfg, par, {"arrivals_per_step": 3})
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, {"snapshots": 64})
    with pytest.raises(ConfigError, match="capacity table_size"):
        ENGINE.pad(cfg, par, {"table_size": 2.5})
    # A bucket the config's own checks refuse (int32 token sums over the table).
    with pytest.raises(ConfigError, match="table_size"):
        ENGINE.pad(cfg, par, {"table_size": 2**21})


def test_working_set_is_monotone_in_the_sizes():
    base = _config(16, 4)
    ws = [
        [ENGINE.working_set_bytes(dataclasses.replace(base, table_size=Q, arrivals_per_step=A)) for A in (1, 4, 16)]
        for Q in (16, 64, 256)
    ]
    assert np.all(np.diff(ws, axis=0) > 0) and np.all(np.diff(ws, axis=1) >= 0)


def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path):
    base = _config(16, 4)
    axes = {"table_size": [12, 20]}
    params = dict(PARAMS)
    n0 = len(_COMPILES)
    # Both tables overflow at this load: each point's warning names its own table size, not
    # the bucket's.
    with pytest.warns(RuntimeWarning) as warned:
        bucketed = run_sweep(base, axes, range(3), tmp_path / "b.csv", params=params, progress=False)
    assert sorted(re.search(r"table_size (\d+) full", str(w.message))[1] for w in warned) == ["12", "20"]
    plan = plan_buckets(ENGINE, [dataclasses.replace(base, table_size=Q) for Q in axes["table_size"]])
    assert len(plan) == 1 and plan[0].padded
    assert _block_compiles(n0) == len(plan)
    n1 = len(_COMPILES)
    with pytest.warns(RuntimeWarning, match="full"):
        alone = run_sweep(base, axes, range(3), tmp_path / "a.csv", params=params, progress=False, buckets=False)
    assert _block_compiles(n1) == 2
    rows_a = same_rows(alone, bucketed, 2, ["table_size"])  # the point's own table size
    rejected = [float(r["num_rejected_mean"]) for r in rows_a.values()]
    assert rejected[0] > rejected[1]  # the smaller table rejects more
