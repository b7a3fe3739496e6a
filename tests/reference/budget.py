"""Plain-Python reference simulator of the token-budget engine of paper 004 (test oracle).

It follows `docs/budget-semantics.md` literally, one epoch at a time: plain lists and dicts for
the queue (requests in entry order), Python ints for tokens, and the double-float time helpers
of `tests/reference/kv.py` for every clock operation, so its batch times are bitwise those the
engine must produce. Written for clarity, not speed.

Entry point: `simulate(requests, policy, *, budget, horizon, ...)`; see its docstring.
`trace_requests(prompt, output, arrival_s, seed, ...)` builds the request list of a replayed
trace (docs §1) on its own, from the trace's arrays: the offset hash, the float32 gaps and the
double-float sums, so a test can check `jaxsched.budget.request_stream` against it.

Readings of the contract fixed here (where it leaves a choice):
- Each epoch first inserts every input request with A_i <= t (a rejected arrival takes no entry
  number), then records the snapshots whose grid time is <= t, then ends the run if t >= horizon,
  else idles (empty queue) or forms a batch. So the end epoch's state includes the arrivals due
  at its clock (end state, rejections, last snapshots).
- Idle time: the idle jumps (step 2 of §2) and, when the run ends early (empty queue, input
  exhausted), the time from the end to the horizon, clipped to the window.
- TTFT samples: one per request whose *departure* is in the window (contract: "departures'
  first-token time - arrival"), like the end-to-end latency; TBT samples: every decode token
  whose batch end is in the window.
- `num_batches` counts every batch of the run (not only those in the window); the partial-batch
  fraction is over the batches starting in the window.
- Memory overhead (A.2, docs §2 step 5): the batch members' KV after the batch (P + D before
  it plus their batch tokens) in excess of kv_limit is charged newest member first; the terms
  are added after the attention terms.
- Linear batch time (batch_time="linear", docs §2 step 5): c + a_p * prefill + a_d * decode +
  a_c * context, context = sum over the batch's members of P + D before the batch; it replaces
  eq. (2.3), and the attention and memory terms are added after it as under eq. (2.3).
- admission_cap "running" (docs §3): a request is started once it has loaded a prefill token
  (P > 0); a prefilling request that has not started may take tokens only if fewer than M - S
  unstarted prefilling requests entered before it (S = started requests in the queue), and
  `wc` applies this to its K_p window (the window still counts every prefilling request).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from tests.reference.kv import DF, add, add_f32, from_float64, iteration_time, le, sub, to_float64
from tests.reference.rng import _mix32

__all__ = ["simulate", "POLICIES", "choose", "trace_requests", "memory_overhead_terms", "linear_batch_time"]

POLICIES: tuple[str, ...] = ("sarathi", "orca", "vllm", "ft", "wc", "priority")
F32 = np.float32
ZERO = DF(F32(0.0), F32(0.0))


class _Req:
    """One accepted request: its state (p, d) and loaded tokens (P, D)."""

    def __init__(self, index: int, entry: int, typ: int, arrival: DF, vp: int, vd: int) -> None:
        self.index = index  # position in the input list
        self.entry = entry  # entry number e (accepted arrivals only)
        self.type = typ
        self.arrival = arrival
        self.vp, self.vd = vp, vd
        self.p, self.d = vp, vd  # not yet loaded
        self.last_token: DF | None = None  # time of the latest produced token

    @property
    def P(self) -> int:
        return self.vp - self.p

    @property
    def D(self) -> int:
        return self.vd - self.d

    @property
    def decoding(self) -> bool:
        return self.p == 0 and self.d > 0

    @property
    def prefilling(self) -> bool:
        return self.p > 0


# --------------------------------------------------------------------------------------------
# Policies (§3): queue (entry order) -> {request: (dp, dd)} in selection order
# --------------------------------------------------------------------------------------------
class _Batch:
    """A batch under construction: members, load and the two caps (token limit, M)."""

    def __init__(self, limit: int, M: int) -> None:
        self.limit, self.M = limit, M
        self.members: dict[_Req, tuple[int, int]] = {}
        self.load = 0

    def full(self) -> bool:
        return self.load >= self.limit or len(self.members) >= self.M

    def decode(self, reqs: Sequence[_Req]) -> None:
        """One decode token for each of reqs in order while the load < limit and count < M."""
        for r in reqs:
            if self.full():
                break
            assert r.decoding and r not in self.members
            self.members[r] = (0, 1)
            self.load += 1

    def prefill(self, reqs: Sequence[_Req]) -> None:
        """Chunked prefill over reqs in order: min(p_i, limit - load) each, while not full."""
        for r in reqs:
            if self.full():
                break
            assert r.prefilling and r not in self.members
            take = min(r.p, self.limit - self.load)
            self.members[r] = (take, 0)
            self.load += take

    def whole_prompts(self, reqs: Sequence[_Req]) -> None:
        """Whole prompts in order while the running sum <= limit and count <= M; stop at the
        first that does not fit."""
        for r in reqs:
            if self.load + r.p > self.limit or len(self.members) + 1 > self.M:
                break
            self.members[r] = (r.p, 0)
            self.load += r.p


def choose(
    queue: Sequence[_Req],
    policy: str,
    *,
    budget: int,
    max_requests: int,
    prefill_cap: int,
    K_p: int | None,
    K_d: int | None,
    phase_first: str,
    inner_order: str,
    type_order: Sequence[int],
    admission_cap: str = "batch",
) -> dict[_Req, tuple[int, int]]:
    """The decision of §3 on a queue in entry order."""
    b, M = budget, max_requests
    dec = [r for r in queue if r.decoding]
    pre = [r for r in queue if r.prefilling]
    if admission_cap == "running":
        if policy == "priority":
            raise ValueError("admission_cap 'running' is not defined for priority")
        started = sum(1 for r in queue if r.P > 0)
        waiting = [r for r in queue if r.prefilling and r.P == 0]
        allowed = set(waiting[: max(0, M - started)])

        def admit(reqs: Sequence[_Req]) -> list[_Req]:
            return [r for r in reqs if r.P > 0 or r in allowed]

    elif admission_cap == "batch":

        def admit(reqs: Sequence[_Req]) -> list[_Req]:
            return list(reqs)

    else:
        raise ValueError(f"admission_cap must be 'batch' or 'running', got {admission_cap!r}")
    if policy == "sarathi":
        batch = _Batch(b, M)
        batch.decode(dec)
        batch.prefill(admit(pre))
    elif policy == "orca":
        batch = _Batch(b, M)
        batch.prefill(admit(pre))
        if all(batch.members.get(r, (0, 0))[0] == r.p for r in admit(pre)):
            batch.decode(dec)
    elif policy in ("vllm", "ft"):
        prefill_batch = bool(admit(pre)) if policy == "vllm" else not dec
        if prefill_batch:
            batch = _Batch(prefill_cap, M)
            batch.whole_prompts(admit(pre))
        else:
            batch = _Batch(b, M)
            batch.decode(dec[: min(M, b)])
    elif policy == "wc":
        batch = _Batch(b, M)
        dcand = dec if K_d is None else dec[:K_d]
        pcand = admit(pre if K_p is None else pre[:K_p])
        if inner_order == "srpt":
            pcand = sorted(pcand, key=lambda r: (r.p, r.entry))
        elif inner_order != "fcfs":
            raise ValueError(f"inner_order must be 'fcfs' or 'srpt', got {inner_order!r}")
        if phase_first == "decode":
            batch.decode(dcand)
            batch.prefill(pcand)
        elif phase_first == "prefill":
            batch.prefill(pcand)
            batch.decode(dcand)
        else:
            raise ValueError(f"phase_first must be 'decode' or 'prefill', got {phase_first!r}")
    elif policy == "priority":
        batch = _Batch(b, M)
        for j in type_order:
            batch.decode([r for r in dec if r.type == j])
            batch.prefill([r for r in pre if r.type == j])
    else:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    return {r: x for r, x in batch.members.items() if x[0] + x[1] > 0}


# --------------------------------------------------------------------------------------------
# Trace replay (docs §1) and the memory overhead (docs §2 step 5)
# --------------------------------------------------------------------------------------------
STREAM_TRACE_START = 63  # the hash tag of the replay's starting row (jaxsched's arrivals.py)


def _hash3(seed: int, index: int, tag: int) -> int:
    """jaxsched.rng.hash3(seed, index, tag) on Python ints (mod 2^32)."""
    seed &= 0xFFFFFFFF
    h = _mix32(seed * 0x9E3779B9 + tag)
    h = _mix32(h ^ (index & 0xFFFFFFFF))
    return _mix32(h + _mix32(seed ^ 0x5BD1E995))


def trace_requests(
    prompt, output, arrival_s, seed: int, *, rate_scale: float = 1.0, horizon: float, num_requests: int | None = None
) -> tuple[list, list[int]]:
    """The requests of run `seed` replaying a trace, and their rows: ([(A_k DF, 0, v_p, v_d)],
    [row]) for every k with A_k <= horizon (and k < num_requests).

    Row r_k = (start + k) mod n with start = hash3(seed, 0, 63) mod n; gaps g[r] = t[r] -
    t[r-1] (float64), g[0] = (t[n-1] - t[0]) / (n - 1), rounded to float32; A_0 = 0 and
    A_k = A_{k-1} + fl32(g[r_k] * fl32(1 / rate_scale)) on the double-float clock.
    """
    t = [float(x) for x in arrival_s]
    n = len(t)
    gaps = [F32((t[-1] - t[0]) / (n - 1))] + [F32(t[r] - t[r - 1]) for r in range(1, n)]
    inv = F32(1.0 / rate_scale)
    H = from_float64(horizon)
    start = _hash3(seed, 0, STREAM_TRACE_START) % n
    out, rows = [], []
    a = ZERO
    k = 0
    while num_requests is None or k < num_requests:
        r = (start + k) % n
        if k > 0:
            a = add_f32(a, F32(gaps[r] * inv))
        if not le(a, H):
            break
        out.append((a, 0, int(prompt[r]), int(output[r])))
        rows.append(r)
        k += 1
    return out, rows


def memory_overhead_terms(
    members: Sequence[tuple[int, int]], kv_limit: int, mode: str
) -> tuple[list[int], int, int, int, int]:
    """(x per member, X = sum x, N = #{x > 0}, S_hi, S_lo) of (A.2) for the batch members
    [(entry, KV tokens after the batch)]: the excess over kv_limit charged newest first;
    S_hi, S_lo: sum (x^2 >> 16), sum (x^2 & 0xFFFF) (recompute)."""
    assert mode in ("swap", "recompute")
    excess = max(0, sum(kv for _, kv in members) - kv_limit)
    x = {}
    for entry, kv in sorted(members, reverse=True):  # newest first
        x[entry] = min(kv, excess)
        excess -= x[entry]
    xs = [x[e] for e, _ in members]
    return (xs, sum(xs), sum(1 for v in xs if v > 0), sum((v * v) >> 16 for v in xs), sum((v * v) & 0xFFFF for v in xs))


def linear_batch_time(chosen: dict, c: np.float32, coefs: Sequence[np.float32]) -> DF:
    """c + a_p * prefill + a_d * decode + a_c * context (s, double-float) of a batch
    {request: (dp, dd)}: exact integer sums (prefill = sum dp, decode = sum dd, context = sum
    of P + D over the members, before the batch), each product rounded to float32, added to
    (c, 0) in that order."""
    prefill = sum(dp for dp, _ in chosen.values())
    decode = sum(dd for _, dd in chosen.values())
    context = sum(r.P + r.D for r in chosen)
    tau = DF(F32(c), F32(0.0))
    for coef, total in zip(coefs, (prefill, decode, context)):
        tau = add_f32(tau, F32(F32(coef) * F32(total)))
    return tau


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------
def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    """Length of [a, b) intersected with [lo, hi), float64."""
    return max(0.0, min(b, hi) - max(a, lo))


def _as_df(x: Any) -> DF:
    return x if isinstance(x, DF) else from_float64(float(x))


def _mean(xs: Sequence[np.float32]) -> float:
    return math.fsum(float(x) for x in xs) / len(xs) if xs else 0.0


def _slope(ts: np.ndarray, ys: np.ndarray) -> float:
    """The least-squares slope of ys against ts; 0 when the times do not vary (fewer than two
    snapshots, or every snapshot taken at the same event: no event between the grid points),
    where a fitted line has no slope to speak of."""
    if len(ts) < 2:
        return 0.0
    dt = ts - ts.mean()
    sxx = float(np.sum(dt * dt))
    return float(np.sum(dt * (ys - ys.mean())) / sxx) if sxx > 0 else 0.0


def simulate(
    requests,
    policy,
    *,
    budget,
    max_requests=256,
    prefill_cap=None,
    c=0.0455,
    a=0.00018,
    b0=64,
    alpha=0.0,
    beta=0.0,
    attention=False,
    attention_prefix=False,
    K_p=None,
    K_d=None,
    phase_first="decode",
    inner_order="fcfs",
    type_order=None,
    horizon,
    burn_in=0.0,
    table_size=1 << 20,
    snapshots=16,
    memory_overhead="off",
    kv_limit=None,
    c1=0.0,
    c2=0.0,
    batch_time="paper",
    a_prefill=0.0,
    a_decode=0.0,
    a_context=0.0,
    admission_cap="batch",
) -> dict:
    """Run the budget engine of docs/budget-semantics.md on a given request list.

    requests: [(arrival (float s or DF), type, v_p, v_d)] in arrival order. budget: b tokens;
    max_requests: M; prefill_cap: whole-prompt cap of vllm / ft (None: = budget); c, a, b0: the
    batch time c + a max(0, b' - b0) (float32 params); alpha, beta, attention, attention_prefix:
    the (A.1) terms; K_p, K_d (None: unlimited), phase_first, inner_order: wc; type_order:
    priority (None: 0..m-1); horizon, burn_in: seconds; table_size: Q of §4; snapshots: G.
    memory_overhead: "off", "swap" or "recompute" with kv_limit (tokens) and the coefficients
    c1, c2 of o(x) = c1 x + c2 or c1 x^2 + c2 (float32 params). batch_time: "paper" (c + a
    max(0, b' - b0)) or "linear" (c + a_prefill * prefill + a_decode * decode + a_context *
    context, `linear_batch_time`; a and b0 unused; float32 params, s/token). admission_cap:
    "batch" (M caps one batch's requests) or "running" (also the started, unfinished ones).

    Returns {"batches", "requests", "snapshots", "metrics"} (see the module docs / brief):
    batches: [{t0, tau, t_end, load, members {input index: (dp, dd)}, available, partial,
    in_system, tokens_after}]; requests: [{rejected, entry, first_token, departure, tbt}];
    snapshots: G tuples (t float64, N, X-pre); metrics: float64 dict of §6.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    b, M = int(budget), int(max_requests)
    cap = b if prefill_cap is None else int(prefill_cap)
    c32, a32, al32, be32 = F32(c), F32(a), F32(alpha), F32(beta)
    m1, m2 = F32(c1), F32(c2)
    arrivals = [_as_df(r[0]) for r in requests]
    m = max((int(r[1]) for r in requests), default=-1) + 1
    order = tuple(range(m)) if type_order is None else tuple(type_order)
    H, B = from_float64(horizon), from_float64(burn_in)
    H64, B64 = to_float64(H), to_float64(B)
    window_s = H64 - B64
    G = int(snapshots)
    grid = [float(burn_in) + k * (float(horizon) - float(burn_in)) / G for k in range(G)]

    def in_window(t: DF) -> bool:
        return le(B, t) and not le(H, t)

    out_reqs: list[dict[str, Any]] = [
        {"rejected": False, "entry": None, "first_token": None, "departure": None, "tbt": []} for _ in requests
    ]
    queue: list[_Req] = []  # present requests, entry order
    present: dict[int, _Req] = {}  # entry number -> request still in the system
    entries = 0
    nxt = 0  # next input request to insert
    t = ZERO
    batches: list[dict[str, Any]] = []
    snaps: list[tuple[float, int, int] | None] = [None] * G
    num_rejected = 0
    # Window accumulators (float64).
    n_int = x_int = idle = 0.0
    dep_tokens = dep_reqs = 0
    ttft_w: list[np.float32] = []
    tbt_w: list[np.float32] = []
    lat_w: list[np.float32] = []
    w_batches = w_partial = 0

    while True:
        # 1. Visible requests: insert the arrivals due at t (buffer rule of §4).
        while nxt < len(requests) and le(arrivals[nxt], t):
            _, typ, vp, vd = requests[nxt]
            if entries - table_size >= 0 and (entries - table_size) in present:
                out_reqs[nxt]["rejected"] = True
                num_rejected += 1
            else:
                r = _Req(nxt, entries, int(typ), arrivals[nxt], int(vp), int(vd))
                out_reqs[nxt]["entry"] = entries
                queue.append(r)
                present[entries] = r
                entries += 1
            nxt += 1
        n_pre = len(queue)
        x_pre = sum(r.p + r.d for r in queue)
        # Snapshots: this deciding epoch (batch, idle jump or end) serves every grid time <= t.
        for k in range(G):
            if snaps[k] is None and le(from_float64(grid[k]), t):
                snaps[k] = (to_float64(t), n_pre, x_pre)
        # End at the horizon, or with an empty queue and an exhausted input (then the engine
        # stays idle until the horizon: that time counts as idle).
        if le(H, t):
            break
        if not queue and nxt >= len(requests):
            idle += _overlap(to_float64(t), H64, B64, H64)
            break
        # 2. Idle until the next arrival.
        if not queue:
            t_next = arrivals[nxt]
            idle += _overlap(to_float64(t), to_float64(t_next), B64, H64)
            t = t_next
            continue
        # 3. Decision.
        available = sum(r.p for r in queue) + sum(1 for r in queue if r.decoding)
        chosen = choose(
            queue,
            policy,
            budget=b,
            max_requests=M,
            prefill_cap=cap,
            K_p=K_p,
            K_d=K_d,
            phase_first=phase_first,
            inner_order=inner_order,
            type_order=order,
            admission_cap=admission_cap,
        )
        if not chosen:
            raise RuntimeError(f"{policy}: no token chosen although {available} are available")
        assert len(chosen) <= M
        for r, (dp, dd) in chosen.items():
            assert 0 <= dp <= r.p and dd in (0, 1) and (dd == 0 or r.p == 0)
        load = sum(dp + dd for dp, dd in chosen.values())
        # 5. Duration (P_i, D_i before this batch).
        if batch_time == "linear":
            tau = linear_batch_time(chosen, c32, (F32(a_prefill), F32(a_decode), F32(a_context)))
        elif batch_time == "paper":
            tau = iteration_time(max(0, load - int(b0)), c32, a32)
        else:
            raise ValueError(f"batch_time must be 'paper' or 'linear', got {batch_time!r}")
        if attention:
            S1 = sum(dp * dp for dp, _ in chosen.values())
            S2 = sum((r.P + r.D) * dd for r, (_, dd) in chosen.items())
            tau = add_f32(tau, F32(al32 * F32(S1)))
            tau = add_f32(tau, F32(be32 * F32(S2)))
            if attention_prefix:
                S3 = sum(dp * r.P for r, (dp, _) in chosen.items())
                tau = add_f32(tau, F32(al32 * F32(S3)))
        if memory_overhead != "off":
            kv = [(r.entry, r.P + r.D + dp + dd) for r, (dp, dd) in chosen.items()]
            _, X, N, s_hi, s_lo = memory_overhead_terms(kv, int(kv_limit), memory_overhead)
            if memory_overhead == "swap":
                terms = ((m1, X), (m2, N))
            else:
                terms = ((F32(m1 * F32(65536.0)), s_hi), (m1, s_lo), (m2, N))
            for coef, total in terms:
                tau = add_f32(tau, F32(coef * F32(total)))
        # 4. Loading.
        for r, (dp, dd) in chosen.items():
            r.p -= dp
            r.d -= dd
        x_post = sum(r.p + r.d for r in queue)
        t0, t_end = t, add(t, tau)
        t0_64, t1_64 = to_float64(t0), to_float64(t_end)
        n_int += n_pre * _overlap(t0_64, t1_64, B64, H64)
        x_int += x_post * _overlap(t0_64, t1_64, B64, H64)
        partial = load < b and available >= b
        if in_window(t0):
            w_batches += 1
            w_partial += int(partial)
        batches.append(
            {
                "t0": t0,
                "tau": tau,
                "t_end": t_end,
                "load": load,
                "members": {r.index: x for r, x in chosen.items()},
                "available": available,
                "partial": partial,
                "in_system": n_pre,
                "tokens_after": x_post,
            }
        )
        # 6. Completions at the batch end.
        end_in = in_window(t_end)
        for r, (dp, dd) in chosen.items():
            rec = out_reqs[r.index]
            if dp > 0 and r.p == 0:
                rec["first_token"] = t_end
                r.last_token = t_end
            if dd:
                gap = sub(t_end, r.last_token)
                rec["tbt"].append(gap)
                if end_in:
                    tbt_w.append(gap)
                r.last_token = t_end
                if r.d == 0:
                    rec["departure"] = t_end
                    queue.remove(r)
                    del present[r.entry]
                    if end_in:
                        dep_reqs += 1
                        dep_tokens += r.vp + r.vd
                        ttft_w.append(sub(rec["first_token"], r.arrival))
                        lat_w.append(sub(t_end, r.arrival))
        t = t_end

    # Snapshots not reached (the run ended early with an empty system): (g_k, 0, 0).
    snaps = [s if s is not None else (grid[k], 0, 0) for k, s in enumerate(snaps)]
    ts = np.array([s[0] for s in snaps], np.float64)
    ns = np.array([s[1] for s in snaps], np.float64)
    xs = np.array([s[2] for s in snaps], np.float64)
    req_slope, tok_slope = _slope(ts, ns), _slope(ts, xs)
    metrics = {
        "throughput_tokens_per_s": dep_tokens / window_s,
        "throughput_requests_per_s": dep_reqs / window_s,
        "mean_requests_in_system": n_int / window_s,
        "mean_tokens_in_system": x_int / window_s,
        "ttft_mean_s": _mean(ttft_w),
        "tbt_mean_s": _mean(tbt_w),
        "latency_mean_s": _mean(lat_w),
        "idle_fraction": idle / window_s,
        "partial_batch_fraction": w_partial / w_batches if w_batches else 0.0,
        "num_batches": float(len(batches)),
        "num_departed": float(dep_reqs),
        "num_rejected": float(num_rejected),
        "overflowed": float(num_rejected > 0),
        "requests_end": float(len(queue)),
        "tokens_end": float(sum(r.p + r.d for r in queue)),
        "token_growth_per_s": tok_slope,
        "request_growth_per_s": req_slope,
        "end_time_s": to_float64(t),
    }
    return {"batches": batches, "requests": out_reqs, "snapshots": snaps, "metrics": metrics}
