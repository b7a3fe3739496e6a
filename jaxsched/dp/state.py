"""State of the dp engine: dense fixed-shape arrays (one run; vmap adds a leading seed axis).

Slot encoding (chosen so that nothing is rewritten per step): every active request grows by the
same delta_j tokens in step j (1 unless the config sets a drift), so with the cumulative drift
D_k = delta_1 + ... + delta_k (carried in `DPState.cum_drift`; D_k = k without drift), a request
with prompt s and output length o admitted at the end of step k_a is stored as
  base = s - D_{k_a}      (its load during step k, after growth, is base + D_k),
  finish = k_a + o        (it is active at the start of step k iff finish >= k, and it
                           finishes in step k iff finish == k; empty slots have finish = -1),
  inv_out = 1 / o         (for the TPOT accumulator).
So (generated steps, output) = (k - k_a, finish - k_a) with k_a = finish - o: lengths and
completions count steps, loads count drift.
When the BF-IO lookahead needs predictions, the slots also carry pred_finish = k_a + o_hat and
the classifier draw pred_u.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from ..accumulate import Kahan, WideInt


class Slots(eqx.Module):
    """int32/float32 arrays [G, B]; pred_* are None unless the policy uses predictions."""

    base: jnp.ndarray
    finish: jnp.ndarray
    inv_out: jnp.ndarray
    pred_finish: jnp.ndarray | None
    pred_u: jnp.ndarray | None


class Pool(eqx.Module):
    """Waiting requests, arrays [R] in queue order; entries [0, count) are valid.

    reveal_steps / reveal_load: the clock when the entry was revealed, as (live steps, cumulative
    max-load tokens) so that its queueing delay is exact (see `Clock`).
    """

    prompt: jnp.ndarray
    output: jnp.ndarray
    pred_out: jnp.ndarray
    pred_u: jnp.ndarray
    reveal_steps: jnp.ndarray
    reveal_load: WideInt
    count: jnp.ndarray
    next_id: jnp.ndarray


class Clock(eqx.Module):
    """Simulated time as exact integers: clock = steps * C + t_l * load (seconds)."""

    steps: jnp.ndarray
    load: WideInt


class Window(eqx.Module):
    """Streaming sums of the per-step metrics over measured steps."""

    steps: jnp.ndarray
    imbalance: WideInt
    gap: WideInt
    tokens: WideInt
    max_load: WideInt
    energy_j: Kahan
    power_w: Kahan
    idle: Kahan

    @staticmethod
    def zeros() -> "Window":
        return Window(
            jnp.int32(0),
            WideInt.zeros(),
            WideInt.zeros(),
            WideInt.zeros(),
            WideInt.zeros(),
            Kahan.zeros(),
            Kahan.zeros(),
            Kahan.zeros(),
        )


class Totals(eqx.Module):
    """Per-request sums over the whole run (not cut)."""

    tpot_num: Kahan
    tpot_den: Kahan
    delay_s: Kahan
    delay_hist: jnp.ndarray
    admitted: WideInt
    finished: WideInt
    cut_step: jnp.ndarray
    last_live: Clock


class DPState(eqx.Module):
    """Everything a dp run carries from step to step."""

    step: jnp.ndarray
    cum_drift: jnp.ndarray  # int32 D_step: tokens every request has grown since step 0
    seed: jnp.ndarray
    slots: Slots
    pool: Pool
    loads: jnp.ndarray  # int32[G], after the last admission (start of next step)
    rr_pointer: jnp.ndarray
    clock: Clock
    window: Window  # measured steps so far
    at_cut: Window  # `window` as of the last step with an admission (paper)
    totals: Totals
    next_inv_out: jnp.ndarray  # float32 sum of 1 / o over the requests active at the start
    # of step `step + 1` (its TPOT weight; engine.active_inv_out)
