"""network tables grown on overflow (`NetworkConfig.grow_table`, `jaxsched.tables`): a run that
rejects a task at a held slot runs again with twice the slots per agent, and its metrics are
bitwise those of a table large enough from the start, alone, padded into a size bucket, and as
points of one `simulate_points` call. The property test checks the argument behind it on random
cases: at a power-of-two Q, a run that rejects nothing has bitwise the metrics it has at 4Q,
with every agent's ring wrapping several times."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.network import NetworkConfig, make_params
from jaxsched.network.engine import ENGINE
from jaxsched.run import simulate, simulate_points
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from tests.table_checks import assert_same, check_grow_table_field

# The seeds of 0..15 whose runs reject tasks at Q = 8 in `_config`: all six, and none at 16.
SEEDS = (0, 1, 5, 6, 7, 8)
LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"), Independent(Constant(5), UniformInt(1, 4), name="b"))
# Small agents: batches of at most 4 requests, 0.3 s + 10 ms per token over 4 (budgets drawn).
AGENT = dict(max_requests=4, c_s=0.3, a_s_per_token=0.01, b0=4)
# The Rybko-Stolyar network scaled down (tests/network/test_properties.py): slotted, 1 s batches.
SHORT = Independent(Poisson(2.0), Poisson(2.0), name="short")
LONG = Independent(Poisson(12.0), Poisson(2.0), name="long")


def _config(Q: int = 8, grow: bool = True, **kw) -> NetworkConfig:
    # Two agents behind fewest_tokens; at 5 requests/s (`_params`) Q = 8 rejects tasks in every
    # run of SEEDS, 16 in none (about 50 tasks per agent over the horizon).
    base = dict(
        topology="parallel",
        agents=2,
        workload=LAWS,
        router="fewest_tokens",
        policy="sarathi",
        horizon_s=20.0,
        max_steps=3000,
        snapshots=8,
        table_size=Q,
        grow_table=grow,
    )
    return NetworkConfig(**{**base, **kw})


def _params(config: NetworkConfig, rates=(2.5, 2.5), budget: int = 12):
    return make_params(config, rates=list(rates), **{**AGENT, "budget": budget})


def test_grow_table_is_a_bool_with_a_power_of_two_table():
    check_grow_table_field(NetworkConfig, record_members=True)
    # Fig. 1's requests: 2^30 / (2 agents * 241 tokens) allows more than table_size's 2^20.
    c = NetworkConfig(table_size=1024, grow_table=True)
    assert c.max_len == 241 and c.max_table_size() == 2**20


def test_a_grown_table_changes_no_metric():
    params = _params(_config())
    big = simulate(_config(32, grow=False), params, seeds=SEEDS, warn=False).metrics
    assert big["num_rejected"].max() == 0
    fixed = simulate(_config(grow=False), params, seeds=SEEDS, warn=False)
    assert fixed.metrics["num_rejected"].min() > 0  # every run of the small table rejects tasks
    assert "or set grow_table" in ENGINE.check(fixed.config, fixed.metrics)[0]
    grown = simulate(_config(), params, seeds=SEEDS, warn=False)
    assert_same(grown.metrics, big)
    assert ENGINE.check(grown.config, grown.metrics) == []  # nothing rejected, nothing to warn about


def test_a_grown_table_records_the_larger_tables_trajectories():
    params = _params(_config())
    big = simulate(_config(32, grow=False), params, seeds=SEEDS[:2], warn=False, record=True)
    grown = simulate(_config(), params, seeds=SEEDS[:2], warn=False, record=True)
    for k, v in big.trajectories.items():
        w = grown.trajectories[k]
        assert not np.any(w[:, v.shape[1] :]), k  # rows past the runs' ends are zeros
        np.testing.assert_array_equal(w[:, : v.shape[1]], v, err_msg=k)


def test_padded_points_grow_with_their_bucket():
    # Two own sizes inside one 16-slot bucket, run as the points of one call (a sweep's way):
    # the bucket and each run's own ring double together until nothing is rejected.
    configs = [_config(Q) for Q in (8, 16)]
    padded = [ENGINE.pad(c, _params(c), {"table_size": 16}) for c in configs]
    bucket = padded[0][0]
    together = simulate_points(bucket, [p for _, p in padded], SEEDS, warn=False)
    big = simulate(_config(32, grow=False), _params(_config()), seeds=SEEDS, warn=False).metrics
    for got in together:
        assert_same(got.metrics, big)


def test_growth_stops_at_the_largest_table():
    # max_len = 2^19 + 1 tokens on 2 agents allows 2^30 / (2^20 + 2) = 1023 slots: 512.
    wide = (Independent(Constant(2**19), Constant(1), name="wide"),)
    c = _config(512, workload=wide)
    assert c.max_table_size() == 512
    lost = {"num_rejected": np.array([3.0, 0.0])}
    params = _params(c, rates=(1.0,))
    assert ENGINE.regrow(c, params, lost) is None
    small = dataclasses.replace(c, table_size=128)
    bigger, same, again = ENGINE.regrow(small, params, lost)
    assert bigger.table_size == 256 and again.tolist() == [True, False] and same is params
    assert ENGINE.regrow(dataclasses.replace(small, grow_table=False), params, lost) is None
    assert ENGINE.regrow(small, params, {"num_rejected": np.zeros(2)}) is None
    warned = ENGINE.check(c, {"overflowed": np.ones(1), "done": np.ones(1), "stalled": np.zeros(1)})
    assert "grow_table stopped at the largest table, 512 slots" in warned[0]


def _rs_config(Q: int) -> NetworkConfig:
    return NetworkConfig(
        topology="routes",
        agents=2,
        workload=((SHORT, LONG), (SHORT, LONG)),
        routes=((0, 1), (1, 0)),
        policy="priority",
        type_orders=((1, 0), (0, 1)),
        horizon_s=80.0,
        max_steps=4000,
        snapshots=8,
        table_size=Q,
    )


@pytest.mark.parametrize("network", ["parallel", "rs"])
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(load=st.floats(0.6, 1.0), budget=st.integers(12, 40), seed=st.integers(0, 2**20))
def test_no_loss_at_q_means_the_metrics_of_4q(network, load, budget, seed):
    """The argument of `jaxsched.tables`: at a power-of-two Q, a run that rejects no task has
    bitwise the metrics it has at 4Q (the ring folds onto Q slots by adding exact zeros).
    `parallel`: `_config` (fewest_tokens, sarathi; its compiled programs are the tests'
    above); `rs`: two routes through both agents under `priority`, where every request is a
    task at both agents. The runs' agents take more than 2Q tasks each on average (every
    departure's tasks and the tasks left: burn_in_s = 0, so every departure counts), so the
    rings wrap."""
    Q = 8
    if network == "parallel":
        small, stages = _config(Q, grow=False), 1
        params = _params(small, rates=(2.5 * load, 2.5 * load), budget=budget)
    else:
        small, stages = _rs_config(Q), 2
        rates = [0.4 * load, 0.4 * load]
        params = make_params(small, rates=rates, budget=budget, c_s=1.0, a_s_per_token=0.0, b0=0)
    seeds = range(seed, seed + len(SEEDS))
    a = simulate(small, params, seeds=seeds, warn=False).metrics
    b = simulate(dataclasses.replace(small, table_size=4 * Q), params, seeds=seeds, warn=False).metrics
    clean = a["num_rejected"] == 0
    assert clean.any() and b["num_rejected"][clean].max() == 0
    tasks = stages * a["num_departed"] + a["requests_end"]
    assert tasks[clean].min() > 2 * small.K * Q
    for k in a:
        np.testing.assert_array_equal(a[k][clean], b[k][clean], err_msg=k)
