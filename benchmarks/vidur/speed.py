"""Simulated requests per second: Vidur (one process per seed) against jaxsched's budget engine
(seeds vmapped), on the same Poisson stream configuration.

    python -m benchmarks.vidur.speed [--quick] [--out DIR] [--name STEM] [--requests N]
        [--seeds 1,64,1024] [--vidur-seeds R] [--schedulers sarathi,vllm] [--time-limit SECONDS]
    python -m benchmarks.vidur.speed --vidur-json FILE [--seeds ...] [--jax-calls C] [...]

Workload: compare.py's Poisson stream (Poisson(512) prompt and Poisson(128) decode tokens at
load 0.6 of eq. (2.3)'s capacity at b = 512), N requests per seed, the same batch time,
caps and schedulers as the agreement run. Vidur runs as it is used: one process per seed,
replaying jaxsched's request list of that seed (seeds 0..R-1, the first R of jaxsched's), with
jaxsched's batch time installed as its predictor; a timer inside the process splits its wall
time into start-up (interpreter, imports, argument parsing) and simulation (building the
simulator and its requests, the event loop, writing the metrics). jaxsched runs
`jaxsched.run.simulate` over S = 1, 64, 1024 seeds; its first call at each S is timed apart
(compilations counted with jax.monitoring), the later ones are simulation only, and the rates
and the ratio to Vidur come from the simulation time (on an accelerator as on CPU).

Interleaved rounds: each round runs one Vidur seed, then jaxsched at every S, so both see the
same machine load; `uptime` is recorded around every measurement. Simulated requests per
second = requests completed (all seeds) / simulation wall time; Vidur's per-seed rate is its
rate at any S (it does not batch seeds). Every jaxsched call is checked to have finished all
S x N requests (`all_finished`). Results: OUT/STEM.md and OUT/STEM.json (STEM speed, or
speed_quick with --quick), rewritten after every measurement: a run stopped part way leaves
the measurements it made, `complete: false` and the call that was running. A call whose
seeds would not fit in the accelerator's memory runs in seed chunks (recorded as
`seed_chunk`); one that runs out of memory anyway, or whose projected time would pass
--time-limit (s from the start), is not run and is listed with its reason ("skipped").
Without Vidur it prints harness.SKIP_MESSAGE and exits 0.

--vidur-json FILE reuses the Vidur runs (per scheduler, per seed, with their uptime and the
machine that ran them) of an earlier run's speed.json instead of running Vidur, so it needs
no Vidur; only jaxsched runs, --jax-calls times at each S (default 3; the first compiles).
The requests per seed, the schedulers (a subset may be asked), the table size and the
workload must be those of the reused run; --requests, --schedulers and --table-size default
to them. The report names the machine that measured Vidur: the x Vidur ratio is then across
machines. Default STEM speed_reuse (the reused file is never overwritten). On a GPU machine,
from the repository root (jaxsched's dependencies installed there; Vidur not needed):

    python -m benchmarks.vidur.speed --vidur-json benchmarks/results/vidur/speed.json \\
        --seeds 1024,16384,65536 --jax-calls 2 --time-limit 480 --name speed_gpu_reuse --out OUT
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import harness
from .harness import VidurPaths

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "vidur"
# N = 1000 keeps 1024 seeds x N (about a minute per call here) and the whole run within ~10 min.
FULL = dict(requests=1000, seeds=(1, 64, 1024), vidur_seeds=3, schedulers=("sarathi", "vllm"))
QUICK = dict(requests=200, seeds=(1, 16, 64), vidur_seeds=2, schedulers=("sarathi",))
# jaxsched's ring slots Q: enough for the requests in system at load 0.6 (every run checks
# that nothing overflowed: `all_finished`; at Q = 128 one vllm seed of 1024 rejected an
# arrival); the step's work grows with Q.
TABLE_SIZE = 256
LOAD_LIMIT = 1.5  # 1-minute load above which a figure is marked "unconfirmed" (house rule)
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
# Share of the accelerator's memory that one call's seeds may take by the engine's estimate
# (`peak_bytes`); XLA's temporaries and the metrics need the rest. Beyond it: seed chunks.
MEMORY_FRACTION = 0.5
# What a reused Vidur record must share with this run: --requests and --table-size, and the
# workload of compare.py (rate_per_s to rounding).
REUSE_ARGS = dict(requests="--requests", table_size="--table-size")
WORKLOAD_FIELDS = ("prefill_mean", "decode_mean", "load", "budget", "max_requests", "rate_per_s")
VIDUR_RUN_FIELDS = (
    "seed",
    "startup_s",
    "simulation_s",
    "loop_s",
    "completed",
    "all_finished",
    "uptime_before",
    "uptime_after",
)

# Run inside Vidur's interpreter from its source root (this folder on PYTHONPATH): vidur.main
# with the jaxsched predictor installed and a timer around each phase. The metrics are written
# here rather than at exit so that their time is measured; the exit hook is removed first.
VIDUR_TIMED = """
import atexit, json, os, sys, time
t0 = time.perf_counter()
import vidur_predictor
from vidur.config import SimulationConfig
from vidur.simulator import Simulator
from vidur.utils.random import set_seeds
vidur_predictor.install(json.loads(os.environ[vidur_predictor.ENV_SPEC]))
config = SimulationConfig.create_from_cli_args()
set_seeds(config.seed)
t1 = time.perf_counter()
sim = Simulator(config)
atexit.unregister(sim._write_output)
t2 = time.perf_counter()
sim.run()
t3 = time.perf_counter()
sim._write_output()
t4 = time.perf_counter()
print("JAXSCHED_TIMES " + json.dumps(dict(imports_s=t1 - t0, build_s=t2 - t1, loop_s=t3 - t2, write_s=t4 - t3)))
"""


# ------------------------------------------------------------------------------------ pure helpers


def requests_per_second(completed: float, wall_s: float) -> float:
    """Simulated requests per second: requests completed (summed over seeds) / wall time (s).
    ValueError unless completed >= 0 and wall_s > 0."""
    if not completed >= 0 or not wall_s > 0:
        raise ValueError(f"need completed >= 0 and wall_s > 0, got {completed!r}, {wall_s!r}")
    return float(completed) / float(wall_s)


def load_1min(uptime_line: str) -> float:
    """The 1-minute load average of an `uptime` line ('... load average: 4.60, 5.37, 7.15')."""
    tail = uptime_line.rsplit("load average", 1)[-1].lstrip("s:")
    return float(tail.replace(",", " ").split()[0])


def confirmed(uptimes: list[str], limit: float = LOAD_LIMIT) -> bool:
    """Whether every `uptime` line around a measurement has a 1-minute load <= limit."""
    return all(load_1min(u) <= limit for u in uptimes)


def schedule(vidur_seeds: int, sizes: tuple[int, ...]) -> list[tuple[str, int]]:
    """The interleaved order of the runs: per round r, ("vidur", r) then ("jax", S) for every S
    in sizes. A jaxsched entry's first occurrence is its compiling call."""
    out = []
    for r in range(vidur_seeds):
        out.append(("vidur", r))
        out += [("jax", s) for s in sizes]
    return out


def median(xs: list[float]) -> float:
    """Median of a non-empty list (nan when empty)."""
    return float(statistics.median(xs)) if xs else float("nan")


def seed_chunk(n_seeds: int, per_seed_bytes: int, device_bytes: int | None, fraction: float = MEMORY_FRACTION):
    """Seeds per vmapped chunk for a call over n_seeds: None (all at once, `simulate`'s default
    on an accelerator) when n_seeds x per_seed_bytes fits in fraction x device_bytes or the
    device memory is unknown (None), else the most seeds that fit (at least 1)."""
    if device_bytes is None:
        return None
    fit = max(1, int(fraction * device_bytes // max(1, per_seed_bytes)))
    return None if n_seeds <= fit else fit


def projected_s(log: list[dict], n_seeds: int, n: int) -> float | None:
    """Expected wall time (s) of the next jaxsched call over n_seeds seeds of n requests: the
    simulation time of the fastest earlier call at the same S; else S x n requests at the best
    rate of the calls so far plus their longest compile (optimistic where the rate still grows
    with S, as on an accelerator); None before any call."""
    jax_runs = [r for r in log if r["kind"] == "jax"]
    same = [r["wall_s"] - r["compile_s"] for r in jax_runs if r["seeds"] == n_seeds]
    if same:
        return min(same)
    if not jax_runs:
        return None
    best = max(r["completed"] / max(r["wall_s"] - r["compile_s"], 1e-9) for r in jax_runs)
    return n_seeds * n / best + max(r["compile_s"] for r in jax_runs)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether an exception from a `simulate` call is the accelerator (or host) running out of
    memory (XLA's RESOURCE_EXHAUSTED)."""
    return isinstance(err, MemoryError) or "RESOURCE_EXHAUSTED" in str(err) or "out of memory" in str(err).lower()


# ------------------------------------------------------------------------------------ runs


def uptime() -> str:
    """The `uptime` line (load averages), or one built from /proc/loadavg where there is no
    `uptime` command."""
    try:
        line = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        line = ""
    if "load average" in line:
        return line
    loads = Path("/proc/loadavg").read_text().split()[:3]
    return f"{time.strftime('%H:%M:%S')} (/proc/loadavg) load average: {', '.join(loads)}"


def environment() -> dict:
    """The machine this process measures on: {"machine": a one-line description, cpu_cores,
    cpu_model, backend (jax's default), devices (their kinds), device_count, device_memory_bytes
    (None where unknown, as on CPU), platform, python, jax, jaxlib}."""
    import platform

    import jax

    try:
        import jaxlib

        jaxlib_version = getattr(jaxlib, "__version__", None)
    except ImportError:
        jaxlib_version = None
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    cpu_model = platform.processor() or None
    try:
        names = [x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("model name")]
        cpu_model = names[0].split(":", 1)[1].strip() if names else cpu_model
    except OSError:
        pass
    backend = jax.default_backend()
    cores = f"{os.cpu_count()} CPU cores" + (f" ({cpu_model})" if cpu_model else "")
    machine = cores if backend == "cpu" else f"{len(devices)} x {', '.join(kinds)} ({backend}), {cores}"
    return dict(
        machine=f"{machine}, jax {jax.__version__} on {backend}",
        cpu_cores=os.cpu_count(),
        cpu_model=cpu_model,
        backend=backend,
        devices=kinds,
        device_count=len(devices),
        device_memory_bytes=device_memory_bytes(),
        platform=platform.platform(),
        python=platform.python_version(),
        jax=jax.__version__,
        jaxlib=jaxlib_version,
    )


def device_memory_bytes() -> int | None:
    """The first device's memory limit (bytes) as its allocator reports it; None on CPU or where
    the device does not say."""
    import jax

    if jax.default_backend() == "cpu":
        return None
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except (AttributeError, NotImplementedError, RuntimeError):  # a backend without memory statistics
        return None
    return int(stats["bytes_limit"]) if "bytes_limit" in stats else None


class CompileCounter:
    """Counts XLA backend compilations and their seconds (jax.monitoring events)."""

    def __init__(self) -> None:
        import jax.monitoring

        self.count, self.seconds = 0, 0.0
        jax.monitoring.register_event_duration_secs_listener(self._on)

    def _on(self, event: str, duration: float, **_kw) -> None:
        if event == COMPILE_EVENT:
            self.count += 1
            self.seconds += float(duration)

    def snapshot(self) -> tuple[int, float]:
        return self.count, self.seconds


def poisson_rate() -> float:
    """compare.py's Poisson arrival rate (requests/s): POISSON_LOAD of eq. (2.3)'s capacity
    b / t_b (tokens/s) at b = BUDGET over the mean request size m_p + m_d (tokens)."""
    from jaxsched.budget import capacity_tokens_per_s

    from .compare import BUDGET, PAPER, POISSON_LENGTHS, POISSON_LOAD

    return POISSON_LOAD * capacity_tokens_per_s(BUDGET, **PAPER) / sum(POISSON_LENGTHS)


def jax_run(n: int, scheduler: str, table_size: int = TABLE_SIZE):
    """(config, params) of compare.py's Poisson workload with N requests under `scheduler`, the
    horizon long enough for every request to finish (as in compare.run_jaxsched), Q slots."""
    from jaxsched.budget import BudgetConfig, make_params
    from jaxsched.budget.config import enough_steps
    from jaxsched.workload import Independent, Poisson

    from .compare import PAPER, POISSON_LENGTHS, Caps, policy_params

    rate = poisson_rate()
    law = Independent(Poisson(POISSON_LENGTHS[0]), Poisson(POISSON_LENGTHS[1]), name="poisson")
    horizon = 1.25 * n / rate + 120.0
    cfg = BudgetConfig(workload=(law,), policy=scheduler, horizon_s=horizon, num_requests=n, table_size=table_size)
    cfg = enough_steps(cfg, [rate], **PAPER)
    return cfg, make_params(cfg, rates=[rate], **policy_params(scheduler, Caps()), **PAPER)


def time_jax(cfg, params, n_seeds: int, counter: CompileCounter, chunk: int | None = None) -> dict:
    """One `simulate` call over seeds 0..n_seeds-1 (in chunks of `chunk` seeds, None: its
    default): wall and compile time (s), compilations, requests completed (departures, all
    seeds), and whether every run finished all its cfg.num_requests requests."""
    from jaxsched.run import simulate

    c0, s0 = counter.snapshot()
    before = uptime()
    t0 = time.perf_counter()
    res = simulate(cfg, params, range(n_seeds), warn=False, seed_chunk=chunk)
    wall = time.perf_counter() - t0
    after = uptime()
    c1, s1 = counter.snapshot()
    m = res.metrics
    completed = int(np.sum(m["num_departed"]))
    done = bool(np.all(m["requests_end"] == 0) and np.all(m["done"] > 0) and np.all(m["overflowed"] == 0))
    return dict(
        seeds=n_seeds,
        seed_chunk=chunk,
        wall_s=wall,
        compile_s=float(res.compile_s),
        compilations=c1 - c0,
        backend_compile_s=s1 - s0,
        completed=completed,
        all_finished=done and len(m["num_departed"]) == n_seeds and completed == n_seeds * cfg.num_requests,
        uptime_before=before,
        uptime_after=after,
    )


def jax_seed_chunk(cfg, n_seeds: int) -> int | None:
    """`seed_chunk` for a call over n_seeds on this machine's first device: None on CPU (where
    `simulate` chunks to its per-step working set) and wherever the seeds fit in
    MEMORY_FRACTION of the device memory by the engine's `peak_bytes` estimate."""
    from jaxsched.engine import engine_of

    return seed_chunk(n_seeds, engine_of(cfg).peak_bytes(cfg, False), device_memory_bytes())


def time_vidur(paths: VidurPaths, scheduler: str, csv_path: Path, out_dir: Path, n: int) -> dict:
    """One Vidur process replaying `csv_path`: process wall time, its phases (VIDUR_TIMED),
    start-up = wall - simulation, and the requests in its request_metrics.csv."""
    from .compare import PAPER, Caps, scheduler_args

    args = scheduler_args(scheduler, csv_path, out_dir, Caps())
    before = uptime()
    proc, wall = harness.run_vidur_process(paths, ["-c", VIDUR_TIMED], args, dict(model="paper", **PAPER), scheduler)
    after = uptime()
    line = [x for x in proc.stdout.splitlines() if x.startswith("JAXSCHED_TIMES ")]
    if not line:
        raise RuntimeError(f"Vidur {scheduler}: no timing line in its output:\n{proc.stdout[-2000:]}")
    phases = json.loads(line[-1].split(" ", 1)[1])
    found = harness.vidur_metrics_csv(out_dir)
    completed = int(harness.read_vidur_requests(found)["id"].size) if found else 0
    sim = phases["build_s"] + phases["loop_s"] + phases["write_s"]
    return dict(
        wall_s=wall,
        startup_s=wall - sim,
        simulation_s=sim,
        completed=completed,
        all_finished=completed == n,
        uptime_before=before,
        uptime_after=after,
        **phases,
    )


# ------------------------------------------------------------------------------------ measurement


def measure(
    n: int,
    sizes: tuple[int, ...],
    rounds: int,
    scheduler: str,
    table_size: int,
    *,
    paths: VidurPaths | None = None,
    work: Path | None = None,
    reused: list[dict] | None = None,
    origin: dict | None = None,
    deadline: float | None = None,
    on_update=None,
) -> dict:
    """One scheduler's cell {"scheduler", "runs" (in order, with their load), "summary"
    (`summarize`), "skipped"}: the interleaved rounds of `schedule`, Vidur from `paths`; or,
    with `reused` (Vidur's run records of an earlier run, measured on origin["machine"]),
    `rounds` rounds of jaxsched at every S and no Vidur. deadline (time.perf_counter() s):
    a jaxsched call whose `projected_s` would end past it is skipped; so are calls at S or more
    after one at S ran out of memory. on_update(cell, running) is called before each
    measurement (running: what starts) and after it (running None)."""
    from jaxsched.budget import request_stream

    counter = CompileCounter()
    cfg, params = jax_run(n, scheduler, table_size)
    order = schedule(rounds, sizes) if reused is None else [("jax", x) for _ in range(rounds) for x in sizes]
    log, seen, oom_at = [dict(r, reused=True) for r in reused or []], set(), None
    cell = dict(scheduler=scheduler, runs=log, summary=summarize(log, n, sizes, origin), skipped=[])
    update = on_update or (lambda cell, running: None)
    for kind, x in order:
        if kind == "vidur":
            stream = request_stream(cfg, params, x, n + 64)
            if stream["id"].size != n:
                raise RuntimeError(f"seed {x}: {stream['id'].size} requests in the stream, expected {n}")
            csv_path = harness.stream_to_vidur_csv(work / f"{scheduler}_seed{x}.csv", stream)
            update(cell, dict(kind="vidur", scheduler=scheduler, seed=x))
            rec = dict(kind="vidur", seed=x, **time_vidur(paths, scheduler, csv_path, work / f"{scheduler}_{x}", n))
            print(f"  {scheduler} Vidur seed {x}: {rec['wall_s']:.2f} s wall, loop {rec['loop_s']:.2f} s", flush=True)
        else:
            proj, now = projected_s(log, x, n), time.perf_counter()
            reason = None
            if oom_at is not None and x >= oom_at:
                reason = f"not run: the call at S = {oom_at} ran out of memory"
            elif deadline is not None and proj is not None and now + proj > deadline:
                reason = f"not run: projected {proj:,.1f} s with {max(0.0, deadline - now):,.1f} s of --time-limit left"
            chunk = jax_seed_chunk(cfg, x)
            if reason is None:
                update(cell, dict(kind="jax", scheduler=scheduler, seeds=x, seed_chunk=chunk, projected_s=proj))
                try:
                    rec = dict(kind="jax", first_call=x not in seen, **time_jax(cfg, params, x, counter, chunk))
                except Exception as err:  # only running out of memory is recorded and passed
                    if not is_out_of_memory(err):
                        raise
                    oom_at = x if oom_at is None else min(oom_at, x)
                    reason = "out of memory: " + (str(err).strip().splitlines() or [type(err).__name__])[0][:400]
            if reason is not None:
                cell["skipped"].append(dict(seeds=x, seed_chunk=chunk, projected_s=proj, reason=reason))
                print(f"  {scheduler} jaxsched S={x}: {reason}", flush=True)
                update(cell, None)
                continue
            seen.add(x)
            chunked = f", chunks of {chunk}" if chunk else ""
            print(
                f"  {scheduler} jaxsched S={x}: {rec['wall_s']:.2f} s (compile {rec['compile_s']:.2f} s{chunked})"
                + ("" if rec["all_finished"] else " NOT all finished"),
                flush=True,
            )
        log.append(rec)
        cell["summary"] = summarize(log, n, sizes, origin)
        update(cell, None)
    return cell


def summarize(log: list[dict], n: int, sizes: tuple[int, ...], origin: dict | None = None) -> list[dict]:
    """Table rows: Vidur per seed (medians over its processes; with `origin`, runs reused from
    an earlier run on origin["machine"]) and jaxsched per S (compile from its first call,
    simulation = median wall of the later calls, or the first call's wall minus compile time
    when it ran only once); rates and the ratio to Vidur's event-loop rate (None without Vidur
    runs). An S without calls (yet) has runs = 0 and no rate."""
    v = [r for r in log if r["kind"] == "vidur"]
    rows, v_rate = [], None
    if v:
        v_loop = median([r["loop_s"] for r in v])
        v_sim = median([r["simulation_s"] for r in v])
        v_rate = requests_per_second(n, v_loop)
        row = dict(
            simulator="Vidur",
            seeds="1 per process",
            runs=len(v),
            startup_s=median([r["startup_s"] for r in v]),
            compile_s=None,
            compilations=None,
            simulation_s=v_sim,
            loop_s=v_loop,
            completed=n,
            all_finished=all(r["all_finished"] for r in v),
            rate_per_s=v_rate,
            rate_sim_per_s=requests_per_second(n, v_sim),
            ratio=1.0,
            confirmed=confirmed([u for r in v for u in (r["uptime_before"], r["uptime_after"])]),
        )
        if origin is not None:
            row.update(reused=True, measured_on=origin["machine"], source=origin["source"])
        rows.append(row)
    for s in sizes:
        j = [r for r in log if r["kind"] == "jax" and r["seeds"] == s]
        if not j:
            rows.append(dict(simulator="jaxsched", seeds=s, runs=0, completed=0, rate_per_s=None, ratio=None))
            continue
        first, warm = j[0], j[1:]
        sim = median([r["wall_s"] for r in warm]) if warm else first["wall_s"] - first["compile_s"]
        rate = requests_per_second(first["completed"], sim)
        rows.append(
            dict(
                simulator="jaxsched",
                seeds=s,
                runs=len(j),
                startup_s=None,
                compile_s=first["compile_s"],
                compilations=first["compilations"],
                seed_chunk=first.get("seed_chunk"),
                simulation_s=sim,
                loop_s=None,
                completed=first["completed"],
                all_finished=all(r["all_finished"] for r in j),
                warm_compilations=sum(r["compilations"] for r in warm),
                rate_per_s=rate,
                rate_sim_per_s=rate,
                ratio=None if v_rate is None else rate / v_rate,
                confirmed=confirmed([u for r in j for u in (r["uptime_before"], r["uptime_after"])]),
            )
        )
    return rows


# ------------------------------------------------------------------------------------ report

TABLE_HEAD = (
    "simulator",
    "seeds",
    "runs",
    "start-up / compile (s)",
    "simulation wall (s)",
    "requests completed",
    "simulated requests/s",
    "x Vidur",
    "load",
)


def fmt(x, spec: str) -> str:
    """x formatted with `spec`, or '-' for None."""
    return "-" if x is None else format(x, spec)


def table_row(r: dict) -> tuple:
    """One line of the speed table."""
    if r["runs"] == 0:
        return (r["simulator"], r["seeds"], 0, "-", "not run", "-", "-", "-", "-")
    if r["simulator"] == "Vidur":
        name = "Vidur (reused)" if r.get("reused") else "Vidur"
        first = f"{r['startup_s']:.2f} start-up"
        sim = f"{r['loop_s']:.3f} loop ({r['simulation_s']:.3f} with build + write)"
        rate = f"{r['rate_per_s']:,.0f} ({r['rate_sim_per_s']:,.0f})"
    else:
        name = "jaxsched"
        first = f"{r['compile_s']:.2f} compile ({r['compilations']} compilations)"
        sim = f"{r['simulation_s']:.3f}" + (f" (chunks of {r['seed_chunk']})" if r.get("seed_chunk") else "")
        rate = f"{r['rate_per_s']:,.0f}"
    load = "ok" if r["confirmed"] else "unconfirmed"
    done = f"{r['completed']:,}" + ("" if r["all_finished"] else " (NOT all finished)")
    return (name, r["seeds"], r["runs"], first, sim, done, rate, fmt(r["ratio"], ",.1f"), load)


def render(report: dict) -> str:
    """STEM.md from the report (either kind: Vidur measured here, or reused)."""
    s = report["settings"]
    origin = report.get("vidur_reused")
    title = "# Simulated requests per second: jaxsched's budget engine against Vidur"
    out = [title + (" (Vidur's rates reused from another machine)" if origin else ""), ""]
    if not report.get("complete", True):
        running = report.get("running")
        out += [
            "**Incomplete**: the run stopped (or is still running) before its last measurement"
            + (f"; running then: `{json.dumps(running)}`" if running else "")
            + ".",
            "",
        ]
    out += [
        f"Command: `{report['command']}`. Vidur commit {report['vidur_commit']}, one replica, jaxsched's batch time "
        f"(eq. (2.3)) installed as its predictor. Workload: a Poisson stream of {s['requests']} requests per seed "
        f"(Poisson({s['prefill_mean']}) prompt, Poisson({s['decode_mean']}) decode tokens, {s['rate_per_s']:.3f} "
        f"requests/s = load {s['load']}), b = {s['budget']}, M = {s['max_requests']}, jaxsched's Q = "
        f"{s['table_size']}; " + ("jaxsched's machine" if origin else "machine") + f": {s['machine']}.",
        "",
    ]
    if origin:
        same = origin["machine"] == s["machine"]
        where = (
            f"measured in an earlier run on a machine recorded as this one, **{origin['machine']}**, at another time"
            if same
            else f"measured on another machine: **{origin['machine']}**"
        )
        across = (
            "a ratio across two runs that were not interleaved (their loads differ)"
            if same
            else "a cross-machine ratio: jaxsched's rate on this machine over Vidur's rate on that one"
        )
        out += [
            f"**Vidur was not run here.** Its runs ({origin['runs']} processes per scheduler) are reused from "
            f"`{origin['source']}` (command `{origin['command']}`), {where} (uptime before: "
            f"`{origin['uptime_before']}`; after: `{origin['uptime_after']}`). jaxsched ran here, on {s['machine']}. "
            f"The x Vidur column is therefore {across}.",
            "",
        ]
    out += [
        "Vidur: one process per seed (how it runs), replaying jaxsched's request list of that seed; start-up = "
        "process wall minus simulation; its rate counts the event loop only (in brackets: with building the "
        "simulator and writing its metrics). It does not batch seeds, so its rate at any S is its per-seed rate. "
        "jaxsched: `jaxsched.run.simulate` over S seeds; compile = its first call's compile time (XLA "
        "compilations counted with jax.monitoring); simulation wall = median of the later calls (no compilation; "
        "the first call's wall minus its compile time when it ran once). Rate = requests completed over all seeds "
        "/ simulation wall; x Vidur = that over Vidur's loop rate"
        + (" (reused)" if origin else " in the same interleaved run")
        + f". Medians over the runs; 'unconfirmed': a 1-minute load above {LOAD_LIMIT} around a run.",
        "",
        f"uptime before: `{report['uptime_before']}`; after: `{report['uptime_after']}`. "
        f"Total wall {report['total_wall_s']:.0f} s.",
        "",
    ]
    for cell in report["cells"]:
        out += [f"## {cell['scheduler']}", ""]
        out += [harness.markdown_table(TABLE_HEAD, [table_row(r) for r in cell["summary"]]), ""]
        runs = [r for r in cell["runs"] if not (origin and r["kind"] == "vidur")]
        pairs = [(load_1min(r["uptime_before"]), load_1min(r["uptime_after"])) for r in runs]
        loads = ", ".join(f"{b:.2f}/{e:.2f}" for b, e in pairs)
        mine = "jaxsched's runs" if origin else "each run"
        out += [f"1-minute load before/after {mine}, in run order: {loads or '-'}.", ""]
        # One line per S: each of its --jax-calls calls is skipped, and the first reason tells.
        first_skip = {k["seeds"]: k for k in reversed(cell.get("skipped", []))}
        for S in sorted(first_skip):
            out += [f"- S = {S}: {first_skip[S]['reason']}."]
        out += [""] if cell.get("skipped") else []
    return "\n".join(out)


def write_report(report: dict, out: Path, stem: str) -> Path:
    """Write OUT/STEM.json and OUT/STEM.md (each replaced whole, so a reader never sees half a
    file); the .md path."""
    out.mkdir(parents=True, exist_ok=True)
    for suffix, text in ((".json", json.dumps(report, indent=1, default=float)), (".md", render(report))):
        tmp = out / f".{stem}{suffix}.tmp"
        tmp.write_text(text)
        tmp.replace(out / f"{stem}{suffix}")
    return out / f"{stem}.md"


# ------------------------------------------------------------------------------------ reuse


def read_vidur_record(path: Path) -> dict:
    """The Vidur side of an earlier run's STEM.json: {"source" (path as given), "command",
    "vidur_commit", "settings", "machine" (the environment's one-line description, or
    settings["machine"] in records that have no environment), "environment", "uptime_before",
    "uptime_after", "runs" (processes per scheduler), "cells" {scheduler: [Vidur run
    records]}}. A record that itself reused Vidur passes on the machine of its origin.
    ValueError naming the file and the missing or inconsistent field."""

    def need(d, key: str, where: str):
        if not isinstance(d, dict) or key not in d:
            raise ValueError(f"--vidur-json {path}: no field {where}{key}")
        return d[key]

    try:
        rec = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"--vidur-json {path}: not a readable speed JSON ({err})") from err
    settings = need(rec, "settings", "")
    for k in (*REUSE_ARGS, *WORKLOAD_FIELDS):
        need(settings, k, "settings.")
    n = settings["requests"]
    origin = rec.get("vidur_reused") or {}
    cells = {}
    for i, c in enumerate(need(rec, "cells", "")):
        name = need(c, "scheduler", f"cells[{i}].")
        runs = [r for r in need(c, "runs", f"cells[{i}].") if r.get("kind") == "vidur"]
        if not runs:
            raise ValueError(f"--vidur-json {path}: cells[{i}] ({name}) has no Vidur run (kind 'vidur')")
        for j, r in enumerate(runs):
            for k in VIDUR_RUN_FIELDS:
                need(r, k, f"cells[{i}] ({name}) Vidur run {j}: ")
        stored = [r for r in c.get("summary", []) if r.get("simulator") == "Vidur"]
        rate = summarize(runs, n, ())[0]["rate_per_s"]
        if stored and not np.isclose(stored[0]["rate_per_s"], rate, rtol=1e-9, atol=0.0):
            raise ValueError(
                f"--vidur-json {path}: cells[{i}] ({name}) summary Vidur rate_per_s {stored[0]['rate_per_s']!r} "
                f"is not that of its runs ({rate!r} = {n} requests / median loop_s)"
            )
        cells[name] = runs
    env = rec.get("environment") or {}
    return dict(
        source=str(path),
        command=origin.get("command", rec.get("command", "unknown")),
        vidur_commit=rec.get("vidur_commit", "unknown"),
        settings=settings,
        machine=origin.get("machine") or env.get("machine") or settings.get("machine") or "unknown machine",
        environment=origin.get("environment", env),
        uptime_before=origin.get("uptime_before", rec.get("uptime_before", "unknown")),
        uptime_after=origin.get("uptime_after", rec.get("uptime_after", "unknown")),
        runs=max(len(v) for v in cells.values()) if cells else 0,
        cells=cells,
    )


def reuse_mismatch(record: dict, values: dict, schedulers: tuple[str, ...], workload: dict) -> str | None:
    """Why `record` (read_vidur_record) cannot be reused for this run, naming the field, or
    None: values {"requests", "table_size"} must equal its settings, every scheduler must have
    Vidur runs there, and the workload fields (WORKLOAD_FIELDS of this code's compare.py) must
    be its own (rate_per_s to 1e-9 relative)."""
    src, settings = record["source"], record["settings"]
    for k, flag in REUSE_ARGS.items():
        if values[k] != settings[k]:
            return (
                f"{flag} {values[k]} does not match settings.{k} = {settings[k]} of the reused run {src} "
                f"(Vidur's rate there is for {k} {settings[k]}; give {flag} {settings[k]} or measure Vidur)"
            )
    for name in schedulers:
        if name not in record["cells"]:
            return (
                f"--schedulers: {name!r} has no Vidur runs in the reused run {src} "
                f"(it has {', '.join(record['cells'])})"
            )
    for k in WORKLOAD_FIELDS:
        mine, theirs = workload[k], settings[k]
        same = np.isclose(mine, theirs, rtol=1e-9, atol=0.0) if k == "rate_per_s" else mine == theirs
        if not same:
            return f"settings.{k} = {theirs!r} of the reused run {src} differs from this workload's {k} = {mine!r}"
    return None


def workload_settings() -> dict:
    """compare.py's Poisson workload as the report's settings record it."""
    from .compare import BUDGET, MAX_REQUESTS, POISSON_LENGTHS, POISSON_LOAD

    return dict(
        prefill_mean=POISSON_LENGTHS[0],
        decode_mean=POISSON_LENGTHS[1],
        rate_per_s=poisson_rate(),
        load=POISSON_LOAD,
        budget=BUDGET,
        max_requests=MAX_REQUESTS,
    )


def vidur_commit(paths: VidurPaths) -> str:
    """The commit recorded by setup.sh in the source tree, or "unknown"."""
    f = paths.src / ".vidur-commit"
    return f.read_text().strip() if f.exists() else "unknown"


def parse_sizes(text: str) -> tuple[int, ...]:
    """'1,64,1024' -> (1, 64, 1024); each >= 1."""
    sizes = tuple(int(x) for x in text.split(","))
    if not sizes or min(sizes) < 1:
        raise ValueError(f"seed counts must be >= 1, got {text!r}")
    return sizes


# ------------------------------------------------------------------------------------ stability map

# The map: Fig. 1's engine (jaxsched's budget defaults: b = 512, M = 256, prefill cap b,
# eq. (2.3) with c = 45.5 ms, a = 0.18 ms/token, b0 = 64; requests of 129 + 112 tokens) at 15
# loads from 0.5 to 1.2 of capacity, the four policies, all in one `jaxsched sweep`.
MAP_POLICIES = ("sarathi", "vllm", "orca", "ft")
MAP_LOADS = tuple(round(0.5 + 0.05 * i, 2) for i in range(15))
MAP = dict(seeds=8, horizon_s=200.0, burn_in_s=40.0, table_size=4096)


def map_rates(loads: tuple[float, ...] = MAP_LOADS) -> list[float]:
    """Arrival rates (requests/s) of the map's loads rho = lambda (m_p + m_d) t_b / b, rounded
    to 6 significant digits (the values written into the command)."""
    from jaxsched.budget import BudgetConfig, rates_for_load

    base = BudgetConfig()
    return [float(f"{float(rates_for_load(base, rho)[0]):.6g}") for rho in loads]


def map_command(out_csv: Path, rates: list[float], seeds: int, horizon_s: float, burn_in_s: float, q: int) -> list[str]:
    """The one `jaxsched sweep` of the map (argv): policy x rates, `seeds` seeds per point,
    compiled afresh (--no-compile-cache) so that its wall time includes compiling."""
    return [
        "jaxsched",
        "--no-compile-cache",
        "sweep",
        "--engine",
        "budget",
        "--axis",
        "policy=" + ",".join(MAP_POLICIES),
        "--axis",
        "rates=" + ",".join(f"[{r:g}]" for r in rates),
        "--set",
        f"horizon_s={horizon_s:g}",
        "--set",
        f"burn_in_s={burn_in_s:g}",
        "--set",
        f"table_size={q}",
        "--seeds",
        str(seeds),
        "--quiet",
        "--out",
        str(out_csv),
    ]


def vidur_map_estimate(speed_json: Path, rates: list[float], seeds: int, horizon_s: float) -> dict | None:
    """Vidur's runs for the same map (points x seeds, one process each) and their time
    estimated from the measured per-run start-up and per-request simulation time of
    speed.json (medians over its Vidur runs, all schedulers): each run offering rate x horizon
    requests. A lower bound: queues that grow make Vidur's per-request work grow too.
    None when speed.json is absent."""
    if not speed_json.is_file():
        return None
    runs = [r for c in json.loads(speed_json.read_text())["cells"] for r in c["runs"] if r["kind"] == "vidur"]
    startup = median([r["startup_s"] for r in runs])
    per_request = median([r["simulation_s"] / r["completed"] for r in runs])
    requests = sum(r * horizon_s for r in rates) * len(MAP_POLICIES) * seeds
    n_runs = len(rates) * len(MAP_POLICIES) * seeds
    return dict(
        runs=n_runs,
        requests=requests,
        startup_s_per_run=startup,
        simulation_s_per_request=per_request,
        estimated_s=n_runs * startup + requests * per_request,
        source=str(speed_json.name),
    )


def read_map(csv_path: Path, rates: list[float], loads: tuple[float, ...] = MAP_LOADS) -> dict:
    """{policy: (loads, growth mean, growth 95% CI half-width, overflowed seed fraction)} of
    the sweep's CSV (tokens/s), each point's load found from its rate."""
    import csv as _csv

    by_rate = {round(r, 9): rho for r, rho in zip(rates, loads)}
    out: dict[str, list] = {p: [] for p in MAP_POLICIES}
    with csv_path.open(newline="") as f:
        for row in _csv.DictReader(f):
            rho = by_rate[round(float(row["rates"]), 9)]
            vals = (rho, float(row["token_growth_per_s_mean"]), float(row["token_growth_per_s_ci95"]))
            out[row["policy"]].append(vals + (float(row["overflowed_mean"]),))
    return {p: tuple(np.array(x) for x in zip(*sorted(v))) for p, v in out.items() if v}


def plot_map(curves: dict, png: Path, seeds: int, horizon_s: float, burn_in_s: float) -> Path:
    """The stability map: load (fraction of capacity) against the growth of the tokens in
    system (tokens/s, mean and 95% CI over seeds), one line per policy, a zero line."""
    from jaxsched.budget import capacity_tokens_per_s
    from jaxsched.plots import finish, subplots, wrap_title

    fig, ax = subplots(figsize=(6.4, 4.2))
    for policy, (rho, g, half, _) in curves.items():
        ax.errorbar(rho, g, yerr=half, marker="o", ms=3.5, lw=1.4, capsize=2, label=policy)
    ax.axhline(0.0, color="black", lw=0.8)
    cap = capacity_tokens_per_s(512, 0.0455, 0.00018, 64)
    ax.set_xlabel(rf"offered load $\rho = \lambda (m_p + m_d)\, t_b / b$ (1 = capacity, {cap:.0f} tokens/s)")
    ax.set_ylabel("growth of tokens in system (tokens/s)\nmean and 95% CI over seeds")
    title = (
        f"Stability map, jaxsched budget engine: {seeds} seeds per point, horizon {horizon_s:g} s "
        f"(fit after {burn_in_s:g} s), b = 512, M = 256, requests 129 + 112 tokens"
    )
    ax.set_title(wrap_title(title, 6.4), fontsize=10)
    return finish(fig, ax, png)


def stability_map(out: Path, replot: bool = False) -> int:
    """Run the map's sweep (unless `replot`), time it with the load around it, and write
    OUT/stability_map.csv (the sweep's rows), .png and .json (command, wall, load, Vidur's
    estimated time for the same map). With `replot`: the plot from the existing CSV, and
    Vidur's estimate recomputed from the current speed.json."""
    csv_path, meta_path = out / "stability_map.csv", out / "stability_map.json"
    rates = map_rates()
    cmd = map_command(csv_path.relative_to(REPO) if csv_path.is_relative_to(REPO) else csv_path, rates, **_map_kw())
    if not replot:
        csv_path.unlink(missing_ok=True)  # a resumed sweep would skip its points and time nothing
        before, t0 = uptime(), time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO)
        wall, after = time.perf_counter() - t0, uptime()
        if proc.returncode != 0:
            raise RuntimeError(f"the sweep failed ({proc.returncode}): {' '.join(cmd)}")
        est = vidur_map_estimate(out / "speed.json", rates, MAP["seeds"], MAP["horizon_s"])
        meta = dict(
            command=" ".join(cmd),
            loads=list(MAP_LOADS),
            rates_per_s=rates,
            policies=list(MAP_POLICIES),
            points=len(rates) * len(MAP_POLICIES),
            **MAP,
            wall_s=wall,
            uptime_before=before,
            uptime_after=after,
            confirmed=confirmed([before, after]),
            vidur_estimate=est,
        )
        meta_path.write_text(json.dumps(meta, indent=1))
    elif meta_path.is_file():  # the sweep's own record stays; Vidur's estimate follows speed.json
        meta = json.loads(meta_path.read_text())
        meta["vidur_estimate"] = vidur_map_estimate(out / "speed.json", rates, meta["seeds"], meta["horizon_s"])
        meta_path.write_text(json.dumps(meta, indent=1))
    curves = read_map(csv_path, rates)
    png = plot_map(curves, out / "stability_map.png", MAP["seeds"], MAP["horizon_s"], MAP["burn_in_s"])
    print(f"wrote {csv_path}, {png}, {meta_path}")
    return 0


def _map_kw() -> dict:
    return dict(seeds=MAP["seeds"], horizon_s=MAP["horizon_s"], burn_in_s=MAP["burn_in_s"], q=MAP["table_size"])


# ------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vidur.speed", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 requests, S = 1, 16, 64, 2 Vidur seeds, sarathi")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    ap.add_argument("--requests", type=int, default=None, help="requests per seed (default 1000, quick 200)")
    ap.add_argument("--seeds", type=parse_sizes, default=None, help="jaxsched seed counts, e.g. 1,64,1024")
    ap.add_argument("--vidur-seeds", type=int, default=None, help="Vidur processes (rounds) per scheduler")
    ap.add_argument("--schedulers", default=None, help="comma-separated, from sarathi,vllm,orca")
    ap.add_argument("--table-size", type=int, default=None, help=f"jaxsched's ring slots Q (default {TABLE_SIZE})")
    ap.add_argument("--name", default=None, help="results file stem (default speed[_quick], speed_reuse[_quick])")
    ap.add_argument(
        "--vidur-json",
        type=Path,
        default=None,
        help="reuse the Vidur runs of this earlier speed JSON (measured on the machine it names) instead of "
        "running Vidur; only jaxsched runs",
    )
    ap.add_argument(
        "--jax-calls", type=int, default=None, help="with --vidur-json: jaxsched calls per S (default 3, quick 2)"
    )
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds from the start: a jaxsched call projected to end later is skipped (and listed)",
    )
    ap.add_argument("--stability-map", action="store_true", help="run the stability map instead (no Vidur needed)")
    ap.add_argument("--replot", action="store_true", help="with --stability-map: plot the existing CSV only")
    a = ap.parse_args(argv)
    if a.stability_map:
        return stability_map(a.out, a.replot)
    if a.time_limit is not None and not a.time_limit > 0:
        ap.error(f"--time-limit must be > 0 seconds, got {a.time_limit}")
    if a.jax_calls is not None and (a.vidur_json is None or a.jax_calls < 1):
        ap.error(
            f"--jax-calls must be >= 1 and goes with --vidur-json (got {a.jax_calls}; with Vidur, jaxsched "
            "runs once per Vidur round: --vidur-seeds)"
        )
    size = QUICK if a.quick else FULL
    asked = tuple(a.schedulers.split(",")) if a.schedulers else None
    workload = workload_settings()
    record = origin = paths = None
    if a.vidur_json is not None:
        if a.vidur_seeds is not None:
            ap.error(
                "--vidur-seeds does not go with --vidur-json (Vidur is not run; --jax-calls sets jaxsched's calls)"
            )
        try:
            record = read_vidur_record(a.vidur_json)
        except ValueError as err:
            ap.error(str(err))
        n = record["settings"]["requests"] if a.requests is None else a.requests
        q = record["settings"]["table_size"] if a.table_size is None else a.table_size
        scheds = asked or tuple(record["cells"])
        rounds = a.jax_calls or size["vidur_seeds"]
        stem = a.name or ("speed_reuse_quick" if a.quick else "speed_reuse")
    else:
        n = a.requests or size["requests"]
        q = TABLE_SIZE if a.table_size is None else a.table_size
        scheds = asked or size["schedulers"]
        rounds = a.vidur_seeds or size["vidur_seeds"]
        stem = a.name or ("speed_quick" if a.quick else "speed")
    if n < 2 or rounds < 1 or q < 1 or any(s not in harness.SCHEDULERS for s in scheds):
        ap.error(f"need --requests >= 2, --vidur-seeds >= 1, --table-size >= 1, schedulers in {harness.SCHEDULERS}")
    sizes = a.seeds or size["seeds"]
    if record is not None:
        why = reuse_mismatch(record, dict(requests=n, table_size=q), scheds, workload)
        if why is not None:
            ap.error(why)
        if (a.out / f"{stem}.json").resolve() == a.vidur_json.resolve():
            ap.error(f"--name {stem} in --out {a.out} would overwrite the reused --vidur-json file; give another")
        source = a.vidur_json.resolve()
        origin = dict(
            {k: record[k] for k in ("command", "vidur_commit", "machine", "environment", "runs", "settings")},
            source=str(source.relative_to(REPO)) if source.is_relative_to(REPO) else str(a.vidur_json),
            uptime_before=record["uptime_before"],
            uptime_after=record["uptime_after"],
        )
    else:
        paths = harness.paths_or_skip()
        if paths is None:
            return 0
    env = environment()
    before, t0 = uptime(), time.perf_counter()
    deadline = None if a.time_limit is None else t0 + a.time_limit
    done: list[dict] = []

    def report(cells: list[dict], running: dict | None, complete: bool) -> dict:
        out = dict(
            command="python -m benchmarks.vidur.speed " + " ".join(sys.argv[1:] if argv is None else argv),
            vidur_commit=vidur_commit(paths) if origin is None else origin["vidur_commit"],
        )
        if origin is not None:
            out["vidur_reused"] = origin
        return dict(
            out,
            settings=dict(
                requests=n,
                seeds=list(sizes),
                vidur_seeds=rounds if origin is None else origin["runs"],
                jax_calls=rounds,
                **workload,
                table_size=q,
                machine=env["machine"],
                time_limit_s=a.time_limit,
            ),
            environment=env,
            uptime_before=before,
            uptime_after=uptime(),
            total_wall_s=time.perf_counter() - t0,
            complete=complete,
            running=running,
            cells=cells,
        )

    def on_update(cell: dict, running: dict | None) -> None:
        write_report(report(done + [cell], running, False), a.out, stem)

    with tempfile.TemporaryDirectory(prefix="jaxsched_vidur_speed_") as tmp:
        for s in scheds:
            what = f"{rounds} jaxsched calls per S, Vidur reused" if origin else f"{rounds} rounds"
            print(f"{s}: {what}, N = {n}, S = {sizes}", flush=True)
            reused = None if record is None else record["cells"][s]
            kw = dict(paths=paths, work=Path(tmp), reused=reused, origin=origin, deadline=deadline)
            done.append(measure(n, sizes, rounds, s, q, on_update=on_update, **kw))
    md = write_report(report(done, None, True), a.out, stem)
    for c in done:
        for r in c["summary"]:
            if r["runs"] == 0:
                print(f"{c['scheduler']} {r['simulator']} S={r['seeds']}: not run")
                continue
            where = f" (reused, measured on {r['measured_on']})" if r.get("reused") else ""
            ratio = fmt(r["ratio"], ",.1f")
            print(
                f"{c['scheduler']} {r['simulator']} S={r['seeds']}: {r['rate_per_s']:,.0f} requests/s, x{ratio}{where}"
            )
    print(f"wrote {md} and its .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
