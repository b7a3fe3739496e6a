"""Round LPT (kernels/round_lpt.py): exact agreement with a plain-Python statement of the rule,
feasibility, the s_max balance of homogeneous rounds (BF-IO Lemma 1), and its objective beside
the exact optimum on small instances (measured, printed with -s)."""

from __future__ import annotations

import importlib

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched import kernels
from tests.reference import exact_io
from tests.reference.instances import G_PAD, R_PAD, instances
from tests.reference.instances import loads_after as _loads_after

# One compilation: a padded worker has no free slot and a padded request is invalid, so neither
# takes part in any round.
round_lpt = jax.jit(kernels.round_lpt)
valley_fill = jax.jit(kernels.valley_fill)
_descending = jax.jit(importlib.import_module("jaxsched.kernels.round_lpt")._descending_requests, static_argnums=2)


def reference(loads, free, sizes, valid):
    """The rule in plain Python: U largest valid requests (ties: earliest), dealt out in rounds
    of the workers with free > r, lightest (ties: lowest index) first."""
    G, R = len(loads), len(sizes)
    L = [int(x) for x in loads]
    U = min(int(np.sum(valid)), int(np.sum(free)))
    desc = sorted((i for i in range(R) if valid[i]), key=lambda i: (-int(sizes[i]), i))[:U]
    worker, rank = [-1] * R, [0] * R
    k, r = 0, 0
    while k < U:
        for g in sorted((g for g in range(G) if free[g] > r), key=lambda g: (L[g], g)):
            if k == U:
                break
            i = desc[k]
            worker[i], rank[i] = g, r
            L[g] += int(sizes[i])
            k += 1
        r += 1
    return np.array(worker), np.array(rank)


@settings(max_examples=200, deadline=None)
@given(instances())
def test_matches_the_plain_python_rule(inst):
    w, r = (np.asarray(a) for a in round_lpt(*inst))
    w_ref, r_ref = reference(*inst)
    np.testing.assert_array_equal(w, w_ref)
    np.testing.assert_array_equal(r, np.where(w_ref >= 0, r_ref, 0))


@settings(max_examples=200, deadline=None)
@given(instances(max_free=6))
def test_output_is_feasible_with_distinct_ranks(inst):
    loads, free, sizes, valid = inst
    w, r = (np.asarray(a) for a in round_lpt(*inst))
    assert exact_io.check_feasible(free, sizes, valid, w) is None
    assert (w >= 0).sum() == min(valid.sum(), free.sum())
    for g in range(G_PAD):
        assert sorted(r[w == g]) == list(range((w == g).sum()))
    # The admitted requests are the U largest: none left waiting is larger than one admitted.
    if (w >= 0).any() and (valid & (w < 0)).any():
        assert sizes[valid & (w < 0)].max() <= sizes[w >= 0].min()


def test_large_loads_stay_exact_in_int32():
    # Loads from 0 to near 2^31 / G (the engine's bound on G * max load) and large sizes: the
    # packed worker keys (load - min) * G + g must not overflow.
    rng = np.random.default_rng(0)
    G, R = 6, 14
    for _ in range(20):
        loads = rng.integers(0, 350_000_000, G).astype(np.int32)
        free = rng.integers(0, 4, G).astype(np.int32)
        sizes = rng.integers(1, 1_000_000, R).astype(np.int32)
        valid = rng.random(R) < 0.8
        w, r = (np.asarray(a) for a in round_lpt(loads, free, sizes, valid))
        w_ref, _ = reference(loads, free, sizes, valid)
        np.testing.assert_array_equal(w, w_ref)


@settings(max_examples=100, deadline=None)
@given(instances())
def test_packed_and_two_key_pool_sorts_agree(inst):
    # Pools over _PACKED_POOL_MAX entries take the two-key sort: both orders must be the rule's.
    _, _, sizes, valid = inst
    want = sorted(np.flatnonzero(valid), key=lambda i: (-int(sizes[i]), i))
    for packed in (True, False):
        perm, desc = (np.asarray(a) for a in _descending(sizes, valid, packed))
        assert perm[: len(want)].tolist() == want
        assert desc[: len(want)].tolist() == sizes[want].tolist()
        assert sorted(perm.tolist()) == list(range(R_PAD))


def test_vmapped_equals_one_at_a_time():
    # Under vmap the while_loop runs until every instance is done: finished ones must not move.
    rng = np.random.default_rng(1)
    N = 16
    loads = rng.integers(0, 100, (N, G_PAD)).astype(np.int32)
    free = rng.integers(0, 5, (N, G_PAD)).astype(np.int32)
    free[0] = 0  # nothing to admit
    free[1] = 0
    free[1, 2] = 9  # nine rounds, one worker
    sizes = rng.integers(1, 30, (N, R_PAD)).astype(np.int32)
    valid = rng.random((N, R_PAD)) < 0.7
    w, r = jax.jit(jax.vmap(kernels.round_lpt))(loads, free, sizes, valid)
    for n in range(N):
        w1, r1 = round_lpt(loads[n], free[n], sizes[n], valid[n])
        np.testing.assert_array_equal(np.asarray(w[n]), np.asarray(w1))
        np.testing.assert_array_equal(np.asarray(r[n]), np.asarray(r1))


def test_each_round_pairs_lightest_with_largest():
    # Loads (10, 0, 5), one slot each, sizes 7, 3, 9: 9 -> worker 1, 7 -> 2, 3 -> 0.
    loads = np.array([10, 0, 5], np.int32)
    free = np.array([1, 1, 1], np.int32)
    sizes = np.array([7, 3, 9, 1], np.int32)
    valid = np.array([True, True, True, False])
    w, r = round_lpt(loads, free, sizes, valid)
    assert np.asarray(w).tolist() == [2, 0, 1, -1]
    assert np.asarray(r).tolist() == [0, 0, 0, 0]


@settings(max_examples=200, deadline=None)
@given(st.integers(2, G_PAD), st.integers(1, 3), st.integers(1, 40), st.data())
def test_homogeneous_rounds_keep_the_spread_within_smax(g, f, s_max, data):
    # Every worker has f free slots and the loads start within s_max of each other; the pool may
    # be short (a partial last round) or larger than g * f (a selection). Lemma 1's bound
    # max - min <= s_max must hold after admission, and in general
    # max - min <= max(initial spread, largest admitted size).
    n = data.draw(st.integers(0, R_PAD))
    base = data.draw(st.integers(0, 1000))
    loads = np.zeros(g, np.int32)
    loads[:] = data.draw(st.lists(st.integers(base, base + s_max), min_size=g, max_size=g))
    free = np.full(g, f, np.int32)
    sizes = np.ones(R_PAD, np.int32)
    sizes[:n] = data.draw(st.lists(st.integers(1, s_max), min_size=n, max_size=n))
    valid = np.arange(R_PAD) < n
    w, _ = (np.asarray(a) for a in jax.jit(kernels.round_lpt)(loads, free, sizes, valid))
    L = _loads_after(loads, w, sizes)
    assert (w >= 0).sum() == min(n, g * f)
    assert L.max() - L.min() <= s_max
    biggest = sizes[w >= 0].max() if (w >= 0).any() else 0
    assert L.max() - L.min() <= max(int(loads.max() - loads.min()), int(biggest))


@settings(max_examples=100, deadline=None)
@given(st.integers(2, G_PAD), st.integers(1, 3), st.integers(1, 40), st.data())
def test_homogeneous_rounds_from_any_loads_never_widen_past_smax(g, f, s_max, data):
    # Arbitrary initial loads: the spread ends at most max(initial spread, s_max).
    n = data.draw(st.integers(0, R_PAD))
    loads = np.array(data.draw(st.lists(st.integers(0, 500), min_size=g, max_size=g)), np.int32)
    free = np.full(g, f, np.int32)
    sizes = np.ones(R_PAD, np.int32)
    sizes[:n] = data.draw(st.lists(st.integers(1, s_max), min_size=n, max_size=n))
    valid = np.arange(R_PAD) < n
    w, _ = (np.asarray(a) for a in jax.jit(kernels.round_lpt)(loads, free, sizes, valid))
    L = _loads_after(loads, w, sizes)
    assert L.max() - L.min() <= max(int(loads.max() - loads.min()), s_max)


def test_unequal_free_counts_can_exceed_smax():
    # Why the balance needs homogeneous rounds: the heavy worker 0 has no slot, so the light
    # worker's round of sizes cannot be matched against it; spread 0 + 2 * s_max.
    loads = np.array([0, 0], np.int32)
    free = np.array([0, 2], np.int32)
    sizes = np.array([5, 5], np.int32)
    w, _ = round_lpt(loads, free, sizes, np.array([True, True]))
    L = _loads_after(loads, np.asarray(w), sizes)
    assert L.max() - L.min() == 10


def test_objective_against_the_exact_optimum():
    # Measured, not a hard target: round LPT is a greedy. Only sanity bounds are asserted
    # (J* <= J, and the lower bound <= J*). Printed with -s, beside valley fill.
    rng = np.random.default_rng(2)
    J_rl, J_vf, J_opt = [], [], []
    for _ in range(60):
        G = int(rng.integers(2, 5))
        R = 10
        loads = rng.integers(50, 120, G).astype(np.int32)
        free = rng.integers(0, 4, G).astype(np.int32)
        sizes = rng.integers(1, 21, R).astype(np.int32)
        valid = rng.random(R) < 0.8
        J_star, _ = exact_io.solve_milp(loads, free, sizes, valid)
        w = np.asarray(round_lpt(loads, free, sizes, valid)[0])
        w_vf = np.asarray(valley_fill(loads, free, sizes, valid)[0])
        J = exact_io.objective(loads, free, sizes, w)
        assert exact_io.lower_bound_h0(loads, free, sizes, valid) <= J_star <= J
        J_rl.append(J)
        J_vf.append(exact_io.objective(loads, free, sizes, w_vf))
        J_opt.append(J_star)
    J_rl, J_vf, J_opt = map(np.array, (J_rl, J_vf, J_opt))
    for name, J in (("round_lpt", J_rl), ("vf", J_vf)):
        print(
            f"{name}: exact {np.mean(J == J_opt):.0%}, aggregate excess "
            f"{(J - J_opt).sum() / max(J_opt.sum(), 1):.1%} over {len(J)} instances"
        )
