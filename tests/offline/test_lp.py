"""Paper 002's LP-based orders and exact optimum (jaxsched/offline/lp.py) against plain Python.

The orders given y against tests/reference/offline_lp.py (LP-Swap: Algorithm 7 in plain loops;
Sorted-LP: ascending (y, index)); the chain relaxed LP <= OPT <= the executor TEL of every order
tried; OPT against a brute force over start vectors; Example 1's optimum; bad input.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "scipy", reason="scipy (HiGHS) is needed for the LP and IP of paper 002: pip install 'jaxsched[lp]'"
)

from jaxsched.errors import ConfigError  # noqa: E402
from jaxsched.offline import lp  # noqa: E402
from tests.reference import offline as ref  # noqa: E402
from tests.reference import offline_lp as ref_lp  # noqa: E402

# Example 1 of the paper: M = 64, one (s=63, o=1) and 21 (s=1, o=2).
EX1_M = 64
EX1_S = [63] + [1] * 21
EX1_O = [1] + [2] * 21


@st.composite
def instances(draw, min_n: int = 1, max_n: int = 6, max_m: int = 24, max_o: int = 6):
    """(s, o, M) with s, o >= 1 and s + o <= M; small ranges give many ties."""
    M = draw(st.integers(2, max_m))
    n = draw(st.integers(min_n, max_n))
    o = draw(st.lists(st.integers(1, min(M - 1, max_o)), min_size=n, max_size=n))
    s = [draw(st.integers(1, M - oi)) for oi in o]
    return s, o, M


def _tel(s, o, M, order) -> int:
    return ref.tel(ref.execute(s, o, [int(i) for i in order], M)[1])


# --------------------------------------------------------------------------------------------
# The orders given y
# --------------------------------------------------------------------------------------------
# y drawn from few values (many ties, broken by index) or as arbitrary floats. n is drawn from
# a few sizes only: each size compiles the jitted LP-Swap loop once.
ys = st.lists(st.integers(0, 4).map(float), min_size=8, max_size=8) | st.lists(
    st.floats(0, 50, allow_nan=False), min_size=8, max_size=8
)


@settings(max_examples=150, deadline=None)
@given(inst=instances(min_n=3, max_n=8, max_m=40, max_o=20), y=ys, n=st.sampled_from([3, 8]))
def test_lp_swap_order_equals_the_reference(inst, y, n):
    s, o, M = inst
    s, o = (s * 8)[:n], (o * 8)[:n]  # n requests, cycling the drawn ones
    y = y[:n]
    got = lp.lp_swap_order(np.array(s), np.array(o), M, y=np.array(y))
    assert got.tolist() == ref_lp.lp_swap_order(s, o, M, y)


@settings(max_examples=60, deadline=None)
@given(inst=instances(max_n=8), y=ys)
def test_sorted_lp_order_is_the_stable_argsort(inst, y):
    s, o, M = inst
    y = y[: len(s)]
    got = lp.sorted_lp_order(np.array(s), np.array(o), M, y=np.array(y))
    assert got.tolist() == ref_lp.sorted_lp_order(y) == np.argsort(y, kind="stable").tolist()


def test_lp_swap_hand_example_keeps_the_greedy_cardinality():
    # M = 10, w = s + o = [4, 4, 4, 9], o = [2, 1, 1, 5]; y walks 3, 2, 1, 0. Batch 1: the fill
    # takes 3 (9 tokens) and nothing else fits; the swaps (r_in in index order) trade 3 for 0
    # (o 2 < 5), then 0 for 1 (o 1 < 2): [1]. The batch stays at one request although two
    # w = 4 requests would fit: unlike Algorithm 4's fill, the y-order fill is not maximum
    # cardinality and swaps never change |X|. Batch 2 likewise: 3 -> 0 -> 2. Then [0], [3].
    s, o, M = [2, 3, 3, 4], [2, 1, 1, 5], 10
    y = [3.0, 2.0, 1.0, 0.0]
    assert ref_lp.lp_swap_order(s, o, M, y) == [1, 2, 0, 3]
    assert lp.lp_swap_order(np.array(s), np.array(o), M, y=np.array(y)).tolist() == [1, 2, 0, 3]


# --------------------------------------------------------------------------------------------
# Relaxed LP <= OPT <= heuristics
# --------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(inst=instances(max_n=6, max_m=20, max_o=6), seed=st.integers(0, 99))
def test_lp_below_opt_below_every_order(inst, seed):
    s, o, M = inst
    H = sum(o)  # the unrestricted optimum (lp.opt_ip's docstring)
    sol = lp.relaxed_lp_solution(s, o, M, horizon=H)
    best, p = lp.opt_ip(s, o, M, horizon=H)
    assert sum(o) <= sol.value <= best + 1e-6
    assert int(lp.memory_profile(s, o, p).max()) <= M and best == int((p + np.array(o)).sum())
    perm = list(range(len(s)))
    random.Random(seed).shuffle(perm)
    orders = [
        perm,
        ref.order_mcsf(s, o),
        ref.sorted_f(s, o, M, ref.local_swap)[0],
        ref_lp.sorted_lp_order(sol.y),
        ref_lp.lp_swap_order(s, o, M, sol.y),
    ]
    for order in orders:
        assert best <= _tel(s, o, M, order)
    # At the default horizon (the MC-SF makespan) the same chain holds against MC-SF itself.
    sol_h = lp.relaxed_lp_solution(s, o, M)
    best_h, _ = lp.opt_ip(s, o, M)
    assert sol_h.horizon == max(ref.execute(s, o, ref.order_mcsf(s, o), M)[1])
    assert sol.value - 1e-6 <= sol_h.value <= best_h + 1e-6
    assert best <= best_h <= _tel(s, o, M, ref.order_mcsf(s, o))


@settings(max_examples=15, deadline=None)
@given(inst=instances(max_n=4, max_m=12, max_o=4))
def test_opt_equals_brute_force(inst):
    s, o, M = inst
    for H in (max(ref.execute(s, o, ref.order_mcsf(s, o), M)[1]), sum(o)):
        best, p = lp.opt_ip(s, o, M, horizon=H)
        want, _ = ref_lp.brute_force_opt(s, o, M, H)
        assert best == want
        assert int((p + np.array(o)).max()) <= H
    assert best <= ref.best_order_tel(s, o, M)  # H = sum(o): below every executor order


def test_opt_can_beat_every_executor_order():
    # The optimum (TEL 23, starts [0, 1, 1, 6]) is the schedule of no admission order: the
    # best of the 24 orders gives 24 (found by search; both sides by brute force).
    s, o, M = [2, 1, 1, 3], [2, 3, 5, 5], 8
    assert ref_lp.brute_force_opt(s, o, M, sum(o))[0] == 23 < ref.best_order_tel(s, o, M) == 24
    best, p = lp.opt_ip(s, o, M, horizon=sum(o))
    assert best == 23 and int(lp.memory_profile(s, o, p).max()) <= M


def test_opt_is_sum_of_o_when_everything_fits_at_once():
    s, o = [3, 1, 4, 2], [2, 5, 1, 3]
    best, p = lp.opt_ip(s, o, sum(s) + sum(o))
    assert best == sum(o) and p.tolist() == [0, 0, 0, 0]


def test_example1_opt_is_45():
    # Why 45: request 0 needs 63 + 1 = 64 = M tokens at its one step, so it runs alone. Started
    # at p0 = 0 everything else completes at >= 3 (TEL 1 + 21 * 3 = 64); at p0 = 1 no type-2
    # request can finish by step 1 (o = 2), so all finish at >= 4; at p0 = 2 all 21 type-2
    # requests fit at p = 0 (21 * 3 = 63 <= 64 at their peak), TEL 42 + 3 = 45; p0 >= 3 gives
    # >= 42 + 4. So OPT = 45 at any horizon >= 3, which the IP must find.
    assert lp.opt_ip(EX1_S, EX1_O, EX1_M)[0] == 45  # horizon 3, MC-SF's makespan
    assert lp.opt_ip(EX1_S, EX1_O, EX1_M, horizon=sum(EX1_O))[0] == 45
    sol = lp.relaxed_lp_solution(EX1_S, EX1_O, EX1_M)
    assert sum(EX1_O) <= sol.value <= 45
    # Both LP orders put the 21 short requests first, which gives the optimum.
    for order in (lp.sorted_lp_order(EX1_S, EX1_O, EX1_M), lp.lp_swap_order(EX1_S, EX1_O, EX1_M)):
        assert _tel(EX1_S, EX1_O, EX1_M, order) == 45


# --------------------------------------------------------------------------------------------
# Coarse time steps, the batch helper
# --------------------------------------------------------------------------------------------
def test_coarse_time_step_program_is_smaller_and_feasible():
    rng = np.random.default_rng(0)
    s, o = rng.integers(1, 30, 12), rng.integers(1, 30, 12)
    fine = lp.relaxed_lp_solution(s, o, 100)
    coarse = lp.relaxed_lp_solution(s, o, 100, time_step=4)
    assert coarse.num_vars < fine.num_vars / 2 and coarse.nnz < fine.nnz / 2
    assert coarse.horizon >= fine.horizon
    # Restricting starts can only raise the optimum (at the same horizon).
    same = lp.relaxed_lp_solution(s, o, 100, horizon=coarse.horizon)
    assert same.value <= coarse.value + 1e-6
    assert sorted(lp.lp_swap_order(s, o, 100, time_step=4).tolist()) == list(range(12))


@settings(max_examples=20, deadline=None)
@given(inst=instances(max_n=8, max_m=30, max_o=10), q=st.integers(1, 3))
def test_formulations_and_methods_give_the_same_lp(inst, q):
    s, o, M = inst
    chained = lp.relaxed_lp_solution(s, o, M, time_step=q)
    for kw in (dict(formulation="ramp"), dict(method="highs-ds"), dict(formulation="ramp", method="highs")):
        other = lp.relaxed_lp_solution(s, o, M, time_step=q, horizon=chained.horizon, **kw)
        assert other.value == pytest.approx(chained.value, rel=1e-7, abs=1e-7)
    # y is a convex combination of the allowed starts.
    assert (chained.y >= 0).all() and (chained.y <= chained.horizon - np.array(o)).all()


def test_coarse_time_step_grows_an_infeasible_default_horizon():
    # Two requests that cannot overlap (3 + 2 each at their peak, M = 5): MC-SF runs them back
    # to back, makespan 4. With starts on multiples of 3 and k <= 4 - 2, both could only start
    # at 0: infeasible. The horizon grows to 5 (the sequential grid schedule: 0 and 3), where
    # the LP puts one start at 0 and one at 3.
    sol = lp.relaxed_lp_solution([3, 3], [2, 2], 5, time_step=3)
    assert sol.horizon == 5 and sorted(sol.y.tolist()) == [0.0, 3.0] and sol.value == 7.0
    with pytest.raises(RuntimeError, match="HiGHS"):
        lp.relaxed_lp([3, 3], [2, 2], 5, time_step=3, horizon=4)  # given: never grown


def test_lp_orders_rows_equal_single_calls():
    rng = np.random.default_rng(1)
    s, o = rng.integers(1, 20, (3, 8)), rng.integers(1, 20, (3, 8))
    y = lp.relaxed_lps(s, o, 60)
    for r in range(3):
        assert y[r].tolist() == lp.relaxed_lp(s[r], o[r], 60).tolist()
    for which, one in (("sorted_lp", lp.sorted_lp_order), ("lp_swap", lp.lp_swap_order)):
        got = lp.lp_orders(s, o, 60, which)
        assert got.shape == (3, 8)
        assert got.tolist() == lp.lp_orders(s, o, 60, which, y=y).tolist()
        for r in range(3):
            assert got[r].tolist() == one(s[r], o[r], 60).tolist()
            assert got[r].tolist() == one(s[r], o[r], 60, y[r]).tolist()


def test_lp_orders_reports_progress():
    class Counter:
        done = 0

        def advance(self, weight, detail=""):
            self.done += weight

    counter = Counter()
    lp.lp_orders(np.ones((2, 3), int), np.ones((2, 3), int), 4, "sorted_lp", progress=counter)
    assert counter.done == 2


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "s, o, M, field",
    [
        ([1, 2], [1], 10, "s, o"),  # shapes differ
        ([[1, 2]], [[1, 2]], 10, "s, o"),  # not one-dimensional
        ([], [], 10, "s, o"),  # empty
        ([1.0, 2.0], [1.0, 1.0], 10, "s, o"),  # not integers
        ([0, 2], [1, 1], 10, "s, o"),  # s < 1
        ([1, 2], [1, 0], 10, "s, o"),  # o < 1
        ([9, 2], [2, 1], 10, "s + o"),  # request 0 never fits
        ([1, 2], [1, 1], 1, "M"),  # M < 2
        ([1, 2], [1, 1], 10.0, "M"),  # M not an integer
    ],
)
def test_bad_instances_name_the_field(s, o, M, field):
    for fn in (lp.relaxed_lp, lp.opt_ip, lp.sorted_lp_order, lp.lp_swap_order):
        with pytest.raises(ConfigError, match=field.replace("+", r"\+")):
            fn(s, o, M)


def test_bad_options_name_the_field():
    s, o = [1, 2, 3], [2, 2, 1]
    with pytest.raises(ConfigError, match="horizon"):
        lp.relaxed_lp(s, o, 10, horizon=1)  # < max o: nothing could finish
    with pytest.raises(ConfigError, match="horizon"):
        lp.opt_ip(s, o, 10, horizon=1)
    with pytest.raises(ConfigError, match="time_step"):
        lp.relaxed_lp(s, o, 10, time_step=0)
    with pytest.raises(ConfigError, match="method"):
        lp.relaxed_lp(s, o, 10, method="simplex")
    with pytest.raises(ConfigError, match="formulation"):
        lp.relaxed_lp(s, o, 10, formulation="dense")
    with pytest.raises(ConfigError, match="time_step"):
        lp.lp_orders([s], [o], 10, "lp_swap", time_step=1.5)
    with pytest.raises(ConfigError, match="y"):
        lp.lp_orders([s], [o], 10, "lp_swap", y=[[0.0, 1.0]])
    with pytest.raises(ConfigError, match="time_limit_s"):
        lp.opt_ip(s, o, 10, time_limit_s=0)
    with pytest.raises(ConfigError, match="y"):
        lp.lp_swap_order(s, o, 10, y=[0.0, 1.0])
    with pytest.raises(ConfigError, match="which"):
        lp.lp_orders([s], [o], 10, "sorted_f")


def test_infeasible_explicit_horizon_raises_runtime_error():
    # Two requests that each need all of M at their last step cannot overlap, so a horizon of
    # max(o) (both would have to start at 0) is infeasible; HiGHS's message is passed on.
    with pytest.raises(RuntimeError, match="HiGHS"):
        lp.relaxed_lp([3, 3], [2, 2], 5, horizon=2)
    with pytest.raises(RuntimeError, match="HiGHS"):
        lp.opt_ip([3, 3], [2, 2], 5, horizon=2)
