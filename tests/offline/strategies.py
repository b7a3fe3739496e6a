"""Hypothesis strategies shared by the offline tests."""

from __future__ import annotations

from hypothesis import strategies as st


def instances(max_n: int, max_len: int, *, s_min: int = 0, max_extra: int = 20):
    """(s, o, extra, order) of 1..max_n requests: prompts in [s_min, max_len] and outputs in
    [1, max_len] tokens, extra >= 0 tokens of KV limit above the largest s + o, and an order (a
    permutation). Small lengths and a tight limit give many ties of completion times and many
    rejections, where peak computations could differ."""
    return st.integers(1, max_n).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(s_min, max_len), min_size=n, max_size=n),
            st.lists(st.integers(1, max_len), min_size=n, max_size=n),
            st.integers(0, max_extra),
            st.permutations(list(range(n))),
        )
    )
