"""Plain-Python reference of the `interval` engine (paper 003), the test oracle.

The contract is docs/interval-semantics.md; this module implements it literally, one job at a
time, with Python ints and lists, written for clarity rather than speed. It needs nothing beyond
the standard library. The JAX engine (`jaxsched.interval`) is property-tested against it.

Model in one paragraph: n jobs, all present at t = 0, one worker whose KV cache holds M tokens.
Job i has prompt s_i, hidden true output o_i and a predicted interval [l_i, u_i] containing o_i.
Steps t = 1, 2, ...; an attempt admitted at step t has start p_i = t - 1 and, at step t' > p_i,
has generated a_i = t' - 1 - p_i tokens before the step. In step t every job in the batch X
generates one token and X holds sum_X (s_i + a_i + 1) KV tokens; a job completes at the step
where a_i + 1 = o_i. Each step runs, in order: (1) A_l promotions, (2) overflow eviction,
(3) strict-prefix admission under the future-peak check, (4) generation.

Entry point: `simulate(s, o, low, high, M, policy, seed=0, eviction_key="stale",
amax_order="sorted", step_model=None, start_fraction=0.0) -> dict`.

Every tie is broken by a stated rule (a sort key ending in the job index), never by dictionary
or set iteration order, so the engine can reproduce each choice exactly.
"""

from __future__ import annotations

from typing import Optional, Sequence

from tests.reference.offline import hash3

__all__ = [
    "simulate",
    "POLICIES",
    "EVICTION_KEYS",
    "AMAX_ORDERS",
    "STEP_MODEL_KEYS",
    "STREAM_ORDER",
    "STREAM_TIE_ADMIT",
    "STREAM_TIE_EVICT",
]

# Stream tags of the counter hash; these mirror jaxsched.rng (STREAM_ORDER is
# jaxsched.rng.STREAM_ORDER; the two tie streams are the interval engine's own).
STREAM_ORDER = 10  # fixed tie key of a job for the whole run (A_l, A_random)
STREAM_TIE_ADMIT = 12  # per-step admission tie key (H-SF, A_max, A_min)
STREAM_TIE_EVICT = 13  # per-step overflow-eviction tie key (every policy)

POLICIES = ("hsf", "amax", "amin", "al", "arandom")
EVICTION_KEYS = ("stale", "live")
AMAX_ORDERS = ("sorted", "random")
STEP_MODEL_KEYS = ("step_const_s", "per_decode_s", "per_prefill_token_s", "per_kv_token_s")
START_STEPS = 1024  # start_fraction's quantum is 1 / START_STEPS

# Policies whose admission tie key is drawn afresh every step; the others use one fixed key.
_PER_STEP_ADMIT_TIE = {"hsf": True, "amax": True, "amin": True, "al": False, "arandom": False}


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_inputs(s, o, low, high, M, policy, seed, eviction_key, amax_order, step_model, start_fraction):
    """Raise ValueError (naming the offending field) unless the instance meets the contract."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if not isinstance(start_fraction, (int, float)) or not 0.0 <= start_fraction <= 1.0:
        raise ValueError(f"start_fraction must be a number in [0, 1], got {start_fraction!r}")
    if start_fraction != 0.0 and policy not in ("amin", "al"):
        raise ValueError(f"start_fraction is read only by amin and al, got policy {policy!r}")
    if eviction_key not in EVICTION_KEYS:
        raise ValueError(f"eviction_key must be one of {EVICTION_KEYS}, got {eviction_key!r}")
    if amax_order not in AMAX_ORDERS:
        raise ValueError(f"amax_order must be one of {AMAX_ORDERS}, got {amax_order!r}")
    if not _is_int(M) or M < 1:
        raise ValueError(f"M must be a positive integer, got {M!r}")
    if not _is_int(seed):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    n = len(s)
    for name, seq in (("o", o), ("low", low), ("high", high)):
        if len(seq) != n:
            raise ValueError(f"{name} has length {len(seq)}, but s has length {n}")
    for name, seq in (("s", s), ("o", o), ("low", low), ("high", high)):
        for i, x in enumerate(seq):
            if not _is_int(x):
                raise ValueError(f"{name}[{i}] must be an integer, got {x!r}")
    for i in range(n):
        if s[i] < 0:
            raise ValueError(f"s[{i}] = {s[i]} < 0 (prompt tokens; the paper's constructions take s = 0)")
        if o[i] < 1:
            raise ValueError(f"o[{i}] = {o[i]} < 1 (outputs hold at least one token)")
        if low[i] < 1:
            raise ValueError(f"low[{i}] = {low[i]} < 1")
        if not low[i] <= o[i]:
            raise ValueError(f"low[{i}] = {low[i]} > o[{i}] = {o[i]} (need low <= o <= high)")
        if not o[i] <= high[i]:
            raise ValueError(f"high[{i}] = {high[i]} < o[{i}] = {o[i]} (need low <= o <= high)")
        if s[i] + high[i] > M:
            raise ValueError(
                f"s[{i}] + high[{i}] = {s[i] + high[i]} > M = {M} (every job must fit alone at its upper bound)"
            )
    if step_model is not None:
        if not isinstance(step_model, dict):
            raise ValueError(f"step_model must be None or a dict, got {type(step_model).__name__}")
        missing = [k for k in STEP_MODEL_KEYS if k not in step_model]
        extra = [k for k in step_model if k not in STEP_MODEL_KEYS]
        if missing or extra:
            raise ValueError(
                f"step_model must have exactly the keys {STEP_MODEL_KEYS}; missing {missing}, unknown {extra}"
            )


# --------------------------------------------------------------------------------------------
# The admission check (step 3)
# --------------------------------------------------------------------------------------------
def _fits(members: Sequence[tuple[int, int, int]], M: int) -> bool:
    """True iff, for every j in X, sum_{l in X, c^_l >= c^_j} (s_l + c^_j - p_l) <= M.

    X is given as (s_l, p_l, c^_l) triples, c^ the estimated completion p + e.
    """
    for _, _, cj in members:
        load = sum(sl + cj - pl for sl, pl, cl in members if cl >= cj)
        if load > M:
            return False
    return True


# --------------------------------------------------------------------------------------------
# The simulator
# --------------------------------------------------------------------------------------------
def simulate(
    s: Sequence[int],
    o: Sequence[int],
    low: Sequence[int],
    high: Sequence[int],
    M: int,
    policy: str,
    seed: int = 0,
    eviction_key: str = "stale",
    amax_order: str = "sorted",
    step_model: Optional[dict] = None,
    start_fraction: float = 0.0,
) -> dict:
    """Run one policy of docs/interval-semantics.md on one instance; return its schedule.

    Args:
      s, o, low, high: per-job prompt s_i >= 0, hidden true output o_i >= 1 and predicted
        interval [low_i, high_i] with 1 <= low_i <= o_i <= high_i and s_i + high_i <= M.
      M: KV limit in tokens.
      policy: "hsf" (H-SF), "amax" (A_max), "amin" (A_min), "al" (A_l), "arandom" (A_random).
      seed: the run's seed for the tie-break hashes.
      eviction_key: "stale" (ekey = est) or "live" (ekey = max(est, a)), step 2's sort key.
      amax_order: "sorted" (A_max candidates by u, then per-step random) or "random" (per-step
        random only).
      step_model: None (every step lasts 1.0 s) or a dict of the four float coefficients
        step_const_s, per_decode_s, per_prefill_token_s, per_kv_token_s.
      start_fraction: theta in [0, 1] (amin, al only): est_i starts at
        low_i + floor(q (high_i - low_i) / 1024), q = round(1024 theta); A_l promotes a job
        that produced that many tokens (0: the paper's low_i).

    Returns a dict:
      completion: c_i per job (steps); tel: sum c_i; makespan: last step;
      evictions, wasted: per job, cancellations (promotions included) and tokens they discarded;
      overflow_steps: steps where step 2 cancelled something;
      memory: memory_t for t = 1..makespan; peak_memory, mean_memory;
      admitted: per step, the job ids admitted, in admission order;
      evicted: per step, the job ids cancelled, A_l promotions first (ascending id), then
        overflow cancellations in eviction order;
      finish_s: per job, the time in seconds at the end of step c_i (durations summed in order);
      estimates: est_i per job at the end of the run (o_i, u_i or the A_min / A_l estimate).

    Raises ValueError on a bad input (naming the field), AssertionError if memory_t > M at some
    step (a broken invariant), RuntimeError if the run exceeds a generous step bound.
    """
    _check_inputs(s, o, low, high, M, policy, seed, eviction_key, amax_order, step_model, start_fraction)
    n = len(s)
    s = [int(x) for x in s]
    o = [int(x) for x in o]
    lo = [int(x) for x in low]
    hi = [int(x) for x in high]
    if step_model is None:
        step_model = dict(step_const_s=1.0, per_decode_s=0.0, per_prefill_token_s=0.0, per_kv_token_s=0.0)

    # ---- the policy's table (docs: "Policies") ----
    def E(i: int) -> int:
        """The estimate of job i's output used in the admission check."""
        if policy in ("hsf", "arandom"):
            return o[i]
        if policy == "amax":
            return hi[i]
        return est[i]  # amin, al

    def pkey(i: int) -> int:
        """Primary admission sort key."""
        if policy == "hsf":
            return o[i]
        if policy == "amax":
            return hi[i] if amax_order == "sorted" else 0
        if policy == "amin":
            return est[i]
        if policy == "al":
            return qkey[i]
        return 0  # arandom

    def ptie(i: int, t: int) -> int:
        """Admission tie key: per step or fixed, by policy."""
        if _PER_STEP_ADMIT_TIE[policy]:
            return hash3(hash3(seed, t, STREAM_TIE_ADMIT), i, STREAM_TIE_ADMIT)
        return hash3(seed, i, STREAM_ORDER)

    def etie(i: int, t: int) -> int:
        """Overflow-eviction tie key, drawn per step."""
        return hash3(hash3(seed, t, STREAM_TIE_EVICT), i, STREAM_TIE_EVICT)

    # ---- per-job state ----
    p = [-1] * n  # start of the current attempt; -1 while pending
    c = [-1] * n  # completion step; -1 until done
    if policy in ("hsf", "arandom"):
        est = list(o)
    elif policy == "amax":
        est = list(hi)
    else:  # amin, al: theta of the way from low to high, in whole 1/1024ths, floored
        q = round(start_fraction * START_STEPS)
        est = [lo[i] + (q * (hi[i] - lo[i])) // START_STEPS for i in range(n)]
    start_est = list(est)
    elig = [1] * n  # first step at which a pending job may be admitted
    qkey = [0] * n  # A_l's queue key
    evictions = [0] * n
    wasted = [0] * n

    memory: list[int] = []
    admitted_log: list[list[int]] = []
    evicted_log: list[list[int]] = []
    overflow_steps = 0
    clock = 0.0
    finish_s = [0.0] * n

    # Generous bound on the number of steps, only to turn a livelock into an error.
    max_steps = 1000 + 100 * (n + 1) * sum(s[i] + hi[i] for i in range(n))

    t = 0
    while any(ci < 0 for ci in c):
        t += 1
        if t > max_steps:
            raise RuntimeError(f"no completion after {max_steps} steps (livelock?)")
        cancelled: list[int] = []

        def active() -> list[int]:
            return [i for i in range(n) if p[i] >= 0 and c[i] < 0]

        def a(i: int) -> int:
            return t - 1 - p[i]

        for i in active():
            assert 1 <= a(i) < o[i], (i, t, a(i), o[i])

        # 1. Promotion (A_l only).
        if policy == "al":
            for i in active():  # ascending id
                if est[i] == start_est[i] < hi[i] and a(i) == start_est[i]:
                    wasted[i] += a(i)
                    evictions[i] += 1
                    est[i] = hi[i]
                    qkey[i] = t
                    p[i] = -1
                    elig[i] = t  # may be re-admitted this step
                    cancelled.append(i)

        # 2. Overflow handling (every policy).
        A = active()
        total = sum(s[i] + a(i) + 1 for i in A)
        if total > M:

            def ekey(i: int) -> int:
                return est[i] if eviction_key == "stale" else max(est[i], a(i))

            order = sorted(A, key=lambda i: (ekey(i), etie(i, t), i))
            for i in order:  # the shortest prefix
                if total <= M:
                    break
                total -= s[i] + a(i) + 1
                ai = a(i)
                wasted[i] += ai
                evictions[i] += 1
                est[i] = max(est[i], ai)
                p[i] = -1
                elig[i] = t + 1  # eligible from the next step
                cancelled.append(i)
            overflow_steps += 1

        # 3. Admission (strict prefix under the future-peak check).
        A_left = active()
        # (s, p, estimated completion) of the jobs already in X; active: e = max(E, a + 1).
        members = [(s[i], p[i], p[i] + max(E(i), a(i) + 1)) for i in A_left]
        pending = [i for i in range(n) if p[i] < 0 and c[i] < 0 and elig[i] <= t]
        pending.sort(key=lambda i: (pkey(i), ptie(i, t), i))
        admitted: list[int] = []
        for r in pending:
            trial = members + [(s[r], t - 1, t - 1 + E(r))]
            if not _fits(trial, M):
                break
            members = trial
            p[r] = t - 1
            admitted.append(r)

        # 4. Generation.
        X = active()  # A_left + admitted
        mem_t = sum(s[i] + a(i) + 1 for i in X)
        assert mem_t <= M, f"step {t}: memory {mem_t} > M = {M}"
        dt = (
            step_model["step_const_s"]
            + step_model["per_decode_s"] * len(X)
            + step_model["per_prefill_token_s"] * sum(s[i] for i in admitted)
            + step_model["per_kv_token_s"] * mem_t
        )
        clock += dt
        for i in X:
            if a(i) + 1 == o[i]:
                c[i] = t
                finish_s[i] = clock
        memory.append(mem_t)
        admitted_log.append(admitted)
        evicted_log.append(cancelled)

    makespan = t
    return {
        "completion": c,
        "tel": sum(c),
        "makespan": makespan,
        "evictions": evictions,
        "wasted": wasted,
        "overflow_steps": overflow_steps,
        "memory": memory,
        "peak_memory": max(memory) if memory else 0,
        "mean_memory": sum(memory) / makespan if makespan else 0.0,
        "admitted": admitted_log,
        "evicted": evicted_log,
        "finish_s": finish_s,
        "estimates": est,
    }
