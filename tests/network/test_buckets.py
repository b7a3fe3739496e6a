"""Size buckets of the network engine: a run padded into a larger table_size (and, behind a
router, more agents) gives bitwise the metrics and trajectories of the unpadded run, and a
sweep over table sizes compiles once per bucket.

The padded runs of one test share one bucket config, so they also share one compiled program
(`simulate_points`), the way a sweep runs them. The rates load the agents near their capacity
with small rings, so rings wrap, tables reject and agents wait.
"""

from __future__ import annotations

import dataclasses
import re

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.buckets import plan_buckets
from jaxsched.errors import ConfigError
from jaxsched.network import NetworkConfig, make_params
from jaxsched.network.engine import ENGINE
from jaxsched.run import simulate, simulate_points
from jaxsched.sweep import run_sweep
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from tests.sweep_checks import COMPILES as _COMPILES
from tests.sweep_checks import block_compiles as _block_compiles
from tests.sweep_checks import refuses_common_capacities, same_rows

LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"), Independent(Constant(5), UniformInt(1, 4), name="b"))
# Per agent: budget 16 tokens in 50 ms + 10 ms/token batches.
AGENT = {"budget": 16, "max_requests": 6, "c_s": 0.05, "a_s_per_token": 0.01, "b0": 4}
# vLLM's and FasterTransformer's whole-prompt cap (make_params refuses it for the others).
PREFILL_CAP = {"vllm": 24, "ft": 24}


def _config(table_size: int = 8, agents: int = 2, **kw) -> NetworkConfig:
    base = {
        "topology": "parallel",
        "agents": agents,
        "workload": LAWS,
        "router": "fewest_tokens",
        "policy": "sarathi",
        "horizon_s": 10.0,
        "burn_in_s": 1.0,
        "table_size": table_size,
        "max_steps": 8000,
        "snapshots": 8,
    }
    base.update(kw)
    return NetworkConfig(**base)


def _params(cfg: NetworkConfig, **kw) -> dict:
    # About 1.5 requests/s per agent and type, 0.9 of an agent's tokens per second.
    per_agent = {"parallel": cfg.K, "fork_join": 0.5}.get(cfg.topology, 1.0)
    cap = {"prefill_cap": PREFILL_CAP[cfg.policy]} if cfg.policy in PREFILL_CAP else {}
    return {**AGENT, **cap, "rates": [1.5 * per_agent] * cfg.m, **kw}


def _same_runs(configs: list[NetworkConfig], capacity: dict, seeds=(0, 1, 2)) -> None:
    """Every config alone equals the same config padded into `capacity`, all padded runs in one
    simulate_points call: metrics bitwise; trajectories bitwise once `ENGINE.trim` has cut
    them to the run's own steps (the runs of one call share the longest run's length) and,
    per slot, to its own Q slots."""
    alone = [simulate(c, make_params(c, **_params(c)), seeds, warn=False, record=True) for c in configs]
    padded = [ENGINE.pad(c, make_params(c, **_params(c)), capacity) for c in configs]
    bucket = padded[0][0]
    assert all(b == bucket for b, _ in padded)
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=True)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True), (c, k, a.metrics[k], b.metrics[k])
        own = ENGINE.trim(c, b.trajectories)
        assert own.keys() == a.trajectories.keys()
        for k, v in a.trajectories.items():
            assert v.shape == own[k].shape and np.array_equal(v, own[k]), (c, k)
        assert np.all(a.metrics["done"] == 1) and np.all(a.metrics["num_departed"] > 0)


# name -> (NetworkConfig keywords of the two configs, capacity, in the default run?). Each case
# compiles three programs (about 4-10 s each on one CPU core, fork_join twice that); the
# default run pads agents and tables behind a router and the tables of a route network.
WC = {"router": "fewest_requests", "policy": "wc", "inner_order": "srpt"}
VLLM = {"router": "random", "policy": "vllm"}
ROUTES = {
    "topology": "routes",
    "agents": 2,
    "workload": ((LAWS[0], LAWS[1]), (LAWS[1], LAWS[0])),
    "routes": ((0, 1), (1, 0)),
    "policy": "priority",
    "type_orders": ((1, 0), (0, 1)),
}
FORK_JOIN = {"topology": "fork_join", "agents": 4, "workload": ((LAWS[1],) * 4, (LAWS[0],) * 4), "policy": "orca"}
CASES = {
    # Tables of 5 and 8 slots behind 2 and 3 agents, in a bucket of 9 slots and 4 agents.
    "parallel-fewest_tokens-sarathi": (
        [
            {"table_size": 5, "agents": 2, "record_members": True},
            {"table_size": 8, "agents": 3, "record_members": True},
        ],
        {"table_size": 9, "agents": 4},
        True,
    ),
    "parallel-fewest_requests-wc-srpt": (
        [{"table_size": 6, "agents": 3, **WC}, {"table_size": 4, "agents": 1, **WC}],
        {"table_size": 7, "agents": 3},
        False,
    ),
    "parallel-random-vllm": (
        [{"table_size": 6, "agents": 2, **VLLM}, {"table_size": 3, "agents": 3, **VLLM}],
        {"table_size": 8, "agents": 5},
        False,
    ),
    # Routes: transfers between the agents' rings (the multi-task entry); tables only.
    "routes-priority": ([{"table_size": q, **ROUTES} for q in (4, 7)], {"table_size": 8}, True),
    # fork_join: the join's ring is the table too (ids mod Q).
    "fork_join-orca": ([{"table_size": q, **FORK_JOIN} for q in (3, 6)], {"table_size": 8}, False),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if CASES[n][2] else pytest.mark.slow) for n in CASES])
def test_padded_equals_unpadded(name):
    configs, capacity, _ = CASES[name]
    _same_runs([_config(**kw) for kw in configs], capacity)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["random", "fewest_requests", "fewest_tokens"]),
    st.sampled_from(["sarathi", "orca", "ft", "priority"]),
    st.integers(3, 12),
    st.integers(1, 3),
    st.integers(0, 6),
    st.integers(0, 2),
)
def test_padded_equals_unpadded_random(router, policy, Q, K, extra_q, extra_k):
    cfg = _config(Q, K, router=router, policy=policy)
    _same_runs([cfg], {"table_size": Q + extra_q, "agents": K + extra_k}, seeds=(4, 5))


def test_pad_refuses_bad_capacity():
    cfg = _config(8, 2)
    par = make_params(cfg, **_params(cfg))
    refuses_common_capacities(ENGINE, cfg, par, "table_size")
    with pytest.raises(ConfigError, match="capacity agents"):
        ENGINE.pad(cfg, par, {"agents": 1})
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, {"snapshots": 16})
    with pytest.raises(ConfigError, match="agents"):  # beyond MAX_AGENTS
        ENGINE.pad(cfg, par, {"agents": 65})
    fj = _config(4, 4, topology="fork_join", workload=((LAWS[1],) * 4,), policy="orca")
    with pytest.raises(ConfigError, match="capacity agents.*fork_join"):
        ENGINE.pad(fj, make_params(fj, **_params(fj)), {"agents": 5})
    # Explicit per-agent priorities are extended with the default for the padded agents.
    pr = _config(8, 2, policy="priority", type_orders=((1, 0), (0, 1)))
    bucket, _ = ENGINE.pad(pr, make_params(pr, **_params(pr)), {"agents": 3})
    assert bucket.type_orders == ((1, 0), (0, 1), (0, 1))


def test_working_set_is_monotone_in_the_sizes():
    base = _config(8, 2)
    ws = [
        [ENGINE.working_set_bytes(dataclasses.replace(base, table_size=Q, agents=K)) for K in (1, 2, 8)]
        for Q in (8, 64, 512)
    ]
    assert np.all(np.diff(ws, axis=0) > 0) and np.all(np.diff(ws, axis=1) > 0)


# The default run sweeps table sizes at one agent count; `-m slow` pads the agents too.
@pytest.mark.parametrize("agents", [[2], pytest.param([2, 3], marks=pytest.mark.slow)])
def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path, agents):
    base = _config(8, 2)
    axes = {"table_size": [4, 6], "agents": agents}
    jax.clear_caches()  # the other case's programs must not count as compiled here
    params = _params(base, rates=[3.0, 3.0])
    n0 = len(_COMPILES)
    # The smaller tables overflow at this load: each point's warning names its own table size,
    # not the bucket's.
    with pytest.warns(RuntimeWarning) as warned:
        bucketed = run_sweep(base, axes, range(2), tmp_path / "b.csv", params=params, progress=False)
    sizes = {re.search(r"table_size (\d+) full", str(w.message))[1] for w in warned}
    assert "4" in sizes and sizes <= {"4", "6"}
    plan = plan_buckets(
        ENGINE, [dataclasses.replace(base, table_size=q, agents=k) for q in axes["table_size"] for k in axes["agents"]]
    )
    assert len(plan) == 1 and plan[0].padded
    assert _block_compiles(n0) == len(plan)
    n1 = len(_COMPILES)
    with pytest.warns(RuntimeWarning, match="full"):
        alone = run_sweep(base, axes, range(2), tmp_path / "a.csv", params=params, progress=False, buckets=False)
    assert _block_compiles(n1) == 2 * len(agents)
    same_rows(alone, bucketed, 2 * len(agents), ["table_size", "agents"])
