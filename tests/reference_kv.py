"""Plain-Python reference simulator of the kv engine (test oracle).

This module follows `docs/kv-semantics.md` literally, one request at a time: plain lists and
dicts for the request table, Python ints for tokens and memory, and np.float32 scalars for every
time operation, in the exact order of the double-float rules of §2, so its times are bitwise
those of the engine. It is written for clarity, not speed: the vectorized engine in
`jaxsched/kv/` is checked against its per-epoch trajectory and metrics.

Only NumPy (for IEEE float32 scalars) and the standard library are used, so a bug in the array
code cannot leak into the oracle. The arrival gaps e_i are an input: §3 says a reference takes
them from `jaxsched.kv.arrivals.arrival_stream`, because log1p is not correctly rounded.
Everything after e_i (candidate times, periods, thinning, types) is recomputed here; the type
draws v_i come from a stdlib re-implementation of jaxsched.rng's counter hash (`kv_uniform`).

Entry point: `simulate(...)`. Double-float helpers (`DF`, `two_sum`, `fast_two_sum`, `add_f32`,
`sub`, `le`, `from_float64`, `to_float64`) and `iteration_time` are public for the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["simulate", "POLICIES", "END_MODES", "KINDS", "DF", "two_sum", "fast_two_sum",
           "add_f32", "add", "split12", "sub", "le", "from_float64", "to_float64", "iteration_time",
           "kv_uniform",
           "type_cdf", "empirical_quantile", "STREAM_KV_GAP", "STREAM_KV_TYPE"]

POLICIES: tuple[str, ...] = ("wait", "nested_wait", "fcfs")
END_MODES: tuple[str, ...] = ("drain", "force_clear")
# Epoch kinds of §9.
KIND_NONE, KIND_INSERT, KIND_BATCH, KIND_IDLE, KIND_END = 0, 1, 2, 3, 4
KINDS = {KIND_NONE: "nothing", KIND_INSERT: "insert only", KIND_BATCH: "batch",
         KIND_IDLE: "idle jump", KIND_END: "ends the run"}
# Stream tags of jaxsched.rng (checked against it in tests/test_reference_kv.py).
STREAM_KV_GAP = 8
STREAM_KV_TYPE = 9

F32 = np.float32


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
    d1_hi, d1_lo = split12(d1)
    T = [F32(((tokens >> (12 * i)) & 4095) * 2.0 ** (12 * i)) for i in range(3)]
    tau = DF(F32(d0), F32(0.0))
    for p in (d1_hi * T[2], d1_hi * T[1], d1_lo * T[2], d1_hi * T[0], d1_lo * T[1], d1_lo * T[0]):
        tau = add_f32(tau, F32(p))
    return tau


# --------------------------------------------------------------------------------------------
# Counter-based uniforms (jaxsched.rng.uniform) in the standard library
# --------------------------------------------------------------------------------------------
_MASK32 = 0xFFFFFFFF


def _mix32(x: int) -> int:
    """lowbias32 mixer on a 32-bit unsigned int (jaxsched.rng.mix32)."""
    x &= _MASK32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _MASK32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _MASK32
    x ^= x >> 16
    return x


def kv_uniform(seed: int, index: int, stream: int) -> np.float32:
    """jaxsched.rng.uniform(seed, index, stream): (hash3(seed, index, stream * 64) >> 8) / 2^24.

    hash3(seed, i, tag) = mix(mix(mix(seed * golden + tag) ^ i) + mix(seed ^ salt)), mod 2^32.
    The result is a multiple of 2^-24 in [0, 1), exact in float32.
    """
    seed &= _MASK32
    h = _mix32(seed * 0x9E3779B9 + stream * 64)
    h = _mix32(h ^ (index & _MASK32))
    h = _mix32(h + _mix32(seed ^ 0x5BD1E995))
    return F32((h >> 8) / 2.0**24)


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
    first_token_done: bool = False
    ttft: np.float32 | None = None
    latency: np.float32 | None = None
    completion: DF | None = None
    preemptions: int = 0
    inserted: bool = False  # False: lost to a full table (table_overflow)
    batches: list[int] = field(default_factory=list)  # batch numbers it was processed in

    @property
    def work(self) -> int:
        """Tokens it costs when processed now, and its KV when resident: l_j + k."""
        return self.prefill + self.stage


class Arrivals:
    """The candidate stream of §3: candidate i's time, period, acceptance and type.

    gap(i) returns the float32 e_i and type_u(i) the float32 v_i; both may be sequences.
    Exhaustion (N accepted, or the candidate after T) is decided when a candidate is reached.
    """

    def __init__(self, gap: Callable[[int], np.float32], type_u: Callable[[int], np.float32],
                 cdf: list[list[np.float32]], period_s: float, num_requests: int | None,
                 horizon: DF | None) -> None:
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
        self.examined.append({"index": self.index, "t_hi": time.hi, "t_lo": time.lo,
                              "accepted": accepted, "type": typ})
        if accepted:
            self.num_arrived += 1
        self._reach(self.index + 1, time)
        return accepted, typ, time


# --------------------------------------------------------------------------------------------
# Policies (§6): each maps the table (requests sorted by id) to (batch B, preempted P), id sets
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyInput:
    """What a policy sees at one epoch."""

    requests: list[Request]  # every request in the table, ascending id
    thresholds: tuple[int, ...]  # n_j (wait), n_i (nested_wait), () (fcfs)
    capacity: int  # C, tokens
    draining: bool
    decode: tuple[int, ...]  # l'_j
    segment_bounds: tuple[int, ...]  # b_i (nested_wait)


def _first_per_group(reqs: list[Request], group: Callable[[Request], Any],
                     limit: Callable[[Request], int]) -> list[Request]:
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


def policy_wait(inp: PolicyInput) -> tuple[set[int], set[int]]:
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
    return {r.id for r in batch}, set()


def stage_segment(stage: int, bounds: Sequence[int]) -> int:
    """0-based segment of a stage: the first i with stage <= b_i (segment i holds e_i..b_i)."""
    return next(i for i, b in enumerate(bounds) if stage <= b)


def policy_nested_wait(inp: PolicyInput) -> tuple[set[int], set[int]]:
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
    b0 = _first_per_group(eligible, lambda r: r.stage,
                          lambda r: inp.thresholds[stage_segment(r.stage, bounds)])
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
    return b0_ids - {r.id for r in dropped}, {r.id for r in dropped if r.resident}


def policy_fcfs(inp: PolicyInput) -> tuple[set[int], set[int]]:
    """Longest prefix by id whose total of l_j + k fits C; resident requests outside are preempted."""
    batch: set[int] = set()
    total = 0
    for r in inp.requests:
        if total + r.work > inp.capacity:
            break
        batch.add(r.id)
        total += r.work
    return batch, {r.id for r in inp.requests if r.resident and r.id not in batch}


_POLICY_FUNCS = {"wait": policy_wait, "nested_wait": policy_nested_wait, "fcfs": policy_fcfs}


# --------------------------------------------------------------------------------------------
# Simulator (§5, §7, §8)
# --------------------------------------------------------------------------------------------
def _as_callable(source: Sequence[float] | Callable[[int], float], name: str) -> Callable[[int], np.float32]:
    if callable(source):
        return lambda i: F32(source(i))

    def get(i: int) -> np.float32:
        if i >= len(source):
            raise IndexError(f"candidate {i} is needed but {name} only holds {len(source)} values; "
                             f"pass a longer sequence")
        return F32(source[i])
    return get


class _Sim:
    """Mutable state of one run plus the epoch of §5."""

    def __init__(self, *, prefill: tuple[int, ...], decode: tuple[int, ...], policy: str,
                 arrivals: Arrivals, d0: np.float32, d1: np.float32, capacity: int,
                 thresholds: tuple[int, ...], num_requests: int | None, horizon: DF | None,
                 end_mode: str, table_size: int, arrivals_per_step: int,
                 segment_bounds: tuple[int, ...]) -> None:
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
        self.table: list[Request | None] = [None] * table_size
        self.t = ZERO
        self.busy = ZERO
        self.done = False
        self.stalled = 0
        self.last_completion: DF | None = None
        self.table_overflow = self.dropped = self.preemptions = self.overflows = 0
        self.peak_memory = self.num_batches = self.num_epochs = 0
        self.counted = self.decode_counted = self.horizon_counted = self.horizon_decode_counted = 0
        self.requests: list[Request] = []  # every accepted request (inserted or not), by id

    # ---- views ---------------------------------------------------------------------------
    def in_table(self) -> list[Request]:
        """Requests in the table, ascending id (slot positions play no role)."""
        return sorted((r for r in self.table if r is not None), key=lambda r: r.id)

    # ---- operations ----------------------------------------------------------------------
    def insert(self, typ: int, time: DF) -> bool:
        """Insert accepted request num_arrived - 1 into the lowest empty slot; False if full."""
        req = Request(id=self.arr.num_arrived - 1, type=typ, arrival=time, prefill=self.prefill[typ],
                      decode=self.decode[typ])
        self.requests.append(req)
        slot = next((s for s, r in enumerate(self.table) if r is None), None)
        if slot is None:
            self.table_overflow += 1
            return False
        self.table[slot] = req
        req.inserted = True
        return True

    def remove(self, req: Request) -> None:
        slot = next(s for s, r in enumerate(self.table) if r is req)
        self.table[slot] = None

    def epoch(self) -> dict[str, Any]:
        """One epoch of §5; returns its trajectory row (§9)."""
        row: dict[str, Any] = {"kind": KIND_NONE, "t_hi": self.t.hi, "t_lo": self.t.lo,
                               "tau_hi": F32(0.0), "tau_lo": F32(0.0), "tau_s": 0.0, "tokens": 0,
                               "memory_tokens": 0, "preempted": 0, "completed": 0, "inserted": 0,
                               "batch_ids": [], "preempted_ids": [],
                               "counts": [[0] * self.K1 for _ in range(self.m)]}
        if self.done:  # 0.
            row["in_system"] = len(self.in_table())
            return row
        self.num_epochs += 1
        # 1. Horizon.
        if self.T is not None and le(self.T, self.t):
            self.done = True
            return self._finish(row, KIND_END)
        # 2. Insertion of at most A due candidates.
        for _ in range(self.A):
            if not self.arr.due(self.t):
                break
            accepted, typ, time = self.arr.examine()
            if accepted and self.insert(typ, time):
                row["inserted"] += 1
        if self.arr.due(self.t):
            return self._finish(row, KIND_INSERT)
        # 3. Draining.
        draining = self.end_mode == "drain" and self.N is not None and self.arr.num_arrived == self.N
        # 4. Policy.
        reqs = self.in_table()
        inp = PolicyInput(requests=reqs, thresholds=self.thresholds, capacity=self.C,
                          draining=draining, decode=self.decode, segment_bounds=self.bounds)
        batch_ids, preempted_ids = _POLICY_FUNCS[self.policy](inp)
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
        self._batch(row, reqs, batch_ids, preempted_ids)
        return self._finish(row, KIND_BATCH)

    def _batch(self, row: dict[str, Any], reqs: list[Request], batch_ids: set[int],
               preempted_ids: set[int]) -> None:
        for r in reqs:
            if r.id in preempted_ids:
                assert r.resident
                r.resident = False
                r.preemptions += 1
        self.preemptions += len(preempted_ids)
        members = [r for r in reqs if r.id in batch_ids]
        memory = sum(r.work for r in reqs if r.resident or r.id in batch_ids)
        tokens = sum(r.work for r in members)
        for r in members:
            row["counts"][r.type][r.stage] += 1
        tau = iteration_time(tokens, self.d0, self.d1)
        self.t = add(self.t, tau)
        self.peak_memory = max(self.peak_memory, memory)
        self.overflows += int(memory > self.C)
        # Effects at the end time.
        for r in members:
            r.batches.append(self.num_batches)
            r.stage += 1
            r.resident = True
            if r.stage == 1:
                r.first_token_done = True
                r.ttft = sub(self.t, r.arrival)
            if r.stage == r.decode + 1:
                r.latency = sub(self.t, r.arrival)
                r.completion = self.t
                self.counted += r.decode + 1
                self.decode_counted += r.decode
                if self.T is None or le(self.t, self.T):
                    self.horizon_counted += r.decode + 1
                    self.horizon_decode_counted += r.decode
                self.last_completion = self.t
                self.remove(r)
                row["completed"] += 1
        self.busy = add(self.busy, tau)
        self.num_batches += 1
        row.update(tau_hi=tau.hi, tau_lo=tau.lo, tau_s=to_float64(tau), tokens=tokens,
                   memory_tokens=memory, preempted=len(preempted_ids),
                   batch_ids=sorted(batch_ids), preempted_ids=sorted(preempted_ids))

    def _finish(self, row: dict[str, Any], kind: int) -> dict[str, Any]:
        row["kind"] = kind
        row["in_system"] = len(self.in_table())
        return row

    # ---- metrics (§8) --------------------------------------------------------------------
    def metrics(self, horizon_s: float | None) -> dict[str, float]:
        completed = [r for r in self.requests if r.latency is not None]
        first = [r for r in self.requests if r.ttft is not None]
        lat = [float(r.latency) for r in completed]  # type: ignore[arg-type]
        ttft = [float(r.ttft) for r in first]  # type: ignore[arg-type]
        if horizon_s is not None:
            thr, dthr = self.horizon_counted / horizon_s, self.horizon_decode_counted / horizon_s
        elif self.last_completion is not None:
            span = to_float64(self.last_completion)
            thr, dthr = self.counted / span, self.decode_counted / span
        else:
            thr = dthr = 0.0
        end = to_float64(self.t)
        busy = to_float64(self.busy)
        return {
            "num_arrived": float(self.arr.num_arrived),
            "num_completed": float(len(completed)),
            "num_in_system": float(len(self.in_table())),
            "num_dropped": float(self.dropped),
            "table_overflow": float(self.table_overflow),
            "throughput_tokens_per_s": thr,
            "decode_throughput_tokens_per_s": dthr,
            # Exact sums of the float32 values (the engine's compensated sums agree to ~1e-7).
            "latency_mean_s": math.fsum(lat) / len(lat) if lat else 0.0,
            "ttft_mean_s": math.fsum(ttft) / len(ttft) if ttft else 0.0,
            # Exact empirical quantiles (the engine reads histogram bins: compare with a tolerance).
            "latency_p50_s": empirical_quantile(lat, 0.5),
            "latency_p99_s": empirical_quantile(lat, 0.99),
            "ttft_p50_s": empirical_quantile(ttft, 0.5),
            "ttft_p99_s": empirical_quantile(ttft, 0.99),
            "peak_memory_tokens": float(self.peak_memory),
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


def simulate(*, prefill: Sequence[int], decode: Sequence[int], policy: str,
             rates: Sequence[float] | Sequence[Sequence[float]], d0: float, d1: float, capacity: int,
             gaps: Sequence[float] | Callable[[int], float],
             type_u: Sequence[float] | Callable[[int], float] | None = None, seed: int | None = None,
             thresholds: Sequence[int] | None = None, period_s: float = 1.0,
             num_requests: int | None = None, horizon_s: float | None = None,
             end_mode: str = "drain", table_size: int = 1024, arrivals_per_step: int = 8,
             max_epochs: int = 200_000, segment_bounds: Sequence[int] | None = None) -> dict[str, Any]:
    """Run the kv engine of docs/kv-semantics.md for one seed, one request at a time.

    prefill, decode: (m,) l_j, l'_j tokens. rates: [m] or [P][m] requests/s (P periods of
    period_s seconds, cyclic). d0 (s), d1 (s/token): rounded to float32 as the params are.
    capacity: C tokens. thresholds: n_j (wait, m integers) or n_i (nested_wait, L integers);
    None for fcfs. gaps: candidate gaps e_i (float32 s; a sequence or i -> e_i), normally
    `arrival_stream(...)["gap_s"]`. type_u: the type draws v_i (sequence or callable); None draws
    them from `seed` with `kv_uniform(seed, i, STREAM_KV_TYPE)`. segment_bounds: nested_wait's
    b_i (None: sorted distinct decode lengths). The other arguments mirror KVConfig.

    No validation beyond what the simulation itself needs: the engine's KVConfig / make_params
    validate. Runs until done or max_epochs epochs.

    Returns a dict: "epochs" (one row per epoch run, §9 fields plus batch_ids / preempted_ids),
    "batches" (the kind-2 rows, with start_s = to_float64(t)), "arrivals" (the examined
    candidates: index, t_hi, t_lo, accepted, type), "requests" (per-request records by id) and
    "metrics" (§8 names; quantiles are exact empirical quantiles).
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if end_mode not in END_MODES:
        raise ValueError(f"end_mode must be one of {END_MODES}, got {end_mode!r}")
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
    arrivals = Arrivals(_as_callable(gaps, "gaps"), _as_callable(type_u, "type_u"), cdf, period_s,
                        num_requests, horizon)
    sim = _Sim(prefill=prefill, decode=decode, policy=policy, arrivals=arrivals, d0=F32(d0),
               d1=F32(d1), capacity=int(capacity),
               thresholds=tuple(int(n) for n in thresholds) if thresholds is not None else (),
               num_requests=num_requests, horizon=horizon, end_mode=end_mode,
               table_size=table_size, arrivals_per_step=arrivals_per_step, segment_bounds=bounds)
    epochs = []
    while not sim.done and len(epochs) < max_epochs:
        epochs.append(sim.epoch())
    batches = [dict(row, start_s=float(row["t_hi"]) + float(row["t_lo"]))
               for row in epochs if row["kind"] == KIND_BATCH]
    requests = {r.id: {"type": r.type, "arrival_hi": r.arrival.hi, "arrival_lo": r.arrival.lo,
                       "stage": r.stage, "ttft": r.ttft, "latency": r.latency,
                       "completion": r.completion, "preemptions": r.preemptions,
                       "batches": list(r.batches), "inserted": r.inserted}
                for r in sim.requests}
    return {"epochs": epochs, "batches": batches, "arrivals": arrivals.examined,
            "requests": requests, "metrics": sim.metrics(horizon_s)}
