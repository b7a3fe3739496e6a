"""The rounded-and-clipped length marginals of paper 002's synthetic experiment (EC.4.2): each
sample's distribution against the exact law, computed in float64 with scipy."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsched.errors import ConfigError
from jaxsched.workload import (
    Binomial,
    Independent,
    Mixture,
    RoundedExponential,
    RoundedLogNormal,
    RoundedNormal,
    UniformInt,
)

N = 400_000
K = np.arange(0, 52)


def _rounded_pmf(dist, low: int, high: int) -> np.ndarray:
    """P(clip(floor(x + 0.5), low, high) = k) for k in K."""
    p = dist.cdf(K + 0.5) - dist.cdf(K - 0.5)
    p[low] += dist.cdf(low - 0.5)
    p[high] += dist.sf(high + 0.5)
    p[:low] = 0
    p[high + 1 :] = 0
    return p


def _tv(marginal, pmf: np.ndarray) -> float:
    x = np.asarray(marginal.sample(np.uint32(7), jnp.arange(N), 2))
    freq = np.bincount(x, minlength=K.size)[: K.size] / N
    assert x.min() >= 1 and x.max() <= 50
    return 0.5 * np.abs(freq - pmf).sum()


def _lognormal_pmf(median, sigma):
    return _rounded_pmf(stats.lognorm(s=sigma, scale=median), 1, 10**6)


@pytest.mark.parametrize(
    "marginal, pmf",
    [
        (RoundedNormal(25, 8.33, 1, 50), _rounded_pmf(stats.norm(25, 8.33), 1, 50)),
        (RoundedExponential(5.0, 1, 50), _rounded_pmf(stats.expon(scale=5.0), 1, 50)),
        (Binomial(49, 0.5, 1), np.r_[0.0, stats.binom(49, 0.5).pmf(K[:-1])]),
    ],
)
def test_marginals_follow_their_laws(marginal, pmf):
    # Sampling noise gives a total variation near 0.005 here; a rounding off by half a token or
    # a wrong parameter gives several times more.
    assert abs(pmf.sum() - 1) < 1e-9
    assert _tv(marginal, pmf) < 0.012


def test_mixed_prompts_of_ec_4_2():
    # 80% Exp(scale 10), 20% LogNormal(median 40, sigma 0.25); values above 50 redrawn U(40, 50).
    m = Mixture(
        (RoundedExponential(10.0, 1, 10**6), RoundedLogNormal(40.0, 0.25, 1, 10**6)),
        (0.8, 0.2),
        cap=50,
        redraw=UniformInt(40, 50),
    )
    full = np.zeros(10**6 + 2)
    e = stats.expon(scale=10.0)
    ks = np.arange(1, 400)
    full[ks] += 0.8 * (e.cdf(ks + 0.5) - e.cdf(ks - 0.5))
    full[1] += 0.8 * e.cdf(0.5)
    ln = stats.lognorm(s=0.25, scale=40.0)
    full[ks] += 0.2 * (ln.cdf(ks + 0.5) - ln.cdf(ks - 0.5))
    full[1] += 0.2 * ln.cdf(0.5)
    over = 1.0 - full[:51].sum()
    pmf = full[:52].copy()
    pmf[51] = 0
    pmf[40:51] += over / 11
    assert _tv(m, pmf) < 0.012 and m.upper == 50


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: RoundedNormal(25, -1.0), "RoundedNormal.std"),
        (lambda: RoundedExponential(0.0), "RoundedExponential.scale"),
        (lambda: RoundedLogNormal(40.0, 0.25, 10, 5), "RoundedLogNormal.high"),
        (lambda: Binomial(0, 0.5), "Binomial.trials"),
        (lambda: Binomial(10, 1.5), "Binomial.p"),
        (lambda: Mixture((UniformInt(1, 5),), (0.5,)), "Mixture.weights"),
        (lambda: Mixture((UniformInt(1, 5),), (1.0,), cap=4), "Mixture.redraw"),
        (lambda: Mixture((UniformInt(1, 5),), (1.0,), cap=4, redraw=UniformInt(1, 9)), "Mixture.redraw"),
        (lambda: Mixture(("x",), (1.0,)), "Mixture.components"),
    ],
)
def test_bad_marginals_are_one_clear_error(make, needle):
    with pytest.raises(ConfigError, match=needle):
        make()


def test_independent_accepts_the_new_marginals():
    w = Independent(RoundedNormal(25, 8.33, 1, 50), Binomial(49, 0.5, 1))
    assert w.max_prompt == 50 and w.max_output == 50
    s, o = w.sample(np.uint32(1), jnp.arange(10))
    assert s.dtype == jnp.int32 and o.dtype == jnp.int32
