"""`jaxsched check theorems`: the BF-IO paper's Theorems 1-3 checked in the `theory` semantics.

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

BF-IO kernels (kernels.BFIO_VARIANTS), chosen per theorem to match what each proof's BF-IO does:
- Theorems 2 and 3 (default "window", `--kernel`): the proofs' BF-IO minimizes the post-admission
  spread D = max - min with every worker receiving exactly its free count (notes 000.md section
  1.2), which is what window fill aims at (kernels/window_fill.py, O(G R) per step). Valley fill
  ("vf", still selectable with `--kernel vf`) aims at the IO objective G max - sum instead and
  leaves a much larger spread (about 105 tokens at (G, B, p, s_max) = (8, 256, 0.1, 20) against
  about 10 for window fill, and about 365 at B = 1024, above s_max / p = 200).
- Theorem 1 (default "round_lpt", `--t1-kernel`): a round partitions a fixed multiset of G B
  prompts into G groups of B. Round LPT deals the prompts out in descending order, one per worker
  per round, the lightest worker taking the largest; by induction over the rounds the spread stays
  <= max(spread before the round, s_max - 1), so max - min <= s_max - 1 from equal loads: the
  conclusion of the proof's Lemma 1 (s_max-balanced). Window fill does not give it (each worker's
  window is closest to the mean only while the pool still spans it: max - min up to 154 > 20 at
  G = 64, B = 64), and the local-search kernels ("vf_ls", swap-stable when converged) cost about a
  minute per run already at G B = 1024.

Checks (each PASS/FAIL in the report; the command exits 1 if one fails):
1. FCFS imbalance within 15% of G * sigma * sqrt(B) * e_G for B >= 64, where
   e_G = E[max of G iid N(0, 1)] and sigma is the per-slot snapshot standard deviation derived
   analytically per theorem (`snapshot_sigma`), not measured.
2. BF-IO: average gap <= s_max / p and average imbalance <= (G - 1) s_max / p (Theorem 1:
   s_max and (G - 1) s_max). The bounds are asymptotic in B: a point above them fails only where
   one admission can absorb one step's removal spread (`admission_margin` kappa/phi >= 1);
   below that it is reported (at Theorem 2 with (s_max, p) = (4, 0.2) and Theorem 3 with the
   drift 1..4 no per-step max-min assignment reaches the bound there: `admission_margin`).
3. Theorem 1, BF-IO: max - min <= s_max after every round's admission, in every round and seed.
Reported beside them (not pass/fail: the theorems are asymptotic, their side conditions need
B >~ 1e9): log-log slopes of the improvement ratio FCFS / BF-IO against B and against log G,
jointly fitted by least squares, with 95% confidence intervals, beside the theorem's 1/2.

Results are one row per (point, policy) in `results.csv`, written atomically after every point;
a rerun with the same settings resumes (rows already present are skipped).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .config import DPConfig, make_params
from .run import simulate
from ..results import format_value, markdown_table, write_csv
from ..stats import mean_ci, ols, t975
from ..sweep import read_rows, seeds_per_chunk
from ..workload import Constant, Geometric, Independent, UniformInt

DEFAULT_KERNEL = "window"    # BF-IO kernel of Theorems 2 and 3 (module docstring)
DEFAULT_T1_KERNEL = "round_lpt"  # BF-IO kernel of Theorem 1's rounds (module docstring)

FCFS_TOLERANCE = 0.15        # relative error allowed on the FCFS prediction
FCFS_MIN_B = 64              # the prediction is checked for B >= 64 (Berry-Esseen regime)
POOL_SIGMAS = 6.0            # pool margin above the mean completions, in standard deviations
MAX_POOL = 65536             # DPConfig's cap on pool_size


# --------------------------------------------------------------------------- predictions

@functools.lru_cache(maxsize=None)
def expected_max_normal(G: int, *, n: int = 40001, lim: float = 12.0) -> float:
    """e_G = E[max of G iid standard normals] = int x G phi(x) Phi(x)^(G-1) dx (trapezoid rule).

    The grid (n points on [-lim, lim]) gives about 1e-9 absolute accuracy for G <= 1e5.
    """
    if G < 1:
        raise ValueError(f"G must be >= 1, got {G}")
    x = np.linspace(-lim, lim, n)
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    Phi = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x])
    f = x * G * phi * Phi ** (G - 1)
    return float(np.sum((f[1:] + f[:-1]) * np.diff(x)) / 2)


def uniform_prompt_var(s_max: int) -> float:
    """Variance of s ~ Uniform{1, ..., s_max}: (s_max^2 - 1) / 12 (tokens^2)."""
    return (s_max * s_max - 1) / 12.0


def drift_moments(drift: tuple[int, int]) -> tuple[float, float]:
    """(mean, variance) of a drift uniform on {lo, ..., hi} (tokens, tokens^2)."""
    lo, hi = drift
    n = hi - lo + 1
    return (lo + hi) / 2.0, (n * n - 1) / 12.0


def snapshot_var(s_max: int, p: float | None, drift: tuple[int, int] = (1, 1)) -> float:
    """Per-slot snapshot variance sigma^2 of the post-admission load (tokens^2).

    Theorem 1 (p None: equal outputs, all slots of a round have the same age): sigma_s^2.
    Theorems 2/3: a slot's load is U = s + H(A), with A ~ Geo(p) - 1 its age
    (P(A = a) = p q^a, q = 1 - p) and H(a) the sum of the last a drifts. The drift path is
    common to all slots, so the across-worker spread is governed by the variance of U *given*
    the path, averaged over paths:
      E[Var(U | path)] = sigma_s^2 + Var(H(A)) - Var(E[H(A) | path])
                       = sigma_s^2 + (q/p) v + mu^2 q / p^2 - v q^2 / (1 - q^2),
    for drifts with mean mu and variance v. With the constant drift 1 this is the notes'
    sigma_snap^2 = sigma_s^2 + (1 - p) / p^2 (Theorem 2, (C15)); with drift 0 it is sigma_s^2.
    """
    var_s = uniform_prompt_var(s_max)
    if p is None:
        return var_s
    q = 1.0 - p
    mu, v = drift_moments(drift)
    return var_s + (q / p) * v + mu * mu * q / (p * p) - v * q * q / (1.0 - q * q)


def fcfs_prediction(G: int, B: int, sigma: float) -> float:
    """Predicted FCFS average imbalance G * sigma * sqrt(B) * e_G (tokens).

    Worker loads are sums of B iid snapshots: mean mu B, std sigma sqrt(B); the imbalance
    sum_g (max - L_g) = G (max - mean) has expectation G sigma sqrt(B) e_G (Gaussian limit).
    """
    return G * sigma * math.sqrt(B) * expected_max_normal(G)


# --------------------------------------------------------------------------- fits

def ratio_slopes(G: Sequence[int], B: Sequence[int], ratio: Sequence[float]) -> dict[str, tuple]:
    """Slopes of log(ratio) against log B and against log(log G), fitted jointly.

    Only variables that take at least two values enter the fit. Returns
    {"B": (slope, ci95, n), "logG": (slope, ci95, n)} (nan where a variable does not vary).
    """
    G, B, r = (np.asarray(a, np.float64) for a in (G, B, ratio))
    cols, names = [np.ones_like(r)], []
    for name, v in (("B", np.log(B)), ("logG", np.log(np.log(G)))):
        if np.unique(v).size >= 2:
            cols.append(v)
            names.append(name)
    fit = ols(np.stack(cols, 1), np.log(r))
    out = {"B": (math.nan, math.nan, len(r)), "logG": (math.nan, math.nan, len(r))}
    for j, name in enumerate(names, 1):
        out[name] = (float(fit.coef[j]), float(fit.ci95[j]), len(r))
    return out


# --------------------------------------------------------------------------- grid

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
        return math.sqrt(snapshot_var(self.s_max, self.p, self.drift))

    @property
    def gap_bound(self) -> float:
        """Bound on BF-IO's average max - min gap: s_max (Theorem 1) or s_max / p."""
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
            num_steps=K, burn_in_steps=burn, bfio_kernel=kernel, drift=self.drift,
            record_loads=(self.theorem == 1 and policy == "bfio"))

    def key(self, policy: str, kernel: str, measured: int, seeds: Sequence[int]) -> str:
        """Resume key of (point, policy, settings, seeds)."""
        d = dataclasses.asdict(self)
        d.update(policy=policy, kernel=kernel if policy == "bfio" else "", measured=measured,
                 seeds=[int(seeds[0]), int(seeds[-1]), len(seeds)])
        return json.dumps(d, sort_keys=True)


def _product(theorem, Gs, Bs, s_max, p, *, drift=(1, 1), max_bfio_work=None, out_len=2):
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


# Window fill's per-step cost is about 45 ns x G R (4 seeds vmapped, 1 CPU core), R ~ G B p:
# G R = 2^20 is about 47 ms per step, 26 s for a 560-step run. Above it (G B = 256 x 256,
# 128 x 1024 and 256 x 1024: 1.7M to 6.7M) a run costs 60 to 220 s, beyond the sweep's budget.
MAX_WINDOW_WORK = 2**20


def theorem_grid(quick: bool = False) -> list[Point]:
    """The sweep. Full: under 15 minutes on 2 CPU cores (README); quick: the test's grid.

    Design (window fill costs about G * G B p per step, round LPT G B, FCFS G B; every run also
    compiles, about 3.5 CPU seconds):
    - Theorem 2, (s_max, p) = (20, 0.1): G in {8, ..., 256} x B in {16, ..., 1024}, FCFS at all
      24 points, BF-IO at the 21 where G^2 B p <= 2^20 (all but 256 x 256, 128 x 1024 and
      256 x 1024), so that the growth fit has every G and every B with both policies;
    - Theorem 2, (4, 0.2) and (100, 0.05): G in {8, 64} x B in {16, 64, 256}, both policies;
    - Theorem 1 (s_max = 20, o = 2, pool = G B): G in {8, 16, 64} x B in {16, 64, 256}, both;
    - Theorem 3, (20, 0.1), drifts (0, 0), (0, 2), (1, 4): G in {16, 64} x B in {64, 256}, both.
    111 runs; the quick grid has 8.
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


# --------------------------------------------------------------------------- runs

def _round_gap_max(res) -> float:
    """Largest post-admission max - min over every round's admission step and seed (tokens)."""
    loads = np.asarray(res.trajectories["post_admission_loads"], np.int64)      # [S, K, G]
    rounds = np.asarray(res.trajectories["num_admitted"]) > 0                   # [S, K]
    gaps = loads.max(-1) - loads.min(-1)
    return float(gaps[rounds].max()) if rounds.any() else math.nan


def run_point(pt: Point, policy: str, kernel: str, measured: int, seeds: Sequence[int], *,
              memory_budget_mb: float = 1024.0) -> dict:
    """Run one (point, policy) over the seeds; returns its results row."""
    cfg = pt.config(policy, kernel, measured)
    chunk = min(len(seeds), seeds_per_chunk(cfg, memory_budget_mb))
    cpu0 = time.process_time()
    res = simulate(cfg, make_params(cfg), seeds, seed_chunk=chunk)
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
    row["round_gap_max"] = _round_gap_max(res) if cfg.record_loads else ""
    row["wall_s"] = res.wall_s
    row["cpu_s"] = cpu_s        # process CPU time (compile + run): robust to a shared machine
    row["seed_steps"] = len(seeds) * cfg.num_steps
    return row


def run_grid(points: Sequence[Point], out_csv: Path, *, kernel: str = DEFAULT_KERNEL,
             t1_kernel: str = DEFAULT_T1_KERNEL, measured: int = 30,
             seeds: Sequence[int] = range(4), progress: bool = True) -> list[dict]:
    """Run every (point, policy) not yet in `out_csv`, appending rows atomically; returns all rows.

    kernel: BF-IO kernel of Theorems 2 and 3; t1_kernel: that of Theorem 1 (module docstring).
    """
    seeds = [int(s) for s in seeds]
    kern = lambda pt: t1_kernel if pt.theorem == 1 else kernel
    jobs = [(pt, pol) for pt in points for pol in (("fcfs", "bfio") if pt.bfio else ("fcfs",))]
    for pt, pol in jobs:                # validate every configuration before anything compiles
        pt.config(pol, kern(pt), measured)
    rows = read_rows(out_csv)
    done = {r["key"] for r in rows}
    todo = [(pt, pol) for pt, pol in jobs if pt.key(pol, kern(pt), measured, seeds) not in done]
    # ETA weights: slot-steps per run (a compile costs about as much as a small run, so each
    # run also counts a fixed share).
    work = [pt.G * pt.B * pt.steps(measured)[0] + 2_000_000 for pt, _ in todo]
    total, done_work = sum(work), 0
    t0 = time.perf_counter()
    for n, (pt, pol) in enumerate(todo, 1):
        row = {"key": pt.key(pol, kern(pt), measured, seeds),
               **run_point(pt, pol, kern(pt), measured, seeds)}
        rows.append(row)
        write_csv(out_csv, rows)
        done_work += work[n - 1]
        if progress:
            el = time.perf_counter() - t0
            eta = el / done_work * (total - done_work)
            sys.stderr.write(f"\r  theorems: {len(jobs) - len(todo) + n}/{len(jobs)} runs, "
                             f"{el:6.1f} s elapsed, ETA {eta:6.1f} s, last {pt.group} G={pt.G} "
                             f"B={pt.B} {pol} {row['wall_s']:.1f} s" + " " * 8)
            sys.stderr.flush()
    if progress and todo:
        sys.stderr.write("\n")
    keys = {pt.key(pol, kern(pt), measured, seeds) for pt, pol in jobs}
    return [r for r in read_rows(out_csv) if r["key"] in keys]


# --------------------------------------------------------------------------- checks

@dataclass(frozen=True)
class Check:
    """One line of the report: name, status (PASS, FAIL or INFO) and the numbers behind it."""
    name: str
    status: str
    detail: str


def _f(row: dict, key: str) -> float:
    v = row.get(key, "")
    return math.nan if v in ("", None) else float(v)


def _nan0(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def _by_policy(rows: Sequence[dict], policy: str) -> list[dict]:
    return [r for r in rows if r["policy"] == policy]


def fcfs_check(rows: Sequence[dict]) -> tuple[Check, list[list[str]]]:
    """Check 1: FCFS imbalance against G sigma sqrt(B) e_G, within FCFS_TOLERANCE for B >= 64."""
    table, worst, bad = [], 0.0, 0
    for r in _by_policy(rows, "fcfs"):
        rel = _f(r, "imb_mean") / _f(r, "prediction") - 1.0
        checked = int(r["B"]) >= FCFS_MIN_B
        if checked:
            worst = max(worst, abs(rel))
            bad += abs(rel) > FCFS_TOLERANCE
        table.append([r["group"], r["G"], r["B"], format_value(_f(r, "sigma")),
                      f"{format_value(_f(r, 'imb_mean'))} ± {format_value(_f(r, 'imb_ci95'))}",
                      format_value(_f(r, "prediction")), f"{100 * rel:+.1f}%",
                      ("FAIL" if abs(rel) > FCFS_TOLERANCE else "ok") if checked else "(B < 64)"])
    n = sum(int(r["B"]) >= FCFS_MIN_B for r in _by_policy(rows, "fcfs"))
    status = "PASS" if n and not bad else "FAIL"
    detail = (f"{n - bad}/{n} points with B >= {FCFS_MIN_B} within {100 * FCFS_TOLERANCE:.0f}% of "
              f"G sigma sqrt(B) e_G; largest |error| {100 * worst:.1f}%")
    return Check("FCFS imbalance = G sigma sqrt(B) e_G", status, detail), table


def admission_margin(row: dict) -> float:
    """kappa / phi: how far one admission can absorb one step's removal spread (inf for Theorem 1).

    kappa = B p (s_max - 1): the most that one admission (about B p new requests per worker) can
    shift between the heaviest and the lightest worker. phi = 2 e_G sqrt(B p E[U^2]): the typical
    spread that one step's completions add (a worker loses about B p requests of snapshot size U,
    E[U^2] = mu_U^2 + sigma^2, mu_U = (s_max + 1) / 2 + mean drift * (1 - p) / p). The bounds
    s_max / p are asymptotic in B; the proof's recursion D(k) <= s_max + (1 - p) D(k - 1) (Lemma 4,
    on its condition (C8)) needs an admission that undoes what the completions add, kappa >~ phi.
    Where kappa < phi the BF-IO gap can exceed s_max / p for every per-step max-min assignment: a
    lower bound on any assignment's max - min from the same state (max_g (a_g + its c_g smallest
    pool items) - min_g (a_g + its c_g largest)), averaged over steps, is 77 tokens at Theorem 2,
    (s_max, p) = (4, 0.2), (G, B) = (64, 64) (bound 20; window fill: 77), and 416 at Theorem 3,
    drift 1..4, (64, 64) (bound 200; window fill: 418).
    """
    if int(row["theorem"]) == 1:
        return math.inf
    G, B, s_max, p = int(row["G"]), int(row["B"]), int(row["s_max"]), float(row["p"])
    mu_drift = (int(row["drift_lo"]) + int(row["drift_hi"])) / 2
    mu_u = (s_max + 1) / 2 + mu_drift * (1 - p) / p
    e_u2 = mu_u ** 2 + snapshot_var(s_max, p, (int(row["drift_lo"]), int(row["drift_hi"])))
    return B * p * (s_max - 1) / (2 * expected_max_normal(G) * math.sqrt(B * p * e_u2))


def bfio_check(rows: Sequence[dict]) -> tuple[Check, Check, list[list[str]]]:
    """Check 2: BF-IO average gap <= s_max / p and average imbalance <= (G - 1) s_max / p.

    A point significantly above a bound fails where one admission can absorb a step's removal
    spread (`admission_margin` >= 1); below that margin (the bounds are asymptotic in B) it is
    reported in the second Check (INFO), not failed."""
    table, bad, excused, worst_gap, worst_imb = [], 0, [], 0.0, 0.0
    rs = _by_policy(rows, "bfio")
    for r in rs:
        g, gb = _f(r, "gap_mean"), _f(r, "gap_bound")
        i, ib = _f(r, "imb_mean"), _f(r, "imbalance_bound")
        margin = admission_margin(r)
        # A point is above a bound when its mean is above it by more than its 95% CI half-width
        # (significantly above); a mean above but within its CI is flagged, not failed.
        sig = g - _nan0(_f(r, "gap_ci95")) > gb or i - _nan0(_f(r, "imb_ci95")) > ib
        ok = g <= gb and i <= ib
        if sig and margin < 1:
            excused.append((r, margin))
            verdict = "above (finite B)"
        else:
            bad += sig
            worst_gap, worst_imb = max(worst_gap, g / gb), max(worst_imb, i / ib)
            verdict = "ok" if ok else ("FAIL" if sig else "above (n.s.)")
        table.append([r["group"], r["G"], r["B"], r.get("kernel", ""),
                      "inf" if math.isinf(margin) else f"{margin:.2f}",
                      f"{format_value(g)} ± {format_value(_f(r, 'gap_ci95'))}",
                      format_value(gb), f"{format_value(i)} ± {format_value(_f(r, 'imb_ci95'))}",
                      format_value(ib), verdict])
    n = len(rs) - len(excused)
    status = "PASS" if n and not bad else "FAIL"
    detail = (f"{n - bad}/{n} points not significantly above either bound (mean - 95% CI <= bound), "
              f"{len(excused)} more above with admission margin kappa/phi < 1 (reported below); "
              f"largest gap / bound {worst_gap:.3f}, largest imbalance / bound {worst_imb:.3f} "
              f"(over the {n})")
    detail2 = "; ".join(f"{r['group']} G={r['G']} B={r['B']}: gap {_f(r, 'gap_mean') / _f(r, 'gap_bound'):.2f}"
                        f" x bound, imbalance {_f(r, 'imb_mean') / _f(r, 'imbalance_bound'):.2f} x bound, "
                        f"kappa/phi {m:.2f}" for r, m in excused) or "none"
    return (Check("BF-IO gap <= s_max/p, imbalance <= (G-1) s_max/p", status, detail),
            Check("BF-IO above the bounds at finite B (kappa/phi < 1, reported)", "INFO", detail2), table)


def rounds_check(rows: Sequence[dict]) -> Check:
    """Check 3: Theorem 1, BF-IO: max - min <= s_max after every round's admission."""
    rs = [r for r in _by_policy(rows, "bfio") if int(r["theorem"]) == 1]
    worst = [(_f(r, "round_gap_max"), int(r["s_max"]), r) for r in rs]
    bad = [w for w in worst if not w[0] <= w[1]]
    status = "PASS" if rs and not bad else "FAIL"
    top = max((w[0] - w[1] for w in worst), default=math.nan)
    detail = (f"{len(rs) - len(bad)}/{len(rs)} Theorem 1 points with max - min <= s_max in every "
              f"round and seed; largest (max - min) - s_max = {format_value(top)} tokens")
    return Check("T1 rounds: max - min <= s_max", status, detail)


def overload_check(rows: Sequence[dict]) -> Check:
    """Sanity: the pool refilled every freed slot (all G B slots occupied at the end of a run)."""
    bad = [r for r in rows if str(r["full_at_end"]) != "True"]
    return Check("overloaded pool (all slots full at the end)", "PASS" if not bad else "FAIL",
                 f"{len(rows) - len(bad)}/{len(rows)} runs")


def ratio_rows(rows: Sequence[dict]) -> dict[str, list[tuple[int, int, float]]]:
    """{group: [(G, B, FCFS / BF-IO average imbalance)]} over points that ran both policies."""
    bf = {(r["group"], r["G"], r["B"]): _f(r, "imb_mean") for r in _by_policy(rows, "bfio")}
    out: dict[str, list] = {}
    for r in _by_policy(rows, "fcfs"):
        k = (r["group"], r["G"], r["B"])
        if k in bf and bf[k] > 0:
            out.setdefault(r["group"], []).append((int(r["G"]), int(r["B"]), _f(r, "imb_mean") / bf[k]))
    return out


def growth_report(rows: Sequence[dict]) -> tuple[Check, list[list[str]]]:
    """Fitted slopes of log(FCFS / BF-IO) against log B and log log G per group (reported)."""
    table = []
    for group, pts in ratio_rows(rows).items():
        G, B, r = zip(*pts)
        s = ratio_slopes(G, B, r)
        cell = lambda v: "n/a" if not math.isfinite(v[0]) else (
            f"{v[0]:.3f}" + ("" if not math.isfinite(v[1]) else f" ± {v[1]:.3f}"))
        table.append([group, str(len(pts)), f"{min(r):.2f} .. {max(r):.2f}", cell(s["B"]),
                      cell(s["logG"]), "0.5"])
    detail = ("joint least-squares fit of log(ratio) on log B and log log G per group, 95% CI; "
              "the theorems give ratio = Omega(sqrt(B log G)) only asymptotically, so reported, "
              "not asserted")
    return Check("improvement ratio growth (slopes vs 1/2)", "INFO", detail), table


def all_checks(rows: Sequence[dict]) -> tuple[list[Check], dict[str, list[list[str]]]]:
    """Every check and its detail table."""
    c1, t1 = fcfs_check(rows)
    c2, c2b, t2 = bfio_check(rows)
    c3 = rounds_check(rows)
    c4 = overload_check(rows)
    c5, t5 = growth_report(rows)
    return [c1, c2, c3, c4, c5, c2b], {"fcfs": t1, "bfio": t2, "growth": t5}


# --------------------------------------------------------------------------- report

def throughput(rows: Sequence[dict]) -> tuple[float, float, float, float]:
    """(wall s, process CPU s, seed-steps, seed-steps per wall second) summed over the rows."""
    wall = sum(_f(r, "wall_s") for r in rows)
    cpu = sum(_nan0(_f(r, "cpu_s")) for r in rows)
    steps = sum(_f(r, "seed_steps") for r in rows)
    return wall, cpu, steps, steps / wall if wall > 0 else math.nan


def render_report(rows: Sequence[dict], checks: Sequence[Check], tables: dict, *, settings: str,
                  elapsed_s: float, plots: Sequence[Path]) -> str:
    """The markdown report: settings, check summary, detail tables, plots."""
    wall, cpu, steps, rate = throughput(rows)
    parts = [
        "# BF-IO Theorems 1-3: `jaxsched check theorems`", "",
        f"Settings: {settings}.", "",
        f"Wall time of this invocation {elapsed_s:.1f} s; simulation (compile + run) over all "
        f"{len(rows)} runs {wall:.1f} s wall, {cpu:.1f} s process CPU, for {steps:.0f} "
        f"seed-steps ({rate:.0f} seed-steps per wall second, compilation included).", "",
        "Sigma is the per-slot snapshot standard deviation derived analytically "
        "(`jaxsched.dp.theorems.snapshot_var`): sigma_s^2 = (s_max^2 - 1)/12 (Theorem 1), "
        "sigma_s^2 + (1-p)/p^2 (Theorem 2), and for a common drift with mean mu and variance v "
        "sigma_s^2 + (q/p) v + mu^2 q/p^2 - v q^2/(1-q^2), q = 1-p (Theorem 3: the variance given "
        "the drift path, averaged over paths).", "",
        "## Checks", "",
        markdown_table(["check", "status", "numbers"], [[c.name, c.status, c.detail] for c in checks]),
        "", "## FCFS imbalance against G sigma sqrt(B) e_G", "",
        markdown_table(["group", "G", "B", "sigma", "FCFS imbalance", "prediction", "error", ""],
                       tables["fcfs"]),
        "", "## BF-IO gap and imbalance against the bounds", "",
        markdown_table(["group", "G", "B", "kernel", "kappa/phi", "avg gap", "gap bound",
                        "avg imbalance", "imb. bound", ""],
                       tables["bfio"]),
        "", "## Improvement ratio FCFS / BF-IO", "",
        markdown_table(["group", "points", "ratio range", "slope vs B", "slope vs log G", "theorem"],
                       tables["growth"]),
        "", "Values are means over seeds ± 95% CI half-widths (tokens).", "",
    ]
    if plots:
        parts += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    return "\n".join(parts)


def make_plots(rows: Sequence[dict], out_dir: Path) -> list[Path]:
    """The three figures (PNG) in out_dir."""
    from ..plots import bfio_gap_vs_b, fcfs_vs_prediction, improvement_ratio
    ratio = {g: ([math.sqrt(B * math.log(G)) for G, B, _ in pts], [r for *_, r in pts])
             for g, pts in ratio_rows(rows).items()}
    fcfs: dict[str, tuple] = {}
    for r in _by_policy(rows, "fcfs"):
        fcfs.setdefault(r["group"], ([], [], []))
        for lst, v in zip(fcfs[r["group"]], (_f(r, "prediction"), _f(r, "imb_mean"), _f(r, "imb_ci95"))):
            lst.append(v)
    gaps: dict[str, dict] = {}
    bounds: dict[str, float] = {}
    for r in _by_policy(rows, "bfio"):
        d = gaps.setdefault(r["group"], {}).setdefault(int(r["G"]), ([], [], []))
        for lst, v in zip(d, (int(r["B"]), _f(r, "gap_mean"), _f(r, "gap_ci95"))):
            lst.append(v)
        bounds[r["group"]] = _f(r, "gap_bound")
    return [improvement_ratio(ratio, out_dir / "ratio_vs_sqrt_B_logG.png"),
            fcfs_vs_prediction(fcfs, out_dir / "fcfs_vs_prediction.png", tolerance=FCFS_TOLERANCE),
            bfio_gap_vs_b(gaps, bounds, out_dir / "bfio_gap_vs_B.png")]


def check_theorems(out_dir: str | Path, *, quick: bool = False, kernel: str = DEFAULT_KERNEL,
                   t1_kernel: str = DEFAULT_T1_KERNEL, seeds: int = 4, measured: int | None = None,
                   progress: bool = True,
                   plots: bool = True) -> tuple[bool, list[Check], Path]:
    """Run the grid (resuming `out_dir/results.csv`), write report.md and the plots.

    measured: measured rounds (Theorem 1) or slot lifetimes 1/p (Theorems 2/3) per run; default
    48 (quick: 20). Returns (all checks passed, checks, report path).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    measured = (20 if quick else 48) if measured is None else measured
    t0 = time.perf_counter()
    points = theorem_grid(quick)
    rows = run_grid(points, out_dir / "results.csv", kernel=kernel, t1_kernel=t1_kernel,
                    measured=measured, seeds=range(seeds), progress=progress)
    checks, tables = all_checks(rows)
    pngs = make_plots(rows, out_dir) if plots else []
    settings = (f"{'quick' if quick else 'full'} grid, {len(points)} points, {len(rows)} runs, "
                f"{seeds} seeds, {measured} measured rounds / lifetimes, BF-IO kernel {kernel!r} "
                f"(Theorems 2, 3) and {t1_kernel!r} (Theorem 1)")
    report = out_dir / "report.md"
    report.write_text(render_report(rows, checks, tables, settings=settings,
                                    elapsed_s=time.perf_counter() - t0, plots=pngs))
    return all(c.status != "FAIL" for c in checks), checks, report
