"""Size buckets beyond the dp grid: `jaxsched check theorems` and one representative sweep per
other engine, each run one program per point against one program per size bucket.

Every case runs twice, each time in a fresh process (so neither reuses the other's compiled
programs), one CPU device per core as the command line sets up, with no persistent
compilation cache: "per point" (`buckets=False` / `--no-buckets`, the path before size
buckets), then "buckets" (the default rule). Each reports its wall time and the programs it
compiled (`jax.monitoring` backend-compile events: all of them, and the block programs, the
scanned step, apart). The rows of both must agree bit for bit in every statistic column (the
command exits 1 otherwise). The load average is recorded before and after each case.

Cases (`CASES`):
- theorems: `check_theorems` on the full grid (111 runs of FCFS and BF-IO, Theorems 1-3) with
  --theorem-seeds seeds (default 4, the command's default; the issue's 32 with
  --theorem-seeds 32) and 48 measured lifetimes;
- one sweep per engine over the size fields it pads (`Engine.size_fields`), see `sweep_cases`.

    python -m benchmarks.bench_buckets [--only theorems,kv,...] [--theorem-seeds 4] [--quick]
                                       [--buckets-only] [--out FILE]

--buckets-only runs the bucketed variant alone (no ratio; rows not compared): the theorem
grid at 32 seeds, whose per-point run would take as long again.

--quick: the theorems' quick grid and each sweep with 2 seeds (a smoke run). Writes JSON to
--out (default benchmarks/results/bucket_speed.json, or bucket_speed_quick.json) and the
markdown table beside it; the cases run replace theirs in an existing file, the others stay
(each row carries its date).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
STAT_SUFFIXES = ("_mean", "_std", "_ci95")


def sweep_cases(quick: bool) -> dict[str, dict[str, Any]]:
    """{name: {engine, base (Config keywords), axes, seeds, what}}: one representative sweep per
    engine over its size fields, small enough that compilation matters as it does in practice."""
    s = 2 if quick else 16
    ns = [40, 60, 80, 100, 120, 160, 200]
    return {
        "offline": dict(
            engine="offline",
            base=dict(workload="uniform", num_requests=40),
            axes={"num_requests": ns, "policy": ["fcfs", "mcsf"]},
            seeds=s,
            what="FCFS and MC-SF, n of 40 to 200 requests (EC.4.2 uniform)",
        ),
        "interval": dict(
            engine="interval",
            base=dict(workload="lmsys", num_requests=40),
            axes={"num_requests": ns, "policy": ["amin", "al"]},
            seeds=s,
            what="A_min and A_l, n of 40 to 200 jobs (LMSYS lengths)",
        ),
        "kv": dict(
            engine="kv",
            base=dict(num_requests=400),
            axes={
                "table_size": [256, 384, 512, 768, 1024, 1536, 2048],
                "arrivals_per_step": [4, 8],
                "policy": ["wait", "fcfs"],
            },
            seeds=s,
            what="WAIT and FCFS, tables of 256 to 2048 slots x 4 or 8 arrivals per epoch, 400 requests",
        ),
        "budget": dict(
            engine="budget",
            base=dict(num_requests=400),
            axes={"table_size": [256, 384, 512, 768, 1024, 1536, 2048], "policy": ["sarathi", "vllm"]},
            seeds=s,
            what="Sarathi and vLLM, tables of 256 to 2048 requests, 400 requests",
        ),
        "network": dict(
            engine="network",
            base=dict(num_requests=400),
            axes={"agents": [2, 3, 4, 6, 8], "table_size": [256, 512, 1024]},
            seeds=s,
            what="parallel engines behind the fewest-tokens router, 2 to 8 "
            "agents x tables of 256 to 1024, 400 requests",
        ),
    }


def _compile_counter():
    import jax.monitoring as mon

    compiles: list[tuple[str, float]] = []

    def listen(event: str, duration: float, **kw) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append((str(kw.get("fun_name", "")), duration))

    mon.register_event_duration_secs_listener(listen)
    return compiles


def worker(case: str, spec: dict, buckets: bool, out: str, quick: bool) -> dict[str, Any]:
    """Run one case in this process; its wall time and compilation counts."""
    import jax

    compiles = _compile_counter()
    t0 = time.perf_counter()
    if case == "theorems":
        from jaxsched.dp.theorems import check_theorems

        check_theorems(
            out, quick=quick, seeds=spec["seeds"], progress=True, plots=False, bucket_waste=2.0 if buckets else None
        )
    else:
        from jaxsched.engine import get_engine
        from jaxsched.sweep import run_sweep

        engine = get_engine(spec["engine"])
        run_sweep(
            engine.Config(**spec["base"]), spec["axes"], range(spec["seeds"]), out, progress=True, buckets=buckets
        )
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "compiles": len(compiles),
        "block_programs": sum("run_block" in n for n, _ in compiles),
        "compile_s": sum(d for _, d in compiles),
        "jax": jax.__version__,
    }


def _run(case: str, spec: dict, buckets: bool, out: Path, quick: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    arg = json.dumps({"case": case, "spec": spec, "buckets": buckets, "out": str(out), "quick": quick})
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_buckets", "--worker", arg],
        env=env,
        cwd=_HERE.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"case {case} (buckets={buckets}) failed ({proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _stat_rows(path: Path, theorems: bool) -> dict[str, dict[str, str]]:
    """{row key: {statistic column: cell}} of a results file."""
    cols = (
        (lambda c: c.endswith(STAT_SUFFIXES) or c in ("round_gap_max", "full_at_end"))
        if theorems
        else (lambda c: c.endswith(STAT_SUFFIXES))
    )
    with open(path, newline="") as f:
        return {r["key"]: {c: v for c, v in r.items() if cols(c)} for r in csv.DictReader(f)}


def _differences(a: Path, b: Path, theorems: bool) -> list[str]:
    ra, rb = _stat_rows(a, theorems), _stat_rows(b, theorems)
    if ra.keys() != rb.keys():
        return [f"row keys differ: {len(ra)} against {len(rb)} rows"]
    return [f"{k[:12]} {c}: {v} != {rb[k][c]}" for k, row in ra.items() for c, v in row.items() if rb[k][c] != v][:20]


def _table(results: list[dict], env: dict) -> str:
    lines = [
        f"jax {env['jax']}, {env['cpu_count']} CPUs; each case in fresh processes, per point then buckets",
        "",
        "| case | what | date | variant | wall s | speed-up | programs | block programs | "
        "compile s | load before / after | rows equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for name in ("per point", "buckets"):
            if name not in r:
                continue
            v = r[name]
            speed = f"{r['per point']['wall_s'] / v['wall_s']:.2f}x" if "per point" in r else "-"
            lines.append(
                f"| {r['case']} | {r['what']} | {r.get('date', '')} | {name} | "
                f"{v['wall_s']:.1f} | "
                f"{speed} | {v['compiles']} | {v['block_programs']} | "
                f"{v['compile_s']:.1f} | {v['load_before']} / {v['load_after']} | "
                f"{'-' if 'per point' not in r else not r['differences']} |"
            )
    diffs = [f"- {r['case']}: {d}" for r in results for d in r["differences"]]
    return "\n".join(lines + ([""] + diffs if diffs else [])) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_buckets", description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated cases (default all)")
    ap.add_argument("--theorem-seeds", type=int, default=4, help="seeds per theorem point")
    ap.add_argument("--quick", action="store_true", help="small versions (a smoke run)")
    ap.add_argument(
        "--buckets-only", action="store_true", help="run only the bucketed variant (e.g. the theorem grid at 32 seeds)"
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        w = json.loads(a.worker)
        print(json.dumps(worker(w["case"], w["spec"], w["buckets"], w["out"], w["quick"])))
        return 0
    cases = {
        "theorems": dict(seeds=a.theorem_seeds, what=f"{'quick' if a.quick else 'full'} grid, {a.theorem_seeds} seeds"),
        **sweep_cases(a.quick),
    }
    if a.only:
        unknown = set(a.only.split(",")) - set(cases)
        if unknown:
            ap.error(f"--only: unknown cases {sorted(unknown)}; known: {sorted(cases)}")
        cases = {k: v for k, v in cases.items() if k in a.only.split(",")}
    if a.theorem_seeds < 2:
        ap.error("--theorem-seeds must be >= 2")
    out = a.out or _HERE / "results" / ("bucket_speed_quick.json" if a.quick else "bucket_speed.json")
    import datetime

    import jax

    env = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
    }
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, spec in cases.items():
            r: dict[str, Any] = {"case": case, "what": spec["what"]}
            paths = {}
            variants = (("buckets", True),) if a.buckets_only else (("per point", False), ("buckets", True))
            for name, buckets in variants:
                print(f"== {case}: {name}", file=sys.stderr)
                paths[name] = Path(tmp) / f"{case}_{name.replace(' ', '_')}"
                target = paths[name] if case == "theorems" else paths[name].with_suffix(".csv")
                before = [round(x, 2) for x in os.getloadavg()]
                r[name] = _run(case, spec, buckets, target, a.quick)
                r[name].update(load_before=before, load_after=[round(x, 2) for x in os.getloadavg()])
                print(f"   {r[name]['wall_s']:.1f} s, {r[name]['compiles']} programs", file=sys.stderr)
            csvs = [p / "results.csv" if case == "theorems" else p.with_suffix(".csv") for p in paths.values()]
            r["differences"] = [] if a.buckets_only else _differences(*csvs, theorems=case == "theorems")
            results.append(r)
    for r in results:
        r["date"] = env["date"]
        if a.buckets_only:
            r["case"] += " (buckets only)"
    if out.exists():
        # A run of some cases (--only) replaces those cases in the file and keeps the others.
        kept = [r for r in json.loads(out.read_text())["results"] if r["case"] not in {x["case"] for x in results}]
        results = kept + results
    md = _table(results, env)
    print(md)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"env": env, "results": results}, indent=1))
    out.with_suffix(".md").write_text(md)
    return 0 if all(not r["differences"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
