"""Streaming accumulators that stay exact (integers) or float64-accurate (floats) over long runs.

JAX runs in 32-bit here (library code never flips `jax_enable_x64`), so a plain int32 sum of
per-step imbalances overflows after a few thousand steps and a float32 clock drifts. Two tools:
- `WideInt`: an exact non-negative integer as hi * 2^24 + lo (two int32 words); adding any
  0 <= x < 2^31 - 2^24 is exact up to 2^55. Read on the host as float64 / Python int.
- `Kahan`: a compensated float32 sum (value, compensation); its error is about 2 ulp of the
  total, independent of the number of terms, so long sums match float64 to ~1e-7.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

_SHIFT = 24
_MASK = (1 << _SHIFT) - 1


class WideInt(eqx.Module):
    """Exact integer hi * 2^24 + lo; int32 words of any (batch) shape."""

    hi: jnp.ndarray
    lo: jnp.ndarray

    @staticmethod
    def zeros(shape=()) -> "WideInt":
        return WideInt(jnp.zeros(shape, jnp.int32), jnp.zeros(shape, jnp.int32))

    def add(self, x: jnp.ndarray) -> "WideInt":
        """Add int32 x with 0 <= x < 2^31 - 2^24."""
        lo = self.lo + x
        return WideInt(self.hi + (lo >> _SHIFT), lo & _MASK)

    def add_product(self, a: jnp.ndarray, b: jnp.ndarray) -> "WideInt":
        """Add the exact product a * b of int32 0 <= a < 2^24 and 0 <= b < 2^30 (a sum of
        many equal terms at once, e.g. an arithmetic series), by 12-bit limbs: every partial
        product stays below 2^25, so no int32 overflows while the total is below 2^54."""
        a1, a0 = a >> 12, a & 0xFFF
        b2, b1, b0 = b >> 24, (b >> 12) & 0xFFF, b & 0xFFF
        mid = a1 * b0 + a0 * b1  # weight 2^12, < 2^25
        lo = self.lo + a0 * b0 + ((mid & 0xFFF) << 12)
        hi = self.hi + (mid >> 12) + a1 * b1 + a0 * b2 + ((a1 * b2) << 12)
        return WideInt(hi + (lo >> _SHIFT), lo & _MASK)

    def minus(self, other: "WideInt") -> jnp.ndarray:
        """self - other as float32 (exact while |difference| < 2^24, else 1 ulp)."""
        return (self.hi - other.hi).astype(jnp.float32) * np.float32(2.0**_SHIFT) + (self.lo - other.lo).astype(
            jnp.float32
        )

    def to_numpy(self) -> np.ndarray:
        """Exact value as float64 (exact below 2^53)."""
        return np.asarray(self.hi, np.float64) * 2.0**_SHIFT + np.asarray(self.lo, np.float64)


class Kahan(eqx.Module):
    """Compensated float32 sum."""

    total: jnp.ndarray
    comp: jnp.ndarray

    @staticmethod
    def zeros(shape=()) -> "Kahan":
        return Kahan(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))

    def add(self, x: jnp.ndarray) -> "Kahan":
        y = x - self.comp
        t = self.total + y
        return Kahan(t, (t - self.total) - y)

    def add_where(self, x: jnp.ndarray, mask) -> "Kahan":
        """`add(x)` where `mask` holds, elementwise; the sum unchanged elsewhere. Adding a zero
        is not a no-op (it folds the compensation into the total: the same value, other bits),
        so an accumulator whose adds must not depend on how the work is split into steps
        adds only where something happened."""
        added = self.add(x)
        return Kahan(jnp.where(mask, added.total, self.total), jnp.where(mask, added.comp, self.comp))

    def to_numpy(self) -> np.ndarray:
        return np.asarray(self.total, np.float64) - np.asarray(self.comp, np.float64)
