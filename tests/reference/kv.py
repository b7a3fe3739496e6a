"""Plain-Python reference simulator of the kv engine (test oracle).

This module follows `docs/kv-semantics.md` literally, one request at a time: plain lists and
dicts for the request table, Python ints for tokens and memory, and np.float32 scalars for every
time operation, in the exact order of the double-float rules of §2, so its times are bitwise
those of the engine. It is written for clarity, not speed: the vectorized engine in
`jaxsched/kv/` is checked against its per-epoch trajectory and metrics.

Only NumPy (for IEEE float32 scalars) and the standard library are used, so a bug in the array
code cannot leak into the oracle. The arrival gaps e_i are an input: §3 says a reference takes
them from `jaxsched.workload.arrivals.arrival_stream`, because log1p is not correctly rounded.
Everything after e_i (candidate times, periods, thinning, types) is recomputed here; the type
draws v_i come from a stdlib re-implementation of jaxsched.rng's counter hash (`kv_uniform`).

Entry point: `simulate(...)`. Double-float helpers (`DF`, `two_sum`, `fast_two_sum`, `add_f32`,
`sub`, `le`, `from_float64`, `to_float64`), `iteration_time` and the histogram helpers of §8
(`hist_bin`, `hist_quantile`) are public for the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tests.reference.rng import uniform

__all__ = [
    "simulate",
    "POLICIES",
    "END_MODES",
    "BLOCK_RULES",
    "KINDS",
    "DF",
    "two_sum",
    "fast_two_sum",
    "add_f32",
    "add",
    "split12",
    "sub",
    "le",
    "from_float64",
    "to_float64",
    "iteration_time",
    "kv_uniform",
    "type_cdf",
    "empirical_quantile",
    "hist_bin",
    "hist_quantile",
    "vllm_blocks",
    "STREAM_KV_GAP",
    "STREAM_KV_TYPE",
]

POLICIES: tuple[str, ...] = ("wait", "nested_wait", "fcfs", "vllm", "sarathi")
END_MODES: tuple[str, ...] = ("drain", "force_clear")
BLOCK_RULES: tuple[str, ...] = ("kv", "vidur")
# Epoch kinds of §9.
KIND_NONE, KIND_INSERT, KIND_BATCH, KIND_IDLE, KIND_END = 0, 1, 2, 3, 4
KINDS = {
    KIND_NONE: "nothing",
    KIND_INSERT: "insert only",
    KIND_BATCH: "batch",
    KIND_IDLE: "idle jump",
    KIND_END: "ends the run",
}
# Stream tags of jaxsched.rng (checked against it in tests/kv/test_reference.py).
STREAM_KV_GAP = 8
STREAM_KV_TYPE = 9

F32 = np.float32
# Latency / TTFT histograms (§8): 2^b bins per octave on [2^-20, 2^20) s.
HIST_MIN_EXP, HIST_MAX_EXP = -20, 20


# --------------------------------------------------------------------------------------------
# Double-float time (§2): every operation is a fixed sequence of float32 ops
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DF:
    """A time in seconds, hi + lo, both np.float32, with hi = fl(hi + lo)."""

    hi: np.float32
    lo: np.float32


ZERO = DF(F32(0.0), F32(0.0))


def two_sum(a: np.float32, b: np.float32) -> tuple[np.float32, np.float32]:
    """s = a + b; bb = s - a; err = (a - (s - bb)) + (b - bb)."""
    a, b = F32(a), F32(b)
    s = F32(a + b)
    bb = F32(s - a)
    err = F32(F32(a - F32(s - bb)) + F32(b - bb))
    return s, err


def fast_two_sum(a: np.float32, b: np.float32) -> tuple[np.float32, np.float32]:
    """s = a + b; err = b - (s - a)."""
    a, b = F32(a), F32(b)
    s = F32(a + b)
    return s, F32(b - F32(s - a))


def add_f32(x: DF, b: np.float32) -> DF:
    """(s, e) = two_sum(x.hi, b); e = e + x.lo; return fast_two_sum(s, e)."""
    s, e = two_sum(x.hi, b)
    e = F32(e + x.lo)
    hi, lo = fast_two_sum(s, e)
    return DF(hi, lo)


def sub(x: DF, y: DF) -> np.float32:
    """x - y rounded to float32: two_sum(x.hi, -y.hi), e += (x.lo - y.lo), fast_two_sum, h + l."""
    s, e = two_sum(x.hi, F32(-y.hi))
    e = F32(e + F32(x.lo - y.lo))
    h, l = fast_two_sum(s, e)
    return F32(h + l)


def le(x: DF, y: DF) -> bool:
    """x <= y for normalized double-floats."""
    return bool(x.hi < y.hi or (x.hi == y.hi and x.lo <= y.lo))


def from_float64(value: float) -> DF:
    """hi = float32(T); lo = float32(T - float64(hi))."""
    hi = F32(value)
    return DF(hi, F32(float(value) - float(hi)))


def to_float64(x: DF) -> float:
    """float64(hi) + float64(lo)."""
    return float(x.hi) + float(x.lo)


def add(x: DF, y: DF) -> DF:
    """(s, e) = two_sum(x.hi, y.hi); e = e + (x.lo + y.lo); return fast_two_sum(s, e)."""
    s, e = two_sum(x.hi, y.hi)
    e = F32(e + F32(x.lo + y.lo))
    hi, lo = fast_two_sum(s, e)
    return DF(hi, lo)


def split12(x: float) -> tuple[np.float32, np.float32]:
    """(hi, lo): hi = the float32 with bits(x) & 0xFFFFF000, lo = float32(x - hi), both exact."""
    x = F32(x)
    bits = int(np.array(x, np.float32).view(np.uint32)) & 0xFFFFF000
    hi = np.array(bits, np.uint32).view(np.float32)[()]
    return F32(hi), F32(x - hi)


def iteration_time(tokens: int, d0: np.float32, d1: np.float32) -> DF:
    """tau = d0 + d1 * tokens as a double-float from exact float32 products (§2, eq. (1)).

    d1 is split in 12-bit halves (split12) and tokens in 12-bit limbs
    T_i = float32(((tokens >> 12 i) & 4095) * 2^(12 i)); every product d1_half * T_i is exact,
    and they are added to (d0, 0) with add_f32 in the documented order.
    """
    return _add_products(DF(F32(d0), F32(0.0)), tokens, d1)


def _add_products(tau: DF, tokens: int, d1: np.float32) -> DF:
    """tau + d1 * tokens from the six exact products, in the order of §2."""
    d1_hi, d1_lo = split12(d1)
    T = [F32(((tokens >> (12 * i)) & 4095) * 2.0 ** (12 * i)) for i in range(3)]
    for p in (d1_hi * T[2], d1_hi * T[1], d1_lo * T[2], d1_hi * T[0], d1_lo * T[1], d1_lo * T[0]):
        tau = add_f32(tau, F32(p))
    return tau


def priced_iteration_time(
    decode_tokens: int, prefill_tokens: int, d0: np.float32, d1: np.float32, d1_prefill: np.float32
) -> DF:
    """§2 with a prefill price: d0 + d1 * decode_tokens, then + d1_prefill * prefill_tokens."""
    return _add_products(_add_products(DF(F32(d0), F32(0.0)), decode_tokens, d1), prefill_tokens, d1_prefill)


# --------------------------------------------------------------------------------------------
# Counter-based uniforms (jaxsched.rng.uniform) in the standard library
# --------------------------------------------------------------------------------------------
def kv_uniform(seed: int, index: int, stream: int) -> np.float32:
    """jaxsched.rng.uniform(seed, index, stream) as float32 (exact: a multiple of 2^-24)."""
    return F32(uniform(seed, index, stream))


def type_cdf(rates: Sequence[float] | Sequence[Sequence[float]]) -> tuple[list[list[np.float32]], float]:
    """(type_cdf [P][m] float32, Lambda_max64) of §3 from rates [m] or [P][m] (requests/s).

    cum[p][j] is the running float64 sum of rates[p][0..j] (what np.cumsum computes, in order);
    Lambda_max64 = max_p cum[p][m-1]; type_cdf[p][j] = float32(cum[p][j] / Lambda_max64).
    """
    rows = [list(rates)] if not isinstance(rates[0], (list, tuple, np.ndarray)) else [list(r) for r in rates]
    cums: list[list[float]] = []
    for row in rows:
        acc, cum = 0.0, []
        for x in row:
            acc += float(x)
            cum.append(acc)
        cums.append(cum)
    lam_max = max(cum[-1] for cum in cums)
    return [[F32(c / lam_max) for c in cum] for cum in cums], lam_max


def empirical_quantile(values: Sequence[float], q: float) -> float:
    """The ceil(q n)-th smallest value (index ceil(q n) - 1, clipped); 0.0 when empty."""
    n = len(values)
    if n == 0:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(max(math.ceil(q * n) - 1, 0), n - 1)])


def hist_bin(x: np.float32, octave_bits: int) -> int:
    """Histogram bin of a float32 value x >= 0 (s), §8: 0 below 2^-20, nb - 1 from 2^20 on,
    else (bits(x) >> (23 - b)) - ((127 - 20) << b) + 1 with bits(x) the IEEE word of x."""
    b = octave_bits
    nb = (HIST_MAX_EXP - HIST_MIN_EXP) * 2**b + 2
    x = F32(x)
    if x < F32(2.0**HIST_MIN_EXP):
        return 0
    bits = int(np.array(x, np.float32).view(np.int32))
    return min((bits >> (23 - b)) - ((127 + HIST_MIN_EXP) << b) + 1, nb - 1)


def hist_quantile(values: Sequence[np.float32], q: float, octave_bits: int) -> float:
    """§8 quantile: the midpoint of the bin holding the ceil(q n)-th smallest value (0 for bin 0,
    2^20 s for the top bin, 0 when empty). Bin k >= 1 covers [2^e (1 + f / 2^b),
    2^e (1 + (f + 1) / 2^b)) with e = -20 + (k - 1) // 2^b and f = (k - 1) mod 2^b."""
    n = len(values)
    if n == 0:
        return 0.0
    per = 2**octave_bits
    nb = (HIST_MAX_EXP - HIST_MIN_EXP) * per + 2
    k = hist_bin(sorted(values)[max(math.ceil(q * n), 1) - 1], octave_bits)
    if k == 0:
        return 0.0
    if k == nb - 1:
        return 2.0**HIST_MAX_EXP
    e, f = divmod(k - 1, per)
    return 2.0 ** (HIST_MIN_EXP + e) * (1.0 + (f + 0.5) / per)


# --------------------------------------------------------------------------------------------
# Requests and the arrival stream (§3, §4)
# --------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Request:
    """One accepted arrival and everything that happens to it."""

    id: int
    type: int
    arrival: DF
    prefill: int  # l_j
    decode: int  # l'_j
    stage: int = 0
    resident: bool = False  # holds KV on the GPU
    prefilled: int = 0  # tokens of a chunked prefill done so far (sarathi), else 0
    first_token_done: bool = False
    ttft: np.float32 | None = None
    latency: np.float32 | None = None
    completion: DF | None = None
    preemptions: int = 0
    inserted: bool = False  # False: lost to a full table (table_overflow)
    batches: list[int] = field(default_factory=list)  # batch numbers that advanced its stage
    chunks: list[int] = field(default_factory=list)  # batch numbers of partial prefill chunks

    @property
    def work(self) -> int:
        """Tokens it costs when processed now, and its KV when resident: l_j + k."""
        return self.prefill + self.stage

    @property
    def partial(self) -> bool:
        """Non-resident with a chunked prefill under way (sarathi): holds its prefill's KV."""
        return not self.resident and self.prefilled > 0

    @property
    def holds(self) -> bool:
        """Holds KV now: resident, or a partial chunked prefill (§4, §6 sarathi)."""
        return self.resident or self.partial


class Arrivals:
    """The candidate stream of §3: candidate i's time, period, acceptance and type.

    gap(i) returns the float32 e_i and type_u(i) the float32 v_i; both may be sequences.
    Exhaustion (N accepted, or the candidate after T) is decided when a candidate is reached.
    """

    def __init__(
        self,
        gap: Callable[[int], np.float32],
        type_u: Callable[[int], np.float32],
        cdf: list[list[np.float32]],
        period_s: float,
        num_requests: int | None,
        horizon: DF | None,
    ) -> None:
        self.gap = gap
        self.type_u = type_u
        self.cdf = cdf
        self.inv_period = F32(1.0 / float(period_s))  # inv_period_s = float32(1 / float64(period_s))
        self.N = num_requests
        self.T = horizon
        self.num_arrived = 0
        self.examined: list[dict[str, Any]] = []
        self._reach(0, ZERO)

    def _reach(self, index: int, prev: DF) -> None:
        """Position the generator at candidate `index`, whose predecessor was at `prev`."""
        self.index = index
        if self.N is not None and self.num_arrived >= self.N:
            # No later candidate is examined; its time is never needed.
            self.time, self.accepted, self.type, self.exhausted = None, False, -1, True
            return
        self.time = add_f32(prev, F32(self.gap(index)))
        self.exhausted = self.T is not None and not le(self.time, self.T)
        self.accepted, self.type = self._classify(index, self.time)

    def _classify(self, index: int, time: DF) -> tuple[bool, int]:
        """Thinning against the period of a_i, then the first j with v_i < type_cdf[p][j].

        p_i = floor(fl(a_i.hi * inv_period_s)) mod P (a float32 product).
        """
        P = len(self.cdf)
        p = int(math.floor(F32(time.hi * self.inv_period))) % P if P > 1 else 0
        v = F32(self.type_u(index))
        row = self.cdf[p]
        if not v < row[-1]:
            return False, -1
        return True, next(j for j, c in enumerate(row) if v < c)

    def due(self, t: DF) -> bool:
        """Candidate i must be examined at clock t: stream not exhausted and a_i <= t."""
        return not self.exhausted and le(self.time, t)

    def examine(self) -> tuple[bool, int, DF]:
        """Examine candidate i and advance to i + 1; returns (accepted, type, a_i)."""
        accepted, typ, time = self.accepted, self.type, self.time
        self.examined.append({"index": self.index, "t_hi": time.hi, "t_lo": time.lo, "accepted": accepted, "type": typ})
        if accepted:
            self.num_arrived += 1
        self._reach(self.index + 1, time)
        return accepted, typ, time


# --------------------------------------------------------------------------------------------
# Policies (§6): each maps the table (requests sorted by id) to (batch B, preempted P, chunks),
# B and P sets of ids, chunks {id in B: tokens it processes} (its work l_j + k except for a
# chunked prefill, sarathi)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyInput:
    """What a policy sees at one epoch."""

    requests: list[Request]  # every request in the table, ascending id
    thresholds: tuple[int, ...]  # n_j (wait), n_i (nested_wait), () (the others)
    capacity: int  # C, tokens
    draining: bool
    decode: tuple[int, ...]  # l'_j
    segment_bounds: tuple[int, ...]  # b_i (nested_wait)
    batch_size_cap: int = 128  # vllm, sarathi: requests per batch
    max_tokens_in_batch: int = 4096  # vllm
    block_size: int = 16  # vllm, sarathi: tokens per KV block
    watermark: float = 0.01  # vllm, sarathi: fraction of the blocks kept free at admission
    chunk_size: int = 512  # sarathi: prefill token budget per batch
    block_rules: str = "kv"  # vllm: "kv" or "vidur" (Vidur's two block rules, §6)


Decision = tuple[set[int], set[int], dict[int, int]]


def _whole(batch: list[Request] | set[int], reqs: list[Request]) -> dict[int, int]:
    """Chunks of a batch whose members all process their whole work l_j + k."""
    ids = {r.id if isinstance(r, Request) else r for r in batch}
    return {r.id: r.work for r in reqs if r.id in ids}


def within_limits(
    batch_ids: set[int], chunks: dict[int, int], batch_limit: int, token_limit: int
) -> tuple[set[int], dict[int, int]]:
    """§6, every policy: keep the oldest members (ascending id) while at most batch_limit of
    them process at most token_limit tokens in total; stop at the first that does not fit."""
    kept: dict[int, int] = {}
    total = 0
    for i in sorted(batch_ids):
        if len(kept) + 1 > batch_limit or total + chunks[i] > token_limit:
            break
        kept[i] = chunks[i]
        total += chunks[i]
    return set(kept), kept


def _first_per_group(
    reqs: list[Request], group: Callable[[Request], Any], limit: Callable[[Request], int]
) -> list[Request]:
    """Requests whose rank (count of same-group requests with a smaller id) is < limit(group)."""
    seen: dict[Any, int] = {}
    out = []
    for r in reqs:  # ascending id
        g = group(r)
        rank = seen.get(g, 0)
        seen[g] = rank + 1
        if rank < limit(r):
            out.append(r)
    return out


def policy_wait(inp: PolicyInput) -> Decision:
    """Alg. 1: every request of a fired type with rank < n_j in its (type, stage) group."""
    m = len(inp.thresholds)
    fired = []
    for j in range(m):
        if inp.draining:
            fired.append(any(r.type == j for r in inp.requests))
        else:
            fired.append(sum(1 for r in inp.requests if r.type == j and r.stage == 0) >= inp.thresholds[j])
    members = [r for r in inp.requests if fired[r.type]]
    batch = _first_per_group(members, lambda r: (r.type, r.stage), lambda r: inp.thresholds[r.type])
    return {r.id for r in batch}, set(), _whole(batch, inp.requests)


def stage_segment(stage: int, bounds: Sequence[int]) -> int:
    """0-based segment of a stage: the first i with stage <= b_i (segment i holds e_i..b_i)."""
    return next(i for i, b in enumerate(bounds) if stage <= b)


def policy_nested_wait(inp: PolicyInput) -> Decision:
    """Alg. 2 with segments, plus the memory check of §6.

    Memory check: order the contributors as the members of B0 by id, then the paused residents
    (resident, not in B0) by id; keep the longest prefix of that order whose memory is <= C.
    Dropped residents are preempted; dropped members leave B.
    """
    bounds = inp.segment_bounds
    L = len(bounds)
    entry = [0] + [b + 1 for b in bounds[:-1]]
    if inp.draining:
        i_star = L
    else:
        i_star = 0
        for i in range(L):
            if sum(1 for r in inp.requests if r.stage == entry[i]) >= inp.thresholds[i]:
                i_star = i + 1
            else:
                break
    eligible = [r for r in inp.requests if stage_segment(r.stage, bounds) < i_star]
    b0 = _first_per_group(eligible, lambda r: r.stage, lambda r: inp.thresholds[stage_segment(r.stage, bounds)])
    b0_ids = {r.id for r in b0}
    paused = [r for r in inp.requests if r.resident and r.id not in b0_ids]
    order = b0 + paused  # both ascending id
    kept: set[int] = set()
    total = 0
    for r in order:
        if total + r.work > inp.capacity:
            break
        kept.add(r.id)
        total += r.work
    dropped = [r for r in order if r.id not in kept]
    batch = b0_ids - {r.id for r in dropped}
    return batch, {r.id for r in dropped if r.resident}, _whole(batch, inp.requests)


def policy_fcfs(inp: PolicyInput) -> Decision:
    """Longest prefix by id whose total of l_j + k fits C; resident requests outside are preempted."""
    batch: set[int] = set()
    total = 0
    for r in inp.requests:
        if total + r.work > inp.capacity:
            break
        batch.add(r.id)
        total += r.work
    return batch, {r.id for r in inp.requests if r.resident and r.id not in batch}, _whole(batch, inp.requests)


def vllm_blocks(inp: PolicyInput) -> tuple[int, int]:
    """(num_blocks, watermark_blocks) = (C // b, floor(watermark * num_blocks)) (host float64)."""
    num_blocks = inp.capacity // inp.block_size
    return num_blocks, int(math.floor(inp.watermark * num_blocks))


def _blocks(r: Request, block_size: int) -> int:
    """KV blocks of a request with work w = l_j + k: ceil(w / b)."""
    return -(-r.work // block_size)


def _held(r: Request, block_size: int) -> int:
    """KV blocks a running request with work w = l_j + k holds before its next decode (its KV
    of w - 1 tokens): ceil((w - 1) / b)."""
    return -(-(r.work - 1) // block_size)


def policy_vllm(inp: PolicyInput) -> Decision:
    """vLLM-like (§6): prefill first, restart preemption of the newest on a block shortage.

    Waiting (non-resident) requests are admitted one at a time in id order while the running
    count plus the admitted stays <= batch_size_cap, admitted * max(work) <= max_tokens_in_batch
    and the blocks of the running plus the admitted stay <= num_blocks - watermark_blocks; the
    first that fails stops admission. A batch with an admission is prefill-only (P empty).
    Otherwise the running requests decode: the longest prefix by id whose blocks fit num_blocks;
    the running ones outside it are preempted (restart).

    block_rules "vidur" (Vidur's vLLM scheduler): admission counts, for each running request,
    the blocks it holds, ceil((w - 1) / b), instead of ceil(w / b); and the running requests are
    walked by id, a request r_p staying in the decode iff the blocks of the kept ones before it
    after their growth, plus its own before growth, leave one block free:
    sum_{kept j < p} ceil(w_j / b) + ceil((w_p - 1) / b) <= num_blocks - 1 (the first that
    fails and every newer one are preempted).
    """
    num_blocks, wm = vllm_blocks(inp)
    b = inp.block_size
    vidur = inp.block_rules == "vidur"
    running = [r for r in inp.requests if r.resident]
    waiting = [r for r in inp.requests if not r.resident]
    used = sum((_held if vidur else _blocks)(r, b) for r in running)
    admitted: list[Request] = []
    max_work = blocks = 0
    for r in waiting:
        pos = len(admitted) + 1
        max_work = max(max_work, r.work)
        blocks += _blocks(r, b)
        if (
            len(running) + pos > inp.batch_size_cap
            or pos * max_work > inp.max_tokens_in_batch
            or used + blocks > num_blocks - wm
        ):
            break
        admitted.append(r)
    if admitted:
        return {r.id for r in admitted}, set(), _whole(admitted, inp.requests)
    decode: list[Request] = []
    blocks = 0  # blocks of the kept requests, after their growth
    for r in running:
        if vidur:
            fits = blocks + _held(r, b) <= num_blocks - 1
        else:
            fits = blocks + _blocks(r, b) <= num_blocks
        if not fits:
            break
        decode.append(r)
        blocks += _blocks(r, b)
    ids = {r.id for r in decode}
    return ids, {r.id for r in running if r.id not in ids}, _whole(decode, inp.requests)


def policy_sarathi(inp: PolicyInput) -> Decision:
    """Sarathi-like (§6): decodes first, then continuing chunked prefills, then new requests.

    The holders (resident or partial) keep their KV while their blocks fit num_blocks, by id;
    the rest are preempted (restart; a partial one loses its prefilled tokens). Every kept
    resident decodes (chunk = its work); the prefill chunks share a budget of chunk_size tokens
    minus one per decode: first the kept partial prefills by id, then new requests (non-resident
    with nothing prefilled) by id while the budget is not used up, the request count stays
    <= batch_size_cap and the blocks stay <= num_blocks - watermark_blocks.
    """
    num_blocks, wm = vllm_blocks(inp)
    b = inp.block_size
    keep: list[Request] = []
    blocks = 0
    for r in (r for r in inp.requests if r.holds):
        if blocks + _blocks(r, b) > num_blocks:
            break
        keep.append(r)
        blocks += _blocks(r, b)
    kept = {r.id for r in keep}
    preempt = {r.id for r in inp.requests if r.holds and r.id not in kept}
    chunks: dict[int, int] = {}
    decodes = [r for r in keep if r.resident]
    for r in decodes:
        chunks[r.id] = r.work
    budget = max(inp.chunk_size - len(decodes), 0)
    for r in (r for r in keep if r.partial):  # continuing prefills, oldest first
        c = min(budget, r.work - r.prefilled)
        if c > 0:
            chunks[r.id] = c
            budget -= c
    used = blocks  # blocks of the kept holders
    count = len(keep)
    before = 0  # work of the new requests before this one
    for r in (r for r in inp.requests if not r.resident and r.prefilled == 0):
        if before >= budget or count + 1 > inp.batch_size_cap or used + _blocks(r, b) > num_blocks - wm:
            break
        chunks[r.id] = min(budget - before, r.work)
        count += 1
        used += _blocks(r, b)
        before += r.work
    return set(chunks), preempt, chunks


_POLICY_FUNCS = {
    "wait": policy_wait,
    "nested_wait": policy_nested_wait,
    "fcfs": policy_fcfs,
    "vllm": policy_vllm,
    "sarathi": policy_sarathi,
}


# --------------------------------------------------------------------------------------------
# Simulator (§5, §7, §8)
# --------------------------------------------------------------------------------------------
def _as_callable(source: Sequence[float] | Callable[[int], float], name: str) -> Callable[[int], np.float32]:
    if callable(source):
        return lambda i: F32(source(i))

    def get(i: int) -> np.float32:
        if i >= len(source):
            raise IndexError(
                f"candidate {i} is needed but {name} only holds {len(source)} values; pass a longer sequence"
            )
        return F32(source[i])

    return get


class _Sim:
    """Mutable state of one run plus the epoch of §5."""

    def __init__(
        self,
        *,
        prefill: tuple[int, ...],
        decode: tuple[int, ...],
        policy: str,
        arrivals: Arrivals,
        d0: np.float32,
        d1: np.float32,
        capacity: int,
        thresholds: tuple[int, ...],
        num_requests: int | None,
        horizon: DF | None,
        end_mode: str,
        table_size: int,
        arrivals_per_step: int,
        segment_bounds: tuple[int, ...],
        hist_octave_bits: int,
        limits: dict[str, Any],
        batch_limit: int,
        token_limit: int,
        d1_prefill: np.float32 | None = None,
        burn_in: int = 0,
    ) -> None:
        self.prefill, self.decode = prefill, decode
        self.m, self.K1 = len(prefill), max(decode) + 1
        self.policy = policy
        self.arr = arrivals
        self.d0, self.d1, self.C = d0, d1, capacity
        self.thresholds = thresholds
        self.N, self.T = num_requests, horizon
        self.end_mode = end_mode
        self.A = arrivals_per_step
        self.bounds = segment_bounds
        self.hist_octave_bits = hist_octave_bits
        # batch_size_cap, max_tokens_in_batch, block_size, watermark, chunk_size, block_rules
        self.limits = limits
        self.batch_limit, self.token_limit = batch_limit, token_limit  # every policy (§6)
        self.d1_prefill = d1_prefill  # None: eq. (1), one price (§2)
        self.Q = table_size
        self.table: list[Request | None] = [None] * table_size  # a ring: request id in slot id mod Q
        self.t = ZERO
        self.busy = ZERO
        self.done = False
        self.stalled = 0
        self.last_completion: DF | None = None
        self.table_overflow = self.dropped = self.preemptions = self.overflows = 0
        self.peak_memory = self.num_batches = self.num_epochs = self.memory_sum = 0
        self.counted = self.decode_counted = self.horizon_counted = self.horizon_decode_counted = 0
        self.requests: list[Request] = []  # every accepted request (inserted or not), by id
        # §8 measurement window: requests lo .. hi - 1 are measured; it opens when request lo
        # is inserted, passes its middle at request mid, closes at request hi.
        big = 2**30
        n = num_requests
        self.w_lo = burn_in
        self.w_mid = big if n is None else burn_in + (n - 2 * burn_in) // 2
        self.w_hi = big if n is None else n - burn_in
        self.w_open: DF | None = None
        self.w_close: DF | None = None
        self.w_in_system: list[int | None] = [None, None, None]
        self.w_tokens = self.w_batches = 0

    # ---- views ---------------------------------------------------------------------------
    def in_table(self) -> list[Request]:
        """Requests in the table, ascending id (slot positions play no role)."""
        return sorted((r for r in self.table if r is not None), key=lambda r: r.id)

    # ---- operations ----------------------------------------------------------------------
    def insert(self, typ: int, time: DF) -> bool:
        """Insert accepted request id = num_arrived - 1 into slot id mod Q; False (lost, counted
        in table_overflow) if that slot still holds an older request (id - Q, or an even older
        one of the same slot when id - Q was itself lost)."""
        req = Request(
            id=self.arr.num_arrived - 1, type=typ, arrival=time, prefill=self.prefill[typ], decode=self.decode[typ]
        )
        self.requests.append(req)
        slot = req.id % self.Q
        if self.table[slot] is not None:
            self.table_overflow += 1
            return False
        self.table[slot] = req
        req.inserted = True
        return True

    def remove(self, req: Request) -> None:
        assert self.table[req.id % self.Q] is req
        self.table[req.id % self.Q] = None

    def epoch(self) -> dict[str, Any]:
        """One epoch of §5; returns its trajectory row (§9)."""
        row: dict[str, Any] = {
            "kind": KIND_NONE,
            "t_hi": self.t.hi,
            "t_lo": self.t.lo,
            "tau_hi": F32(0.0),
            "tau_lo": F32(0.0),
            "tau_s": 0.0,
            "tokens": 0,
            "memory_tokens": 0,
            "preempted": 0,
            "completed": 0,
            "inserted": 0,
            "lost": 0,
            "batch_ids": [],
            "preempted_ids": [],
            "chunks": [],
            "counts": [[0] * self.K1 for _ in range(self.m)],
        }
        if self.done:  # 0.
            row["in_system"] = len(self.in_table())
            return row
        self.num_epochs += 1
        # 1. Horizon.
        if self.T is not None and le(self.T, self.t):
            self.done = True
            return self._finish(row, KIND_END)
        # 2. Insertion of at most A due candidates.
        prev = self.arr.num_arrived
        for _ in range(self.A):
            if not self.arr.due(self.t):
                break
            accepted, typ, time = self.arr.examine()
            if accepted and self.insert(typ, time):
                row["inserted"] += 1
            elif accepted:
                row["lost"] += 1  # table_overflow (not a §9 field)
        self._window_marks(prev)
        if self.arr.due(self.t):
            return self._finish(row, KIND_INSERT)
        # 3. Draining.
        draining = self.end_mode == "drain" and self.N is not None and self.arr.num_arrived == self.N
        # 4. Policy.
        reqs = self.in_table()
        inp = PolicyInput(
            requests=reqs,
            thresholds=self.thresholds,
            capacity=self.C,
            draining=draining,
            decode=self.decode,
            segment_bounds=self.bounds,
            **self.limits,
        )
        batch_ids, preempted_ids, chunks = _POLICY_FUNCS[self.policy](inp)
        assert set(chunks) == batch_ids and not batch_ids & preempted_ids
        batch_ids, chunks = within_limits(batch_ids, chunks, self.batch_limit, self.token_limit)
        assert all(0 < c <= r.work - r.prefilled for r in reqs if r.id in batch_ids for c in [chunks[r.id]])
        # 5. Empty batch.
        if not batch_ids:
            if self.end_mode == "force_clear" and self.N is not None and self.arr.num_arrived == self.N:
                self.dropped += len(reqs)
                for r in reqs:
                    self.remove(r)
                self.done = True
                return self._finish(row, KIND_END)
            if self.arr.exhausted:
                self.done = True
                if reqs and draining:
                    self.stalled = 1
                return self._finish(row, KIND_END)
            self.t = self.arr.time  # idle until the next candidate, copied exactly
            return self._finish(row, KIND_IDLE)
        # 6. A batch.
        self._batch(row, reqs, batch_ids, preempted_ids, chunks)
        return self._finish(row, KIND_BATCH)

    def _window_marks(self, prev: int) -> None:
        """§8: the epoch's insertion took num_arrived from prev past a mark: snapshot."""
        now = self.arr.num_arrived
        for i, mark in enumerate((self.w_lo, self.w_mid, self.w_hi)):
            if prev <= mark < now:  # the table just after request `mark` was inserted
                self.w_in_system[i] = sum(r.id <= mark for r in self.in_table())
                if i == 0:
                    self.w_open = self.t
                if i == 2:
                    self.w_close = self.t

    def _in_window(self) -> bool:
        return self.w_lo < self.arr.num_arrived <= self.w_hi

    def _batch(
        self,
        row: dict[str, Any],
        reqs: list[Request],
        batch_ids: set[int],
        preempted_ids: set[int],
        chunks: dict[int, int],
    ) -> None:
        for r in reqs:
            if r.id in preempted_ids:  # restart: the KV (and a partial prefill) is lost
                assert r.holds
                r.resident = False
                r.prefilled = 0
                r.preemptions += 1
        self.preemptions += len(preempted_ids)
        members = [r for r in reqs if r.id in batch_ids]
        # KV held during the batch: holders not preempted, plus the members (whole work l_j + k).
        memory = sum(r.work for r in reqs if r.holds or r.id in batch_ids)
        tokens = sum(chunks[r.id] for r in members)
        for r in members:
            row["counts"][r.type][r.stage] += 1
        if self.d1_prefill is None:
            tau = iteration_time(tokens, self.d0, self.d1)
        else:  # prefill tokens (members without KV: first prefills, restarts) at their price
            prefill = sum(chunks[r.id] for r in members if not r.resident)
            tau = priced_iteration_time(tokens - prefill, prefill, self.d0, self.d1, self.d1_prefill)
        self.t = add(self.t, tau)
        window = self._in_window()
        if window:  # memory statistics cover the window's batches (§8)
            self.peak_memory = max(self.peak_memory, memory)
            self.memory_sum += memory
            self.w_batches += 1
        self.overflows += int(memory > self.C)
        # Effects at the end time.
        for r in members:
            if r.prefilled + chunks[r.id] < r.work:  # a chunk of a prefill: no stage yet
                r.prefilled += chunks[r.id]
                r.chunks.append(self.num_batches)
                continue
            r.batches.append(self.num_batches)
            r.stage += 1
            r.resident = True
            r.prefilled = 0
            if r.stage == 1:
                r.first_token_done = True
                r.ttft = sub(self.t, r.arrival)
            if r.stage == r.decode + 1:
                r.latency = sub(self.t, r.arrival)
                r.completion = self.t
                self.counted += r.decode + 1
                self.decode_counted += r.decode
                if window:
                    self.w_tokens += r.decode + 1
                if self.T is None or le(self.t, self.T):
                    self.horizon_counted += r.decode + 1
                    self.horizon_decode_counted += r.decode
                self.last_completion = self.t
                self.remove(r)
                row["completed"] += 1
        self.busy = add(self.busy, tau)
        self.num_batches += 1
        row.update(
            tau_hi=tau.hi,
            tau_lo=tau.lo,
            tau_s=to_float64(tau),
            tokens=tokens,
            memory_tokens=memory,
            preempted=len(preempted_ids),
            batch_ids=sorted(batch_ids),
            preempted_ids=sorted(preempted_ids),
            chunks=[chunks[i] for i in sorted(batch_ids)],
        )

    def _finish(self, row: dict[str, Any], kind: int) -> dict[str, Any]:
        row["kind"] = kind
        row["in_system"] = len(self.in_table())
        return row

    # ---- metrics (§8) --------------------------------------------------------------------
    def metrics(self, horizon_s: float | None) -> dict[str, float]:
        completed = [r for r in self.requests if r.latency is not None]
        measured = [r for r in self.requests if self.w_lo <= r.id < self.w_hi]
        first = [r for r in measured if r.ttft is not None]
        lat = [float(r.latency) for r in measured if r.latency is not None]
        ttft = [float(r.ttft) for r in first]  # type: ignore[arg-type]
        b = self.hist_octave_bits
        if horizon_s is not None:
            thr, dthr = self.horizon_counted / horizon_s, self.horizon_decode_counted / horizon_s
        elif self.last_completion is not None:
            span = to_float64(self.last_completion)
            thr, dthr = self.counted / span, self.decode_counted / span
        else:
            thr = dthr = 0.0
        end = to_float64(self.t)
        busy = to_float64(self.busy)
        in_system = len(self.in_table())
        snap = [float(in_system if n is None else n) for n in self.w_in_system]
        if self.w_open is None:
            window_s = 0.0
        else:
            window_s = (end if self.w_close is None else to_float64(self.w_close)) - to_float64(self.w_open)
        return {
            "window_s": window_s,
            "window_throughput_tokens_per_s": self.w_tokens / window_s if window_s > 0 else 0.0,
            "in_system_open": snap[0],
            "in_system_mid": snap[1],
            "in_system_close": snap[2],
            "num_arrived": float(self.arr.num_arrived),
            "num_completed": float(len(completed)),
            "num_measured_completed": float(len(lat)),
            "num_in_system": float(len(self.in_table())),
            "num_dropped": float(self.dropped),
            "table_overflow": float(self.table_overflow),
            "throughput_tokens_per_s": thr,
            "decode_throughput_tokens_per_s": dthr,
            # Exact sums of the float32 values (the engine's compensated sums agree to ~1e-7).
            "latency_mean_s": math.fsum(lat) / len(lat) if lat else 0.0,
            "ttft_mean_s": math.fsum(ttft) / len(ttft) if ttft else 0.0,
            # §8 histogram quantiles (bin midpoints), and the exact empirical quantiles they
            # approximate (within 2^-(b+1) relative) under *_exact_s.
            "latency_p50_s": hist_quantile(lat, 0.5, b),
            "latency_p99_s": hist_quantile(lat, 0.99, b),
            "ttft_p50_s": hist_quantile(ttft, 0.5, b),
            "ttft_p99_s": hist_quantile(ttft, 0.99, b),
            "latency_p50_exact_s": empirical_quantile(lat, 0.5),
            "latency_p99_exact_s": empirical_quantile(lat, 0.99),
            "ttft_p50_exact_s": empirical_quantile(ttft, 0.5),
            "ttft_p99_exact_s": empirical_quantile(ttft, 0.99),
            "peak_memory_tokens": float(self.peak_memory),
            "mean_memory_tokens": self.memory_sum / self.w_batches if self.w_batches else 0.0,
            "overflow_count": float(self.overflows),
            "preemption_count": float(self.preemptions),
            "num_batches": float(self.num_batches),
            "num_epochs": float(self.num_epochs),
            "busy_s": busy,
            "end_time_s": end,
            "idle_s": end - busy,
            "last_completion_s": to_float64(self.last_completion) if self.last_completion is not None else 0.0,
            "done": float(self.done),
            "stalled": float(self.stalled),
        }


def default_segment_bounds(decode: Sequence[int]) -> tuple[int, ...]:
    """Sorted distinct decode lengths: one segment per type (Alg. 2)."""
    return tuple(sorted(set(decode)))


def simulate(
    *,
    prefill: Sequence[int],
    decode: Sequence[int],
    policy: str,
    rates: Sequence[float] | Sequence[Sequence[float]],
    d0: float,
    d1: float,
    capacity: int,
    gaps: Sequence[float] | Callable[[int], float],
    type_u: Sequence[float] | Callable[[int], float] | None = None,
    seed: int | None = None,
    thresholds: Sequence[int] | None = None,
    period_s: float = 1.0,
    num_requests: int | None = None,
    horizon_s: float | None = None,
    end_mode: str = "drain",
    table_size: int = 1024,
    arrivals_per_step: int = 8,
    max_steps: int = 200_000,
    segment_bounds: Sequence[int] | None = None,
    hist_octave_bits: int = 5,
    batch_size_cap: int = 128,
    max_tokens_in_batch: int = 4096,
    block_size: int = 16,
    watermark: float = 0.01,
    chunk_size: int = 512,
    batch_limit: int | None = None,
    token_limit: int | None = None,
    d1_prefill: float | None = None,
    burn_in_requests: int = 0,
    block_rules: str = "kv",
) -> dict[str, Any]:
    """Run the kv engine of docs/kv-semantics.md for one seed, one request at a time.

    prefill, decode: (m,) l_j, l'_j tokens. rates: [m] or [P][m] requests/s (P periods of
    period_s seconds, cyclic). d0 (s), d1 (s/token): rounded to float32 as the params are.
    capacity: C tokens. thresholds: n_j (wait, m integers) or n_i (nested_wait, L integers);
    None for fcfs. gaps: candidate gaps e_i (float32 s; a sequence or i -> e_i), normally
    `arrival_stream(...)["gap_s"]`. type_u: the type draws v_i (sequence or callable); None draws
    them from `seed` with `kv_uniform(seed, i, STREAM_KV_TYPE)`. segment_bounds: nested_wait's
    b_i (None: sorted distinct decode lengths). hist_octave_bits: b of the §8 histograms.
    batch_size_cap, max_tokens_in_batch, block_size (tokens), watermark (fraction of the
    C // block_size blocks), chunk_size (tokens): the vllm / sarathi limits of make_params.
    batch_limit (requests), token_limit (tokens): every policy's batch limits (None: uncapped).
    d1_prefill (s/token): the prefill price of KVConfig.prefill_price (None: eq. (1)).
    burn_in_requests: K of §8 (requests K .. N - K - 1 are measured).
    block_rules: vllm's block counting, "kv" or "vidur" (KVConfig.block_rules, §6).
    The other arguments mirror KVConfig.

    No validation beyond what the simulation itself needs: the engine's KVConfig / make_params
    validate. Runs until done or max_steps epochs.

    Returns a dict: "epochs" (one row per epoch run, §9 fields plus batch_ids / preempted_ids),
    "batches" (the kind-2 rows, with start_s = to_float64(t)), "arrivals" (the examined
    candidates: index, t_hi, t_lo, accepted, type), "requests" (per-request records by id) and
    "metrics" (§8 names, quantiles from the §8 histograms, plus the exact empirical quantiles
    as latency_p50_exact_s, ...).
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if end_mode not in END_MODES:
        raise ValueError(f"end_mode must be one of {END_MODES}, got {end_mode!r}")
    if block_rules not in BLOCK_RULES:
        raise ValueError(f"block_rules must be one of {BLOCK_RULES}, got {block_rules!r}")
    if num_requests is None and horizon_s is None:
        raise ValueError("set num_requests and/or horizon_s")
    prefill, decode = tuple(int(x) for x in prefill), tuple(int(x) for x in decode)
    if type_u is None:
        if seed is None:
            raise ValueError("pass type_u or seed")
        type_u = lambda i: kv_uniform(seed, i, STREAM_KV_TYPE)  # noqa: E731
    bounds = tuple(segment_bounds) if segment_bounds is not None else default_segment_bounds(decode)
    cdf, _ = type_cdf(rates)
    horizon = from_float64(horizon_s) if horizon_s is not None else None
    arrivals = Arrivals(
        _as_callable(gaps, "gaps"), _as_callable(type_u, "type_u"), cdf, period_s, num_requests, horizon
    )
    sim = _Sim(
        prefill=prefill,
        decode=decode,
        policy=policy,
        arrivals=arrivals,
        d0=F32(d0),
        d1=F32(d1),
        capacity=int(capacity),
        thresholds=tuple(int(n) for n in thresholds) if thresholds is not None else (),
        num_requests=num_requests,
        horizon=horizon,
        end_mode=end_mode,
        table_size=table_size,
        arrivals_per_step=arrivals_per_step,
        segment_bounds=bounds,
        hist_octave_bits=hist_octave_bits,
        limits=dict(
            batch_size_cap=int(batch_size_cap),
            max_tokens_in_batch=int(max_tokens_in_batch),
            block_size=int(block_size),
            watermark=float(watermark),
            chunk_size=int(chunk_size),
            block_rules=str(block_rules),
        ),
        batch_limit=2**30 if batch_limit is None else int(batch_limit),
        token_limit=2**30 if token_limit is None else int(token_limit),
        d1_prefill=None if d1_prefill is None else F32(d1_prefill),
        burn_in=int(burn_in_requests),
    )
    epochs = []
    while not sim.done and len(epochs) < max_steps:
        epochs.append(sim.epoch())
    batches = [
        dict(row, start_s=float(row["t_hi"]) + float(row["t_lo"])) for row in epochs if row["kind"] == KIND_BATCH
    ]
    requests = {
        r.id: {
            "type": r.type,
            "arrival_hi": r.arrival.hi,
            "arrival_lo": r.arrival.lo,
            "stage": r.stage,
            "ttft": r.ttft,
            "latency": r.latency,
            "completion": r.completion,
            "preemptions": r.preemptions,
            "batches": list(r.batches),
            "chunks": list(r.chunks),
            "prefilled": r.prefilled,
            "inserted": r.inserted,
        }
        for r in sim.requests
    }
    return {
        "epochs": epochs,
        "batches": batches,
        "arrivals": arrivals.examined,
        "requests": requests,
        "metrics": sim.metrics(horizon_s),
    }
