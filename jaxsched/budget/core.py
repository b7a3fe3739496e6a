"""The token-budget batch model shared by the budget engine and `jaxsched.network` (paper 004).

One engine with a budget of b tokens per batch, as both simulators run it (the budget engine
alone, the network once per agent; docs/budget-semantics.md §2-§6, docs/network-semantics.md):

- `BatchOptions`, `choose_batch`: the static options a registered policy (`registry.POLICIES`)
  reads, and the batch (dp, dd) it picks on a `policies.View` of the queue;
- `batch_time`: the batch's duration, eq. (2.3) (or the linear model) plus the optional (A.1)
  and (A.2) terms; `batch_terms`: the per-slot terms whose sums it reads;
- `Window`, `hist_add`: the measurement window [burn_in_s, horizon_s) and the float-bit latency
  histograms of the streaming totals;
- `QUANTILES`, `safe_div`, `growth_slopes`: the host-side metrics (quantiles reported, ratios
  of counts, the stability statistic's least-squares slope);
- `KIND_NONE`, `trim_trajectories`, `run_warnings`: the runner hints of both engines.

Pure functions and immutable modules: the engines' step functions call them inside `lax.scan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import clock
from ..clock import DF
from ..histogram import bit_bins
from ..kernels import fused_sums, prefix_by_id
from ..tables import overflow_advice
from .policies import View
from .registry import POLICIES
from .timing import (
    budget_attention_s,
    budget_batch_time_s,
    budget_linear_time_s,
    budget_memory_overhead_s,
    kv_excess_tokens,
)

if TYPE_CHECKING:  # annotations only: the config imports the policies
    from .config import BudgetParams
    from .state import Table

# The latency quantiles every token-budget run reports: (metric tag, quantile).
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
# The kind of a recorded step of a run that has ended (both engines' trajectories).
KIND_NONE = 0


# --------------------------------------------------------------------------- one decision


@dataclass(frozen=True)
class BatchOptions:
    """The static options of one engine's batches: what a policy and `batch_time` read.

    A `BudgetConfig` has every one of these fields (the budget engine passes its config); the
    network builds one per run for its agents (`NetworkConfig.batch_options`). policy: a name
    in `registry.POLICIES`. phase_first, inner_order: `wc` only. type_order: `priority` only,
    the values of `View.type` from highest to lowest priority. batch_time: the base model of
    the batch time, "paper" (eq. (2.3)) or "linear" (prefill, decode and context tokens).
    attention, attention_prefix, memory_overhead: the (A.1) and (A.2) terms of the batch time.
    admission_cap: what M caps (`policies.admitted`; the network's agents keep "batch").
    The config that builds it has validated every field.
    """

    policy: str = "sarathi"
    phase_first: str = "decode"
    inner_order: str = "fcfs"
    type_order: tuple[int, ...] = (0,)
    batch_time: str = "paper"
    attention: bool = False
    attention_prefix: bool = False
    memory_overhead: str = "off"
    admission_cap: str = "batch"


def choose_batch(options, params: BudgetParams, view: View) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The batch the policy `options.policy` picks (docs/budget-semantics.md §3): dp int32[Q]
    prefill tokens per slot and dd bool[Q] decode tokens, as the policy returns them (the
    caller masks them to the queue's valid slots and remaining prefill). options: a
    `BatchOptions` or a `BudgetConfig`; params: one engine's `BudgetParams` (budget b, M,
    caps)."""
    return POLICIES[options.policy].fn(options, params, view)


def batch_terms(options, table: Table, dp, dd) -> dict[str, jnp.ndarray]:
    """The int32[Q] per-slot terms whose sums over the slots `batch_time` reads, by name (none
    for eq. (2.3) alone, which reads only the load): the linear model's prefill, decode and
    context tokens, the attention term's s1, s2 (and s3 with attention_prefix). dp int32[Q],
    dd bool[Q] on the pre-loading `table`. An engine may sum them with its own sums over the
    table in one pass (`kernels.fused_sums`) and hand the sums to `batch_time`."""
    P = table.vp - table.p
    D = table.vd - table.d
    terms = {}
    if options.batch_time == "linear":
        member = (dp > 0) | dd
        # Context sums stay int32: they are at most the table's tokens, Q * max length <= 2^30.
        terms.update(prefill=dp, decode=dd.astype(jnp.int32), context=jnp.where(member, P + D, 0))
    if options.attention:
        terms.update(s1=dp * dp, s2=jnp.where(dd, P + D, 0))
        if options.attention_prefix:
            terms.update(s3=dp * P)
    return terms


def batch_time(options, params: BudgetParams, table: Table, dp, dd, load, sums=None) -> DF:
    """Duration (s, double-float) of the batch (dp int32[Q], dd bool[Q], `load` int32 tokens)
    on the pre-loading `table`: eq. (2.3), or the linear model when options.batch_time is
    "linear", plus the attention term (A.1) when options.attention, plus the KV-memory
    overhead (A.2) when options.memory_overhead is on (`timing`; docs/budget-semantics.md §2
    step 5, in that order). options: a `BatchOptions` or a `BudgetConfig`. sums: {name: int32}
    the sums of `batch_terms` when the caller has them, else computed here (integer sums:
    exact, whatever the grouping)."""
    if sums is None:
        terms = batch_terms(options, table, dp, dd)
        sums = dict(zip(terms, fused_sums(tuple(terms.values())))) if terms else {}
    if options.batch_time == "linear":
        coefs = (params.prefill_s_per_token, params.decode_s_per_token, params.context_s_per_token)
        tau = budget_linear_time_s(sums["prefill"], sums["decode"], sums["context"], params.c_s, coefs, params.fence)
    else:
        tau = budget_batch_time_s(load, params.c_s, params.a_hi, params.a_lo, params.b0)
    if options.attention:
        s3 = sums["s3"] if options.attention_prefix else jnp.int32(0)
        tau = budget_attention_s(tau, sums["s1"], sums["s2"], s3, params.alpha, params.beta, params.fence)
    if options.memory_overhead != "off":
        P = table.vp - table.p
        D = table.vd - table.d
        member = (dp > 0) | dd
        kv = jnp.where(member, P + D + dp + dd.astype(jnp.int32), 0)
        # FCFS prefix sums from the oldest member's slot: members are valid entries, all
        # within Q consecutive entry numbers, so ring order from there is entry order.
        base = jnp.argmin(jnp.where(member, table.entry, jnp.iinfo(jnp.int32).max))
        x = kv_excess_tokens(kv, prefix_by_id(kv, base.astype(jnp.int32)), params.kv_limit)
        tau = budget_memory_overhead_s(
            tau, x, options.memory_overhead == "recompute", params.mem_c1, params.mem_c2, params.fence
        )
    return tau


# --------------------------------------------------------------------------- streaming totals


class Window(eqx.Module):
    """The measurement window [burn_in_s, horizon_s) as double-floats (s)."""

    start: DF
    end: DF

    @staticmethod
    def of(config) -> "Window":
        """The window of a config with burn_in_s and horizon_s (budget or network)."""
        return Window(DF.from_float64(config.burn_in_s), DF.from_float64(config.horizon_s))

    def contains(self, t: DF) -> jnp.ndarray:
        """bool: start <= t < end."""
        return clock.le(self.start, t) & ~clock.le(self.end, t)

    def overlap_s(self, a: DF, b: DF) -> jnp.ndarray:
        """float32 length of [a, b) within the window (s, >= 0)."""
        lo = clock.where(clock.le(self.start, a), a, self.start)
        hi = clock.where(clock.le(b, self.end), b, self.end)
        return jnp.maximum(clock.sub(hi, lo), 0.0)


def hist_add(hist: jnp.ndarray, x_s, mask, octave_bits: int) -> jnp.ndarray:
    """`hist` (int32[bins], `histogram.bit_num_bins(octave_bits)`) with one count added at the
    float-bit bin of each latency x_s (float32 s) where `mask` holds."""
    return hist.at[bit_bins(x_s, mask, octave_bits)].add(1, mode="drop")


# --------------------------------------------------------------------------- host metrics


def safe_div(a, b) -> np.ndarray:
    """float64 a / b elementwise, 0 where b <= 0 (a ratio over an empty count)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b > 0)


def growth_slopes(t: np.ndarray, y: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Least-squares slopes of y against t over the first count[...] points of each row
    ([..., G] arrays, float64); nan with fewer than 2 points."""
    t = np.asarray(t, np.float64)
    y = np.asarray(y, np.float64)
    mask = np.arange(t.shape[-1]) < np.asarray(count)[..., None]
    n = mask.sum(-1)
    tm = safe_div(np.where(mask, t, 0).sum(-1), n)[..., None]
    ym = safe_div(np.where(mask, y, 0).sum(-1), n)[..., None]
    sxx = np.where(mask, (t - tm) ** 2, 0).sum(-1)
    sxy = np.where(mask, (t - tm) * (y - ym), 0).sum(-1)
    out = safe_div(sxy, sxx)
    return np.where(n >= 2, out, np.nan)


# --------------------------------------------------------------------------- runner hints


def trim_trajectories(table_size: int, trajectories) -> dict[str, np.ndarray]:
    """Trajectories [S, T, ...] of runs padded into a bucket, cut to what the unpadded runs
    record (the budget engine and jaxsched.network): T to the longest of these runs (the rows
    whose kind is not KIND_NONE: a run's active steps come first, and its unpadded
    trajectories end after the longest of them) and per-slot rows [S, T, Q'] (record_members)
    to the run's own table_size Q."""
    out = dict(trajectories)
    steps = int((np.asarray(out["kind"]) != KIND_NONE).sum(axis=1).max(initial=0))
    return {k: (v[:, :steps, :table_size] if v.ndim == 3 else v[:, :steps]) for k, v in out.items()}


def run_warnings(engine: str, what: str, where: str, config, metrics) -> list[str]:
    """The warnings of token-budget runs (the budget engine and jaxsched.network): seeds whose
    table rejected `what` (unstable, or the table is too small), that did not reach the
    horizon within max_steps, or that stalled."""
    out = []
    bad = int((metrics["overflowed"] > 0).sum())
    if bad:
        out.append(
            f"{engine}: {bad} seeds rejected {what} (table_size {config.table_size} "
            f"full{where}): unstable at this horizon ({overflow_advice(config)})"
        )
    open_ = int((metrics["done"] == 0).sum())
    if open_:
        out.append(f"{engine}: {open_} seeds did not reach the horizon within max_steps")
    stalled = int(metrics["stalled"].sum())
    if stalled:
        out.append(f"{engine}: {stalled} seeds stalled with work no batch would take")
    return out
