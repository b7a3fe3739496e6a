"""kernels.future_peak: the future-memory peaks of a running set, by sorting, by histogram and
by the literal definition; lex_argmin against a sort; admit_check against recomputing."""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.kernels import admit_check, completion_peaks, completion_peaks_binned, lex_argmin

N, WIDTH = 12, 16


def _literal(s, p, c, member):
    return np.array(
        [
            sum(s[l] + c[j] - p[l] for l in range(len(s)) if member[l] and c[l] >= c[j]) if member[j] else 0
            for j in range(len(s))
        ]
    )


@st.composite
def sets(draw):
    s = np.array(draw(st.lists(st.integers(0, 9), min_size=N, max_size=N)))
    p = np.array(draw(st.lists(st.integers(-8, -1), min_size=N, max_size=N)))
    c = np.array(draw(st.lists(st.integers(0, WIDTH - 1), min_size=N, max_size=N)))
    member = np.array(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
    return s, p, c, member


_sorted = jax.jit(completion_peaks)
_binned = jax.jit(completion_peaks_binned, static_argnums=4)
_argmin = jax.jit(lex_argmin)
_check = jax.jit(admit_check)


@settings(max_examples=150, deadline=None)
@given(x=sets())
def test_peaks_by_sort_and_histogram_equal_the_definition(x):
    s, p, c, member = x
    want = _literal(s, p, c, member)
    np.testing.assert_array_equal(np.asarray(_sorted(s, p, c, member)), want)
    np.testing.assert_array_equal(np.asarray(_binned(s, p, c, member, WIDTH)), want)


@settings(max_examples=150, deadline=None)
@given(x=sets(), r_s=st.integers(0, 9), r_c=st.integers(0, WIDTH - 1), M=st.integers(5, 80))
def test_admit_check_equals_recomputing_the_peaks(x, r_s, r_c, M):
    s, p, c, member = x
    peak = np.asarray(_sorted(s, p, c, member))
    ok, raised, own = _check(s, p, c, member, peak, r_s, -1, r_c, M)
    s2, p2, c2, m2 = (np.append(a, v) for a, v in ((s, r_s), (p, -1), (c, r_c), (member, True)))
    want = _literal(s2, p2, c2, m2)
    assert int(own) == want[-1]
    np.testing.assert_array_equal(np.where(member, np.asarray(raised), 0), want[:-1])
    assert bool(ok) == bool(want.max() <= M)


@settings(max_examples=200, deadline=None)
@given(
    key=st.lists(st.integers(0, 3), min_size=N, max_size=N),
    tie=st.lists(st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**32 - 2]), min_size=N, max_size=N),
    mask=st.lists(st.booleans(), min_size=N, max_size=N),
)
def test_lex_argmin_is_the_first_of_the_sorted_order(key, tie, mask):
    if not any(mask):
        return
    want = min((k, t, i) for i, (k, t, m) in enumerate(zip(key, tie, mask)) if m)[2]
    got = _argmin(np.array(key, np.int32), np.array(tie, np.uint32), np.array(mask))
    assert int(got) == want
