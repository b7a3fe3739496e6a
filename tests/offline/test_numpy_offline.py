"""The benchmark's one-instance NumPy executor (benchmarks/numpy_offline.py) against the
plain-Python oracle tests/reference/offline.py::execute: the same (p, c) for every order, in
both modes (event skipping and the unit-step walk), and the skipping mode visits few steps."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings

from benchmarks.numpy_offline import execute_numpy, execute_numpy_steps
from jaxsched.offline import instances as offline_instances
from jaxsched.offline import workloads
from jaxsched.offline.config import PAPER_CAPACITY_TOKENS, OfflineConfig
from tests.offline import strategies
from tests.reference import offline as ref

instances = strategies.instances(10, 12)


@settings(max_examples=200, deadline=None)
@given(instances)
def test_numpy_executor_matches_the_reference(inst):
    s, o, extra, perm = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    for order in (perm, ref.order_mcsf(s, o), ref.order_mcsf2(s, o)):
        p, c = execute_numpy(s, o, order, M)
        assert (p.tolist(), c.tolist()) == ref.execute(s, o, order, M)


# Wider lengths than `instances`: long outputs make long blocked stretches for the skip to cross,
# and the spread of completion times makes the own term's bound (c* + 2 - o_r) matter.
wide_instances = strategies.instances(12, 20, max_extra=30)


@settings(max_examples=300, deadline=None)
@given(wide_instances)
def test_event_skipping_matches_the_unit_step_walk_and_the_reference(case):
    s, o, extra, order = case
    M = max(a + b for a, b in zip(s, o)) + extra
    p, c, steps = execute_numpy_steps(s, o, order, M, skip=True)
    p_walk, c_walk, walk_steps = execute_numpy_steps(s, o, order, M, skip=False)
    assert (p.tolist(), c.tolist()) == (p_walk.tolist(), c_walk.tolist()) == ref.execute(s, o, order, M)
    assert walk_steps == int(p.max()) + 1  # the walk visits every step up to the last admission
    assert steps <= walk_steps


def test_event_skipping_jumps_over_blocked_steps():
    """Two requests that each fill M: the second waits o = 1000 steps for the first to leave.

    The unit-step walk visits steps 1..1001; skipping visits step 1 (admits request 0, blocks
    request 1, jumps to c_0 + 1 = 1001) and step 1001 (admits request 1).
    """
    s, o, M = [10, 10], [1000, 1000], 1010
    p, c, steps = execute_numpy_steps(s, o, [0, 1], M)
    assert (p.tolist(), c.tolist()) == ([0, 1000], [1000, 2000])
    assert steps == 2
    assert execute_numpy_steps(s, o, [0, 1], M, skip=False)[2] == 1001


def _real_mix(n: int, seed: int) -> tuple[list[int], list[int]]:
    """(s, o) token lengths, n each, of paper 002 section 7's real-data mix, instance `seed`."""
    s, o = offline_instances.draw(OfflineConfig(workloads.real("mix", n)), np.array([seed], np.uint32))
    return s[0].tolist(), o[0].tolist()


def test_event_skipping_on_a_real_mix_instance():
    """n = 300 of the real mix at the paper's M: both modes and the oracle agree, and skipping
    visits under a fifth of the steps the walk does (here about a tenth: the skip still stops
    after each of the roughly n distinct completions, and about 12 requests run at once)."""
    s, o = _real_mix(300, 0)
    M = PAPER_CAPACITY_TOKENS
    arrival = list(range(300))
    random.Random(0).shuffle(arrival)  # FCFS of a batch at t = 0: a random permutation
    for order in (ref.order_fcfs(arrival), ref.order_mcsf(s, o)):
        p, c, steps = execute_numpy_steps(s, o, order, M, skip=True)
        p_walk, c_walk, walk_steps = execute_numpy_steps(s, o, order, M, skip=False)
        assert (p.tolist(), c.tolist()) == (p_walk.tolist(), c_walk.tolist()) == ref.execute(s, o, order, M)
        assert steps * 5 < walk_steps


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
