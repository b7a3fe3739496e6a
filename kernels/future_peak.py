"""The future-peak memory check of KV-constrained batching (papers 002 and 003, condition (3)).

A running job l started at p_l (its token k is generated at step p_l + k, holding s_l + k
tokens) and planned to end at c_l holds s_l + t' - p_l tokens at every step t' <= c_l. Memory
only grows between completions, so a set X fits at every future step iff it fits at each of
its completion steps:

    peak_j = sum_{l in X, c_l >= c_j} (s_l + c_j - p_l) <= M    for every j in X.

`completion_peaks` computes every peak_j of a set from scratch by sorting (O(n log n)), and
`completion_peaks_binned` by a histogram over completion steps when they span few steps;
`admit_check` tests one more job against those peaks in O(n) and returns the updated peaks,
so a strict-prefix admission costs O(n) per candidate. Times may be given relative to any
origin (the formulas only use differences): callers shift them to keep sums far from int32
overflow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_LOW = np.int32(-(2**30))
_HIGH = np.int32(2**31 - 1)
_UHIGH = np.uint32(2**32 - 1)


def completion_peaks(s: jnp.ndarray, p: jnp.ndarray, c: jnp.ndarray, member: jnp.ndarray) -> jnp.ndarray:
    """int32[n]: peak_j of the set {member} at each member's completion step c_j (0 elsewhere).

    s, p, c: int32[n] prompt tokens, start and planned completion steps; member: bool[n].
    """
    n = s.shape[0]
    key = jnp.where(member, c, _LOW)  # non-members sort first, out of every suffix
    w = jnp.where(member, s - p, 0)
    one = member.astype(jnp.int32)
    ks, ws, os_ = jax.lax.sort((key, w, one), num_keys=1)
    suf_w = jnp.cumsum(ws[::-1])[::-1]  # sum over sorted positions >= k
    suf_n = jnp.cumsum(os_[::-1])[::-1]
    first = jnp.searchsorted(ks, key, side="left")  # first member with c_l >= c_j
    first = jnp.minimum(first, n - 1)
    peak = suf_w[first] + c * suf_n[first]
    return jnp.where(member, peak, 0)


def completion_peaks_binned(
    s: jnp.ndarray, p: jnp.ndarray, c: jnp.ndarray, member: jnp.ndarray, width: int
) -> jnp.ndarray:
    """`completion_peaks` without sorting, for completion steps c in [0, width) (relative to
    the caller's origin): per-step sums of s - p and of counts, reverse-cumulated. O(n + width).
    """
    b = jnp.where(member, c, width)  # non-members land in a spare bin
    w = jnp.zeros((width + 1,), jnp.int32).at[b].add(jnp.where(member, s - p, 0))
    k = jnp.zeros((width + 1,), jnp.int32).at[b].add(member.astype(jnp.int32))
    suf_w = jnp.cumsum(w[::-1])[::-1]
    suf_n = jnp.cumsum(k[::-1])[::-1]
    cj = jnp.clip(c, 0, width)
    return jnp.where(member, suf_w[cj] + c * suf_n[cj], 0)


def lex_argmin(key: jnp.ndarray, tie: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """int32: the index i in mask with the smallest (key_i, tie_i, i) (key int32, tie uint32):
    the first element of the sorted order, in O(n). Undefined (0) when mask is empty."""
    k = jnp.min(jnp.where(mask, key, _HIGH))
    cand = mask & (key == k)
    m = jnp.min(jnp.where(cand, tie, _UHIGH))
    return jnp.argmax(cand & (tie == m)).astype(jnp.int32)


def admit_check(
    s: jnp.ndarray, p: jnp.ndarray, c: jnp.ndarray, member: jnp.ndarray, peak: jnp.ndarray, s_r, p_r, c_r, M
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Whether job r (prompt s_r, start p_r, planned end c_r >= every member's start) can join
    the set {member} whose peaks are `peak`, without any step exceeding M.

    Returns (fits: bool, raised: int32[n] the members' peaks with r added, own: int32 r's
    peak). r raises peak_j by s_r + c_j - p_r wherever c_j <= c_r (it is still running then).
    """
    raised = peak + jnp.where(member & (c <= c_r), s_r + c - p_r, 0)
    own = jnp.sum(jnp.where(member & (c >= c_r), s + c_r - p, 0)) + s_r + c_r - p_r
    fits = (jnp.max(jnp.where(member, raised, 0)) <= M) & (own <= M)
    return fits, raised, own
