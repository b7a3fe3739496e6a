"""Request-length laws: built-in distributions and their marginals.

A length law maps (seed, request ids) to integer (prompt, output) lengths, in JAX, as a pure
function: `sample(seed, ids) -> (prompt int32[n], output int32[n])`, and states hard upper
bounds on what it can produce (`max_prompt`, `max_output`), which the engines use to prove,
before compiling, that no load can overflow int32.

- `BivariateNormal`: the BF-IO paper's synthetic generator (section 6.1): (prompt, output) bivariate
  normal, means (3200, 1200), std (2600, 700), correlation -0.1, pairs with a negative value
  rejected, then rounded (and raised to at least 1).
- `BurstGPTLike`: a parametric stand-in for the BurstGPT trace matching the statistics in
  ../shared/data/README.md (prompt mean 362.9, median 217, max 14117; output mean 57.0, median 7,
  max 3206; corr 0.367). Prompt: lognormal with median 217; output: 7 with probability 0.457
  (the trace's mode), else lognormal, correlated with the prompt through a Gaussian copula.
  The default workload of `jaxsched run`.
- `Independent(prompt, output)` from marginals: `Constant`, `UniformInt`, `Geometric`, and the
  rounded-and-clipped `RoundedNormal`, `RoundedExponential`, `RoundedLogNormal`, `Binomial`
  and `Mixture` of paper 002's synthetic experiment (EC.4.2); paper 003's `TwoPoint`,
  `TruncGeometric` G(p) and `LinearGeometric` LG(p), which also give their `pmf()`; paper
  004's `Poisson` token sizes (clipped at 1).
- `JointMixture(laws, weights)`: each request's (prompt, output) pair from one of several
  whole laws (paper 002's 80% LMSYS-like / 20% arXiv-like real-data mix).
- `Finite(base, n)`: the first n requests of an unbounded law (a run that drains).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import rng
from ..errors import ConfigError, require, require_float, require_int

INT32_MAX = 2**31 - 1
# Largest request length (tokens) of any workload: lengths and their sums stay exact in
# float32 and far below int32.
MAX_LENGTH = 2**24


# --------------------------------------------------------------------------- marginals


@dataclass(frozen=True)
class Constant:
    """Every request has length `value` tokens."""

    value: int

    def __post_init__(self):
        require_int(self.value, "Constant.value", lo=1, hi=2**24)

    @property
    def lower(self) -> int:
        return self.value

    @property
    def upper(self) -> int:
        return self.value

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        return jnp.full(jnp.shape(ids), self.value, jnp.int32)


@dataclass(frozen=True)
class UniformInt:
    """Uniform integer length on {low, ..., high} tokens."""

    low: int
    high: int

    def __post_init__(self):
        require_int(self.low, "UniformInt.low", lo=1, hi=2**24)
        require_int(self.high, "UniformInt.high", lo=self.low, hi=2**24)

    @property
    def lower(self) -> int:
        return self.low

    @property
    def upper(self) -> int:
        return self.high

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        u = rng.uniform(seed, ids, stream)
        n = self.high - self.low + 1
        return self.low + jnp.minimum((u * n).astype(jnp.int32), n - 1)


@dataclass(frozen=True)
class Geometric:
    """Geometric length on {1, 2, ...} with success probability p (mean 1/p).

    Truncated at `cap` (default: the length whose tail probability is below 1e-12), which the
    overflow proofs need; the truncation is invisible at any realistic sample size.
    """

    p: float
    cap: int | None = None

    def __post_init__(self):
        require_float(self.p, "Geometric.p", lo=0.0, hi=1.0, lo_open=True)
        if self.cap is not None:
            require_int(self.cap, "Geometric.cap", lo=1, hi=2**24)

    @property
    def upper(self) -> int:
        if self.cap is not None:
            return self.cap
        if self.p >= 1.0:
            return 1
        return int(min(2**24, math.ceil(math.log(1e-12) / math.log1p(-self.p)) + 1))

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        if self.p >= 1.0:
            return jnp.ones(jnp.shape(ids), jnp.int32)
        u = rng.uniform(seed, ids, stream)
        # Inverse CDF: P(X > n) = (1-p)^n, so X = 1 + floor(log(1-u) / log(1-p)).
        x = 1.0 + jnp.floor(jnp.log1p(-u) / np.float32(math.log1p(-self.p)))
        return jnp.clip(x, 1, self.upper).astype(jnp.int32)


def _rounded(x: jnp.ndarray, low: int, high: int) -> jnp.ndarray:
    """A continuous draw rounded to the nearest integer (halves up), then clipped to
    [low, high] (paper 002, EC.4.2: round, then clip)."""
    return jnp.clip(jnp.floor(x + 0.5), low, high).astype(jnp.int32)


def _check_range(low: int, high: int, cls: str) -> None:
    require_int(low, f"{cls}.low", lo=1, hi=2**24)
    require_int(high, f"{cls}.high", lo=low, hi=2**24)


@dataclass(frozen=True)
class RoundedNormal:
    """Normal(mean, std) rounded to an integer and clipped to [low, high] tokens."""

    mean: float
    std: float
    low: int = 1
    high: int = 2**24

    def __post_init__(self):
        require_float(self.mean, "RoundedNormal.mean", lo=-(2.0**24), hi=2.0**24)
        require_float(self.std, "RoundedNormal.std", lo=0.0, hi=2.0**24)
        _check_range(self.low, self.high, "RoundedNormal")

    @property
    def upper(self) -> int:
        return self.high

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        z, _ = rng.normal_pair(seed, ids, stream)
        return _rounded(np.float32(self.mean) + np.float32(self.std) * z, self.low, self.high)


@dataclass(frozen=True)
class RoundedExponential:
    """Exponential with mean `scale` rounded to an integer and clipped to [low, high] tokens."""

    scale: float
    low: int = 1
    high: int = 2**24

    def __post_init__(self):
        require_float(self.scale, "RoundedExponential.scale", lo=0.0, hi=2.0**20, lo_open=True)
        _check_range(self.low, self.high, "RoundedExponential")

    @property
    def upper(self) -> int:
        return self.high

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        u = rng.uniform(seed, ids, stream)
        return _rounded(-np.float32(self.scale) * jnp.log1p(-u), self.low, self.high)


@dataclass(frozen=True)
class RoundedLogNormal:
    """LogNormal(log median, sigma) rounded to an integer and clipped to [low, high] tokens."""

    median: float
    sigma: float
    low: int = 1
    high: int = 2**24

    def __post_init__(self):
        require_float(self.median, "RoundedLogNormal.median", lo=0.0, hi=2.0**24, lo_open=True)
        require_float(self.sigma, "RoundedLogNormal.sigma", lo=0.0, hi=10.0)
        _check_range(self.low, self.high, "RoundedLogNormal")

    @property
    def upper(self) -> int:
        return self.high

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        z, _ = rng.normal_pair(seed, ids, stream)
        return _rounded(np.float32(self.median) * jnp.exp(np.float32(self.sigma) * z), self.low, self.high)


@dataclass(frozen=True)
class Binomial:
    """shift + Binomial(trials, p) tokens, by the inverse of its CDF (a table of trials + 1
    float32 entries computed in float64)."""

    trials: int
    p: float
    shift: int = 1

    def __post_init__(self):
        require_int(self.trials, "Binomial.trials", lo=1, hi=4096)
        require_float(self.p, "Binomial.p", lo=0.0, hi=1.0)
        require_int(self.shift, "Binomial.shift", lo=1, hi=2**24 - self.trials)

    @property
    def upper(self) -> int:
        return self.shift + self.trials

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        k = np.arange(self.trials + 1)
        pmf = (
            np.array([math.comb(self.trials, int(j)) for j in k], np.float64)
            * self.p**k
            * (1 - self.p) ** (self.trials - k)
        )
        cdf = jnp.asarray(np.cumsum(pmf)[:-1], jnp.float32)  # P(X <= j), j < trials
        u = rng.uniform(seed, ids, stream)
        return self.shift + jnp.searchsorted(cdf, u, side="right").astype(jnp.int32)


def _table_sample(pmf: np.ndarray, low: int, seed, ids, stream: int) -> jnp.ndarray:
    """low + k with probability pmf[k] (float64, normalized), by inverting its CDF (a float32
    table computed in float64)."""
    cdf = jnp.asarray(np.cumsum(pmf)[:-1], jnp.float32)
    u = rng.uniform(seed, ids, stream)
    return low + jnp.searchsorted(cdf, u, side="right").astype(jnp.int32)


@dataclass(frozen=True)
class TwoPoint:
    """`low` tokens with probability p_low, else `high` (paper 003, section 5.1: o in {l, u})."""

    low: int
    high: int
    p_low: float

    def __post_init__(self):
        require_int(self.low, "TwoPoint.low", lo=1, hi=2**24)
        require_int(self.high, "TwoPoint.high", lo=self.low, hi=2**24)
        require_float(self.p_low, "TwoPoint.p_low", lo=0.0, hi=1.0)

    @property
    def lower(self) -> int:
        return self.low

    @property
    def upper(self) -> int:
        return self.high

    def pmf(self) -> np.ndarray:
        """float64[high - low + 1]: P(o = low + k)."""
        x = np.zeros(self.high - self.low + 1)
        x[0] += self.p_low
        x[-1] += 1.0 - self.p_low
        return x

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        u = rng.uniform(seed, ids, stream)
        return jnp.where(u < np.float32(self.p_low), self.low, self.high).astype(jnp.int32)


@dataclass(frozen=True)
class _GeometricFamily:
    """A length law on {1, ..., high} with parameter p, given by its renormalized pmf
    (subclasses define `_weights(k)`), sampled by inverting the CDF."""

    p: float
    high: int

    def __post_init__(self):
        cls = type(self).__name__
        require_float(self.p, f"{cls}.p", lo=0.0, hi=1.0, lo_open=True)
        require_int(self.high, f"{cls}.high", lo=1, hi=2**16)

    lower = 1

    @property
    def upper(self) -> int:
        return self.high

    def pmf(self) -> np.ndarray:
        """float64[high]: P(o = 1 + k)."""
        x = self._weights(np.arange(1, self.high + 1))
        return x / x.sum()

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        return _table_sample(self.pmf(), 1, seed, ids, stream)


@dataclass(frozen=True)
class TruncGeometric(_GeometricFamily):
    """Geometric G(p) on {1, ..., high}: P(o = k) proportional to p q^(k-1), q = 1 - p,
    renormalized (paper 003, section 5.2). Unlike `Geometric`'s clip, truncation here
    conditions on o <= high, the law whose competitive ratio Figure 3 plots."""

    def _weights(self, k: np.ndarray) -> np.ndarray:
        return self.p * (1.0 - self.p) ** (k - 1)


@dataclass(frozen=True)
class LinearGeometric(_GeometricFamily):
    """Linearly weighted geometric LG(p) on {1, ..., high}: P(o = k) proportional to
    k p^2 q^(k-1), renormalized (paper 003, Theorem 5.3)."""

    def _weights(self, k: np.ndarray) -> np.ndarray:
        return k * self.p**2 * (1.0 - self.p) ** (k - 1)


@dataclass(frozen=True)
class Mixture:
    """With probability weights[k], a draw of components[k]; a draw above `cap` is replaced by
    a draw of `redraw` (paper 002, EC.4.2's "Mixed" prompts: values above 50 redrawn from
    U(40, 50)). Each component and the choice use their own random streams."""

    components: tuple
    weights: tuple
    cap: int | None = None
    redraw: Any = None

    def __post_init__(self):
        require(
            isinstance(self.components, tuple)
            and len(self.components) >= 1
            and all(isinstance(c, _SIMPLE) for c in self.components),
            "Mixture.components",
            "a non-empty tuple of length marginals",
            self.components,
        )
        require(
            isinstance(self.weights, tuple) and len(self.weights) == len(self.components),
            "Mixture.weights",
            "a tuple with one weight per component",
            self.weights,
        )
        for w in self.weights:
            require_float(w, "Mixture.weights", lo=0.0, hi=1.0)
        require(abs(sum(self.weights) - 1.0) < 1e-9, "Mixture.weights", "weights summing to 1", self.weights)
        require(
            (self.cap is None) == (self.redraw is None),
            "Mixture.redraw",
            "given together with cap (or neither)",
            self.redraw,
        )
        if self.cap is not None:
            require_int(self.cap, "Mixture.cap", lo=1, hi=2**24)
            require(
                isinstance(self.redraw, _SIMPLE) and self.redraw.upper <= self.cap,
                "Mixture.redraw",
                f"a length marginal whose values stay <= cap ({self.cap})",
                self.redraw,
            )

    @property
    def upper(self) -> int:
        top = max(c.upper for c in self.components)
        return top if self.cap is None else min(top, self.cap)

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        u = rng.uniform(seed, ids, stream, sub=63)
        edges = np.cumsum(np.asarray(self.weights, np.float64))[:-1].astype(np.float32)
        which = jnp.searchsorted(jnp.asarray(edges), u, side="right")
        draws = jnp.stack([c.sample(seed, ids, 1000 * (k + 1) + stream) for k, c in enumerate(self.components)])
        x = jnp.take_along_axis(draws, which[None].astype(jnp.int32), axis=0)[0]
        if self.cap is not None:
            x = jnp.where(x > self.cap, self.redraw.sample(seed, ids, 9000 + stream), x)
        return x.astype(jnp.int32)


@dataclass(frozen=True)
class Poisson:
    """max(1, Poisson(mean)) tokens (paper 004's "Poisson token sizes", clipped at 1 since a
    request has at least one token: notes/004.md section 6), by the inverse of its CDF (a
    float32 table computed in float64), truncated where the upper tail is below 1e-12."""

    mean: float

    def __post_init__(self):
        require_float(self.mean, "Poisson.mean", lo=0.0, hi=2.0**20, lo_open=True)

    @property
    def lower(self) -> int:
        return 1

    @property
    def upper(self) -> int:
        return int(math.ceil(self.mean + 8.0 * math.sqrt(self.mean) + 30.0))

    def pmf(self) -> np.ndarray:
        """float64[upper]: P(X = 1 + k), the mass of 0 moved to 1, renormalized after the cut."""
        k = np.arange(0, self.upper + 1, dtype=np.float64)
        logp = k * math.log(self.mean) - self.mean - np.array([math.lgamma(x + 1.0) for x in k])
        p = np.exp(logp)
        p[1] += p[0]
        p = p[1:]
        return p / p.sum()

    def sample(self, seed, ids, stream: int) -> jnp.ndarray:
        return _table_sample(self.pmf(), 1, seed, ids, stream)


_SIMPLE = (
    Constant,
    UniformInt,
    Geometric,
    RoundedNormal,
    RoundedExponential,
    RoundedLogNormal,
    Binomial,
    TwoPoint,
    TruncGeometric,
    LinearGeometric,
    Poisson,
)
Marginal = (
    Constant
    | UniformInt
    | Geometric
    | RoundedNormal
    | RoundedExponential
    | RoundedLogNormal
    | Binomial
    | TwoPoint
    | TruncGeometric
    | LinearGeometric
    | Mixture
    | Poisson
)


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Independent:
    """Independent prompt and output marginals."""

    prompt: Marginal = Constant(100)
    output: Marginal = Geometric(0.1)
    name: str = "independent"

    def __post_init__(self):
        for f in ("prompt", "output"):
            m = getattr(self, f)
            require(
                isinstance(m, (*_SIMPLE, Mixture)),
                f"Independent.{f}",
                "a length marginal: Constant, UniformInt, Geometric, RoundedNormal, "
                "RoundedExponential, RoundedLogNormal, Binomial, TwoPoint, TruncGeometric, "
                "LinearGeometric, Poisson or Mixture",
                m,
            )
        require(isinstance(self.name, str), "Independent.name", "a string", self.name)

    @property
    def max_prompt(self) -> int:
        return self.prompt.upper

    @property
    def max_output(self) -> int:
        return self.output.upper

    num_requests = None

    def sample(self, seed, ids):
        return (self.prompt.sample(seed, ids, rng.STREAM_PROMPT), self.output.sample(seed, ids, rng.STREAM_OUTPUT))


@dataclass(frozen=True)
class BivariateNormal:
    """The BF-IO paper's synthetic (prompt, output) generator (notes/000.md, section 5).

    Pairs with a negative component are rejected (up to `max_tries` candidates per request,
    all drawn from the request's own counter stream; the probability that all 16 fail is
    about 1e-13, and then the last candidate is clipped). Values are rounded to the nearest
    integer and raised to at least 1, and capped at mean + 10 std so that loads are provably
    bounded (a normal never reaches it in practice).
    """

    mean_prompt: float = 3200.0
    mean_output: float = 1200.0
    std_prompt: float = 2600.0
    std_output: float = 700.0
    corr: float = -0.1
    max_tries: int = 16
    name: str = "bivariate_normal"
    num_requests = None

    def __post_init__(self):
        for f in ("mean_prompt", "mean_output"):
            require_float(getattr(self, f), f"BivariateNormal.{f}", lo=0.0, lo_open=True)
        for f in ("std_prompt", "std_output"):
            require_float(getattr(self, f), f"BivariateNormal.{f}", lo=0.0)
        require_float(self.corr, "BivariateNormal.corr", lo=-1.0, hi=1.0)
        require_int(self.max_tries, "BivariateNormal.max_tries", lo=1, hi=64)
        # Lengths are capped at mean + 10 std, which must stay a valid length (<= 2^24 tokens,
        # as every workload's) for the int32 load proofs.
        for what in ("prompt", "output"):
            cap = getattr(self, f"mean_{what}") + 10 * getattr(self, f"std_{what}")
            require(
                cap <= MAX_LENGTH,
                f"BivariateNormal.mean_{what} + 10 * std_{what}",
                f"<= 2^24 = {MAX_LENGTH} tokens (the length cap)",
                cap,
            )
        require(isinstance(self.name, str), "BivariateNormal.name", "a string", self.name)

    @property
    def max_prompt(self) -> int:
        return int(math.ceil(self.mean_prompt + 10 * self.std_prompt))

    @property
    def max_output(self) -> int:
        return int(math.ceil(self.mean_output + 10 * self.std_output))

    def sample(self, seed, ids):
        shape = jnp.shape(ids)
        tries = [rng.normal_pair(seed, ids, rng.STREAM_PROMPT, t) for t in range(self.max_tries)]
        z1 = jnp.stack([a for a, _ in tries], -1)
        z2 = jnp.stack([b for _, b in tries], -1)
        c = np.float32(self.corr)
        s = self.mean_prompt + self.std_prompt * z1
        o = self.mean_output + self.std_output * (c * z1 + np.float32(math.sqrt(1 - self.corr**2)) * z2)
        ok = (s >= 0) & (o >= 0)
        first = jnp.argmax(ok, axis=-1)  # first accepted candidate (0 if none: clipped below)
        s = jnp.take_along_axis(s, first[..., None], -1)[..., 0]
        o = jnp.take_along_axis(o, first[..., None], -1)[..., 0]
        s = jnp.clip(jnp.round(s), 1, self.max_prompt).astype(jnp.int32)
        o = jnp.clip(jnp.round(o), 1, self.max_output).astype(jnp.int32)
        return s.reshape(shape), o.reshape(shape)


@dataclass(frozen=True)
class BurstGPTLike:
    """Parametric stand-in for the BurstGPT trace (statistics of ../shared/data/README.md).

    prompt = clip(round(median_prompt * exp(sigma_prompt * z1)), 1, max_prompt);
    output = mode_output with probability mode_prob, else
             clip(round(exp(mu_output + sigma_output * z2)), 1, max_output),
    with corr(z1, z2) = copula_corr. The constants were fitted by Monte Carlo to the trace's
    mean, median, max and correlation; `tests/core/test_workload.py` checks them.
    """

    median_prompt: float = 217.0
    sigma_prompt: float = 1.015
    max_prompt: int = 14117
    mode_output: int = 7
    mode_prob: float = 0.457
    mu_output: float = 3.43
    sigma_output: float = 1.55
    max_output: int = 3206
    copula_corr: float = 0.68
    name: str = "burstgpt_like"
    num_requests = None

    def __post_init__(self):
        f = "BurstGPTLike."
        require_float(self.median_prompt, f + "median_prompt", lo=0.0, lo_open=True)
        require_float(self.sigma_prompt, f + "sigma_prompt", lo=0.0)
        require_int(self.max_prompt, f + "max_prompt", lo=1, hi=MAX_LENGTH)
        require_int(self.max_output, f + "max_output", lo=1, hi=MAX_LENGTH)
        # The mode is returned as it is, so it must respect the cap the overflow proofs use.
        require_int(self.mode_output, f + "mode_output", lo=1, hi=self.max_output)
        require_float(self.mode_prob, f + "mode_prob", lo=0.0, hi=1.0)
        require_float(self.mu_output, f + "mu_output")
        require_float(self.sigma_output, f + "sigma_output", lo=0.0)
        require_float(self.copula_corr, f + "copula_corr", lo=-1.0, hi=1.0)
        require(isinstance(self.name, str), f + "name", "a string", self.name)

    def sample(self, seed, ids):
        z1, e = rng.normal_pair(seed, ids, rng.STREAM_PROMPT)
        c = np.float32(self.copula_corr)
        z2 = c * z1 + np.float32(math.sqrt(1 - self.copula_corr**2)) * e
        s = jnp.clip(jnp.round(self.median_prompt * jnp.exp(self.sigma_prompt * z1)), 1, self.max_prompt)
        o = jnp.clip(jnp.round(jnp.exp(self.mu_output + self.sigma_output * z2)), 1, self.max_output)
        mode = rng.uniform(seed, ids, rng.STREAM_MIX) < self.mode_prob
        o = jnp.where(mode, self.mode_output, o)
        return s.astype(jnp.int32), o.astype(jnp.int32)


@dataclass(frozen=True)
class JointMixture:
    """A mixture of whole request laws: with probability weights[k], request i's (prompt,
    output) pair is a draw of components[k] (paper 002's real-data mix: 80% LMSYS-like and 20%
    arXiv-like requests, prompt and output from the same dataset).

    `Mixture` mixes one marginal at a time, and prompt and output use different random streams,
    so Independent(Mixture, Mixture) would pick the component of s and of o independently; here
    one choice per request (its own stream, STREAM_MIX) selects both. Every component is
    sampled and the chosen pair kept, so components may share streams: only one is ever used.
    """

    components: tuple
    weights: tuple
    name: str = "joint_mixture"
    num_requests = None

    def __post_init__(self):
        f = "JointMixture."
        require(
            isinstance(self.components, tuple)
            and len(self.components) >= 1
            and all(
                not isinstance(c, type)
                and getattr(c, "num_requests", 0) is None
                and all(hasattr(c, a) for a in ("sample", "max_prompt", "max_output"))
                for c in self.components
            ),
            f + "components",
            "a non-empty tuple of unbounded request laws (e.g. Independent(...))",
            self.components,
        )
        require(
            isinstance(self.weights, tuple) and len(self.weights) == len(self.components),
            f + "weights",
            "a tuple with one weight per component",
            self.weights,
        )
        for w in self.weights:
            require_float(w, f + "weights", lo=0.0, hi=1.0)
        require(abs(sum(self.weights) - 1.0) < 1e-9, f + "weights", "weights summing to 1", self.weights)
        require(isinstance(self.name, str), f + "name", "a string", self.name)

    @property
    def max_prompt(self) -> int:
        return max(int(c.max_prompt) for c in self.components)

    @property
    def max_output(self) -> int:
        return max(int(c.max_output) for c in self.components)

    def sample(self, seed, ids):
        # sub=1 of STREAM_MIX: BurstGPTLike uses sub 0, so a BurstGPTLike component's own mode
        # draw stays independent of the choice.
        u = rng.uniform(seed, ids, rng.STREAM_MIX, sub=1)
        edges = np.cumsum(np.asarray(self.weights, np.float64))[:-1].astype(np.float32)
        which = jnp.searchsorted(jnp.asarray(edges), u, side="right").astype(jnp.int32)
        draws = [c.sample(seed, ids) for c in self.components]
        s = jnp.stack([d[0].astype(jnp.int32) for d in draws])
        o = jnp.stack([d[1].astype(jnp.int32) for d in draws])
        return (jnp.take_along_axis(s, which[None], axis=0)[0], jnp.take_along_axis(o, which[None], axis=0)[0])


@dataclass(frozen=True)
class Finite:
    """The first `num_requests` requests of another workload (per seed): a run that drains."""

    base: Any
    num_requests: int

    def __post_init__(self):
        require_int(self.num_requests, f"{type(self).__name__}.num_requests", lo=1, hi=INT32_MAX // 2)
        b = self.base
        require(
            not isinstance(b, type) and all(hasattr(b, a) for a in ("sample", "max_prompt", "max_output", "name")),
            f"{type(self).__name__}.base",
            "a workload instance (e.g. BivariateNormal())",
            b,
        )
        if getattr(self.base, "num_requests", None) is not None:
            raise ConfigError(f"{type(self).__name__}.base must be an unbounded workload")

    @property
    def name(self) -> str:
        return f"{self.base.name}_n{self.num_requests}"

    @property
    def max_prompt(self) -> int:
        return self.base.max_prompt

    @property
    def max_output(self) -> int:
        return self.base.max_output

    def sample(self, seed, ids):
        return self.base.sample(seed, ids)


def materialize(workload, seed: int, num: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `num` requests of run `seed` as numpy int arrays (for references and plots).

    Sampled under jit, as in the engine: eager float32 transcendentals can round differently
    from their fused, compiled form, which would make a length differ by one token.
    """
    import jax

    ids = jnp.arange(num, dtype=jnp.int32)
    s, o = jax.jit(workload.sample)(jnp.uint32(seed), ids)
    return np.asarray(s), np.asarray(o)
