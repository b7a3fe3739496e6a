"""The kv engine's fluid benchmark: the WAIT paper's equilibrium and thresholds (Ao, Luo,
Simchi-Levi, Wang 2025). The budget engine's fluid workload and drain time (paper 004) are
jaxsched.budget.fluid.

Host-side float64 NumPy math on scalars and per-type vectors; nothing here is traced by JAX.

Units throughout: lengths and memory in tokens, rates in requests/s, times in seconds, the
iteration-time coefficients d0 in s and d1 in s/token (eq. (1): an iteration whose batch holds
M tokens of KV lasts d0 + d1 * M seconds), throughput in tokens/s.

What it computes (section numbers are the paper's; "notes" is the reading guide notes/001.md):

- `equilibrium`: the multi-type fluid equilibrium of Sec. 3.2 / App. A.2 with
  A = sum_j lambda_j (l'_j + 1)(l_j + l'_j / 2): iteration time dT* = d0 / (1 - d1 A) (7),
  memory M* = d0 A / (1 - d1 A) (6), throughput* = sum_j lambda_j (l'_j + 1) (8); stable iff
  d1 A < 1.
- WAIT (Alg. 1) thresholds: the fluid form n_j = c lambda_j with c in [dT*, C / A], the
  paper's practical rule n_j = B rho_j / (l'_j + 1) (Sec. 6.1), and a checker of (9).
- Nested WAIT (Alg. 2) segments, including the L-segment merge of Sec. 7.2, thresholds (a
  fluid form and the tail-rate practical rule of Sec. 6.2), a checker of (10)/(14), the root
  theta of (16) (Lemma 8) and the memory bound (12)/(15).

Typo corrections applied (each is also cited where it is used):

- notes §2: the multi-type balance (Sec. 3.2) reads (d0 + d1 M*) lambda_j = n*_j; it is
  (d0 + d1 M*) lambda_j = n*_j / (l'_j + 1) (arrivals per iteration = completions = the count
  of one stage). App. A.2's n*_j = dT lambda_j (l'_j+1)(l_j+l'_j/2) is M*_j, not n*_j.
- notes §2: eq. (8)'s middle line drops d1: sum_j n*_j (1 - d1 A) / d0 = sum_j lambda_j (l'_j+1).
- notes §2: Prop. 1's instability condition is lambda_j d1 (l'_j+1)(l_j+l'_j/2) >= 1 (the text
  writes d0); it implies the multi-type d1 A >= 1 checked here (A sums those terms over j), so
  every Prop. 1 instance is rejected, and so are loads unstable only in the aggregate.
- notes §3.2: (11) is not the memory of full segments for j >= 3 (it uses the cumulative sum
  L'_j = l'_1 + ... + l'_j); the exact sum n_1 sum_{k=0}^{l'_1} (l+k)
  + sum_{i>=2} n_i sum_{k=l'_{i-1}+1}^{l'_i} (l+k) is used. Sec. 7.2's M^pi is exact only for
  l'_j = j and even then centres segment i at (i/2) dL, not (i - 1/2) dL; exact sums again.
- notes §3.2: Alg. 2 line 1 indexes stages by cumulative sums of l'_j; segment i holds stages
  l'_{i-1} + 1 .. l'_i (segment 1: 0 .. l'_1).
- notes §5: Lemma 8's lower bound is theta_k >= 8 (n_k - n_{k-1} p_k) / n_{k-1}; Thm 2 and
  Thm 4 write the denominator n_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from ..errors import ConfigError, require, require_float, require_int

__all__ = [
    "FluidTypes",
    "Equilibrium",
    "equilibrium",
    "span_work",
    "stage_work",
    "wait_c_range",
    "wait_thresholds",
    "wait_thresholds_practical",
    "WaitCheck",
    "wait_check",
    "Segments",
    "nested_segments",
    "nested_thresholds",
    "nested_thresholds_practical",
    "NestedCheck",
    "nested_check",
    "bisect",
    "theta_root",
    "theta_lower_bound",
    "MemoryBound",
    "nested_memory_bound",
]

# Relative slack when comparing a quantity with a bound it meets with equality in exact
# arithmetic (e.g. thresholds built at c = dT*), so rounding does not flip the verdict.
_RTOL = 1e-12


# ---------------------------------------------------------------------------------------------
# Validation helpers


def _vector(value, field: str, *, integer: bool = False, lo: float = 0.0, lo_open: bool = True) -> np.ndarray:
    """Validate a non-empty 1-D numeric sequence element by element; return a read-only array.

    integer: every element an integer >= 1 (int64 result); else a finite real > lo (or >= lo
    with lo_open=False; float64 result). Errors name the element, e.g. 'decode[2]'.
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting
        raise ConfigError(f"{field} must be a non-empty 1-D sequence of numbers, got {value!r}") from None
    require(
        arr.ndim == 1 and arr.size >= 1 and arr.dtype.kind in "iuf", field, "a non-empty 1-D sequence of numbers", value
    )
    for i, x in enumerate(arr.tolist()):
        if integer:
            require_int(x, f"{field}[{i}]", lo=1)
        else:
            require_float(x, f"{field}[{i}]", lo=lo, lo_open=lo_open)
    out = arr.astype(np.int64 if integer else np.float64)
    out.setflags(write=False)
    return out


def _same_length(arr: np.ndarray, field: str, m: int, ref: str) -> None:
    if arr.shape != (m,):
        raise ConfigError(f"{field} must have the same length as {ref} ({m}), got length {arr.size}")


def _require_stable(work: float, d1: float, what: str, field: str) -> None:
    # notes §2: the fluid equilibrium exists iff rho = d1 * A < 1; at rho >= 1 every policy's
    # latency grows linearly in time (Prop. 1, with the d0 -> d1 correction).
    rho = d1 * work
    require(rho < 1.0, field, f"< 1 for a stable load, where A = {what} = {work:.6g} tokens/s", rho)


def _frozen(x) -> np.ndarray:
    out = np.asarray(x, dtype=np.float64).copy()
    out.setflags(write=False)
    return out


def _thresholds(value, m: int, field: str = "thresholds") -> np.ndarray:
    n = _vector(value, field)
    _same_length(n, field, m, "the types" if field == "thresholds" else "the segments")
    return n


# ---------------------------------------------------------------------------------------------
# Request types and the fluid equilibrium


def span_work(prefill, first, last) -> np.ndarray:
    """KV token-iterations of one prompt over stages first..last: sum_{k=e}^{b} (l + k) tokens.

    The one home of the WAIT model's work formula (stage k of a prompt holds l + k tokens):
    sum_{k=e}^{b} (l + k) = (b - e + 1) l + (b (b + 1) - (e - 1) e) / 2.
    prefill l, first e, last b: tokens / stage indices, broadcastable arrays or scalars.
    All integer: int64, exact (the kv engine's capacity checks compare it with integer C).
    Otherwise float64, as (b - e + 1)(l + (e + b) / 2) (the fluid model; a real l allows a
    bin's mean length).
    """
    l, e, b = np.asarray(prefill), np.asarray(first), np.asarray(last)
    if all(x.dtype.kind in "iu" for x in (l, e, b)):
        l, e, b = (x.astype(np.int64) for x in (l, e, b))
        # b (b + 1) - (e - 1) e is even (a difference of two products of consecutive integers).
        return (b - e + 1) * l + (b * (b + 1) - (e - 1) * e) // 2
    l, e, b = (x.astype(np.float64) for x in (l, e, b))
    return (b - e + 1.0) * (l + (e + b) / 2.0)


def stage_work(prefill, decode) -> np.ndarray:
    """KV token-iterations of one prompt over its life: sum_{k=0}^{l'} (l + k) = (l'+1)(l+l'/2).

    prefill, decode: (m,) tokens. Returns (m,) tokens (memory summed over the l' + 1 iterations
    a prompt is in a batch: stage 0 holds l, decode stage k holds l + k): int64 and exact for
    integer inputs, else float64 (`span_work` with stages 0..l').
    """
    return span_work(prefill, 0, decode)


@dataclass(frozen=True, eq=False)
class FluidTypes:
    """Request types of the WAIT paper plus the iteration-time and memory constants.

    prefill: (m,) prompt lengths l_j, tokens, real > 0 (a real allows a bin's mean length).
    decode: (m,) output lengths l'_j, tokens, integers >= 1 (a prompt passes l'_j + 1 stages).
    rates: (m,) Poisson arrival rates lambda_j, requests/s, > 0.
    d0: fixed overhead of one iteration, s, > 0. d1: time per KV token of a batch, s/token, >= 0.
    capacity: KV capacity C, tokens, > 0.

    Construction raises one ConfigError naming the field on a bad value, and on an unstable
    load d1 * A >= 1 (A = `work`).
    """

    prefill: np.ndarray
    decode: np.ndarray
    rates: np.ndarray
    d0: float
    d1: float
    capacity: float

    def __post_init__(self):
        prefill = _vector(self.prefill, "prefill")
        m = prefill.size
        decode = _vector(self.decode, "decode", integer=True)
        _same_length(decode, "decode", m, "prefill")
        rates = _vector(self.rates, "rates")
        _same_length(rates, "rates", m, "prefill")
        d0 = require_float(self.d0, "d0 (s)", lo=0.0, lo_open=True)
        d1 = require_float(self.d1, "d1 (s/token)", lo=0.0)
        capacity = require_float(self.capacity, "capacity (tokens)", lo=0.0, lo_open=True)
        for name, v in [
            ("prefill", prefill),
            ("decode", decode),
            ("rates", rates),
            ("d0", d0),
            ("d1", d1),
            ("capacity", capacity),
        ]:
            object.__setattr__(self, name, v)
        _require_stable(
            self.work,
            d1,
            "sum_j rates_j (decode_j + 1)(prefill_j + decode_j / 2)",
            "d1 * A (fields d1, rates, prefill, decode)",
        )

    @property
    def m(self) -> int:
        """Number of types."""
        return int(self.prefill.size)

    @property
    def total_rate(self) -> float:
        """Lambda = sum_j lambda_j, requests/s."""
        return float(self.rates.sum())

    @property
    def work(self) -> float:
        """A = sum_j lambda_j (l'_j + 1)(l_j + l'_j / 2), tokens/s: KV tokens batched per second."""
        return float(np.dot(self.rates, stage_work(self.prefill, self.decode)))

    @property
    def load(self) -> float:
        """rho = d1 * A, dimensionless; < 1 (checked at construction)."""
        return self.d1 * self.work


@dataclass(frozen=True, eq=False)
class Equilibrium:
    """Multi-type fluid equilibrium (Sec. 3.2). Shapes: (m,) per type.

    iteration_time: dT* = d0 / (1 - d1 A), s (7).
    per_stage: x_j = lambda_j dT*, requests in each of the l'_j + 1 stages of type j.
    active: n*_j = x_j (l'_j + 1), requests of type j in a batch.
    memory_per_type: M*_j = n*_j (l_j + l'_j / 2), tokens.
    memory: M* = sum_j M*_j = d0 A / (1 - d1 A), tokens (6).
    throughput_per_type: lambda_j (l'_j + 1), tokens/s; throughput: their sum (8), which counts
      l'_j + 1 tokens per request (the prefill iteration's first token included).
    decode_throughput: sum_j lambda_j l'_j, tokens/s (Sec. 2.3's count of decode tokens).
    load: rho = d1 A (< 1). memory_fits: C >= M* (Prop. 2's hypothesis).
    """

    iteration_time: float
    per_stage: np.ndarray
    active: np.ndarray
    memory_per_type: np.ndarray
    memory: float
    throughput_per_type: np.ndarray
    throughput: float
    decode_throughput: float
    load: float
    memory_fits: bool


def equilibrium(types: FluidTypes) -> Equilibrium:
    """The fluid equilibrium of `types` (Sec. 3.2 with notes §2's corrected balance).

    Balance per type: arrivals during one iteration equal completions, the count of one stage:
    lambda_j dT = n*_j / (l'_j + 1) (notes §2: the paper's Sec. 3.2 drops the 1 / (l'_j + 1)).
    With dT = d0 + d1 M* and M* = sum_j n*_j (l_j + l'_j/2) = dT A this gives (6)-(7).
    """
    work = types.work
    rho = types.d1 * work
    dt = types.d0 / (1.0 - rho)
    per_stage = types.rates * dt
    active = per_stage * (types.decode + 1.0)
    mem_j = active * (types.prefill + types.decode / 2.0)
    memory = types.d0 * work / (1.0 - rho)
    thr_j = types.rates * (types.decode + 1.0)
    return Equilibrium(
        iteration_time=float(dt),
        per_stage=_frozen(per_stage),
        active=_frozen(active),
        memory_per_type=_frozen(mem_j),
        memory=float(memory),
        throughput_per_type=_frozen(thr_j),
        throughput=float(thr_j.sum()),
        decode_throughput=float(np.dot(types.rates, types.decode)),
        load=float(rho),
        memory_fits=bool(types.capacity >= memory * (1.0 - _RTOL)),
    )


# ---------------------------------------------------------------------------------------------
# WAIT (Alg. 1) thresholds


def wait_c_range(types: FluidTypes) -> tuple[float, float]:
    """(c_min, c_max) = (dT*, C / A), s: the c for which n_j = c lambda_j meets (9) within C.

    (9) with n_j = c lambda_j reads c >= d0 + d1 c A, i.e. c >= dT*; the thresholds' memory
    M^pi = c A must fit in C, i.e. c <= C / A. The range is non-empty iff C >= M* (notes §3.1);
    raises ConfigError otherwise.
    """
    c_min = types.d0 / (1.0 - types.load)
    c_max = types.capacity / types.work
    require(
        c_max >= c_min * (1.0 - _RTOL),
        "capacity (tokens)",
        f">= the fluid memory M* = {c_min * types.work:.6g} for WAIT thresholds that meet "
        f"(9) (C / A = {c_max:.6g} s < dT* = {c_min:.6g} s)",
        types.capacity,
    )
    return c_min, c_max


def wait_thresholds(types: FluidTypes, c: float | None = None) -> np.ndarray:
    """Fluid WAIT thresholds n_j = c lambda_j, (m,) float64 requests per stage.

    c (s) defaults to c_min = dT*, where n_j = lambda_j dT* = x_j, the fluid per-stage count
    (the paper's construction for C = M*, App. B): (9) then holds with equality for every j
    (Thm 1's O(sqrt(T)) regime). Any c in (dT*, C / A] makes (9) strict (O(1) latency). c
    outside [dT*, C / A] raises ConfigError. The values are real; round before simulating and
    re-check with `wait_check`.
    """
    c_min, c_max = wait_c_range(types)
    if c is None:
        c = c_min
    c = require_float(c, "c (s)", lo=0.0, lo_open=True)
    require(
        c_min * (1.0 - _RTOL) <= c <= c_max * (1.0 + _RTOL),
        "c (s)",
        f"in [dT*, C / A] = [{c_min:.6g}, {c_max:.6g}] (condition (9) and memory C)",
        c,
    )
    return _frozen(c * types.rates)


def wait_thresholds_practical(
    types: FluidTypes, batch_limit: int, variant: Literal["paper", "code"] = "paper", integer: bool = True
) -> np.ndarray:
    """Practical WAIT thresholds for a batch-size limit B, (m,) requests per stage.

    variant "paper" (Sec. 6.1): n_j = B rho_j / (l'_j + 1), rho_j = lambda_j / Lambda; this is
      proportional to lambda_j / (l'_j + 1) and in general does NOT meet (9).
    variant "code" (the authors' simulator, notes §3.1 [code]):
      n_j = B lambda_j / sum_k lambda_k (l'_k + 1), proportional to lambda_j like the fluid form.
    Both fill a batch of exactly B prompts before rounding: sum_j n_j (l'_j + 1) = B.
    integer: round as the authors' code does, n_j = max(1, floor(x)) (int64); else float64.
    """
    B = require_int(batch_limit, "batch_limit (B)", lo=1)
    require(variant in ("paper", "code"), "variant", "one of ('paper', 'code')", variant)
    if variant == "paper":
        n = B * (types.rates / types.total_rate) / (types.decode + 1.0)
    else:
        n = B * types.rates / float(np.dot(types.rates, types.decode + 1.0))
    if integer:
        out = np.floor(np.maximum(n, 1.0)).astype(np.int64)
        out.setflags(write=False)
        return out
    return _frozen(n)


@dataclass(frozen=True, eq=False)
class WaitCheck:
    """Verdict on WAIT thresholds n (m,) against (9) and the capacity.

    memory: M^pi = sum_j n_j (l'_j + 1)(l_j + l'_j / 2), tokens: the most KV WAIT ever holds.
    iteration_time: dT(n) = d0 + d1 M^pi, s.
    holds: (m,) bool, dT(n) <= n_j / lambda_j; strict: (m,) bool, dT(n) < n_j / lambda_j.
    fits: M^pi <= C. ok: all(holds) and fits.
    """

    memory: float
    iteration_time: float
    holds: np.ndarray
    strict: np.ndarray
    fits: bool

    @property
    def ok(self) -> bool:
        return bool(self.holds.all() and self.fits)


def wait_check(types: FluidTypes, thresholds) -> WaitCheck:
    """Check thresholds (m,) (> 0, real or integer) against (9) and C (notes §3.1)."""
    n = _thresholds(thresholds, types.m)
    memory = float(np.dot(n, stage_work(types.prefill, types.decode)))
    dt = types.d0 + types.d1 * memory
    cap = n / types.rates  # s: time for n_j arrivals of type j at rate lambda_j
    return WaitCheck(
        memory=memory,
        iteration_time=dt,
        holds=dt <= cap * (1.0 + _RTOL),
        strict=dt < cap * (1.0 - _RTOL),
        fits=bool(memory <= types.capacity * (1.0 + _RTOL)),
    )


# ---------------------------------------------------------------------------------------------
# Nested WAIT (Alg. 2) segments and thresholds


@dataclass(frozen=True, eq=False)
class Segments:
    """The L segments of Nested WAIT (Alg. 2, Sec. 7.2) with a common prefill length.

    prefill: l, tokens, > 0. bounds: (L,) last decode stage of each segment, strictly
    increasing integers >= 1: segment 1 holds stages 0..b_1, segment i >= 2 holds stages
    b_{i-1}+1..b_i (notes §3.2: Alg. 2 line 1's cumulative-sum indices are a typo).
    rates: (L,) lambda'_i, requests/s, > 0: the rate of prompts that finish in segment i.
    d0 (s), d1 (s/token), capacity (tokens): as in FluidTypes.
    Construction raises ConfigError on a bad value or an unstable load d1 * A_N >= 1.
    """

    prefill: float
    bounds: np.ndarray
    rates: np.ndarray
    d0: float
    d1: float
    capacity: float

    def __post_init__(self):
        l = require_float(self.prefill, "prefill (tokens)", lo=0.0, lo_open=True)
        b = _vector(self.bounds, "bounds", integer=True)
        require(bool(np.all(np.diff(b) > 0)), "bounds", "strictly increasing", b.tolist())
        rates = _vector(self.rates, "rates")
        _same_length(rates, "rates", b.size, "bounds")
        for name, v in [
            ("prefill", l),
            ("bounds", b),
            ("rates", rates),
            ("d0", require_float(self.d0, "d0 (s)", lo=0.0, lo_open=True)),
            ("d1", require_float(self.d1, "d1 (s/token)", lo=0.0)),
            ("capacity", require_float(self.capacity, "capacity (tokens)", lo=0.0, lo_open=True)),
        ]:
            object.__setattr__(self, name, v)
        # A merged segment charges every prompt of its group for all of the segment's stages,
        # so A_N >= A of the types: (14) is infeasible unless d1 * A_N < 1 (n_i >= n_1 Lambda_i
        # / Lambda_1 by its ratio line, so d0 + d1 M^pi <= n_1 / Lambda forces it).
        _require_stable(
            self.work,
            self.d1,
            "sum_i tail_i * segment_work_i",
            "d1 * A_N (fields d1, rates, prefill, bounds; fewer merged segments n_segments raise A_N)",
        )

    @property
    def L(self) -> int:
        """Number of segments."""
        return int(self.bounds.size)

    @property
    def first_stage(self) -> np.ndarray:
        """(L,) entry stage e_i of each segment: e_1 = 0, e_i = b_{i-1} + 1."""
        return np.concatenate([[0], self.bounds[:-1] + 1]).astype(np.int64)

    @property
    def stages(self) -> np.ndarray:
        """(L,) number of stages per segment: b_1 + 1, then b_i - b_{i-1}."""
        return (self.bounds - self.first_stage + 1).astype(np.int64)

    @property
    def segment_work(self) -> np.ndarray:
        """(L,) tokens: sum over the segment's stages k of (l + k), the KV of one prompt per stage.

        notes §3.2: exact sums, not (11)'s (l + L'_j / 2) dl'_j nor Sec. 7.2's (l + i dL / 2) dL.
        """
        return span_work(self.prefill, self.first_stage, self.bounds)

    @property
    def tails(self) -> np.ndarray:
        """(L,) Lambda_i = sum_{i' >= i} lambda'_{i'}, requests/s: the rate entering segment i."""
        return np.cumsum(self.rates[::-1])[::-1].copy()

    @property
    def survival(self) -> np.ndarray:
        """(L-1,) p_i = Lambda_{i+1} / Lambda_i: the chance a prompt of segment i goes on to i+1."""
        t = self.tails
        return t[1:] / t[:-1]

    @property
    def entry_kv(self) -> np.ndarray:
        """(L-1,) tokens l + b_{i-1} held by a prompt queued at the entry of segment i >= 2."""
        return self.prefill + self.bounds[:-1].astype(np.float64)

    @property
    def work(self) -> float:
        """A_N = sum_i Lambda_i * segment_work_i, tokens/s (= A of the types when L = m)."""
        return float(np.dot(self.tails, self.segment_work))

    @property
    def load(self) -> float:
        """rho = d1 * A_N (< 1, checked at construction)."""
        return self.d1 * self.work


def nested_segments(types: FluidTypes, n_segments: int | None = None) -> Segments:
    """Segments of Nested WAIT for `types` (common prefill, strictly increasing decode lengths).

    n_segments None: one segment per type (Alg. 2). n_segments = L < m: Sec. 7.2's design,
    L contiguous groups of types (sizes m / L when L divides m, else as equal as possible with
    the larger groups first); segment i ends at the decode length of its group's last type and
    has the group's summed rate lambda'_i.
    Heterogeneous prefill lengths must be grouped by the caller (notes §3.2); raises ConfigError.
    """
    require(
        bool(np.all(types.prefill == types.prefill[0])),
        "prefill",
        "equal across types for Nested WAIT (group types by prefill length, notes §3.2)",
        types.prefill.tolist(),
    )
    require(
        bool(np.all(np.diff(types.decode) > 0)),
        "decode",
        "strictly increasing for Nested WAIT (l'_1 < ... < l'_m)",
        types.decode.tolist(),
    )
    L = types.m if n_segments is None else require_int(n_segments, "n_segments (L)", lo=1, hi=types.m)
    groups = np.array_split(np.arange(types.m), L)
    bounds = np.array([types.decode[g[-1]] for g in groups], dtype=np.int64)
    rates = np.array([types.rates[g].sum() for g in groups])
    return Segments(
        prefill=float(types.prefill[0]), bounds=bounds, rates=rates, d0=types.d0, d1=types.d1, capacity=types.capacity
    )


def nested_thresholds(seg: Segments, c: float | None = None, margin: float = 0.0) -> np.ndarray:
    """Fluid Nested WAIT thresholds n_i = c Lambda_i (1 + margin)^(i-1), (L,) float64.

    In the fluid equilibrium segment i receives Lambda_i requests/s, so each of its stages
    holds Lambda_i dT per iteration; n_i = c Lambda_i is the analogue of WAIT's n_j = c lambda_j.
    margin = 0 gives n_{i+1} / n_i = p_i exactly, the ratios of the paper's practical thresholds
    (notes §3.2), i.e. the boundary of (10), where theta = 0 and the memory bound is infinite;
    margin > 0 makes the ratios strict (a jaxsched choice; the paper gives no constructive rule).
    c (s) defaults to the smallest c meeting (10)'s first line with equality,
    c_min = d0 / (1 - d1 sum_i Lambda_i (1+margin)^(i-1) W_i), W_i = `segment_work`; a c below
    it, or a margin making d1 * sum(...) >= 1, raises ConfigError. Capacity is not checked here:
    use `nested_check` and `nested_memory_bound`.
    """
    margin = require_float(margin, "margin", lo=0.0)
    grow = (1.0 + margin) ** np.arange(seg.L, dtype=np.float64)
    shape = seg.tails * grow
    rho = seg.d1 * float(np.dot(shape, seg.segment_work))
    require(rho < 1.0, "margin", "small enough that d1 * sum_i Lambda_i (1+margin)^(i-1) W_i < 1", margin)
    c_min = seg.d0 / (1.0 - rho)
    if c is None:
        c = c_min
    c = require_float(c, "c (s)", lo=0.0, lo_open=True)
    require(c >= c_min * (1.0 - _RTOL), "c (s)", f">= c_min = {c_min:.6g} (condition (10), first line)", c)
    return _frozen(c * shape)


def nested_thresholds_practical(seg: Segments, batch_limit: int, integer: bool = True) -> np.ndarray:
    """Tail-rate thresholds n_i = B Lambda_i / sum_k s_k Lambda_k, (L,) (notes §3.2).

    n_i is proportional to Lambda_i, which reproduces the paper's ratios exactly (15:14:12:8 for
    rates 20:40:80:160; 66:43:...:1 for 23:11:...:1); s_k = `stages`, so a full batch holds
    sum_i s_i n_i = B prompts before rounding. The ratios sit on the boundary of (10).
    integer: round up as the authors' code does (int64); else float64. The code's segment 1
    has l'_1 stages where Alg. 2 has l'_1 + 1; the paper's count is used.
    """
    B = require_int(batch_limit, "batch_limit (B)", lo=1)
    n = B * seg.tails / float(np.dot(seg.stages, seg.tails))
    if integer:
        out = np.ceil(n).astype(np.int64)
        out.setflags(write=False)
        return out
    return _frozen(n)


@dataclass(frozen=True, eq=False)
class NestedCheck:
    """Verdict on Nested WAIT thresholds n (L,) against (10) / (14) and the capacity.

    memory: M^pi = sum_i n_i W_i, tokens (exact sums, notes §3.2); iteration_time: d0 + d1 M^pi, s.
    first: dT <= n_1 / Lambda ((14), non-strict); first_strict: dT < n_1 / Lambda ((10)).
    ratios: (L-1,) bool, n_{i+1} / n_i > p_i. decreasing: (L-1,) bool, n_{i+1} < n_i (Lemma 8
    needs it for a finite theta; without it that segment's queue term of (12) is n_i only).
    fits: M^pi <= C. ok: first and all(ratios) and fits.
    """

    memory: float
    iteration_time: float
    first: bool
    first_strict: bool
    ratios: np.ndarray
    decreasing: np.ndarray
    fits: bool

    @property
    def ok(self) -> bool:
        return bool(self.first and self.ratios.all() and self.fits)


def nested_check(seg: Segments, thresholds) -> NestedCheck:
    """Check Nested WAIT thresholds (L,) (> 0) against (10) / (14) and C."""
    n = _thresholds(thresholds, seg.L, "thresholds")
    memory = float(np.dot(n, seg.segment_work))
    dt = seg.d0 + seg.d1 * memory
    cap = n[0] / seg.tails[0]
    ratio = n[1:] / n[:-1]
    return NestedCheck(
        memory=memory,
        iteration_time=dt,
        first=bool(dt <= cap * (1 + _RTOL)),
        first_strict=bool(dt < cap * (1 - _RTOL)),
        ratios=ratio > seg.survival * (1 + _RTOL),
        decreasing=n[1:] < n[:-1],
        fits=bool(memory <= seg.capacity * (1 + _RTOL)),
    )


# ---------------------------------------------------------------------------------------------
# theta of Lemma 8 and the memory bound (12) / (15)


def bisect(f: Callable[[float], float], lo: float, hi: float, xtol: float, max_iter: int = 400) -> float:
    """A root of f in [lo, hi] by bisection, to an absolute tolerance xtol (same unit as lo).

    f(lo) and f(hi) must have opposite signs (or one be 0); otherwise raises ConfigError
    ('no root bracketed'). Returns the midpoint of the final bracket.
    """
    lo = require_float(lo, "lo")
    hi = require_float(hi, "hi")
    require(lo < hi, "hi", f"> lo = {lo!r}", hi)
    xtol = require_float(xtol, "xtol", lo=0.0, lo_open=True)
    flo, fhi = float(f(lo)), float(f(hi))
    if flo == 0.0:
        return lo
    if fhi == 0.0:
        return hi
    require(
        math.isfinite(flo) and math.isfinite(fhi) and (flo < 0.0) != (fhi < 0.0),
        "[lo, hi]",
        "a bracket where f changes sign (no root bracketed)",
        f"f({lo!r}) = {flo!r}, f({hi!r}) = {fhi!r}",
    )
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if hi - lo <= xtol or mid in (lo, hi):
            break
        fmid = float(f(mid))
        if fmid == 0.0:
            return mid
        if (fmid < 0.0) == (flo < 0.0):
            lo, flo = mid, fmid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _theta_args(n_prev, n_cur, p) -> tuple[float, float, float]:
    n_prev = require_float(n_prev, "n_prev", lo=0.0, lo_open=True)
    n_cur = require_float(n_cur, "n_cur", lo=0.0, lo_open=True)
    p = require_float(p, "p", lo=0.0, hi=1.0, lo_open=True)
    require(p < 1.0, "p", "a survival probability in (0, 1)", p)
    return n_prev, n_cur, p


def theta_lower_bound(n_prev: float, n_cur: float, p: float) -> float:
    """Lemma 8's bound theta >= 8 (n_cur - n_prev p) / n_prev, 1/requests.

    notes §5: Thm 2 and Thm 4 write the denominator n_cur (n_j); App. E.5's derivation
    (g'' <= n_prev / 4) gives n_prev, used here.
    """
    n_prev, n_cur, p = _theta_args(n_prev, n_cur, p)
    return 8.0 * (n_cur - n_prev * p) / n_prev


def _log_mgf(theta: float, p: float) -> float:
    """log(1 - p + p e^theta), accurate for small theta (log1p/expm1), safe for large theta."""
    if theta <= 1.0:
        return math.log1p(p * math.expm1(theta))
    return float(np.logaddexp(math.log1p(-p), math.log(p) + theta))


def theta_root(n_prev: float, n_cur: float, p: float, tol: float = 1e-12) -> float:
    """The positive root theta of (16): e^{-theta n_cur} (1 - p + p e^theta)^{n_prev} = 1.

    n_prev = n_{k-1}, n_cur = n_k: thresholds (requests per stage) of segments k-1 and k;
    p = p_k in (0, 1): the survival probability from segment k-1 into k (App. C's p_k is (10)'s
    p_{k-1}). theta is in 1/requests: P(queue at segment k's entry >= c) <= e^{-theta (c - n_k)}.

    Solves g(theta) = -theta n_cur + n_prev log(1 - p + p e^theta) = 0 by bisection on the
    bracket [4 D / n_prev, 2 n_prev ln(1/p) / (n_prev - n_cur)], D = n_cur - n_prev p: g < 0 on
    (0, 8 D / n_prev) (Lemma 8, g'' <= n_prev / 4) and g > 0 at the upper end (ln(1-p+pe^t) >
    t + ln p). tol: relative tolerance on theta.
    Returns inf when n_cur >= n_prev: the entry queue then never exceeds n_cur, so the tail
    term of (12) vanishes (Lemma 8 assumes n_prev > n_cur). Raises ConfigError when D <= 0
    (p >= n_cur / n_prev: (10) fails, no positive root; the paper's practical ratios give D = 0).
    """
    n_prev, n_cur, p = _theta_args(n_prev, n_cur, p)
    tol = require_float(tol, "tol", lo=0.0, hi=0.5, lo_open=True)
    drift = n_cur - n_prev * p
    require(
        drift > 0.0,
        "n_cur",
        f"> n_prev * p = {n_prev * p!r} (condition (10): negative drift; no positive root of (16) otherwise)",
        n_cur,
    )
    if n_cur >= n_prev:
        return math.inf
    lo = 4.0 * drift / n_prev
    hi = 2.0 * n_prev * math.log(1.0 / p) / (n_prev - n_cur)
    g = lambda t: -t * n_cur + n_prev * _log_mgf(t, p)  # noqa: E731
    return bisect(g, lo, max(hi, 2.0 * lo), xtol=tol * lo)


@dataclass(frozen=True, eq=False)
class MemoryBound:
    """Memory bound (12) / (15) of Nested WAIT, tokens, split into the paper's three terms.

    batch: M^pi = sum_i n_i W_i (term 1, exact sums). queue: sum_{i>=2} n_i (l + b_{i-1}) (term 2).
    tail: sum_{i>=2} theta_i^{-1} (l + b_{i-1}) log_factor (term 3). total: their sum.
    theta: (L-1,) roots of (16) for segments 2..L (inf: no tail term, see `theta_root`).
    log_factor: ln(count * S / delta). fits: total <= C.
    """

    batch: float
    queue: float
    tail: float
    total: float
    theta: np.ndarray
    log_factor: float
    fits: bool


def nested_memory_bound(
    seg: Segments,
    thresholds,
    n_batches: float,
    delta: float,
    union: Literal["appendix", "main"] = "appendix",
    tol: float = 1e-12,
) -> MemoryBound:
    """Memory that Nested WAIT stays within for S = n_batches batches w.p. >= 1 - delta.

    Thm 2 / Thm 4: M^pi + sum_{i>=2} (l + b_{i-1}) (n_i + theta_i^{-1} ln(count * S / delta)).
    union "appendix" (default): count = L - 1 (App. C's union bound over L-1 segments and S
    batches); "main": count = L (the main text's m zeta S, with S passed as zeta S). Sec. 7.2's
    figures use (L-1)(T+1): pass n_batches = T + 1. thresholds: (L,) > 0; each theta_i needs
    n_i > n_{i-1} p_{i-1} (strict (10)), else ConfigError.
    """
    n = _thresholds(thresholds, seg.L)
    S = require_float(n_batches, "n_batches (S)", lo=1.0)
    delta = require_float(delta, "delta", lo=0.0, hi=1.0, lo_open=True)
    require(delta < 1.0, "delta", "a probability in (0, 1)", delta)
    require(union in ("appendix", "main"), "union", "one of ('appendix', 'main')", union)
    batch = float(np.dot(n, seg.segment_work))
    count = seg.L - 1 if union == "appendix" else seg.L
    if seg.L == 1:  # no segment queues in GPU memory: stage-0 waiters sit on the CPU (App. C)
        return MemoryBound(
            batch=batch,
            queue=0.0,
            tail=0.0,
            total=batch,
            theta=_frozen(np.zeros(0)),
            log_factor=0.0,
            fits=bool(batch <= seg.capacity),
        )
    log_factor = math.log(count * S / delta)
    p = seg.survival
    theta = np.empty(seg.L - 1)
    for i in range(seg.L - 1):
        try:
            theta[i] = theta_root(n[i], n[i + 1], p[i], tol=tol)
        except ConfigError as err:
            raise ConfigError(f"thresholds[{i + 1}]: {err}") from None
    kv = seg.entry_kv
    queue = float(np.dot(n[1:], kv))
    tail = float(np.sum(kv / theta) * log_factor)
    total = batch + queue + tail
    return MemoryBound(
        batch=batch,
        queue=queue,
        tail=tail,
        total=total,
        theta=_frozen(theta),
        log_factor=log_factor,
        fits=bool(total <= seg.capacity),
    )
