"""The benchmark's one-instance NumPy executor (benchmarks/numpy_offline.py) against the
plain-Python oracle tests/reference/offline.py::execute: the same (p, c) for every order."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.numpy_offline import execute_numpy
from tests.reference import offline as ref

# Small lengths and a tight M give many ties of completion times and many rejections, which is
# where the two peak computations could differ (c_j <= c_r against c_l >= c_j).
instances = st.integers(1, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 12), min_size=n, max_size=n),
        st.lists(st.integers(1, 12), min_size=n, max_size=n),
        st.integers(0, 20),
        st.permutations(list(range(n))),
    )
)


@settings(max_examples=200, deadline=None)
@given(instances)
def test_numpy_executor_matches_the_reference(inst):
    s, o, extra, perm = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    for order in (perm, ref.order_mcsf(s, o), ref.order_mcsf2(s, o)):
        p, c = execute_numpy(s, o, order, M)
        assert (p.tolist(), c.tolist()) == ref.execute(s, o, order, M)


def test_numpy_executor_on_a_larger_instance():
    """n = 60 with a KV limit that holds about ten requests: many steps, long active sets."""
    rnd = random.Random(7)
    s = [rnd.randint(1, 40) for _ in range(60)]
    o = [rnd.randint(1, 30) for _ in range(60)]
    order = list(range(60))
    rnd.shuffle(order)
    p, c = execute_numpy(s, o, order, 300)
    assert (p.tolist(), c.tolist()) == ref.execute(s, o, order, 300)


def test_numpy_executor_rejects_what_cannot_run():
    with pytest.raises(ValueError, match="s \\+ o <= M"):
        execute_numpy([5, 1], [5, 1], [0, 1], 9)
    with pytest.raises(ValueError, match="permutation"):
        execute_numpy([1, 1], [1, 1], [0, 0], 9)
    assert execute_numpy(np.zeros(0, int), np.zeros(0, int), np.zeros(0, int), 9)[1].size == 0
