"""jaxsched.stats: the Student-t quantile behind every 95% CI, and the CIs built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxsched.errors import ConfigError
from jaxsched.stats import mean_ci, ols, t975


def test_t975_matches_printed_tables():
    # Printed two-sided 95% tables give these to three decimals.
    assert round(t975(1), 3) == 12.706
    assert round(t975(8), 3) == 2.306
    assert round(t975(30), 3) == 2.042
    # Beyond df = 30 the quantile is not the normal 1.96: at 64 seeds it is 2% larger.
    assert round(t975(63), 3) == 1.998
    assert round(t975(120), 3) == 1.980


def test_t975_falls_to_the_normal_quantile():
    values = [t975(df) for df in range(1, 200)]
    assert all(a > b for a, b in zip(values, values[1:]))  # strictly decreasing in df
    assert t975(10**7) == pytest.approx(1.959964, abs=1e-5)


def test_t975_takes_numpy_integers_and_refuses_others():
    assert t975(np.int64(5)) == t975(5)
    for bad in (0, -3, 5.0, True, "5"):
        with pytest.raises(ConfigError, match="df must be an integer >= 1"):
            t975(bad)


def test_mean_ci_half_width_uses_t_with_n_minus_1_dof():
    rng = np.random.default_rng(0)
    x = rng.normal(size=64)
    mean, std, half, n = mean_ci(x)
    assert n == 64 and mean == pytest.approx(x.mean()) and std == pytest.approx(x.std(ddof=1))
    assert half == pytest.approx(t975(63) * x.std(ddof=1) / 8.0)
    assert half > 1.96 * x.std(ddof=1) / 8.0
    assert math.isnan(mean_ci([1.0])[2])


def test_ols_ci_uses_t_with_n_minus_k_dof():
    rng = np.random.default_rng(1)
    X = np.stack([np.ones(40), rng.normal(size=40)], 1)
    y = X @ np.array([1.0, 2.0]) + rng.normal(size=40)
    fit = ols(X, y)
    assert np.allclose(fit.ci95, t975(38) * fit.se)
