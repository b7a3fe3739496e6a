"""Kernels: bit-packed slot selection and the valley-fill assignment, on random instances."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched import kernels
from jaxsched.kernels import count_bits, free_slot_rank, pack_bits, window_weights

# Jitted once per shape: the instances below are padded to fixed shapes.
select_bit = jax.jit(kernels.select_bit)
# Both forms of valley fill (the native CPU kernel where it could be built); every test below
# holds each to the same plain rule.
FORMS = [False, True] if kernels.native.available() else [False]
_fill_forms = {n: functools.partial(kernels.valley_fill, native=n) for n in FORMS}
_fills = {n: jax.jit(f) for n, f in _fill_forms.items()}
valley_fill_unpacked = jax.jit(kernels.valley_fill_unpacked)
lookahead_valley_fill = jax.jit(
    functools.partial(kernels.lookahead_valley_fill, beta=5, weights=window_weights(3, 0.7))
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=100), st.data())
def test_select_bit_finds_the_rth_set_bit(mask, data):
    m = np.zeros(100, bool)
    m[: len(mask)] = mask
    words = pack_bits(jnp.asarray(m))
    assert int(count_bits(words)) == m.sum()
    ranks = np.asarray(free_slot_rank(jnp.asarray(m)))
    np.testing.assert_array_equal(ranks, np.cumsum(m) - m)
    if m.any():
        r = data.draw(st.integers(0, int(m.sum()) - 1))
        assert int(select_bit(words, jnp.int32(r))) == np.flatnonzero(m)[r]


def _instance(data, G=5, R=10):
    """A random instance padded to fixed shapes (one compilation): padded workers have load 0
    and no free slot, padded requests are not valid, so they change nothing."""
    g = data.draw(st.integers(1, G))
    r = data.draw(st.integers(1, R))
    loads = np.zeros(G, np.int32)
    free = np.zeros(G, np.int32)
    sizes = np.ones(R, np.int32)
    valid = np.zeros(R, bool)
    loads[:g] = data.draw(st.lists(st.integers(0, 60), min_size=g, max_size=g))
    free[:g] = data.draw(st.lists(st.integers(0, 3), min_size=g, max_size=g))
    sizes[:r] = data.draw(st.lists(st.integers(1, 30), min_size=r, max_size=r))
    valid[:r] = data.draw(st.lists(st.booleans(), min_size=r, max_size=r))
    return loads, free, sizes, valid


def _python_valley_fill(loads, free, sizes, valid, target=0):
    """The rule of docs/dp-semantics.md, in plain Python (target: the multi-start level)."""
    loads, free, valid = list(loads), list(free), list(valid)
    worker, rank = [-1] * len(sizes), [0] * len(sizes)
    given_to = [0] * len(loads)
    while any(valid) and any(f > 0 for f in free):
        g = min((L, i) for i, (L, f) in enumerate(zip(loads, free)) if f > 0)[1]
        room = max(max(loads), target) - loads[g]
        fit = [(s, -p) for p, s in enumerate(sizes) if valid[p] and s <= room]
        p = -max(fit)[1] if fit else min((s, p) for p, s in enumerate(sizes) if valid[p])[1]
        worker[p], rank[p] = g, given_to[g]
        given_to[g] += 1
        loads[g] += int(sizes[p])
        free[g] -= 1
        valid[p] = False
    return worker, rank


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_valley_fill_matches_the_rule_and_its_unpacked_form(data):
    loads, free, sizes, valid = _instance(data)
    args = [jnp.asarray(a) for a in (loads, free, sizes, valid)]
    pw, pr = _python_valley_fill(loads, free, sizes, valid)
    for fill in [*_fills.values(), valley_fill_unpacked]:
        w, r = (np.asarray(a) for a in fill(*args))
        np.testing.assert_array_equal(w, pw)
        adm = w >= 0
        np.testing.assert_array_equal(r[adm], np.asarray(pr)[adm])
        assert adm.sum() == min(valid.sum(), free.sum())
        for g in range(len(loads)):  # ranks on a worker are 0..n-1, never above its free slots
            assert sorted(r[w == g]) == list(range((w == g).sum()))
            assert (w == g).sum() <= free[g]


_vmapped_fills = {n: jax.jit(jax.vmap(f, in_axes=(0, None, 0, 0, 0))) for n, f in _fill_forms.items()}
_nested_fills = {n: jax.jit(jax.vmap(jax.vmap(f))) for n, f in _fill_forms.items()}


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_vmapped_valley_fill_is_the_rule_on_every_instance(data):
    # Under vmap the kernel runs its own batched form (seeds on the minor axis, max(U)
    # iterations for all): each instance must still get exactly its own assignment, with
    # unbatched arguments broadcast, per-instance targets, and an outer vmap around it.
    insts = [_instance(data) for _ in range(4)]
    free = insts[0][1]
    loads, sizes, valid = (np.stack([x[k] for x in insts]) for k in (0, 2, 3))
    targets = np.asarray(data.draw(st.lists(st.integers(0, 120), min_size=4, max_size=4)), np.int32)
    frees = np.stack([x[1] for x in insts])
    nested = [a.reshape(2, 2, -1) for a in (loads, frees, sizes, valid)]
    for form in FORMS:
        w, r = (np.asarray(a) for a in _vmapped_fills[form](loads, free, sizes, valid, targets))
        for n in range(4):
            pw, pr = _python_valley_fill(loads[n], free, sizes[n], valid[n], int(targets[n]))
            np.testing.assert_array_equal(w[n], pw, err_msg=f"native={form}")
            np.testing.assert_array_equal(r[n][w[n] >= 0], np.asarray(pr)[w[n] >= 0])
        w2, _ = (np.asarray(a).reshape(4, -1) for a in _nested_fills[form](*nested))
        for n in range(4):
            np.testing.assert_array_equal(w2[n], _python_valley_fill(loads[n], frees[n], sizes[n], valid[n])[0])


_unrolled_fills = {
    u: jax.jit(jax.vmap(functools.partial(kernels.valley_fill, unroll=u, native=False))) for u in (1, 3, 8)
}


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_unroll_changes_no_assignment(data):
    # unroll admissions run per loop iteration; those past an instance's own count must be
    # no-ops, whatever the remainder of max(U) / unroll (U is 0..15 here, so 8 overshoots).
    insts = [_instance(data) for _ in range(4)]
    loads, frees, sizes, valid = (np.stack([x[k] for x in insts]) for k in range(4))
    want = [_python_valley_fill(*inst) for inst in insts]
    for u, fill in _unrolled_fills.items():
        w, r = (np.asarray(a) for a in fill(loads, frees, sizes, valid))
        for n in range(4):
            np.testing.assert_array_equal(w[n], want[n][0], err_msg=f"unroll {u}")
            np.testing.assert_array_equal(r[n][w[n] >= 0], np.asarray(want[n][1])[w[n] >= 0])


def test_unroll_must_be_a_positive_int():
    args = [jnp.zeros(2, jnp.int32), jnp.ones(2, jnp.int32), jnp.ones(3, jnp.int32), jnp.ones(3, bool)]
    for bad in (0, -1, 2.0):
        with pytest.raises(ValueError, match="unroll"):
            kernels.valley_fill(*args, unroll=bad)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_lookahead_with_one_row_admits_within_capacity(data):
    loads, free, sizes, valid = _instance(data)
    W = 3
    proj = np.repeat(loads[:, None], W, axis=1) - np.arange(W)[None, :]
    w, r = (
        np.asarray(a)
        for a in lookahead_valley_fill(jnp.asarray(proj), jnp.asarray(free), jnp.asarray(sizes), jnp.asarray(valid))
    )
    assert (w >= 0).sum() == min(valid.sum(), free.sum())
    assert not (w[~valid] >= 0).any()
    for g in range(len(loads)):
        assert sorted(r[w == g]) == list(range((w == g).sum()))
        assert (w == g).sum() <= free[g]


def test_window_weights_are_rounded_decay():
    np.testing.assert_array_equal(window_weights(5, 0.5), [128, 64, 32, 16, 8])
