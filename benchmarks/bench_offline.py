"""Speed of the offline engine (paper 002): the executor against a one-instance NumPy
executor, and the Phase-1 solvers' cost against n.

    python -m benchmarks.bench_offline [--quick] [--out benchmarks/results/offline_speed.json]

Workload: paper 002 section 7's real-data mix, `jaxsched.offline.workloads.real("mix", n)`
(80% LMSYS-like, 20% arXiv-like requests, parametric laws matching the quoted means and
medians; mean s about 543 and mean o about 128 tokens), KV limit M = 16,492 tokens, instance k
drawn from seed k. If that module has no `real` (an older checkout), `_fallback_mix` draws a
documented stand-in with the same quoted statistics. The small-M family of part (b) is
section EC.4.2's "uniform" law (s, o ~ U{1..50}) with M = 100.

(a) Executor speed. For n in EXEC_GRID and orders fcfs, mcsf and sorted_f_swap (computed
before the clock starts, so only the executor is timed), `jaxsched.offline.instances.execute`
runs 1, 64 (and 1024) instances at once: a first call compiles and warms up, the second,
identical call is timed (it returns NumPy metrics, so all device work is included);
instances/s = instances / timed seconds. `benchmarks/numpy_offline.py::execute_numpy` then runs
the same instances one at a time, as many as fill about NUMPY_TARGET_S seconds (at least one):
instances/s = instances run / their total seconds. ratio = engine / NumPy, from this run. The
engine's TEL must equal the NumPy executor's on every instance both ran, and the NumPy
executor's (p, c) must equal the plain-Python oracle's (`tests/reference/offline.py::execute`)
on ORACLE_INSTANCES instances of n = ORACLE_N per order; the script exits 1 otherwise.
Grid reductions (measured on a shared 2-core x86-64 machine, where the full run takes about
11 minutes, `--executor-only` about 4): 1024 instances at n = 200 and 1000 only (the engine
skips events and checks only its table of running requests, so a call costs about instances x
events x the table's rows; an event-free, dense executor took 40 s for 1024 instances of
n = 200); Sorted-F (Swap)'s Phase 1 costs about 3 s per instance at n = 1000 and 30 s at
n = 2000
there, so only SWAP_DISTINCT[n] distinct instances get its order and a batch repeats them
(column "distinct"; the executor's work per instance does not depend on the repetition, but
copies share one makespan, so such a batch escapes the largest-makespan cost above and its
rate is not comparable with the rows of distinct instances).

(b) Phase-1 cost against n. Each order policy present in `POLICIES` (sorted_f_dp only on the
small-M family, with dp_width = M = 100 and n <= 100; the other Sorted-F solvers, mcsf and
fcfs on both families) is compiled once with `instances.compiled_orders` for a batch of
SOLVER_BATCH instances and the compiled call is timed; s/instance = run seconds / batch size,
compilation reported apart. Sizes are tried in ascending n; one is skipped when the last
measured run time scaled by (n / n_prev) ** EXPONENT[policy] (the solver's growth, measured
roughly on this machine) exceeds SOLVER_LIMIT_S. The LP orders of `jaxsched.offline.lp`
(Sorted-LP, LP-Swap: a time-indexed LP solved by HiGHS on the host, one instance at a time,
time_step 1, the exact Relax-LP) are timed the same way on single instances of the real mix
(n in LP_NS, skip rule included), or reported absent when that module is missing.

Writes the JSON results to --out (default `benchmarks/results/offline_speed.json`; with
--quick, `offline_speed_quick.json`) and the markdown tables next to it with a .md suffix;
prints the markdown to stdout and progress to stderr. Exits 1 if a consistency check fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks.bench_dp import environment as dp_environment
from benchmarks.numpy_offline import execute_numpy
from jaxsched.offline import instances as inst
from jaxsched.offline import workloads
from jaxsched.offline.config import PAPER_CAPACITY_TOKENS, OfflineConfig, instance_params
from jaxsched.offline.registry import POLICIES
from jaxsched.workload import Batch
from tests.reference import offline as ref

_HERE = Path(__file__).resolve().parent

REAL_M = PAPER_CAPACITY_TOKENS  # 16,492 tokens
SMALL_M = 100  # EC.4.2's KV limit (tokens)

# (a) Executor: instance counts per n (see the docstring for why 1024 only at n = 200).
EXEC_GRID: dict[int, tuple[int, ...]] = {200: (1, 64, 1024), 1000: (1, 64, 1024), 2000: (1, 64)}
QUICK_EXEC_GRID: dict[int, tuple[int, ...]] = {200: (1, 64)}
EXEC_ORDERS = ("fcfs", "mcsf", "sorted_f_swap")
# Distinct instances given a Sorted-F (Swap) order per n (None: every instance); a batch
# repeats them. Its Phase 1 grows about as n^4 (part b), so large n gets few.
SWAP_DISTINCT: dict[int, int | None] = {200: None, 1000: 4, 2000: 1}
NUMPY_TARGET_S = 2.0  # wall seconds of NumPy runs per (order, n)
QUICK_NUMPY_TARGET_S = 0.3
ORACLE_N = 200  # the oracle costs O(n |X|^2) per step: ~0.5 s here
ORACLE_INSTANCES = 4
QUICK_ORACLE_INSTANCES = 2

# (b) Phase-1 solvers.
SOLVER_NS = (50, 100, 200, 500, 1000, 2000)
QUICK_SOLVER_NS = (20, 50)
SMALL_NS = (50, 100)  # sorted_f_dp's O(n^2 M) table: n <= 100
QUICK_SMALL_NS = (20, 50)
SOLVER_BATCH = 4
SOLVER_LIMIT_S = 60.0
QUICK_SOLVER_LIMIT_S = 10.0
LP_NS = (50, 100, 200)
QUICK_LP_NS = (20,)
LP_ORDER_NAMES = ("sorted_lp", "lp_swap")
# Growth of run time with n used by the skip rule (exponents of n): a sort is ~n log n; the
# DPs do O(n^2 W) per batch over ~n / |X| batches; the swap search O(n^2) per swap with ~n
# swaps per batch; quantile greedy O(n log n) per batch; the LP's nonzeros grow as n x T.
EXPONENT = {
    "fcfs": 1.2,
    "mcsf": 1.2,
    "mcsf2": 1.2,
    "sorted_f_dp": 3.0,
    "sorted_f_scaled": 3.0,
    "sorted_f_swap": 4.0,
    "sorted_f_quantile": 2.0,
    "sorted_lp": 3.0,
    "lp_swap": 3.0,
}


# --------------------------------------------------------------------------- instances


def _fallback_mix(n: int, seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stand-in for section 7's mix when workloads.real is missing: per request, with
    probability 0.2 arXiv-like (s ~ Normal(2546, 800), o ~ LogNormal(median 161, sigma 1.104)),
    else LMSYS-like (s ~ LogNormal(median 12, sigma 1.580), o ~ LogNormal(median 43, sigma
    1.171)); sigma = sqrt(2 ln(mean / median)) of the quoted statistics; rounded, s clipped to
    [1, 12288] and o to [1, 4096] tokens so that s + o <= M. Row k from NumPy seed k.
    Returns (s, o) int32[S, n]."""
    rows = []
    for seed in seeds:
        g = np.random.default_rng(int(seed))
        long = g.random(n) < 0.2
        s = np.where(long, g.normal(2546.0, 800.0, n), 12.0 * np.exp(1.580 * g.standard_normal(n)))
        o = np.where(long, 161.0 * np.exp(1.104 * g.standard_normal(n)), 43.0 * np.exp(1.171 * g.standard_normal(n)))
        rows.append((np.clip(np.rint(s), 1, 12288), np.clip(np.rint(o), 1, 4096)))
    return (np.stack([r[0] for r in rows]).astype(np.int32), np.stack([r[1] for r in rows]).astype(np.int32))


def real_family() -> tuple[str, Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]]:
    """(name, draw(n, seeds) -> (s, o) int32[S, n]) of section 7's mix (M = REAL_M)."""
    if hasattr(workloads, "real"):

        def draw(n: int, seeds: np.ndarray):
            return inst.draw(OfflineConfig(workloads.real("mix", n)), seeds)

        return "real mix (workloads.real)", draw
    return "section-7-like mix (_fallback_mix)", _fallback_mix


def small_family() -> tuple[str, Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]]:
    """(name, draw) of EC.4.2's uniform law (s, o ~ U{1..50}, M = SMALL_M)."""
    law = workloads.SYNTHETIC["uniform"][0]

    def draw(n: int, seeds: np.ndarray):
        return inst.draw(OfflineConfig(Batch(law, n)), seeds)

    return "EC.4.2 uniform", draw


# --------------------------------------------------------------------------- records


@dataclass
class ExecRow:
    """One engine measurement of (a) beside the NumPy executor's on the same order and n."""

    order: str
    n: int
    instances: int
    distinct: int  # distinct instances in the batch (the rest repeat them)
    engine_timed_s: float
    engine_first_call_s: float
    engine_compile_s: float  # first call minus timed call
    engine_instances_per_s: float
    mean_makespan_steps: float
    max_makespan_steps: int  # a vmapped batch runs this many steps for every instance
    numpy_instances: int
    numpy_timed_s: float
    numpy_instances_per_s: float
    ratio: float  # engine / numpy instances per second
    tel_checked: int  # instances whose engine TEL was compared with NumPy's
    tel_equal: bool


@dataclass
class SolverRow:
    """One Phase-1 measurement of (b): `status` is "ok", "skipped" (predicted_s over the
    limit) or "absent"."""

    family: str
    M: int
    policy: str
    n: int
    batch: int
    status: str
    compile_s: float | None = None
    run_s: float | None = None
    s_per_instance: float | None = None
    predicted_s: float | None = None
    note: str = ""


def log(msg: str) -> None:
    """Progress line on stderr (stdout carries only the tables)."""
    print(f"[bench_offline {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def environment() -> dict[str, Any]:
    """What the numbers depend on besides the code: bench_dp's record plus the platform."""
    return {**dp_environment(), "platform": platform.platform()}


# --------------------------------------------------------------------------- (b) Phase 1


def time_policy(
    policy: str, s: np.ndarray, o: np.ndarray, M: int, seeds: np.ndarray, **options
) -> tuple[float, float, np.ndarray]:
    """(compile s, run s, orders int32[S, n]) of one JAX order policy on instances s, o
    (int32[S, n], tokens): `instances.compiled_orders`, then one timed run of the compiled
    function (it returns NumPy, so the device work is included)."""
    config = inst.policy_config(policy, s.shape[1], **options)
    compile_s, run = inst.compiled_orders(config, instance_params(M), s, o, seeds)
    t0 = time.perf_counter()
    out = run()
    return compile_s, time.perf_counter() - t0, out


def time_lp(which: str, s: np.ndarray, o: np.ndarray, M: int) -> tuple[float, np.ndarray]:
    """(run s, orders int64[S, n]) of `lp.lp_orders` (HiGHS on the host, row by row) on
    instances s, o (int[S, n], tokens). What JAX compiles for these shapes is compiled first,
    outside the clock, by untimed calls: the executor run that gives the default horizon (the
    MC-SF makespan) and LP-Swap's batch loop."""
    from jaxsched.offline import lp

    lp.mcsf_makespans(s, o, M)
    if which == "lp_swap":
        # Compile the batch loop outside the clock with y = 0 (the LP is not needed for that).
        lp._lp_swap_batch(s.astype(np.int64), o.astype(np.int64), M, np.zeros(s.shape))
    t0 = time.perf_counter()
    out = lp.lp_orders(s, o, M, which)
    return time.perf_counter() - t0, np.asarray(out)


def solver_series(
    family: str,
    draw,
    M: int,
    policy: str,
    ns: tuple[int, ...],
    batch: int,
    limit_s: float,
    cache: dict,
    timer: Callable[..., tuple[float, float, np.ndarray]],
    **options,
) -> list[SolverRow]:
    """Rows for one (family, policy) over ascending ns with the skip rule (module docstring).
    timer(s, o, seeds) -> (compile s, run s, orders). Orders measured on the real family are
    kept in `cache[(policy, n)]` for part (a)."""
    rows: list[SolverRow] = []
    last: tuple[int, float] | None = None  # (n, run s) of the last measurement
    for n in ns:
        if last is not None:
            predicted = last[1] * (n / last[0]) ** EXPONENT[policy]
            if predicted > limit_s:
                rows.append(
                    SolverRow(
                        family,
                        M,
                        policy,
                        n,
                        batch,
                        "skipped",
                        predicted_s=predicted,
                        note=f"predicted {predicted:.0f} s > {limit_s:g} s",
                    )
                )
                log(f"  {policy} n={n}: skipped (predicted {predicted:.0f} s)")
                continue
        seeds = np.arange(batch, dtype=np.uint32)
        s, o = draw(n, seeds)
        compile_s, run_s, orders = timer(s, o, seeds, **options)
        rows.append(SolverRow(family, M, policy, n, batch, "ok", compile_s, run_s, run_s / batch))
        log(f"  {policy} n={n}: {run_s / batch:.4g} s/instance (compile {compile_s:.1f} s)")
        if M == REAL_M:
            cache[(policy, n)] = orders
        last = (n, run_s)
    return rows


def bench_solvers(quick: bool, cache: dict) -> tuple[list[SolverRow], str]:
    """Part (b). Returns the rows and a note on the LP orders."""
    ns = QUICK_SOLVER_NS if quick else SOLVER_NS
    small_ns = QUICK_SMALL_NS if quick else SMALL_NS
    limit = QUICK_SOLVER_LIMIT_S if quick else SOLVER_LIMIT_S
    present = [
        p
        for p in ("fcfs", "mcsf", "sorted_f_dp", "sorted_f_scaled", "sorted_f_swap", "sorted_f_quantile")
        if p in POLICIES
    ]
    rows: list[SolverRow] = []
    for (family, draw), M, family_ns in ((small_family(), SMALL_M, small_ns), (real_family(), REAL_M, ns)):
        log(f"Phase 1 on {family}, M = {M}, batches of {SOLVER_BATCH}")
        for policy in present:
            if policy == "sorted_f_dp" and M != SMALL_M:
                continue  # its table is (n + 1) x (M + 1): only for a small M
            options = {"dp_width": M} if policy == "sorted_f_dp" else {}
            timer = lambda s, o, seeds, policy=policy, M=M, **kw: time_policy(policy, s, o, M, seeds, **kw)
            rows += solver_series(family, draw, M, policy, family_ns, SOLVER_BATCH, limit, cache, timer, **options)
    # The LP orders: one instance per size (HiGHS solves them one at a time anyway).
    if importlib.util.find_spec("jaxsched.offline.lp") is None:
        return rows, "jaxsched/offline/lp.py is absent: Sorted-LP and LP-Swap not timed."
    family, draw = real_family()
    log(f"LP orders on {family}, M = {REAL_M}, one instance per size")
    # Import SciPy and run HiGHS once outside the clock (a first call otherwise pays for it).
    s, o = draw(5, np.zeros(1, np.uint32))
    time_lp("sorted_lp", s, o, REAL_M)
    for which in LP_ORDER_NAMES:

        def timer(s, o, seeds, which=which):
            run_s, out = time_lp(which, s, o, REAL_M)
            return 0.0, run_s, out

        rows += solver_series(family, draw, REAL_M, which, QUICK_LP_NS if quick else LP_NS, 1, limit, {}, timer)
    return rows, (
        "Sorted-LP and LP-Swap: `lp.lp_orders` with time_step 1 (the exact Relax-LP) "
        "and the default horizon (the MC-SF makespan), one instance per size; "
        "the JAX parts (the MC-SF run giving the horizon, LP-Swap's batch loop) are "
        "compiled before the clock starts."
    )


# --------------------------------------------------------------------------- (a) executor


def exec_orders(
    policy: str, n: int, s: np.ndarray, o: np.ndarray, seeds: np.ndarray, cache: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(s, o, order) int32[S, n] for part (a) and the number of distinct instances: every row
    its own instance, except that sorted_f_swap orders only SWAP_DISTINCT[n] of them (reusing
    part (b)'s orders of the same instances when there are enough) and repeats those."""
    S = s.shape[0]
    distinct = S
    if policy == "sorted_f_swap" and SWAP_DISTINCT.get(n) is not None:
        distinct = min(S, SWAP_DISTINCT[n])
    have = cache.get((policy, n))
    if have is not None and have.shape[0] >= distinct:
        order = np.asarray(have[:distinct], np.int32)
    else:
        log(f"  computing {policy} orders of {distinct} instances of n = {n}")
        config = inst.policy_config(policy, n)
        order = inst.orders(config, instance_params(REAL_M), s[:distinct], o[:distinct], seeds[:distinct]).astype(
            np.int32
        )
    reps = -(-S // distinct)
    tile = lambda a: np.tile(a[:distinct], (reps, 1))[:S]
    return tile(s), tile(o), tile(order), distinct


def bench_engine(s: np.ndarray, o: np.ndarray, order: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(first call s, timed call s, TEL int64[S], makespan int64[S]) of `instances.execute`
    under unit steps at M = REAL_M: one warm-up call, then the identical call timed."""
    params = instance_params(REAL_M)
    t0 = time.perf_counter()
    inst.execute(params, s, o, order)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics = inst.execute(params, s, o, order)
    timed = time.perf_counter() - t0
    assert (metrics["done"] == 1).all() and (metrics["num_dropped"] == 0).all()
    return (first, timed, metrics["tel_steps"].astype(np.int64), metrics["makespan_steps"].astype(np.int64))


def bench_numpy(s: np.ndarray, o: np.ndarray, order: np.ndarray, target_s: float) -> tuple[float, np.ndarray]:
    """(total s, TEL int64[k]) of `execute_numpy` on rows 0..k-1, k the fewest rows (at least
    one, at most all) whose runs last target_s seconds together."""
    tels: list[int] = []
    total = 0.0
    for row in range(s.shape[0]):
        t0 = time.perf_counter()
        _, c = execute_numpy(s[row], o[row], order[row], REAL_M)
        total += time.perf_counter() - t0
        tels.append(int(c.sum()))
        if total >= target_s:
            break
    return total, np.asarray(tels, np.int64)


def oracle_check(s: np.ndarray, o: np.ndarray, order: np.ndarray, rows: int) -> tuple[bool, float, float]:
    """(equal, oracle s/instance, NumPy s/instance): the NumPy executor's (p, c) against the
    plain-Python oracle's on the first `rows` instances."""
    equal, t_ref, t_np = True, 0.0, 0.0
    for r in range(rows):
        args = (s[r].tolist(), o[r].tolist(), order[r].tolist(), REAL_M)
        t0 = time.perf_counter()
        p_ref, c_ref = ref.execute(*args)
        t1 = time.perf_counter()
        p, c = execute_numpy(*args)
        t_np += time.perf_counter() - t1
        t_ref += t1 - t0
        equal &= p.tolist() == p_ref and c.tolist() == c_ref
    return equal, t_ref / rows, t_np / rows


def bench_executor(quick: bool, cache: dict) -> tuple[list[ExecRow], list[dict]]:
    """Part (a): rows and the oracle checks."""
    grid = QUICK_EXEC_GRID if quick else EXEC_GRID
    target = QUICK_NUMPY_TARGET_S if quick else NUMPY_TARGET_S
    oracle_rows = QUICK_ORACLE_INSTANCES if quick else ORACLE_INSTANCES
    family, draw = real_family()
    rows: list[ExecRow] = []
    oracles: list[dict] = []
    for n, counts in grid.items():
        S_max = max(counts)
        seeds = np.arange(S_max, dtype=np.uint32)
        s_all, o_all = draw(n, seeds)
        log(f"executor on {family}, n = {n}: mean s {s_all.mean():.1f}, mean o {o_all.mean():.1f} tokens")
        for policy in EXEC_ORDERS:
            s, o, order, distinct_max = exec_orders(policy, n, s_all, o_all, seeds, cache)
            if n == ORACLE_N:
                ok, t_ref, t_np = oracle_check(s, o, order, min(oracle_rows, distinct_max))
                oracles.append(
                    {
                        "order": policy,
                        "n": n,
                        "instances": min(oracle_rows, distinct_max),
                        "equal": ok,
                        "oracle_s_per_instance": t_ref,
                        "numpy_s_per_instance": t_np,
                    }
                )
                log(f"  {policy}: NumPy (p, c) {'==' if ok else '!='} oracle's (oracle {t_ref:.2f} s/instance)")
            np_s, np_tel = bench_numpy(s, o, order, target)
            np_rate = np_tel.size / np_s
            log(f"  numpy {policy} n={n}: {np_rate:.3g} instances/s ({np_tel.size} in {np_s:.2f} s)")
            for S in counts:
                first, timed, tel, makespan = bench_engine(s[:S], o[:S], order[:S])
                k = min(S, np_tel.size)
                row = ExecRow(
                    order=policy,
                    n=n,
                    instances=S,
                    distinct=min(S, distinct_max),
                    engine_timed_s=timed,
                    engine_first_call_s=first,
                    engine_compile_s=max(0.0, first - timed),
                    engine_instances_per_s=S / timed,
                    mean_makespan_steps=float(makespan.mean()),
                    max_makespan_steps=int(makespan.max()),
                    numpy_instances=int(np_tel.size),
                    numpy_timed_s=np_s,
                    numpy_instances_per_s=np_rate,
                    ratio=(S / timed) / np_rate,
                    tel_checked=k,
                    tel_equal=bool(np.array_equal(tel[:k], np_tel[:k])),
                )
                rows.append(row)
                log(
                    f"  engine {policy} n={n} x{S}: {row.engine_instances_per_s:.3g} "
                    f"instances/s ({timed:.2f} s timed, first call {first:.2f} s), "
                    f"{row.ratio:.2f}x numpy; TEL {'equal' if row.tel_equal else 'DIFFERENT'}"
                )
    return rows, oracles


# --------------------------------------------------------------------------- output


def _fmt(x: float | None, digits: int = 3) -> str:
    """Numbers with `digits` significant digits, k/M suffixes for large ones; '-' for None."""
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.{digits}g}M"
    if x >= 1e4:
        return f"{x / 1e3:.{digits}g}k"
    return f"{x:.{digits}g}"


def exec_table(rows: list[ExecRow]) -> str:
    lines = [
        "| order | n | instances | distinct | engine inst/s | numpy inst/s | ratio | "
        "makespan mean / max (steps) | engine timed s | compile s | numpy inst timed | TEL equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.order} | {r.n} | {r.instances} | {r.distinct} | "
            f"{_fmt(r.engine_instances_per_s)} | {_fmt(r.numpy_instances_per_s)} | "
            f"{r.ratio:.2f}x | {r.mean_makespan_steps:.0f} / {r.max_makespan_steps} | "
            f"{r.engine_timed_s:.2f} | "
            f"{r.engine_compile_s:.1f} | {r.numpy_instances} in {r.numpy_timed_s:.1f} s | "
            f"{'yes' if r.tel_equal else 'NO'} ({r.tel_checked}) |"
        )
    return "\n".join(lines)


def solver_table(rows: list[SolverRow]) -> str:
    lines = [
        "| family | M | policy | n | batch | s/instance | compile s | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        status = r.status if not r.note else f"{r.status}: {r.note}"
        lines.append(
            f"| {r.family} | {r.M} | {r.policy} | {r.n} | {r.batch} | "
            f"{_fmt(r.s_per_instance)} | {_fmt(r.compile_s, 2)} | {status} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_offline", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small sizes (n = 200 with 1 and 64 instances; Phase 1 for n <= 50): a smoke test of every code path",
    )
    ap.add_argument(
        "--executor-only",
        action="store_true",
        help="part (a) only: the executor against the NumPy executor (about 4 minutes)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/offline_speed.json, or "
        "offline_speed_quick.json with --quick); the markdown goes to the "
        "same name with .md",
    )
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = _HERE / "results" / ("offline_speed_quick.json" if args.quick else "offline_speed.json")
    env = environment()
    log(
        f"backend {env['backend']}, {env['cpu_count']} CPUs, load average "
        f"{env['loadavg_at_start']}; policies {sorted(POLICIES)}"
    )
    t_start = time.perf_counter()
    cache: dict = {}
    # Part (b) first: its Sorted-F (Swap) orders of the real mix are reused by part (a).
    solver_rows, lp_note = ([], "") if args.executor_only else bench_solvers(args.quick, cache)
    exec_rows, oracles = bench_executor(args.quick, cache)
    total_s = time.perf_counter() - t_start
    env["loadavg_at_end"] = round(os.getloadavg()[0], 2)

    tel_ok = all(r.tel_equal for r in exec_rows)
    oracle_ok = all(c["equal"] for c in oracles)
    family = real_family()[0]
    target = QUICK_NUMPY_TARGET_S if args.quick else NUMPY_TARGET_S
    md = "\n".join(
        [
            f"# Offline engine speed{' (--quick)' if args.quick else ''}",
            "",
            f"{env['date']}; jax {env['jax']} on {env['backend']} ({env['cpu_count']} CPUs, "
            f"{env['machine']}, {env['platform']}), load average at start "
            f"{env['loadavg_at_start']}, at end {env['loadavg_at_end']}.",
            "",
            "## Executor: `instances.execute` against the one-instance NumPy executor",
            "",
            f"Instances: {family}, M = {REAL_M} tokens, unit steps; orders precomputed. Engine: "
            "instances / seconds of the second of two identical calls (compile s = first minus "
            "second; 0 where an earlier row compiled the same shapes). NumPy "
            "(`benchmarks/numpy_offline.py`): the same instances one at a time, "
            f"about {target:g} s of them; ratio = engine / NumPy instances/s. 'distinct': "
            "distinct instances in the batch (Sorted-F (Swap) orders only a few at large n; the "
            "batch repeats them, and copies share one makespan, so those rows escape the cost "
            "below and are not comparable with the others). The engine's batched loop runs until "
            "the batch's last instance is done "
            "(max makespan), so heavy-tailed lengths cost more steps in larger batches. TEL equal: "
            "engine TEL = NumPy TEL on the (k) instances both ran.",
            "",
            exec_table(exec_rows),
            "",
            f"NumPy (p, c) = plain-Python oracle's on {sum(c['instances'] for c in oracles)} "
            f"instances of n = {ORACLE_N} ({len(oracles)} orders): "
            f"{'equal' if oracle_ok else 'DIFFERENT'}"
            + (f" (oracle {np.mean([c['oracle_s_per_instance'] for c in oracles]):.2f} s/instance)" if oracles else "")
            + ".",
            f"Engine TEL = NumPy TEL: {'equal' if tel_ok else 'DIFFERENT'} in "
            f"{sum(r.tel_equal for r in exec_rows)} of {len(exec_rows)} rows.",
            "",
            "## Phase 1: seconds per instance to compute the order",
            "",
            f"Compiled once per (policy, n, batch) with `instances.compiled_orders`; s/instance = "
            f"one run of the compiled call / batch; compilation apart (about 0 where the same "
            f"policy, n and batch were compiled for the other family: M is traced, so the "
            f"executable is reused). A size is skipped when the "
            f"last run scaled by (n / n_prev)^k (k per policy, in the JSON) exceeds "
            f"{QUICK_SOLVER_LIMIT_S if args.quick else SOLVER_LIMIT_S:g} s. sorted_f_dp: dp_width "
            f"= M = {SMALL_M}. {lp_note}",
            "",
            solver_table(solver_rows),
            "",
            f"Total benchmark wall time {total_s:.0f} s.",
            "",
        ]
    )
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "quick": args.quick,
        "environment": env,
        "family": family,
        "M": REAL_M,
        "executor": [asdict(r) for r in exec_rows],
        "oracle_checks": oracles,
        "phase1": [asdict(r) for r in solver_rows],
        "phase1_exponents": EXPONENT,
        "lp_note": lp_note,
        "consistency": {"tel_equal": tel_ok, "oracle_equal": oracle_ok},
        "total_wall_s": total_s,
        "markdown": md,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    md_path = args.out.with_suffix(".md")
    md_path.write_text(md)
    log(f"wrote {args.out} and {md_path} ({total_s:.0f} s in all)")
    return 0 if tel_ok and oracle_ok else 1


if __name__ == "__main__":
    sys.exit(main())
