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
settings resumes (rows already present are skipped). Each row carries the columns of a sweep's
row that show what its key hashes (`results.key_columns`: code revision, config, params,
seeds), so that rows of other code or settings are told apart and computed again.
docs/theorems.md has the measured costs.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ...buckets import DEFAULT_MAX_WASTE, Bucket, check_max_waste, plan_buckets
from ...progress import Progress, Share
from ...results import ResultsFile, key_columns, read_rows
from ...run import seeds_for_budget, simulate, simulate_points
from ...stats import mean_ci
from ...workload import Constant, Geometric, Independent, UniformInt
from ..config import DPConfig, make_params
from ..engine import ENGINE
from .predictions import fcfs_prediction, snapshot_sigma

POOL_SIGMAS = 6.0  # pool margin above the mean completions, in standard deviations
MAX_POOL = 65536  # DPConfig's cap on pool_size
# Cap on BF-IO's per-step work G R (window fill, R ~ G B p) up to which the full grid runs
# BF-IO: above it (G B = 256 x 256, 128 x 1024 and 256 x 1024) one run costs minutes, beyond
# the sweep's budget (measured costs: docs/theorems.md).
MAX_WINDOW_WORK = 2**20
# The cost model of `plan_grid`, in CPU seconds on the 2-core machine (docs/theorems.md):
# compiling one program, and per seed-step FCFS's slot pass (per slot, G B) and BF-IO's
# admission (per worker and pool entry, G R: window fill; round LPT costs less).
COMPILE_S = 3.5
SLOT_STEP_S = 15e-9
BFIO_STEP_S = 20e-9


def run_cost_s(config: DPConfig, num_seeds: int) -> float:
    """Estimated CPU seconds of simulating `config` over `num_seeds` seeds (no compilation)."""
    G, B, R = config.num_workers, config.slots_per_worker, config.pool_size
    per_step = SLOT_STEP_S * G * B + (BFIO_STEP_S * G * R if config.policy == "bfio" else 0.0)
    return num_seeds * config.num_steps * per_step


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
        """The DPConfig of this point for `policy` ("fcfs" or "bfio"); `kernel` is BF-IO's (FCFS
        reads none: its config keeps the default, which make_params requires)."""
        out = Constant(self.out_len) if self.p is None else Geometric(self.p)
        K, burn = self.steps(measured)
        return DPConfig(
            num_workers=self.G,
            slots_per_worker=self.B,
            pool_size=self.pool_size(),
            policy=policy,
            semantics="theory",
            workload=Independent(UniformInt(1, self.s_max), out),
            num_steps=K,
            burn_in_steps=burn,
            bfio_kernel=kernel if policy == "bfio" else DPConfig.bfio_kernel,
            drift=self.drift,
        )

    def records(self, policy: str) -> bool:
        """Whether a run records trajectories: Theorem 1's BF-IO, whose check reads every
        round's post-admission loads."""
        return self.theorem == 1 and policy == "bfio"

    def columns(self, policy: str, kernel: str, measured: int, seeds: Sequence[int]) -> dict[str, object]:
        """Resume key of (point, policy, settings, seeds) and the columns that show what it
        hashes, as a sweep's rows have them (`results.key_columns`: `key` is `results.run_key`
        of the run's Config, Params and full seed list, with the point's fields; `code`,
        `version`, `config`, `params`, `num_seeds`, `seeds_sha`, `trace_sha` and `extra`)."""
        cfg = self.config(policy, kernel, measured)
        return key_columns(
            "dp", cfg, make_params(cfg), seeds, point=dataclasses.asdict(self), records=self.records(policy)
        )

    def key(self, policy: str, kernel: str, measured: int, seeds: Sequence[int]) -> str:
        """Resume key of (point, policy, settings, seeds): the `key` of `columns`."""
        return str(self.columns(policy, kernel, measured, seeds)["key"])


def _product(
    theorem: int,
    Gs: Sequence[int],
    Bs: Sequence[int],
    s_max: int,
    p: float | None,
    *,
    drift: tuple[int, int] = (1, 1),
    max_bfio_work: int | None = None,
    out_len: int = 2,
) -> list[Point]:
    """Points over Gs x Bs; BF-IO only where its per-step work is <= the cap `max_bfio_work`.

    The work is window fill's G * R with R ~ G B p (T1: G B, round LPT's elements per step).
    """
    pts = []
    for G in Gs:
        for B in Bs:
            work = G * B if p is None else G * G * B * p
            pts.append(
                Point(theorem, G, B, s_max, p, out_len, drift, bfio=max_bfio_work is None or work <= max_bfio_work)
            )
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
        return (
            _product(1, [8], [64], 20, None)
            + _product(2, [8], [16, 64], 20, 0.1)
            + _product(3, [8], [64], 20, 0.1, drift=(1, 4))
        )
    pts = _product(2, [8, 16, 32, 64, 128, 256], [16, 64, 256, 1024], 20, 0.1, max_bfio_work=MAX_WINDOW_WORK)
    for s_max, p in ((4, 0.2), (100, 0.05)):
        pts += _product(2, [8, 64], [16, 64, 256], s_max, p, max_bfio_work=MAX_WINDOW_WORK)
    pts += _product(1, [8, 16, 64], [16, 64, 256], 20, None)
    for drift in ((0, 0), (0, 2), (1, 4)):
        pts += _product(3, [16, 64], [64, 256], 20, 0.1, drift=drift, max_bfio_work=MAX_WINDOW_WORK)
    return pts


def _round_gap_max(res, G: int) -> float:
    """Largest post-admission max - min over every round's admission step and seed (tokens),
    over the run's own G workers (a run padded into a bucket records the bucket's)."""
    loads = np.asarray(res.trajectories["post_admission_loads"], np.int64)[..., :G]  # [S, K, G]
    rounds = np.asarray(res.trajectories["num_admitted"]) > 0  # [S, K]
    gaps = loads.max(-1) - loads.min(-1)
    return float(gaps[rounds].max()) if rounds.any() else math.nan


def point_row(pt: Point, policy: str, kernel: str, cfg: DPConfig, res, seeds: Sequence[int], cpu_s: float) -> dict:
    """The results row (one CSV row) of one (point, policy) run over the seeds: tokens for
    loads, gaps and bounds; `*_mean`, `*_std`, `*_ci95` are over the seeds."""
    m = res.metrics
    row = dict(
        theorem=pt.theorem,
        group=pt.group,
        G=pt.G,
        B=pt.B,
        s_max=pt.s_max,
        p="" if pt.p is None else pt.p,
        out_len=pt.out_len if pt.p is None else "",
        drift_lo=pt.drift[0],
        drift_hi=pt.drift[1],
        policy=policy,
        kernel=kernel if policy == "bfio" else "",
        pool_size=cfg.pool_size,
        num_steps=cfg.num_steps,
        burn_in_steps=cfg.burn_in_steps,
        n=len(seeds),
        sigma=pt.sigma,
        prediction=fcfs_prediction(pt.G, pt.B, pt.sigma),
        gap_bound=pt.gap_bound,
        imbalance_bound=(pt.G - 1) * pt.gap_bound,
    )
    for name, short in (("avg_imbalance_tokens", "imb"), ("avg_gap_tokens", "gap")):
        mean, std, half, _ = mean_ci(m[name])
        row.update({f"{short}_mean": mean, f"{short}_std": std, f"{short}_ci95": half})
    # Overload sanity: at the end every slot is occupied (admitted - finished = G B).
    row["full_at_end"] = bool(np.all(m["num_admitted"] - m["num_finished"] == pt.G * pt.B))
    row["round_gap_max"] = _round_gap_max(res, pt.G) if pt.records(policy) else ""
    row["wall_s"] = res.wall_s
    row["cpu_s"] = cpu_s  # process CPU time (compile + run): robust to a shared machine
    row["seed_steps"] = len(seeds) * cfg.num_steps
    return row


def run_point(
    pt: Point, policy: str, kernel: str, measured: int, seeds: Sequence[int], *, memory_budget_mb: float = 1024.0
) -> dict:
    """Run one (point, policy) over the seeds, unpadded; returns its results row."""
    cfg = pt.config(policy, kernel, measured)
    record = pt.records(policy)
    chunk = min(len(seeds), seeds_for_budget(ENGINE, cfg, memory_budget_mb, record))
    cpu0 = time.process_time()
    res = simulate(cfg, make_params(cfg), seeds, seed_chunk=chunk, record=record)
    return point_row(pt, policy, kernel, cfg, res, seeds, time.process_time() - cpu0)


def _eta_weight(pt: Point, measured: int) -> float:
    """ETA weight of one run, in millions of slot-steps (G B num_steps): the runs' costs differ
    by orders of magnitude, so counting runs would mislead. Compilation is its own phase on the
    bar and counts in no weight."""
    return pt.G * pt.B * pt.steps(measured)[0] / 1e6


def plan_grid(
    jobs: Sequence[tuple[Point, str, str]],
    measured: int,
    num_seeds: int,
    *,
    max_waste: float | None = DEFAULT_MAX_WASTE,
    compile_s: float = COMPILE_S,
) -> list[Bucket]:
    """Size buckets of the (point, policy, kernel) jobs (`jaxsched.buckets.plan_buckets`), each
    one compiled program, in the order of their first job. Only runs that simulate in less
    time than a compilation (`run_cost_s` <= compile_s) are padded: padding a longer run would
    cost more than the compilation it saves. Such a run joins a bucket when the padded run does
    at most `max_waste` times its own work, or still costs at most `compile_s` whatever the
    waste. max_waste None: every job alone."""
    configs = [pt.config(pol, kern, measured) for pt, pol, kern in jobs]
    cheap = lambda c: run_cost_s(c, num_seeds) <= compile_s
    small = [i for i, c in enumerate(configs) if cheap(c)]
    plan = [Bucket(c, [i], False) for i, c in enumerate(configs) if not cheap(c)]
    for b in plan_buckets(ENGINE, [configs[i] for i in small], max_waste, cheap=cheap):
        plan.append(dataclasses.replace(b, members=[small[i] for i in b.members]))
    plan.sort(key=lambda b: b.members[0])
    return plan


def _run_bucket(
    bucket: Bucket,
    jobs: Sequence[tuple[Point, str, str]],
    configs: Sequence[DPConfig],
    seeds: Sequence[int],
    bar: Progress,
    start: float,
    weights: Sequence[float],
    detail: str,
    memory_budget_mb: float = 1024.0,
) -> list[dict]:
    """Rows of a bucket's jobs: one `simulate_points` call (one program, points x seeds
    vmapped), or one unpadded `simulate` for a bucket of one. configs: every job's own config.
    weights: the bucket's jobs' ETA weights (slot-steps); wall and CPU time are split among the
    jobs in proportion to them."""
    members = [jobs[i] for i in bucket.members]
    record = members[0][0].records(members[0][1])
    cpu0 = time.process_time()
    share = Share(bar, start, sum(weights), detail)
    if len(members) == 1:
        pt, pol, kern = members[0]
        cfg = bucket.config
        chunk = min(len(seeds), seeds_for_budget(ENGINE, cfg, memory_budget_mb, record))
        res = [simulate(cfg, make_params(cfg), seeds, seed_chunk=chunk, record=record, progress=share)]
        cfgs = [cfg]
    else:
        cap = {f: getattr(bucket.config, f) for f in ENGINE.size_fields}
        cfgs = [configs[i] for i in bucket.members]
        params = [ENGINE.pad(c, make_params(c), cap)[1] for c in cfgs]
        chunk = seeds_for_budget(ENGINE, bucket.config, memory_budget_mb, record)
        res = simulate_points(
            bucket.config, params, seeds, record=record, progress=share, seed_chunk=min(len(seeds) * len(params), chunk)
        )
    cpu_s = time.process_time() - cpu0
    total = sum(weights)
    rows = []
    for (pt, pol, kern), cfg, r, w in zip(members, cfgs, res, weights):
        frac = w / total if total > 0 else 1 / len(members)
        r = dataclasses.replace(r, wall_s=r.wall_s * frac) if len(members) > 1 else r
        rows.append(point_row(pt, pol, kern, cfg, r, seeds, cpu_s * frac))
    return rows


def _described_row(cols: dict[str, object], row: dict) -> dict:
    """A run's results row with its key first and the columns that show what the key hashes
    (`Point.columns`): the short ones after the row's own, the long JSON cells (`config`,
    `params`, `extra`: the point's fields) last, as in a sweep's rows."""
    cols = dict(cols)
    long = {k: cols.pop(k) for k in ("config", "params", "user_policies", "extra") if k in cols}
    return {"key": cols.pop("key"), **row, **cols, **long}


def run_grid(
    points: Sequence[Point],
    out_csv: Path,
    *,
    kernel: str,
    t1_kernel: str,
    measured: int = 30,
    seeds: Sequence[int] = range(4),
    progress: bool = True,
    bucket_waste: float | None = DEFAULT_MAX_WASTE,
) -> list[dict]:
    """Run every (point, policy) not yet in `out_csv`, appending rows atomically; returns all rows
    of this grid and these settings.

    kernel: BF-IO kernel of Theorems 2 and 3; t1_kernel: that of Theorem 1 (docs/theorems.md).
    bucket_waste: the size buckets' most work per run relative to its own (`plan_grid`); None
    runs every (point, policy) in its own program. Rows are bitwise the same either way.
    """
    seeds = [int(s) for s in seeds]
    if bucket_waste is not None:
        bucket_waste = check_max_waste(bucket_waste)
    kern = lambda pt: t1_kernel if pt.theorem == 1 else kernel
    jobs = [(pt, pol) for pt in points for pol in (("fcfs", "bfio") if pt.bfio else ("fcfs",))]
    # Keying a job builds its configuration, so every one is validated before anything compiles.
    described = [pt.columns(pol, kern(pt), measured, seeds) for pt, pol in jobs]
    keys = [str(cols["key"]) for cols in described]
    results = ResultsFile(out_csv, "key")
    todo = [(pt, pol, kern(pt)) for (pt, pol), key in zip(jobs, keys) if key not in results.done]
    todo_cols = [cols for cols, key in zip(described, keys) if key not in results.done]
    configs = [pt.config(pol, k, measured) for pt, pol, k in todo]
    weights = [_eta_weight(pt, measured) for pt, _, _ in todo]
    plan = plan_grid(todo, measured, len(seeds), max_waste=bucket_waste)
    bar = Progress("theorems, M slot-steps", sum(weights), enabled=progress)
    done, ran = 0.0, len(jobs) - len(todo)
    for bucket in plan:
        pt0, pol0, _ = todo[bucket.members[0]]
        w = [weights[i] for i in bucket.members]
        detail = (
            f"{ran}/{len(jobs)} runs, now {pt0.group} {pol0}, {len(w)} point(s) up to "
            f"G={bucket.config.num_workers} B={bucket.config.slots_per_worker}"
        )
        rows = _run_bucket(bucket, todo, configs, seeds, bar, done, w, detail)
        for i, row in zip(bucket.members, rows):
            results.append(_described_row(todo_cols[i], row))
        done += sum(w)
        ran += len(w)
        bar.update(done, f"{ran}/{len(jobs)} runs")
    bar.close()
    keys = set(keys)
    return [r for r in read_rows(out_csv) if r["key"] in keys]
