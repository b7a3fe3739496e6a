"""Event skipping in the interval engine: one scan step closes a unit step together with the
quiet steps after it (`engine.quiet_steps`) and gives bitwise the final state and the metrics
of unit stepping, on random instances under every policy, interval kind, KV limit, step-time
model and step bound, padded into a larger array or not."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxsched
from jaxsched.batchmodel import LINEAR_STEP_MODEL, QUIET_LOOP, instance_params
from jaxsched.interval import IntervalConfig, make_params
from jaxsched.interval.engine import ENGINE, done, event_step, start, step_bound, unit_step
from jaxsched.interval.instances import policy_config
from jaxsched.interval.intervals import Buckets, Exact, Relative, Shared
from jaxsched.interval.metrics import _finalize
from tests.interval.test_engine import CHOICES
from tests.offline.test_buckets import same_runs

N = 8  # array size of every instance: runs padded into it or not share one compilation
WIDTH = 32  # u_max, the static width of the engine's completion histogram
MAX_O = 20  # outputs; every interval kind below keeps u <= WIDTH
MODELS = [
    {},
    LINEAR_STEP_MODEL,
    dict(step_const_s=3.0),
    dict(step_const_s=0.3, per_decode_s=0.01),
    dict(step_const_s=1.0, per_prefill_token_s=0.125),
    dict(step_const_s=0.5, per_kv_token_s=1e-3),
]


@functools.partial(jax.jit, static_argnums=(0, 1))
def _run(events: bool, config, params, state, cap):
    """(final state, scan steps taken) of one run from `state`, by events or by unit steps,
    until it is done or cut at step `cap`."""

    def body(carry):
        s, k = carry
        new = event_step(config, params, s, cap) if events else unit_step(config, params, s, cap)[0]
        return new, k + 1

    def cond(carry):
        return ~done(config, carry[0]) & (carry[0].t < cap)

    return jax.lax.while_loop(cond, body, (state, jnp.int32(0)))


@functools.partial(jax.jit, static_argnums=(5,))
def _start(s, o, low, high, seed, policy, n):
    return start(s, o, low, high, seed, policy, n)


def _both(config, params, state, cap):
    cap = jnp.int32(cap)
    return _run(True, config, params, state, cap), _run(False, config, params, state, cap)


def _assert_same_state(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@st.composite
def cases(draw):
    """(s, o, low, high, M, n or None, model, cap, seed): N jobs of which the run's own are the
    first n (padded) or all (n = None); intervals of one kind; M from 'the largest s + u barely
    fits' up (tight limits: evictions, long waits)."""
    n = draw(st.one_of(st.none(), st.integers(1, N)))
    o = np.array(draw(st.lists(st.integers(1, MAX_O), min_size=N, max_size=N)))
    kind = draw(st.sampled_from(["any", "shared", "buckets", "relative", "exact"]))
    if kind == "any":
        low = np.array([draw(st.integers(1, x)) for x in o])
        high = np.array([draw(st.integers(x, WIDTH)) for x in o])
    else:
        if kind == "shared":
            spec = Shared(draw(st.integers(1, int(o.min()))), draw(st.integers(int(o.max()), WIDTH)))
        elif kind == "buckets":
            w = draw(st.sampled_from([2, 3, 5, 7]))
            spec = Buckets.uniform(w, -(-MAX_O // w))
        elif kind == "relative":
            spec = Relative(draw(st.sampled_from([0.0, 0.25, 0.5])))
        else:
            spec = Exact()
        low, high = (np.asarray(b) for b in spec.bounds(jnp.asarray(o, jnp.int32)))
    s = np.array(draw(st.lists(st.integers(0, 8), min_size=N, max_size=N)))
    need = max(2, int((s + high).max()))
    M = need + draw(st.integers(0, 2 * need))
    model = draw(st.sampled_from(MODELS))
    cap = draw(st.one_of(st.just(10**6), st.integers(1, 80)))
    seed = draw(st.integers(0, 2**32 - 1))
    return s, o, low, high, M, n, model, cap, seed


@pytest.mark.parametrize("policy, options", CHOICES)
@settings(max_examples=80, deadline=None)
@given(case=cases())
def test_events_equal_unit_steps(policy, options, case):
    s, o, low, high, M, n, model, cap, seed = case
    config = policy_config(policy, N, WIDTH, **options)
    params = instance_params(M, **model)
    jobs = (jnp.asarray(a, jnp.int32) for a in (s, o, low, high))
    state = _start(*jobs, jnp.uint32(seed), policy, None if n is None else jnp.int32(n))
    (ev, k_ev), (unit, k_unit) = _both(config, params, state, cap)
    # Every leaf of the state word for word: schedules, estimates, clocks, memory sums.
    _assert_same_state(ev, unit)
    want = _finalize(config, params, unit)
    for name, value in _finalize(config, params, ev).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    # A scan step runs at least one unit step, so the runner's config.steps scan steps suffice.
    assert int(k_ev) <= int(k_unit) == int(unit.t) <= cap


def _pair(M, s, o, low, high, policy="hsf", **model):
    config = policy_config(policy, len(s), 128)
    params = instance_params(M, **model)
    state = start(s, o, low, high, 0, policy)
    return config, params, state


def test_events_skip_the_quiet_steps():
    # Two jobs that cannot run together: the second waits 100 steps for the first.
    job = ([10, 10], [100, 100], [100, 100], [100, 100])
    config, params, state = _pair(120, *job)
    (ev, k_ev), (unit, k_unit) = _both(config, params, state, 10**6)
    _assert_same_state(ev, unit)
    assert int(unit.t) == 200 and int(k_unit) == 200
    assert int(k_ev) == 2  # step 1 with steps 2-100, step 101 with steps 102-200
    # A step-time model with per-token costs prices the quiet steps one at a time, QUIET_LOOP
    # of them per scan step.
    config, params, state = _pair(120, *job, **LINEAR_STEP_MODEL)
    (ev, k_ev), (unit, _) = _both(config, params, state, 10**6)
    _assert_same_state(ev, unit)
    assert int(k_ev) == 2 * -(-100 // QUIET_LOOP)


def test_a_window_ends_where_the_waiting_job_first_fits():
    # A_max plans job 0 to its upper bound 20 and job 1 cannot join until job 0's planned end
    # leaves room; job 0 really ends at step 5, so job 1 starts at step 6 and the window after
    # step 1 stops at 5 (a completion), not at the planned end.
    config, params, state = _pair(30, [5, 5], [5, 5], [1, 1], [20, 20], policy="amax")
    (ev, k_ev), (unit, _) = _both(config, params, state, 10**6)
    _assert_same_state(ev, unit)
    assert np.asarray(ev.c).tolist() == [5, 10] and int(k_ev) == 2


def test_random_order_amax_skips_to_where_a_member_term_first_holds():
    # A_max in random order checks every waiting job (`engine._fit_each`). Seed 0 admits job 0
    # (ends at 50) first; job 1 (u = 60) is blocked by job 0's term 60 + 10 + 50 - tau + 1,
    # which first holds at step 36, with job 1 admitted there: step 1 closes with steps 2-35,
    # step 36 with 37-50, step 51 with 52-95.
    config = policy_config("amax", 2, 128, amax_order="random")
    params = instance_params(85)
    state = start([10, 10], [50, 60], [50, 60], [50, 60], 0, "amax")
    (ev, k_ev), (unit, _) = _both(config, params, state, 10**6)
    _assert_same_state(ev, unit)
    assert np.asarray(ev.c).tolist() == [50, 95] and np.asarray(ev.p).tolist() == [0, 35] and int(k_ev) == 3


def test_amin_windows_end_at_overflow():
    # A_min at l = 1 admits both jobs; their memory overflows M at step 7 (2 (3 + 7) > 19), so
    # the first window ends at step 6 and step 7 evicts one job.
    config, params, state = _pair(19, [3, 3], [9, 9], [1, 1], [9, 9], policy="amin")
    (ev, k_ev), (unit, _) = _both(config, params, state, 10**6)
    _assert_same_state(ev, unit)
    assert int(ev.overflow_steps) == 1 and int(np.asarray(ev.evictions).sum()) == 1
    one = event_step(config, params, state, jnp.int32(10**6))
    assert int(one.t) == 6 and int(one.memory_sum.to_numpy()) == sum(2 * (3 + a) for a in range(1, 7))


def test_step_bound_of_a_padded_run_is_its_own_default():
    config = IntervalConfig("lmsys", num_requests=23, policy="amin", intervals="shared:1:883")
    params = make_params(config, capacity_tokens=1500)
    bucket, padded = ENGINE.pad(config, params, dict(num_requests=50))
    assert int(step_bound(bucket, padded)) == config.steps < bucket.steps
    assert int(step_bound(config, params)) == config.steps
    cut = IntervalConfig("lmsys", num_requests=23, policy="amin", intervals="shared:1:883", max_steps=40)
    bucket, padded = ENGINE.pad(cut, params, dict(num_requests=50))
    assert int(step_bound(bucket, padded)) == 40 == int(step_bound(cut, params))


@pytest.mark.parametrize("model", [{}, LINEAR_STEP_MODEL])
@pytest.mark.parametrize(
    "policy, intervals", [("amin", "shared:1:883"), ("al", "buckets:100:10"), ("amax", "relative:0.5")]
)
def test_runner_events_equal_recorded_unit_steps(policy, intervals, model):
    """Through the shared runner: record=False runs events, record=True unit steps, one
    trajectory row per step; the rows' memory adds up to the events' memory sum."""
    config = IntervalConfig("lmsys", num_requests=40, policy=policy, intervals=intervals)
    params = make_params(config, capacity_tokens=2000, **model)
    a = jaxsched.simulate(config, params, seeds=range(5), warn=False)
    b = jaxsched.simulate(config, params, seeds=range(5), record=True, warn=False)
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)
    assert b.trajectories["live"].sum(axis=1).tolist() == a.metrics["makespan_steps"].astype(int).tolist()
    mean = b.trajectories["memory"].sum(axis=1) / a.metrics["makespan_steps"]
    np.testing.assert_array_equal(mean, a.metrics["mean_memory_tokens"])


def test_cut_and_padded_runs_through_the_runner():
    """Runs cut by max_steps before they finish, alone and padded into a bucket, by events:
    bitwise the metrics of unit steps (recorded), and the same cut step."""
    configs = [
        IntervalConfig("lmsys", num_requests=n, policy="amin", intervals="shared:1:883", max_steps=300)
        for n in (23, 41)
    ]
    model = dict(capacity_tokens=1500, **LINEAR_STEP_MODEL)
    same_runs(ENGINE, configs, dict(num_requests=50), record=False, **model)
    for c in configs:
        p = make_params(c, **model)
        a = jaxsched.simulate(c, p, seeds=(0, 1, 2), warn=False)
        b = jaxsched.simulate(c, p, seeds=(0, 1, 2), record=True, warn=False)
        cut = a.metrics["done"] == 0
        assert cut.any() and (a.metrics["makespan_steps"][cut] == 300).all()
        for name in a.metrics:
            np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)
