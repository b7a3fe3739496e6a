"""The offline Sorted-F oracle (tests/reference/offline.py) against the paper and itself.

Example 1's numbers; exact_dp against brute force (same tie rules, same set); every solver's
batch feasible; executor schedules within M and never later than the rule allows; Lemma 1 on
exact argmin batches; Theorem 4 for every solver; the OPT integer program
(jaxsched.offline.lp.opt_ip) below every heuristic, and the brute-force optimum of
tests/reference/offline_lp.py below the best executor order, on small instances.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference import offline as ref
from tests.reference import offline_lp as ref_lp

HAS_SCIPY = importlib.util.find_spec("scipy") is not None
needs_scipy = pytest.mark.skipif(
    not HAS_SCIPY,
    reason="scipy (HiGHS) is needed for the OPT IP (jaxsched.offline.lp.opt_ip): pip install 'jaxsched[lp]'",
)


def _opt_ip(*args, **kw):
    """jaxsched.offline.lp.opt_ip, imported when a test needs it (it needs SciPy)."""
    from jaxsched.offline.lp import opt_ip

    return opt_ip(*args, **kw)


# Example 1 of the paper: M = 64, one (s=63, o=1) and 21 (s=1, o=2).
EX1_M = 64
EX1_S = [63] + [1] * 21
EX1_O = [1] + [2] * 21

SOLVERS = {
    "exact_dp": ref.exact_dp,
    "scaled_dp": ref.scaled_dp,
    "scaled_dp_coarse": functools.partial(ref.scaled_dp, eps=0.5, B=4),  # lambda = M / 8
    "local_swap": ref.local_swap,
    "quantile": None,  # built per test from a seeded sampler
}


def _solver(name: str, seed: int = 0) -> ref.Solver:
    if name == "quantile":
        return ref.quantile_solver(ref.stdlib_sampler(seed))
    return SOLVERS[name]


@st.composite
def instances(draw, max_n: int = 8, max_m: int = 40, max_o: int = 40):
    """(s, o, M) with 1 <= s, 1 <= o and s + o <= M; small ranges give many ties."""
    M = draw(st.integers(2, max_m))
    n = draw(st.integers(1, max_n))
    o = draw(st.lists(st.integers(1, min(M - 1, max_o)), min_size=n, max_size=n))
    s = [draw(st.integers(1, M - oi)) for oi in o]
    return s, o, M


def _schedule_tel(s, o, M, order):
    p, c = ref.execute(s, o, order, M)
    return ref.tel(c)


# --------------------------------------------------------------------------------------------
# Example 1
# --------------------------------------------------------------------------------------------
def test_example1_mcsf_is_64():
    assert _schedule_tel(EX1_S, EX1_O, EX1_M, ref.order_mcsf(EX1_S, EX1_O)) == 64


# At the default eps and B, lambda = 1 for M = 64; the coarse scale (lambda = 8) rounds the
# type-2 weight 3 up to 1 unit of 8 and so cannot fit 21 of them in one batch.
@pytest.mark.parametrize("name", [n for n in SOLVERS if n != "scaled_dp_coarse"])
def test_example1_sorted_f_is_45(name):
    for seed in range(3 if name == "quantile" else 1):
        order, batches = ref.sorted_f(EX1_S, EX1_O, EX1_M, _solver(name, seed))
        assert [len(b) for b in batches] == [21, 1]
        assert order[-1] == 0
        assert _schedule_tel(EX1_S, EX1_O, EX1_M, order) == 45
        assert ref.separate_tel(batches, EX1_O) == 45


def test_example1_f_values():
    assert ref.f_metric([0], EX1_O) == 1
    assert ref.f_metric(list(range(1, 22)), EX1_O) == ref.Fraction(42, 441)


@needs_scipy
def test_example1_opt_is_45():
    assert _opt_ip(EX1_S, EX1_O, EX1_M)[0] == 45
    assert _opt_ip(EX1_S, EX1_O, EX1_M, horizon=sum(EX1_O))[0] == 45


# --------------------------------------------------------------------------------------------
# Executor
# --------------------------------------------------------------------------------------------
def test_execute_rejects_a_request_that_never_fits():
    with pytest.raises(ValueError):
        ref.execute([3, 1], [2, 1], [0, 1], 4)
    with pytest.raises(ValueError):
        ref.sorted_f([3, 1], [2, 1], 4)


def test_execute_hand_example():
    # M = 6: (s=2, o=2) peaks at 4; (s=1, o=1) at p = 0 adds 2 at step 1 (total 5) and is done
    # before the first one's peak; (s=3, o=1) cannot join at step 1 or 2, only at step 3.
    p, c = ref.execute([2, 1, 3], [2, 1, 1], [0, 1, 2], 6)
    assert p == [0, 0, 2] and c == [2, 1, 3]
    assert ref.memory_trajectory([2, 1, 3], [2, 1, 1], p) == [5, 4, 4]


@settings(max_examples=200, deadline=None)
@given(inst=instances(), seed=st.integers(0, 2**16))
def test_executor_schedules_fit_and_admit_as_early_as_the_rule_allows(inst, seed):
    s, o, M = inst
    order = list(range(len(s)))
    random.Random(seed).shuffle(order)
    p, c = ref.execute(s, o, order, M)
    assert all(ci == pi + oi for pi, ci, oi in zip(p, c, o))
    assert max(ref.memory_trajectory(s, o, p)) <= M
    starts = [p[r] for r in order]
    assert starts == sorted(starts) and starts[0] == 0  # strict prefix admission
    for q, r in enumerate(order):
        if p[r] == 0 or (q > 0 and starts[q - 1] == p[r]):
            continue
        # r was the head at step p_r and was refused: starting it at p_r - 1 beside everything
        # admitted by then must overflow M at some step >= p_r (checked on the trajectory).
        others = [j for j in range(len(s)) if p[j] <= p[r] - 1 and c[j] >= p[r]]
        trial = [(s[j], o[j], p[j]) for j in others] + [(s[r], o[r], p[r] - 1)]
        traj = ref.memory_trajectory(*map(list, zip(*trial)))
        assert max(traj[p[r] - 1 :]) > M


# --------------------------------------------------------------------------------------------
# Phase-1 solvers
# --------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(inst=instances(), data=st.data())
def test_exact_dp_equals_brute_force(inst, data):
    s, o, M = inst
    idx = data.draw(st.permutations(range(len(s))))  # any item order, not only ascending
    idx = idx[: data.draw(st.integers(1, len(idx)))]
    got = ref.exact_dp(idx, s, o, M)
    assert got == ref.brute_force(idx, s, o, M)
    assert got == ref.scaled_dp(idx, s, o, M)  # lambda = 1 for M <= 1000


@settings(max_examples=150, deadline=None)
@given(inst=instances(max_m=120), data=st.data())
def test_every_solver_returns_a_feasible_subset(inst, data):
    s, o, M = inst
    idx = sorted(data.draw(st.sets(st.sampled_from(range(len(s))), min_size=1)))
    for name in SOLVERS:
        batch = _solver(name, data.draw(st.integers(0, 99)))(idx, s, o, M)
        assert batch, name
        assert len(set(batch)) == len(batch) and set(batch) <= set(idx), name
        assert ref.fits_knapsack(batch, s, o, M), name


@settings(max_examples=150, deadline=None)
@given(inst=instances())
def test_local_swap_is_max_cardinality_and_swap_stable(inst):
    s, o, M = inst
    idx = list(range(len(s)))
    batch = ref.local_swap(idx, s, o, M)
    most = max(k for k in range(1, len(s) + 1) for X in itertools.combinations(idx, k) if ref.fits_knapsack(X, s, o, M))
    assert len(batch) == most
    mem = sum(s[i] + o[i] for i in batch)
    for out in batch:
        for inn in set(idx) - set(batch):
            fits = mem - (s[out] + o[out]) + s[inn] + o[inn] <= M
            assert not (fits and o[inn] < o[out])


def test_quantile_greedy_hand_example():
    # o = [1, 5, 2, 2], s + o = [10, 6, 3, 4]; the sample (all four) gives Q_p = 3.9 (0.3 of the
    # way from 3 to 4 is at index 0.9) and Q_o = 1.9. Phase 1 takes nothing (request 0 has
    # s + o = 10 > 3.9; the others have o > 1.9). Phase 2 orders by o / (s + o), i.e. 1/10,
    # 5/6, 2/3, 1/2 -> 0, 3, 2, 1; with M = 14: 0 (10), 3 (14), then nothing fits.
    s, o = [9, 1, 1, 2], [1, 5, 2, 2]
    assert ref.quantile_linear([10, 6, 3, 4], 0.3) == pytest.approx(3.9)
    assert ref.quantile_greedy([0, 1, 2, 3], s, o, 14, sample=[0, 1, 2, 3]) == [0, 3]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(0, 200), min_size=1, max_size=40),
    q=st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]) | st.floats(0, 1),
)
def test_quantile_linear_is_numpy_bit_for_bit(values, q):
    np = pytest.importorskip("numpy")
    assert ref.quantile_linear(values, q) == float(np.quantile(values, q))


# --------------------------------------------------------------------------------------------
# Theory: Lemma 1 and Theorem 4
# --------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(inst=instances())
def test_lemma1_on_exact_argmin_batches(inst):
    s, o, M = inst
    _, batches = ref.sorted_f(s, o, M, ref.exact_dp)
    for X in batches:
        k = len(X)
        # mean o >= k / (2k - 1) * max o, i.e. sum(o) * (2k - 1) >= k^2 * max o, exactly.
        assert sum(o[i] for i in X) * (2 * k - 1) >= k * k * max(o[i] for i in X)


@settings(max_examples=100, deadline=None)
@given(inst=instances(max_m=60), seed=st.integers(0, 99))
def test_theorem4_executor_within_separate_batches(inst, seed):
    s, o, M = inst
    for name in SOLVERS:
        order, batches = ref.sorted_f(s, o, M, _solver(name, seed))
        assert sorted(order) == list(range(len(s)))
        assert _schedule_tel(s, o, M, order) <= ref.separate_tel(batches, o), name


# --------------------------------------------------------------------------------------------
# The OPT integer program
# --------------------------------------------------------------------------------------------
@needs_scipy
@settings(max_examples=25, deadline=None)
@given(inst=instances(max_n=6, max_m=20, max_o=6), seed=st.integers(0, 99))
def test_opt_below_every_heuristic(inst, seed):
    s, o, M = inst
    best, p = _opt_ip(s, o, M, horizon=sum(o))
    assert best >= sum(o)
    assert max(ref.memory_trajectory(s, o, p)) <= M
    perm = list(range(len(s)))
    random.Random(seed).shuffle(perm)
    orders = [ref.order_fcfs(perm), ref.order_mcsf(s, o), ref.order_mcsf2(s, o)]
    orders += [ref.sorted_f(s, o, M, _solver(name, seed))[0] for name in SOLVERS]
    for order in orders:
        assert best <= _schedule_tel(s, o, M, order)
    assert _opt_ip(s, o, M)[0] >= best  # the MC-SF horizon only restricts


@settings(max_examples=20, deadline=None)
@given(inst=instances(max_n=4, max_m=12, max_o=4))
def test_brute_force_opt_below_best_executor_order(inst):
    # Not an equality: OPT may start a request later than the executor would, or leave gaps
    # that no admission order produces (lp.opt_ip is checked against this in test_lp.py).
    s, o, M = inst
    best, p = ref_lp.brute_force_opt(s, o, M, sum(o))
    assert best == sum(pi + oi for pi, oi in zip(p, o)) >= sum(o)
    assert max(ref.memory_trajectory(s, o, p)) <= M
    assert best <= ref.best_order_tel(s, o, M)
