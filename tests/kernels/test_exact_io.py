"""The exact per-step IO solvers (tests/reference/exact_io.py): MILP against brute force, bounds, kernels.

The MILP is the yardstick of benchmarks/bench_kernel_quality.py, so it is checked here against
plain enumeration on a few hundred tiny instances with H = 0 and H in {1, 2}, including equal
sizes, identical workers, invalid pool entries and zero row weights (the cases its symmetry
removal and aggregation touch).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import kernels
from tests.reference import exact_io

G_PAD, R_PAD = 3, 7

# One compilation each: every instance below is padded to (G_PAD, R_PAD). A padded worker has
# load 0 and no free slot and a padded request is not valid, so neither changes a decision
# (loads are non-negative, so a padded worker never sets the maximum).
valley_fill = jax.jit(kernels.valley_fill)
lookahead = jax.jit(lambda p, f, s, v, beta, w: kernels.lookahead_valley_fill(p, f, s, v, beta, w))


def _tiny(rng: np.random.Generator, W: int, big: bool = False) -> dict:
    """A random tiny instance: G <= 3 workers, <= 7 pool entries, W load rows.

    Mixes the cases the MILP's reductions must get right: repeated sizes (aggregation),
    identical workers (the ordering constraint), invalid pool entries, zero-free workers,
    and for W > 1 rows that fall as requests are predicted to finish, with random weights.
    big: BurstGPT-scale sizes (lognormal, median 217, up to 14117) and loads (5000-60000),
    where a floating-point solver's tolerances would show first.
    """
    G = int(rng.integers(1, 4))
    R = int(rng.integers(1, R_PAD + 1))
    if big:
        sizes = np.clip(np.rint(217 * np.exp(rng.standard_normal(R))), 1, 14117).astype(np.int64)
    elif rng.random() < 0.3:
        sizes = rng.choice(rng.integers(1, 21, size=2), size=R)
    else:
        sizes = rng.integers(1, 21, size=R)
    valid = rng.random(R) < 0.85
    lo = 0 if rng.random() < 0.3 else 50
    if big:  # a common level plus a spread of a few requests, so the max term binds
        L0 = int(rng.integers(5000, 60001)) + rng.integers(0, 2001, size=G)
    else:
        L0 = rng.integers(lo, 121, size=G)
    free = rng.integers(0, 4, size=G)
    if G >= 2 and rng.random() < 0.3:
        L0[1], free[1] = L0[0], free[0]
    rows = [L0]
    for _ in range(W - 1):
        drop = rng.integers(0, 3001 if big else 31, size=G)
        rows.append(np.maximum(rows[-1] - drop, 0))
    loads = np.stack(rows, axis=1)
    weights = None if (W == 1 or rng.random() < 0.3) else rng.integers(0, 129, size=W)
    return dict(loads=loads, free=free, sizes=sizes, valid=valid, weights=weights)


def _instances(n: int, W: int, seed: int, big: bool = False) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [_tiny(rng, W, big) for _ in range(n)]


def _pad(inst: dict) -> tuple[jnp.ndarray, ...]:
    """(loads rows [G_PAD, W], free, sizes, valid) as padded int32/bool device arrays."""
    L, f, s, v = inst["loads"], inst["free"], inst["sizes"], inst["valid"]
    G, W = L.shape
    R = s.shape[0]
    Lp = np.zeros((G_PAD, W), np.int32); Lp[:G] = L
    fp = np.zeros(G_PAD, np.int32); fp[:G] = f
    sp = np.ones(R_PAD, np.int32); sp[:R] = s
    vp = np.zeros(R_PAD, bool); vp[:R] = v
    return tuple(jnp.asarray(a) for a in (Lp, fp, sp, vp))


def _solve_both(inst: dict) -> tuple[int, int]:
    args = (inst["loads"], inst["free"], inst["sizes"], inst["valid"], inst["weights"])
    Jm, wm = exact_io.solve_milp(*args)
    Jb, wb = exact_io.solve_brute(*args)
    for wk in (wm, wb):
        assert exact_io.check_feasible(inst["free"], inst["sizes"], inst["valid"], wk) is None
    assert exact_io.objective(inst["loads"], inst["free"], inst["sizes"], wm, inst["weights"]) == Jm
    assert exact_io.objective(inst["loads"], inst["free"], inst["sizes"], wb, inst["weights"]) == Jb
    return Jm, Jb


@pytest.mark.parametrize("W,seed,n,big", [(1, 0, 160, False), (2, 1, 80, False), (3, 2, 80, False),
                                          (1, 3, 60, True), (2, 4, 30, True)])
def test_milp_equals_brute_force_on_tiny_instances(W, seed, n, big):
    for k, inst in enumerate(_instances(n, W, seed, big)):
        Jm, Jb = _solve_both(inst)
        assert Jm == Jb, f"instance {k} (W={W}): MILP {Jm} != brute force {Jb}: {inst}"


def test_example_of_notes_section_2_1():
    """L = (0, 5), U = 2, c = (2, 0), pool {1, 1, 5}: {1, 5} on worker 0 gives J* = 1."""
    args = ([0, 5], [2, 0], [1, 1, 5], [True, True, True])
    for solve in (exact_io.solve_milp, exact_io.solve_brute):
        J, worker = solve(*args)
        assert J == 1
        assert sorted(np.asarray([1, 1, 5])[np.asarray(worker) == 0].tolist()) == [1, 5]
    assert exact_io.objective([0, 5], [2, 0], [1, 1, 5], [0, 0, -1]) == 3   # {1, 1}: J = 3
    assert exact_io.lower_bound_h0(*args) <= 1


def test_objective_by_hand():
    # Rows (10, 4) and (7, 7); item 0 (size 3) on worker 1 -> rows (10, 7), (10, 10).
    loads = np.array([[10, 7], [4, 7]])
    J = exact_io.objective(loads, [1, 1], [3, 9], [1, -1], weights=[2, 5])
    assert J == 2 * (2 * 10 - 17) + 5 * (2 * 10 - 17)
    assert exact_io.objective(loads, [1, 1], [3, 9], [-1, -1]) == (20 - 14) + (14 - 14)


def test_no_admission_when_nothing_can_be_admitted():
    for solve in (exact_io.solve_milp, exact_io.solve_brute):
        J, worker = solve([3, 8], [0, 0], [5, 6], [True, True])
        assert J == 2 * 8 - 11 and (worker == -1).all()
        J, worker = solve([3, 8], [2, 1], [5, 6], [False, False])
        assert J == 5 and (worker == -1).all()


def test_lower_bound_never_exceeds_the_optimum():
    for k, inst in enumerate(_instances(200, 1, 7)):
        J, _ = exact_io.solve_brute(inst["loads"], inst["free"], inst["sizes"], inst["valid"])
        lb = exact_io.lower_bound_h0(inst["loads"], inst["free"], inst["sizes"], inst["valid"])
        assert lb <= J, f"instance {k}: bound {lb} > J* {J}"


def test_valley_fill_is_never_better_than_the_optimum():
    reached = 0
    for k, inst in enumerate(_instances(200, 1, 11)):
        L, f, s, v = _pad(inst)
        worker, _ = valley_fill(L[:, 0], f, s, v)
        worker = np.asarray(worker)[:inst["sizes"].shape[0]]
        assert exact_io.check_feasible(inst["free"], inst["sizes"], inst["valid"], worker) is None
        J = exact_io.objective(inst["loads"], inst["free"], inst["sizes"], worker)
        J_star, _ = exact_io.solve_milp(inst["loads"], inst["free"], inst["sizes"], inst["valid"])
        assert J >= J_star, f"instance {k}: valley fill {J} < J* {J_star}"
        reached += J == J_star
    assert reached > 0


@pytest.mark.parametrize("W,seed", [(2, 21), (3, 22)])
def test_lookahead_valley_fill_is_never_better_than_the_optimum(W, seed):
    for k, inst in enumerate(_instances(60, W, seed)):
        G = inst["loads"].shape[0]
        w = inst["weights"] if inst["weights"] is not None else np.ones(W, np.int64)
        L, f, s, v = _pad(inst)
        worker, _ = lookahead(L, f, s, v, jnp.int32(G), jnp.asarray(w, jnp.int32))
        worker = np.asarray(worker)[:inst["sizes"].shape[0]]
        assert exact_io.check_feasible(inst["free"], inst["sizes"], inst["valid"], worker) is None
        J = exact_io.objective(inst["loads"], inst["free"], inst["sizes"], worker, w)
        J_star, _ = exact_io.solve_milp(inst["loads"], inst["free"], inst["sizes"], inst["valid"], w)
        assert J >= J_star, f"instance {k}: lookahead valley fill {J} < J* {J_star}"


def test_milp_on_benchmark_sized_instances():
    """G = 8, up to 4 free slots each, pool 16: feasible, re-scored, above the bound and
    never beaten by valley fill (the shapes the quality benchmark runs)."""
    rng = np.random.default_rng(5)
    for _ in range(15):
        L = rng.integers(50, 121, size=8)
        f = rng.integers(0, 5, size=8)
        s = rng.integers(1, 21, size=16)
        v = rng.random(16) < 0.9
        J_star, worker = exact_io.solve_milp(L, f, s, v)
        assert exact_io.check_feasible(f, s, v, worker) is None
        assert J_star >= exact_io.lower_bound_h0(L, f, s, v)
        wk, _ = valley_fill(*(jnp.asarray(a) for a in (L.astype(np.int32), f.astype(np.int32),
                                               s.astype(np.int32), v)))
        assert exact_io.objective(L, f, s, np.asarray(wk)) >= J_star
