"""Streaming histograms of durations, and the quantiles read from them on the host.

Engines keep a fixed-size int32 count array per run instead of per-request values, so p50 and
p99 need no storage that grows with the number of requests. Two bin grids, both in seconds:

- **Log grid** (`log_bins`, `log_quantile`): bin 0 holds exact zeros, bins 1..nb-1 split
  [lo_s, hi_s] evenly in log scale (the dp engine's queueing delays; at 512 bins over
  [1e-4, 1e5] s the bin ratio is 1.04).
- **Float-bit grid** (`bit_bins`, `bit_bin_host`, `bit_quantile`): the bin is read from the
  float32 bit pattern, 2^b bins per octave on [2^BIT_MIN_EXP, 2^BIT_MAX_EXP) s, bin 0 below and
  bin nb - 1 above (the kv engine's latencies and TTFT; no log, so a NumPy float32 reference
  reproduces every bin exactly; docs/kv-semantics.md §8).

A quantile is the midpoint of the bin holding the ceil(q n)-th smallest value: within half a
bin of the exact empirical quantile.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

BIT_MIN_EXP = -20
BIT_MAX_EXP = 20


def _quantile_bin(hist: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(bin index holding the ceil(q n)-th smallest value, n) per histogram [..., nb]."""
    n = hist.sum(-1)
    target = np.maximum(1, np.ceil(q * n)).astype(np.int64)
    return np.argmax(np.cumsum(hist, -1) >= target[..., None], axis=-1), n


# --------------------------------------------------------------------------- log grid


def log_bins(x_s: jnp.ndarray, is_zero: jnp.ndarray, nbins: int, lo_s: float, hi_s: float) -> jnp.ndarray:
    """int32 bins (shape of x_s) on the log grid: 0 where `is_zero`, else 1..nbins-1."""
    ratio = math.log(hi_s / lo_s) / (nbins - 2)
    b = 1 + jnp.floor(jnp.log(jnp.maximum(x_s, lo_s) / lo_s) / ratio).astype(jnp.int32)
    return jnp.where(is_zero, 0, jnp.clip(b, 1, nbins - 1))


def log_quantile(hist: np.ndarray, q: float, lo_s: float, hi_s: float) -> np.ndarray:
    """Quantile q (s, float64) of log-grid histograms [..., nb]: the geometric midpoint of the
    bin (0 for bin 0 or an empty histogram)."""
    hist = np.asarray(hist, np.int64)
    ratio = math.log(hi_s / lo_s) / (hist.shape[-1] - 2)
    b, n = _quantile_bin(hist, q)
    mid = lo_s * np.exp((b - 1 + 0.5) * ratio)
    return np.where((b == 0) | (n == 0), 0.0, mid)


# --------------------------------------------------------------------------- float-bit grid


def bit_num_bins(octave_bits: int) -> int:
    """nb = (BIT_MAX_EXP - BIT_MIN_EXP) * 2^b + 2 bins."""
    return (BIT_MAX_EXP - BIT_MIN_EXP) * 2**octave_bits + 2


def bit_bins(x_s: jnp.ndarray, mask: jnp.ndarray, octave_bits: int) -> jnp.ndarray:
    """int32 bins of float32 values x_s >= 0 from their bits; masked-out entries get bin nb
    (dropped by a scatter with mode="drop")."""
    b = octave_bits
    nb = bit_num_bins(b)
    bits = jax.lax.bitcast_convert_type(x_s.astype(jnp.float32), jnp.int32)
    idx = (bits >> (23 - b)) - ((127 + BIT_MIN_EXP) << b) + 1
    idx = jnp.where(x_s < np.float32(2.0**BIT_MIN_EXP), 0, jnp.minimum(idx, nb - 1))
    return jnp.where(mask, idx, nb)


def bit_bin_host(x_s, octave_bits: int) -> np.ndarray:
    """Host mirror of `bit_bins` (no mask) for float32 values, int64."""
    x = np.asarray(x_s, np.float32)
    nb = bit_num_bins(octave_bits)
    bits = x.view(np.int32).astype(np.int64)
    idx = (bits >> (23 - octave_bits)) - ((127 + BIT_MIN_EXP) << octave_bits) + 1
    return np.where(x < np.float32(2.0**BIT_MIN_EXP), 0, np.minimum(idx, nb - 1))


def bit_quantile(hist: np.ndarray, q: float) -> np.ndarray:
    """Quantile q (s, float64) of float-bit histograms [..., nb]: the bin's midpoint (within
    2^-(b+1) relative); bin 0 reads 0, the top bin its lower edge 2^BIT_MAX_EXP; 0 when empty."""
    hist = np.asarray(hist, np.int64)
    nb = hist.shape[-1]
    per = (nb - 2) // (BIT_MAX_EXP - BIT_MIN_EXP)  # 2^b bins per octave
    b, n = _quantile_bin(hist, q)
    k = np.clip(b - 1, 0, nb - 3)
    octave = 2.0 ** (BIT_MIN_EXP + k // per)
    mid = octave * (1.0 + (k % per + 0.5) / per)
    mid = np.where(b == nb - 1, 2.0**BIT_MAX_EXP, mid)
    return np.where((b == 0) | (n == 0), 0.0, mid)
