"""Step-time models.

barrier_step_time_s: one decode step of G data-parallel workers behind a barrier lasts
C + t_l * max_g L_g seconds (BF-IO paper, section 6.1): the slowest worker sets the pace.
"""
from __future__ import annotations

import jax.numpy as jnp


def barrier_step_time_s(max_load_tokens: jnp.ndarray, step_const_s, per_token_s) -> jnp.ndarray:
    """Duration (s, float32) of a barrier step whose most loaded worker holds `max_load_tokens`."""
    return step_const_s + per_token_s * max_load_tokens.astype(jnp.float32)
