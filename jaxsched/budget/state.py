"""State of the budget engine: fixed-shape arrays of one run (vmap adds a leading seed axis).

The request table is a ring of Q slots: the request with entry number e lives in slot e mod Q
(empty slots have entry -1), so FCFS order is slot order rotated by base = entries mod Q and
prefix sums in FCFS order need one cumsum (kernels.prefix_by_id). An arrival whose slot is
still held is rejected and counted (docs/budget-semantics.md §4).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from ..accumulate import Kahan, WideInt
from ..clock import DF
from ..workload.arrivals import ArrivalState


class Table(eqx.Module):
    """Requests in the system, arrays [Q].

    entry: int32 entry number (FCFS order), -1 for an empty slot. id: int32 request id.
    type: int32 z_i. arrival: DF A_i (s). p, d: int32 prefill / decode tokens not yet loaded.
    vp, vd: int32 v_p(i), v_d(i) (loaded so far: vp - p, vd - d). last: DF time of the
    request's latest token (s; its first token, then each decode token). ttft: float32 s.
    """

    entry: jnp.ndarray
    id: jnp.ndarray
    type: jnp.ndarray
    arrival: DF
    p: jnp.ndarray
    d: jnp.ndarray
    vp: jnp.ndarray
    vd: jnp.ndarray
    last: DF
    ttft: jnp.ndarray

    @property
    def valid(self) -> jnp.ndarray:
        return self.entry >= 0

    @staticmethod
    def empty(Q: int) -> "Table":
        zi = jnp.zeros((Q,), jnp.int32)
        zf = jnp.zeros((Q,), jnp.float32)
        return Table(zi - 1, zi, zi, DF(zf, zf), zi, zi, zi, zi, DF(zf, zf), zf)


class Totals(eqx.Module):
    """Streaming metric accumulators of one run (finalized in jaxsched.budget.metrics); the
    windowed ones count events in [burn_in, horizon) (docs §6)."""

    departed: jnp.ndarray  # int32 departures in the window
    departed_tokens: WideInt  # their v_p + v_d
    latency_s: Kahan
    ttft_s: Kahan
    tbt_s: Kahan
    tbt_count: jnp.ndarray  # int32 decode tokens in the window
    latency_hist: jnp.ndarray  # int32 [nb]
    ttft_hist: jnp.ndarray
    tbt_hist: jnp.ndarray
    idle_s: Kahan  # idle time in the window
    area_requests: Kahan  # integral of N(t) over the window (request-seconds)
    area_tokens: Kahan  # integral of |X(t)| (token-seconds)
    batches: jnp.ndarray  # int32 batches run
    window_batches: jnp.ndarray  # int32 batches starting in the window
    partial: jnp.ndarray  # int32 of those, b' < b with >= b tokens available
    rejected: jnp.ndarray  # int32 arrivals rejected by a full slot
    stalled: jnp.ndarray  # bool: requests left that no batch would take
    steps: jnp.ndarray  # int32 scan steps run (until done)
    snap_t: jnp.ndarray  # float32 [G] epoch time of snapshot k (s)
    snap_n: jnp.ndarray  # int32 [G] requests in system
    snap_x: jnp.ndarray  # int32 [G] tokens in system (pre-decision)
    snap_next: jnp.ndarray  # int32 snapshots recorded so far
    backlog_tokens: jnp.ndarray  # int32 unprocessed tokens of the initial backlog
    drained: jnp.ndarray  # bool: tokens fell to drain_fraction of the backlog's
    drain_s: DF  # time of the deciding epoch where that first held (s)

    @staticmethod
    def zeros(nbins: int, G: int) -> "Totals":
        z = jnp.int32(0)
        h = jnp.zeros((nbins,), jnp.int32)
        K = Kahan.zeros
        return Totals(
            z,
            WideInt.zeros(),
            K(),
            K(),
            K(),
            z,
            h,
            h,
            h,
            K(),
            K(),
            K(),
            z,
            z,
            z,
            z,
            jnp.bool_(False),
            z,
            jnp.zeros((G,), jnp.float32),
            jnp.zeros((G,), jnp.int32),
            jnp.zeros((G,), jnp.int32),
            z,
            z,
            jnp.bool_(False),
            DF.zeros(),
        )


class BudgetState(eqx.Module):
    """Everything a budget run carries from step to step."""

    seed: jnp.ndarray  # uint32
    clock: DF  # tau_k (s)
    done: jnp.ndarray  # bool
    gen: ArrivalState
    table: Table
    entries: jnp.ndarray  # int32 requests accepted into the table so far
    totals: Totals
