"""Event skipping in the offline engine: one event per scan step (an admission, or the close of a
unit step with the quiet steps after it) gives bitwise the metrics and the state of unit
stepping, on random instances, orders, KV limits, step-time models and step bounds."""

from __future__ import annotations

import functools
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.accumulate import WideInt
from jaxsched.batchmodel import (
    LINEAR_STEP_MODEL,
    QUIET_LOOP,
    instance_params,
    quiet_clock,
    quiet_memory_sum,
    quiet_window,
)
from jaxsched.clock import DF
from jaxsched.offline import engine
from jaxsched.offline.engine import done, event_step, start, unit_step
from jaxsched.offline.metrics import _finalize
from tests.reference.offline import execute as reference_execute


@functools.partial(jax.jit, static_argnums=0)
def _run(events: bool, params, s, o, order, cap):
    """(final state, scan steps taken) of one instance, by events or by unit steps."""

    def body(carry):
        st, k = carry
        new = event_step(params, st, cap) if events else unit_step(params, st, cap)[0]
        return new, k + 1

    def cond(carry):
        return ~done(None, carry[0]) & (carry[0].t < cap)

    return jax.lax.while_loop(cond, body, (start(s, o, order, params), jnp.int32(0)))


class _N:
    def __init__(self, n):
        self.n = n


def _both(s, o, order, params, cap):
    args = (params, jnp.asarray(s, jnp.int32), jnp.asarray(o, jnp.int32), jnp.asarray(order, jnp.int32))
    return _run(True, *args, jnp.int32(cap)), _run(False, *args, jnp.int32(cap))


def _assert_same_state(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@st.composite
def cases(draw):
    n = draw(st.integers(1, 12))
    s = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    o = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    M = max(a + b for a, b in zip(s, o)) + draw(st.integers(0, 40))
    order = draw(st.permutations(range(n)))
    model = draw(
        st.sampled_from(
            [
                {},
                LINEAR_STEP_MODEL,
                dict(step_const_s=3.0),
                dict(step_const_s=0.3, per_decode_s=0.01),
                dict(step_const_s=1.0, per_prefill_token_s=0.125),
            ]
        )
    )
    cap = draw(st.one_of(st.just(10**6), st.integers(1, 60)))
    return s, o, order, M, model, cap


@settings(max_examples=150, deadline=None)
@given(cases())
def test_events_equal_unit_steps_and_the_reference(case):
    s, o, order, M, model, cap = case
    params = instance_params(M, **model)
    (ev, k_ev), (unit, _) = _both(s, o, order, params, cap)
    # Same state word for word, apart from the in-step prompt counter (0 once a step closes).
    _assert_same_state(ev, unit)
    for name, value in _finalize(_N(len(s)), params, unit).items():
        np.testing.assert_array_equal(_finalize(_N(len(s)), params, ev)[name], value, err_msg=name)
    assert int(k_ev) <= int(unit.t) + len(s)  # the runner's scan-step budget (`max_steps`)
    if cap == 10**6:
        p, c = reference_execute(s, o, order, M)
        assert np.asarray(ev.c).tolist() == list(c)
        assert np.asarray(ev.p).tolist() == list(p)


def test_events_skip_the_quiet_steps():
    # Two requests that cannot run together: the second waits 1000 steps for the first.
    s, o, M = [10, 10], [1000, 1000], 1010
    params = instance_params(M)
    (ev, k_ev), (unit, k_unit) = _both(s, o, [0, 1], params, 10**6)
    _assert_same_state(ev, unit)
    assert int(unit.t) == 2000 and int(k_unit) == 2000
    assert int(k_ev) == 4  # admit, close (to step 1000), admit, close (to step 2000)


def test_a_step_time_model_prices_quiet_steps_in_loops_of_quiet_loop():
    s, o, M = [10, 10], [1000, 1000], 1010
    params = instance_params(M, **LINEAR_STEP_MODEL)
    (ev, k_ev), (unit, _) = _both(s, o, [0, 1], params, 10**6)
    _assert_same_state(ev, unit)
    assert int(k_ev) == 2 + 2 * -(-1000 // QUIET_LOOP)


def test_the_clock_takes_the_closed_form_only_where_it_is_exact():
    unit = instance_params(100)
    t = jnp.int32(1)
    ok = quiet_window(unit, DF(jnp.float32(1000.0), jnp.float32(0.0)), t, jnp.int32(500))
    assert int(ok[0]) == 500 and bool(ok[1])
    # A clock with a low word, a clock past 2^24 and a fractional duration loop instead.
    for now, params in [
        (DF(jnp.float32(1000.0), jnp.float32(2.0**-20)), unit),
        (DF(jnp.float32(2.0**24 - 100), jnp.float32(0.0)), unit),
        (DF(jnp.float32(1000.0), jnp.float32(0.0)), instance_params(100, step_const_s=0.5)),
    ]:
        last, exact = quiet_window(params, now, t, jnp.int32(500))
        assert not bool(exact) and int(last) == QUIET_LOOP
    # The closed form equals the step-by-step sum where it is taken.
    now = DF(jnp.float32(12345.0), jnp.float32(0.0))
    looped = quiet_clock(unit, now, jnp.bool_(False), jnp.int32(77), jnp.int32(3), jnp.int32(5), jnp.int32(40))
    at_once = quiet_clock(unit, now, jnp.bool_(True), jnp.int32(77), jnp.int32(3), jnp.int32(5), jnp.int32(40))
    _assert_same_state(looped, at_once)
    assert float(at_once.hi) == 12345.0 + 77


def test_memory_sum_of_a_window_is_exact():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k, d = int(rng.integers(1, 5000)), int(rng.integers(0, 200))
        m = int(rng.integers(0, 2**20))
        got = quiet_memory_sum(WideInt.zeros(), jnp.int32(k), jnp.int32(d), jnp.int32(m)).to_numpy()
        assert got == sum(m + d * i for i in range(k))


def test_add_product_is_exact_over_its_range():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**24, 4096).astype(np.int32)
    b = rng.integers(0, 2**30, 4096).astype(np.int32)
    a[:3], b[:3] = [2**24 - 1, 0, 1], [2**30 - 1, 2**30 - 1, 0]
    base = rng.integers(0, 2**30, 4096).astype(np.int32)
    w = WideInt.zeros(a.shape).add(jnp.asarray(base)).add_product(jnp.asarray(a), jnp.asarray(b))
    exact = [int(x) + int(y) * int(z) for x, y, z in zip(base, a, b)]
    got = [int(h) * 2**24 + int(lo) for h, lo in zip(np.asarray(w.hi), np.asarray(w.lo))]
    assert got == exact and int(np.asarray(w.lo).max()) < 2**24


@pytest.mark.parametrize("model", [{}, LINEAR_STEP_MODEL])
def test_runner_metrics_equal_recorded_unit_steps(model):
    """Through the shared runner: record=True runs unit steps, record=False events."""
    import jaxsched
    from jaxsched.offline import OfflineConfig
    from jaxsched.offline.config import make_params
    from jaxsched.offline.workloads import real

    config = OfflineConfig(real("mix", 60), policy="mcsf")
    params = make_params(config, **model)
    a = jaxsched.simulate(config, params, seeds=range(6), warn=False)
    b = jaxsched.simulate(config, params, seeds=range(6), record=True, warn=False)
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)
    assert b.trajectories["live"].sum(axis=1).tolist() == a.metrics["makespan_steps"].astype(int).tolist()


def test_a_table_too_small_regrows_and_changes_no_result():
    """Runs whose table of running requests overflows stop and run again with twice the rows
    (`engine.regrow`): every metric equals the run with a table of n rows."""
    import jaxsched
    from jaxsched.offline import OfflineConfig
    from jaxsched.offline import instances as inst
    from jaxsched.offline.workloads import real

    config = OfflineConfig(real("mix", 40), policy="mcsf")
    dense = jaxsched.simulate(replace(config, slots=40), seeds=range(8), warn=False)
    for slots in (2, 5):
        small = replace(config, slots=slots)
        assert engine.table_rows(small) == slots
        got = jaxsched.simulate(small, seeds=range(8), warn=False)
        assert "_overflow" not in got.metrics
        for name, value in dense.metrics.items():
            np.testing.assert_array_equal(got.metrics[name], value, err_msg=name)
    # Two rows really overflow: the run stops when a third request fits, and says so.
    params = jaxsched.get_engine("offline").default_params(config)
    s, o = (jnp.asarray(a[0]) for a in inst.draw(config, [0]))
    st = start(s, o, jnp.arange(40), params, 2)
    while not bool(done(None, st)):
        st = event_step(params, st, jnp.int32(10**6))
    assert bool(st.overflow) and int(st.head) == 2
