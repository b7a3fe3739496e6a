"""Prediction intervals [l_i, u_i] of output lengths (paper 003, notes/003.md §1 and §5.7).

An interval spec maps each job's true output o_i (hidden from the policies) to the interval a
predictor promises, as a pure jittable function `bounds(o) -> (l, u)` (int32[n] each, tokens):

- `Shared(low, high)`: every job gets [low, high] (the base case; Experiment 1: [1, 1000]);
- `Buckets(edges)`: m disjoint classes [e_j, e_{j+1} - 1]; a job gets the class holding o_i
  (section 4.2, Algorithm 5; Experiment 2: `Buckets.uniform(100, 10)` = [1, 100], ...,
  [901, 1000]);
- `Relative(x)`: [max(1, ceil((1 - x) o_i)), floor((1 + x) o_i)] (Experiment 3, rounding of
  notes §5.7), computed in integers with x in units of 1e-4;
- `Exact()`: l_i = u_i = o_i (a perfect predictor).

`check(low, high)` proves before compiling that every output a workload can produce (its
support [low, high]) lies in its interval, and `max_upper(high)` bounds u_i (the engine needs
s_i + u_i <= M). `check_instance` validates explicit arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require, require_float, require_int

_X_UNIT = 10_000  # Relative's x is a multiple of 1e-4: integer bounds, exact rounding
_RELATIVE_MAX_O = 1 << 16  # (2 * 10^4) * o stays below 2^31


@dataclass(frozen=True)
class Shared:
    """Every job's interval is [low, high]."""

    low: int
    high: int

    def __post_init__(self):
        require_int(self.low, "intervals.low", lo=1, hi=2**24)
        require_int(self.high, "intervals.high", lo=self.low, hi=2**24)

    @property
    def name(self) -> str:
        return f"shared[{self.low},{self.high}]"

    def bounds(self, o: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        return jnp.full_like(o, self.low), jnp.full_like(o, self.high)

    def check(self, low: int, high: int) -> None:
        require(
            self.low <= low and high <= self.high,
            "intervals",
            f"an interval containing every output the workload can produce ([{low}, {high}])",
            self.name,
        )

    def max_upper(self, high: int) -> int:
        return self.high


@dataclass(frozen=True)
class Buckets:
    """Disjoint classes: a job with edges[j] <= o < edges[j + 1] gets [edges[j], edges[j+1]-1]."""

    edges: tuple

    def __post_init__(self):
        e = self.edges
        require(isinstance(e, tuple) and len(e) >= 2, "intervals.edges", "a tuple of at least 2 increasing integers", e)
        for v in e:
            require_int(v, "intervals.edges", lo=1, hi=2**24)
        require(all(a < b for a, b in zip(e, e[1:])), "intervals.edges", "strictly increasing integers", e)

    @classmethod
    def uniform(cls, width: int = 100, count: int = 10, start: int = 1) -> "Buckets":
        """`count` classes of `width` tokens from `start`: Experiment 2's [1, 100], ...,
        [901, 1000] by default."""
        require_int(width, "intervals.width", lo=1, hi=2**20)
        require_int(count, "intervals.count", lo=1, hi=4096)
        return cls(tuple(start + width * j for j in range(count + 1)))

    @property
    def name(self) -> str:
        return f"buckets{len(self.edges) - 1}[{self.edges[0]},{self.edges[-1] - 1}]"

    def bounds(self, o: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        e = jnp.asarray(self.edges, jnp.int32)
        j = jnp.searchsorted(e, o, side="right") - 1
        return e[j], e[j + 1] - 1

    def check(self, low: int, high: int) -> None:
        require(
            self.edges[0] <= low and high <= self.edges[-1] - 1,
            "intervals",
            f"classes covering every output the workload can produce ([{low}, {high}])",
            self.name,
        )

    def max_upper(self, high: int) -> int:
        return int(next(b - 1 for a, b in zip(self.edges, self.edges[1:]) if high < b))


@dataclass(frozen=True)
class Relative:
    """[max(1, ceil((1 - x) o)), floor((1 + x) o)] with x in [0, 1], a multiple of 1e-4."""

    x: float

    def __post_init__(self):
        require_float(self.x, "intervals.x", lo=0.0, hi=1.0)
        require(abs(self.x * _X_UNIT - round(self.x * _X_UNIT)) < 1e-6, "intervals.x", "a multiple of 0.0001", self.x)

    @property
    def name(self) -> str:
        return f"relative{self.x:g}"

    @property
    def _xb(self) -> int:
        return int(round(self.x * _X_UNIT))

    def bounds(self, o: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        lo = ((_X_UNIT - self._xb) * o + _X_UNIT - 1) // _X_UNIT
        return jnp.maximum(lo, 1), ((_X_UNIT + self._xb) * o) // _X_UNIT

    def check(self, low: int, high: int) -> None:
        require(
            high <= _RELATIVE_MAX_O,
            "workload.max_output",
            f"<= {_RELATIVE_MAX_O} with relative intervals (integer rounding stays exact)",
            high,
        )

    def max_upper(self, high: int) -> int:
        return ((_X_UNIT + self._xb) * high) // _X_UNIT


@dataclass(frozen=True)
class Exact:
    """A perfect predictor: l_i = u_i = o_i."""

    name = "exact"

    def bounds(self, o: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        return o, o

    def check(self, low: int, high: int) -> None:
        return None

    def max_upper(self, high: int) -> int:
        return high


IntervalSpec = Shared | Buckets | Relative | Exact


def parse(text: str) -> IntervalSpec:
    """An interval spec from its short form (what `jaxsched sweep --set intervals=...` passes):
    "shared:L:U", "buckets:WIDTH:COUNT", "relative:X" or "exact"."""
    kind, *args = text.strip().split(":")
    forms = {
        "shared": (Shared, (int, int)),
        "buckets": (Buckets.uniform, (int, int)),
        "relative": (Relative, (float,)),
        "exact": (Exact, ()),
    }
    if kind not in forms or len(args) != len(forms[kind][1]):
        raise ConfigError(
            f"intervals must be one of shared:L:U, buckets:WIDTH:COUNT, relative:X or exact, got {text!r}"
        )
    make, types = forms[kind]
    try:
        values = [t(v) for t, v in zip(types, args)]
    except ValueError:
        raise ConfigError(
            f"intervals must be one of shared:L:U, buckets:WIDTH:COUNT, "
            f"relative:X or exact (numbers after the colons), got {text!r}"
        ) from None
    return make(*values)


def output_support(workload) -> tuple[int, int]:
    """[low, high]: the smallest and largest output a workload can produce (tokens). The lower
    end is known for marginals that state it (`lower`); otherwise 1."""
    law = getattr(getattr(workload, "base", workload), "output", None)
    low = int(getattr(law, "lower", 1)) if law is not None else 1
    if hasattr(workload, "output") and not hasattr(workload, "base"):
        low = int(np.min(workload.output))  # a trace: its own values
    return low, int(workload.max_output)


def check_instance(s, o, low, high, M: int) -> tuple[np.ndarray, ...]:
    """Validated int64 arrays (s, o, l, u) [..., n] of explicit instances: one ConfigError naming
    the first field that breaks 0 <= s, 1 <= l <= o <= u, s + u <= M."""
    arrs = [np.asarray(v) for v in (s, o, low, high)]
    names = ("s", "o", "low (l)", "high (u)")
    for a, name in zip(arrs, names):
        if a.shape != arrs[0].shape or a.ndim < 1:
            raise ConfigError(f"{name} must have the shape of s ({arrs[0].shape}), got {a.shape}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ConfigError(f"{name} must hold integers (tokens), got {a.dtype}")
    s, o, lo, hi = (a.astype(np.int64) for a in arrs)
    if (s < 0).any():
        raise ConfigError(f"s must be >= 0 (tokens; the paper's constructions take s = 0); got {int(s.min())}")
    for a, name in ((o, "o"), (lo, "low (l)")):
        if (a < 1).any():
            raise ConfigError(f"{name} must be >= 1 (tokens); got {int(a.min())}")
    if (lo > hi).any():
        raise ConfigError(f"low (l) must be <= high (u) for every job; job {_first(lo > hi)} has l > u")
    if ((o < lo) | (o > hi)).any():
        i = _first((o < lo) | (o > hi))
        raise ConfigError(
            f"o must lie in its promised interval [l, u]; job {i} has o = "
            f"{int(o.reshape(-1)[i])} outside [{int(lo.reshape(-1)[i])}, "
            f"{int(hi.reshape(-1)[i])}]"
        )
    if (s + hi > M).any():
        raise ConfigError(
            f"s + u must be <= M = {M} (every job fits alone at its upper bound); "
            f"largest s + u is {int((s + hi).max())}"
        )
    return s, o, lo, hi


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.reshape(-1))[0])
