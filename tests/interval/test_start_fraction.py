"""`start_fraction`: the starting estimate of A_min and A_l, l + floor(q (u - l) / 1024) with
q = round(1024 theta) (docs/interval-semantics.md, "Starting estimate").

The engine, by event skipping and by unit steps, gives the reference's schedules for random
theta on random small instances; theta = 0 is the paper's run bitwise; theta = 1 makes A_min
A_max; theta is a traced param (many values in one compiled program); bad values and
policies that do not read it are refused with one ConfigError naming the keyword.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxsched
from jaxsched.batchmodel import OfflineParams, instance_params
from jaxsched.errors import ConfigError, as_one_grid
from jaxsched.interval import IntervalConfig, IntervalParams, execute, make_params
from jaxsched.interval.config import START_STEPS, start_quanta, with_start
from jaxsched.interval.engine import start
from jaxsched.interval.instances import policy_config
from jaxsched.interval.intervals import Shared
from jaxsched.workload import Batch, Independent, UniformInt
from tests.interval.test_engine import STEPS, instances
from tests.interval.test_events import WIDTH, N, _assert_same_state, _both, cases
from tests.reference import interval as ref

READERS = [("amin", {}), ("amin", dict(eviction_key="live")), ("al", {})]
# theta: any real in [0, 1] (rounded to 1/1024ths), and the grid's ends and rounding ties.
THETAS = st.one_of(
    st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 0.5, 1 / 2048, 3 / 2048, 1 - 1 / 2048]), st.integers(0, 1)
)


def _start_est(low, high, theta) -> list[int]:
    """est0 by Python ints, from the formula in the docs."""
    q = round(theta * 1024)
    return [lo + (q * (hi - lo)) // 1024 for lo, hi in zip(low, high)]


@pytest.mark.parametrize("policy, options", READERS)
@settings(max_examples=30, deadline=None)
@given(inst=instances(), seed=st.integers(0, 2**32 - 1), theta=THETAS)
def test_engine_equals_reference_for_any_start_fraction(policy, options, inst, seed, theta):
    s, o, lo, hi, M = inst
    want = ref.simulate(s, o, lo, hi, M, policy, seed=seed, start_fraction=theta, **options)
    kw = dict(policy=policy, seeds=seed, per_job=True, start_fraction=theta, **options)
    unit = execute(instance_params(M), s, o, lo, hi, record_steps=STEPS, **kw)  # one row per unit step
    events = execute(instance_params(M), s, o, lo, hi, **kw)  # event skipping
    T = want["makespan"]
    mem = unit["steps"]["memory"][0]
    assert list(mem[:T]) == want["memory"] and not mem[T:].any()
    assert list(unit["steps"]["evicted"][0][:T]) == [len(e) for e in want["evicted"]]
    for got in (unit, events):
        assert list(got["jobs"]["c"][0]) == want["completion"]
        assert list(got["jobs"]["evictions"][0]) == want["evictions"]
        assert list(got["jobs"]["wasted"][0]) == want["wasted"]
        assert list(got["jobs"]["est"][0]) == want["estimates"]
        assert got["overflow_steps"][0] == want["overflow_steps"]
        assert got["tel_steps"][0] == want["tel"] and got["makespan_steps"][0] == T
        assert got["peak_memory_tokens"][0] == want["peak_memory"] <= M
    # A job that never restarted kept its starting estimate (A_min raises it only on eviction,
    # A_l only on promotion): the reference's est0, not l, once theta > 0.
    est0 = _start_est(lo, hi, theta)
    kept = [i for i in range(len(s)) if want["evictions"][i] == 0]
    assert [want["estimates"][i] for i in kept] == [est0[i] for i in kept]
    if round(theta * 1024) == 1024:  # at u_i every plan is safe: nothing is ever cancelled
        assert sum(want["evictions"]) == 0


@functools.partial(jax.jit, static_argnums=(5,))
def _start(s, o, low, high, seed, policy, n, start_q):
    return start(s, o, low, high, seed, policy, n, start_q)


@pytest.mark.parametrize("policy, options", READERS)
@settings(max_examples=30, deadline=None)
@given(case=cases(), theta=THETAS)
def test_events_equal_unit_steps_for_any_start_fraction(policy, options, case, theta):
    # Word for word the final state (schedules, estimates, clocks, memory sums) of unit steps,
    # padded or not, under every step-time model and step bound of tests/interval/test_events.
    s, o, low, high, M, n, model, cap, seed = case
    config = policy_config(policy, N, WIDTH, **options)
    params = instance_params(M, **model)
    q = jnp.int32(start_quanta(theta, WIDTH))
    jobs = (jnp.asarray(a, jnp.int32) for a in (s, o, low, high))
    state = _start(*jobs, jnp.uint32(seed), policy, None if n is None else jnp.int32(n), q)
    np.testing.assert_array_equal(np.asarray(state.est), _start_est(low.tolist(), high.tolist(), theta))
    (ev, k_ev), (unit, k_unit) = _both(config, params, state, cap)
    _assert_same_state(ev, unit)
    assert int(k_ev) <= int(k_unit) == int(unit.t) <= cap


def test_zero_is_the_paper_algorithm_bitwise():
    # The default, theta = 0 given, and a theta that rounds to q = 0 run the same program on
    # the same numbers; every job starts at l_i and the run matches the reference's default.
    cfg = IntervalConfig("lmsys", policy="amin", num_requests=60, intervals="shared:1:883")
    runs = [
        jaxsched.simulate(cfg, make_params(cfg, capacity_tokens=3000, **kw), seeds=range(3), warn=False)
        for kw in ({}, dict(start_fraction=0.0), dict(start_fraction=1 / 4096))
    ]
    assert runs[0].metrics["evictions"].sum() > 0  # A_min at l = 1 overflows here
    for other in runs[1:]:
        for name, value in runs[0].metrics.items():
            np.testing.assert_array_equal(other.metrics[name], value, err_msg=name)
    s, o, lo, hi, M = [3, 1, 2, 0, 4], [5, 2, 7, 1, 3], [1, 1, 4, 1, 2], [6, 4, 9, 2, 3], 16
    for policy in ("amin", "al"):
        got = execute(instance_params(M), s, o, lo, hi, policy=policy, seeds=3, per_job=True, start_fraction=0.0)
        want = ref.simulate(s, o, lo, hi, M, policy, seed=3)  # without the keyword
        assert list(got["jobs"]["c"][0]) == want["completion"]
        state = start(s, o, lo, hi, 3, policy, None, jnp.int32(0))
        assert np.asarray(state.est).tolist() == lo


def test_one_makes_amin_amax():
    # At theta = 1 A_min plans every job at u_i, orders by u_i with A_max's per-step ties and
    # never overflows: A_max's schedule, job for job, where theta = 0 differs.
    cfg = IntervalConfig("lmsys", policy="amin", num_requests=80, intervals="relative:0.5")
    amax = IntervalConfig("lmsys", policy="amax", num_requests=80, intervals="relative:0.5")
    p = make_params(cfg, capacity_tokens=2500, start_fraction=1.0)
    assert int(p.start_q) == START_STEPS
    a = jaxsched.simulate(cfg, p, seeds=range(3), warn=False)
    b = jaxsched.simulate(amax, make_params(amax, capacity_tokens=2500), seeds=range(3), warn=False)
    zero = jaxsched.simulate(cfg, make_params(cfg, capacity_tokens=2500), seeds=range(3), warn=False)
    for name in ("tel_steps", "makespan_steps", "peak_memory_tokens", "evictions", "tel_s"):
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)
    assert a.metrics["evictions"].sum() == 0 < zero.metrics["evictions"].sum()
    assert not np.array_equal(a.metrics["tel_steps"], zero.metrics["tel_steps"])


def test_many_fractions_run_in_one_program():
    # What `jaxsched tune` does: one simulate_points call over several theta (traced params of
    # one shape) gives each run as its own simulate call does.
    from jaxsched.run import simulate_points

    cfg = IntervalConfig("lmsys", policy="amin", num_requests=40, intervals="shared:1:883")
    thetas = (0.0, 0.3, 0.75, 1.0)
    plist = [make_params(cfg, capacity_tokens=2000, start_fraction=x) for x in thetas]
    together = simulate_points(cfg, plist, [0, 1], warn=False, progress=False)
    tel = []
    for p, r in zip(plist, together):
        alone = jaxsched.simulate(cfg, p, seeds=[0, 1], warn=False)
        for name, value in alone.metrics.items():
            np.testing.assert_array_equal(r.metrics[name], value, err_msg=name)
        tel.append(tuple(r.metrics["tel_steps"]))
    assert len(set(tel)) > 1  # the fraction reached the runs


def test_the_quantised_estimate_is_exact_at_the_int32_edge():
    # (u - l) = 2^21 - 1, the widest interval make_params accepts with theta > 0: q (u - l)
    # reaches 2^31 - 1024, still exact in int32.
    low, high = [1, 5, 1], [2**21, 2**21 + 4, 1]
    for theta in (1 / 1024, 0.5, 1023 / 1024, 1.0, 0.123456):
        est = start([0] * 3, high, low, high, 0, "amin", None, jnp.int32(start_quanta(theta, 2**21)))
        assert np.asarray(est.est).tolist() == _start_est(low, high, theta)
    assert np.asarray(start([0] * 3, high, low, high, 0, "amin", None, jnp.int32(1024)).est).tolist() == high


def _small(policy="amin", **kw) -> IntervalConfig:
    return IntervalConfig(Batch(Independent(UniformInt(1, 4), UniformInt(1, 20)), 8), policy=policy, **kw)


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf, "0.5", True])
def test_bad_fractions_are_one_error_naming_the_keyword(bad):
    message = r"^start_fraction must be a finite number >= 0.0 and <= 1.0, got "
    for policy in ("amin", "al", "amax"):  # the value is checked before who reads it
        with pytest.raises(ConfigError, match=message):
            make_params(_small(policy), start_fraction=bad)
    with pytest.raises(ConfigError, match=message):
        execute(instance_params(30), [1, 1], [2, 3], [1, 1], [4, 4], start_fraction=bad)


def test_policies_that_do_not_start_at_l_refuse_it():
    for policy in ("hsf", "amax", "arandom"):
        with pytest.raises(ConfigError, match=rf"^start_fraction is read only by .*amin.*al.*{policy} ignores it$"):
            make_params(_small(policy), start_fraction=0.5)
        with pytest.raises(ConfigError, match=r"^start_fraction is read only by"):
            execute(instance_params(30), [1, 1], [2, 3], [1, 1], [4, 4], policy=policy, start_fraction=0.5)
        assert int(make_params(_small(policy), start_fraction=0.0).start_q) == 0  # the default: never refused
    for policy in ("amin", "al"):
        assert int(make_params(_small(policy), start_fraction=0.25).start_q) == 256
    # A grid over policies shares the keyword when one of its points reads it.
    with as_one_grid():
        for policy in ("amax", "amin"):
            make_params(_small(policy), start_fraction=0.5)


def test_intervals_too_wide_for_int32_are_refused_only_when_read():
    wide = _small(intervals=Shared(1, 2**21 + 1))  # u - l up to 2^21: 1024 (u - l) = 2^31
    with pytest.raises(ConfigError, match=r"^start_fraction must be 0 for intervals as wide as u - l = 2097152"):
        make_params(wide, capacity_tokens=2**22, start_fraction=0.5)
    assert int(make_params(wide, capacity_tokens=2**22).start_q) == 0
    edge = _small(intervals=Shared(1, 2**21))
    assert int(make_params(edge, capacity_tokens=2**22, start_fraction=1.0).start_q) == 1024


def test_the_offline_engine_is_untouched():
    # The offline engine keeps the batch model's params (no start_q leaf) and has no such
    # keyword: a tuning problem that names it is refused before any work.
    from jaxsched import offline
    from jaxsched.tune import Field, check_problem, parse_objective

    cfg = offline.OfflineConfig(Batch(Independent(), 4))
    p = offline.make_params(cfg)
    assert type(p) is OfflineParams and len(jax.tree_util.tree_leaves(p)) == 5
    with pytest.raises(ConfigError, match=r"^field 'start_fraction' must be a make_params keyword of engine 'offline'"):
        check_problem(cfg, [Field("start_fraction")], parse_objective("min tel_steps", []))
    # The interval engine's params extend them by the one traced int32.
    ip = make_params(_small(), start_fraction=0.5)
    assert isinstance(ip, IntervalParams) and isinstance(ip, OfflineParams)
    assert len(jax.tree_util.tree_leaves(ip)) == 6 and ip.start_q.dtype == jnp.int32
    assert int(with_start(ip, 3).start_q) == 3 and int(with_start(p, 0).capacity_tokens) == int(p.capacity_tokens)
