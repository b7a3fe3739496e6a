"""Validated configuration of the kv engine: static `KVConfig` and traced `KVParams`.

`KVConfig` fixes array shapes and code paths (changing it recompiles): the request types'
lengths, the policy, the table size and the end-of-run rule. `KVParams` holds the numbers a
sweep may vary without recompiling (arrival rates, d0, d1, capacity, thresholds). Every invalid
value raises one `ConfigError` naming the field and the allowed range, before anything
compiles. Semantics: docs/kv-semantics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..clock import split12
from ..errors import (
    ConfigError,
    changed_fields,
    changed_keywords,
    reads_from,
    refuse_ignored,
    require,
    require_bool,
    require_choice,
    require_float,
    require_int,
)
from ..histogram import bit_num_bins
from ..tables import check_growable, largest_table
from ..workload.arrivals import check_rates
from .fluid import FluidTypes, Segments, equilibrium, nested_thresholds, span_work, stage_work
from .registry import BLOCK_RULES, DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN, POLICIES

END_MODES = ("drain", "force_clear")
# Default hardware of make_params: DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN and
# DEFAULT_CAPACITY_TOKENS, the WAIT paper's experiments (notes/001.md section 4; written in
# `registry.py`, which `--help` reads without JAX), and the default load d1 * A of
# `default_rates` (assumed; the paper sets rates per experiment).
DEFAULT_LOAD = 0.5
# int32 headroom: sums of per-request tokens over the table (batch tokens, memory) stay below
# this, and so do request counts and candidate indices.
INT_LIMIT = 2**30


def _int_tuple(value, field: str, lo: int, hi: int) -> tuple[int, ...]:
    """A non-empty tuple of integers in [lo, hi] (hashable, for the static config)."""
    require(
        isinstance(value, (tuple, list, np.ndarray)) and len(value) >= 1,
        field,
        "a non-empty sequence of integers",
        value,
    )
    return tuple(
        require_int(v if not isinstance(v, np.integer) else int(v), f"{field}[{i}]", lo=lo, hi=hi)
        for i, v in enumerate(value)
    )


@dataclass(frozen=True)
class KVConfig:
    """Static configuration of a kv run (docs/kv-semantics.md §1).

    prefill_tokens, decode_tokens: (m,) l_j >= 1 and l'_j >= 1 tokens per request type.
    policy: a name in jaxsched.kv.policies.POLICIES. num_requests N and/or horizon_s T (s): when the run ends.
    end_mode: "drain" (thresholds stop gating once all N arrived) or "force_clear".
    table_size Q: request slots, a ring (request id in slot id mod Q): Q must exceed the
    arrivals during the longest stay of a request, else arrivals are lost (counted, warned).
    arrivals_per_step A (<= Q): candidates examined per epoch.
    max_steps: bound on the number of epochs (kv's scan steps) of a run (formerly
    `max_epochs`, still accepted by the command line's --set, --axis and --config).
    hist_octave_bits: b, the latency / TTFT histograms (p50, p99) have 2^b bins per octave.
    segment_bounds: nested_wait only, last decode stage of each segment (strictly increasing,
    ending at max l'_j); None = the sorted distinct decode lengths (one segment per type).
    prefill_price: price the tokens a batch processes as a prefill (first prefills and the
    recomputation of restarted requests) at params.d1_prefill_s_per_token instead of d1
    (False: eq. (1), one price for every token, the paper's model).
    block_rules: vllm only, how it counts KV blocks (`BLOCK_RULES`): "kv" (the blocks the
    running requests' next tokens need) or "vidur" (Vidur's vLLM scheduler: admission counts
    the blocks the running requests hold, and each decode needs a free block at its turn).
    grow_table: table_size (a power of two) is the starting size: a run that loses an arrival
    to a full table runs again with twice the slots, until none is lost or Q reaches
    `max_table_size()`; its metrics are bitwise those of any larger table (`jaxsched.tables`).
    False (default): the table is the config's, and overflow loses arrivals (counted, warned).
    """

    prefill_tokens: tuple[int, ...] = (10, 10)
    decode_tokens: tuple[int, ...] = (10, 20)
    policy: str = "wait"
    num_requests: int | None = 1000
    horizon_s: float | None = None
    end_mode: str = "drain"
    table_size: int = 1024
    arrivals_per_step: int = 8
    max_steps: int = 200_000
    hist_octave_bits: int = 5
    segment_bounds: tuple[int, ...] | None = None
    prefill_price: bool = False
    block_rules: str = "kv"
    grow_table: bool = False

    def __post_init__(self):
        pre = _int_tuple(self.prefill_tokens, "prefill_tokens", 1, INT_LIMIT)
        dec = _int_tuple(self.decode_tokens, "decode_tokens", 1, 2**16)
        require(len(dec) == len(pre), "decode_tokens", f"of length m = {len(pre)} (as prefill_tokens)", dec)
        object.__setattr__(self, "prefill_tokens", pre)
        object.__setattr__(self, "decode_tokens", dec)
        require_choice(self.policy, "policy", POLICIES)
        require_choice(self.end_mode, "end_mode", END_MODES)
        require(
            self.num_requests is not None or self.horizon_s is not None,
            "num_requests",
            "set (an integer >= 1) when horizon_s is None",
            self.num_requests,
        )
        if self.num_requests is not None:
            require_int(self.num_requests, "num_requests", lo=1, hi=INT_LIMIT)
        if self.horizon_s is not None:
            object.__setattr__(self, "horizon_s", require_float(self.horizon_s, "horizon_s", lo=0.0, lo_open=True))
        Q = require_int(self.table_size, "table_size (Q)", lo=1, hi=2**20)
        require_int(self.arrivals_per_step, "arrivals_per_step (A)", lo=1, hi=min(4096, Q))
        require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)
        require_int(self.hist_octave_bits, "hist_octave_bits", lo=0, hi=10)
        if Q * self.max_len > INT_LIMIT:
            raise ConfigError(
                f"table_size (Q) * max_j (prefill + decode) = {Q} * {self.max_len} = "
                f"{Q * self.max_len} could overflow int32 batch sums; it must be <= {INT_LIMIT}"
            )
        self._check_segments()
        require(isinstance(self.prefill_price, bool), "prefill_price", "a bool", self.prefill_price)
        check_growable(Q, self.grow_table)
        require_choice(self.block_rules, "block_rules", BLOCK_RULES)
        # A policy's option set for another policy would change nothing (POLICIES' options).
        refuse_ignored(changed_fields(self, ("block_rules",)), {"policy": self.policy}, reads_from(POLICIES, "policy"))

    def _check_segments(self) -> None:
        if "segment_bounds" not in POLICIES[self.policy].options:
            require(
                self.segment_bounds is None,
                "segment_bounds",
                "None unless policy is 'nested_wait'",
                self.segment_bounds,
            )
            return
        require(
            len(set(self.prefill_tokens)) == 1,
            "prefill_tokens",
            "equal across types for nested_wait (group types by prefill length)",
            self.prefill_tokens,
        )
        b = (
            tuple(sorted(set(self.decode_tokens)))
            if self.segment_bounds is None
            else _int_tuple(self.segment_bounds, "segment_bounds", 1, 2**16)
        )
        require(all(x < y for x, y in zip(b, b[1:])), "segment_bounds", "strictly increasing", b)
        require(
            b[-1] == max(self.decode_tokens),
            "segment_bounds",
            f"ending at max(decode_tokens) = {max(self.decode_tokens)}",
            b,
        )
        object.__setattr__(self, "segment_bounds", b)

    @property
    def hist_bins(self) -> int:
        """Bins of the latency / TTFT histograms (jaxsched.histogram, float-bit grid)."""
        return bit_num_bins(self.hist_octave_bits)

    @property
    def m(self) -> int:
        """Number of request types."""
        return len(self.prefill_tokens)

    @property
    def num_stages(self) -> int:
        """K1 = max_j l'_j + 1: stages 0..l'_j of the longest type."""
        return max(self.decode_tokens) + 1

    @property
    def max_len(self) -> int:
        """Largest footprint of one request, max_j (l_j + l'_j) tokens."""
        return max(l + d for l, d in zip(self.prefill_tokens, self.decode_tokens))

    def max_table_size(self) -> int:
        """The most slots `grow_table` grows Q to: the largest power of two within table_size's
        bound (2^20) and the int32 headroom (Q * max_len <= INT_LIMIT)."""
        return largest_table(min(2**20, INT_LIMIT // self.max_len))

    @property
    def num_thresholds(self) -> int:
        """Length of the thresholds array: m (wait), L (nested_wait), 0 (the others)."""
        options = POLICIES[self.policy].options
        if "thresholds" not in options:
            return 0
        return len(self.segment_bounds) if "segment_bounds" in options else self.m

    def stage_segment(self) -> np.ndarray:
        """(K1,) int32: the 0-based segment of each stage (nested_wait)."""
        b = np.asarray(self.segment_bounds)
        return np.searchsorted(b, np.arange(self.num_stages), side="left").astype(np.int32)

    def segment_entry(self) -> np.ndarray:
        """(L,) int32: entry stage e_i of each segment (e_1 = 0, e_i = b_{i-1} + 1)."""
        b = np.asarray(self.segment_bounds)
        return np.concatenate([[0], b[:-1] + 1]).astype(np.int32)


class KVSizes(eqx.Module):
    """The sizes of one run padded into a larger config (a size bucket, `KVEngine.pad`), as
    traced int32 scalars: table_size Q <= config.table_size (the ring: request id lives in slot
    id mod Q) and arrivals_per_step A <= config.arrivals_per_step (candidates examined per
    epoch). Slots q >= Q exist in the arrays but never hold a request (id -1) and enter no
    metric; the arrival buffers' rows a >= A are never filled. The run's metrics and
    trajectories are bitwise those of the unpadded run (tests/kv/test_buckets.py).

    The run's bounds, which fix no shape, ride along so that runs differing in them share a
    bucket (`jaxsched.kv.engine.pad_run`): num_requests N (int32; 2^31 - 1 when None, a
    count no int32 counter of arrivals passes), the horizon T as the double-float horizon_hi
    + horizon_lo the clock compares with (+inf, 0 when None), horizon_bits the float64 T's
    two int32 words (the host divides the horizon's tokens by T itself), and max_steps, the
    run's bound on epochs (<= config.max_steps, which sets the bucket's scan length)."""

    table_size: jnp.ndarray
    arrivals_per_step: jnp.ndarray
    num_requests: jnp.ndarray
    horizon_hi: jnp.ndarray
    horizon_lo: jnp.ndarray
    horizon_bits: jnp.ndarray
    max_steps: jnp.ndarray


class KVParams(eqx.Module):
    """Traced parameters of a kv run (build with `make_params`, which validates them).

    d0_s (s), d1_s_per_token (s/token): float32, eq. (1); d1_hi + d1_lo = d1_s_per_token split in
    12-bit halves (jaxsched.clock.split12) for the exact iteration time; d1_prefill_hi/lo the
    same for the prefill price (config.prefill_price). capacity_tokens: int32 C.
    thresholds: int32 [m] (wait), [L] (nested_wait) or [0] (fcfs).
    rate_max: float32 Lambda_max (req/s); inv_rate_max: float32(1 / Lambda_max) (s).
    type_cdf: float32 [P, m] (docs/kv-semantics.md §3).
    period_s: float32 length of one rate period (s); inv_period_s: float32(1 / period_s).
    batch_limit (requests), token_limit (tokens): int32 limits of every policy's batch
    (docs/kv-semantics.md §6; INT_LIMIT when uncapped).
    burn_in_requests: int32 K, the requests left out of the measurement at each end of a
    finite run (docs/kv-semantics.md §8: requests K .. N - K - 1 are measured; 0: all).
    batch_size_cap, max_tokens_in_batch, block_size (tokens), num_blocks = C // block_size,
    watermark_blocks, chunk_size (tokens): int32 limits of the vllm and sarathi policies
    (docs/kv-semantics.md §6).
    fence: int32 -1, the traced all-ones word of `jaxsched.clock.fence` (keeps products from
    being fused into the clock's adds).
    sizes: the run's own sizes inside a size bucket (`KVSizes`), or None.
    """

    d0_s: jnp.ndarray
    d1_s_per_token: jnp.ndarray
    d1_hi: jnp.ndarray
    d1_lo: jnp.ndarray
    d1_prefill_hi: jnp.ndarray
    d1_prefill_lo: jnp.ndarray
    capacity_tokens: jnp.ndarray
    thresholds: jnp.ndarray
    rate_max: jnp.ndarray
    inv_rate_max: jnp.ndarray
    type_cdf: jnp.ndarray
    period_s: jnp.ndarray
    inv_period_s: jnp.ndarray
    batch_limit: jnp.ndarray
    token_limit: jnp.ndarray
    burn_in_requests: jnp.ndarray
    batch_size_cap: jnp.ndarray
    max_tokens_in_batch: jnp.ndarray
    block_size: jnp.ndarray
    num_blocks: jnp.ndarray
    watermark_blocks: jnp.ndarray
    chunk_size: jnp.ndarray
    fence: jnp.ndarray
    # The run's own sizes when it runs padded inside a size bucket (`KVEngine.pad`); None: the
    # config's shapes are the run's sizes. Not part of a results key: the point's config is.
    sizes: KVSizes | None = eqx.field(default=None, metadata={"identity": False})


def _rates(config: KVConfig, rates) -> np.ndarray:
    return check_rates(rates, config.m)


def work_per_request(config: KVConfig) -> np.ndarray:
    """(m,) int64 tokens: sum_{k=0}^{l'_j} (l_j + k), the batch tokens one request costs over
    its life (`jaxsched.kv.fluid.stage_work`, exact in integers)."""
    return stage_work(np.asarray(config.prefill_tokens, np.int64), np.asarray(config.decode_tokens, np.int64))


def _segment_work(config: KVConfig) -> np.ndarray:
    """(L,) int64 tokens: sum over the stages k of segment i of (l + k) (nested_wait;
    `jaxsched.kv.fluid.span_work`, exact in integers)."""
    return span_work(
        np.int64(config.prefill_tokens[0]),
        config.segment_entry().astype(np.int64),
        np.asarray(config.segment_bounds, np.int64),
    )


def default_thresholds(config: KVConfig, mean_rates: np.ndarray, d0: float, d1: float, capacity: float) -> np.ndarray:
    """Fluid thresholds rounded up: wait n_j = ceil(lambda_j dT*); nested n_i = ceil(c_min Lambda_i)."""
    if config.policy == "wait":
        types = FluidTypes(
            prefill=np.asarray(config.prefill_tokens, float),
            decode=np.asarray(config.decode_tokens),
            rates=mean_rates,
            d0=d0,
            d1=d1,
            capacity=capacity,
        )
        n = np.ceil(equilibrium(types).per_stage * (1 - 1e-12))
    else:
        seg_of_type = np.searchsorted(np.asarray(config.segment_bounds), config.decode_tokens)
        seg_rates = np.bincount(seg_of_type, weights=mean_rates, minlength=config.num_thresholds)
        # A segment no type ends in still carries the tails: give it a tiny rate for Segments.
        seg_rates = np.maximum(seg_rates, 1e-12 * mean_rates.sum())
        seg = Segments(
            prefill=float(config.prefill_tokens[0]),
            bounds=np.asarray(config.segment_bounds),
            rates=seg_rates,
            d0=d0,
            d1=d1,
            capacity=capacity,
        )
        n = np.ceil(nested_thresholds(seg) * (1 - 1e-12))
    return np.maximum(n, 1).astype(np.int64)


def default_rates(
    config: KVConfig, d1_s_per_token: float = DEFAULT_D1_S_PER_TOKEN, load: float = DEFAULT_LOAD
) -> np.ndarray:
    """(m,) requests/s: equal rates per type at load rho = d1 * A = `load` (an assumed default;
    the papers fix rates per experiment)."""
    return np.full(config.m, load / (d1_s_per_token * float(np.sum(work_per_request(config)))))


def make_params(
    config: KVConfig,
    *,
    rates=None,
    d0_s: float = DEFAULT_D0_S,
    d1_s_per_token: float = DEFAULT_D1_S_PER_TOKEN,
    capacity_tokens: int = DEFAULT_CAPACITY_TOKENS,
    thresholds=None,
    period_s: float = 1.0,
    check_stability: bool = True,
    batch_limit: int | None = None,
    token_limit: int | None = None,
    d1_prefill_s_per_token: float | None = None,
    burn_in_requests: int = 0,
    batch_size_cap: int = 128,
    max_tokens_in_batch: int = 4096,
    block_size: int = 16,
    watermark: float = 0.01,
    chunk_size: int = 512,
) -> KVParams:
    """Validated KVParams (docs/kv-semantics.md §1, §3).

    rates: [m] or [P, m] requests/s (P periods of period_s seconds, cyclic); None:
    `default_rates` (equal rates at load d1 * A = 0.5).
    d0_s, d1_s_per_token, capacity_tokens: eq. (1) and the KV capacity C; defaults are the WAIT
    paper's experiment hardware (d0 = 10 ms, d1 = 1e-6 s/token, C = 110 000 tokens).
    thresholds: integers >= 1, [m] (wait) or [L] (nested_wait); None = fluid defaults
    (`default_thresholds`); must be None or empty for fcfs and vllm.
    d1_prefill_s_per_token: the price of a prefill token (s/token) when config.prefill_price
    (default d1: eq. (1)); a restart's recomputation is a prefill.
    batch_limit (requests), token_limit (tokens processed): the limits of every policy's
    batch, applied after the policy's choice (the oldest members that fit); None: uncapped.
    burn_in_requests: K, the requests at each end of a finite run left out of the measurement
    (warm-up and cool-down; docs/kv-semantics.md §8): 0 <= 2K < N (0 without N).
    batch_size_cap, max_tokens_in_batch, block_size (tokens), watermark (fraction of the
    C // block_size KV blocks kept free at admission): vllm and sarathi (max_tokens_in_batch:
    vllm only), upstream Vidur's defaults; chunk_size (tokens): sarathi's prefill budget.
    check_stability: require d1 * A < 1 with A = sum_j lambda_j (l'_j + 1)(l_j + l'_j / 2) at the
    time-averaged rates (a finite burst may be run unstable with False).

    A policy's limit given away from its default for a policy that does not read it
    (chunk_size with vllm; the readers are `POLICIES`' options) is refused here, with one
    ConfigError naming it and its readers (thresholds: None or empty unless the policy has
    thresholds). Inside `errors.as_one_grid` (a sweep's points, a comparison of policies
    sharing one set of keywords) the grid refuses only a limit that none of its points reads.
    """
    require(
        isinstance(config, KVConfig),
        "config",
        "a KVConfig (kv.make_params builds the kv engine's params)",
        type(config).__name__,
    )
    d0 = require_float(d0_s, "d0_s", lo=0.0, lo_open=True)
    d1 = require_float(d1_s_per_token, "d1_s_per_token", lo=0.0)
    require_bool(check_stability, "check_stability")
    if rates is None:
        require(d1 > 0, "d1_s_per_token", "> 0 when rates are left to the default", d1)
        rates = default_rates(config, d1)
    r = _rates(config, rates)
    C = require_int(capacity_tokens, "capacity_tokens", lo=1, hi=INT_LIMIT)
    period = require_float(period_s, "period_s", lo=0.0, lo_open=True)
    require(
        C >= config.max_len,
        "capacity_tokens",
        f">= max_j (prefill + decode) = {config.max_len} (one request must fit)",
        C,
    )
    mean_rates = r.mean(axis=0)
    work = float(np.dot(mean_rates, work_per_request(config)))
    if check_stability:
        require(
            d1 * work < 1.0,
            "d1_s_per_token",
            f"< 1 / A = {1.0 / work:.6g} (stable load: d1 * A < 1 with "
            f"A = sum_j rates_j (l'_j + 1)(l_j + l'_j / 2) = {work:.6g} tokens/s)",
            d1,
        )
    cum = np.cumsum(r, axis=1, dtype=np.float64)
    lam_max = float(cum[:, -1].max())
    if config.horizon_s is not None:
        require(
            config.horizon_s * lam_max <= INT_LIMIT / 2,
            "horizon_s",
            f"<= {INT_LIMIT / 2 / lam_max:.6g} s (int32 candidate counter at Lambda_max {lam_max:.6g}/s)",
            config.horizon_s,
        )
    if config.num_requests is not None:
        accept = float(cum[:, -1].mean()) / lam_max
        require(
            config.num_requests / accept <= INT_LIMIT / 2,
            "num_requests",
            f"<= {int(INT_LIMIT / 2 * accept)} (int32 candidate counter with thinning)",
            config.num_requests,
        )
    th = _thresholds(config, thresholds, mean_rates, d0, d1, C)
    d1_hi, d1_lo = split12(d1)
    d1p = (
        d1
        if d1_prefill_s_per_token is None
        else require_float(d1_prefill_s_per_token, "d1_prefill_s_per_token", lo=0.0)
    )
    require(
        d1p == d1 or config.prefill_price,
        "d1_prefill_s_per_token",
        "None (or d1) unless KVConfig.prefill_price is True",
        d1_prefill_s_per_token,
    )
    p_hi, p_lo = split12(d1p)
    vl = _vllm_limits(config, C, batch_size_cap, max_tokens_in_batch, block_size, watermark)
    vl["chunk_size"] = require_int(chunk_size, "chunk_size", lo=1, hi=INT_LIMIT)
    limits = dict(
        batch_size_cap=batch_size_cap,
        max_tokens_in_batch=max_tokens_in_batch,
        block_size=block_size,
        watermark=watermark,
        chunk_size=chunk_size,
    )
    reads = reads_from(POLICIES, "policy")
    # thresholds has its own check (_thresholds): an empty sequence stands for none too.
    given = [k for k in changed_keywords(make_params, limits) if k in reads]
    refuse_ignored(given, {"policy": config.policy}, reads)
    vl["batch_limit"] = (
        INT_LIMIT if batch_limit is None else require_int(batch_limit, "batch_limit", lo=1, hi=INT_LIMIT)
    )
    # The oldest request must fit a batch on its own, or the run could never make progress.
    vl["token_limit"] = (
        INT_LIMIT
        if token_limit is None
        else require_int(
            token_limit,
            "token_limit (>= max_j (prefill + decode), the largest request)",
            lo=config.max_len,
            hi=INT_LIMIT,
        )
    )
    vl["burn_in_requests"] = require_int(
        burn_in_requests,
        "burn_in_requests (2 K < num_requests; 0 without num_requests)",
        lo=0,
        hi=0 if config.num_requests is None else (config.num_requests - 1) // 2,
    )
    return KVParams(
        d0_s=jnp.float32(d0),
        d1_s_per_token=jnp.float32(d1),
        d1_hi=jnp.float32(d1_hi),
        d1_lo=jnp.float32(d1_lo),
        d1_prefill_hi=jnp.float32(p_hi),
        d1_prefill_lo=jnp.float32(p_lo),
        capacity_tokens=jnp.int32(C),
        thresholds=jnp.asarray(th, jnp.int32),
        rate_max=jnp.float32(lam_max),
        inv_rate_max=jnp.float32(1.0 / lam_max),
        type_cdf=jnp.asarray((cum / lam_max).astype(np.float32)),
        period_s=jnp.float32(period),
        inv_period_s=jnp.float32(1.0 / period),
        **{k: jnp.int32(v) for k, v in vl.items()},
        fence=jnp.int32(-1),
    )


def _vllm_limits(config: KVConfig, C: int, cap, max_tokens, block, watermark) -> dict:
    """Validated vllm limits (ints); checked only when the policy is vllm."""
    cap = require_int(cap, "batch_size_cap", lo=1, hi=INT_LIMIT)
    max_tokens = require_int(max_tokens, "max_tokens_in_batch", lo=1, hi=INT_LIMIT)
    block = require_int(block, "block_size", lo=1, hi=INT_LIMIT)
    watermark = require_float(watermark, "watermark", lo=0.0, hi=1.0)
    num_blocks = C // block
    wm = int(math.floor(watermark * num_blocks))
    L = config.max_len
    options = POLICIES[config.policy].options
    if "max_tokens_in_batch" in options:
        require(
            max_tokens >= L,
            "max_tokens_in_batch",
            f">= max_j (prefill + decode) = {L} (a restarted request must be admissible)",
            max_tokens,
        )
    if "block_size" in options:
        need = -(-L // block)
        require(
            num_blocks - wm >= need,
            "capacity_tokens",
            f"with C // block_size - watermark blocks = {num_blocks} - {wm} >= {need} "
            f"(blocks of the longest request) for {config.policy}",
            C,
        )
    if config.block_rules == "vidur":
        # Under Vidur's rules a decode needs a free block at its turn: a request that alone
        # holds every block (ceil((l + k - 1) / b) = num_blocks) restarts itself and the run
        # would stall; the longest request's KV before its last token must leave one free.
        held = -(-(L - 1) // block)
        require(
            num_blocks - 1 >= held,
            "capacity_tokens",
            f"with C // block_size - 1 = {num_blocks} - 1 >= ceil((max_j (prefill + decode) - 1) / "
            f"block_size) = ceil({L - 1} / {block}) = {held} (block_rules 'vidur': a decode needs a "
            "free block at its turn)",
            C,
        )
    return dict(
        batch_size_cap=cap, max_tokens_in_batch=max_tokens, block_size=block, num_blocks=num_blocks, watermark_blocks=wm
    )


def _thresholds(config: KVConfig, thresholds, mean_rates, d0, d1, C) -> np.ndarray:
    """Validated integer thresholds (see make_params)."""
    n = config.num_thresholds
    if "thresholds" not in POLICIES[config.policy].options:
        require(thresholds is None or len(thresholds) == 0, "thresholds", f"None for {config.policy}", thresholds)
        return np.zeros((0,), np.int64)
    if thresholds is None:
        th = default_thresholds(config, mean_rates, d0, d1, float(C))
    else:
        th = np.asarray(_int_tuple(thresholds, "thresholds", 1, INT_LIMIT), np.int64)
    require(th.size == n, "thresholds", f"of length {n} ({'m' if config.policy == 'wait' else 'L'})", th.tolist())
    if config.policy == "wait":
        need = int(np.dot(th, work_per_request(config)))
        require(
            C >= need, "capacity_tokens", f">= M^pi = sum_j n_j sum_k (l_j + k) = {need} (WAIT has no memory check)", C
        )
        require(need <= INT_LIMIT, "thresholds", f"with M^pi <= {INT_LIMIT}", th.tolist())
    return th
