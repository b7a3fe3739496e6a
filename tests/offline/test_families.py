"""The hand-built instances of paper 002 (jaxsched/offline/families.py) against the plain-Python
executor of tests/reference/offline.py and the JAX engine: the Theorem 1 / EC.1 families (shapes,
the executor's exact TELs, the printed and corrected asymptotics), Example 2's ordering rule on a
grid, and the TEL lower bound below every schedule (and below OPT where SciPy and
jaxsched.offline.lp.opt_ip are present)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import random

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import offline as off
from jaxsched.errors import ConfigError
from jaxsched.offline import families as fam
from jaxsched.offline import workloads
from jaxsched.offline.policies import Jobs, mcsf, mcsf2
from tests.reference import offline as ref

HAS_SCIPY = importlib.util.find_spec("scipy") is not None

# The smallest members: M = 3^(2k) printed (k = 1, 2), 3^(4k) corrected (k = 1).
SMALL = [(9, False), (81, False), (81, True)]
BUILD = {"theorem1": fam.theorem1, "theorem_ec1": fam.theorem_ec1}


def _ref_tel(s, o, order, M) -> int:
    return ref.tel(ref.execute(s.tolist(), o.tolist(), list(map(int, order)), M)[1])


def _policy_order(theorem: str, s, o, M) -> np.ndarray:
    """The slow policy's order as the engine computes it (MC-SF for Theorem 1, MC-SF2 for EC.1)."""
    fn = mcsf if theorem == "theorem1" else mcsf2
    view = Jobs(jnp.asarray(s, jnp.int32), jnp.asarray(o, jnp.int32), 0, M)
    return np.asarray(fn(None, off.instance_params(M), view))


# --------------------------------------------------------------------------- the families


@pytest.mark.parametrize("M, corrected", SMALL)
def test_family_shapes_and_types(M, corrected):
    r = math.isqrt(M)
    X, Y = fam.family_sizes(M, corrected)
    assert X == M and Y == round(M ** (1.25 if corrected else 1.5))
    for theorem, build in BUILD.items():
        s, o = build(M, corrected)
        assert s.shape == o.shape == (X + Y,) and s.dtype == o.dtype == np.int64
        assert s.min() >= 1 and o.min() >= 1 and (s + o <= M).all()
        t1 = (r - 1, 1) if theorem == "theorem1" else (1, r - 1)
        t2 = (1, 2) if theorem == "theorem1" else (r, 1)
        assert (s[:X] == t1[0]).all() and (o[:X] == t1[1]).all()
        assert (s[X:] == t2[0]).all() and (o[X:] == t2[1]).all()
        # The slow policy runs every type-1 request first; type2_first is the reverse.
        order = _policy_order(theorem, s, o, M)
        assert set(order[:X].tolist()) == set(range(X))
    alt = fam.type2_first(M, corrected)
    assert sorted(alt.tolist()) == list(range(X + Y)) and (alt[:Y] >= X).all()


@pytest.mark.parametrize(
    "M, corrected, needle",
    [
        (80, True, "6561"),
        (729, True, "3\\^\\(4k\\)"),
        (27, False, "3\\^\\(2k\\)"),
        (1, False, "81"),
        (3, True, "M"),
        (81.0, True, "integer"),
        (True, False, "integer"),
    ],
)
def test_invalid_capacities_name_m_and_the_allowed_values(M, corrected, needle):
    for fn in (
        fam.theorem1,
        fam.theorem_ec1,
        fam.family_sizes,
        fam.type2_first,
        fam.theorem1_tel,
        fam.theorem1_paper_tel,
        fam.theorem_ec1_paper_tel,
    ):
        with pytest.raises(ConfigError, match=needle):
            fn(M, corrected)
    with pytest.raises(ConfigError, match="corrected"):
        fam.theorem1(81, corrected="yes")


def test_huge_members_are_refused_as_arrays_but_not_as_formulas():
    with pytest.raises(ConfigError, match="requests"):
        fam.theorem1(3**16)
    mcsf_tel, alt_tel = fam.theorem1_tel(3**16)
    assert mcsf_tel > alt_tel > 0


@pytest.mark.parametrize("M, corrected", SMALL)
def test_theorem1_executor_tels_are_exact_and_the_engine_agrees(M, corrected):
    s, o = fam.theorem1(M, corrected)
    orders = np.stack([_policy_order("theorem1", s, o, M), fam.type2_first(M, corrected)])
    assert orders[0].tolist() == ref.order_mcsf(s.tolist(), o.tolist())
    ref_tels = [_ref_tel(s, o, order, M) for order in orders]
    assert tuple(ref_tels) == fam.theorem1_tel(M, corrected)
    paper = fam.theorem1_paper_tel(M, corrected)
    # MC-SF follows the proof's accounting to the unit; type2_first beats it slightly.
    assert ref_tels[0] == paper[0] and ref_tels[1] < paper[1]
    m = off.execute(off.instance_params(M), np.stack([s, s]), np.stack([o, o]), orders)
    assert m["tel_steps"].tolist() == ref_tels and (m["done"] == 1).all()
    assert (m["peak_memory_tokens"] <= M).all()


@pytest.mark.parametrize("M, corrected", SMALL)
def test_theorem_ec1_engine_equals_the_reference(M, corrected):
    s, o = fam.theorem_ec1(M, corrected)
    orders = np.stack([_policy_order("theorem_ec1", s, o, M), fam.type2_first(M, corrected)])
    assert orders[0].tolist() == ref.order_mcsf2(s.tolist(), o.tolist())
    ref_tels = [_ref_tel(s, o, order, M) for order in orders]
    m = off.execute(off.instance_params(M), np.stack([s, s]), np.stack([o, o]), orders)
    assert m["tel_steps"].tolist() == ref_tels
    # MC-SF2 loses to type2_first, but by less than the printed family's limit of 3.
    ratio = ref_tels[0] / ref_tels[1]
    assert 1 < ratio < fam.asymptotic_ratio("theorem_ec1", M, corrected=False)


@pytest.mark.parametrize("theorem", ["theorem1", "theorem_ec1"])
def test_printed_claims_overstate_the_ratio(theorem):
    # The printed instance's executor ratio at M = 81 is below the printed bound.
    M = 81
    s, o = BUILD[theorem](M, False)
    slow, alt = (_ref_tel(s, o, order, M) for order in (_policy_order(theorem, s, o, M), fam.type2_first(M, False)))
    assert slow / alt < fam.claimed_ratio(theorem, M)[1]
    # The printed formula is ~ its printed bound, but from below: ">=" fails for large M.
    for k in range(3, 12):
        ratio, bound = fam.claimed_ratio(theorem, 3.0 ** (2 * k))
        assert (0.98 * bound < ratio < bound) if k >= 6 else ratio < bound


def test_printed_families_tend_to_four_thirds_and_three():
    # Exact TELs (integer formulas), far beyond what the engine can run.
    for k, tol in ((6, 1e-2), (10, 1e-4)):
        M = 3 ** (2 * k)
        a, b = fam.theorem1_tel(M, corrected=False)
        assert a / b == pytest.approx(fam.asymptotic_ratio("theorem1", M, False), rel=tol)
        a, b = fam.theorem_ec1_paper_tel(M, corrected=False)
        assert a / b == pytest.approx(fam.asymptotic_ratio("theorem_ec1", M, False), rel=tol)
    # ... from below, increasingly: bounded, so no unbounded competitive ratio follows.
    r = [np.divide(*fam.theorem1_tel(3 ** (2 * k), False)) for k in range(1, 12)]
    assert all(x < y < 4 / 3 for x, y in zip(r, r[1:]))


def test_corrected_families_grow_like_m_to_the_quarter():
    ratios = []
    for k in range(1, 8):
        M = 3 ** (4 * k)
        a, b = fam.theorem1_tel(M)
        pa, pb = fam.theorem_ec1_paper_tel(M)
        ratios.append((a / b / fam.asymptotic_ratio("theorem1", M), pa / pb / fam.asymptotic_ratio("theorem_ec1", M)))
    assert all(abs(x - 1) < 2e-3 for x in ratios[-1])
    # The relative error shrinks with M in both families.
    for j in range(2):
        errs = [abs(x[j] - 1) for x in ratios]
        assert all(a > b for a, b in zip(errs, errs[1:]))
    # Unbounded: doubling k multiplies the ratio by about M^0.25 = 3^k.
    a2, b2 = fam.theorem1_tel(3**24)
    a1, b1 = fam.theorem1_tel(3**16)
    assert (a2 / b2) / (a1 / b1) == pytest.approx(9.0, rel=0.05)


def test_claimed_ratio_formulas():
    for M in (81.0, 6561.0):
        r1, b1 = fam.claimed_ratio("theorem1", M)
        assert r1 == pytest.approx((M**1.5 / 2 + 3 * M**1.25 + M**2) / (M**1.5 / 2 + 3 * M**1.25 + 6 * M**1.5))
        assert b1 == pytest.approx(2 / 13 * math.sqrt(M))
        r2, b2 = fam.claimed_ratio("theorem_ec1", M)
        assert r2 == pytest.approx((M**2 / 2 + M**2.5 + M**1.75 / 2) / (1.5 * M**2 + M**1.75 / 2))
        assert b2 == pytest.approx(2 / 3 * math.sqrt(M))
    with pytest.raises(ConfigError, match="theorem"):
        fam.claimed_ratio("theorem2", 81)
    with pytest.raises(ConfigError, match="M"):
        fam.asymptotic_ratio("theorem1", -1.0)


# --------------------------------------------------------------------------- Example 2


def _example2_grid(max_m: int):
    """Every (n1, s1, o1, n2, s2, o2) with n_b (s_b + o_b) = M <= max_m, s_b, o_b >= 1."""
    for M in range(2, max_m + 1):
        split = [(n, M // n) for n in range(1, M + 1) if M % n == 0 and M // n >= 2]
        for (n1, w1), (n2, w2) in itertools.product(split, split):
            for o1, o2 in itertools.product(range(1, w1), range(1, w2)):
                yield n1, w1 - o1, o1, n2, w2 - o2, o2


def test_example2_rule_holds_whenever_the_batches_run_one_after_the_other():
    seen = {"sequential": 0, "overlap": 0, "rule_broken_by_overlap": 0}
    for args in _example2_grid(30):
        ex = fam.example2(*args)
        tels = [_ref_tel(ex.s, ex.o, order, ex.M) for order in (ex.batch1_first, ex.batch2_first)]
        formulas = (ex.tel_batch1_first, ex.tel_batch2_first)
        overlaps = (ex.overlap_batch1_first, ex.overlap_batch2_first)
        for tel, formula, overlap in zip(tels, formulas, overlaps):
            # Exactly the sequential TEL, unless the second batch starts early: then below it.
            assert (tel < formula) if overlap else (tel == formula), (args, tels)
        if not any(overlaps):
            seen["sequential"] += 1
            want = {1: tels[0] < tels[1], 2: tels[1] < tels[0], 0: tels[0] == tels[1]}
            assert want[ex.better], (args, tels)
        else:
            seen["overlap"] += 1
            best = 1 if tels[0] < tels[1] else 2 if tels[1] < tels[0] else 0
            seen["rule_broken_by_overlap"] += best != ex.better
    # The grid exercises both regimes, and the executor's overlap does break the rule.
    assert seen["sequential"] > 1000 and seen["overlap"] > 1000
    assert seen["rule_broken_by_overlap"] > 0


def test_example2_instance_and_engine():
    ex = fam.example2(3, 2, 2, 2, 1, 5)  # M = 12: F = 2/3 < 5/2, batch 1 first
    assert ex.M == 12 and ex.better == 1
    assert ex.s.tolist() == [2, 2, 2, 1, 1] and ex.o.tolist() == [2, 2, 2, 5, 5]
    assert ex.batch2_first.tolist() == [3, 4, 0, 1, 2]
    assert (ex.tel_batch1_first, ex.tel_batch2_first) == (6 + 10 + 4, 6 + 10 + 15)
    m = off.execute(
        off.instance_params(ex.M),
        np.stack([ex.s, ex.s]),
        np.stack([ex.o, ex.o]),
        np.stack([ex.batch1_first, ex.batch2_first]),
    )
    assert m["tel_steps"].tolist() == [
        _ref_tel(ex.s, ex.o, order, ex.M) for order in (ex.batch1_first, ex.batch2_first)
    ]
    with pytest.raises(ConfigError, match="n2 \\(s2 \\+ o2\\)"):
        fam.example2(3, 2, 2, 2, 1, 4)
    with pytest.raises(ConfigError, match="o1"):
        fam.example2(3, 2, 0, 2, 1, 4)


# --------------------------------------------------------------------------- TEL lower bound


def _random_instance(rng: random.Random, max_n: int, max_m: int):
    M = rng.randint(2, max_m)
    n = rng.randint(1, max_n)
    o = [rng.randint(1, M - 1) for _ in range(n)]
    s = [rng.randint(1, M - oi) for oi in o]
    return s, o, M


def test_lower_bound_is_below_every_order():
    rng = random.Random(2)
    for _ in range(300):
        s, o, M = _random_instance(rng, 6, 30)
        lb = fam.tel_lower_bound(np.array(s), np.array(o), M)
        strong = fam.tel_lower_bound(np.array(s), np.array(o), M, strengthen=True)
        assert lb <= strong
        orders = [ref.order_mcsf(s, o), ref.order_mcsf2(s, o), rng.sample(range(len(s)), len(s))]
        if len(s) <= 5:
            orders.append(None)
        for order in orders:
            tel = ref.best_order_tel(s, o, M) if order is None else _ref_tel(np.array(s), np.array(o), order, M)
            assert strong <= tel, (s, o, M, order)


def test_lower_bound_single_request_and_formula():
    # One request: area / M <= o, and the strengthened bound is exactly its latency o.
    assert fam.tel_lower_bound(np.array([3]), np.array([4]), 7) == pytest.approx((12 + 10) / 7)
    assert fam.tel_lower_bound(np.array([3]), np.array([4]), 7, strengthen=True) == 4
    # Two requests: areas 1*1 + 1 = 2 and 3*2 + 3 = 9, so A_1 = 2 and A_2 = 11.
    s, o = np.array([1, 3]), np.array([1, 2])
    assert fam.tel_lower_bound(s, o, 10) == pytest.approx((2 + (2 + 9)) / 10)


def test_lower_bound_is_vectorised_over_rows_and_below_the_engine():
    config = off.OfflineConfig(workloads.synthetic("uniform"), policy="mcsf")
    s, o = off.draw(config, np.arange(4))
    lb = fam.tel_lower_bound(s, o, 100)
    assert lb.shape == (4,)
    for row in range(4):
        assert lb[row] == fam.tel_lower_bound(s[row], o[row], 100)
    # M per row.
    per_row = fam.tel_lower_bound(s, o, np.array([100, 200, 100, 400]))
    assert per_row[1] == pytest.approx(lb[1] / 2) and per_row[3] == pytest.approx(lb[3] / 4)
    order = np.stack(
        [
            np.asarray(mcsf(config, off.instance_params(100), Jobs(jnp.asarray(a), jnp.asarray(b), 0, 100)))
            for a, b in zip(s, o)
        ]
    )
    tel = off.execute(off.instance_params(100), s, o, order)["tel_steps"]
    assert (fam.tel_lower_bound(s, o, 100, strengthen=True) <= tel).all()


def test_lower_bound_rejects_requests_that_never_fit():
    with pytest.raises(ConfigError, match="request 1 of row 0"):
        fam.tel_lower_bound(np.array([1, 5]), np.array([1, 6]), 10)
    with pytest.raises(ConfigError, match="integer"):
        fam.tel_lower_bound(np.array([1.0]), np.array([1.0]), 10)
    with pytest.raises(ConfigError, match="shape"):
        fam.tel_lower_bound(np.array([1, 2]), np.array([1]), 10)


def _opt_ip():
    """jaxsched.offline.lp.opt_ip(s, o, M, horizon=...) -> (TEL, p), or None where that module
    (or SciPy, which it needs) is not there."""
    try:
        from jaxsched.offline.lp import opt_ip
    except ImportError:
        return None
    return opt_ip


@pytest.mark.skipif(
    not HAS_SCIPY or _opt_ip() is None, reason="the OPT IP needs scipy (HiGHS) and jaxsched.offline.lp.opt_ip"
)
def test_lower_bound_is_below_opt():
    opt_ip = _opt_ip()
    rng = random.Random(5)
    for _ in range(25):
        s, o, M = _random_instance(rng, 5, 12)
        opt, _ = opt_ip(np.array(s), np.array(o), M, horizon=sum(o))  # the unrestricted OPT
        assert fam.tel_lower_bound(np.array(s), np.array(o), M, strengthen=True) <= opt
