"""Size buckets of the dp engine: a run padded into a larger config gives bitwise the metrics
and trajectories of the unpadded run, and a sweep over sizes compiles once per bucket.

The padded runs of one test share one bucket config, so they also share one compiled
program (`simulate_points`), the way a sweep runs them.
"""

from __future__ import annotations

import csv
import dataclasses

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.buckets import check_max_waste, plan_buckets
from jaxsched.dp.config import DPConfig, make_params
from jaxsched.dp.engine import ENGINE
from jaxsched.dp.registry import POLICIES as DP_POLICIES
from jaxsched.errors import ConfigError
from jaxsched.run import simulate, simulate_points
from jaxsched.sweep import run_sweep
from tests.sweep_checks import COMPILES as _COMPILES
from tests.sweep_checks import block_compiles as _block_compiles

SIZES = ("num_workers", "slots_per_worker", "pool_size")


def _same_runs(configs: list[DPConfig], capacity: dict, seeds=(0, 1, 2), **params_kw) -> None:
    """Every config alone equals the same config padded into `capacity`, all padded runs in one
    simulate_points call: metrics bitwise, trajectories on the run's own workers."""
    alone = [simulate(c, make_params(c, **params_kw), seeds, warn=False, record=True) for c in configs]
    padded = [ENGINE.pad(c, make_params(c, **params_kw), capacity) for c in configs]
    bucket = padded[0][0]
    # Bucket configs agree but for the value fields, which the padded runs read from params.
    assert all(dataclasses.replace(b, lookahead_decay=bucket.lookahead_decay) == bucket for b, _ in padded)
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=True)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k]), (c, k, a.metrics[k], b.metrics[k])
        for k, v in a.trajectories.items():
            w = b.trajectories[k]
            if v.ndim == 3:  # per-worker rows: the run's own workers
                w = w[..., : c.num_workers]
            assert np.array_equal(v, w), (c, k)


POLICIES = list(DP_POLICIES)


# Every policy in the paper's semantics and three in the theory's run by default; the rest of
# the matrix with -m slow (each case compiles three programs).
_THEORY_DEFAULT = ("fcfs", "round_robin", "bfio", "power_of_two")
CASES = [
    pytest.param(p, sem, marks=() if sem == "paper" or p in _THEORY_DEFAULT else pytest.mark.slow)
    for sem in ("paper", "theory")
    for p in POLICIES
]


@pytest.mark.parametrize("policy, semantics", CASES)
def test_padded_equals_unpadded(policy, semantics):
    # Sizes inside the bucket (7, 12, 10) on every axis, odd and even, one a power of two.
    configs = [
        DPConfig(num_workers=G, slots_per_worker=B, pool_size=R, policy=policy, semantics=semantics, num_steps=60)
        for G, B, R in [(3, 5, 7), (6, 12, 4)]
    ]
    _same_runs(configs, dict(num_workers=7, slots_per_worker=12, pool_size=10))


@pytest.mark.parametrize(
    "predictor",
    [pytest.param("oracle", marks=pytest.mark.slow), "noisy", pytest.param("classifier", marks=pytest.mark.slow)],
)
def test_padded_lookahead_equals_unpadded(predictor):
    # The lookahead H is a size too: H = 1 and 3 padded into a window of 6 rows (H = 5).
    configs = [
        DPConfig(
            num_workers=G,
            slots_per_worker=B,
            pool_size=R,
            policy="bfio",
            lookahead_steps=H,
            predictor=predictor,
            num_steps=60,
        )
        for G, B, R, H in [(3, 5, 7, 3), (5, 9, 16, 1)]
    ]
    # The predictor's error rates, where it draws them (make_params refuses ignored options).
    errors = {"noisy": dict(noise_lo=0.2, noise_hi=0.4), "classifier": dict(fp_rate=0.1, fn_rate=0.2)}
    _same_runs(
        configs, dict(num_workers=6, slots_per_worker=11, pool_size=16, lookahead_steps=5), **errors.get(predictor, {})
    )


def test_padded_decays_share_a_bucket():
    # The lookahead decay rides in a padded run's params (its window weights): runs of three
    # decays and two H run in one program, each bitwise its own unpadded run; decay 1 (weights
    # 1) and a decay whose far weights round to 0 included.
    configs = [
        DPConfig(num_workers=4, slots_per_worker=6, pool_size=8, policy="bfio", lookahead_steps=H, lookahead_decay=d)
        for H, d in [(3, 0.5), (2, 1.0), (3, 0.05)]
    ]
    configs = [dataclasses.replace(c, num_steps=60) for c in configs]
    _same_runs(configs, dict(lookahead_steps=3))
    plan = plan_buckets(ENGINE, configs)
    assert [b.members for b in plan] == [[0, 1, 2]] and plan[0].padded
    # Equal sizes, different decays: still one bucket, padded (the decay comes from params).
    same = [configs[0], dataclasses.replace(configs[0], lookahead_decay=0.9)]
    plan = plan_buckets(ENGINE, same)
    assert len(plan) == 1 and plan[0].padded


@pytest.mark.parametrize("theorem, kernel", [(2, "window"), (3, "window"), (1, "round_lpt")])
def test_padded_theorem_kernels_equal_unpadded(theorem, kernel):
    # The H = 0 kernels of `check theorems` (window fill, round LPT) in the theory semantics,
    # as its grid builds them: two points of one family padded into one bucket.
    from jaxsched.dp.theorems.grid import Point

    pts = [
        Point(theorem, G, B, 20, None if theorem == 1 else 0.1, drift=(1, 4) if theorem == 3 else (1, 1))
        for G, B in [(3, 6), (5, 4)]
    ]
    configs = [pt.config("bfio", kernel, 3) for pt in pts]
    cap = {f: max(getattr(c, f) for c in configs) + 1 for f in SIZES}
    _same_runs(configs, cap)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(POLICIES),
    st.sampled_from(["paper", "theory"]),
    st.tuples(*[st.integers(2, 9)] * 3),
    st.tuples(*[st.integers(0, 7)] * 3),
)
def test_padded_equals_unpadded_random(policy, semantics, sizes, extra):
    cfg = DPConfig(**dict(zip(SIZES, sizes)), policy=policy, semantics=semantics, num_steps=40)
    _same_runs([cfg], {f: s + e for f, s, e in zip(SIZES, sizes, extra)})


def test_pad_refuses_bad_capacity():
    cfg = DPConfig(num_workers=4, slots_per_worker=8, pool_size=16, num_steps=10)
    par = make_params(cfg)
    with pytest.raises(ConfigError, match="capacity num_workers"):
        ENGINE.pad(cfg, par, dict(num_workers=3))
    with pytest.raises(ConfigError, match="size fields"):
        ENGINE.pad(cfg, par, dict(num_steps=20))
    with pytest.raises(ConfigError, match="capacity lookahead_steps"):
        ENGINE.pad(cfg, par, dict(lookahead_steps=2))  # H = 0 is valley fill, H >= 1 lookahead
    with pytest.raises(ConfigError, match="capacity"):
        ENGINE.pad(cfg, par, [8])
    one = DPConfig(num_workers=1, slots_per_worker=8, pool_size=16, num_steps=10)
    with pytest.raises(ConfigError, match="size of 1"):
        ENGINE.pad(one, make_params(one), dict(num_workers=2))
    ms = DPConfig(num_workers=4, slots_per_worker=8, pool_size=16, num_steps=10, bfio_kernel="ms_ls")
    with pytest.raises(ConfigError, match="ms_ls"):
        ENGINE.pad(ms, make_params(ms), dict(num_workers=8))
    with pytest.raises(ConfigError, match="padded"):
        ENGINE.pad(cfg, ENGINE.pad(cfg, par, dict(num_workers=8))[1], dict(num_workers=8))


@pytest.mark.parametrize("bad", [0.5, 0, float("nan"), float("inf"), "2", True, None])
def test_bad_bucket_waste_is_one_error(bad, tmp_path):
    with pytest.raises(ConfigError, match="max_waste"):
        check_max_waste(bad)
    with pytest.raises(ConfigError, match="max_waste|buckets"):
        run_sweep(
            DPConfig(num_steps=5), {"num_workers": [2, 4]}, [0], tmp_path / "s.csv", bucket_waste=bad, progress=False
        )
    assert not (tmp_path / "s.csv").exists()


def test_plan_keeps_waste_and_groups():
    base = DPConfig(num_steps=10)
    configs = [
        dataclasses.replace(base, num_workers=G, slots_per_worker=B, policy=p)
        for p in ("fcfs", "bfio")
        for G in (1, 4, 8, 12, 16, 24, 32)
        for B in (16, 32, 48, 64, 96, 128)
    ]
    plan = plan_buckets(ENGINE, configs)
    assert sorted(i for b in plan for i in b.members) == list(range(len(configs)))
    for b in plan:
        for i in b.members:
            c = configs[i]
            assert c.policy == b.config.policy
            assert all(getattr(c, f) <= getattr(b.config, f) for f in SIZES)
            assert ENGINE.working_set_bytes(b.config) <= 2 * ENGINE.working_set_bytes(c)
            assert (c.num_workers == 1) == (b.config.num_workers == 1)
        assert b.padded == any(getattr(configs[i], f) != getattr(b.config, f) for i in b.members for f in SIZES)
    assert len(plan) < len(configs) // 3
    # Switching policies: FCFS and BF-IO points share buckets, each bucket's config switching.
    switched = plan_buckets(ENGINE, configs, switch=True)
    assert len(switched) < len(plan)
    for b in switched:
        assert {configs[i].policy for i in b.members} <= set(b.config.policies)
        assert b.config.policy_set == b.policies
    assert any(b.policies == ("fcfs", "bfio") for b in switched)
    # No padding: one bucket per distinct config; waste 1: only equal work shares a bucket.
    assert len(plan_buckets(ENGINE, configs, None)) == len(configs)
    for b in plan_buckets(ENGINE, configs, 1.0):
        works = {ENGINE.working_set_bytes(configs[i]) for i in b.members}
        assert works == {ENGINE.working_set_bytes(b.config)}


# The default run pads the worker count; `-m slow` pads the slots per worker too.
@pytest.mark.parametrize("slots", [[5], pytest.param([5, 8], marks=pytest.mark.slow)])
def test_sweep_compiles_once_per_bucket_with_equal_rows(tmp_path, slots):
    base = DPConfig(num_steps=30)
    axes = {"policy": ["fcfs", "bfio"], "num_workers": [3, 6], "slots_per_worker": slots}
    jax.clear_caches()  # the other case's programs must not count as compiled here
    n0 = len(_COMPILES)
    bucketed = run_sweep(base, axes, range(3), tmp_path / "b.csv", progress=False)
    plan = plan_buckets(
        ENGINE,
        [
            dataclasses.replace(base, policy=p, num_workers=g, slots_per_worker=b)
            for p in axes["policy"]
            for g in axes["num_workers"]
            for b in axes["slots_per_worker"]
        ],
    )
    assert len(plan) == 2  # one bucket per policy
    assert _block_compiles(n0) == len(plan)
    n1 = len(_COMPILES)
    alone = run_sweep(base, axes, range(3), tmp_path / "a.csv", progress=False, buckets=False)
    assert _block_compiles(n1) == 4 * len(slots)
    rows_b = {r["key"]: r for r in csv.DictReader(open(bucketed))}
    rows_a = {r["key"]: r for r in csv.DictReader(open(alone))}
    n3 = len(_COMPILES)
    switched = run_sweep(base, axes, range(3), tmp_path / "s.csv", progress=False, switch_policies=True)
    assert _block_compiles(n3) == 1  # both policies in one program
    rows_s = {r["key"]: r for r in csv.DictReader(open(switched))}
    assert rows_b.keys() == rows_a.keys() == rows_s.keys() and len(rows_a) == 4 * len(slots)
    for k, r in rows_a.items():
        for col, v in r.items():
            if col.endswith(("_mean", "_std", "_ci95")):
                assert rows_b[k][col] == v == rows_s[k][col], (r["point"], col)
    # A rerun into the same file finds every row done and compiles nothing.
    n2 = len(_COMPILES)
    run_sweep(base, axes, range(3), tmp_path / "b.csv", progress=False)
    assert _block_compiles(n2) == 0


def test_switched_policies_equal_their_own_programs():
    # One program switching among four policies (padded too), against each policy's own program.
    policies = ("fcfs", "bfio", "jsq_tokens", "round_robin")
    configs = [DPConfig(num_workers=5, slots_per_worker=7, pool_size=9, policy=p, num_steps=60) for p in policies]
    alone = [simulate(c, make_params(c), [0, 1], warn=False) for c in configs]
    runs = [ENGINE.switch(*ENGINE.pad(c, make_params(c), dict(num_workers=6, pool_size=12)), policies) for c in configs]
    assert all(c == runs[0][0] for c, _ in runs)
    together = simulate_points(runs[0][0], [p for _, p in runs], [0, 1], warn=False)
    for c, a, b in zip(configs, alone, together):
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k]), (c.policy, k)


@pytest.mark.parametrize(
    "policy_set", [("fcfs",), ("bfio", "fcfs"), ("fcfs", "fcfs"), ("fcfs", "nope"), "fcfs,bfio", (1, 2)]
)
def test_bad_policy_set_is_one_error(policy_set):
    with pytest.raises(ConfigError, match="policy_set"):
        DPConfig(policy="fcfs", policy_set=policy_set)


def test_switch_refuses_a_set_without_the_policy():
    cfg = DPConfig(policy="jsq_count", num_steps=5)
    with pytest.raises(ConfigError, match="policy_set"):
        ENGINE.switch(cfg, make_params(cfg), ("fcfs", "bfio"))


def test_simulate_buckets_equals_simulate():
    # Three sizes, two of them padded into one program: each Results is its own run's, with its
    # own config and trajectories of its own shapes.
    from jaxsched.buckets import simulate_buckets

    configs = [
        DPConfig(num_workers=G, slots_per_worker=B, pool_size=8, num_steps=40) for G, B in [(4, 6), (3, 6), (1, 6)]
    ]  # G = 1 is never padded
    n0 = len(_COMPILES)
    res = simulate_buckets([(c, make_params(c)) for c in configs], [0, 1], record=True)
    assert _block_compiles(n0) == 2
    for c, r in zip(configs, res):
        a = simulate(c, make_params(c), [0, 1], warn=False, record=True)
        assert r.config == c
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], r.metrics[k]), k
        for k in a.trajectories:
            assert np.array_equal(a.trajectories[k], r.trajectories[k]), k
    with pytest.raises(ConfigError, match="runs"):
        simulate_buckets([configs[0]])
    with pytest.raises(ConfigError, match="runs\\[1\\]"):
        simulate_buckets([(configs[0], make_params(configs[0])), ("x", None)])
