"""One-seed NumPy simulator of the dp model (semantics "paper"): the CPU speed baseline.

This is the kind of event simulator a scheduling paper ships: the [G, B] slot state lives in
NumPy arrays and every per-step slot operation (growth, completion, loads, power) is one
vectorized NumPy expression, while each step's admission runs the policy's greedy loop in
plain Python, one request at a time. It simulates a single seed; the batched JAX engine is
timed against it in the same benchmark run.

It implements docs/dp-semantics.md exactly (semantics "paper"; policies "fcfs", "jsq_tokens"
and "bfio" with lookahead_steps 0), so its integer trajectories (`hist_loads`, `imbalance`) must equal
the engine's and the reference simulator's.

    python -m benchmarks.numpy_dp --G 16 --B 72 --steps 2000 --policy bfio
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import time
from typing import Callable

import numpy as np

POLICIES = ("fcfs", "jsq_tokens", "bfio", "round_robin")

IDLE_POWER_W = 100.0
MAX_POWER_W = 400.0
POWER_EXPONENT = 0.7


class RequestsExhausted(ValueError):
    """The run needs to reveal more requests than the arrays provide."""


# --------------------------------------------------------------------------- policies
# Each policy gets the post-removal loads L (tokens, one int per worker), the free slots per
# worker, the pool's prompt lengths in queue order and U = min(len(pool), sum(free)); it returns
# (queue positions, workers) of the U admitted requests, as int64 arrays in any order.


def _fcfs(loads: list[int], free: np.ndarray, pool_s: np.ndarray, U: int) -> tuple[np.ndarray, np.ndarray]:
    """The first U pool requests fill worker 0's free slots, then worker 1's, and so on."""
    workers = np.repeat(np.arange(free.size), free)[:U]
    return np.arange(U), workers


def _jsq_tokens(loads: list[int], free: np.ndarray, pool_s: np.ndarray, U: int) -> tuple[np.ndarray, np.ndarray]:
    """The first U pool requests, in queue order, each to the least-loaded worker with a slot."""
    # A heap of (load, worker) over workers with a free slot gives the least load with ties to
    # the lowest index in O(log G) per admission.
    free_left = free.tolist()
    heap = [(loads[g], g) for g in range(len(loads)) if free_left[g] > 0]
    heapq.heapify(heap)
    s_list = pool_s.tolist()
    workers = np.empty(U, np.int64)
    for j in range(U):
        load, g = heapq.heappop(heap)
        workers[j] = g
        free_left[g] -= 1
        if free_left[g] > 0:
            heapq.heappush(heap, (load + s_list[j], g))
    return np.arange(U), workers


def _bfio_valley(loads: list[int], free: np.ndarray, pool_s: np.ndarray, U: int) -> tuple[np.ndarray, np.ndarray]:
    """BF-IO with H = 0: fill the least-loaded worker up towards the current maximum load.

    U times: g = least-loaded worker with a free slot (ties: lowest index); M = max load over
    all workers; take the largest s with L_g + s <= M, else the smallest s (ties: earliest).
    """
    free_left = free.tolist()
    heap = [(loads[g], g) for g in range(len(loads)) if free_left[g] > 0]
    heapq.heapify(heap)
    top = max(loads)
    # Waiting requests as (s, queue position) sorted ascending: "largest s <= cap, earliest
    # among equals" and "smallest s, earliest" are then two bisections on a list of <= R items.
    keys = sorted(zip(pool_s.tolist(), range(pool_s.size)))
    after_all = pool_s.size  # larger than every queue position
    positions = np.empty(U, np.int64)
    workers = np.empty(U, np.int64)
    for j in range(U):
        load, g = heapq.heappop(heap)
        cap = top - load
        if keys[0][0] <= cap:
            # Largest s <= cap: the last key below (cap, +inf); then the first key with that s.
            s_fit = keys[bisect.bisect_right(keys, (cap, after_all)) - 1][0]
            i = bisect.bisect_left(keys, (s_fit, -1))
        else:
            i = 0
        s, pos = keys.pop(i)
        positions[j] = pos
        workers[j] = g
        load += s
        if load > top:
            top = load
        free_left[g] -= 1
        if free_left[g] > 0:
            heapq.heappush(heap, (load, g))
    return positions, workers


def _round_robin() -> Callable[[list[int], np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]:
    """A round-robin policy with its own pointer: the first U pool requests, in queue order,
    each to the first worker with a free slot at or after the pointer (cyclically); the pointer
    then moves past that worker and persists to the next step."""
    ptr = 0

    def choose(loads: list[int], free: np.ndarray, pool_s: np.ndarray, U: int) -> tuple[np.ndarray, np.ndarray]:
        nonlocal ptr
        G = free.size
        free_left = free.tolist()
        workers = np.empty(U, np.int64)
        for j in range(U):
            g = next((ptr + d) % G for d in range(G) if free_left[(ptr + d) % G] > 0)
            workers[j] = g
            free_left[g] -= 1
            ptr = (g + 1) % G
        return np.arange(U), workers

    return choose


_POLICY_FNS = {"fcfs": _fcfs, "jsq_tokens": _jsq_tokens, "bfio": _bfio_valley}
# Policies with state across steps: a fresh one per run.
_POLICY_MAKERS = {"round_robin": _round_robin}


# --------------------------------------------------------------------------- simulator


def simulate_numpy(
    *,
    num_workers: int,
    slots_per_worker: int,
    pool_size: int,
    policy: str,
    prompt: np.ndarray,
    output: np.ndarray,
    num_steps: int,
    step_const_s: float = 4.8875e-3,
    per_token_s: float = 1.00525e-7,
) -> dict:
    """Simulate one seed of the dp model, semantics "paper", for `num_steps` decode steps.

    Args:
      num_workers: G. slots_per_worker: B. pool_size: R (waiting requests the policy sees).
      policy: "fcfs", "jsq_tokens", "bfio" (lookahead_steps 0, valley fill) or "round_robin".
      prompt, output: int arrays [N] of prompt / output lengths (tokens, >= 1) of requests
        0..N-1 in reveal order. The stream is unbounded: if the run must reveal request N,
        `RequestsExhausted` is raised.
      num_steps: decode steps 1..num_steps after the initial admission (step 0).
      step_const_s: barrier overhead C per step (s). per_token_s: t_l (s per token of the
        most loaded worker).

    Returns a dict:
      hist_loads: int64 [num_steps, G], per-worker loads (tokens) after growth, before
        removal of finished requests; row k-1 is step k.
      imbalance: int64 [num_steps], G * max_g L_g - sum_g L_g (tokens) of post-removal loads.
      dt: float64 [num_steps], step durations (s).
      cut: int, the last step with at least one admission (0 if only step 0 admitted).
      metrics: float64 summaries over steps 1..cut: avg_imbalance_tokens (tokens),
        throughput_tokens_per_s (generated tokens / s), energy_j (J). The averages are NaN
        when cut == 0. And tpot_s (s) over every step run: sum_k dt_k sum_(i active) 1/o_i
        over sum_k sum_(i active) 1/o_i, the engine's time per output token.
    Steps after the run ends (no active request) keep zeros in every array.
    """
    G, B, R = int(num_workers), int(slots_per_worker), int(pool_size)
    if min(G, B, R) < 1:
        raise ValueError(f"num_workers, slots_per_worker and pool_size must be >= 1, got {G}, {B}, {R}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    prompt = np.asarray(prompt, np.int64)
    output = np.asarray(output, np.int64)
    if prompt.ndim != 1 or prompt.shape != output.shape:
        raise ValueError(
            f"prompt and output must be 1-d arrays of equal length, got shapes {prompt.shape} and {output.shape}"
        )
    if prompt.size and (prompt.min() < 1 or output.min() < 1):
        raise ValueError("prompt and output lengths must be >= 1")
    N = prompt.size
    choose = _POLICY_MAKERS[policy]() if policy in _POLICY_MAKERS else _POLICY_FNS[policy]

    # Slot state: load = s + gen of the request in the slot, remaining = o - gen; both are 0
    # for a free slot, so "active" is exactly remaining > 0 and loads need no mask.
    slot_load = np.zeros((G, B), np.int64)
    slot_rem = np.zeros((G, B), np.int64)
    slot_inv = np.zeros((G, B), np.float64)  # 1 / o of the request in the slot (TPOT weights)
    loads = np.zeros(G, np.int64)  # start-of-step (post-admission) worker loads

    pool_s = np.zeros(0, np.int64)
    pool_o = np.zeros(0, np.int64)
    next_id = 0

    hist_loads = np.zeros((num_steps, G), np.int64)
    imbalance = np.zeros(num_steps, np.int64)
    dt = np.zeros(num_steps, np.float64)
    tokens = np.zeros(num_steps, np.int64)
    energy = np.zeros(num_steps, np.float64)
    cut = 0

    def admit(loads: np.ndarray) -> bool:
        """Top the pool up to R, run the policy, place its picks; True if anything was admitted."""
        nonlocal pool_s, pool_o, next_id
        need = R - pool_s.size
        if need > 0:
            if next_id + need > N:
                raise RequestsExhausted(
                    f"the run needs request id {next_id + need - 1} but only {N} requests were "
                    f"provided; pass longer prompt/output arrays or fewer steps"
                )
            pool_s = np.concatenate((pool_s, prompt[next_id : next_id + need]))
            pool_o = np.concatenate((pool_o, output[next_id : next_id + need]))
            next_id += need
        free_flat = np.flatnonzero(slot_rem == 0)  # row-major: by worker, then slot index
        U = min(pool_s.size, free_flat.size)
        if U == 0:
            return False
        free = np.bincount(free_flat // B, minlength=G)
        pos, workers = choose(loads.tolist(), free, pool_s, U)
        # Placement: worker g's picks, in queue order, take g's free slots in slot-index order.
        order = np.lexsort((pos, workers))
        pos, workers = pos[order], workers[order]
        picks_per_worker = np.bincount(workers, minlength=G)
        rank = np.arange(U) - (np.cumsum(picks_per_worker) - picks_per_worker)[workers]
        first_free = np.cumsum(free) - free
        slots = free_flat[first_free[workers] + rank]
        s_new = pool_s[pos]
        slot_load.flat[slots] = s_new
        slot_rem.flat[slots] = pool_o[pos]
        slot_inv.flat[slots] = 1.0 / pool_o[pos]
        loads += np.bincount(workers, weights=s_new, minlength=G).astype(np.int64)
        keep = np.ones(pool_s.size, bool)
        keep[pos] = False
        pool_s, pool_o = pool_s[keep], pool_o[keep]
        return True

    admit(loads)  # step 0: every slot free, loads 0, clock 0
    tpot_num = tpot_den = 0.0

    for k in range(1, num_steps + 1):
        active = slot_rem > 0
        if not active.any():
            break  # not live: nothing changes from here on
        i = k - 1
        step_dt = step_const_s + per_token_s * float(loads.max())
        dt[i] = step_dt
        # TPOT: each active request's token this step takes dt; request i weighs 1 / o_i, so
        # the ratio is the mean over requests of their time per output token.
        inv = float(slot_inv[active].sum())
        tpot_num += step_dt * inv
        tpot_den += inv
        # Growth: every active request generates one token.
        slot_load += active
        slot_rem -= active
        hist_loads[i] = slot_load.sum(axis=1)
        tokens[i] = np.count_nonzero(active)
        # Removal: requests that reached their output length free their slots.
        slot_load *= slot_rem > 0
        loads = slot_load.sum(axis=1)
        top = int(loads.max())
        imbalance[i] = G * top - int(loads.sum())
        if top > 0:
            u = loads / top
            power = np.where(u > 0, IDLE_POWER_W + (MAX_POWER_W - IDLE_POWER_W) * u**POWER_EXPONENT, IDLE_POWER_W)
            energy[i] = step_dt * float(power.sum())
        else:
            energy[i] = step_dt * G * IDLE_POWER_W
        if admit(loads):
            cut = k

    if cut > 0:
        avg_imb = float(imbalance[:cut].mean())
        throughput = float(tokens[:cut].sum()) / float(dt[:cut].sum())
    else:
        avg_imb = throughput = float("nan")
    metrics = {
        "avg_imbalance_tokens": avg_imb,
        "throughput_tokens_per_s": throughput,
        "energy_j": float(energy[:cut].sum()),
        "tpot_s": tpot_num / tpot_den if tpot_den > 0 else 0.0,
    }
    return {"hist_loads": hist_loads, "imbalance": imbalance, "dt": dt, "cut": cut, "metrics": metrics}


# --------------------------------------------------------------------------- benchmark


def draw_lengths(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n (prompt, output) length pairs (tokens, int64 [n] each) with BurstGPT-like marginals.

    prompt: lognormal with median 217 and sigma 1.0, rounded, clipped to [1, 14117];
    output: 7 with probability 0.457, else lognormal(3.43, 1.55) rounded, clipped to [1, 3206].
    """
    prompt = np.clip(np.round(rng.lognormal(np.log(217.0), 1.0, n)), 1, 14117).astype(np.int64)
    out = np.clip(np.round(rng.lognormal(3.43, 1.55, n)), 1, 3206).astype(np.int64)
    output = np.where(rng.random(n) < 0.457, 7, out)
    return prompt, output


def arg_parser(description: str, prog: str | None = None) -> argparse.ArgumentParser:
    """The command line shared by the one-seed baselines: shape, steps and policy."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--G", type=int, default=16, help="workers")
    ap.add_argument("--B", type=int, default=72, help="slots per worker")
    ap.add_argument("--R", type=int, default=64, help="pool size")
    ap.add_argument("--steps", type=int, default=2000, help="decode steps")
    ap.add_argument("--policy", choices=POLICIES, default="bfio")
    return ap


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0], prog="python -m benchmarks.numpy_dp").parse_args()
    # Each step admits at most G*B requests, so this many can never run out.
    n = args.R + args.G * args.B * (args.steps + 1)
    prompt, output = draw_lengths(np.random.default_rng(0), n)
    t0 = time.perf_counter()
    res = simulate_numpy(
        num_workers=args.G,
        slots_per_worker=args.B,
        pool_size=args.R,
        policy=args.policy,
        prompt=prompt,
        output=output,
        num_steps=args.steps,
        step_const_s=(args.B * 0.6e-3 + 35e-3) / 16,
    )
    wall = time.perf_counter() - t0
    m = res["metrics"]
    print(
        f"policy={args.policy} G={args.G} B={args.B} R={args.R} steps={args.steps}: "
        f"{wall:.3f} s, {args.steps / wall:.1f} seed-steps/s; "
        f"avg_imbalance={m['avg_imbalance_tokens']:.1f} tokens, "
        f"throughput={m['throughput_tokens_per_s']:.1f} tokens/s, energy={m['energy_j']:.1f} J"
    )


if __name__ == "__main__":
    main()
