"""The duration of a dp step: G data-parallel workers behind a barrier.

barrier_step_time_s: one decode step lasts C + t_l * max_g L_g seconds (BF-IO paper, section
6.1): the slowest worker sets the pace. Its energy is the power model of jaxsched.dp.energy
times this duration.
"""

from __future__ import annotations

import jax.numpy as jnp


def barrier_step_time_s(max_load_tokens: jnp.ndarray, step_const_s, per_token_s) -> jnp.ndarray:
    """Duration (s, float32) of a barrier step whose most loaded worker holds `max_load_tokens`."""
    return step_const_s + per_token_s * max_load_tokens.astype(jnp.float32)
