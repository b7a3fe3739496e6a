"""kv tables grown on overflow (`KVConfig.grow_table`, `jaxsched.tables`): a run that loses an
arrival to a full request table runs again with twice the slots, and its metrics are bitwise
those of a table large enough from the start, alone, padded into a size bucket, and as points
of one `simulate_points` call. The property test checks the argument behind it on random
cases: at a power-of-two Q, a run that loses nothing has bitwise the metrics it has at 4Q."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.kv import KVConfig, make_params
from jaxsched.kv.config import default_rates
from jaxsched.kv.engine import ENGINE
from jaxsched.run import simulate, simulate_points
from tests.table_checks import assert_same, check_grow_table_field

SEEDS = tuple(range(6))


def _config(policy: str = "wait", Q: int = 16, grow: bool = True) -> KVConfig:
    # 90 requests at the default load: Q = 16 loses arrivals in every run, 128 in none.
    return KVConfig(policy=policy, num_requests=90, table_size=Q, arrivals_per_step=4, grow_table=grow)


def test_grow_table_is_a_bool_with_a_power_of_two_table():
    check_grow_table_field(KVConfig, record_members=False)
    c = KVConfig(table_size=1024, grow_table=True)
    assert c.max_table_size() == 2**20  # INT_LIMIT / max_len = 2^30 / 30 allows more


def test_a_grown_table_changes_no_metric():
    big = simulate(_config(Q=128, grow=False), seeds=SEEDS, warn=False).metrics
    assert big["table_overflow"].max() == 0
    fixed = simulate(_config(grow=False), seeds=SEEDS, warn=False).metrics
    assert fixed["table_overflow"].min() > 0  # every run of the small table loses arrivals
    grown = simulate(_config(), seeds=SEEDS, warn=False)
    assert_same(grown.metrics, big)
    assert ENGINE.check(grown.config, grown.metrics) == []  # nothing lost, nothing to warn about


def test_a_grown_table_records_the_larger_tables_trajectories():
    big = simulate(_config(Q=128, grow=False), seeds=SEEDS[:2], warn=False, record=True)
    grown = simulate(_config(), seeds=SEEDS[:2], warn=False, record=True)
    for k, v in big.trajectories.items():
        w = grown.trajectories[k]
        assert not np.any(w[:, v.shape[1] :]), k  # rows past the runs' ends are zeros
        np.testing.assert_array_equal(w[:, : v.shape[1]], v, err_msg=k)


def test_padded_points_grow_with_their_bucket():
    # Two own sizes inside one 32-slot bucket, run as the points of one call (a sweep's way):
    # the bucket and each run's own ring double together until nothing is lost.
    configs = [_config(Q=Q) for Q in (16, 32)]
    padded = [ENGINE.pad(c, make_params(c), {"table_size": 32}) for c in configs]
    bucket = padded[0][0]
    together = simulate_points(bucket, [p for _, p in padded], SEEDS, warn=False)
    big = simulate(_config(Q=128, grow=False), seeds=SEEDS, warn=False).metrics
    for got in together:
        assert_same(got.metrics, big)


def test_growth_stops_at_the_largest_table():
    # max_len = 2^20 + 1 tokens allows a table of 1023 slots: the largest power of two is 512.
    c = KVConfig(
        prefill_tokens=(2**20,), decode_tokens=(1,), policy="fcfs", num_requests=10, table_size=512, grow_table=True
    )
    assert c.max_table_size() == 512
    lost = {"table_overflow": np.array([3.0, 0.0])}
    assert ENGINE.regrow(c, make_params(c, capacity_tokens=2**21), lost) is None
    small = dataclasses.replace(c, table_size=128)
    bigger, _, again = ENGINE.regrow(small, make_params(small, capacity_tokens=2**21), lost)
    assert bigger.table_size == 256 and again.tolist() == [True, False]
    assert (
        ENGINE.regrow(dataclasses.replace(small, grow_table=False), make_params(small, capacity_tokens=2**21), lost)
        is None
    )
    ended = {**lost, "done": np.ones(2), "stalled": np.zeros(2)}
    assert "grow_table stopped at the largest table, 512 slots" in ENGINE.check(c, ended)[0]
    assert "or set grow_table" in ENGINE.check(dataclasses.replace(c, grow_table=False), ended)[0]


@pytest.mark.parametrize("policy", ["wait", "fcfs", "vllm"])
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(load=st.floats(0.02, 0.035), seed=st.integers(0, 2**20))
def test_no_loss_at_q_means_the_metrics_of_4q(policy, load, seed):
    """The argument of `jaxsched.tables`: at a power-of-two Q, a run that loses no arrival has
    bitwise the metrics it has at 4Q (the ring folds onto Q slots by adding exact zeros). 600
    requests wrap a 128-slot ring more than four times at these light loads."""
    small = KVConfig(policy=policy, num_requests=600, table_size=128, arrivals_per_step=4)
    params = make_params(small, rates=default_rates(small, load=load))
    seeds = range(seed, seed + 4)
    a = simulate(small, params, seeds=seeds, warn=False).metrics
    b = simulate(dataclasses.replace(small, table_size=512), params, seeds=seeds, warn=False).metrics
    clean = a["table_overflow"] == 0
    assert clean.any() and b["table_overflow"].max() == 0
    for k in a:
        np.testing.assert_array_equal(a[k][clean], b[k][clean], err_msg=k)
