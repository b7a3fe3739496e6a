"""Quality of the BF-IO (H = 0) assignment kernels against exact optima.

For N instances of each family of `benchmarks/instances.py` ("uniform", "burst", "ties"), the
exact optimum J* comes from the MILP of `tests/reference/exact_io.py` (cached in
`benchmarks/results/exact_cache_<family>_<N>_<seed>.npz`, checked against a digest of the
instances, so reruns skip the solves). Then every kernel variant of `kernels.BFIO_VARIANTS`
(name -> fn(loads int32[G], free int32[G], sizes int32[R], valid bool[R]) -> (worker, rank,
converged)), or plain valley fill when that registry does not exist, runs under
jax.jit(jax.vmap(.)) over the instances, and two NumPy baselines run one instance at a time:
FCFS (the first U pool requests in queue order fill workers in index order) and LPT (the U
largest requests, largest first, each to the lightest worker with a free slot).

Kernels run on the real number of workers of each instance (instances are grouped by G, one
compilation per G): padding workers would change the objective of a kernel that scores J.

Reported per family and method: the fraction solved exactly (J == J*); the aggregate excess
sum(J - J*) / sum(J*); the per-instance relative excess (J - J*) / J*, mean and p99, over the
instances with J* > 0 (J* = 0 happens and would make it infinite); the excess as a share of
load, sum(J - J*) / sum(total post-admission load of the optimum); infeasible outputs (wrong
count, slot overflow, invalid entry: these would be kernel bugs); the fraction reporting
convergence; and the kernel time per instance: the best of --repeats timed calls of the
vmapped kernel over each G group (after a compiling call), summed over groups, divided by N.

    python -m benchmarks.bench_kernel_quality [--quick] [--n 1000] [--seed 0] [--jobs 2]

Writes `benchmarks/results/kernel_quality.md` and `.json` (with --quick:
`kernel_quality_quick.*`), prints the tables to stdout and progress to stderr.
Exit status 1 if some kernel output is infeasible or beats a proven optimum (a solver bug).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks import instances as inst_mod
from benchmarks.instances import EXTRA_FAMILIES, FAMILIES, R_MAX, Instances
from tests.reference import exact_io

_HERE = Path(__file__).resolve().parent
RESULTS = _HERE / "results"
Kernel = Callable[..., tuple[Any, Any, Any]]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------
# Exact optima (cached)


def _solve_one(args: tuple) -> tuple[int, np.ndarray, float, int]:
    """(J*, worker, seconds, status) of one instance; status 1 = not proven within the limit."""
    loads, free, sizes, valid, time_limit = args
    t0 = time.perf_counter()
    try:
        J, worker = exact_io.solve_milp(loads, free, sizes, valid, time_limit=time_limit)
        status = 0
    except exact_io.NotProvenOptimal as e:
        J, worker = e.incumbent if e.incumbent is not None else (-1, np.full(len(sizes), -1))
        status = 1
    return int(J), np.asarray(worker, np.int32), time.perf_counter() - t0, status


def exact_optima(inst: Instances, jobs: int, time_limit: float) -> dict[str, np.ndarray]:
    """J* [N], optimal worker [N, R_MAX], MILP seconds [N] and status [N] (0 = proven),
    from the cache file when its digest matches these instances, else solved and cached."""
    N = len(inst)
    path = RESULTS / f"exact_cache_{inst.family}_{N}_{inst.seed}.npz"
    digest = inst.digest()
    if path.is_file():
        with np.load(path) as z:
            if str(z["digest"]) == digest:
                _log(f"[{inst.family}] exact optima from {path.name}")
                return {k: z[k] for k in ("J_star", "worker", "solve_s", "status")}
        _log(f"[{inst.family}] {path.name} is for other instances; solving again")
    tasks = [(*inst.instance(i), time_limit) for i in range(N)]
    t0 = time.perf_counter()
    if jobs > 1:
        # spawn, not fork: this process has JAX (and its threads) loaded.
        with mp.get_context("spawn").Pool(jobs) as pool:
            out = pool.map(_solve_one, tasks, chunksize=8)
    else:
        out = [_solve_one(t) for t in tasks]
    _log(f"[{inst.family}] solved {N} MILPs in {time.perf_counter() - t0:.1f} s ({jobs} jobs)")
    res = dict(
        J_star=np.array([o[0] for o in out], np.int64),
        worker=np.stack([o[1] for o in out]).astype(np.int32),
        solve_s=np.array([o[2] for o in out]),
        status=np.array([o[3] for o in out], np.int8),
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, digest=np.array(digest), **res)
    return res


# ------------------------------------------------------------------------------------------
# Methods


def fcfs(loads: np.ndarray, free: np.ndarray, sizes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The first U valid requests in queue order fill the free slots of worker 0, then 1, ..."""
    worker = np.full(sizes.shape[0], -1, np.int32)
    slots = np.repeat(np.arange(free.shape[0]), free)  # one entry per free slot
    idx = np.flatnonzero(valid)[: slots.shape[0]]
    worker[idx] = slots[: idx.shape[0]]
    return worker


def lpt(loads: np.ndarray, free: np.ndarray, sizes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The U largest valid requests (ties: earliest first), largest first, each to the lightest
    worker with a free slot (ties: lowest index)."""
    worker = np.full(sizes.shape[0], -1, np.int32)
    U = exact_io.admitted_count(free, valid)
    idx = np.flatnonzero(valid)
    order = idx[np.lexsort((idx, -sizes[idx]))][:U]
    L, c = loads.astype(np.int64).copy(), free.astype(np.int64).copy()
    for i in order:
        g = int(np.argmin(np.where(c > 0, L, np.iinfo(np.int64).max)))
        worker[i] = g
        L[g] += sizes[i]
        c[g] -= 1
    return worker


def kernel_variants() -> dict[str, Kernel]:
    """kernels.BFIO_VARIANTS, or plain valley fill (always converged) if it does not exist."""
    import jax.numpy as jnp

    from jaxsched import kernels

    variants = getattr(kernels, "BFIO_VARIANTS", None)
    if variants:
        return dict(variants)
    return {"vf": lambda *a: (*kernels.valley_fill(*a), jnp.bool_(True))}


def run_kernel(fn: Kernel, inst: Instances, repeats: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(worker [N, R_MAX], converged [N], seconds per instance, compile seconds) of one kernel,
    vmapped over each group of instances with the same number of workers."""
    import jax
    import jax.numpy as jnp

    def wrapped(loads, free, sizes, valid):
        w, r, conv = fn(loads, free, sizes, valid)
        return w, jnp.asarray(conv, bool)

    N = len(inst)
    worker = np.full((N, R_MAX), -1, np.int32)
    conv = np.zeros(N, bool)
    run_s = compile_s = 0.0
    for G, idx in inst.by_num_workers():
        f = jax.jit(jax.vmap(wrapped))
        args = [
            jnp.asarray(inst.loads[idx, :G]),
            jnp.asarray(inst.free[idx, :G]),
            jnp.asarray(inst.sizes[idx]),
            jnp.asarray(inst.valid[idx]),
        ]
        t0 = time.perf_counter()
        out = jax.block_until_ready(f(*args))
        first = time.perf_counter() - t0
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = jax.block_until_ready(f(*args))
            best = min(best, time.perf_counter() - t0)
        run_s += best
        compile_s += max(first - best, 0.0)
        worker[idx] = np.asarray(out[0])
        conv[idx] = np.asarray(out[1])
    return worker, conv, run_s / N, compile_s


def run_numpy(fn: Callable, inst: Instances) -> tuple[np.ndarray, float]:
    """(worker [N, R_MAX], seconds per instance) of a one-instance NumPy baseline."""
    worker = np.full((len(inst), R_MAX), -1, np.int32)
    t0 = time.perf_counter()
    for i in range(len(inst)):
        worker[i] = fn(*inst.instance(i))
    return worker, (time.perf_counter() - t0) / len(inst)


# ------------------------------------------------------------------------------------------
# Scoring


def score(inst: Instances, worker: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(J [N], infeasible [N] bool) of worker arrays."""
    N = len(inst)
    J = np.zeros(N, np.int64)
    bad = np.zeros(N, bool)
    for i in range(N):
        L, c, s, v = inst.instance(i)
        bad[i] = exact_io.check_feasible(c, s, v, worker[i]) is not None
        J[i] = exact_io.objective(L, c, s, worker[i])
    return J, bad


def total_load(inst: Instances, worker: np.ndarray) -> np.ndarray:
    """sum_g L'_g [N] after admitting `worker`."""
    return np.array(
        [
            int(inst.instance(i)[0].astype(np.int64).sum()) + int(inst.sizes[i][worker[i] >= 0].astype(np.int64).sum())
            for i in range(len(inst))
        ]
    )


def quality(J: np.ndarray, J_star: np.ndarray, load: np.ndarray, ok: np.ndarray) -> dict[str, float]:
    """Quality figures over the instances `ok` (proven optimum, feasible output)."""
    J, J_star, load = J[ok], J_star[ok], load[ok]
    ex = J - J_star
    pos = J_star > 0
    rel = ex[pos] / J_star[pos]
    return dict(
        n=int(ok.sum()),
        exact=float(np.mean(ex == 0)),
        agg_excess=float(ex.sum() / max(J_star.sum(), 1)),
        rel_excess_mean=float(rel.mean()) if rel.size else float("nan"),
        rel_excess_p99=float(np.percentile(rel, 99)) if rel.size else float("nan"),
        excess_load_share=float(ex.sum() / max(load.sum(), 1)),
        mean_excess_tokens=float(ex.mean()),
        max_excess_tokens=int(ex.max()) if ex.size else 0,
    )


def evaluate_family(family: str, N: int, seed: int, jobs: int, time_limit: float, repeats: int) -> dict[str, Any]:
    """Everything measured for one family (JSON-ready)."""
    t0 = time.perf_counter()
    inst = inst_mod.generate(family, N, seed)
    gen_s = time.perf_counter() - t0
    ex = exact_optima(inst, jobs, time_limit)
    J_star, proven = ex["J_star"], ex["status"] == 0
    load = total_load(inst, ex["worker"])
    lb = np.array([exact_io.lower_bound_h0(*inst.instance(i)) for i in range(N)])
    U = np.array([exact_io.admitted_count(inst.free[i], inst.valid[i]) for i in range(N)])
    P = inst.valid.sum(axis=1)
    fam: dict[str, Any] = dict(
        family=family,
        n=N,
        seed=seed,
        digest=inst.digest(),
        generate_s=gen_s,
        unproven=int((~proven).sum()),
        J_star_mean=float(J_star[proven].mean()),
        J_star_median=float(np.median(J_star[proven])),
        J_star_zero=float(np.mean(J_star[proven] == 0)),
        lower_bound_tight=float(np.mean(J_star[proven] == lb[proven])),
        load_mean=float(load.mean()),
        U_mean=float(U.mean()),
        pool_mean=float(P.mean()),
        selection_share=float(np.mean(P > U)),
        milp_s_mean=float(ex["solve_s"].mean()),
        milp_s_p99=float(np.percentile(ex["solve_s"], 99)),
        milp_s_max=float(ex["solve_s"].max()),
        methods={},
    )
    if (lb[proven] > J_star[proven]).any():
        raise AssertionError(f"[{family}] the lower bound exceeds a proven optimum")

    runs: list[tuple[str, str, np.ndarray, np.ndarray | None, float, float]] = []
    for name, fn in kernel_variants().items():
        worker, conv, per_s, comp_s = run_kernel(fn, inst, repeats)
        runs.append((name, "kernel", worker, conv, per_s, comp_s))
        _log(f"[{family}] {name}: {per_s * 1e6:.1f} us/instance, compile {comp_s:.1f} s")
    for name, fn in (("fcfs", fcfs), ("lpt", lpt)):
        worker, per_s = run_numpy(fn, inst)
        runs.append((name, "numpy", worker, None, per_s, 0.0))

    for name, kind, worker, conv, per_s, comp_s in runs:
        J, bad = score(inst, worker)
        better = proven & ~bad & (J < J_star)
        q = quality(J, J_star, load, proven & ~bad)
        q.update(
            kind=kind,
            infeasible=int(bad.sum()),
            beats_optimum=int(better.sum()),
            converged=float(conv.mean()) if conv is not None else None,
            us_per_instance=per_s * 1e6,
            compile_s=comp_s,
        )
        fam["methods"][name] = q
    return fam


# ------------------------------------------------------------------------------------------
# Report


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if np.isfinite(x) else "n/a"


def _pct3(x: float) -> str:
    return f"{100 * x:.3g}%" if np.isfinite(x) else "n/a"


def markdown(res: dict[str, Any]) -> str:
    """The report tables."""
    fams = res["families"]
    names = list(fams[0]["methods"])
    out = [f"# Kernel quality against exact optima (N = {res['n']} per family, seed {res['seed']})", ""]
    out.append(
        "| method | exact: "
        + " / ".join(f["family"] for f in fams)
        + " | aggregate excess: "
        + " / ".join(f["family"] for f in fams)
        + " |"
    )
    out.append("|---|---|---|")
    for m in names:
        ex = " / ".join(_pct(f["methods"][m]["exact"]) for f in fams)
        ag = " / ".join(_pct3(f["methods"][m]["agg_excess"]) for f in fams)
        out.append(f"| {m} | {ex} | {ag} |")
    for f in fams:
        out += [
            "",
            f"## {f['family']}",
            "",
            f"N = {f['n']}; J* mean {f['J_star_mean']:.1f}, median {f['J_star_median']:.0f}, "
            f"J* = 0 in {_pct(f['J_star_zero'])}; lower bound tight in "
            f"{_pct(f['lower_bound_tight'])}; mean total load {f['load_mean']:.0f}; mean U "
            f"{f['U_mean']:.2f} of a mean pool of {f['pool_mean']:.2f} (pool > U in "
            f"{_pct(f['selection_share'])}); MILP {1e3 * f['milp_s_mean']:.1f} ms mean, "
            f"{1e3 * f['milp_s_p99']:.0f} ms p99, {1e3 * f['milp_s_max']:.0f} ms max; "
            f"unproven {f['unproven']}.",
            "",
            "| method | exact | aggregate excess | rel. excess mean | rel. excess p99 | "
            "excess / load | mean / max excess (tokens) | infeasible | converged | us / instance |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m, q in f["methods"].items():
            conv = _pct(q["converged"]) if q["converged"] is not None else "-"
            t = f"{q['us_per_instance']:.2f}" if q["kind"] == "kernel" else f"({q['us_per_instance']:.0f}, numpy)"
            out.append(
                f"| {m} | {_pct(q['exact'])} | {_pct3(q['agg_excess'])} | "
                f"{_pct3(q['rel_excess_mean'])} | {_pct3(q['rel_excess_p99'])} | "
                f"{_pct3(q['excess_load_share'])} | {q['mean_excess_tokens']:.2f} / "
                f"{q['max_excess_tokens']} | {q['infeasible']} | {conv} | {t} |"
            )
    out += [
        "",
        "Kernel times: jit(vmap) over the instances with the same G, best of "
        f"{res['repeats']} calls after compiling, summed over G groups, per instance; "
        "NumPy baselines run one instance at a time (not comparable). "
        f"{res['env']['cpu_count']} CPUs, load average {res['env']['loadavg']} at start.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_kernel_quality", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 instances per family")
    ap.add_argument("--n", type=int, default=1000, help="instances per family (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--families",
        nargs="+",
        default=list(FAMILIES),
        choices=FAMILIES + EXTRA_FAMILIES,
        help=f"default: {' '.join(FAMILIES)}",
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="MILP processes")
    ap.add_argument("--time-limit", type=float, default=10.0, help="MILP seconds per instance")
    ap.add_argument("--repeats", type=int, default=5, help="timed kernel calls (best kept)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (.md written beside it)")
    a = ap.parse_args(argv)
    N = 100 if a.quick else a.n
    out = a.out or RESULTS / ("kernel_quality_quick.json" if a.quick else "kernel_quality.json")

    import jax

    t0 = time.perf_counter()
    res: dict[str, Any] = dict(
        n=N,
        seed=a.seed,
        repeats=a.repeats,
        quick=a.quick,
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        env=dict(
            jax=jax.__version__,
            backend=jax.default_backend(),
            python=platform.python_version(),
            cpu_count=os.cpu_count(),
            loadavg=[round(x, 2) for x in os.getloadavg()],
            machine=platform.machine(),
        ),
        families=[],
    )
    for fam in a.families:
        res["families"].append(evaluate_family(fam, N, a.seed, a.jobs, a.time_limit, a.repeats))
    res["wall_s"] = time.perf_counter() - t0
    md = markdown(res)
    print(md)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    out.with_suffix(".md").write_text(md)
    _log(f"wrote {out} and {out.with_suffix('.md')} in {res['wall_s']:.1f} s")
    bad = [
        (f["family"], m)
        for f in res["families"]
        for m, q in f["methods"].items()
        if q["infeasible"] or q["beats_optimum"]
    ]
    if bad:
        _log(f"FAILED: infeasible outputs or optima beaten: {bad}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
