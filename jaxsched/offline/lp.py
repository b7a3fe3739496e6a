"""The LP-based orders of paper 002 (section 6, notes/002.md section 2.4) and its exact optimum.

Model (notes section 2.1): n requests present at t = 0, request i with a prompt of s_i tokens
and o_i output tokens; a request started at p generates token j at step p + j holding s_i + j
tokens then and completes at c = p + o_i. TEL = sum_i c_i (steps).

The time-indexed program (the paper's IP (6)) over a horizon T (steps): x[i, k] = 1 iff request
i starts at k, for k = 0..T - o_i (every request is done by T, since the paper never checks
memory past T); memory at every step t = 1..T:
    sum_i sum_{k = max(0, t - o_i)}^{t - 1} (s_i + t - k) x[i, k] <= M;
objective sum_i (sum_k k x[i, k] + o_i), the TEL. The paper leaves T unspecified; the default
here is the makespan of the MC-SF schedule (the executor on ascending o), which keeps the
program feasible.

- `relaxed_lp` (Relax-LP, x >= 0) gives y_i = sum_k k x*[i, k], a fractional start per request.
- `sorted_lp_order` (Algorithm 6): ascending (y, index), then the shared executor.
- `lp_swap_order` (Algorithm 7): compute y once; while requests remain, greedy-fill a batch in
  ascending (y, index) order (skip, not stop, when sum (s + o) would exceed M), run Algorithm
  4's swap loop from it, sort the batch by ascending (o, index) and append it. The batch loop
  is `sorted_f.order` with a solver built from `sorted_f.greedy_fill` and
  `sorted_f.swap_search`, jitted (LP solving stays on the host).
- `opt_ip`: the exact integer program, for small instances.
- `relaxed_lps`, `lp_orders`: y and either order for every row of int[S, n] instances (for
  `instances.execute`).

Everything here takes and returns NumPy arrays and runs on the host, outside jit. The
programs are built with scipy.sparse matrices and solved by HiGHS through SciPy, imported
lazily: SciPy is the optional extra `jaxsched[lp]`. Written as the paper writes them, the
memory rows have o_i nonzeros per column (36 million for 100 requests of the real-data mix);
the relaxed LP is by default written with the running count and the memory at each step as
2T extra variables chained by their first differences (4 nonzeros per column), the same LP
(`relaxed_lp`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from ..errors import require, require_choice, require_float, require_int

# y is a sum of k * x[i, k] over an LP vertex computed in floating point: values that are equal
# in exact arithmetic can differ by ~1e-9. Rounding to this many decimals before ordering makes
# such ties fall to the index, as the exact rule says (a real difference in y is far larger).
Y_DECIMALS = 6

# With time_step > 1 and no horizon given, a restricted LP that is infeasible at the MC-SF
# makespan is retried with the horizon grown by this factor (at least one time step) until it
# reaches a horizon at which the sequential schedule on the grid fits (always feasible).
HORIZON_GROWTH = 1.25

LP_ORDERS = ("sorted_lp", "lp_swap")

# HiGHS's interior point (with crossover) on the "chained" rows, single-threaded: the EC.4.2
# uniform LP (n = 100, M = 100, T = 1549) in 14 s; the real-data mix (n = 200, M = 16492,
# T = 4369, starts every 5 steps) in 14 s against 41 s for dual simplex.
DEFAULT_METHOD = "highs-ipm"
# Used when the interior point method reports a solve error (HiGHS status 4).
FALLBACK_METHOD = "highs-ds"


def _scipy():
    """The SciPy modules used here, or an ImportError that names the extra to install."""
    try:
        import scipy.optimize as opt
        import scipy.sparse as sp
    except ImportError as err:  # pragma: no cover - exercised only without scipy
        raise ImportError(
            "jaxsched.offline.lp needs SciPy (HiGHS solves the LP and IP of paper 002): pip install 'jaxsched[lp]'"
        ) from err
    return opt, sp


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet_stdout():
    """Silence file descriptor 1 for the duration: HiGHS's MIP solver prints internal trace
    lines from C++ straight to stdout, which scipy's milp cannot turn off, and they would mix
    with a command's tables. Python-level output is flushed first and goes through unchanged
    afterwards."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (some embedded environments)
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _check(s, o, M) -> tuple[np.ndarray, np.ndarray, int]:
    """(s, o as int64[n], M as int): one ConfigError naming the field unless s, o are integer
    arrays of one shape [n], n >= 1, with s, o >= 1 and s + o <= M tokens."""
    M = require_int(M, "M", lo=2)
    s, o = np.asarray(s), np.asarray(o)
    require(
        s.shape == o.shape and s.ndim == 1 and s.size >= 1,
        "s, o",
        "integer arrays of one shape [n], n >= 1",
        f"shapes {s.shape} and {o.shape}",
    )
    require(
        s.dtype.kind in "iu" and o.dtype.kind in "iu",
        "s, o",
        "integer arrays (tokens)",
        f"dtypes {s.dtype} and {o.dtype}",
    )
    s, o = s.astype(np.int64), o.astype(np.int64)
    require(
        int(s.min()) >= 1 and int(o.min()) >= 1,
        "s, o",
        "lengths >= 1 (tokens)",
        f"min s {int(s.min())}, min o {int(o.min())}",
    )
    worst = int(np.argmax(s + o))
    require(
        int(s[worst] + o[worst]) <= M,
        "s + o",
        f"<= M = {M} for every request (a request with s + o > M can never start)",
        f"{int(s[worst] + o[worst])} at request {worst}",
    )
    return s, o, M


def _check_horizon(horizon, o: np.ndarray) -> int:
    return require_int(horizon, "horizon", lo=int(o.max()))


def _check_y(y, n: int) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    require(y.shape == (n,) and bool(np.isfinite(y).all()), "y", f"finite float[{n}]", f"shape {y.shape}")
    return y


# --------------------------------------------------------------------------------------------
# The executor's makespan (the default horizon) and exact memory profiles
# --------------------------------------------------------------------------------------------
def mcsf_makespans(s, o, M: int) -> np.ndarray:
    """int64[S]: the makespan (steps) of the MC-SF schedule (the JAX executor on ascending
    (o, index)) of each row of s, o (int[S, n] tokens), all rows in one vmapped run."""
    from .config import instance_params
    from .instances import execute

    s, o = np.atleast_2d(s), np.atleast_2d(o)
    order = np.argsort(o, axis=1, kind="stable")
    # Any makespan is at most sum(o) (the executor never idles with requests pending); the
    # bound is rounded up to a power of two so that few distinct values (jit static) compile.
    bound = 1 << int(max(1, int(o.sum(axis=1).max())) - 1).bit_length()
    metrics = execute(instance_params(M), s, o, order, max_steps=bound)
    if not metrics["done"].all():  # the executor is broken, not the input
        raise RuntimeError("the MC-SF schedule did not finish within sum(o) steps")
    return metrics["makespan_steps"].astype(np.int64)


def memory_profile(s, o, p) -> np.ndarray:
    """int64[makespan]: tokens held at steps t = 1..max(p + o) (entry t - 1), in exact
    integers, for starts p (int[n]): request i holds s_i + t - p_i tokens at each step
    p_i < t <= p_i + o_i."""
    s, o, p = (np.asarray(a, np.int64) for a in (s, o, p))
    mem = np.zeros(int((p + o).max()), np.int64)
    for si, oi, pi in zip(s, o, p):
        mem[pi : pi + oi] += si + np.arange(1, oi + 1)
    return mem


# --------------------------------------------------------------------------------------------
# The time-indexed program
# --------------------------------------------------------------------------------------------
class _Columns(NamedTuple):
    """The start columns: column v is request `request[v]` starting at step `start[v]`."""

    request: np.ndarray  # int64[V]
    start: np.ndarray  # int64[V]
    assign: object  # sparse [n, V]: row i sums request i's columns


def _columns(s: np.ndarray, o: np.ndarray, horizon: int, time_step: int) -> _Columns:
    """Starts k in {0, q, 2q, ...} with k <= horizon - o_i for each request i (q = time_step)."""
    _, sp = _scipy()
    starts = [np.arange(0, horizon - oi + 1, time_step, dtype=np.int64) for oi in o]
    request = np.repeat(np.arange(s.size, dtype=np.int64), [k.size for k in starts])
    start = np.concatenate(starts)
    V = start.size
    assign = sp.csr_array((np.ones(V), (request, np.arange(V))), shape=(s.size, V))
    return _Columns(request, start, assign)


def _ramp_rows(s: np.ndarray, o: np.ndarray, cols: _Columns, horizon: int):
    """sparse [T, V]: row t - 1 is the memory at step t (T = horizon): column (i, k) holds
    s_i + j tokens at step k + j, j = 1..o_i, so it has o_i nonzeros."""
    _, sp = _scipy()
    width = o[cols.request]
    col = np.repeat(np.arange(width.size, dtype=np.int64), width)
    first = np.repeat(np.cumsum(width) - width, width)
    j = np.arange(col.size, dtype=np.int64) - first + 1
    row = cols.start[col] + j - 1
    val = (s[cols.request][col] + j).astype(np.float64)
    return sp.csr_array((val, (row, col)), shape=(horizon, width.size))


def _chained_rows(s: np.ndarray, o: np.ndarray, cols: _Columns, horizon: int):
    """(R, G) sparse [T, V] each, the start-column terms of the chained memory rows.

    Column (i, k) starts running at step k + 1 and stops after step k + o_i. From step t - 1
    to t the running count changes by (starts at t) - (stops at t - 1): R has -1 at row
    t - 1 = k (start) and +1 at row k + o_i (it ran last at step k + o_i), so that
    n_t - n_{t-1} + (R x)_t = 0. The memory changes by n_t (one more token per running
    request), plus s_i at a start (its first step holds s_i + 1, one of which n_t counts),
    minus the s_i + o_i freed after its last step: G has -s_i at row k and +(s_i + o_i) at
    row k + o_i, so that m_t - m_{t-1} - n_t + (G x)_t = 0. Entries at rows >= T (steps past
    the horizon) are dropped: they constrain nothing. 4 nonzeros per column against o_i for
    the ramp rows.
    """
    _, sp = _scipy()
    k, si, oi = cols.start, s[cols.request], o[cols.request]
    row = np.concatenate([k, k + oi])
    col = np.tile(np.arange(k.size, dtype=np.int64), 2)
    keep = row < horizon
    ones = np.concatenate([-np.ones(k.size), np.ones(k.size)])
    freed = np.concatenate([-si, si + oi]).astype(np.float64)
    shape = (horizon, k.size)
    return (
        sp.csr_array((ones[keep], (row[keep], col[keep])), shape=shape),
        sp.csr_array((freed[keep], (row[keep], col[keep])), shape=shape),
    )


FORMULATIONS = ("chained", "ramp")


class LPSolution(NamedTuple):
    """The relaxed program's solution and size.

    y: float64[n], sum_k k x*[i, k] (steps), rounded to Y_DECIMALS; value: the LP objective
    including sum(o), a lower bound on the TEL of every schedule whose starts lie on the grid
    and finish by the horizon (steps); horizon, time_step, formulation, method: the program's;
    num_vars, num_rows, nnz: its size as given to HiGHS;
    build_s, solve_s: seconds to build the matrices and for HiGHS to solve (wall clock).
    """

    y: np.ndarray
    value: float
    horizon: int
    time_step: int
    formulation: str
    method: str
    num_vars: int
    num_rows: int
    nnz: int
    build_s: float
    solve_s: float


def _solve_relaxed(
    s: np.ndarray, o: np.ndarray, M: int, horizon: int, time_step: int, formulation: str, method: str, options: dict
):
    """Build and solve one relaxed program; (linprog result, columns, size, seconds)."""
    opt, sp = _scipy()
    t0 = time.perf_counter()
    cols = _columns(s, o, horizon, time_step)
    V, n = cols.start.size, s.size
    cost = cols.start.astype(np.float64)
    if formulation == "ramp":
        # min k.x  s.t.  memory(x) <= M at every step, each request's columns sum to 1, x >= 0.
        A_ub, b_ub = _ramp_rows(s, o, cols, horizon), np.full(horizon, float(M))
        A_eq, b_eq = cols.assign, np.ones(n)
        bounds = (0, None)
    else:
        # Variables [x (V), n (T), m (T)]: n_t the running count and m_t the memory at step
        # t (in [0, M]), each defined exactly by its first difference (`_chained_rows`; n_0 =
        # m_0 = 0). The same LP as "ramp" with 4 instead of o_i nonzeros per column, and
        # better conditioned for HiGHS than one second-difference chain.
        R, G = _chained_rows(s, o, cols, horizon)
        step = np.arange(horizon)
        chain = sp.csr_array(
            (
                np.concatenate([np.ones(horizon), -np.ones(horizon - 1)]),
                (np.concatenate([step, step[1:]]), np.concatenate([step, step[:-1]])),
            ),
            shape=(horizon, horizon),
        )
        eye = sp.eye_array(horizon, format="csr")
        zero = sp.csr_array((horizon, horizon))
        A_eq = sp.vstack(
            [
                sp.hstack([R, chain, zero]),
                sp.hstack([G, -eye, chain]),
                sp.hstack([cols.assign, sp.csr_array((n, 2 * horizon))]),
            ]
        ).tocsr()
        b_eq = np.concatenate([np.zeros(2 * horizon), np.ones(n)])
        A_ub = b_ub = None
        cost = np.concatenate([cost, np.zeros(2 * horizon)])
        bounds = np.concatenate([np.tile([0.0, np.inf], (V + horizon, 1)), np.tile([0.0, float(M)], (horizon, 1))])
    t1 = time.perf_counter()
    res = opt.linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method=method, options=options)
    t2 = time.perf_counter()
    nnz = A_eq.nnz + (A_ub.nnz if A_ub is not None else 0)
    return res, cols, (cost.size, A_eq.shape[0] + (horizon if A_ub is not None else 0), nnz), (t1 - t0, t2 - t1)


def relaxed_lp_solution(
    s,
    o,
    M: int,
    *,
    horizon: int | None = None,
    time_step: int = 1,
    formulation: str = "chained",
    method: str = DEFAULT_METHOD,
    time_limit_s: float | None = None,
) -> LPSolution:
    """Relax-LP (x >= 0) solved by HiGHS (`scipy.optimize.linprog`); see `relaxed_lp` for the
    arguments. Returns its `LPSolution` (y, value, size, timings)."""
    s, o, M = _check(s, o, M)
    opts = _lp_options(time_step, formulation, method, time_limit_s)
    grow = horizon is None and opts["time_step"] > 1
    horizon = _check_horizon(int(mcsf_makespans(s, o, M)[0]) if horizon is None else horizon, o)
    return _relaxed_lp(s, o, M, horizon, grow, **opts)


def _lp_options(time_step, formulation, method, time_limit_s) -> dict:
    """The checked solver options of `relaxed_lp` as keywords of `_relaxed_lp`."""
    options = {}
    if time_limit_s is not None:
        options["time_limit"] = require_float(time_limit_s, "time_limit_s", lo=0.0, lo_open=True)
    return dict(
        time_step=require_int(time_step, "time_step", lo=1),
        formulation=require_choice(formulation, "formulation", FORMULATIONS),
        method=require_choice(method, "method", ("highs-ipm", "highs-ds", "highs")),
        options=options,
    )


def _relaxed_lp(
    s: np.ndarray,
    o: np.ndarray,
    M: int,
    horizon: int,
    grow: bool,
    *,
    time_step: int,
    formulation: str,
    method: str,
    options: dict,
) -> LPSolution:
    """`relaxed_lp_solution` on checked input; grow: whether the horizon may grow (below)."""
    _scipy()
    # The sequential schedule on the grid (each request alone, starts rounded up to multiples
    # of q, the longest request last) always fits, so this horizon keeps the program feasible.
    q = time_step
    enough = int((-(-o // q) * q).sum() - (-(-o.max() // q) * q) + o.max())
    while True:
        res, cols, (num_vars, num_rows, nnz), (build_s, solve_s) = _solve_relaxed(
            s, o, M, horizon, time_step, formulation, method, options
        )
        if res.status == 2 and grow and horizon < enough:  # 2: infeasible
            horizon = min(enough, max(horizon + q, math.ceil(horizon * HORIZON_GROWTH)))
            continue
        if res.status == 4 and method == "highs-ipm":  # 4: numerical trouble
            # The interior point method occasionally stalls on these degenerate programs;
            # the dual simplex is slower but solves them (the same LP, so the same value).
            method = FALLBACK_METHOD
            continue
        break
    if res.status != 0 or res.x is None:
        raise RuntimeError(
            f"HiGHS did not solve the relaxed LP (status {res.status}, horizon "
            f"{horizon}, time_step {time_step}): {res.message}"
        )
    x = res.x[: cols.start.size]
    y = np.round(cols.assign @ (x * cols.start), Y_DECIMALS)
    return LPSolution(
        y=y,
        value=float(x @ cols.start) + float(o.sum()),
        horizon=horizon,
        time_step=time_step,
        formulation=formulation,
        method=method,
        num_vars=int(num_vars),
        num_rows=int(num_rows),
        nnz=int(nnz),
        build_s=build_s,
        solve_s=solve_s,
    )


def relaxed_lp(
    s,
    o,
    M: int,
    *,
    horizon: int | None = None,
    time_step: int = 1,
    formulation: str = "chained",
    method: str = DEFAULT_METHOD,
    time_limit_s: float | None = None,
) -> np.ndarray:
    """y float64[n]: Relax-LP's fractional start sum_k k x*[i, k] of each request (steps).

    Args: s, o: int[n] tokens (s, o >= 1, s + o <= M); M: KV limit (tokens); horizon: T in
    steps (default: the MC-SF makespan); time_step: q >= 1 (below); formulation: how the
    memory rows are written, "chained" (default: 2T extra variables, the running count n_t
    and the memory m_t in [0, M] at step t, each defined by its first difference; 4 nonzeros
    per start column) or "ramp" (the paper's rows, each summing the ramps s_i + t - k
    directly: o_i nonzeros per column, 25x more on the real-data mix); both are the same LP.
    method: "highs-ipm" (default: interior point, then crossover to a vertex), "highs-ds"
    (dual simplex) or "highs" (HiGHS chooses); time_limit_s: HiGHS's limit (seconds).

    The program (module docstring) has n (T + 1) - sum(o) + n start columns and T + n rows for
    the horizon T, solved by HiGHS on sparse matrices.
    time_step = q > 1 is an APPROXIMATION option for large instances: starts are restricted to
    multiples of q (memory is still checked at every step), which divides the columns and
    nonzeros by about q. It relaxes a restricted problem, so its value is no longer a lower
    bound on OPT; only y's ordering is used. If that restricted program is infeasible at the
    default horizon, the horizon grows by HORIZON_GROWTH until it is feasible (a horizon given
    explicitly is never changed). y is rounded to Y_DECIMALS decimals so that floating-point
    near-ties order by index.
    Raises ConfigError on bad input, RuntimeError (with HiGHS's message) unless optimal.
    """
    return relaxed_lp_solution(
        s, o, M, horizon=horizon, time_step=time_step, formulation=formulation, method=method, time_limit_s=time_limit_s
    ).y


# --------------------------------------------------------------------------------------------
# Orders
# --------------------------------------------------------------------------------------------
def _ascending(y: np.ndarray) -> np.ndarray:
    """int64[n]: indices in ascending (y, index) order."""
    return np.argsort(y, kind="stable")


def sorted_lp_order(s, o, M: int, y=None, **lp_kw) -> np.ndarray:
    """Algorithm 6 (Sorted-LP): int64[n], the requests in ascending (y, index) order, y from
    `relaxed_lp(s, o, M, **lp_kw)` unless given (float[n]). Feed it to the executor
    (`instances.execute`)."""
    s, o, M = _check(s, o, M)
    y = relaxed_lp(s, o, M, **lp_kw) if y is None else _check_y(y, s.size)
    return _ascending(y)


@functools.lru_cache(maxsize=None)
def _lp_swap_jit():
    """The jitted, vmapped LP-Swap batch loop: (s, o int32[S, n], M, key int32[S, n]) ->
    int32[S, n]. Built once; it compiles once per shape."""
    import jax
    import jax.numpy as jnp

    from . import sorted_f

    def one(s, o, M, key):
        def solver(s, o, avail, M):
            # Algorithm 7's initial set: greedy fill in ascending (y, index) order, key being
            # the rank of y; then Algorithm 4's swap loop from it.
            chosen, pos = sorted_f.greedy_fill(s + o, key, avail, M)
            return sorted_f.swap_search(s, o, avail, M, chosen, pos)

        return sorted_f.order(s, o, M, solver)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, 0))), jnp


def _lp_swap_batch(s: np.ndarray, o: np.ndarray, M: int, y: np.ndarray) -> np.ndarray:
    """LP-Swap orders (int64[S, n]) of checked instances s, o (int[S, n]) given y (float[S, n])."""
    run, jnp = _lp_swap_jit()
    rank = np.argsort(np.argsort(y, axis=1, kind="stable"), axis=1, kind="stable")
    out = run(jnp.asarray(s, jnp.int32), jnp.asarray(o, jnp.int32), jnp.int32(M), jnp.asarray(rank, jnp.int32))
    return np.asarray(out).astype(np.int64)


def lp_swap_order(s, o, M: int, y=None, **lp_kw) -> np.ndarray:
    """Algorithm 7 (LP-Swap): int64[n], y (float[n]) from `relaxed_lp(s, o, M, **lp_kw)`
    unless given. While requests remain: greedy fill in ascending (y, index) order (a request
    is skipped, not the walk stopped, when sum (s + o) would exceed M), then Algorithm 4's
    first-improvement swap loop from that set (`sorted_f.swap_search`), the batch sorted by
    ascending (o, index) and appended. Feed it to the executor (`instances.execute`)."""
    s, o, M = _check(s, o, M)
    y = relaxed_lp(s, o, M, **lp_kw) if y is None else _check_y(y, s.size)
    return _lp_swap_batch(s[None], o[None], M, y[None])[0]


def relaxed_lps(
    s,
    o,
    M: int,
    progress=None,
    *,
    horizon: int | None = None,
    time_step: int = 1,
    formulation: str = "chained",
    method: str = DEFAULT_METHOD,
    time_limit_s: float | None = None,
) -> np.ndarray:
    """y float64[S, n]: `relaxed_lp` of each row of s, o (int[S, n] tokens), one HiGHS solve
    per row; the default horizons (MC-SF makespans) are computed for all rows in one run.
    progress: a `Progress` (or anything with advance(weight, detail)), advanced by 1 per LP."""
    s, o = np.atleast_2d(np.asarray(s)), np.atleast_2d(np.asarray(o))
    require(
        s.shape == o.shape and s.ndim == 2 and s.shape[0] >= 1,
        "s, o",
        "integer arrays of one shape [S, n], S >= 1",
        f"shapes {s.shape} and {o.shape}",
    )
    rows = [_check(s[r], o[r], M) for r in range(s.shape[0])]
    M = rows[0][2]
    opts = _lp_options(time_step, formulation, method, time_limit_s)
    grow = horizon is None and opts["time_step"] > 1
    horizons = mcsf_makespans(s, o, M) if horizon is None else np.full(s.shape[0], horizon, np.int64)
    y = np.empty(s.shape, np.float64)
    for r, (sr, orr, _) in enumerate(rows):
        y[r] = _relaxed_lp(sr, orr, M, _check_horizon(int(horizons[r]), orr), grow, **opts).y
        if progress is not None:
            progress.advance(1, "LP")
    return y


def lp_orders(s, o, M: int, which: str, progress=None, *, y=None, **lp_kw) -> np.ndarray:
    """int64[S, n]: Sorted-LP ("sorted_lp") or LP-Swap ("lp_swap") orders of each row of s, o
    (int[S, n] tokens), for `instances.execute`. y (float[S, n]) defaults to
    `relaxed_lps(s, o, M, progress, **lp_kw)` (pass it to reuse one set of LPs for both
    orders); the LP-Swap batch loops run in one vmapped call."""
    require_choice(which, "which", LP_ORDERS)
    if y is None:
        y = relaxed_lps(s, o, M, progress, **lp_kw)
    s, o = np.atleast_2d(np.asarray(s)), np.atleast_2d(np.asarray(o))
    for r in range(s.shape[0]):
        _check(s[r], o[r], M)
    y = np.asarray(y, np.float64)
    require(y.shape == s.shape and bool(np.isfinite(y).all()), "y", f"finite float{list(s.shape)}", f"shape {y.shape}")
    if which == "sorted_lp":
        return np.argsort(y, axis=1, kind="stable")
    return _lp_swap_batch(s.astype(np.int64), o.astype(np.int64), int(M), y)


# --------------------------------------------------------------------------------------------
# The exact optimum
# --------------------------------------------------------------------------------------------
def opt_ip(s, o, M: int, *, horizon: int | None = None, time_limit_s: float | None = None) -> tuple[int, np.ndarray]:
    """The OPT integer program (module docstring, x binary) solved exactly by HiGHS
    (`scipy.optimize.milp`, relative gap 0).

    horizon (steps) defaults to the MC-SF makespan, which keeps the program feasible; the
    result is then the optimum over schedules of makespan <= horizon. horizon = sum(o) gives
    the unrestricted optimum: a schedule with a step where nothing runs before its last start
    improves by moving every later start one step earlier, so an optimal one has makespan
    <= sum(o). time_limit_s: HiGHS's limit (seconds).
    Returns (TEL, p): TEL = sum_i (p_i + o_i) in steps, recomputed in exact integers from the
    starts p (int64[n]), whose memory is checked at every step against M.
    Raises ConfigError on bad input, RuntimeError (with HiGHS's message) unless it proves
    optimality, or if its solution is not a valid schedule.
    """
    opt, _ = _scipy()
    s, o, M = _check(s, o, M)
    horizon = _check_horizon(int(mcsf_makespans(s, o, M)[0]) if horizon is None else horizon, o)
    options = {"mip_rel_gap": 0.0}
    if time_limit_s is not None:
        options["time_limit"] = require_float(time_limit_s, "time_limit_s", lo=0.0, lo_open=True)
    cols = _columns(s, o, horizon, 1)
    V = cols.start.size
    # The direct (ramp) memory rows, as the paper writes them: the IP is meant for small
    # instances, where their o_i nonzeros per column cost little.
    with _quiet_stdout():
        res = opt.milp(
            cols.start.astype(np.float64),
            integrality=np.ones(V),
            bounds=opt.Bounds(0, 1),
            constraints=[
                opt.LinearConstraint(cols.assign, 1, 1),
                opt.LinearConstraint(_ramp_rows(s, o, cols, horizon), -np.inf, M),
            ],
            options=options,
        )
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"HiGHS did not prove optimality (status {res.status}, horizon {horizon}): {res.message}")
    take = res.x > 0.5
    p = np.full(s.size, -1, np.int64)
    p[cols.request[take]] = cols.start[take]
    counts = np.bincount(cols.request[take], minlength=s.size)
    if (counts != 1).any() or int(memory_profile(s, o, p).max()) > M or int((p + o).max()) > horizon:
        raise RuntimeError("the MILP solution is not a valid schedule")
    return int((p + o).sum()), p
