"""Double-float simulated time: a (hi, lo) pair of float32 with about 48 bits of precision.

JAX runs in 32-bit here, and a float32 clock loses latencies after a few thousand seconds
(one ulp of 4096 s is 0.5 ms). A double-float keeps hi = fl(hi + lo) and the rounding error in
lo, updated with error-free transformations (Knuth's two-sum), so a clock that has run for
1e6 s still resolves microseconds. Every operation is a fixed sequence of float32 additions and
subtractions, with no multiplication an FMA could contract, so a plain-Python reference
reproduces it bitwise with np.float32 (docs/kv-semantics.md §2). (XLA contracts a * b + c into
one fused multiply-add wherever it likes; the only products here are exact ones, see `split12`,
for which a fused and a separate add agree.)

Everything works elementwise on arrays of any (batch) shape and is jittable and vmappable.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class DF(eqx.Module):
    """A time in seconds, hi + lo exactly, with hi = fl(hi + lo); float32 arrays of one shape."""

    hi: jnp.ndarray
    lo: jnp.ndarray

    @staticmethod
    def zeros(shape=()) -> "DF":
        return DF(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))

    @staticmethod
    def from_float64(x: float) -> "DF":
        """The nearest double-float to the host float x (hi = float32(x), lo = the rest)."""
        hi = np.float32(x)
        lo = np.float32(np.float64(x) - np.float64(hi))
        return DF(jnp.float32(hi), jnp.float32(lo))

    def to_numpy(self) -> np.ndarray:
        """The value as float64 (exact: both words fit in a float64 sum to 1 ulp)."""
        return np.asarray(self.hi, np.float64) + np.asarray(self.lo, np.float64)


def two_sum(a: jnp.ndarray, b: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(s, err) with s = fl(a + b) and s + err = a + b exactly (any magnitudes)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: jnp.ndarray, b: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(s, err) with s = fl(a + b), s + err = a + b exactly when |a| >= |b| (or a = 0)."""
    s = a + b
    return s, b - (s - a)


def add_f32(x: DF, b: jnp.ndarray) -> DF:
    """x + b for a float32 b (an iteration time, an inter-arrival gap)."""
    s, e = two_sum(x.hi, b)
    e = e + x.lo
    hi, lo = fast_two_sum(s, e)
    return DF(hi, lo)


def add(x: DF, y: DF) -> DF:
    """x + y for two double-floats (the clock plus an iteration time)."""
    s, e = two_sum(x.hi, y.hi)
    e = e + (x.lo + y.lo)
    hi, lo = fast_two_sum(s, e)
    return DF(hi, lo)


def to_f32(x: DF) -> jnp.ndarray:
    """The value rounded to float32: fl(hi + lo)."""
    return x.hi + x.lo


def split12(x) -> tuple[np.float32, np.float32]:
    """Host: (hi, lo) float32 with hi + lo = float32(x) exactly and 12 significant bits each.

    hi keeps the top 12 significant bits of x (a mask on the float32 word), lo = x - hi is
    exact. Products of either half with a 12-bit integer are exact in float32, so a fused
    multiply-add (which XLA may form from a * b + c) rounds them like a separate add.
    """
    x = np.float32(x)
    hi = np.array(x).view(np.uint32) & np.uint32(0xFFFFF000)
    hi = np.float32(hi.view(np.float32))
    return hi, np.float32(x - hi)


def fence(x: jnp.ndarray, mask: jnp.ndarray) -> jnp.ndarray:
    """x (float32) materialized as a rounded float32 before it meets an add.

    mask must be a traced int32 -1 (all ones, e.g. KVParams.fence): x's bits ANDed with a word
    XLA cannot constant-fold cannot be fused into a following add, so a product computing x is
    rounded on its own, as in NumPy, instead of being contracted into an FMA.
    """
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32) & mask
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def sub(x: DF, y: DF) -> jnp.ndarray:
    """x - y rounded to float32 (a latency: both times are exact, only the result rounds)."""
    s, e = two_sum(x.hi, -y.hi)
    e = e + (x.lo - y.lo)
    h, l = fast_two_sum(s, e)
    return h + l


def le(x: DF, y: DF) -> jnp.ndarray:
    """x <= y (bool) for normalized double-floats."""
    return (x.hi < y.hi) | ((x.hi == y.hi) & (x.lo <= y.lo))


def where(cond: jnp.ndarray, x: DF, y: DF) -> DF:
    """Elementwise select of two double-floats."""
    return DF(jnp.where(cond, x.hi, y.hi), jnp.where(cond, x.lo, y.lo))
