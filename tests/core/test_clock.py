"""The double-float clock: exactness, long-horizon precision and bitwise NumPy reproducibility."""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched import clock
from jaxsched.clock import DF
from jaxsched.timing import iteration_time_s

f32 = np.float32


# The plain-NumPy mirror a reference simulator uses (docs/kv-semantics.md §2).
def np_two_sum(a, b):
    s = f32(a + b)
    bb = f32(s - a)
    return s, f32(f32(a - f32(s - bb)) + f32(b - bb))


def np_add_f32(hi, lo, b):
    s, e = np_two_sum(hi, b)
    e = f32(e + lo)
    h = f32(s + e)
    return h, f32(e - f32(h - s))


def np_sub(xh, xl, yh, yl):
    s, e = np_two_sum(xh, f32(-yh))
    e = f32(e + f32(xl - yl))
    h = f32(s + e)
    return f32(h + f32(e - f32(h - s)))


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False, width=32)


@settings(max_examples=200, deadline=None)
@given(finite, finite)
def test_two_sum_is_exact(a, b):
    s, e = jax.jit(clock.two_sum)(jnp.float32(a), jnp.float32(b))
    assert np.float64(s) + np.float64(e) == np.float64(f32(a)) + np.float64(f32(b))
    assert f32(s) == f32(f32(a) + f32(b))


def test_accumulated_gaps_match_float64_and_numpy_bitwise():
    rng = np.random.default_rng(0)
    gaps = rng.exponential(0.37, size=20000).astype(np.float32)

    def body(x, g):
        y = clock.add_f32(x, g)
        return y, (y.hi, y.lo)

    _, (hi, lo) = jax.jit(lambda g: jax.lax.scan(body, DF.zeros(), g))(jnp.asarray(gaps))
    hi, lo = np.asarray(hi), np.asarray(lo)
    exact = np.cumsum(gaps.astype(np.float64))
    got = hi.astype(np.float64) + lo.astype(np.float64)
    # ~48 bits: far better than float32 (whose cumulative sum drifts by ~1e-4 here).
    assert np.max(np.abs(got - exact) / exact) < 1e-12
    naive = np.cumsum(gaps, dtype=np.float32)
    assert np.max(np.abs(naive - exact) / exact) > 1e-7  # the problem being solved
    h, l = f32(0), f32(0)
    for i, g in enumerate(gaps[:3000]):
        h, l = np_add_f32(h, l, g)
        assert h == hi[i] and l == lo[i]
    assert np.all(hi == f32(hi + lo))  # normalized


@settings(max_examples=100, deadline=None)
@given(*[st.one_of(st.just(0.0), st.floats(float(f32(1e-30)), 1e5, width=32))] * 2, st.floats(0, 10, width=32))
def test_sub_and_le_match_numpy(a, b, c):
    # Times are never subnormal (XLA on CPU flushes subnormals to zero; NumPy does not), nor so
    # tiny that their difference would be.
    c = f32(c) if c == 0 or c > 1e-30 else f32(0)
    small = f32(c * f32(1e-4))
    x = clock.add_f32(DF(jnp.float32(a), jnp.float32(0)), jnp.float32(small))
    y = clock.add_f32(DF(jnp.float32(b), jnp.float32(0)), jnp.float32(c))
    d = jax.jit(clock.sub)(x, y)
    xh, xl = np_add_f32(f32(a), f32(0), small)
    yh, yl = np_add_f32(f32(b), f32(0), f32(c))
    assert f32(d) == np_sub(xh, xl, yh, yl)
    val = lambda z: Fraction(float(z.hi)) + Fraction(float(z.lo))
    exact = val(x) - val(y)
    err = abs(Fraction(float(d)) - exact)
    assert err <= Fraction(1e-7) * abs(exact) + Fraction(2.0**-46) * max(abs(val(x)), abs(val(y)))
    assert bool(clock.le(x, y)) == (val(x) <= val(y))


def test_late_latency_keeps_microseconds():
    # At t ~ 1e6 s one float32 ulp is 0.06 s; the double-float still resolves 1 us.
    t = DF.from_float64(1e6 + 0.123456)
    a = DF.from_float64(1e6 + 0.123455)
    assert abs(float(clock.sub(t, a)) - 1e-6) < 1e-9
    assert bool(clock.le(a, t)) and not bool(clock.le(t, a))


def np_iteration_time(tokens: int, d0, d1):
    """The NumPy mirror of jaxsched.timing.iteration_time_s (docs/kv-semantics.md §2)."""
    hi, lo = clock.split12(d1)
    t = [f32(((tokens >> (12 * i)) & 4095) * 2.0 ** (12 * i)) for i in range(3)]
    h, l = f32(d0), f32(0)
    for p in (hi * t[2], hi * t[1], lo * t[2], hi * t[0], lo * t[1], lo * t[0]):
        h, l = np_add_f32(h, l, f32(p))
    return h, l


def test_split12_is_exact():
    for x in (3.7e-5, 1.0, 0.1, 2.0**-20 * 3, 123456.789):
        hi, lo = clock.split12(x)
        assert np.float64(hi) + np.float64(lo) == np.float64(f32(x))
        for h in (hi, lo):  # 12 significant bits: times a 12-bit integer stays exact
            assert np.float64(f32(h * f32(4095))) == np.float64(h) * 4095


def test_iteration_time_exact_and_matches_numpy_bitwise():
    rng = np.random.default_rng(1)
    tokens = np.concatenate([rng.integers(0, 2**30, size=2000), [0, 1, 4095, 4096, 2**24, 2**30]])
    tokens = tokens.astype(np.int32)
    d0, d1 = f32(0.0123), f32(3.7e-5)
    hi, lo = clock.split12(d1)
    f = jax.jit(jax.vmap(lambda t: iteration_time_s(t, d0, hi, lo)))
    got = f(jnp.asarray(tokens))
    gh, gl = np.asarray(got.hi), np.asarray(got.lo)
    exact = np.float64(d0) + np.float64(d1) * tokens.astype(np.float64)
    assert np.max(np.abs(gh.astype(np.float64) + gl - exact) / exact) < 2.0**-46
    for i in range(0, tokens.size, 7):
        assert (gh[i], gl[i]) == np_iteration_time(int(tokens[i]), d0, d1)


def test_priced_iteration_time_matches_the_reference_and_reduces_to_eq1():
    # Two prices: decode products first, then prefill products, bit for bit as the reference;
    # priced at d1 the total is eq. (1)'s d0 + d1 * tokens to double-float accuracy.
    from jaxsched.clock import split12
    from jaxsched.timing import priced_iteration_time_s
    from tests.reference import kv as ref

    rng = np.random.default_rng(5)
    for _ in range(200):
        dec, pre = (int(x) for x in rng.integers(0, 2**29, 2))
        d0, d1, dp = (np.float32(x) for x in rng.uniform(1e-7, 1e-2, 3))
        got = priced_iteration_time_s(jnp.int32(dec), jnp.int32(pre), d0, *split12(d1), *split12(dp))
        want = ref.priced_iteration_time(dec, pre, d0, d1, dp)
        assert (np.float32(got.hi), np.float32(got.lo)) == (want.hi, want.lo)
        same = priced_iteration_time_s(jnp.int32(dec), jnp.int32(pre), d0, *split12(d1), *split12(d1))
        exact = float(d0) + float(d1) * (dec + pre)
        assert float(same.hi) + float(same.lo) == pytest.approx(exact, rel=2e-13)


def test_budget_batch_time_is_eq_2_3():
    # Paper 004's t(b') = c + a max(0, b' - b0): flat below b0, then eq. (1)'s exact products
    # on the excess tokens, bit for bit as the NumPy mirror; the paper's Llama-3-70B constants.
    from jaxsched.budget.timing import budget_batch_time_s

    c, a, b0 = f32(0.0455), f32(0.30e-3), 64
    hi, lo = clock.split12(a)
    loads = np.array([0, 1, 63, 64, 65, 128, 512, 4096, 100_000], np.int32)
    got = jax.jit(jax.vmap(lambda x: budget_batch_time_s(x, c, hi, lo, b0)))(jnp.asarray(loads))
    for i, b in enumerate(loads):
        want = np_iteration_time(max(0, int(b) - b0), c, a)
        assert (np.asarray(got.hi)[i], np.asarray(got.lo)[i]) == want
        exact = float(c) + float(a) * max(0, int(b) - b0)
        assert abs(float(np.asarray(got.hi)[i]) + float(np.asarray(got.lo)[i]) - exact) < 1e-12
    assert np.all(np.asarray(got.hi)[:4] == c)


_add = jax.jit(clock.add)
# Clock values from a microsecond to 10^7 s (tinier ones would need subnormal float32 low words).
clock_values = st.one_of(st.just(0.0), st.floats(1e-6, 1e7, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(clock_values, clock_values)
def test_double_float_add_is_exact_to_48_bits(x, y):
    # Two double-float clock values added directly, against exact rational arithmetic: the
    # result is normalized (hi = fl(hi + lo)) and within 2^-45 relative of the exact sum
    # (double-float addition of same-sign values errs by at most about 2 u^2, u = 2^-24).
    # Dropping either low word or a two-sum correction errs by up to 2^-25 relative.
    a, b = DF.from_float64(x), DF.from_float64(y)
    r = _add(a, b)
    exact = sum(Fraction(float(v)) for v in (a.hi, a.lo, b.hi, b.lo))
    got = Fraction(float(r.hi)) + Fraction(float(r.lo))
    assert abs(got - exact) <= exact * Fraction(1, 2**45)
    assert f32(r.hi) == f32(f32(r.hi) + f32(r.lo))


def test_double_float_add_keeps_both_low_words():
    # 1 + 2^-30 + 1 + 2^-30: each low word is below float32 resolution at 1, the sum is not lost.
    a = DF(jnp.float32(1.0), jnp.float32(2.0**-30))
    r = _add(a, a)
    assert Fraction(float(r.hi)) + Fraction(float(r.lo)) == 2 + Fraction(2, 2**30)
