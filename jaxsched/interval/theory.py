"""Analytic results of paper 003 (Chen, Ye, Zhou: "Adaptively Robust LLM Inference Optimization
under Prediction Uncertainty"): competitive ratios (CRs) of A_max, A_min and A_l.

Host-side float64 NumPy only (no JAX, no SciPy). The simulators use these values as reference
curves. Units: lengths and prompt sizes s in tokens, memory M in tokens, time in steps (one
batch = one step), TEL in steps summed over jobs. CRs are dimensionless. "notes" is the
reading guide notes/003.md. x is an output-length pmf over the consecutive integers
low, low+1, ..., low+len(x)-1, and alpha = l/u is the prediction accuracy.

Results, with where they are in the paper:

- `thm33_bound`: Theorem 3.3 (proof in App. 8/10). CR(A_max) <= alpha^-1 (1 + alpha^-1)/2.
- `thm34_*`: Theorem 3.4, the lower bound construction for A_max (proof after the theorem,
  Sec. 3.2). `thm34_printed` is the printed claim; `thm34_ratio`/`thm34_max` are what the
  construction really gives (see "Discrepancies").
- `lemma46_cr`, `hsf_tel_fluid`: Lemma 4.6, the asymptotic CR of A_min, with
  delta(k) = s + low when k = low and 1 otherwise. The H-SF TEL is the lemma's denominator
  times n^2 / 2M. CAVEAT (notes §3, §5.9): Lemma 4.6 is a *synchronous-batch fluid
  approximation* (a type-k job costs k(s+k)/M time, and periods do not overlap). It is exact
  only as n, M -> infinity in that model. A step simulation of A_min at finite n/M differs,
  by a lot at some loads (notes: 1.02-1.89 against 1.45), so treat these as reference
  curves, not exact targets.
- `cor48_*`: Corollary 4.8 and Theorem 4.3 (s = 0, low = 1). CR = max_x x'A_u x / x'B_u x.
  B_u^-1 is tridiagonal and tr(B_u^-1 A_u) = H_u. The top eigenvector is nonnegative, so the
  max over x > 0 is lambda_max(A_u, B_u).
- `fig1_fit`, `FIG1_PAPER`: the Figure 1 fit CR ~ a log(u + b) + c.
- `thm51_*`, `thm52_*`, `ALPHA_STAR`: Theorems 5.1 and 5.2 and the switching point of
  Sec. 5.1 (two-point lengths o in {l, u}, t = x_l / x_u; proofs in App. 12).
- `geometric_pmf`, `lg_pmf`, `thm53_cr`, `THM53_SUP`: Sec. 5.2-5.3 (Figure 3, Theorem 5.3).

Exact relations that the tests check:

- thm51_cr(l/u, t) == lemma46_cr(two-point pmf, low=l, s=0) *exactly* for all integers
  1 <= l < u. No large-u limit is needed, but s must be 0. With s > 0 the two differ by
  O(s/l) (they agree again as l, u -> infinity at fixed alpha and s), and the Lemma 4.6 value
  can exceed (3 - alpha)/2. As s -> infinity, Lemma 4.6 tends to the random-order/SPT ratio
  (sum_i i x_i)(sum_i x_i) / sum_k k x_k (x_k + 2 sum_{i>k} x_i). For two-point laws that
  ratio has sup (1 + alpha^-1/2)/2, which is unbounded as alpha -> 0. So the "W.L.O.G. s = 0"
  before Corollary 4.8 is not without loss of generality. Theorems 4.3 and 5.1 are derived at
  s = 0, and when s is large compared with u, Lemma 4.6 exceeds their bounds.
- The sup over t of thm51_cr is (3 - alpha)/2, reached at t = 1/alpha. The sup over t of
  thm52_cr is thm52_bound, reached at t = 1/alpha - 2 (alpha < 1/2) or t = 0 (alpha >= 1/2).
  Both bounds are tight, so the sup curves and the bounds are the same curves. They cross
  once, at ALPHA_STAR: A_l has the smaller worst case iff alpha < ALPHA_STAR. At a fixed t
  the order differs: A_l is worse iff t (alpha + alpha^2 - 1) + 2 alpha > 0.

Discrepancies with the paper (found here and in notes/003.md):

- Theorem 3.4: the proof's two TELs give the ratio (1/alpha)(r + alpha)(r + 1) /
  (r^2 + 2 alpha r + 1), r = a/b (this agrees with notes). At r = sqrt(alpha) that is about
  alpha^-1/2 (3.0 at alpha = 0.25), not the printed alpha^-1 (1 + alpha^-1/2)/2 (6.0). Its
  max over r is at r* = 1 + sqrt(2 + 2 alpha), lies below the printed value for every
  alpha < 1, and tends to (1 + sqrt 2)/(2 alpha). So the construction proves only a
  Theta(1/alpha) lower bound, not growth "between alpha^-1.5 and alpha^-2" (Sec. 4).
- Figure 1: the paper's curve 0.2555 log(u + 0.2793) + 1.1587 matches lambda_max to
  <= 3e-3 for u >= 100, but is 0.029 too high at u = 10. Its R^2 against lambda_max on
  u = 2..1000 is 0.99931, not > 0.9999. The least-squares fit on u = 2..1000 (all integers)
  is a = 0.25642, b = -0.591, c = 1.15354, R^2 = 0.999992. a and c agree with the paper to
  within 1e-3 and 5.2e-3. b is only weakly identified (the SSE changes little with b), and
  its best value is negative on every range tried (-0.47 on 1..1000, -0.94 on 10..1000). Fixing
  b = 0.2793 gives R^2 = 0.99963 on 2..1000.
- Theorem 5.3's proof: the printed denominator factor (2k q^(k-1) + sum_{i>k} i q^(i-1))
  should read (k q^(k-1) + 2 sum_{i>k} i q^(i-1)). Only the corrected sum equals the printed
  closed form. The theorem's final CR is right.
- Lemma 4.6's proof writes E[tau_k] = sum_{i>=k} i(s+i)/M E[c_ii]; the sum is over the
  completions c_ki of period k (c_ii is a slip), which gives the stated delta(k)/M sum i x_i n.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError, require, require_float, require_int

__all__ = [
    "lemma46_cr",
    "hsf_tel_fluid",
    "cor48_matrices",
    "cor48_b_inverse",
    "cor48_lambda_max",
    "cor48_trace",
    "fig1_fit",
    "FIG1_PAPER",
    "thm51_cr",
    "thm51_bound",
    "thm52_cr",
    "thm52_bound",
    "ALPHA_STAR",
    "geometric_pmf",
    "lg_pmf",
    "thm53_cr",
    "THM53_SUP",
    "thm34_ratio",
    "thm34_printed",
    "thm34_max",
    "thm34_tels",
    "thm33_bound",
]

# Figure 1's printed fit (a, b, c) of CR(A_min) ~ a log(u + b) + c, s = 0, l = 1.
FIG1_PAPER: tuple[float, float, float] = (0.2555, 0.2793, 1.1587)
# Sec. 5.1: the root of alpha^2 - 3 alpha + 1 in (0, 1), where A_l's and A_min's bounds cross.
ALPHA_STAR: float = (3.0 - math.sqrt(5.0)) / 2.0
# Theorem 5.3: the sup over q of the LG(p) closed form, its value at q = 1.
THM53_SUP: float = 14.0 / 9.0

# Dense u x u float64 matrices: A, B, the whitened matrix and temporaries take about
# 5 * 8 u^2 bytes (1 GB at u = 5000), and eigh is O(u^3). Above this, use lemma46_cr directly.
_DENSE_MAX_U = 5000


# ---------------------------------------------------------------------------------------------
# Validation and small array helpers


def _reals(
    value, field: str, lo: float, hi: float = math.inf, *, lo_open: bool = False, hi_open: bool = False
) -> np.ndarray:
    """Validate a real scalar or array, every element in the interval; return float64."""
    interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    allowed = f"a finite real (or array of reals) in {interval}"
    arr = np.asarray(value) if not isinstance(value, (str, bytes)) else np.asarray(None)
    # Reject bools and strings up front: np.asarray(..., float) would quietly convert them.
    require(arr.dtype.kind in "iuf", field, allowed, value)
    arr = arr.astype(np.float64)
    ok = np.isfinite(arr)
    ok &= (arr > lo) if lo_open else (arr >= lo)
    ok &= (arr < hi) if hi_open else (arr <= hi)
    if not ok.all():
        raise ConfigError(
            f"{field} must be {allowed}, got {arr[~ok].flat[0]!r}" + (f" (in {value!r})" if arr.ndim else "")
        )
    return arr


def _out(arr: np.ndarray):
    """A float for a 0-d result, else the array (numpy's scalar-in, scalar-out convention)."""
    return float(arr) if np.ndim(arr) == 0 else arr


def _pmf(x, field: str = "x") -> np.ndarray:
    """Validate nonnegative finite weights (1-D, not all zero); return them summing to 1."""
    arr = np.asarray(x) if not isinstance(x, (str, bytes)) else np.asarray(None)
    allowed = "a non-empty 1-D array of finite nonnegative weights, not all zero"
    require(arr.ndim == 1 and arr.size >= 1 and arr.dtype.kind in "iuf", field, allowed, x)
    arr = arr.astype(np.float64)
    require(bool(np.all(np.isfinite(arr)) and np.all(arr >= 0) and arr.sum() > 0), field, allowed, x)
    return arr / arr.sum()  # CRs are scale-free; normalizing only guards over/underflow


def _tail(v: np.ndarray) -> np.ndarray:
    """Inclusive tail sums: out[k] = sum_{i >= k} v[i]."""
    return np.cumsum(v[::-1])[::-1]


def _tail_after(v: np.ndarray) -> np.ndarray:
    """Strict tail sums: out[k] = sum_{i > k} v[i] (0 at the last index)."""
    return np.append(_tail(v)[1:], 0.0)


def _lengths(low: int, size: int) -> np.ndarray:
    """Output lengths low .. low + size - 1 as float64, shape (size,)."""
    return low + np.arange(size, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# Lemma 4.6: asymptotic CR of A_min for a given length distribution


def _hsf_sum(x: np.ndarray, k: np.ndarray, s: float) -> float:
    """sum_k k (s+k) x_k (x_k + 2 sum_{i>k} x_i): H-SF's TEL in units of n^2 / 2M."""
    return float(np.sum(k * (s + k) * x * (x + 2.0 * _tail_after(x))))


def lemma46_cr(x, low: int, s: float) -> float:
    """Lemma 4.6: the asymptotic (n, M -> infinity, fluid) competitive ratio of A_min.

    x: (L,) nonnegative weights of output lengths low .. low+L-1 (any scale; not all zero).
    low: the prediction lower bound l (tokens, integer >= 1). A_min starts every job at o~ = l,
    so x[0] may be 0. s: the common prompt size (tokens, real >= 0).
    Returns the dimensionless ratio E[TEL(A_min)] / TEL(H-SF), which is >= 1. O(L) time and
    memory via tail sums (L = 10^4 takes about 0.5 ms).
    Caveat: this is the paper's synchronous-batch fluid model, not a finite-M simulation.
    """
    x = _pmf(x)
    low = require_int(low, "low", lo=1)
    s = require_float(s, "s", lo=0.0)
    k = _lengths(low, x.size)
    delta = np.ones_like(k)
    delta[0] = s + low  # period tau_l runs every job from scratch: cost factor s + l
    head = _tail(k * x)  # sum_{i>=k} i x_i (jobs still present in period k, token-weighted)
    inv = _tail(x / (s + k))  # sum_{i>=k} x_i / (s+i)
    # sum_{i>k} (i-k) x_i/(s+i) = sum_{j>k} sum_{i>=j} x_i/(s+i): a second tail sum, with all
    # terms positive (the direct form i*... - k*... cancels badly near k = u).
    wait = _tail_after(inv)
    num = np.sum(delta * head * (delta * inv + 2.0 * wait))
    return float(num / _hsf_sum(x, k, s))


def hsf_tel_fluid(x, low: int, s: float, n: float, M: float) -> float:
    """H-SF's fluid TEL (proof of Lemma 4.6): (n^2/2M) sum_k k(s+k) x_k (x_k + 2 sum_{i>k} x_i).

    x: (L,) weights of lengths low .. low+L-1, normalized here to a pmf. low: tokens (int >= 1).
    s: prompt tokens (>= 0). n: number of jobs (> 0). M: KV capacity in tokens (> 0).
    Returns the total end-to-end latency in steps, summed over jobs (leading order in 1/M).
    """
    x = _pmf(x)
    low = require_int(low, "low", lo=1)
    s = require_float(s, "s", lo=0.0)
    n = require_float(n, "n", lo=0.0, lo_open=True)
    M = require_float(M, "M", lo=0.0, lo_open=True)
    return n * n / (2.0 * M) * _hsf_sum(x, _lengths(low, x.size), s)


# ---------------------------------------------------------------------------------------------
# Corollary 4.8 / Theorem 4.3: the Rayleigh-quotient form (s = 0, l = 1)


def _dense_u(u) -> int:
    return require_int(u, "u", lo=1, hi=_DENSE_MAX_U)


def cor48_matrices(u: int) -> tuple[np.ndarray, np.ndarray]:
    """(A_u, B_u), each (u, u) float64 and symmetric positive definite (Lemma 4.9).

    a_ij = (m^2 / (ij)) ((i+j)^2 / 2 - m^2) and b_ij = m^2, with m = min(i, j) and i, j = 1..u
    (output lengths in tokens). Then lemma46_cr(x, 1, 0) = x'A x / x'B x for every x.
    """
    u = _dense_u(u)
    i = np.arange(1, u + 1, dtype=np.float64)
    m = np.minimum.outer(i, i)
    a = m**2 / np.outer(i, i) * (0.5 * np.add.outer(i, i) ** 2 - m**2)
    return a, m**2


def cor48_b_inverse(u: int) -> np.ndarray:
    """The closed-form tridiagonal B_u^-1, (u, u) float64 (Sec. 4.1, Part 2).

    Diagonal 4i/(4i^2 - 1) for i < u and 1/(2u - 1) at (u, u); -1/(2 min(i,j) + 1) at |i-j| = 1.
    """
    u = _dense_u(u)
    i = np.arange(1, u + 1, dtype=np.float64)
    diag = 4.0 * i / (4.0 * i**2 - 1.0)
    diag[-1] = 1.0 / (2.0 * u - 1.0)
    off = -1.0 / (2.0 * i[:-1] + 1.0)
    return np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)


def _b_cholesky(u: int) -> np.ndarray:
    """The Cholesky factor L of B_u (B = L L'), (u, u): L_ik = sqrt(2k - 1) for k <= i.

    Because b_ij = min(i,j)^2 = sum_{k <= min(i,j)} (2k - 1), B = T D T' with T the
    lower-triangular ones matrix and D = diag(2k - 1). So L = T D^1/2, and
    L^-1 = D^-1/2 (first differences). Used by _whiten/_unwhiten.
    """
    k = np.arange(1, u + 1, dtype=np.float64)
    return np.tril(np.ones((u, u))) * np.sqrt(2.0 * k - 1.0)[None, :]


def _whiten(a: np.ndarray) -> np.ndarray:
    """L^-1 A L^-T for the Cholesky factor L of B, in O(u^2) (L^-1 = D^-1/2 times differences)."""
    d = 1.0 / np.sqrt(2.0 * np.arange(1, a.shape[0] + 1) - 1.0)
    c = np.diff(a, axis=0, prepend=0.0)  # rows: (Delta A)_i = A_i - A_{i-1}
    c = np.diff(c, axis=1, prepend=0.0)  # columns: (Delta A Delta')
    return d[:, None] * c * d[None, :]


def _unwhiten(y: np.ndarray) -> np.ndarray:
    """L^-T y: Delta' (D^-1/2 y), i.e. z_k - z_{k+1} with z = D^-1/2 y (z_{u+1} = 0)."""
    z = y / np.sqrt(2.0 * np.arange(1, y.size + 1) - 1.0)
    return z - np.append(z[1:], 0.0)


def cor48_lambda_max(u: int, method: str = "eigh") -> tuple[float, np.ndarray]:
    """(lambda, x): the top generalized eigenpair A_u x = lambda B_u x (Corollary 4.8).

    lambda is the asymptotic worst-case CR of A_min for s = 0, l = 1 (dimensionless).
    x: (u,) float64, a pmf over output lengths 1..u (sign fixed, sums to 1). It is strictly
    positive in every case tested (min 5.8e-7 at u = 1000), so the max over x > 0 in the paper
    equals lambda. Both methods factor B = L L' with a closed-form Cholesky factor L and work on
    the symmetric C = L^-1 A L^-T:
    - "eigh" (the reference): numpy.linalg.eigh(C), O(u^3), about 0.15 s at u = 1000 on an idle
      machine. Multithreaded LAPACK slows down badly when the cores are shared (seen: 7-9 s
      at u = 1000 on a busy 2-core machine).
    - "power": power iteration on C, O(u^2) per step, a few ms at u = 1000. lambda_2/lambda_1
      is <= 0.29 for every u tested up to 1000, so it converges in about 30 steps. It agrees
      with "eigh" to ~1e-14 and raises RuntimeError if it has not converged after 1000 steps.
    """
    require(method in ("eigh", "power"), "method", "'eigh' or 'power'", method)
    a, _ = cor48_matrices(u)
    c = _whiten(a)
    if method == "eigh":
        w, v = np.linalg.eigh(c)
        value, y = float(w[-1]), v[:, -1]
    else:
        value, y = _power_top(c)
    x = _unwhiten(y)
    x = x / x.sum()  # fixes the sign too: the eigenvector is one-signed, so its sum is not 0
    return value, x


def _power_top(c: np.ndarray, tol: float = 1e-13, max_iter: int = 1000) -> tuple[float, np.ndarray]:
    """Top eigenpair of a symmetric positive definite c, (u, u), by power iteration.

    The start is all ones: the top eigenvector is positive, so it has a nonzero component.
    Since c is positive definite, there is no sign flip between steps.
    """
    y = np.full(c.shape[0], 1.0 / math.sqrt(c.shape[0]))
    for _ in range(max_iter):
        z = c @ y
        z /= np.linalg.norm(z)
        done = np.linalg.norm(z - y) < tol
        y = z
        if done:
            return float(y @ c @ y), y
    raise RuntimeError(f"power iteration did not converge in {max_iter} steps")


def cor48_trace(u: int) -> float:
    """tr(B_u^-1 A_u), computed from the tridiagonal B^-1 in O(u); equals H_u = sum_{i<=u} 1/i.

    The paper's Theorem 4.3 argument: lambda_max <= trace, so CR(A_min) = O(log u).
    """
    u = require_int(u, "u", lo=1)
    i = np.arange(1, u, dtype=np.float64)
    # tr = sum_i (B^-1)_ii a_ii + 2 sum_i (B^-1)_{i,i+1} a_{i,i+1}, with a_ii = i^2 and
    # a_{i,i+1} = i (i^2 + 2i + 1/2)/(i + 1). Summed naively, terms of size u^2 cancel (a
    # relative error of 5e-9 at u = 1e5). So each i < u is grouped as
    # 4i^3/(4i^2-1) - 2 a_{i,i+1}/(2i+1) + 1/2 = (8i^2 + i - 1) / (2 (4i^2 - 1)(i + 1)), and
    # the last diagonal term as u^2/(2u-1) - (u-1)/2 = (3u - 1)/(2 (2u - 1)). All are positive.
    body = np.sum((8.0 * i**2 + i - 1.0) / (2.0 * (4.0 * i**2 - 1.0) * (i + 1.0)))
    return float(body + (3.0 * u - 1.0) / (2.0 * (2.0 * u - 1.0)))


# ---------------------------------------------------------------------------------------------
# Figure 1: CR ~ a log(u + b) + c


def _fit_given_b(us: np.ndarray, values: np.ndarray, b: np.ndarray):
    """Least squares in (a, c) for each shift in b, shape (nb,); returns (a, c, sse), each (nb,)."""
    g = np.log(us[None, :] + b[:, None])
    gc = g - g.mean(axis=1, keepdims=True)
    vc = values - values.mean()
    sxx = np.sum(gc * gc, axis=1)
    sxy = gc @ vc
    a = sxy / sxx
    c = values.mean() - a * g.mean(axis=1)
    sse = np.sum(vc * vc) - sxy * a  # closed form of the residual sum of squares
    return a, c, np.maximum(sse, 0.0)


def fig1_fit(us, values) -> tuple[float, float, float, float]:
    """Fit values ~ a log(u + b) + c (natural log) by least squares; return (a, b, c, R^2).

    us: (m,) the abscissae (e.g. u = l^-1 = alpha^-1), with at least 3 distinct values.
    values: (m,) finite, not all equal. For each shift b > -min(us), (a, c) solve a linear
    least-squares problem. b is found on a 400-point log grid of b + min(us) in
    [1e-9, 1e3] * max(|us|, 1), then refined by golden section. If the best b is on the edge of
    that range (e.g. exactly linear data, b -> infinity), the edge value is returned.
    R^2 = 1 - SSE / SST. See the module docstring: on lambda_max this does not reproduce the
    paper's b.
    """
    us = _reals(us, "us", -math.inf)
    values = _reals(values, "values", -math.inf)
    require(us.ndim == 1 and np.unique(us).size >= 3, "us", "a 1-D array with at least 3 distinct values", us)
    require(values.shape == us.shape, "values", f"an array of the same shape as us {us.shape}", values.shape)
    require(bool(np.ptp(values) > 0), "values", "not all equal", values)
    lo = -float(us.min())
    scale = max(float(np.abs(us).max()), 1.0)
    z = np.linspace(math.log(1e-9 * scale), math.log(1e3 * scale), 400)  # b = lo + exp(z)
    sse = _fit_given_b(us, values, lo + np.exp(z))[2]
    j = int(np.argmin(sse))
    zb = _golden(
        lambda t: float(_fit_given_b(us, values, np.array([lo + math.exp(t)]))[2][0]),
        z[max(j - 1, 0)],
        z[min(j + 1, z.size - 1)],
    )
    b = lo + math.exp(zb)
    a, c, e = (float(v[0]) for v in _fit_given_b(us, values, np.array([b])))
    return a, b, c, 1.0 - e / float(np.sum((values - values.mean()) ** 2))


def _golden(f, lo: float, hi: float, tol: float = 1e-10) -> float:
    """Minimize a unimodal f on [lo, hi] by golden-section search; return the argmin."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    while hi - lo > tol:
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------------------------
# Section 5.1: two-point lengths o in {l, u}; alpha = l/u, t = x_l / x_u


def _alpha(alpha) -> np.ndarray:
    return _reals(alpha, "alpha", 0.0, 1.0, lo_open=True)


def _two_point_den(alpha: np.ndarray, t: np.ndarray) -> np.ndarray:
    """H-SF's TEL in units of u^2 x_u^2 n^2 / 2M: alpha^2 t^2 + 2 alpha^2 t + 1."""
    return alpha**2 * t**2 + 2.0 * alpha**2 * t + 1.0


def thm51_cr(alpha, t):
    """Theorem 5.1: CR(A_min) = 1 + alpha (1 - alpha^2) t / (alpha^2 t^2 + 2 alpha^2 t + 1).

    alpha = l/u in (0, 1]; t = x_l / x_u >= 0 (broadcastable; float for scalars). For s = 0
    this equals lemma46_cr of the two-point pmf exactly, for all integers 1 <= l < u.
    """
    alpha, t = _alpha(alpha), _reals(t, "t", 0.0)
    return _out(1.0 + alpha * (1.0 - alpha**2) * t / _two_point_den(alpha, t))


def thm51_bound(alpha):
    """Theorem 5.1's bound (3 - alpha)/2 = sup_t thm51_cr, reached at t = 1/alpha."""
    return _out((3.0 - _alpha(alpha)) / 2.0)


def thm52_cr(alpha, t):
    """Theorem 5.2: CR(A_l) = 1 + (alpha^2 t + 2 alpha^2) / (alpha^2 t^2 + 2 alpha^2 t + 1).

    alpha = l/u in (0, 1]; t = x_l / x_u >= 0 (broadcastable; float for scalars).
    """
    alpha, t = _alpha(alpha), _reals(t, "t", 0.0)
    return _out(1.0 + (alpha**2 * t + 2.0 * alpha**2) / _two_point_den(alpha, t))


def thm52_bound(alpha):
    """Theorem 5.2's bound: 1 + alpha/(2(1 - alpha)) for alpha <= 1/2, else 1 + 2 alpha^2.

    It is tight: the sup over t of thm52_cr is reached at t = 1/alpha - 2 (alpha < 1/2) or
    t = 0 (alpha >= 1/2).
    """
    alpha = _alpha(alpha)
    low = np.minimum(alpha, 0.5)  # keeps the unused branch finite at alpha = 1
    return _out(np.where(alpha <= 0.5, 1.0 + low / (2.0 * (1.0 - low)), 1.0 + 2.0 * alpha**2))


# ---------------------------------------------------------------------------------------------
# Sections 5.2-5.3: geometric G(p) and linearly weighted geometric LG(p) on 1..u


def _p_u(p, u) -> tuple[float, np.ndarray]:
    p = require_float(p, "p")
    require(0.0 < p < 1.0, "p", "a finite number in (0, 1)", p)
    k = _lengths(1, require_int(u, "u", lo=1))
    return 1.0 - p, k


def geometric_pmf(p: float, u: int) -> np.ndarray:
    """G(p) truncated to 1..u: P(o = k) proportional to p q^(k-1), q = 1 - p; (u,) float64.

    p in (0, 1), u >= 1 (tokens). The result is renormalized to sum to 1 on 1..u.
    """
    q, k = _p_u(p, u)
    w = q ** (k - 1.0)  # the factor p cancels on renormalization
    return w / w.sum()


def lg_pmf(p: float, u: int) -> np.ndarray:
    """LG(p) truncated to 1..u: P(o = k) proportional to k p^2 q^(k-1); (u,) float64, sums to 1."""
    q, k = _p_u(p, u)
    w = k * q ** (k - 1.0)
    return w / w.sum()


def thm53_cr(q):
    """Theorem 5.3: CR(A_min) under LG(1 - q) as u, M -> infinity (s = 0, l = 1).

    (1+q)^2 (1+3q+6q^2+3q^3+q^4) / (1+2q+11q^2+8q^3+11q^4+2q^5+q^6), for q = 1 - p in [0, 1]
    (broadcastable). It increases with q, from 1 at q = 0 to THM53_SUP = 14/9 at q = 1 (the
    u -> infinity limit, included as the formula's value).
    """
    q = _reals(q, "q", 0.0, 1.0)
    num = (1 + q) ** 2 * (1 + 3 * q + 6 * q**2 + 3 * q**3 + q**4)
    den = 1 + 2 * q + 11 * q**2 + 8 * q**3 + 11 * q**4 + 2 * q**5 + q**6
    return _out(num / den)


# ---------------------------------------------------------------------------------------------
# Section 3: A_max (Theorem 3.3 upper bound, Theorem 3.4 lower-bound construction)


def thm33_bound(alpha):
    """Theorem 3.3: CR(A_max) <= alpha^-1 (1 + alpha^-1)/2 (+ O(1/M)); alpha in (0, 1]."""
    alpha = _alpha(alpha)
    return _out((1.0 + 1.0 / alpha) / (2.0 * alpha))


def thm34_printed(alpha):
    """Theorem 3.4 as printed: alpha^-1 (1 + alpha^-1/2)/2. Its construction does not attain it."""
    alpha = _alpha(alpha)
    return _out((1.0 + alpha**-0.5) / (2.0 * alpha))


def thm34_ratio(alpha, r):
    """Theorem 3.4's construction, large a and b: (1/alpha)(r + alpha)(r + 1)/(r^2 + 2 alpha r + 1).

    alpha = l/u in (0, 1]; r = a/b >= 0 (the ratio of short to long job batches).
    Derivation: thm34_tels gives u(a+b)(au + bl)/2 over (l/2)(u a^2 + 2 l a b + u b^2) to
    leading order. Divide by l u b^2 / 2. Broadcastable; float for scalars.
    """
    alpha, r = _alpha(alpha), _reals(r, "r", 0.0)
    return _out((r + alpha) * (r + 1.0) / (alpha * (r**2 + 2.0 * alpha * r + 1.0)))


def thm34_max(alpha):
    """(r*, ratio*): the max over r > 0 of thm34_ratio, in closed form.

    d/dr of (r+alpha)(r+1)/(r^2+2 alpha r+1) has the sign of (1-alpha)(-r^2 + 2r + 1 + 2 alpha).
    So r* = 1 + w with w = sqrt(2 + 2 alpha), and, using r*^2 = 2r* + 1 + 2 alpha,
    ratio* = (4(1 + alpha) + (3 + alpha) w) / (2 alpha (1 + alpha)(2 + w)), which tends to
    (1 + sqrt 2)/(2 alpha) ~ 1.207/alpha as alpha -> 0. At alpha = 1 every r gives 1.
    Broadcastable; floats for a scalar alpha.
    """
    alpha = _alpha(alpha)
    w = np.sqrt(2.0 + 2.0 * alpha)
    ratio = (4.0 * (1.0 + alpha) + (3.0 + alpha) * w) / (2.0 * alpha * (1.0 + alpha) * (2.0 + w))
    return _out(1.0 + w), _out(ratio)


def thm34_tels(l: int, u: int, a: int, b: int) -> tuple[float, float]:
    """The proof's finite TELs (E[TEL(A_max)], TEL(H-SF)), in steps, for s = 0 and M = l u.

    Inputs are integers: l, u are the two output lengths (1 <= l <= u). There are N_l = a u
    jobs of length l and N_u = b l of length u (a, b >= 0, a + b >= 1).
    - E[TEL(A_max)] = (a u + b l) * u (a + b) / 2. A_max runs l = M/u jobs at a time, so it
      acts like l parallel workers taking jobs in random order. Each job is charged half the
      makespan u (a + b). This is the proof's leading-order value, not an exact expectation.
    - TEL(H-SF) = u l a(a+1)/2 + a b l^2 + u l b(b+1)/2. This is exact in the step model:
      shorts run in a batches of u, then longs in b batches of l.
    The ratio tends to thm34_ratio(l/u, a/b) as a, b -> infinity.
    """
    l = require_int(l, "l", lo=1)
    u = require_int(u, "u", lo=l)
    a = require_int(a, "a", lo=0)
    b = require_int(b, "b", lo=0)
    require(a + b >= 1, "a + b", "an integer >= 1 (at least one job)", a + b)
    amax = (a * u + b * l) * u * (a + b) / 2  # Python ints: exact until the final division
    hsf = u * l * a * (a + 1) // 2 + a * b * l * l + u * l * b * (b + 1) // 2
    return float(amax), float(hsf)
