"""Sorted-F's scaled DP (Algorithm 3) and quantile greedy (Algorithm 5) in JAX against the
plain-Python solvers of tests/reference/offline.py: the same batch on any available subset, the
same Sorted-F order, exact rounding and thresholds where float32 would err, and the policies
`sorted_f_scaled` and `sorted_f_quantile` through the runner."""

from __future__ import annotations

import functools
import random
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxsched as js
from jaxsched import offline as off
from jaxsched.offline import sorted_f as sf
from jaxsched.workload import Trace
from tests.reference import offline as ref

N = 10  # batch tests: one shape (availability masks vary the subset instead)
# (eps, B) -> W = floor(B / eps): 20 and 33 (B / eps = 33.3: the floor matters) round for
# M > W; 1000 (the defaults) never does here, so it must be exact_dp.
SCALES = [(0.5, 10), (0.3, 10), (0.1, 100)]
# (q, frac): the paper's; q = 1 (the top order statistic, lo = k - 1); the whole set as the
# sample; q = 0.55 = 11 / 20 on a small sample.
QUANTILES = [(0.3, 0.5), (1.0, 0.5), (0.3, 1.0), (0.55, 0.3)]

_scaled_batch = {sc: jax.jit(functools.partial(sf.scaled_dp, eps=sc[0], B=sc[1])) for sc in SCALES}
_exact_batch = jax.jit(functools.partial(sf.exact_dp, cap=1000))
_quantile_batch = {
    qf: jax.jit(lambda s, o, a, M, seed, qf=qf: sf.quantile_greedy(s, o, a, M, seed=seed, q=qf[0], frac=qf[1]))
    for qf in QUANTILES
}
_sample = jax.jit(sf.quantile_sample)
_scaled_order = jax.jit(lambda s, o, M: sf.order(s, o, M, functools.partial(sf.scaled_dp, eps=0.5, B=10)))
_quantile_order = jax.jit(
    lambda s, o, M, seed: sf.order(s, o, M, functools.partial(sf.quantile_greedy, seed=seed, q=0.3, frac=0.5))
)
_ratio_rank = jax.jit(sf.ratio_rank)
_at_most = jax.jit(sf._at_most_quantile)


def _lengths(n):
    return st.lists(st.integers(1, 20), min_size=n, max_size=n)


batch_instances = st.tuples(
    _lengths(N), _lengths(N), st.integers(0, 60), st.lists(st.booleans(), min_size=N, max_size=N)
)
order_instances = st.sampled_from([1, 3, 6, 10]).flatmap(
    lambda n: st.tuples(_lengths(n), _lengths(n), st.integers(0, 60))
)


def _mask(x) -> list[int]:
    return np.flatnonzero(np.asarray(x)).tolist()


# --------------------------------------------------------------------------------------------
# Scaled DP
# --------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(batch_instances, st.sampled_from(SCALES))
def test_scaled_dp_batch_equals_the_reference(inst, scale):
    s, o, extra, avail = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    idx = [i for i in range(N) if avail[i]]
    got = _mask(_scaled_batch[scale](jnp.array(s), jnp.array(o), jnp.array(avail), M))
    want = ref.scaled_dp(idx, s, o, M, eps=scale[0], B=scale[1])
    assert got == sorted(want)
    assert sum(s[i] + o[i] for i in got) <= M  # feasible in the true weights
    assert bool(got) == bool(idx)
    if M <= sf.scaled_width(*scale):  # lambda = 1: the exact argmin
        assert got == sorted(ref.exact_dp(idx, s, o, M))
        assert got == _mask(_exact_batch(jnp.array(s), jnp.array(o), jnp.array(avail), M))


def test_scaled_dp_rounds_up_and_can_differ_from_the_exact_argmin():
    # W = 20, M = 41: lambda = 41 / 20. Weight 21 rounds up to ceil(420 / 41) = 11 units and
    # 20 to ceil(400 / 41) = 10: together 41 tokens fit M, but 21 units exceed M_hat = 20, so
    # the scaled DP gives up the exact argmin {0, 1} (F = 1 / 2) for one request.
    s, o = [20, 19], [1, 1]
    M = 41
    exact = ref.exact_dp([0, 1], s, o, M)
    scaled = ref.scaled_dp([0, 1], s, o, M, eps=0.5, B=10)
    assert exact == [0, 1] and len(scaled) == 1
    got = _mask(
        _scaled_batch[(0.5, 10)](
            jnp.array(s + [1] * 8), jnp.array(o + [1] * 8), jnp.array([True, True] + [False] * 8), M
        )
    )
    assert got == sorted(scaled)
    assert ref.scaled_lambda(40, 0.5, 10) == 2 and ref.scaled_lambda(20, 0.5, 10) == 1
    assert sf.scaled_width(0.1, 100) == 1000 == ref.scaled_width(0.1, 100)  # 0.1 read as 1/10
    assert sf.scaled_width(0.3, 10) == 33 == ref.scaled_width(0.3, 10)


@pytest.mark.parametrize("W", [1, 20, 33, 1000, 1 << 20])
def test_ceil_scaled_is_exact_on_large_numbers(W):
    r = random.Random(W)
    M = [r.randint(1, 1 << 28) for _ in range(200)] + [1 << 28, 7, 1]
    w = [r.randint(0, m) for m in M[:-3]] + [1 << 28, 7, 1]
    got = np.asarray(sf._ceil_scaled(jnp.array(w, jnp.int32), W, jnp.array(M, jnp.int32)))
    assert got.tolist() == [-(-a * W // m) for a, m in zip(w, M)]


# --------------------------------------------------------------------------------------------
# Quantile greedy
# --------------------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(batch_instances, st.integers(0, 2**32 - 1), st.sampled_from(QUANTILES))
def test_quantile_greedy_batch_equals_the_reference(inst, seed, qf):
    s, o, extra, avail = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    idx = [i for i in range(N) if avail[i]]
    q, frac = qf
    # The sample: the same requests as the reference's hashed draw.
    size = max(1, int(Fraction(repr(frac)) * len(idx))) if idx else 0
    got_sample = _mask(_sample(jnp.array(avail), jnp.uint32(seed), size))
    r = N - len(idx)
    want_sample = sorted(idx, key=lambda i: (ref.hash3(seed, r * 65536 + i, ref.QUANTILE_STREAM), i))[:size]
    assert got_sample == sorted(want_sample)
    got = _mask(_quantile_batch[qf](jnp.array(s), jnp.array(o), jnp.array(avail), M, jnp.uint32(seed)))
    want = ref.hash_quantile_solver(seed, q, frac)(idx, s, o, M)
    assert got == sorted(want)
    assert sum(s[i] + o[i] for i in got) <= M and bool(got) == bool(idx)


def test_plain_hash3_is_jaxsched_hash3():
    from jaxsched import rng

    ids = np.arange(0, 1 << 20, 4099, dtype=np.uint32)
    for seed in (0, 1, 2**32 - 1):
        got = np.asarray(rng.hash3(jnp.uint32(seed), jnp.asarray(ids), sf.STREAM_QUANTILE))
        assert got.tolist() == [ref.hash3(seed, int(i), ref.QUANTILE_STREAM) for i in ids]
    assert sf.STREAM_QUANTILE == ref.QUANTILE_STREAM


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1 << 27), st.integers(1, 1 << 27)), min_size=N, max_size=N),
    st.integers(1, 4),
    st.integers(0, N - 1),
)
def test_ratio_rank_orders_o_over_s_plus_o_exactly(pairs, mult, dup):
    s, o = map(list, zip(*pairs))
    # An exact duplicate ratio (a multiple) and two ratios 1 / (2^30 - 1), 1 / 2^30 that float32
    # cannot tell apart: the rank must still follow the exact order, ties by index. Every
    # s + o stays below 2^31, the function's precondition.
    s[0], o[0] = s[dup] * mult, o[dup] * mult
    s[1], o[1] = (1 << 30) - 2, 1
    s[2], o[2] = (1 << 30) - 1, 1
    got = np.asarray(_ratio_rank(jnp.array(s, jnp.int32), jnp.array(o, jnp.int32))).tolist()
    want_order = sorted(range(N), key=lambda i: (Fraction(o[i], s[i] + o[i]), i))
    assert [want_order.index(i) for i in range(N)] == got


def test_floor_fraction_is_the_largest_fraction_below():
    r = random.Random(0)
    for _ in range(300):
        x = Fraction(r.randrange(0, 10**12), 10**12)
        limit = r.randint(1, 60)
        best = max(Fraction(p, q) for q in range(1, limit + 1) for p in range(q) if Fraction(p, q) <= x)
        p, q = sf._floor_fraction(x, limit)
        assert q <= limit and Fraction(p, q) == best


@pytest.mark.parametrize("q", [0.3, 0.55, 1.0, 0.0, 0.123456789012345])
def test_quantile_threshold_is_exact(q):
    # Values up to 2^29, q with a long decimal (its g needs the bounded-denominator path):
    # x <= Q must agree with the exact Fraction quantile for x at and around Q.
    n = 12
    tables = sf._quantile_tables(n, q, 1.0)
    r = random.Random(str(q))
    for k in range(1, n + 1):
        for _ in range(20):
            v = sorted(r.randint(0, 1 << 29) for _ in range(k))
            Q = ref.quantile_exact(v, q)
            lo, hi = int(tables[1][k]), int(tables[2][k])
            xs = [int(Q) - 1, int(Q), int(Q) + 1, v[0], v[-1], r.randint(0, 1 << 29)]
            got = np.asarray(_at_most(jnp.array(xs, jnp.int32), v[lo], v[hi], int(tables[3][k]), int(tables[4][k])))
            assert got.tolist() == [x <= Q for x in xs]


def test_quantile_greedy_hand_example():
    # test_reference.py's example: the sample is all four (frac = 1), Q_p = 3.9, Q_o = 1.9;
    # Phase 1 takes nothing, Phase 2 by o / (s + o): 0 (10 tokens), 3 (14), then nothing fits.
    # Six unavailable requests pad the instance to the compiled shape.
    s, o = [9, 1, 1, 2], [1, 5, 2, 2]
    got = _quantile_batch[(0.3, 1.0)](
        jnp.array(s + [1] * 6), jnp.array(o + [1] * 6), jnp.array([True] * 4 + [False] * 6), 14, jnp.uint32(0)
    )
    assert _mask(got) == [0, 3] == sorted(ref.quantile_greedy([0, 1, 2, 3], s, o, 14, [0, 1, 2, 3]))


# --------------------------------------------------------------------------------------------
# Whole Sorted-F orders and the policies
# --------------------------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(order_instances)
def test_scaled_order_equals_the_reference(inst):
    s, o, extra = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    want, batches = ref.sorted_f(s, o, M, functools.partial(ref.scaled_dp, eps=0.5, B=10))
    assert np.asarray(_scaled_order(jnp.array(s), jnp.array(o), M)).tolist() == want
    assert ref.tel(ref.execute(s, o, want, M)[1]) <= ref.separate_tel(batches, o)  # Theorem 4


@settings(max_examples=50, deadline=None)
@given(order_instances, st.integers(0, 2**32 - 1))
def test_quantile_order_equals_the_reference(inst, seed):
    s, o, extra = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    want, batches = ref.sorted_f(s, o, M, ref.hash_quantile_solver(seed))
    got = np.asarray(_quantile_order(jnp.array(s), jnp.array(o), M, jnp.uint32(seed))).tolist()
    assert got == want
    assert ref.tel(ref.execute(s, o, want, M)[1]) <= ref.separate_tel(batches, o)


@pytest.mark.parametrize(
    "policy, options, solver",
    [
        (
            "sorted_f_scaled",
            dict(epsilon=0.5, scale_b=10),
            lambda seed: functools.partial(ref.scaled_dp, eps=0.5, B=10),
        ),
        (
            "sorted_f_quantile",
            dict(quantile=0.55, sample_fraction=0.3),
            lambda seed: ref.hash_quantile_solver(seed, 0.55, 0.3),
        ),
    ],
)
def test_policies_through_the_runner(policy, options, solver):
    r = random.Random(policy)
    s = [r.randint(1, 20) for _ in range(16)]
    o = [r.randint(1, 20) for _ in range(16)]
    M = 60  # > W = 20: the scaled DP rounds
    cfg = off.OfflineConfig(Trace(np.array(s), np.array(o), order="sequential"), policy=policy, **options)
    params = off.make_params(cfg, capacity_tokens=M)
    res = js.simulate(cfg, params, seeds=[3, 4])
    for i, seed in enumerate([3, 4]):
        order = np.asarray(off.init(cfg, params, seed).order).tolist()
        assert sorted(order) == list(range(16))
        assert order == ref.sorted_f(s, o, M, solver(seed))[0]
        assert res.metrics["tel_steps"][i] == ref.tel(ref.execute(s, o, order, M)[1])
