"""Random instances of the per-step BF-IO problem (H = 0), in three families, at fixed shapes.

Every instance has G in 2..8 workers with loads L_g and free slots c_g in 0..4 (at least one
free slot in total), and a pool of 4..16 requests with sizes s_i, in queue order:

- "uniform": s ~ U{1..20}, L ~ U{50..120} (the small random instances of notes/bfio-kernel.md).
- "burst": BurstGPT-like sizes, round(217 * exp(z)) with z ~ N(0, 1), clipped to [1, 14117];
  loads are G workers picked at random from one step of a running simulation
  (`jaxsched.dp.simulate`, G = 8, B = 12, R = 16, policy bfio, BurstGPT-like workload), taken
  after warm-up from its post-removal `loads` trajectory (the loads the policy sees).
- "ties": a base size s0 ~ U{5..50}; the pool is all s0, or s0 + U{-1..1}; the loads are all
  equal, or equal up to U{0..2}, or L0 + s0 * U{0..2} (ties that admissions can recreate).

One more family, not in the default set, reproduces the loads of the prior study
(notes/bfio-kernel.md) for comparison:

- "burst_synth": burst sizes; each load is the sum over B ~ U{8..16} requests of a burst size
  plus an age U{0..o-1}, o drawn from the BurstGPT-like output law (7 with probability 0.457,
  else round(exp(3.43 + 1.55 z)) clipped to [1, 3206]). These loads are independent across
  workers, so they spread far more than the loads a balancing policy produces.

Arrays are padded to G_MAX = 8 workers (load 0, no free slot) and R_MAX = 16 pool entries
(size 1, not valid); `num_workers` gives each instance's real G. Padding the pool is neutral
(the valid mask is part of every kernel's contract), but padding workers is not for a kernel
that scores J = G max L' - sum L' itself: it would weigh the max by G_MAX instead of G. So
consumers slice workers to the real G (see `by_num_workers`).

Instance i of a family depends only on (seed, family, i) (and, for "burst", on the simulated
trajectory, itself a function of the seed), so the first n instances of a larger set are the
same as a set of n.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

G_MAX, FREE_MAX, R_MAX = 8, 4, 16
G_MIN, POOL_MIN = 2, 4
FAMILIES = ("uniform", "burst", "ties")
EXTRA_FAMILIES = ("burst_synth",)
_FAMILY_ID = {name: k for k, name in enumerate(FAMILIES + EXTRA_FAMILIES)}

# Burst family: the simulation that supplies loads, and the steps skipped while it warms up
# (the pool starts empty and the loads ramp up over the first few dozen steps).
SIM_WORKERS, SIM_SLOTS, SIM_POOL = 8, 12, 16
SIM_STEPS, SIM_WARMUP = 800, 100
BURST_MEDIAN, BURST_SIGMA, BURST_MAX = 217.0, 1.0, 14117
OUT_MODE, OUT_MODE_PROB, OUT_MU, OUT_SIGMA, OUT_MAX = 7, 0.457, 3.43, 1.55, 3206


@dataclass(frozen=True)
class Instances:
    """A padded batch of H = 0 instances.

    loads int32[N, G_MAX]; free int32[N, G_MAX]; sizes int32[N, R_MAX]; valid bool[N, R_MAX];
    num_workers int32[N] (workers at index >= num_workers[i] are padding).
    """

    family: str
    seed: int
    loads: np.ndarray
    free: np.ndarray
    sizes: np.ndarray
    valid: np.ndarray
    num_workers: np.ndarray

    def __len__(self) -> int:
        return int(self.loads.shape[0])

    def instance(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Instance i with its real workers: (loads[G], free[G], sizes[R_MAX], valid[R_MAX])."""
        G = int(self.num_workers[i])
        return self.loads[i, :G], self.free[i, :G], self.sizes[i], self.valid[i]

    def by_num_workers(self) -> Iterator[tuple[int, np.ndarray]]:
        """(G, indices of the instances with G workers), for G in increasing order."""
        for G in np.unique(self.num_workers):
            yield int(G), np.flatnonzero(self.num_workers == G)

    def digest(self) -> str:
        """SHA-256 of the arrays: identifies the exact instances (for result caches)."""
        h = hashlib.sha256()
        for a in (self.loads, self.free, self.sizes, self.valid, self.num_workers):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()


def _rng(seed: int, family: str, i: int) -> np.random.Generator:
    return np.random.default_rng([seed, _FAMILY_ID[family], i])


def _free_slots(rng: np.random.Generator, G: int) -> np.ndarray:
    """c_g ~ U{0..FREE_MAX}, redrawn until some slot is free (U = 0 instances are trivial)."""
    while True:
        free = rng.integers(0, FREE_MAX + 1, size=G)
        if free.sum() > 0:
            return free


def _burst_sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    s = np.rint(BURST_MEDIAN * np.exp(BURST_SIGMA * rng.standard_normal(n)))
    return np.clip(s, 1, BURST_MAX).astype(np.int64)


def _synthetic_load(rng: np.random.Generator) -> int:
    """Sum over B ~ U{8..16} active requests of size + age (the prior study's loads)."""
    B = int(rng.integers(8, 17))
    o = np.clip(np.rint(np.exp(OUT_MU + OUT_SIGMA * rng.standard_normal(B))), 1, OUT_MAX)
    o = np.where(rng.random(B) < OUT_MODE_PROB, OUT_MODE, o).astype(np.int64)
    age = np.floor(rng.random(B) * o).astype(np.int64)
    return int(_burst_sizes(rng, B).sum() + age.sum())


def simulated_loads(seed: int) -> np.ndarray:
    """Post-removal loads int64[K, SIM_WORKERS] of a running BF-IO simulation, after warm-up.

    One seed of `jaxsched.dp.simulate` (semantics "paper", BurstGPT-like workload, an unbounded
    stream, so every step is live and the pool never runs dry).
    """
    import jaxsched
    from jaxsched.dp import simulate

    cfg = jaxsched.dp.DPConfig(
        num_workers=SIM_WORKERS, slots_per_worker=SIM_SLOTS, pool_size=SIM_POOL, policy="bfio", num_steps=SIM_STEPS
    )
    res = simulate(cfg, jaxsched.dp.make_params(cfg), [seed], record=True)
    loads = res.trajectories["loads"][0].astype(np.int64)
    live = res.trajectories["live"][0].astype(bool)
    rows = loads[SIM_WARMUP:][live[SIM_WARMUP:]]
    if rows.shape[0] == 0:
        raise RuntimeError("the simulation produced no live steps after warm-up")
    return rows


def _one(
    family: str, rng: np.random.Generator, sim_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(loads[G], free[G], sizes[P]) of one instance."""
    G = int(rng.integers(G_MIN, G_MAX + 1))
    P = int(rng.integers(POOL_MIN, R_MAX + 1))
    free = _free_slots(rng, G)
    if family == "uniform":
        loads = rng.integers(50, 121, size=G)
        sizes = rng.integers(1, 21, size=P)
    elif family == "burst":
        row = sim_rows[int(rng.integers(0, sim_rows.shape[0]))]
        loads = row[np.sort(rng.choice(SIM_WORKERS, size=G, replace=False))]
        sizes = _burst_sizes(rng, P)
    elif family == "burst_synth":
        loads = np.array([_synthetic_load(rng) for _ in range(G)])
        sizes = _burst_sizes(rng, P)
    elif family == "ties":
        s0 = int(rng.integers(5, 51))
        sizes = np.full(P, s0) if rng.random() < 0.5 else s0 + rng.integers(-1, 2, size=P)
        L0 = int(rng.integers(50, 121))
        mode = int(rng.integers(0, 3))
        if mode == 0:
            loads = np.full(G, L0)
        elif mode == 1:
            loads = L0 + rng.integers(0, 3, size=G)
        else:
            loads = L0 + s0 * rng.integers(0, 3, size=G)
    else:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES + EXTRA_FAMILIES}")
    return loads, free, sizes


def generate(family: str, n: int, seed: int = 0) -> Instances:
    """n instances of `family` (see the module docstring), deterministic given seed."""
    if family not in _FAMILY_ID:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES + EXTRA_FAMILIES}")
    sim_rows = simulated_loads(seed) if family == "burst" else None
    loads = np.zeros((n, G_MAX), np.int32)
    free = np.zeros((n, G_MAX), np.int32)
    sizes = np.ones((n, R_MAX), np.int32)
    valid = np.zeros((n, R_MAX), bool)
    num_workers = np.zeros(n, np.int32)
    for i in range(n):
        L, c, s = _one(family, _rng(seed, family, i), sim_rows)
        G, P = L.shape[0], s.shape[0]
        loads[i, :G], free[i, :G], sizes[i, :P], valid[i, :P] = L, c, s, True
        num_workers[i] = G
    return Instances(family, seed, loads, free, sizes, valid, num_workers)
