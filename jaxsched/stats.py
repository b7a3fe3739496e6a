"""Statistics shared by every engine's drivers: confidence intervals and least squares.

All host-side float64 NumPy: `mean_ci` (mean, std, 95% Student-t half-width), `ols` (least
squares with per-coefficient 95% CIs) and `loglog_slope` (the slope of log y against log x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30; the normal 1.96 beyond.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t975(df: int) -> float:
    """Two-sided 95% Student-t quantile for df degrees of freedom (>= 1)."""
    return _T975[df - 1] if df <= len(_T975) else 1.96


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
