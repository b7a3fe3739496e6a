"""budget rings grown on overflow (`BudgetConfig.grow_table`, `jaxsched.tables`): a run that
rejects an arrival at a full ring slot runs again with twice the slots, and its metrics are
bitwise those of a ring large enough from the start, alone, padded into a size bucket, and as
points of one `simulate_points` call. The property test checks the argument behind it on
random cases: at a power-of-two Q, a run that rejects nothing has bitwise the metrics it has at
4Q, with the ring wrapping several times."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.budget import BudgetConfig, make_params
from jaxsched.budget.engine import ENGINE
from jaxsched.run import simulate, simulate_points
from jaxsched.workload import Constant, Independent
from tests.table_checks import assert_same, check_grow_table_field

SEEDS = tuple(range(6))
# Fig. 1's requests (129 + 112 tokens) at 1.8 requests/s for 60 s: about 108 arrivals, up to
# about 15 in the system at once. A ring of 8 slots rejects arrivals in every run, 64 in none.
RATE = 1.8
BIG = 64


def _config(policy: str = "sarathi", Q: int = 8, grow: bool = True) -> BudgetConfig:
    return BudgetConfig(policy=policy, horizon_s=60.0, table_size=Q, arrivals_per_step=2, grow_table=grow)


def _run(config: BudgetConfig, seeds=SEEDS, **kw):
    return simulate(config, make_params(config, rates=[RATE]), seeds=seeds, warn=False, **kw)


def test_grow_table_is_a_bool_with_a_power_of_two_table():
    check_grow_table_field(BudgetConfig, record_members=True)
    # Fig. 1's max_len = 241 tokens: 2^30 / 241 allows more than the bound 2^20.
    assert BudgetConfig(table_size=1024, grow_table=True).max_table_size() == 2**20


def test_a_grown_table_changes_no_metric():
    big = _run(_config(Q=BIG, grow=False)).metrics
    assert big["num_rejected"].max() == 0
    assert big["num_departed"].min() > 2 * 32  # rings of up to 32 slots wrap twice or more
    fixed = _run(_config(grow=False))
    assert fixed.metrics["num_rejected"].min() > 0  # every run of the small ring rejects some
    assert "or set grow_table" in ENGINE.check(fixed.config, fixed.metrics)[0]
    grown = _run(_config())
    assert_same(grown.metrics, big)
    assert ENGINE.check(grown.config, grown.metrics) == []  # nothing rejected, nothing to warn about


def test_a_grown_table_records_the_larger_tables_trajectories():
    big = _run(_config(Q=BIG, grow=False), seeds=SEEDS[:2], record=True)
    grown = _run(_config(), seeds=SEEDS[:2], record=True)
    for k, v in big.trajectories.items():
        w = grown.trajectories[k]
        assert not np.any(w[:, v.shape[1] :]), k  # rows past the runs' ends are zeros
        np.testing.assert_array_equal(w[:, : v.shape[1]], v, err_msg=k)


def test_padded_points_grow_with_their_bucket():
    # Two own sizes inside one 16-slot bucket, run as the points of one call (a sweep's way):
    # the bucket and each run's own ring double together until nothing is rejected.
    configs = [_config(Q=Q) for Q in (8, 16)]
    padded = [ENGINE.pad(c, make_params(c, rates=[RATE]), {"table_size": 16, "arrivals_per_step": 2}) for c in configs]
    bucket = padded[0][0]
    together = simulate_points(bucket, [p for _, p in padded], SEEDS, warn=False)
    big = _run(_config(Q=BIG, grow=False)).metrics
    for got in together:
        assert_same(got.metrics, big)


def test_growth_stops_at_the_largest_table():
    # max_len = 2^20 + 1 tokens allows a ring of 1023 slots: the largest power of two is 512.
    law = Independent(Constant(2**20), Constant(1))
    c = BudgetConfig(workload=law, horizon_s=1.0, table_size=512, grow_table=True)
    assert c.max_table_size() == 512
    params = make_params(c, rates=[1.0])
    lost = {"num_rejected": np.array([3.0, 0.0])}
    assert ENGINE.regrow(c, params, lost) is None
    small = dataclasses.replace(c, table_size=128)
    bigger, _, again = ENGINE.regrow(small, params, lost)
    assert bigger.table_size == 256 and again.tolist() == [True, False]
    assert ENGINE.regrow(dataclasses.replace(small, grow_table=False), params, lost) is None
    assert ENGINE.regrow(small, params, {"num_rejected": np.zeros(2)}) is None
    warned = ENGINE.check(c, {"overflowed": np.array([1.0]), "done": np.ones(1), "stalled": np.zeros(1)})
    assert "largest table, 512 slots" in warned[0]


@pytest.mark.parametrize("policy", ["sarathi", "vllm"])
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(rate=st.floats(1.1, 1.6), seed=st.integers(0, 2**20))
def test_no_rejection_at_q_means_the_metrics_of_4q(policy, rate, seed):
    """The argument of `jaxsched.tables`: at a power-of-two Q, a run that rejects no arrival has
    bitwise the metrics it has at 4Q (the pairwise float sums fold the 4Q-slot ring onto Q slots
    by adding exact zeros; integer sums and entry-ordered prefix sums are the same). Some 100
    to 140 arrivals wrap the 16-slot ring several times."""
    small = BudgetConfig(policy=policy, horizon_s=90.0, table_size=16, arrivals_per_step=2)
    params = make_params(small, rates=[rate])
    seeds = range(seed, seed + 4)
    a = simulate(small, params, seeds=seeds, warn=False).metrics
    b = simulate(dataclasses.replace(small, table_size=64), params, seeds=seeds, warn=False).metrics
    clean = a["num_rejected"] == 0
    assert clean.any() and b["num_rejected"][clean].max() == 0
    assert a["num_departed"][clean].min() > 3 * 16  # the ring wrapped
    for k in a:
        assert np.array_equal(a[k][clean], b[k][clean], equal_nan=True), k
