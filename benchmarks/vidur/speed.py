"""Simulated requests per second: Vidur (one process per seed) against jaxsched's budget engine
(seeds vmapped), on the same Poisson stream configuration.

    python -m benchmarks.vidur.speed [--quick] [--out DIR] [--requests N] [--seeds 1,64,1024]
        [--vidur-seeds R] [--schedulers sarathi,vllm]

Workload: compare.py's Poisson stream (Poisson(512) prompt and Poisson(128) decode tokens at
load 0.6 of eq. (2.3)'s capacity at b = 512), N requests per seed, the same batch time,
caps and schedulers as the agreement run. Vidur runs as it is used: one process per seed,
replaying jaxsched's request list of that seed (seeds 0..R-1, the first R of jaxsched's), with
jaxsched's batch time installed as its predictor; a timer inside the process splits its wall
time into start-up (interpreter, imports, argument parsing) and simulation (building the
simulator and its requests, the event loop, writing the metrics). jaxsched runs
`jaxsched.run.simulate` over S = 1, 64, 1024 seeds; its first call at each S is timed apart
(compilations counted with jax.monitoring), the later ones are simulation only.

Interleaved rounds: each round runs one Vidur seed, then jaxsched at every S, so both see the
same machine load; `uptime` is recorded around every measurement. Simulated requests per
second = requests completed (all seeds) / simulation wall time; Vidur's per-seed rate is its
rate at any S (it does not batch seeds). Results: OUT/speed.md and OUT/speed.json
(speed_quick.* with --quick). Without Vidur it prints harness.SKIP_MESSAGE and exits 0.
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


# ------------------------------------------------------------------------------------ runs


def uptime() -> str:
    """The `uptime` line (load averages)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


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


def time_jax(cfg, params, n_seeds: int, counter: CompileCounter) -> dict:
    """One `simulate` call over seeds 0..n_seeds-1: wall and compile time (s), compilations,
    requests completed (departures, all seeds), and whether every run finished its requests."""
    from jaxsched.run import simulate

    c0, s0 = counter.snapshot()
    before = uptime()
    t0 = time.perf_counter()
    res = simulate(cfg, params, range(n_seeds), warn=False)
    wall = time.perf_counter() - t0
    after = uptime()
    c1, s1 = counter.snapshot()
    m = res.metrics
    done = bool(np.all(m["requests_end"] == 0) and np.all(m["done"] > 0) and np.all(m["overflowed"] == 0))
    completed = int(np.sum(m["num_departed"]))
    return dict(
        seeds=n_seeds,
        wall_s=wall,
        compile_s=float(res.compile_s),
        compilations=c1 - c0,
        backend_compile_s=s1 - s0,
        completed=completed,
        all_finished=done,
        uptime_before=before,
        uptime_after=after,
    )


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
    paths: VidurPaths, n: int, sizes: tuple[int, ...], rounds: int, scheduler: str, work: Path, table_size: int
) -> dict:
    """The interleaved rounds of `schedule` for one scheduler: every Vidur run and every
    jaxsched call, in order, with their load."""
    from jaxsched.budget import request_stream

    counter = CompileCounter()
    cfg, params = jax_run(n, scheduler, table_size)
    log, seen = [], set()
    for kind, x in schedule(rounds, sizes):
        if kind == "vidur":
            stream = request_stream(cfg, params, x, n + 64)
            if stream["id"].size != n:
                raise RuntimeError(f"seed {x}: {stream['id'].size} requests in the stream, expected {n}")
            csv_path = harness.stream_to_vidur_csv(work / f"{scheduler}_seed{x}.csv", stream)
            rec = dict(kind="vidur", seed=x, **time_vidur(paths, scheduler, csv_path, work / f"{scheduler}_{x}", n))
            print(f"  {scheduler} Vidur seed {x}: {rec['wall_s']:.2f} s wall, loop {rec['loop_s']:.2f} s", flush=True)
        else:
            rec = dict(kind="jax", first_call=x not in seen, **time_jax(cfg, params, x, counter))
            seen.add(x)
            print(f"  {scheduler} jaxsched S={x}: {rec['wall_s']:.2f} s (compile {rec['compile_s']:.2f} s)", flush=True)
        log.append(rec)
    return dict(scheduler=scheduler, runs=log, summary=summarize(log, n, sizes))


def summarize(log: list[dict], n: int, sizes: tuple[int, ...]) -> list[dict]:
    """Table rows: Vidur per seed (medians over its processes) and jaxsched per S (compile from
    its first call, simulation = median wall of the later calls, or the first call's wall minus
    compile time when it ran only once); rates and the ratio to Vidur's event-loop rate."""
    v = [r for r in log if r["kind"] == "vidur"]
    v_loop = median([r["loop_s"] for r in v])
    v_sim = median([r["simulation_s"] for r in v])
    v_rate = requests_per_second(n, v_loop)
    rows = [
        dict(
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
    ]
    for s in sizes:
        j = [r for r in log if r["kind"] == "jax" and r["seeds"] == s]
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
                simulation_s=sim,
                loop_s=None,
                completed=first["completed"],
                all_finished=all(r["all_finished"] for r in j),
                warm_compilations=sum(r["compilations"] for r in warm),
                rate_per_s=rate,
                rate_sim_per_s=rate,
                ratio=rate / v_rate,
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
    if r["simulator"] == "Vidur":
        first = f"{r['startup_s']:.2f} start-up"
        sim = f"{r['loop_s']:.3f} loop ({r['simulation_s']:.3f} with build + write)"
        rate = f"{r['rate_per_s']:,.0f} ({r['rate_sim_per_s']:,.0f})"
    else:
        first = f"{r['compile_s']:.2f} compile ({r['compilations']} compilations)"
        sim = f"{r['simulation_s']:.3f}"
        rate = f"{r['rate_per_s']:,.0f}"
    load = "ok" if r["confirmed"] else "unconfirmed"
    done = f"{r['completed']:,}" + ("" if r["all_finished"] else " (NOT all finished)")
    return (r["simulator"], r["seeds"], r["runs"], first, sim, done, rate, f"{r['ratio']:,.1f}", load)


def render(report: dict) -> str:
    """speed.md from the report."""
    s = report["settings"]
    out = [
        "# Simulated requests per second: jaxsched's budget engine against Vidur",
        "",
        f"Command: `{report['command']}`. Vidur commit {report['vidur_commit']}, one replica, jaxsched's batch time "
        f"(eq. (2.3)) installed as its predictor. Workload: a Poisson stream of {s['requests']} requests per seed "
        f"(Poisson({s['prefill_mean']}) prompt, Poisson({s['decode_mean']}) decode tokens, {s['rate_per_s']:.3f} "
        f"requests/s = load {s['load']}), b = {s['budget']}, M = {s['max_requests']}, jaxsched's Q = "
        f"{s['table_size']}; machine: {s['machine']}.",
        "",
        "Vidur: one process per seed (how it runs), replaying jaxsched's request list of that seed; start-up = "
        "process wall minus simulation; its rate counts the event loop only (in brackets: with building the "
        "simulator and writing its metrics). It does not batch seeds, so its rate at any S is its per-seed rate. "
        "jaxsched: `jaxsched.run.simulate` over S seeds; compile = its first call's compile time (XLA "
        "compilations counted with jax.monitoring); simulation wall = median of the later calls (no compilation). "
        "Rate = requests completed over all seeds / simulation wall; x Vidur = that over Vidur's loop rate in the "
        "same interleaved run. Medians over the runs; 'unconfirmed': a 1-minute load above "
        f"{LOAD_LIMIT} around a run.",
        "",
        f"uptime before: `{report['uptime_before']}`; after: `{report['uptime_after']}`. "
        f"Total wall {report['total_wall_s']:.0f} s.",
        "",
    ]
    for cell in report["cells"]:
        out += [f"## {cell['scheduler']}", ""]
        out += [harness.markdown_table(TABLE_HEAD, [table_row(r) for r in cell["summary"]]), ""]
        pairs = [(load_1min(r["uptime_before"]), load_1min(r["uptime_after"])) for r in cell["runs"]]
        loads = ", ".join(f"{b:.2f}/{e:.2f}" for b, e in pairs)
        out += [f"1-minute load before/after each run, in run order: {loads}.", ""]
    return "\n".join(out)


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
    ap.add_argument("--table-size", type=int, default=TABLE_SIZE, help="jaxsched's ring slots Q")
    ap.add_argument("--name", default=None, help="results file stem (default speed[_quick])")
    ap.add_argument("--stability-map", action="store_true", help="run the stability map instead (no Vidur needed)")
    ap.add_argument("--replot", action="store_true", help="with --stability-map: plot the existing CSV only")
    a = ap.parse_args(argv)
    if a.stability_map:
        return stability_map(a.out, a.replot)
    paths = harness.vidur_paths()
    why = harness.missing_reason(paths)
    if why is not None:
        print(f"{harness.SKIP_MESSAGE} ({why})")
        return 0
    size = QUICK if a.quick else FULL
    n = a.requests or size["requests"]
    sizes = a.seeds or size["seeds"]
    rounds = a.vidur_seeds or size["vidur_seeds"]
    scheds = tuple(a.schedulers.split(",")) if a.schedulers else size["schedulers"]
    if n < 2 or rounds < 1 or any(s not in harness.SCHEDULERS for s in scheds):
        ap.error(f"need --requests >= 2, --vidur-seeds >= 1, schedulers in {harness.SCHEDULERS}")
    from .compare import BUDGET, MAX_REQUESTS, POISSON_LENGTHS, POISSON_LOAD

    before, t0 = uptime(), time.perf_counter()
    cells = []
    with tempfile.TemporaryDirectory(prefix="jaxsched_vidur_speed_") as tmp:
        for s in scheds:
            print(f"{s}: {rounds} rounds, N = {n}, S = {sizes}", flush=True)
            cells.append(measure(paths, n, sizes, rounds, s, Path(tmp), a.table_size))
    report = dict(
        command="python -m benchmarks.vidur.speed " + " ".join(sys.argv[1:] if argv is None else argv),
        vidur_commit=vidur_commit(paths),
        settings=dict(
            requests=n,
            seeds=list(sizes),
            vidur_seeds=rounds,
            prefill_mean=POISSON_LENGTHS[0],
            decode_mean=POISSON_LENGTHS[1],
            rate_per_s=poisson_rate(),
            load=POISSON_LOAD,
            budget=BUDGET,
            max_requests=MAX_REQUESTS,
            table_size=a.table_size,
            machine=f"{os.cpu_count()} CPU cores",
        ),
        uptime_before=before,
        uptime_after=uptime(),
        total_wall_s=time.perf_counter() - t0,
        cells=cells,
    )
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.name or ("speed_quick" if a.quick else "speed")
    (a.out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=float))
    (a.out / f"{stem}.md").write_text(render(report))
    for c in cells:
        for r in c["summary"]:
            rate, ratio = r["rate_per_s"], r["ratio"]
            print(f"{c['scheduler']} {r['simulator']} S={r['seeds']}: {rate:,.0f} requests/s, x{ratio:,.1f}")
    print(f"wrote {a.out / stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
