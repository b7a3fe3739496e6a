"""Speed of the dp engine (`jaxsched.dp.simulate`) against two one-seed NumPy baselines.

For each policy (fcfs, bfio with lookahead_steps 0) and shape (G, B) = (16, 72) with R = 64 and
(32, 72) with R = 128, on the `BurstGPTLike` workload with semantics "paper", the engine runs
1, 64 and 1024 seeds and each NumPy simulator runs seed 0 on the same request lengths
(`jaxsched.workload.materialize`):
- `benchmarks/numpy_dp.py` (column "numpy", ratio "ratio"): vectorized over the [G, B] slots
  per step, heaps and bisection in the greedy; the stronger baseline.
- `benchmarks/numpy_dp_loops.py` (column "loop numpy", ratio "ratio vs loop"): the research
  style, Python loops over workers per step and over workers and pool in the greedy; the
  baseline that the speed target names ("plain NumPy, the style of the paper's simulator").
All are timed in the same process, so the ratios compare like with like on whatever machine
runs the benchmark.

Engine timing: the first call compiles and warms up; the second, identical call is timed
(`simulate` returns numpy arrays, so its wall time includes all device work). "compile s" is
the first call's wall time minus the timed call's, i.e. compilation plus first-call overheads.
Each NumPy baseline first runs as many steps as the engine's 64-seed run (which also warms it
up), then a timed run long enough to last a few seconds; its request lengths are materialized
before the clock starts. As consistency checks, seed 0's `avg_imbalance_tokens` from that
engine run must equal both NumPy check runs' (exact integer sums over the same steps), and the
two check runs' `hist_loads` must be equal.

    python -m benchmarks.bench_dp [--quick] [--out benchmarks/results/dp_speed.json]

Writes the JSON results to --out (default `benchmarks/results/dp_speed.json`; with --quick,
`dp_speed_quick.json`) and the markdown table next to it under the same name with a .md suffix;
prints the table to stdout and progress to stderr. Exits 1 if a consistency check fails.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxsched
from benchmarks.numpy_dp import simulate_numpy
from benchmarks.numpy_dp_loops import simulate_loops
from jaxsched import kernels
from jaxsched.dp import simulate

_HERE = Path(__file__).resolve().parent

B = 72
POOL = {16: 64, 32: 128}  # R per G
POLICIES = ("fcfs", "bfio")
SEED_COUNTS = (1, 64, 1024)

# Engine decode steps per (policy, G, seeds), chosen from measured rates on a shared 2-core
# x86-64 machine so that each timed run takes roughly 1-10 s: the cost of a step grows with
# seeds, G and R, so larger batches get fewer steps. Runs are long enough to be dominated by the
# steady state, as the NumPy runs (thousands of steps of seed 0) are: the start-up steps cost
# more (valley fill's loop runs once per admission and its tail until the last seed of a chunk
# is done), and BF-IO with 1024 seeds ran 15% fewer seed-steps/s over 96 steps than over 480.
FULL_STEPS: dict[tuple[str, int], dict[int, int]] = {
    ("fcfs", 16): {1: 50_000, 64: 2_000, 1024: 800},
    ("fcfs", 32): {1: 30_000, 64: 1_000, 1024: 240},
    ("bfio", 16): {1: 30_000, 64: 1_000, 1024: 480},
    ("bfio", 32): {1: 10_000, 64: 800, 1024: 160},
}


def full_steps(policy: str, G: int, seeds: int) -> int:
    """Steps of a full run: FULL_STEPS for a listed seed count, else the nearest listed count's
    seed-steps spread over `seeds` (at least 50 steps, so the steady state dominates)."""
    table = FULL_STEPS[(policy, G)]
    if seeds in table:
        return table[seeds]
    near = min(table, key=lambda s: abs(np.log(s / seeds)))
    return max(50, table[near] * near // seeds)


# --quick: a smoke test of every code path in well under 30 s (compilation dominates).
QUICK_SEED_COUNTS = (8,)
QUICK_STEPS = {8: 100}
QUICK_SHAPES = (16,)

# The NumPy baselines' check runs have as many steps as this seed count's engine run, so that
# seed 0's metrics can be compared exactly.
CHECK_SEEDS = 64  # or the smallest seed count timed, when --seeds leaves 64 out
QUICK_CHECK_SEEDS = 8
# Wall time of each NumPy timed run (s), and a cap on its steps (the request arrays grow as R
# per step).
NUMPY_TARGET_S = 3.0
QUICK_NUMPY_TARGET_S = 0.3
NUMPY_MAX_STEPS = 200_000
# The one-seed baselines by name: NumpyRow.baseline and the JSON keys use these names.
BASELINES = {"vectorized": simulate_numpy, "loops": simulate_loops}


@dataclass
class EngineRow:
    """One engine measurement (times in s, rates per s)."""

    policy: str
    G: int
    B: int
    R: int
    seeds: int
    steps: int
    timed_s: float
    first_call_s: float
    compile_s: float
    seed_steps_per_s: float
    slot_steps_per_s: float
    seed0_avg_imbalance_tokens: float
    state_bytes_per_seed: int
    bytes_per_s: float


@dataclass
class NumpyRow:
    """One NumPy baseline measurement (seed 0)."""

    baseline: str  # a key of BASELINES
    policy: str
    G: int
    B: int
    R: int
    steps: int
    timed_s: float
    seed_steps_per_s: float
    check_steps: int
    avg_imbalance_tokens: float


def check_seed_count(seed_counts: tuple[int, ...]) -> int:
    """The seed count whose engine run is checked against the NumPy baselines (which run as
    many steps): CHECK_SEEDS when it is timed, else the smallest count timed (e.g. 1024 seeds
    on a GPU, where a 64-seed run would only measure launch latency)."""
    return CHECK_SEEDS if CHECK_SEEDS in seed_counts else min(seed_counts)


def log(msg: str) -> None:
    """Progress line on stderr (stdout carries only the table)."""
    print(f"[bench_dp {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_config(policy: str, G: int, steps: int) -> jaxsched.dp.DPConfig:
    """The benchmarked dp configuration for one (policy, G) and step count."""
    return jaxsched.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=POOL[G],
        lookahead_steps=0,
        policy=policy,
        semantics="paper",
        num_steps=steps,
        workload=jaxsched.BurstGPTLike(),
    )


def state_bytes_per_seed(config: jaxsched.dp.DPConfig) -> int:
    """Bytes of one run's state (every leaf of `DPState`, from its abstract shape).

    Every step reads the whole slot state at least once (loads, completions and the TPOT sums
    all touch every slot), so state bytes times seed-steps/s is a lower bound on the bytes the
    engine moves per second; the slots are almost all of it (12 bytes per slot at H = 0).
    """
    params = jaxsched.dp.make_params(config)
    shapes = jax.eval_shape(lambda: jaxsched.dp.ENGINE.init(config, params, np.uint32(0)))
    return int(sum(np.prod(x.shape, dtype=np.int64) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(shapes)))


# Memory-bandwidth probe: an elementwise pass over this many float32 (256 MiB read, 256 MiB
# written), far larger than any cache, so it runs at the machine's achievable DRAM bandwidth.
BANDWIDTH_ELEMENTS = 1 << 26
QUICK_BANDWIDTH_ELEMENTS = 1 << 24


def measure_bandwidth(elements: int, repeats: int = 5) -> float:
    """Achievable memory bandwidth under JAX, bytes/s: the best of `repeats` jitted
    `x + 1` passes over `elements` float32 (bytes read plus bytes written, as STREAM counts a
    copy). The input is donated, so each pass writes over the buffer it reads: a fresh 256 MiB
    output would be page-faulted in on every call and measure the kernel's page zeroing (9x
    slower here), not the memory. XLA spreads a fusion this large over every core, as it does
    the engine's."""
    f = jax.jit(lambda a: a + np.float32(1), donate_argnums=0)
    x = jax.block_until_ready(f(jax.device_put(np.ones(elements, np.float32))))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        x = jax.block_until_ready(f(x))
        best = min(best, time.perf_counter() - t0)
    return 2 * 4 * elements / best


def bench_engine(policy: str, G: int, seeds: int, steps: int, repeats: int) -> EngineRow:
    """Compile/warm with one call, then time `repeats` identical calls (best is kept)."""
    config = make_config(policy, G, steps)
    params = jaxsched.dp.make_params(config)
    seed_ids = np.arange(seeds)
    t0 = time.perf_counter()
    simulate(config, params, seed_ids)
    first = time.perf_counter() - t0
    timed = float("inf")
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = simulate(config, params, seed_ids)
        # simulate converts results to numpy, so the device work is finished here.
        timed = min(timed, time.perf_counter() - t0)
    assert result is not None
    rate = seeds * steps / timed
    state_bytes = state_bytes_per_seed(config)
    return EngineRow(
        policy=policy,
        G=G,
        B=B,
        R=POOL[G],
        seeds=seeds,
        steps=steps,
        timed_s=timed,
        first_call_s=first,
        compile_s=max(0.0, first - timed),
        seed_steps_per_s=rate,
        slot_steps_per_s=rate * G * B,
        seed0_avg_imbalance_tokens=float(result.metrics["avg_imbalance_tokens"][0]),
        state_bytes_per_seed=state_bytes,
        bytes_per_s=rate * state_bytes,
    )


def bench_numpy(
    baseline: str, policy: str, G: int, check_steps: int, target_s: float, repeats: int, seed: int = 0
) -> tuple[NumpyRow, np.ndarray]:
    """Time a NumPy simulator (a key of BASELINES) on seed `seed`'s request lengths.

    A first run over `check_steps` steps gives the metric for the consistency check and a rate
    estimate; the timed run then covers enough steps to last about `target_s` seconds, because
    the vectorized baseline does a 1000-step run in well under 0.1 s, too short to time. The
    lengths are materialized before the clock starts. Returns the row and the check run's
    hist_loads (int64 [check_steps, G], tokens).
    """
    simulator = BASELINES[baseline]
    R = POOL[G]
    config = make_config(policy, G, check_steps)
    params = jaxsched.dp.make_params(config)
    kw = dict(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        step_const_s=float(params.step_const_s),
        per_token_s=float(params.per_token_s),
    )

    def lengths(steps: int) -> tuple[np.ndarray, np.ndarray]:
        # Each admission tops the pool up by at most R requests (step 0 plus `steps` steps),
        # so this many can never run out.
        return jaxsched.workload.materialize(config.workload, seed, R * (steps + 2))

    prompt, output = lengths(check_steps)
    t0 = time.perf_counter()
    check = simulator(prompt=prompt, output=output, num_steps=check_steps, **kw)
    estimate = check_steps / (time.perf_counter() - t0)
    steps = int(min(max(check_steps, estimate * target_s), NUMPY_MAX_STEPS))
    prompt, output = lengths(steps)
    timed = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulator(prompt=prompt, output=output, num_steps=steps, **kw)
        timed = min(timed, time.perf_counter() - t0)
    row = NumpyRow(
        baseline=baseline,
        policy=policy,
        G=G,
        B=B,
        R=R,
        steps=steps,
        timed_s=timed,
        seed_steps_per_s=steps / timed,
        check_steps=check_steps,
        avg_imbalance_tokens=float(check["metrics"]["avg_imbalance_tokens"]),
    )
    return row, check["hist_loads"]


def _fmt_rate(x: float) -> str:
    """Rates with three significant digits and a k/M suffix."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    if x >= 1e3:
        return f"{x / 1e3:.3g}k"
    return f"{x:.3g}"


def markdown_table(rows: list[EngineRow], baselines: dict[tuple[str, str, int], NumpyRow], bandwidth: float) -> str:
    """The results table; the ratios are engine over each NumPy baseline's seed-steps/s.

    baselines: keyed by (baseline name, policy, G). bandwidth: the probe's bytes/s.
    """
    lines = [
        "| policy | G | B | seeds | engine seed-steps/s | numpy seed-steps/s | ratio | "
        "loop numpy seed-steps/s | ratio vs loop | slot-steps/s | state GB/s | of bandwidth | "
        "compile s | steps | timed s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vec = baselines[("vectorized", r.policy, r.G)]
        loop = baselines[("loops", r.policy, r.G)]
        lines.append(
            f"| {r.policy} | {r.G} | {r.B} | {r.seeds} | {_fmt_rate(r.seed_steps_per_s)} | "
            f"{_fmt_rate(vec.seed_steps_per_s)} | {r.seed_steps_per_s / vec.seed_steps_per_s:.1f}x | "
            f"{_fmt_rate(loop.seed_steps_per_s)} | {r.seed_steps_per_s / loop.seed_steps_per_s:.1f}x | "
            f"{r.slot_steps_per_s:.2e} | {r.bytes_per_s / 1e9:.2f} | "
            f"{100 * r.bytes_per_s / bandwidth:.0f}% | {r.compile_s:.1f} | {r.steps} | {r.timed_s:.2f} |"
        )
    return "\n".join(lines)


def policy_cost_ratios(rows: list[EngineRow]) -> list[dict[str, Any]]:
    """Cost of each non-FCFS policy per seed-step relative to FCFS at the same (G, seeds), from
    this run: FCFS seed-steps/s divided by the policy's (1.0 = as cheap as FCFS)."""
    fcfs = {(r.G, r.seeds): r.seed_steps_per_s for r in rows if r.policy == "fcfs"}
    return [
        {"policy": r.policy, "G": r.G, "seeds": r.seeds, "cost_vs_fcfs": fcfs[(r.G, r.seeds)] / r.seed_steps_per_s}
        for r in rows
        if r.policy != "fcfs" and (r.G, r.seeds) in fcfs
    ]


def interleaved_costs(rows: list[EngineRow], rounds: int) -> list[dict[str, Any]]:
    """Cost per seed-step of each non-FCFS policy against FCFS, timed in alternation.

    The main table times all FCFS rows, then all BF-IO rows, so a neighbour's load on this
    shared machine can fall on one policy only. Here, for every (G, seeds) measured with both,
    the two (already compiled) runs alternate `rounds` times and each keeps its fastest call:
    load that comes and goes hits both alike. Adds cost_vs_fcfs_interleaved to
    `policy_cost_ratios`' entries."""
    out = []
    by_key = {(r.policy, r.G, r.seeds): r for r in rows}
    for c in policy_cost_ratios(rows):
        pair = [by_key[("fcfs", c["G"], c["seeds"])], by_key[(c["policy"], c["G"], c["seeds"])]]
        best = [float("inf")] * 2
        for _ in range(rounds):
            for j, r in enumerate(pair):
                config = make_config(r.policy, r.G, r.steps)
                params = jaxsched.dp.make_params(config)
                t0 = time.perf_counter()
                simulate(config, params, np.arange(r.seeds))
                best[j] = min(best[j], time.perf_counter() - t0)
        rate = [r.seeds * r.steps / t for r, t in zip(pair, best)]
        out.append(dict(c, cost_vs_fcfs_interleaved=rate[0] / rate[1]))
        log(
            f"interleaved {c['policy']} vs fcfs G={c['G']} seeds={c['seeds']}: "
            f"{rate[0] / rate[1]:.2f}x (sequential {c['cost_vs_fcfs']:.2f}x)"
        )
    return out


def cost_table(ratios: list[dict[str, Any]]) -> str:
    """Markdown table of `policy_cost_ratios` (with the interleaved figure when present)."""
    both = all("cost_vs_fcfs_interleaved" in c for c in ratios)
    head = "| policy | G | seeds | cost per seed-step vs FCFS |"
    lines = [head + (" interleaved |" if both else ""), "|---|---|---|---|" + ("---|" if both else "")]
    for c in ratios:
        line = f"| {c['policy']} | {c['G']} | {c['seeds']} | {c['cost_vs_fcfs']:.2f}x |"
        lines.append(line + (f" {c['cost_vs_fcfs_interleaved']:.2f}x |" if both else ""))
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    """What the numbers depend on besides the code."""
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "device_kind": jax.devices()[0].device_kind,  # e.g. "NVIDIA H100 80GB HBM3"
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
        # which valley fill BF-IO H = 0 ran: the native CPU kernel or the XLA form
        "valley_fill": "native" if kernels.native.default_on() else "xla",
    }


def check_seed_option(ap: argparse.ArgumentParser, seeds: list[int] | None, quick: bool) -> None:
    """One usage error for a bad --seeds: counts must be >= 1 and --quick has its own."""
    if seeds is not None and (quick or min(seeds) < 1):
        ap.error("--seeds takes counts >= 1 and does not combine with --quick")


def environment_line(env: dict[str, Any]) -> str:
    """The first line of a benchmark's markdown: date, JAX, device (named when it is an
    accelerator), CPUs and load, without a final full stop."""
    kind = env.get("device_kind", "")
    device = f"{env['backend']} ({kind}; " if env["backend"] != "cpu" and kind else f"{env['backend']} ("
    return (
        f"{env['date']}; jax {env['jax']} on {device}{env['cpu_count']} CPUs, "
        f"{env['machine']}), load average at start {env['loadavg_at_start']}; valley fill "
        f"{env.get('valley_fill', 'xla')}"
    )


def write_report(out: Path, payload: dict[str, Any], md: str, ok: bool, log: Any) -> int:
    """The end of an engine-vs-reference benchmark: print the markdown table, write the JSON
    payload to `out` and the table next to it (.md), log a consistency failure; exit status."""
    print(md)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1, default=float))
    out.with_suffix(".md").write_text(md)
    if not ok:
        log("engine and reference DIFFER")
    return 0 if ok else 1


def bench_baselines(
    policy: str, G: int, check_steps: int, target_s: float, repeats: int
) -> tuple[dict[str, NumpyRow], bool]:
    """Both NumPy baselines on seed 0, by name; True if their check runs' hist_loads are equal."""
    rows: dict[str, NumpyRow] = {}
    hists: dict[str, np.ndarray] = {}
    for name in BASELINES:
        log(
            f"numpy ({name}) {policy} G={G} B={B} R={POOL[G]}: seed 0 ({check_steps}-step check "
            f"run, then a ~{target_s:g} s timed run)"
        )
        rows[name], hists[name] = bench_numpy(name, policy, G, check_steps, target_s, repeats)
        log(
            f"  {rows[name].seed_steps_per_s:,.0f} seed-steps/s ({rows[name].steps} steps in "
            f"{rows[name].timed_s:.2f} s)"
        )
    return rows, bool(np.array_equal(hists["vectorized"], hists["loops"]))


def consistency_check(row: EngineRow, bases: dict[str, NumpyRow], hist_equal: bool) -> dict[str, Any]:
    """Seed 0 of an engine run against both baselines' check runs over the same steps.

    avg_imbalance_tokens is an exact integer sum divided by the step count in all three, so it
    must agree to the last bit; hist_equal says whether the baselines' trajectories agree.
    """
    same = [
        bool(np.isclose(row.seed0_avg_imbalance_tokens, b.avg_imbalance_tokens, rtol=1e-12, atol=0.0))
        for b in bases.values()
    ]
    check = {
        "policy": row.policy,
        "G": row.G,
        "steps": row.steps,
        "engine_seed0_avg_imbalance_tokens": row.seed0_avg_imbalance_tokens,
        "numpy_avg_imbalance_tokens": bases["vectorized"].avg_imbalance_tokens,
        "loops_avg_imbalance_tokens": bases["loops"].avg_imbalance_tokens,
        "numpy_loops_hist_loads_equal": hist_equal,
        "equal": all(same) and hist_equal,
    }
    if not check["equal"]:
        log(
            f"  WARNING: inconsistent seed 0: engine avg_imbalance_tokens "
            f"{row.seed0_avg_imbalance_tokens!r}, numpy {check['numpy_avg_imbalance_tokens']!r}, "
            f"loops {check['loops_avg_imbalance_tokens']!r}; baselines' hist_loads equal: "
            f"{hist_equal}"
        )
    return check


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_dp", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="small sizes (G=16, 8 seeds, 100 steps): a smoke test under 30 s"
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/dp_speed.json, or "
        "dp_speed_quick.json with --quick so a smoke test never overwrites "
        "full results); the markdown table goes to the same name with .md",
    )
    ap.add_argument(
        "--repeats", type=int, default=1, help="timed runs per measurement after the warm-up (the fastest is kept)"
    )
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    ap.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        metavar="S",
        help=f"seed counts to time (default {' '.join(map(str, SEED_COUNTS))}); a count "
        "not in that list runs as many seed-steps as the nearest listed one "
        "(e.g. 16384 seeds on a GPU)",
    )
    ap.add_argument(
        "--shapes",
        nargs="+",
        type=int,
        choices=tuple(POOL),
        default=list(POOL),
        metavar="G",
        help=f"worker counts G to time (default: {' '.join(map(str, POOL))}; R = {POOL} per G)",
    )
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    check_seed_option(ap, args.seeds, args.quick)
    if args.quick and args.shapes != list(POOL):
        ap.error("--shapes does not combine with --quick (which times G = 16 only)")
    if args.out is None:
        args.out = _HERE / "results" / ("dp_speed_quick.json" if args.quick else "dp_speed.json")

    if args.quick:
        shapes, seed_counts, check_seeds = QUICK_SHAPES, QUICK_SEED_COUNTS, QUICK_CHECK_SEEDS
        np_target = QUICK_NUMPY_TARGET_S
        steps_for = lambda policy, G, S: QUICK_STEPS[S]
    else:
        shapes = tuple(dict.fromkeys(args.shapes))
        seed_counts = tuple(args.seeds) if args.seeds else SEED_COUNTS
        check_seeds = check_seed_count(seed_counts)
        np_target = NUMPY_TARGET_S
        steps_for = lambda policy, G, S: full_steps(policy, G, S)

    env = environment()
    log(f"backend {env['backend']}, {env['cpu_count']} CPUs, load average {env['loadavg_at_start']}")
    t_start = time.perf_counter()
    probe = QUICK_BANDWIDTH_ELEMENTS if args.quick else BANDWIDTH_ELEMENTS
    bandwidths = [measure_bandwidth(probe)]
    log(f"memory bandwidth probe: {bandwidths[0] / 1e9:.1f} GB/s")
    rows: list[EngineRow] = []
    baselines: dict[tuple[str, str, int], NumpyRow] = {}  # (baseline, policy, G)
    checks: list[dict[str, Any]] = []
    for policy in args.policies:
        for G in shapes:
            bases, hist_equal = bench_baselines(policy, G, steps_for(policy, G, check_seeds), np_target, args.repeats)
            baselines.update({(name, policy, G): b for name, b in bases.items()})
            for S in seed_counts:
                steps = steps_for(policy, G, S)
                log(f"engine {policy} G={G} B={B} R={POOL[G]}: {S} seeds x {steps} steps")
                row = bench_engine(policy, G, S, steps, args.repeats)
                rows.append(row)
                log(
                    f"  {row.seed_steps_per_s:,.0f} seed-steps/s ({row.timed_s:.2f} s timed, "
                    f"first call {row.first_call_s:.2f} s), "
                    f"{row.seed_steps_per_s / bases['vectorized'].seed_steps_per_s:.1f}x numpy, "
                    f"{row.seed_steps_per_s / bases['loops'].seed_steps_per_s:.1f}x loop numpy"
                )
                if S == check_seeds:
                    checks.append(consistency_check(row, bases, hist_equal))

    # The probe runs before and after the engines; the larger figure is the machine's
    # achievable bandwidth (a probe slowed by a neighbour's load would flatter the engines).
    bandwidths.append(measure_bandwidth(probe))
    bandwidth = max(bandwidths)
    log(f"memory bandwidth probe: {bandwidths[1] / 1e9:.1f} GB/s (using {bandwidth / 1e9:.1f})")
    table = markdown_table(rows, baselines, bandwidth)
    costs = interleaved_costs(rows, args.repeats)
    total_s = time.perf_counter() - t_start
    all_ok = all(c["equal"] for c in checks)
    md = "\n".join(
        [
            f"# dp engine speed{' (--quick)' if args.quick else ''}",
            "",
            f"{environment_line(env)}; workload BurstGPTLike, semantics paper, lookahead_steps 0.",
            "",
            table,
            "",
            "Seed-steps/s after compilation (best of "
            f"{args.repeats} timed call{'s' if args.repeats > 1 else ''} after one warm-up call); "
            "slot-steps/s = seed-steps/s * G * B; compile s = first call minus timed call. "
            "numpy: `numpy_dp.simulate_numpy` (vectorized over the [G, B] slots, heaps and bisection "
            "in the greedy); loop numpy: `numpy_dp_loops.simulate_loops` (Python loops over workers "
            "and pool, the research-simulator style); each on seed 0, one timed run of about "
            f"{np_target:g} s (steps in the JSON); ratio = engine / numpy and ratio vs loop = "
            "engine / loop numpy, from this run. "
            f"The check compares seed 0 of the engine's {check_seeds}-seed run with both NumPy "
            "simulators over the same steps, and the two simulators' hist_loads with each other.",
            "",
            f"Memory bandwidth: {bandwidth / 1e9:.1f} GB/s, the better of two probes (before "
            f"{bandwidths[0] / 1e9:.1f}, after {bandwidths[1] / 1e9:.1f}): a jitted `x + 1` over "
            f"{probe * 4 >> 20} MiB of float32, bytes read plus written. state GB/s = seed-steps/s * the "
            "bytes of one run's state (every step reads all of it at least once: a lower bound on "
            "the traffic); of bandwidth = state GB/s / memory bandwidth.",
            "",
            "Cost per seed-step relative to FCFS in this run (FCFS seed-steps/s / the policy's), "
            "from the table above and, interleaved, from the same two runs timed in alternation "
            f"({args.repeats} round{'s' if args.repeats > 1 else ''}, the fastest call of each; "
            "load that comes and goes on a shared machine then hits both policies alike):",
            "",
            cost_table(costs),
            "",
            "Seed-0 avg_imbalance_tokens, engine vs both NumPy baselines, and hist_loads, numpy vs "
            f"loop numpy: {'equal' if all_ok else 'DIFFERENT'} "
            f"in {len(checks)} of {len(checks)} configurations checked"
            + ("" if all_ok else f" ({sum(c['equal'] for c in checks)} equal)")
            + ".",
            f"Total benchmark wall time {total_s:.0f} s.",
            "",
        ]
    )
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "quick": args.quick,
        "repeats": args.repeats,
        "environment": env,
        "engine": [asdict(r) for r in rows],
        "numpy": [asdict(b) for b in baselines.values() if b.baseline == "vectorized"],
        "numpy_loops": [asdict(b) for b in baselines.values() if b.baseline == "loops"],
        "ratios": [
            {
                "policy": r.policy,
                "G": r.G,
                "seeds": r.seeds,
                "ratio": r.seed_steps_per_s / baselines[("vectorized", r.policy, r.G)].seed_steps_per_s,
                "ratio_vs_loops": r.seed_steps_per_s / baselines[("loops", r.policy, r.G)].seed_steps_per_s,
            }
            for r in rows
        ],
        "consistency_checks": checks,
        "memory_bandwidth_bytes_per_s": bandwidth,
        "memory_bandwidth_probes_bytes_per_s": bandwidths,
        "bandwidth_probe_elements": probe,
        "cost_vs_fcfs": costs,
        "total_wall_s": total_s,
        "markdown": md,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    md_path = args.out.with_suffix(".md")
    md_path.write_text(md)
    log(f"wrote {args.out} and {md_path} ({total_s:.0f} s in all)")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
