"""Sorted-F's Phase 1 in JAX against the plain-Python solvers of tests/reference/offline.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxsched as js
from jaxsched import offline as off
from jaxsched.offline import sorted_f as sf
from jaxsched.workload import Trace
from tests.reference import offline as ref

_swap_order = jax.jit(lambda s, o, M: sf.order(s, o, M, sf.local_swap))
_swap_batch = jax.jit(lambda s, o, avail, M: sf.local_swap(s, o, avail, M))

instances = st.integers(1, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 20), min_size=n, max_size=n),
        st.lists(st.integers(1, 20), min_size=n, max_size=n),
        st.integers(0, 60),
    )
)


@settings(max_examples=150, deadline=None)
@given(instances)
def test_swap_order_equals_the_reference(inst):
    s, o, extra = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    want, batches = ref.sorted_f(s, o, M, ref.local_swap)
    assert np.asarray(_swap_order(jnp.array(s), jnp.array(o), M)).tolist() == want
    # Theorem 4 on these batches: the executor's TEL is at most the separate-batches TEL.
    assert ref.tel(ref.execute(s, o, want, M)[1]) <= ref.separate_tel(batches, o)


@settings(max_examples=100, deadline=None)
@given(instances, st.data())
def test_swap_batch_on_any_available_subset(inst, data):
    s, o, extra = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    avail = data.draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
    got = np.asarray(_swap_batch(jnp.array(s), jnp.array(o), jnp.array(avail), M))
    want = ref.local_swap([i for i in range(len(s)) if avail[i]], s, o, M)
    assert sorted(np.flatnonzero(got).tolist()) == sorted(want)


def test_requests_that_never_fit_end_the_order():
    s, o = jnp.array([5, 50, 1, 60]), jnp.array([5, 20, 1, 1])
    assert np.asarray(_swap_order(s, o, 30)).tolist() == [2, 0, 1, 3]


def test_example_1_sorted_f_swap_tel_45():
    s, o = [63] + [1] * 21, [1] + [2] * 21
    cfg = off.OfflineConfig(Trace(np.array(s), np.array(o), order="sequential"), policy="sorted_f_swap")
    assert js.simulate(cfg, off.make_params(cfg, capacity_tokens=64), [0]).metrics["tel_steps"][0] == 45


CAP = 80  # one static table width for every test instance (M <= CAP): one compile per n
_dp_order = jax.jit(lambda s, o, M: sf.order(s, o, M, functools.partial(sf.exact_dp, cap=CAP)))
_dp_batch = jax.jit(lambda s, o, avail, M: sf.exact_dp(s, o, avail, M, cap=CAP))


@settings(max_examples=150, deadline=None)
@given(instances, st.data())
def test_exact_dp_batch_equals_the_reference(inst, data):
    s, o, extra = inst
    M = min(CAP, max(a + b for a, b in zip(s, o)) + extra)
    avail = data.draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s)))
    got = np.flatnonzero(np.asarray(_dp_batch(jnp.array(s), jnp.array(o), jnp.array(avail), M)))
    want = ref.exact_dp([i for i in range(len(s)) if avail[i]], s, o, M)
    assert got.tolist() == sorted(want)
    if want:  # Lemma 1: an exact argmin batch has mean o >= |X| / (2|X| - 1) * max o
        k = len(want)
        assert sum(o[i] for i in want) * (2 * k - 1) >= k * k * max(o[i] for i in want)


_dp_phase1 = jax.jit(lambda s, o, M: sf.phase1(s, o, M, functools.partial(sf.exact_dp, cap=CAP)))


@settings(max_examples=80, deadline=None)
@given(instances)
def test_exact_dp_order_equals_the_reference(inst):
    s, o, extra = inst
    M = min(CAP, max(a + b for a, b in zip(s, o)) + extra)
    want, batches = ref.sorted_f(s, o, M, ref.exact_dp)
    assert np.asarray(_dp_order(jnp.array(s), jnp.array(o), M)).tolist() == want
    # phase1 labels each request with its batch, in selection order (n if never chosen).
    order, label = (np.asarray(x) for x in _dp_phase1(jnp.array(s), jnp.array(o), M))
    assert order.tolist() == want
    want_label = [len(s)] * len(s)
    for k, batch in enumerate(batches):
        for i in batch:
            want_label[i] = k
    assert label.tolist() == want_label


def test_exact_dp_breaks_an_exact_tie_in_f_toward_the_larger_batch():
    # {0}: F = 4 / 1; {0, 1}: F = 16 / 4 = 4. Algorithm 1 asks for the larger batch on a tie.
    s, o = [1, 1], [4, 12]
    got = sf.exact_dp(jnp.array(s), jnp.array(o), jnp.array([True, True]), 100, cap=100)
    assert np.asarray(got).tolist() == [True, True] and ref.exact_dp([0, 1], s, o, 100) == [0, 1]
