"""The iteration time of an engine that processes a batch of tokens, as a double-float.

iteration_time_s: one iteration (batch) lasts d0 + d1 * tokens seconds (WAIT paper, eq. (1));
a double-float (jaxsched.clock) computed from exact products only, so that a NumPy float32
reference reproduces it bitwise. priced_iteration_time_s: the same with prefill tokens at a
price of their own (restarts are recomputation, dearer than decoding). The kv engine's
iterations use both; the budget engine's batch time (jaxsched.budget.timing) is
iteration_time_s of the tokens beyond its compute-bound knee.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import clock
from .clock import DF


def iteration_time_s(tokens: jnp.ndarray, d0_s, d1_hi, d1_lo) -> DF:
    """Duration (s, double-float) of a batch processing `tokens` (int32, 0..2^30) tokens:
    d0 + d1 * tokens (WAIT paper eq. (1)), to about 2^-47 relative.

    d1 = d1_hi + d1_lo is given split in 12-bit halves (`jaxsched.clock.split12`) and tokens in
    12-bit limbs T_0 + T_1 + T_2 (T_i = ((tokens >> 12 i) & 4095) * 2^(12 i)), so the six
    products are exact in float32; they are added to (d0, 0) in the fixed order
    hi*T_2, hi*T_1, lo*T_2, hi*T_0, lo*T_1, lo*T_0 with `clock.add_f32`. Exact products make
    the result independent of XLA's fused multiply-adds, and a NumPy float32 reference
    reproduces it bitwise (docs/kv-semantics.md §2).
    """
    zero = jnp.zeros(jnp.shape(tokens), jnp.float32)
    return _add_products(DF(jnp.asarray(d0_s, jnp.float32) + zero, zero), tokens, d1_hi, d1_lo)


def _add_products(x: DF, tokens: jnp.ndarray, d1_hi, d1_lo) -> DF:
    """x + d1 * tokens from the six exact products, in the order of `iteration_time_s`."""
    tokens = tokens.astype(jnp.int32)
    limb = lambda i: ((tokens >> (12 * i)) & 4095).astype(jnp.float32) * np.float32(2.0 ** (12 * i))
    t0, t1, t2 = limb(0), limb(1), limb(2)
    hi = jnp.asarray(d1_hi, jnp.float32)
    lo = jnp.asarray(d1_lo, jnp.float32)
    for p in (hi * t2, hi * t1, lo * t2, hi * t0, lo * t1, lo * t0):
        x = clock.add_f32(x, p)
    return x


def priced_iteration_time_s(
    decode_tokens: jnp.ndarray, prefill_tokens: jnp.ndarray, d0_s, d1_hi, d1_lo, p_hi, p_lo
) -> DF:
    """d0 + d1 * decode_tokens + d1_prefill * prefill_tokens (s, double-float): eq. (1) with
    prefill tokens (first prefills and the recomputation of restarted requests) at a price of
    their own, d1_prefill = p_hi + p_lo. The decode products are added first, then the prefill
    products, each in the order of `iteration_time_s`."""
    zero = jnp.zeros(jnp.shape(decode_tokens), jnp.float32)
    x = _add_products(DF(jnp.asarray(d0_s, jnp.float32) + zero, zero), decode_tokens, d1_hi, d1_lo)
    return _add_products(x, prefill_tokens, p_hi, p_lo)
