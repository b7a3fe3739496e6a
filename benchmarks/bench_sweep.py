"""Sweeps that compile once: a dp grid run one program per point against one program per size
bucket, and a second run with the compilation cache warm.

The grid is issue 30's: G in {4, 8, 12, 16, 24, 32} x B in {16, 32, 48, 64, 96, 128} x
{FCFS, BF-IO H = 0}, R = 64, 64 seeds x 2000 decode steps per point (72 points). Five
variants of the same `jaxsched.sweep.run_sweep`, each in a fresh process (so no variant
reuses another's compiled programs), in this order:
- "per point": `buckets=False`, every point its own program (the path before size buckets);
- "buckets": the default size buckets (`jaxsched.buckets`, at most 2x padded work);
- "buckets, policy switch": the same with FCFS and BF-IO in one program per bucket
  (`switch_policies=True`);
- "buckets, cold cache": the same with JAX's persistent compilation cache on, in an empty
  folder (what a first `jaxsched sweep` does);
- "buckets, warm cache": the same command again, the cache now filled.
Each reports its wall time, the programs it compiled (`jax.monitoring` backend-compile events,
count and seconds, less those loaded from the persistent cache; block programs, the scanned
step, counted apart, compiled or loaded) and the programs loaded from the persistent cache. The rows of every
variant must equal the per-point rows in every metric column, bit for
bit (the command exits 1 otherwise). The load average is recorded before and after. Every
process has one CPU device per core, as `jaxsched sweep` does.

Policies as values: the same file's second table runs FCFS and BF-IO H = 0 at (G, B, R) =
(16, 72, 64) over the same seeds and steps, once as two programs (one per policy) and once as
one program that switches between them by a traced index (`DPEngine.switch`, both policies'
runs vmapped together), each in a fresh process: compilation and simulation seconds of each.

    python -m benchmarks.bench_sweep [--quick] [--seeds 64] [--steps 2000] [--out FILE]
        [--variants NAME ...] [--no-switch-table]

--variants runs only the named variants, in the order given (the speed-up column and the
equality check are then against the first of them): on a GPU lease, `--seeds 1024 --variants
"buckets, cold cache" "buckets, warm cache" --no-switch-table` times the grid at 1,024 seeds per
point without the long per-point run. The JSON and markdown are rewritten after each variant
(marked incomplete until the end), so a run stopped by a time limit keeps what it finished.

--quick: G in {4, 8} x B in {16, 32}, 8 seeds x 200 steps (a smoke run). Writes JSON to --out
(default benchmarks/results/sweep_speed.json, or sweep_speed_quick.json) and the markdown table
beside it.
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
GRID = {
    "policy": ["fcfs", "bfio"],
    "num_workers": [4, 8, 12, 16, 24, 32],
    "slots_per_worker": [16, 32, 48, 64, 96, 128],
}
QUICK = {"policy": ["fcfs", "bfio"], "num_workers": [4, 8], "slots_per_worker": [16, 32]}
# name: (compilation cache, size buckets, policies switched in one program)
VARIANTS = {
    "per point": ("off", False, False),
    "buckets": ("off", True, False),
    "buckets, policy switch": ("off", True, True),
    "buckets, cold cache": ("cold", True, False),
    "buckets, warm cache": ("warm", True, False),
}


def worker(grid: dict, seeds: int, steps: int, buckets: bool, switch: bool, out: str) -> dict[str, Any]:
    """Run the sweep in this process; its timings and compilation counts."""
    import jax
    import jax.monitoring as mon

    from jaxsched.dp import DPConfig
    from jaxsched.sweep import run_sweep

    compiles: list[tuple[str, float]] = []
    hits = [0]

    def listen(event: str, duration: float, **kw) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append((str(kw.get("fun_name", "")), duration))

    def count(event: str, **kw) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            hits[0] += 1

    mon.register_event_duration_secs_listener(listen)
    mon.register_event_listener(count)
    t0 = time.perf_counter()
    run_sweep(
        DPConfig(num_steps=steps, pool_size=64),
        grid,
        range(seeds),
        out,
        progress=True,
        buckets=buckets,
        switch_policies=switch,
    )
    wall = time.perf_counter() - t0
    # A program loaded from the persistent cache records a (short) backend-compile event too.
    return {
        "wall_s": wall,
        "compiles": len(compiles) - hits[0],
        "block_programs": sum("run_block" in n for n, _ in compiles),
        "compile_s": sum(d for _, d in compiles),
        "cache_hits": hits[0],
        "jax": jax.__version__,
    }


def switch_worker(seeds: int, steps: int, switched: bool) -> dict[str, Any]:
    """FCFS and BF-IO at (16, 72, 64): two programs, or one switching program (see above)."""
    from jaxsched.dp import DPConfig, make_params
    from jaxsched.dp.engine import ENGINE
    from jaxsched.run import simulate, simulate_points

    configs = [DPConfig(num_steps=steps, policy=p) for p in ("fcfs", "bfio")]
    t0 = time.perf_counter()
    if switched:
        runs = [ENGINE.switch(c, make_params(c), ("fcfs", "bfio")) for c in configs]
        res = simulate_points(runs[0][0], [p for _, p in runs], range(seeds), warn=False)
    else:
        res = [simulate(c, make_params(c), range(seeds), warn=False) for c in configs]
    compile_s = res[0].compile_s if switched else sum(r.compile_s for r in res)
    wall = time.perf_counter() - t0
    digest = {k: r.metrics[k].tolist() for r in res for k in ("avg_imbalance_tokens", "tpot_s")}
    return {
        "wall_s": wall,
        "compile_s": compile_s,
        "simulate_s": wall - compile_s,
        "digest": json.dumps(digest, sort_keys=True),
    }


def _in_process(args: dict) -> dict[str, Any]:
    """Run a worker in a fresh process with no compilation cache and one device per core."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_sweep", "--worker", json.dumps(args)],
        env=env,
        cwd=_HERE.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker {args} failed ({proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_variant(name: str, grid: dict, seeds: int, steps: int, folder: Path, cache_dir: Path) -> dict[str, Any]:
    """One variant in a fresh process (see the module docstring)."""
    cache, buckets, switch = VARIANTS[name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    # One CPU device per core, as the command line sets up (jaxsched.cli.devices).
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    if cache != "off":
        # The persistent cache as the command line turns it on (jaxsched.cli.compile_cache).
        env.update(
            JAX_COMPILATION_CACHE_DIR=str(cache_dir),
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.1",
            JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1",
        )
    out = folder / f"{name.replace(' ', '_').replace(',', '')}.csv"
    arg = json.dumps(
        {"grid": grid, "seeds": seeds, "steps": steps, "buckets": buckets, "switch": switch, "out": str(out)}
    )
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_sweep", "--worker", arg],
        env=env,
        cwd=_HERE.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"variant {name!r} failed ({proc.returncode})")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res.update(variant=name, csv=str(out))
    return res


def _metric_rows(path: str) -> dict[str, dict[str, str]]:
    """{row key: {metric column: cell}}, the key prefixed with the row's grid point."""
    with open(path, newline="") as f:
        return {
            f"{r['point']} {r['key'][:8]}": {c: v for c, v in r.items() if c.endswith(("_mean", "_std", "_ci95"))}
            for r in csv.DictReader(f)
        }


def _table(results: list[dict], env: dict, grid: dict, seeds: int, steps: int) -> str:
    base = results[0]["wall_s"]
    n = len(grid["policy"]) * len(grid["num_workers"]) * len(grid["slots_per_worker"])
    lines = [
        f"{env['date']}; jax {results[0]['jax']} on {env.get('backend', 'cpu')}, {env['cpu_count']} CPUs; load average "
        f"{env['load_before']} before, {env['load_after']} after",
        "",
        f"dp grid: G in {grid['num_workers']} x B in {grid['slots_per_worker']} x "
        f"{grid['policy']} ({n} points), R = 64, {seeds} seeds x {steps} steps per point",
        "",
        "| variant | wall s | speed-up | programs compiled | block programs | compile s | loaded from cache |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['variant']} | {r['wall_s']:.1f} | {base / r['wall_s']:.2f}x | "
            f"{r['compiles']} | {r['block_programs']} | {r['compile_s']:.1f} | "
            f"{r['cache_hits']} |"
        )
    first = results[0]["variant"]
    lines += ["", f"speed-up: the first variant's ({first}) wall time over each one's."]
    lines += ["", f"rows equal to the {first} rows in every metric column: {env['rows_equal']}"]
    lines += [f"- {d}" for d in env["differences"]]
    return "\n".join(lines) + "\n"


def _switch_table(switch: dict, seeds: int, steps: int) -> str:
    lines = [
        "",
        f"FCFS and BF-IO H = 0 at (16, 72, 64), {seeds} seeds x {steps} steps each:",
        "",
        "| programs | wall s | compile s | simulate s |",
        "|---|---|---|---|",
    ]
    for name, r in switch.items():
        lines.append(f"| {name} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | {r['simulate_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_sweep", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 2 x 2 x 2 grid, 8 seeds x 200 steps")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per point (default 64)")
    ap.add_argument("--steps", type=int, default=None, help="decode steps (default 2000)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        metavar="NAME",
        help=f"the variants to run, in this order (default all: {', '.join(map(repr, VARIANTS))}); "
        "the speed-up and the equality check are against the first",
    )
    ap.add_argument("--no-switch-table", action="store_true", help="leave out the policy-switch table")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        w = json.loads(a.worker)
        if "switched" in w:
            print(json.dumps(switch_worker(w["seeds"], w["steps"], w["switched"])))
        else:
            print(json.dumps(worker(w["grid"], w["seeds"], w["steps"], w["buckets"], w["switch"], w["out"])))
        return 0
    seeds = a.seeds or (8 if a.quick else 64)
    steps = a.steps or (200 if a.quick else 2000)
    if seeds < 1 or steps < 1:
        ap.error("--seeds and --steps must be >= 1")
    grid = QUICK if a.quick else GRID
    out = a.out or _HERE / "results" / ("sweep_speed_quick.json" if a.quick else "sweep_speed.json")
    import datetime

    env = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    results: list[dict] = []
    switch: dict[str, dict] = {}
    env["backend"] = _backend()
    with tempfile.TemporaryDirectory() as tmp:
        folder, cache_dir = Path(tmp), Path(tmp) / "xla"
        for name in a.variants:
            print(f"== {name}", file=sys.stderr)
            results.append(_run_variant(name, grid, seeds, steps, folder, cache_dir))
            print(f"   {results[-1]['wall_s']:.1f} s, {results[-1]['compiles']} programs", file=sys.stderr)
            _compare_rows(results, env)
            # What a run stopped by a time limit leaves: the variants finished so far.
            _write(out, env, grid, seeds, steps, results, switch, final=False)
    if not a.no_switch_table:
        print("== policy switch", file=sys.stderr)
        switch = {
            name: _in_process({"seeds": seeds, "steps": steps, "switched": flag})
            for name, flag in (("two programs", False), ("one switching program", True))
        }
        env["switch_equal"] = len({r.pop("digest") for r in switch.values()}) == 1
    md = _write(out, env, grid, seeds, steps, results, switch, final=True)
    print(md)
    return 0 if env["rows_equal"] and env.get("switch_equal", True) else 1


def _backend() -> str:
    """The device the workers run on, in words (their JAX default backend and device kind)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import jax; d = jax.devices()[0]; print(jax.default_backend(), d.device_kind)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc.stdout.strip() or "unknown"


def _compare_rows(results: list[dict], env: dict) -> None:
    """Set env's differences and rows_equal: every variant's metric cells against the first's."""
    ref = _metric_rows(results[0]["csv"])
    env["differences"] = [
        f"{r['variant']}: {key} {col} {ref[key][col]} != {row.get(col)}"
        for r in results[1:]
        for key, row in _metric_rows(r["csv"]).items()
        for col in ref.get(key, {})
        if ref[key][col] != row.get(col)
    ][:20]
    env["rows_equal"] = not env["differences"] and all(_metric_rows(r["csv"]).keys() == ref.keys() for r in results[1:])


def _write(
    out: Path, env: dict, grid: dict, seeds: int, steps: int, results: list[dict], switch: dict, final: bool
) -> str:
    """Write the JSON and the markdown (marked incomplete unless `final`); the markdown."""
    env["load_after"] = [round(x, 2) for x in os.getloadavg()]
    env["complete"] = final
    rows = [{k: v for k, v in r.items() if k != "csv"} for r in results]
    md = _table(rows, env, grid, seeds, steps) + (_switch_table(switch, seeds, steps) if switch else "")
    if not final:
        md += "\nINCOMPLETE: the variants finished so far (the run is going on or was stopped).\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"env": env, "grid": grid, "seeds": seeds, "steps": steps, "results": rows, "switch": switch}
    for path, text in ((out, json.dumps(payload, indent=1)), (out.with_suffix(".md"), md)):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return md


if __name__ == "__main__":
    sys.exit(main())
