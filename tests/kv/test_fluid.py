"""Tests of jaxsched.kv.fluid: the WAIT paper's fluid benchmark against hand-computed values.

Hand values use the corrected formulas of notes/001.md §2-§6: A = sum_j lambda_j (l'_j+1)
(l_j + l'_j/2), dT* = d0 / (1 - d1 A), M* = d0 A / (1 - d1 A), throughput* = sum_j lambda_j
(l'_j + 1); Nested WAIT segment i holds stages l'_{i-1}+1 .. l'_i; Lemma 8's bound has the
denominator n_{k-1}.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.errors import ConfigError
from jaxsched.kv.fluid import (
    FluidTypes,
    Segments,
    bisect,
    equilibrium,
    nested_check,
    nested_memory_bound,
    nested_segments,
    nested_thresholds,
    nested_thresholds_practical,
    stage_work,
    theta_lower_bound,
    theta_root,
    wait_c_range,
    wait_check,
    wait_thresholds,
    wait_thresholds_practical,
)

HYP = settings(max_examples=60, deadline=None)


def _types(prefill, decode, rates, d0=0.01, d1=0.0, capacity=1e9) -> FluidTypes:
    return FluidTypes(prefill=prefill, decode=decode, rates=rates, d0=d0, d1=d1, capacity=capacity)


@st.composite
def fluid_types(draw, nested: bool = False, max_m: int = 6) -> FluidTypes:
    """Random stable types; nested=True: common prefill, strictly increasing decode lengths."""
    m = draw(st.integers(1, max_m))
    if nested:
        l = draw(st.integers(1, 100))
        prefill = [l] * m
        decode = sorted(draw(st.lists(st.integers(1, 300), min_size=m, max_size=m, unique=True)))
    else:
        prefill = draw(st.lists(st.integers(1, 200), min_size=m, max_size=m))
        decode = draw(st.lists(st.integers(1, 300), min_size=m, max_size=m))
    rates = draw(st.lists(st.floats(0.05, 50.0), min_size=m, max_size=m))
    d0 = draw(st.floats(1e-3, 1.0))
    load = draw(st.floats(0.0, 0.95))
    work = float(np.dot(rates, stage_work(prefill, decode)))
    return _types(prefill, decode, rates, d0=d0, d1=load / work, capacity=draw(st.floats(1.0, 1e9)))


# ---------------------------------------------------------------------------------------------
# Equilibrium


def test_stage_work_is_the_sum_over_stages():
    # (l'+1)(l + l'/2) = sum_{k=0}^{l'} (l + k): l=10, l'=4 -> 10+11+12+13+14 = 60.
    assert stage_work([10, 3.5], [4, 1]).tolist() == [60.0, 3.5 + 4.5]


def test_equilibrium_single_type_hand_values():
    # l=10, l'=4, lambda=2: W = 5 * 12 = 60, A = 120; d1 A = 0.12.
    eq = equilibrium(_types([10], [4], [2.0], d0=0.01, d1=0.001))
    assert eq.load == pytest.approx(0.12, rel=1e-14)
    assert eq.iteration_time == pytest.approx(0.01 / 0.88, rel=1e-14)  # (7)
    assert eq.memory == pytest.approx(0.01 * 120 / 0.88, rel=1e-14)  # (3)/(6): 15/11
    assert eq.memory == pytest.approx(15 / 11, rel=1e-14)
    assert eq.per_stage == pytest.approx([2 * 0.01 / 0.88], rel=1e-14)
    assert eq.active == pytest.approx([5 * 2 * 0.01 / 0.88], rel=1e-14)  # n* of (3)
    assert eq.throughput == pytest.approx(10.0, rel=1e-14)  # (4): lambda (l'+1)
    assert eq.decode_throughput == pytest.approx(8.0, rel=1e-14)


def test_equilibrium_multi_type_hand_values():
    # W = (11 * 15, 21 * 30) = (165, 630); A = 1 * 165 + 0.5 * 630 = 480; d1 A = 0.048.
    types = _types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4, capacity=10.0)
    eq = equilibrium(types)
    assert types.work == pytest.approx(480.0, rel=1e-14)
    assert eq.load == pytest.approx(0.048, rel=1e-12)
    dt = 0.02 / (1 - 0.048)
    assert eq.iteration_time == pytest.approx(dt, rel=1e-12)
    assert eq.memory == pytest.approx(0.02 * 480 / (1 - 0.048), rel=1e-12)  # 10.084...
    assert eq.per_stage == pytest.approx([dt, 0.5 * dt], rel=1e-12)
    assert eq.active == pytest.approx([11 * dt, 21 * 0.5 * dt], rel=1e-12)
    assert eq.memory_per_type == pytest.approx([165 * dt, 315 * dt], rel=1e-12)
    assert eq.throughput_per_type == pytest.approx([11.0, 10.5], rel=1e-14)
    assert eq.throughput == pytest.approx(21.5, rel=1e-14)
    assert eq.decode_throughput == pytest.approx(20.0, rel=1e-14)
    assert not eq.memory_fits  # C = 10 < M* = 10.08
    assert equilibrium(_types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4, capacity=10.1)).memory_fits


@HYP
@given(fluid_types())
def test_equilibrium_balance_identities(types):
    eq = equilibrium(types)
    # Iteration time is eq. (1) at the equilibrium memory; each stage receives lambda_j dT.
    assert eq.iteration_time == pytest.approx(types.d0 + types.d1 * eq.memory, rel=1e-9)
    assert eq.per_stage == pytest.approx(types.rates * eq.iteration_time, rel=1e-12)
    assert eq.active == pytest.approx(eq.per_stage * (types.decode + 1), rel=1e-12)
    assert eq.memory == pytest.approx(eq.memory_per_type.sum(), rel=1e-9)
    assert eq.memory == pytest.approx(eq.iteration_time * types.work, rel=1e-9)
    # (4): a type's throughput n*_j / (d0 + d1 M*) over its l'_j + 1 stages is lambda_j (l'_j+1).
    assert eq.active / eq.iteration_time == pytest.approx(eq.throughput_per_type, rel=1e-9)
    assert eq.throughput == pytest.approx(float(np.dot(types.rates, types.decode + 1)), rel=1e-12)


def test_prop4_instance():
    # notes §5: l = (1, 1), l' = (1, 2), lambda = (1, 1): M = 1.5 n_1 + 2 n_2, A = 3 + 6 = 9.
    for d1 in (0.0, 0.01, 0.1):
        types = _types([1, 1], [1, 2], [1.0, 1.0], d0=1 - 9 * d1, d1=d1, capacity=9.0)
        eq = equilibrium(types)
        assert types.work == 9.0
        assert eq.iteration_time == pytest.approx(1.0, rel=1e-12)  # K = d0 / (1 - 9 d1) = 1
        assert eq.active == pytest.approx([2.0, 3.0], rel=1e-12)
        assert eq.memory == pytest.approx(9.0, rel=1e-12)
        assert eq.throughput == 5.0
        assert eq.memory_fits
        # C = M*: the WAIT range collapses to c = dT* = 1, per-stage thresholds (1, 1), (9) tight.
        assert wait_c_range(types) == pytest.approx((1.0, 1.0), rel=1e-12)
        n = wait_thresholds(types)
        assert n == pytest.approx([1.0, 1.0], rel=1e-12)
        chk = wait_check(types, n)
        assert chk.memory == pytest.approx(9.0, rel=1e-12)
        assert chk.holds.all() and not chk.strict.any() and chk.ok


# ---------------------------------------------------------------------------------------------
# Validation


def test_unstable_load_raises_naming_d1():
    # l = 0.5, l' = 1: W = 2 * 1 = 2; lambda = 4 -> A = 8; d1 = 1/8 gives d1 A = 1 exactly.
    with pytest.raises(ConfigError, match=r"d1 \* A.*< 1"):
        _types([0.5], [1], [4.0], d1=0.125)
    with pytest.raises(ConfigError, match="d1"):
        _types([10], [4], [2.0], d1=0.01)  # A = 120, d1 A = 1.2
    # Prop. 1's per-type condition (lambda_j d1 W_j >= 1) is caught, and so is an aggregate one.
    with pytest.raises(ConfigError, match="d1"):
        _types([10, 10], [4, 4], [1.0, 1.0], d1=0.6 / 60)  # each type 0.6, total 1.2
    _types([0.5], [1], [4.0], d1=0.1249)  # just below: fine


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(prefill=[10, 0], decode=[1, 2], rates=[1, 1]), r"prefill\[1\]"),
        (dict(prefill=[10, -3], decode=[1, 2], rates=[1, 1]), r"prefill\[1\]"),
        (dict(prefill=[10, 10], decode=[0, 2], rates=[1, 1]), r"decode\[0\]"),
        (dict(prefill=[10, 10], decode=[1.5, 2], rates=[1, 1]), r"decode\[0\]"),
        (dict(prefill=[10, 10], decode=[1, 2], rates=[1, 0]), r"rates\[1\]"),
        (dict(prefill=[10, 10], decode=[1, 2], rates=[1, -1]), r"rates\[1\]"),
        (dict(prefill=[10, 10], decode=[1, 2], rates=[1, float("nan")]), r"rates\[1\]"),
        (dict(prefill=[10, 10], decode=[1, 2, 3], rates=[1, 1]), "decode.*same length"),
        (dict(prefill=[10, 10], decode=[1, 2], rates=[1]), "rates.*same length"),
        (dict(prefill=[], decode=[], rates=[]), "prefill"),
        (dict(prefill=5, decode=[1], rates=[1]), "prefill"),
        (dict(prefill=[10], decode=[1], rates=[1], d0=0.0), "d0"),
        (dict(prefill=[10], decode=[1], rates=[1], d1=-1e-3), "d1"),
        (dict(prefill=[10], decode=[1], rates=[1], capacity=0.0), "capacity"),
    ],
)
def test_bad_types_raise_naming_the_field(kwargs, field):
    full = dict(d0=0.01, d1=0.0, capacity=100.0) | kwargs
    with pytest.raises(ConfigError, match=field):
        FluidTypes(**full)


def test_threshold_length_mismatch_raises():
    types = _types([10, 10], [1, 2], [1.0, 1.0])
    with pytest.raises(ConfigError, match="thresholds.*same length"):
        wait_check(types, [1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match=r"thresholds\[1\]"):
        wait_check(types, [1.0, 0.0])
    seg = nested_segments(types)
    with pytest.raises(ConfigError, match="thresholds.*same length"):
        nested_check(seg, [1.0])
    with pytest.raises(ConfigError, match="thresholds.*same length"):
        nested_memory_bound(seg, [3.0, 2.0, 1.0], 10, 0.1)


def test_segments_validation():
    with pytest.raises(ConfigError, match="bounds"):
        Segments(prefill=10, bounds=[5, 5], rates=[1, 1], d0=0.01, d1=0.0, capacity=1e6)
    with pytest.raises(ConfigError, match="rates.*same length"):
        Segments(prefill=10, bounds=[5, 6], rates=[1], d0=0.01, d1=0.0, capacity=1e6)
    with pytest.raises(ConfigError, match="prefill"):
        Segments(prefill=0, bounds=[5, 6], rates=[1, 1], d0=0.01, d1=0.0, capacity=1e6)
    # W = (5 + 6, 7) = (11, 7), tails (2, 1): A_N = 22 + 7 = 29.
    with pytest.raises(ConfigError, match="d1"):
        Segments(prefill=5, bounds=[1, 2], rates=[1, 1], d0=0.01, d1=1 / 28, capacity=1e6)
    Segments(prefill=5, bounds=[1, 2], rates=[1, 1], d0=0.01, d1=1 / 30, capacity=1e6)
    with pytest.raises(ConfigError, match="prefill"):
        nested_segments(_types([10, 20], [1, 2], [1.0, 1.0]))
    with pytest.raises(ConfigError, match="decode"):
        nested_segments(_types([10, 10], [2, 2], [1.0, 1.0]))
    with pytest.raises(ConfigError, match="n_segments"):
        nested_segments(_types([10, 10], [1, 2], [1.0, 1.0]), 3)


# ---------------------------------------------------------------------------------------------
# WAIT thresholds


def test_wait_c_range_hand_values_and_capacity_error():
    # A = 480, dT* = 0.02 / 0.952; C / A = 48 / 480 = 0.1.
    types = _types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4, capacity=48.0)
    lo, hi = wait_c_range(types)
    assert lo == pytest.approx(0.02 / 0.952, rel=1e-12)
    assert hi == pytest.approx(0.1, rel=1e-12)
    assert wait_thresholds(types, 0.05) == pytest.approx([0.05, 0.025], rel=1e-14)
    with pytest.raises(ConfigError, match="c"):
        wait_thresholds(types, 0.2)
    with pytest.raises(ConfigError, match="c"):
        wait_thresholds(types, 0.01)
    with pytest.raises(ConfigError, match="capacity"):
        wait_c_range(_types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4, capacity=10.0))


@HYP
@given(fluid_types(), st.floats(0.0, 1.0))
def test_wait_fluid_thresholds_meet_condition_9(types, u):
    eq = equilibrium(types)
    cap = max(types.capacity, eq.memory * 1.5)
    types = _types(types.prefill, types.decode, types.rates, types.d0, types.d1, cap)
    lo, hi = wait_c_range(types)
    c = lo + u * (hi - lo)
    n = wait_thresholds(types, c)
    chk = wait_check(types, n)
    # M^pi = c A and dT(n) = d0 + d1 c A <= c = n_j / lambda_j for every j.
    assert chk.memory == pytest.approx(c * types.work, rel=1e-9)
    assert chk.iteration_time <= c * (1 + 1e-9)
    assert (chk.iteration_time <= n / types.rates * (1 + 1e-9)).all()
    assert chk.ok
    if u > 1e-3:
        assert chk.strict.all()
    # Just below dT* (9) fails for every type.
    below = wait_check(types, n * 0 + types.rates * lo * (1 - 1e-6))
    assert not below.holds.any()


def test_wait_special_case_c_equals_memory_star_is_tight():
    types = _types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4)
    eq = equilibrium(types)
    tight = _types([10, 20], [10, 20], [1.0, 0.5], d0=0.02, d1=1e-4, capacity=eq.memory)
    n = wait_thresholds(tight)
    assert n == pytest.approx(eq.per_stage, rel=1e-12)  # n*_j / (l'_j + 1) = lambda_j dT*
    chk = wait_check(tight, n)
    assert chk.iteration_time == pytest.approx(n[0] / 1.0, rel=1e-12)
    assert chk.iteration_time == pytest.approx(n[1] / 0.5, rel=1e-12)
    assert chk.holds.all() and not chk.strict.any() and chk.fits


def test_wait_practical_rule():
    types = _types([10, 10], [1, 3], [1.0, 3.0])
    # paper: B rho_j / (l'_j + 1) with rho = (1/4, 3/4): 40 * (1/4) / 2 = 5, 40 * (3/4) / 4 = 7.5
    assert wait_thresholds_practical(types, 40, integer=False) == pytest.approx([5.0, 7.5])
    assert wait_thresholds_practical(types, 40).tolist() == [5, 7]
    # code: B lambda_j / sum_k lambda_k (l'_k + 1) = 40 * (1, 3) / 14
    assert wait_thresholds_practical(types, 40, "code", integer=False) == pytest.approx([40 / 14, 120 / 14])
    assert wait_thresholds_practical(types, 40, "code").tolist() == [2, 8]
    assert wait_thresholds_practical(types, 1).tolist() == [1, 1]  # max(1, floor(x))
    for variant in ("paper", "code"):
        n = wait_thresholds_practical(types, 40, variant, integer=False)
        assert float(np.dot(n, types.decode + 1)) == pytest.approx(40.0)
    with pytest.raises(ConfigError, match="batch_limit"):
        wait_thresholds_practical(types, 0)
    with pytest.raises(ConfigError, match="variant"):
        wait_thresholds_practical(types, 10, "vllm")


# ---------------------------------------------------------------------------------------------
# Nested WAIT segments and thresholds

E3 = dict(prefill=[10] * 4, decode=[20, 40, 80, 160], rates=[20.0, 40.0, 80.0, 160.0])
E4 = dict(
    prefill=[60] * 10, decode=list(range(50, 501, 50)), rates=[23.0, 11.0, 8.0, 7.0, 6.0, 4.0, 3.0, 2.0, 1.0, 1.0]
)


def test_segments_stage_boundaries():
    seg = nested_segments(_types(**E3))
    assert seg.bounds.tolist() == [20, 40, 80, 160]
    assert seg.first_stage.tolist() == [0, 21, 41, 81]  # e_i = l'_{i-1} + 1
    assert seg.stages.tolist() == [21, 20, 40, 80]
    assert seg.tails.tolist() == [300.0, 280.0, 240.0, 160.0]
    assert seg.survival == pytest.approx([280 / 300, 240 / 280, 160 / 240])
    assert seg.entry_kv.tolist() == [30.0, 50.0, 90.0]
    # W_1 = sum_{k=0}^{20} (10 + k) = 21 * 10 + 210; W_2 = sum_{k=21}^{40} (10 + k) = 200 + 610.
    assert seg.segment_work[:2].tolist() == [420.0, 810.0]


def test_segments_merge_into_L_groups():
    seg = nested_segments(_types(**E3), 2)
    assert seg.bounds.tolist() == [40, 160] and seg.rates.tolist() == [60.0, 240.0]
    assert seg.first_stage.tolist() == [0, 41]
    seg3 = nested_segments(_types(**E3), 3)  # uneven: larger groups first
    assert seg3.bounds.tolist() == [40, 80, 160] and seg3.rates.tolist() == [60.0, 80.0, 160.0]
    seg1 = nested_segments(_types(**E3), 1)
    assert seg1.bounds.tolist() == [160] and seg1.rates.tolist() == [300.0]
    e4 = nested_segments(_types(**E4), 5)
    assert e4.bounds.tolist() == [100, 200, 300, 400, 500]
    assert e4.rates.tolist() == [34.0, 15.0, 10.0, 5.0, 2.0]
    assert e4.first_stage.tolist() == [0, 101, 201, 301, 401]


def _brute_memory(seg: Segments, n) -> float:
    """sum over every stage k = 0..b_L of n_{segment(k)} (l + k), by a plain loop."""
    total = 0.0
    for k in range(int(seg.bounds[-1]) + 1):
        i = next(i for i, b in enumerate(seg.bounds) if k <= b)
        total += n[i] * (seg.prefill + k)
    return total


@HYP
@given(fluid_types(nested=True), st.data())
def test_nested_memory_is_the_sum_over_stages(types, data):
    L = data.draw(st.integers(1, types.m))
    # Merging charges each group for its whole segment: A_N >= A, and d1 A_N >= 1 must raise.
    work_n = nested_segments(_types(types.prefill, types.decode, types.rates), L).work
    assert work_n >= types.work * (1 - 1e-12)
    if types.d1 * work_n >= 1.0:
        with pytest.raises(ConfigError, match=r"d1 \* A_N.*n_segments"):
            nested_segments(types, L)
        return
    seg = nested_segments(types, L)
    n = data.draw(st.lists(st.floats(0.1, 100.0), min_size=L, max_size=L))
    chk = nested_check(seg, n)
    assert chk.memory == pytest.approx(_brute_memory(seg, n), rel=1e-9)
    assert chk.iteration_time == pytest.approx(types.d0 + types.d1 * chk.memory, rel=1e-12)
    # Every stage belongs to exactly one segment.
    assert int(seg.stages.sum()) == int(types.decode[-1]) + 1
    # One segment per type: the fluid work of the segments equals A of the types.
    if L == types.m:
        assert seg.work == pytest.approx(types.work, rel=1e-9)


def test_nested_practical_thresholds_reproduce_paper_ratios():
    for spec, ratios in [(E3, [15, 14, 12, 8]), (E4, [66, 43, 32, 24, 17, 11, 7, 4, 2, 1])]:
        seg = nested_segments(_types(**spec))
        n = nested_thresholds_practical(seg, 1000, integer=False)
        assert n / n[-1] == pytest.approx(np.array(ratios) / ratios[-1], rel=1e-12)
        assert float(np.dot(n, seg.stages)) == pytest.approx(1000.0)
        assert nested_thresholds_practical(seg, 1000).tolist() == np.ceil(n).astype(int).tolist()
        # The ratios sit exactly on the boundary of (10): n_{i+1} / n_i = p_i.
        assert n[1:] / n[:-1] == pytest.approx(seg.survival, rel=1e-12)
        assert not nested_check(seg, n).ratios.any()


def test_nested_fluid_thresholds():
    types = _types(**E3, d0=1e-3, d1=1e-7)
    seg = nested_segments(types)
    n = nested_thresholds(seg)
    c = n[0] / seg.tails[0]
    assert c == pytest.approx(1e-3 / (1 - 1e-7 * seg.work), rel=1e-12)
    assert n == pytest.approx(c * seg.tails, rel=1e-12)
    chk = nested_check(seg, n)
    assert chk.first and not chk.first_strict  # (10)'s first line with equality at c_min
    assert chk.iteration_time == pytest.approx(c, rel=1e-12)
    assert not chk.ratios.any()  # margin 0: the boundary ratios p_i
    nm = nested_thresholds(seg, margin=0.05)
    chk = nested_check(seg, nm)
    assert nm[1:] / nm[:-1] == pytest.approx(seg.survival * 1.05, rel=1e-12)
    assert chk.first and chk.ratios.all() and chk.decreasing.all() and chk.ok
    assert nested_check(seg, nested_thresholds(seg, 2 * c, 0.05)).first_strict
    with pytest.raises(ConfigError, match="c"):
        nested_thresholds(seg, 0.5 * c)


# ---------------------------------------------------------------------------------------------
# theta of Lemma 8


def _g(theta: float, n_prev: float, n_cur: float, p: float) -> float:
    return -theta * n_cur + n_prev * math.log(1 - p + p * math.exp(theta))


@HYP
@given(st.floats(2.0, 500.0), st.floats(0.05, 0.95), st.floats(0.01, 0.99))
def test_theta_root_solves_16_and_beats_lemma8_bound(n_prev, p, frac):
    # n_cur strictly between n_prev p and n_prev (Lemma 8's hypothesis).
    n_cur = n_prev * (p + frac * (1 - p))
    if not n_prev * p < n_cur < n_prev:
        return
    theta = theta_root(n_prev, n_cur, p)
    assert theta > 0
    # f(theta) = e^{-theta n_cur}(1 - p + p e^theta)^{n_prev} = 1, and g changes sign there.
    # (Or g is zero to rounding there: its terms are ~ theta n_prev.)
    below, above = (_g(theta * (1 + s * 1e-9), n_prev, n_cur, p) for s in (-1, 1))
    assert (below < 0 < above) or abs(_g(theta, n_prev, n_cur, p)) <= 1e-12 * theta * n_prev
    assert math.exp(_g(theta, n_prev, n_cur, p)) == pytest.approx(1.0, abs=1e-8)
    lb = theta_lower_bound(n_prev, n_cur, p)
    assert lb == pytest.approx(8 * (n_cur - n_prev * p) / n_prev, rel=1e-14)
    assert theta >= lb * (1 - 1e-12)


def test_theta_root_hand_value_and_reference():
    scipy_opt = pytest.importorskip("scipy.optimize")
    theta = theta_root(4.0, 3.0, 0.5)
    ref = scipy_opt.brentq(lambda t: _g(t, 4.0, 3.0, 0.5), 1e-6, 50.0, xtol=1e-15)
    assert theta == pytest.approx(ref, rel=1e-10)
    assert theta_lower_bound(4.0, 3.0, 0.5) == 2.0  # 8 (3 - 2) / 4: denominator n_prev
    assert theta >= 2.0


def test_theta_root_increases_with_drift_and_small_drift_approximation():
    n_prev, p = 20.0, 0.3
    ds = [1e-1, 1e-2, 1e-3, 1e-4]
    thetas = [theta_root(n_prev, n_prev * p + d, p) for d in ds]
    assert all(a > b for a, b in zip(thetas, thetas[1:]))  # strictly increasing in D
    errs = [abs(t / (2 * d / (n_prev * p * (1 - p))) - 1) for t, d in zip(thetas, ds)]
    assert errs[-1] < 1e-3 and errs[2] < 1e-2
    assert all(a > b for a, b in zip(errs, errs[1:]))  # the approximation improves as D -> 0


def test_theta_root_edge_cases():
    assert theta_root(3.0, 3.0, 0.5) == math.inf  # n_cur >= n_prev: entry queue bounded
    with pytest.raises(ConfigError, match="n_cur"):
        theta_root(4.0, 2.0, 0.5)  # D = 0: boundary of (10)
    with pytest.raises(ConfigError, match="p"):
        theta_root(4.0, 3.0, 1.0)
    with pytest.raises(ConfigError, match="bracket"):
        bisect(lambda x: x * x + 1, -1.0, 1.0, 1e-9)
    assert bisect(lambda x: x - 0.3, 0.0, 1.0, 1e-12) == pytest.approx(0.3, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Memory bound (12) / (15)


def test_memory_bound_terms_hand_values():
    # l = 10, stages 0..2 and 3..4: W = (10+11+12, 13+14) = (33, 27); tails (2, 1), p = 0.5.
    seg = Segments(prefill=10, bounds=[2, 4], rates=[1.0, 1.0], d0=0.01, d1=1e-3, capacity=1e4)
    n = [4.0, 3.0]
    mb = nested_memory_bound(seg, n, n_batches=100, delta=0.01)
    theta = theta_root(4.0, 3.0, 0.5)
    assert mb.theta == pytest.approx([theta], rel=1e-14)
    assert mb.batch == pytest.approx(4 * 33 + 3 * 27)  # term (1)
    assert mb.queue == pytest.approx(3 * 12)  # term (2): n_2 (l + l'_1)
    assert mb.log_factor == pytest.approx(math.log(1 * 100 / 0.01))  # ln((L-1) S / delta)
    assert mb.tail == pytest.approx(12 / theta * math.log(1e4), rel=1e-12)  # term (3)
    assert mb.total == pytest.approx(mb.batch + mb.queue + mb.tail, rel=1e-14)
    assert mb.fits
    main = nested_memory_bound(seg, n, n_batches=100, delta=0.01, union="main")
    assert main.log_factor == pytest.approx(math.log(2 * 100 / 0.01))
    assert not nested_memory_bound(
        Segments(prefill=10, bounds=[2, 4], rates=[1.0, 1.0], d0=0.01, d1=1e-3, capacity=290.0), n, 100, 0.01
    ).fits


def test_memory_bound_L_segments_against_direct_terms():
    types = _types(**E4, d0=1e-3, d1=1e-7, capacity=1e7)
    seg = nested_segments(types, 5)
    n = nested_thresholds(seg, margin=0.1)
    T, delta = 200, 0.1
    mb = nested_memory_bound(seg, n, n_batches=T + 1, delta=delta)
    log_f = math.log((5 - 1) * (T + 1) / delta)
    b = seg.bounds
    thetas = [theta_root(n[i - 1], n[i], seg.tails[i] / seg.tails[i - 1]) for i in range(1, 5)]
    assert mb.batch == pytest.approx(_brute_memory(seg, n), rel=1e-12)
    assert mb.queue == pytest.approx(sum(n[i] * (60 + b[i - 1]) for i in range(1, 5)), rel=1e-12)
    assert mb.tail == pytest.approx(sum((60 + b[i - 1]) / thetas[i - 1] * log_f for i in range(1, 5)), rel=1e-12)
    # A smaller delta needs more memory.
    assert nested_memory_bound(seg, n, T + 1, 1e-5).total > mb.total


def test_memory_bound_errors_and_single_segment():
    seg = nested_segments(_types(**E3, d0=1e-3, d1=1e-7))
    boundary = nested_thresholds_practical(seg, 1000, integer=False)
    with pytest.raises(ConfigError, match=r"thresholds\[1\]"):  # theta = 0 on the boundary
        nested_memory_bound(seg, boundary, 100, 0.01)
    with pytest.raises(ConfigError, match="delta"):
        nested_memory_bound(seg, nested_thresholds(seg, margin=0.1), 100, 1.0)
    one = nested_segments(_types(**E3, d0=1e-3, d1=1e-7), 1)
    mb = nested_memory_bound(one, [2.0], 100, 0.01)
    assert mb.total == mb.batch == pytest.approx(2 * 161 * (10 + 80))
    assert mb.queue == 0.0 and mb.tail == 0.0
