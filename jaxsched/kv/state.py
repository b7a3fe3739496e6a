"""State of the kv engine: fixed-shape arrays of one run (vmap adds a leading seed axis).

The request table is a ring of Q slots: request `id` lives in slot id mod Q (empty slots have
id -1), so slot order is id order rotated by base = (number of arrivals) mod Q, and prefix sums
in arrival order need one cumsum and no sort (jaxsched.kv.policies). An arrival whose slot is
still held by request id - Q is lost and counted (table_overflow). Semantics:
docs/kv-semantics.md §4.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from ..accumulate import Kahan, WideInt
from ..clock import DF
from ..workload.arrivals import ArrivalState


class Table(eqx.Module):
    """Requests in the system, arrays [Q].

    id: int32 request id (order of acceptance), -1 for an empty slot. type: int32 j.
    seq: int32 index of the request among the inserted requests of its type.
    arrival: DF arrival time (s). stage: int32 k, iterations completed.
    resident: bool, holds KV on the GPU (stage >= 1 and not restart-preempted since).
    prefilled: int32 tokens of a chunked prefill done so far (sarathi; 0 otherwise). A request
    with prefilled > 0 holds the KV blocks of its whole prefill l_j + k.
    """

    id: jnp.ndarray
    type: jnp.ndarray
    seq: jnp.ndarray
    arrival: DF
    stage: jnp.ndarray
    resident: jnp.ndarray
    prefilled: jnp.ndarray

    @property
    def valid(self) -> jnp.ndarray:
        return self.id >= 0


class Window(eqx.Module):
    """The measurement window of a run (docs/kv-semantics.md §8): it opens at the epoch that
    inserts request K (params.burn_in_requests) and closes at the epoch that inserts request
    N - K; requests K .. N - K - 1 are the measured ones (K = 0: every request, and the window
    lasts from the first insertion to the end of the run)."""

    opened: DF  # clock of the epoch that opened the window (s)
    closed: DF  # clock of the epoch that closed it (s)
    in_system: jnp.ndarray  # int32 [3] requests in the table after the insertion step of
    #                                 the epochs that opened, passed the middle, closed; -1 before
    tokens: WideInt  # l'_j + 1 of requests completed by the window's batches
    batches: jnp.ndarray  # int32 batches that started inside the window
    completed: jnp.ndarray  # int32 measured requests completed

    @staticmethod
    def zeros() -> "Window":
        z = jnp.int32(0)
        return Window(DF.zeros(), DF.zeros(), jnp.full((3,), -1, jnp.int32), WideInt.zeros(), z, z)


class Totals(eqx.Module):
    """Streaming metric accumulators of one run (finalized in jaxsched.kv.metrics). Latency and
    TTFT count measured requests only, peak and summed memory the window's batches only."""

    completed: jnp.ndarray  # int32 requests completed
    tokens: WideInt  # sum of l'_j + 1 over completed requests
    decode_tokens: WideInt  # sum of l'_j over completed requests
    horizon_tokens: WideInt  # as `tokens`, completions at t <= T only
    horizon_decode_tokens: WideInt
    latency_s: Kahan
    ttft_s: Kahan
    first_tokens: jnp.ndarray  # int32 measured requests with a TTFT recorded
    latency_hist: jnp.ndarray  # int32 [nb]
    ttft_hist: jnp.ndarray  # int32 [nb]
    peak_memory: jnp.ndarray  # int32 tokens
    memory: WideInt  # sum over batches of the KV held (tokens)
    overflows: jnp.ndarray  # int32 batches with memory > C
    preemptions: WideInt
    batches: jnp.ndarray  # int32
    epochs: jnp.ndarray  # int32 epochs run (until done)
    dropped: jnp.ndarray  # int32 (force_clear)
    table_overflow: jnp.ndarray  # int32 arrivals lost to a full table
    stalled: jnp.ndarray  # bool
    busy: DF  # sum of iteration times (s)
    last_completion: DF  # time of the last completion (s)
    window: Window

    @staticmethod
    def zeros(nbins: int) -> "Totals":
        z = jnp.int32(0)
        h = jnp.zeros((nbins,), jnp.int32)
        return Totals(
            z,
            WideInt.zeros(),
            WideInt.zeros(),
            WideInt.zeros(),
            WideInt.zeros(),
            Kahan.zeros(),
            Kahan.zeros(),
            z,
            h,
            h,
            z,
            WideInt.zeros(),
            z,
            WideInt.zeros(),
            z,
            z,
            z,
            z,
            jnp.bool_(False),
            DF.zeros(),
            DF.zeros(),
            Window.zeros(),
        )


class KVState(eqx.Module):
    """Everything a kv run carries from epoch to epoch."""

    seed: jnp.ndarray  # uint32
    clock: DF  # t (s)
    done: jnp.ndarray  # bool
    gen: ArrivalState
    table: Table
    type_inserted: jnp.ndarray  # int32 [m] requests of each type inserted so far
    type_completed: jnp.ndarray  # int32 [m] requests of each type completed so far
    totals: Totals
