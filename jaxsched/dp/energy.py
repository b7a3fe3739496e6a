"""Power models.

`utilization_power_w` is the model of the BF-IO paper's simulator (notes/000.md, section 4.2):
each worker's utilization is its load relative to the most loaded worker, u_g = L_g / max L
(u = 0 when every load is 0), and it draws P_g = P_idle + (P_max - P_idle) * u_g^gamma watts when
u_g > 0, else P_idle. A step's energy is its duration times sum_g P_g.
"""

from __future__ import annotations

import jax.numpy as jnp


def utilization(loads_tokens: jnp.ndarray) -> jnp.ndarray:
    """u_g = L_g / max L over the last axis, float32 in [0, 1]; 0 when max L = 0. Shape of loads."""
    top = jnp.max(loads_tokens, axis=-1, keepdims=True)
    u = loads_tokens.astype(jnp.float32) / jnp.maximum(top, 1).astype(jnp.float32)
    return jnp.clip(u, 0.0, 1.0)


def utilization_power_w(u: jnp.ndarray, idle_w, max_w, exponent) -> jnp.ndarray:
    """Per-worker power (W) from utilization u (any shape)."""
    busy = idle_w + (max_w - idle_w) * jnp.power(jnp.maximum(u, 1e-30), exponent)
    return jnp.where(u > 0, busy, idle_w)
