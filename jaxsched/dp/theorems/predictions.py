"""Analytic predictions of the BF-IO paper's Theorems 1-3 in the `theory` semantics.

Pure functions of the model parameters, no simulation: e_G (the expected maximum of G standard
normals), the per-slot snapshot variance of the post-admission load per theorem, FCFS's
predicted average imbalance, and the fitted growth of the improvement ratio FCFS / BF-IO.
Lengths and loads are in tokens; least squares comes from `jaxsched.stats`.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from ...stats import ols


@functools.lru_cache(maxsize=None)
def expected_max_normal(G: int, *, n: int = 40001, lim: float = 12.0) -> float:
    """e_G = E[max of G iid standard normals] = int x G phi(x) Phi(x)^(G-1) dx (trapezoid rule).

    The grid (n points on [-lim, lim]) gives about 1e-9 absolute accuracy for G <= 1e5.
    """
    if G < 1:
        raise ValueError(f"G must be >= 1, got {G}")
    x = np.linspace(-lim, lim, n)
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    Phi = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x])
    f = x * G * phi * Phi ** (G - 1)
    return float(np.sum((f[1:] + f[:-1]) * np.diff(x)) / 2)


def uniform_prompt_var(s_max: int) -> float:
    """Variance of s ~ Uniform{1, ..., s_max}: (s_max^2 - 1) / 12 (tokens^2)."""
    return (s_max * s_max - 1) / 12.0


def drift_moments(drift: tuple[int, int]) -> tuple[float, float]:
    """(mean, variance) of a drift uniform on {lo, ..., hi} (tokens, tokens^2)."""
    lo, hi = drift
    n = hi - lo + 1
    return (lo + hi) / 2.0, (n * n - 1) / 12.0


def snapshot_var(s_max: int, p: float | None, drift: tuple[int, int] = (1, 1)) -> float:
    """Per-slot snapshot variance sigma^2 of the post-admission load (tokens^2).

    Theorem 1 (p None: equal outputs, all slots of a round have the same age): sigma_s^2.
    Theorems 2/3: a slot's load is U = s + H(A), with A ~ Geo(p) - 1 its age
    (P(A = a) = p q^a, q = 1 - p) and H(a) the sum of the last a drifts. The drift path is
    common to all slots, so the across-worker spread is governed by the variance of U *given*
    the path, averaged over paths:
      E[Var(U | path)] = sigma_s^2 + Var(H(A)) - Var(E[H(A) | path])
                       = sigma_s^2 + (q/p) v + mu^2 q / p^2 - v q^2 / (1 - q^2),
    for drifts with mean mu and variance v. With the constant drift 1 this is the notes'
    sigma_snap^2 = sigma_s^2 + (1 - p) / p^2 (Theorem 2, (C15)); with drift 0 it is sigma_s^2.
    """
    var_s = uniform_prompt_var(s_max)
    if p is None:
        return var_s
    q = 1.0 - p
    mu, v = drift_moments(drift)
    return var_s + (q / p) * v + mu * mu * q / (p * p) - v * q * q / (1.0 - q * q)


def snapshot_sigma(s_max: int, p: float | None, drift: tuple[int, int] = (1, 1)) -> float:
    """Per-slot snapshot standard deviation sigma = sqrt(`snapshot_var`) (tokens)."""
    return math.sqrt(snapshot_var(s_max, p, drift))


def fcfs_prediction(G: int, B: int, sigma: float) -> float:
    """Predicted FCFS average imbalance G * sigma * sqrt(B) * e_G (tokens).

    Worker loads are sums of B iid snapshots: mean mu B, std sigma sqrt(B); the imbalance
    sum_g (max - L_g) = G (max - mean) has expectation G sigma sqrt(B) e_G (Gaussian limit).
    """
    return G * sigma * math.sqrt(B) * expected_max_normal(G)


def ratio_slopes(G: Sequence[int], B: Sequence[int], ratio: Sequence[float]) -> dict[str, tuple]:
    """Slopes of log(ratio) against log B and against log(log G), fitted jointly.

    G, B, ratio: one entry per point (length n). Only variables that take at least two values
    enter the fit. Returns {"B": (slope, ci95, n), "logG": (slope, ci95, n)} (nan where a
    variable does not vary); the theorems' Omega(sqrt(B log G)) means 1/2 for both.
    """
    G, B, r = (np.asarray(a, np.float64) for a in (G, B, ratio))
    cols, names = [np.ones_like(r)], []
    for name, v in (("B", np.log(B)), ("logG", np.log(np.log(G)))):
        if np.unique(v).size >= 2:
            cols.append(v)
            names.append(name)
    fit = ols(np.stack(cols, 1), np.log(r))
    out = {"B": (math.nan, math.nan, len(r)), "logG": (math.nan, math.nan, len(r))}
    for j, name in enumerate(names, 1):
        out[name] = (float(fit.coef[j]), float(fit.ci95[j]), len(r))
    return out
