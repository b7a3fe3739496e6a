"""State of the network engine: K agents' rings of tasks and their event bookkeeping
(docs/network-semantics.md). vmap adds a leading seed axis.

Each agent's queue is a budget-engine ring (`jaxsched.budget.state.Table`, here with leaves
[K, Q]): a task with entry number e at agent k lives in slot e mod Q, so FCFS order needs no
sort. Counts per agent are kept incrementally so the router and the snapshots read O(K)
numbers, never the [K, Q] tables.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from ..accumulate import Kahan
from ..budget.state import Table
from ..clock import DF
from ..workload.arrivals import ArrivalState


class Tasks(eqx.Module):
    """The tasks held by the agents, arrays [K, Q].

    table: the budget ring per agent (entry -1: empty slot; `arrival` is the request's external
    arrival time). stage: int32 stage of the task on its route. leaving: bool, its last decode
    token is in the agent's batch in flight; it leaves at the batch end (the agent's flush).
    plan_p, plan_d: int32 [K, Q, S] the request's (v_p, v_d) at every stage of its route, drawn
    once at its arrival (a flush copies the next stage's instead of sampling [Q] lengths);
    zeros when every route has one stage (nothing reads them then).
    """

    table: Table
    stage: jnp.ndarray
    leaving: jnp.ndarray
    plan_p: jnp.ndarray
    plan_d: jnp.ndarray

    @staticmethod
    def empty(K: int, Q: int, S: int) -> "Tasks":
        t = Table.empty(Q)
        table = jax.tree.map(lambda a: jnp.broadcast_to(a, (K,) + a.shape), t)
        zs = jnp.zeros((K, Q, S), jnp.int32)
        return Tasks(table, jnp.zeros((K, Q), jnp.int32), jnp.zeros((K, Q), bool), zs, zs)


class Agents(eqx.Module):
    """Per-agent bookkeeping, arrays [K].

    free_at: DF time of the agent's next event. pending: its batch ends at free_at (a flush is
    due). ready: a decision is due at free_at. Neither: the agent waits (idle) since `since`.
    entries: int32 tasks accepted so far (the next entry number). held: int32 slots held
    (leaving tasks included). active: int32 tasks not leaving (the router's n_k). tokens:
    int32 unprocessed tokens sum (p + d) (the router's x_k).
    """

    free_at: DF
    pending: jnp.ndarray
    ready: jnp.ndarray
    since: DF
    entries: jnp.ndarray
    held: jnp.ndarray
    active: jnp.ndarray
    tokens: jnp.ndarray

    @staticmethod
    def idle(K: int) -> "Agents":
        z = jnp.zeros((K,), jnp.int32)
        f = jnp.zeros((K,), jnp.float32)
        b = jnp.zeros((K,), bool)
        return Agents(DF(f, f), b, b, DF(f, f), z, z, z, z)


class Joins(eqx.Module):
    """The join point of `fork_join` (docs §3): id [J] int32, the request whose first sibling
    has finished and waits in slot id mod J (-1: free); waiting: int32 how many wait."""

    id: jnp.ndarray
    waiting: jnp.ndarray

    @staticmethod
    def empty(J: int) -> "Joins":
        return Joins(jnp.full((J,), -1, jnp.int32), jnp.int32(0))


class NetworkTotals(eqx.Module):
    """Streaming metric accumulators (window [burn_in, horizon), docs §5)."""

    exits: jnp.ndarray  # int32 departures from the network in the window
    latency_s: Kahan  # their end-to-end latency sum
    latency_hist: jnp.ndarray  # int32 [nb]
    batches: jnp.ndarray  # int32 [K] batches run
    window_batches: jnp.ndarray  # int32 [K] batches starting in the window
    partial: jnp.ndarray  # int32 [K] of those, b' < b_k with >= b_k tokens available
    idle_s: Kahan  # [K] waiting time within the window (closed waits)
    rejected: jnp.ndarray  # int32 tasks rejected by a held slot
    stalled: jnp.ndarray  # bool: an agent held tasks its policy would not take
    steps: jnp.ndarray  # int32 events processed
    snap_n: jnp.ndarray  # int32 [G] requests in the network at grid point j
    snap_x: jnp.ndarray  # int32 [G] their unprocessed tokens
    snap_next: jnp.ndarray  # int32 grid points recorded so far

    @staticmethod
    def zeros(K: int, nbins: int, G: int) -> "NetworkTotals":
        z = jnp.int32(0)
        zk = jnp.zeros((K,), jnp.int32)
        zg = jnp.zeros((G,), jnp.int32)
        return NetworkTotals(
            z,
            Kahan.zeros(),
            jnp.zeros((nbins,), jnp.int32),
            zk,
            zk,
            zk,
            Kahan.zeros((K,)),
            z,
            jnp.bool_(False),
            z,
            zg,
            zg,
            z,
        )


class NetworkState(eqx.Module):
    """Everything a network run carries from event to event."""

    seed: jnp.ndarray  # uint32
    clock: DF  # time of the last event processed (s)
    done: jnp.ndarray  # bool
    gen: ArrivalState
    tasks: Tasks
    agents: Agents
    joins: Joins
    totals: NetworkTotals
