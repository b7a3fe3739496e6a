"""The grid of `jaxsched check theorems` and its runner: which points run, and running them.

Model (docs/dp-semantics.md, semantics "theory"): G workers with B slots, all full after every
admission (the pool is sized so that it can always refill every freed slot), prompts
s ~ Uniform{1, ..., s_max}, imbalance and the max-min gap measured after admission.
- Theorem 1: every output has the same length `out_len`, so all G*B slots free up together and
  are refilled in rounds (every `out_len` steps). The pool holds exactly G*B requests, so an
  admission only partitions a given multiset, as in the proof.
- Theorem 2: output lengths ~ Geometric(p) (each active request completes with probability p
  per step); every request grows by one token per step.
- Theorem 3: as Theorem 2, but every active request grows by a common drift delta_k per step,
  uniform on {lo, ..., hi} (`DPConfig.drift`): (0, 0), (0, 2) and (1, 4).

`run_grid` runs FCFS at every `Point` and BF-IO where its per-step work is affordable, one row
per (point, policy) in results.csv, written atomically after every run; a rerun with the same
settings resumes (rows already present are skipped). docs/theorems.md has the measured costs.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import DPConfig, make_params
from ..engine import ENGINE
from ...progress import Progress
from ...results import ResultsFile, read_rows, run_key
from ...run import seeds_for_budget, simulate
from ...stats import mean_ci
from ...workload import Constant, Geometric, Independent, UniformInt
from .predictions import fcfs_prediction, snapshot_sigma

POOL_SIGMAS = 6.0            # pool margin above the mean completions, in standard deviations
MAX_POOL = 65536             # DPConfig's cap on pool_size
# Cap on BF-IO's per-step work G R (window fill, R ~ G B p) up to which the full grid runs
# BF-IO: above it (G B = 256 x 256, 128 x 1024 and 256 x 1024) one run costs minutes, beyond
# the sweep's budget (measured costs: docs/theorems.md).
MAX_WINDOW_WORK = 2**20
# ETA weight of one run's compilation, in slot-steps: about as much as a small run.
COMPILE_WORK = 2_000_000


@dataclass(frozen=True)
class Point:
    """One configuration of the theorem sweep (both policies run on it).

    theorem: 1, 2 or 3. p: completion probability (None for Theorem 1). out_len: Theorem 1's
    common output length (steps). drift: Theorem 3's common drift range (tokens per step).
    bfio: whether BF-IO runs here too (window fill costs about G * G B p per step, FCFS G B).
    """
    theorem: int
    G: int
    B: int
    s_max: int
    p: float | None = None
    out_len: int = 2
    drift: tuple[int, int] = (1, 1)
    bfio: bool = True

    @property
    def group(self) -> str:
        """Label of the family the fits run over: theorem, (s_max, p) and drift."""
        if self.theorem == 1:
            return f"T1 s_max={self.s_max} o={self.out_len}"
        d = f" drift={self.drift[0]}..{self.drift[1]}" if self.theorem == 3 else ""
        return f"T{self.theorem} s_max={self.s_max} p={self.p}{d}"

    @property
    def sigma(self) -> float:
        """Analytic per-slot snapshot standard deviation (tokens), `snapshot_sigma`."""
        return snapshot_sigma(self.s_max, self.p, self.drift)

    @property
    def gap_bound(self) -> float:
        """Bound on BF-IO's average max - min gap: s_max (Theorem 1) or s_max / p (tokens)."""
        return float(self.s_max) if self.p is None else self.s_max / self.p

    def pool_size(self) -> int:
        """Theorem 1: exactly G*B (a round partitions a given multiset). Otherwise the mean
        completions G B p plus POOL_SIGMAS standard deviations plus 4G, so that every freed slot
        is refilled (a shortfall has probability below 1e-9 per step)."""
        GB = self.G * self.B
        if self.p is None:
            return GB
        return min(MAX_POOL, math.ceil(GB * self.p + POOL_SIGMAS * math.sqrt(GB * self.p) + 4 * self.G))

    def steps(self, measured: int) -> tuple[int, int]:
        """(num_steps, burn_in_steps). Theorem 1: `measured` rounds after one unmeasured step.
        Otherwise a burn-in of ceil(8 / p) steps (the initial ages are forgotten up to
        (1 - p)^(8/p) < e^-8) and `measured` / p measured steps (about `measured` slot lifetimes)."""
        if self.p is None:
            return 1 + measured * self.out_len, 1
        burn = math.ceil(8 / self.p)
        return burn + math.ceil(measured / self.p), burn

    def config(self, policy: str, kernel: str, measured: int) -> DPConfig:
        """The DPConfig of this point for `policy` ("fcfs" or "bfio")."""
        out = Constant(self.out_len) if self.p is None else Geometric(self.p)
        K, burn = self.steps(measured)
        return DPConfig(
            num_workers=self.G, slots_per_worker=self.B, pool_size=self.pool_size(), policy=policy,
            semantics="theory", workload=Independent(UniformInt(1, self.s_max), out),
            num_steps=K, burn_in_steps=burn, bfio_kernel=kernel, drift=self.drift)

    def records(self, policy: str) -> bool:
        """Whether a run records trajectories: Theorem 1's BF-IO, whose check reads every
        round's post-admission loads."""
        return self.theorem == 1 and policy == "bfio"

    def key(self, policy: str, kernel: str, measured: int, seeds: Sequence[int]) -> str:
        """Resume key of (point, policy, settings, seeds): `results.run_key` of the run's
        Config, Params and full seed list, with the point's fields."""
        cfg = self.config(policy, kernel, measured)
        return run_key("dp", cfg, make_params(cfg), seeds, point=dataclasses.asdict(self),
                       records=self.records(policy))


def _product(theorem: int, Gs: Sequence[int], Bs: Sequence[int], s_max: int, p: float | None, *,
             drift: tuple[int, int] = (1, 1), max_bfio_work: int | None = None,
             out_len: int = 2) -> list[Point]:
    """Points over Gs x Bs; BF-IO only where its per-step work is <= the cap `max_bfio_work`.

    The work is window fill's G * R with R ~ G B p (T1: G B, round LPT's elements per step).
    """
    pts = []
    for G in Gs:
        for B in Bs:
            work = G * B if p is None else G * G * B * p
            pts.append(Point(theorem, G, B, s_max, p, out_len, drift,
                             bfio=max_bfio_work is None or work <= max_bfio_work))
    return pts


def theorem_grid(quick: bool = False) -> list[Point]:
    """The sweep: full (111 runs) or quick (the test's grid, 8 runs).

    Design (window fill costs about G * G B p per step, round LPT G B, FCFS G B; every run also
    compiles):
    - Theorem 2, (s_max, p) = (20, 0.1): G in {8, ..., 256} x B in {16, ..., 1024}, FCFS at all
      24 points, BF-IO at the 21 where G^2 B p <= 2^20 (all but 256 x 256, 128 x 1024 and
      256 x 1024), so that the growth fit has every G and every B with both policies;
    - Theorem 2, (4, 0.2) and (100, 0.05): G in {8, 64} x B in {16, 64, 256}, both policies;
    - Theorem 1 (s_max = 20, o = 2, pool = G B): G in {8, 16, 64} x B in {16, 64, 256}, both;
    - Theorem 3, (20, 0.1), drifts (0, 0), (0, 2), (1, 4): G in {16, 64} x B in {64, 256}, both.
    """
    if quick:
        return (_product(1, [8], [64], 20, None)
                + _product(2, [8], [16, 64], 20, 0.1)
                + _product(3, [8], [64], 20, 0.1, drift=(1, 4)))
    pts = _product(2, [8, 16, 32, 64, 128, 256], [16, 64, 256, 1024], 20, 0.1,
                   max_bfio_work=MAX_WINDOW_WORK)
    for s_max, p in ((4, 0.2), (100, 0.05)):
        pts += _product(2, [8, 64], [16, 64, 256], s_max, p, max_bfio_work=MAX_WINDOW_WORK)
    pts += _product(1, [8, 16, 64], [16, 64, 256], 20, None)
    for drift in ((0, 0), (0, 2), (1, 4)):
        pts += _product(3, [16, 64], [64, 256], 20, 0.1, drift=drift, max_bfio_work=MAX_WINDOW_WORK)
    return pts


def _round_gap_max(res) -> float:
    """Largest post-admission max - min over every round's admission step and seed (tokens)."""
    loads = np.asarray(res.trajectories["post_admission_loads"], np.int64)      # [S, K, G]
    rounds = np.asarray(res.trajectories["num_admitted"]) > 0                   # [S, K]
    gaps = loads.max(-1) - loads.min(-1)
    return float(gaps[rounds].max()) if rounds.any() else math.nan


def run_point(pt: Point, policy: str, kernel: str, measured: int, seeds: Sequence[int], *,
              memory_budget_mb: float = 1024.0) -> dict:
    """Run one (point, policy) over the seeds; returns its results row (one CSV row).

    Tokens for loads, gaps and bounds; `*_mean`, `*_std`, `*_ci95` are over the seeds.
    """
    cfg = pt.config(policy, kernel, measured)
    record = pt.records(policy)
    chunk = min(len(seeds), seeds_for_budget(ENGINE, cfg, memory_budget_mb, record))
    cpu0 = time.process_time()
    res = simulate(cfg, make_params(cfg), seeds, seed_chunk=chunk, record=record)
    cpu_s = time.process_time() - cpu0
    m = res.metrics
    row = dict(theorem=pt.theorem, group=pt.group, G=pt.G, B=pt.B, s_max=pt.s_max,
               p="" if pt.p is None else pt.p, out_len=pt.out_len if pt.p is None else "",
               drift_lo=pt.drift[0], drift_hi=pt.drift[1], policy=policy,
               kernel=kernel if policy == "bfio" else "", pool_size=cfg.pool_size,
               num_steps=cfg.num_steps, burn_in_steps=cfg.burn_in_steps, n=len(seeds),
               sigma=pt.sigma, prediction=fcfs_prediction(pt.G, pt.B, pt.sigma),
               gap_bound=pt.gap_bound, imbalance_bound=(pt.G - 1) * pt.gap_bound)
    for name, short in (("avg_imbalance_tokens", "imb"), ("avg_gap_tokens", "gap")):
        mean, std, half, _ = mean_ci(m[name])
        row.update({f"{short}_mean": mean, f"{short}_std": std, f"{short}_ci95": half})
    # Overload sanity: at the end every slot is occupied (admitted - finished = G B).
    row["full_at_end"] = bool(np.all(m["num_admitted"] - m["num_finished"] == pt.G * pt.B))
    row["round_gap_max"] = _round_gap_max(res) if record else ""
    row["wall_s"] = res.wall_s
    row["cpu_s"] = cpu_s        # process CPU time (compile + run): robust to a shared machine
    row["seed_steps"] = len(seeds) * cfg.num_steps
    return row


def _eta_weight(pt: Point, measured: int) -> float:
    """ETA weight of one run, in millions of slot-steps: G B num_steps plus its compilation
    (the runs' costs differ by orders of magnitude, so counting runs would mislead)."""
    return (pt.G * pt.B * pt.steps(measured)[0] + COMPILE_WORK) / 1e6


def run_grid(points: Sequence[Point], out_csv: Path, *, kernel: str, t1_kernel: str,
             measured: int = 30, seeds: Sequence[int] = range(4),
             progress: bool = True) -> list[dict]:
    """Run every (point, policy) not yet in `out_csv`, appending rows atomically; returns all rows
    of this grid and these settings.

    kernel: BF-IO kernel of Theorems 2 and 3; t1_kernel: that of Theorem 1 (docs/theorems.md).
    """
    seeds = [int(s) for s in seeds]
    kern = lambda pt: t1_kernel if pt.theorem == 1 else kernel
    jobs = [(pt, pol) for pt in points for pol in (("fcfs", "bfio") if pt.bfio else ("fcfs",))]
    # Keying a job builds its configuration, so every one is validated before anything compiles.
    keys = [pt.key(pol, kern(pt), measured, seeds) for pt, pol in jobs]
    results = ResultsFile(out_csv, "key")
    todo = [(pt, pol, key) for (pt, pol), key in zip(jobs, keys) if key not in results.done]
    weights = [_eta_weight(pt, measured) for pt, _, _ in todo]
    bar = Progress("theorems, M slot-steps", sum(weights), enabled=progress)
    for n, ((pt, pol, key), weight) in enumerate(zip(todo, weights), 1):
        row = {"key": key, **run_point(pt, pol, kern(pt), measured, seeds)}
        results.append(row)
        bar.advance(weight, f"{len(jobs) - len(todo) + n}/{len(jobs)} runs, last {pt.group} "
                            f"G={pt.G} B={pt.B} {pol} {row['wall_s']:.1f} s")
    bar.close()
    keys = set(keys)
    return [r for r in read_rows(out_csv) if r["key"] in keys]
