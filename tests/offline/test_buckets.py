"""Size buckets of the offline engine: a run of n requests padded into a bucket of more gives
bitwise the metrics and trajectories of the unpadded run, and a sweep over n compiles once per
bucket.

The padded runs of one test share one bucket config, so they also share one compiled program
(`simulate_points`), the way a sweep runs them. Trajectories are compared on the steps where
the unpadded run is live: a row after a run's end depends on whether other runs of its seed
chunk are still live (`jaxsched.run`), in either layout.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.buckets import plan_buckets
from jaxsched.errors import ConfigError
from jaxsched.offline import LINEAR_STEP_MODEL, POLICIES, OfflineConfig, make_params
from jaxsched.offline.engine import ENGINE
from jaxsched.run import simulate, simulate_points
from jaxsched.workload import Batch, Independent, Trace, UniformInt
from tests.sweep_checks import bucketed_sweep_equals_alone


def same_runs(engine, configs: list, capacity: dict, seeds=(0, 1, 2), record=True, **params_kw) -> None:
    """Every config alone equals the same config padded into `capacity`, all padded runs in one
    simulate_points call: metrics bitwise, trajectories on the steps the run is live."""
    alone = [simulate(c, engine.make_params(c, **params_kw), seeds, warn=False, record=record) for c in configs]
    padded = [engine.pad(c, engine.make_params(c, **params_kw), capacity) for c in configs]
    bucket = padded[0][0]
    assert all(b == bucket for b, _ in padded)
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=record)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k]), (c.n, k, a.metrics[k], b.metrics[k])
        if not record:
            continue
        live = a.trajectories["live"]
        K = live.shape[1]
        assert not b.trajectories["live"][:, K:].any(), c.n
        for k, v in a.trajectories.items():
            w = b.trajectories[k][:, :K]
            assert np.array_equal(np.where(live, v, 0), np.where(live, w, 0)), (c.n, k)


# Each case compiles three programs: two policies run by default (a sort, and quantile
# greedy, whose sample hashes a count of requests; the random test draws FCFS and MC-SF2 too),
# the rest with -m slow.
_DEFAULT = ("mcsf", "sorted_f_quantile")
CASES = [pytest.param(p, marks=() if p in _DEFAULT else pytest.mark.slow) for p in POLICIES]


@pytest.mark.parametrize("policy", CASES)
def test_padded_equals_unpadded(policy):
    # EC.4.2's normal mix (rounded draws of float normals), M = 60 so that some requests
    # never fit alone (dropped and counted), the linear step-time model (float times, summed
    # over the requests in tel_s). n = 13 and 37 inside a bucket of 45.
    configs = [OfflineConfig("normal", num_requests=n, policy=policy) for n in (13, 37)]
    same_runs(ENGINE, configs, dict(num_requests=45), capacity_tokens=60, **LINEAR_STEP_MODEL)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mcsf2", "sorted_f_quantile"])
def test_padded_equals_unpadded_large(policy):
    # More than 128 requests (numpy's pairwise summation splits there) from the section-7 mix
    # (lognormal lengths), some too long for M.
    configs = [OfflineConfig("mix", num_requests=n, policy=policy) for n in (150, 257)]
    same_runs(
        ENGINE, configs, dict(num_requests=300), seeds=range(4), record=False, capacity_tokens=3000, **LINEAR_STEP_MODEL
    )


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["fcfs", "mcsf", "mcsf2"]),
    st.sampled_from(["uniform", "exponential"]),
    st.integers(1, 40),
    st.integers(1, 30),
    st.integers(20, 120),
)
def test_padded_equals_unpadded_random(policy, workload, n, extra, M):
    cfg = OfflineConfig(workload, num_requests=n, policy=policy)
    same_runs(
        ENGINE,
        [cfg],
        dict(num_requests=n + extra),
        seeds=(0, 1),
        capacity_tokens=M,
        per_decode_s=0.01,
        per_kv_token_s=1e-3,
    )


def test_num_requests_resizes_a_batch():
    law = Independent(UniformInt(1, 9), UniformInt(1, 9))
    cfg = OfflineConfig(Batch(law, 50), num_requests=80)
    assert cfg.n == 80 and cfg.workload == Batch(law, 80)
    named = OfflineConfig("uniform", num_requests=30)
    assert dataclasses.replace(named, num_requests=70).n == 70
    trace = Trace(np.array([1, 2, 3]), np.array([4, 5, 6]), order="sequential")
    with pytest.raises(ConfigError, match="num_requests"):
        OfflineConfig(trace, num_requests=5)


def test_pad_refuses_bad_capacity():
    cfg = OfflineConfig("uniform", num_requests=20)
    par = make_params(cfg, capacity_tokens=100)
    with pytest.raises(ConfigError, match="capacity num_requests"):
        ENGINE.pad(cfg, par, dict(num_requests=19))
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, dict(max_steps=500))
    with pytest.raises(ConfigError, match="capacity"):
        ENGINE.pad(cfg, par, [40])
    with pytest.raises(ConfigError, match="padded"):
        ENGINE.pad(cfg, ENGINE.pad(cfg, par, dict(num_requests=40))[1], dict(num_requests=40))
    quantile = OfflineConfig("uniform", num_requests=20, policy="sorted_f_quantile")
    with pytest.raises(ConfigError, match="capacity num_requests"):  # the policy's n <= 2^16
        ENGINE.pad(quantile, par, dict(num_requests=70_000))
    trace = Trace(np.array([1, 2, 3]), np.array([4, 5, 6]), order="sequential")
    fixed = OfflineConfig(trace)
    assert not ENGINE.can_pad(fixed)
    with pytest.raises(ConfigError, match="workload"):
        ENGINE.pad(fixed, make_params(fixed, capacity_tokens=100), dict(num_requests=5))
    own = OfflineConfig(Batch(Independent(UniformInt(1, 9), UniformInt(1, 9)), 10))
    assert not ENGINE.can_pad(own)
    with pytest.raises(ConfigError, match="num_requests"):
        ENGINE.pad(own, make_params(own, capacity_tokens=100), dict(num_requests=20))


def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path):
    base = OfflineConfig("binomial", num_requests=10, policy="mcsf2")
    axes = {"num_requests": [12, 21, 17]}
    params = dict(capacity_tokens=80, per_decode_s=0.02)
    plan = plan_buckets(ENGINE, [dataclasses.replace(base, num_requests=n) for n in axes["num_requests"]])
    assert len(plan) == 1 and plan[0].padded and plan[0].config.n == 21
    bucketed_sweep_equals_alone(base, axes, tmp_path, params, len(plan), 3, ["num_requests"])
