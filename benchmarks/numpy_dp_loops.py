"""One-seed, loop-style NumPy simulator of the dp model (semantics "paper"): the research baseline.

The speed target of the dp engine is stated against "the same model run one seed at a time in
plain NumPy (the style of the paper's own simulator)". This module is that simulator, written
the way a scheduling paper's simulator usually is:
- each worker owns small NumPy arrays for the prompt length, age (tokens generated) and output
  length of its B slots;
- every step loops over the workers in Python (`for g in range(G)`) for growth, completion,
  removal, loads and power;
- the admission greedy is plain Python: scan the workers for the lightest one with a free slot,
  scan the pool for the best fitting request.

`numpy_dp.py` is the stronger baseline: the same model with every per-step slot operation one
vectorized expression over the whole [G, B] state, and heaps and bisection in the greedy.
`bench_dp.py` times the engine against both in the same run.

It implements docs/dp-semantics.md exactly (semantics "paper"; policies "fcfs", "jsq_tokens" and
"bfio" with lookahead_steps 0), so its integer trajectories (`hist_loads`, `imbalance`) equal those of
`numpy_dp.simulate_numpy`, the engine and the reference simulator.

    python -m benchmarks.numpy_dp_loops --G 16 --B 72 --steps 2000 --policy bfio
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from benchmarks.numpy_dp import (
    IDLE_POWER_W,
    MAX_POWER_W,
    POLICIES,
    POWER_EXPONENT,
    RequestsExhausted,
    arg_parser,
    draw_lengths,
    simulate_numpy,
)

# A policy's admissions: (queue position in the step's pool, worker), in the order it chose them.
Picks = list[tuple[int, int]]


@dataclass
class Worker:
    """The B slots of one worker. All arrays have shape [B]; lengths are in tokens."""

    prompt: np.ndarray  # int64, prompt length s of the request in the slot
    age: np.ndarray  # int64, tokens generated so far (gen)
    output: np.ndarray  # int64, output length o
    active: np.ndarray  # bool, the slot holds a request

    @classmethod
    def empty(cls, slots: int) -> Worker:
        """A worker with `slots` free slots."""
        return cls(
            np.zeros(slots, np.int64), np.zeros(slots, np.int64), np.zeros(slots, np.int64), np.zeros(slots, bool)
        )

    def num_free(self) -> int:
        """Free slots."""
        return self.active.size - int(np.count_nonzero(self.active))

    def load(self) -> int:
        """Sum of s + gen over the active requests (tokens)."""
        return int(np.sum(self.prompt[self.active] + self.age[self.active]))

    def admit(self, s: int, o: int) -> None:
        """Place a new request (prompt s, output o tokens) in the first free slot."""
        b = int(np.flatnonzero(~self.active)[0])
        self.prompt[b], self.age[b], self.output[b], self.active[b] = s, 0, o, True

    def decode(self) -> tuple[int, int]:
        """One decode step: every active request grows by a token, finished ones leave.

        Returns (requests that generated a token, load after growth before removal in tokens).
        """
        n = int(np.count_nonzero(self.active))
        self.age[self.active] += 1
        grown = self.load()
        self.active &= self.age < self.output
        return n, grown


# --------------------------------------------------------------------------- policies
# Each policy gets the post-removal loads (tokens per worker), the free slots per worker, the
# pool's prompt lengths in queue order and U = min(len(pool), sum(free)); it returns U picks.
# The lists it gets are its own copies, so it updates them as it assigns.


def _lightest(loads: list[int], free: list[int]) -> int:
    """The worker with a free slot and the least load (ties: lowest index)."""
    best = -1
    for g in range(len(loads)):
        if free[g] > 0 and (best < 0 or loads[g] < loads[best]):
            best = g
    return best


def _fcfs(loads: list[int], free: list[int], pool_s: list[int], U: int) -> Picks:
    """The first U pool requests fill worker 0's free slots, then worker 1's, and so on."""
    picks = []
    g = 0
    for j in range(U):
        while free[g] == 0:
            g += 1
        picks.append((j, g))
        free[g] -= 1
    return picks


def _jsq_tokens(loads: list[int], free: list[int], pool_s: list[int], U: int) -> Picks:
    """The first U pool requests, in queue order, each to the least-loaded worker with a slot."""
    picks = []
    for j in range(U):
        g = _lightest(loads, free)
        picks.append((j, g))
        loads[g] += pool_s[j]
        free[g] -= 1
    return picks


def _best_fit(pool_s: list[int], waiting: list[int], cap: int) -> int:
    """Index into `waiting` of the largest s <= cap, else of the smallest s (ties: earliest)."""
    fit = -1
    for i, pos in enumerate(waiting):
        if pool_s[pos] <= cap and (fit < 0 or pool_s[pos] > pool_s[waiting[fit]]):
            fit = i
    if fit >= 0:
        return fit
    smallest = 0
    for i, pos in enumerate(waiting):
        if pool_s[pos] < pool_s[waiting[smallest]]:
            smallest = i
    return smallest


def _bfio_valley(loads: list[int], free: list[int], pool_s: list[int], U: int) -> Picks:
    """BF-IO with H = 0: fill the least-loaded worker up towards the current maximum load."""
    waiting = list(range(len(pool_s)))  # queue positions not yet assigned, in queue order
    picks = []
    for _ in range(U):
        g = _lightest(loads, free)
        pos = waiting.pop(_best_fit(pool_s, waiting, max(loads) - loads[g]))
        picks.append((pos, g))
        loads[g] += pool_s[pos]
        free[g] -= 1
    return picks


def _round_robin() -> Callable[[list[int], list[int], list[int], int], Picks]:
    """Round robin with its own pointer (persistent across steps): each of the first U pool
    requests goes to the first worker with a free slot at or after the pointer, cyclically, and
    the pointer moves to the worker after it."""
    ptr = 0

    def choose(loads: list[int], free: list[int], pool_s: list[int], U: int) -> Picks:
        nonlocal ptr
        G = len(free)
        picks = []
        for j in range(U):
            g = ptr
            while free[g] == 0:
                g = (g + 1) % G
            picks.append((j, g))
            free[g] -= 1
            ptr = (g + 1) % G
        return picks

    return choose


_POLICY_FNS: dict[str, Callable[[list[int], list[int], list[int], int], Picks]] = {
    "fcfs": _fcfs,
    "jsq_tokens": _jsq_tokens,
    "bfio": _bfio_valley,
}
# Policies with state across steps: a fresh one per run.
_POLICY_MAKERS = {"round_robin": _round_robin}


# --------------------------------------------------------------------------- simulator


def _power_w(load: int, top: int) -> float:
    """Power (W) of a worker with `load` tokens when the most loaded one has `top` tokens."""
    u = load / top if top > 0 else 0.0
    return IDLE_POWER_W + (MAX_POWER_W - IDLE_POWER_W) * u**POWER_EXPONENT if u > 0 else IDLE_POWER_W


def simulate_loops(
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

    Arguments and the returned dict are those of `numpy_dp.simulate_numpy`: prompt and output
    are int arrays [N] (tokens) of requests 0..N-1 in reveal order; the result holds hist_loads
    int64 [num_steps, G], imbalance int64 [num_steps] (tokens), dt float64 [num_steps] (s), cut
    and metrics (avg_imbalance_tokens, throughput_tokens_per_s, energy_j over steps 1..cut;
    tpot_s over every step run).
    Raises `numpy_dp.RequestsExhausted` if the run must reveal request N.
    """
    G, B, R = int(num_workers), int(slots_per_worker), int(pool_size)
    if min(G, B, R) < 1 or policy not in POLICIES:
        raise ValueError(f"need G, B, R >= 1 and a policy in {POLICIES}, got {G}, {B}, {R}, {policy!r}")
    choose = _POLICY_MAKERS[policy]() if policy in _POLICY_MAKERS else _POLICY_FNS[policy]
    workers = [Worker.empty(B) for _ in range(G)]
    loads = [0] * G  # start-of-step (post-admission) loads, tokens
    pool: list[tuple[int, int]] = []  # waiting (s, o), in queue order
    next_id = 0

    def admit() -> bool:
        """Top the pool up to R, run the policy and place its picks; True if any was admitted."""
        nonlocal pool, next_id
        while len(pool) < R:
            if next_id >= len(prompt):
                raise RequestsExhausted(
                    f"the run needs request id {next_id} but only {len(prompt)} requests were "
                    f"provided; pass longer prompt/output arrays or fewer steps"
                )
            pool.append((int(prompt[next_id]), int(output[next_id])))
            next_id += 1
        free = [w.num_free() for w in workers]
        U = min(len(pool), sum(free))
        if U == 0:
            return False
        picks = choose(list(loads), free, [s for s, _ in pool], U)
        for pos, g in picks:
            workers[g].admit(*pool[pos])
            loads[g] += pool[pos][0]
        taken = {pos for pos, _ in picks}
        pool = [req for pos, req in enumerate(pool) if pos not in taken]
        return True

    hist_loads = np.zeros((num_steps, G), np.int64)
    imbalance = np.zeros(num_steps, np.int64)
    dt = np.zeros(num_steps, np.float64)
    tokens = [0] * num_steps
    energy = [0.0] * num_steps
    cut = 0
    tpot_num = tpot_den = 0.0
    admit()  # step 0: every slot free, loads 0, clock 0
    for k in range(1, num_steps + 1):
        if not any(w.active.any() for w in workers):
            break  # not live: nothing changes from here on
        i = k - 1
        dt[i] = step_const_s + per_token_s * max(loads)
        for w in workers:  # TPOT: this step's token of each active request i, weighted 1 / o_i
            inv = float(np.sum(1.0 / w.output[w.active]))  # per worker, like `decode`
            tpot_num += dt[i] * inv
            tpot_den += inv
        for g in range(G):
            n, hist_loads[i, g] = workers[g].decode()
            tokens[i] += n
            loads[g] = workers[g].load()
        top = max(loads)
        imbalance[i] = G * top - sum(loads)
        power = 0.0
        for g in range(G):
            power += _power_w(loads[g], top)
        energy[i] = dt[i] * power
        if admit():
            cut = k

    steps_s = float(sum(dt[:cut].tolist()))
    metrics = {
        "avg_imbalance_tokens": sum(imbalance[:cut].tolist()) / cut if cut else float("nan"),
        "throughput_tokens_per_s": sum(tokens[:cut]) / steps_s if cut else float("nan"),
        "energy_j": sum(energy[:cut]),
        "tpot_s": tpot_num / tpot_den if tpot_den > 0 else 0.0,
    }
    return {"hist_loads": hist_loads, "imbalance": imbalance, "dt": dt, "cut": cut, "metrics": metrics}


# --------------------------------------------------------------------------- command line


def main() -> None:
    args = arg_parser(__doc__.splitlines()[0], prog="python -m benchmarks.numpy_dp_loops").parse_args()
    # Each admission tops the pool up by at most R requests, so this many never run out.
    prompt, output = draw_lengths(np.random.default_rng(0), args.R * (args.steps + 2))
    results = {}
    for name, fn in (("loop-style", simulate_loops), ("vectorized", simulate_numpy)):
        t0 = time.perf_counter()
        results[name] = fn(
            num_workers=args.G,
            slots_per_worker=args.B,
            pool_size=args.R,
            policy=args.policy,
            prompt=prompt,
            output=output,
            num_steps=args.steps,
        )
        wall = time.perf_counter() - t0
        print(
            f"{name}: policy={args.policy} G={args.G} B={args.B} R={args.R}: {wall:.3f} s, "
            f"{args.steps / wall:,.0f} seed-steps/s, avg_imbalance="
            f"{results[name]['metrics']['avg_imbalance_tokens']:.1f} tokens"
        )
    same = np.array_equal(results["loop-style"]["hist_loads"], results["vectorized"]["hist_loads"])
    print(f"hist_loads equal: {same}")


if __name__ == "__main__":
    main()
