"""Size buckets of the interval engine: a run of n jobs padded into a bucket of more gives
bitwise the metrics and trajectories of the unpadded run, and a sweep over n compiles once per
bucket. The interval engine pads as the offline one does (`OfflineEngine.pad`, whose
comparison helper `same_runs` these tests share): padded jobs are never eligible.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.batchmodel import LINEAR_STEP_MODEL
from jaxsched.buckets import plan_buckets
from jaxsched.errors import ConfigError
from jaxsched.interval import POLICIES, IntervalConfig, make_params
from jaxsched.interval.engine import ENGINE
from jaxsched.interval.workloads import two_point
from jaxsched.workload import Batch
from tests.offline.test_buckets import same_runs
from tests.sweep_checks import bucketed_sweep_equals_alone

# Each case compiles three programs: A_min (evictions) and A_l (promotions) by default, the
# rest with -m slow.
_DEFAULT = ("amin", "al")
CASES = [pytest.param(p, marks=() if p in _DEFAULT else pytest.mark.slow) for p in POLICIES]


@pytest.mark.parametrize("policy", CASES)
def test_padded_equals_unpadded(policy):
    # Experiment 1's uninformed interval [1, 883] on the LMSYS-like jobs with M = 1500 (tight:
    # A_min evicts), the linear step-time model; n = 23 and 41 inside a bucket of 50.
    configs = [IntervalConfig("lmsys", num_requests=n, policy=policy, intervals="shared:1:883") for n in (23, 41)]
    same_runs(ENGINE, configs, dict(num_requests=50), capacity_tokens=1500, **LINEAR_STEP_MODEL)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["amin", "amax"])
def test_padded_equals_unpadded_buckets(policy):
    # Experiment 2's classes of 100 tokens; amax with its sorted order by u_i.
    configs = [IntervalConfig("lmsys", num_requests=n, policy=policy, intervals="buckets:100:10") for n in (40, 90)]
    same_runs(ENGINE, configs, dict(num_requests=100), capacity_tokens=2000, **LINEAR_STEP_MODEL)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["amin", "amax", "hsf", "arandom"]),
    st.integers(1, 30),
    st.integers(1, 20),
    st.sampled_from([0.3, 0.7]),
)
def test_padded_equals_unpadded_random(policy, n, extra, p_low):
    # Section 5.1's two-point outputs {10, 40}: A_min evicts when the short guess fails.
    cfg = IntervalConfig(
        Batch(two_point(10, 40, p_low, s=2), n), num_requests=n, policy=policy, intervals="shared:10:40"
    )
    same_runs(
        ENGINE,
        [cfg],
        dict(num_requests=n + extra),
        seeds=(0, 1),
        capacity_tokens=120,
        per_decode_s=0.01,
        per_kv_token_s=1e-3,
    )


def test_pad_refuses_bad_capacity():
    cfg = IntervalConfig("lmsys", num_requests=20)
    par = make_params(cfg)
    with pytest.raises(ConfigError, match="capacity num_requests"):
        ENGINE.pad(cfg, par, dict(num_requests=10))
    with pytest.raises(ConfigError, match="capacity num_requests"):  # MAX_JOBS = 2^16
        ENGINE.pad(cfg, par, dict(num_requests=70_000))
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, dict(intervals=40))
    with pytest.raises(ConfigError, match="padded"):
        ENGINE.pad(cfg, ENGINE.pad(cfg, par, dict(num_requests=40))[1], dict(num_requests=40))


def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path):
    base = IntervalConfig(
        Batch(two_point(10, 40, 0.5, s=2), 8), num_requests=8, policy="amin", intervals="shared:10:40"
    )
    axes = {"num_requests": [9, 16]}
    params = dict(capacity_tokens=150, per_decode_s=0.02)
    plan = plan_buckets(ENGINE, [dataclasses.replace(base, num_requests=n) for n in axes["num_requests"]])
    assert len(plan) == 1 and plan[0].padded and plan[0].config.n == 16
    bucketed_sweep_equals_alone(base, axes, tmp_path, params, len(plan), 2, ["num_requests"])
