"""Statistics shared by every engine's drivers: confidence intervals and least squares.

All host-side float64 NumPy: `mean_ci` (mean, std, 95% Student-t half-width), `ols` (least
squares with per-coefficient 95% CIs) and `loglog_slope` (the slope of log y against log x).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import require_int


def t975(df: int) -> float:
    """Two-sided 95% Student-t quantile t_{0.975, df} for df >= 1 degrees of freedom (unitless).

    SciPy's quantile, exact for every df (a table would stop at some df and jump to the normal
    1.96, understating the half-width at df = 31..~100 by up to 4%)."""
    return _t975(require_int(df, "df", lo=1))


@functools.cache
def _t975(df: int) -> float:
    """`t975` of a checked df, cached: every `mean_ci` of a sweep's columns asks for the same few.
    SciPy is imported here, on first use, so that importing this module stays cheap."""
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def mean_ci(values: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean, std, half-width of the 95% CI of the mean, n); half-width is nan for n = 1."""
    x = np.asarray(values, np.float64)
    n = x.size
    mean = float(x.mean()) if n else math.nan
    std = float(x.std(ddof=1)) if n > 1 else math.nan
    half = t975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan
    return mean, std, half, n


@dataclass(frozen=True)
class Fit:
    """Least-squares fit y = X coef: coefficients, standard errors and 95% CI half-widths."""

    coef: np.ndarray
    se: np.ndarray
    ci95: np.ndarray
    n: int


def ols(X: np.ndarray, y: np.ndarray) -> Fit:
    """Ordinary least squares with a 95% CI per coefficient (Student t, n - k dof).

    X float[n, k] (include a column of ones for an intercept); y float[n]. With n <= k the
    standard errors and CIs are nan.
    """
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    n, k = X.shape
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    if n <= k:
        nan = np.full(k, np.nan)
        return Fit(coef, nan, nan, n)
    resid = y - X @ coef
    s2 = float(resid @ resid) / (n - k)
    se = np.sqrt(np.maximum(np.diag(s2 * np.linalg.pinv(X.T @ X)), 0.0))
    return Fit(coef, se, t975(n - k) * se, n)


def loglog_slope(T: Sequence[float], y: Sequence[float]) -> tuple[float, float, int]:
    """Slope of log y against log T by OLS: (slope, 95% CI half-width, points used).
    Non-positive y are left out (a log needs y > 0); CI is nan with fewer than 3 points."""
    T, y = np.asarray(T, np.float64), np.asarray(y, np.float64)
    ok = y > 0
    if ok.sum() < 2:
        return math.nan, math.nan, int(ok.sum())
    X = np.stack([np.ones(ok.sum()), np.log(T[ok])], 1)
    fit = ols(X, np.log(y[ok]))
    return float(fit.coef[1]), float(fit.ci95[1]), int(ok.sum())
