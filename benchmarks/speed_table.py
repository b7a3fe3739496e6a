"""One speed table for all six engines: runs per second of each engine at batch sizes S against
its one-at-a-time reference, with the operations per step and the compile time of its step.

    python -m benchmarks.speed_table [--quick] [--engines dp kv ...] [--sizes 1 64 1024]
        [--out benchmarks/results/speed_table.json] [--reference-json EARLIER.json]

Cases: one representative configuration per engine and policy, built by the engine's own
benchmark module (imported, not copied):
- dp (`bench_dp.make_config`): FCFS and BF-IO H = 0 at (G, B, R) = (16, 72, 64), BurstGPTLike,
  semantics "paper"; a run is one seed over `dp_steps` decode steps. Reference:
  `numpy_dp_loops.simulate_loops` through `bench_dp.bench_numpy` (the loop-style simulator, the
  baseline the dp speed target names; each seed runs twice there, a check run and the timed run,
  and only the timed run counts). Checked: avg_imbalance_tokens, to rtol 1e-12 as bench_dp.
- kv (`bench_kv.case`): WAIT on E1 at rho = 0.5, A = 64, the table starting at Q = 1024 and grown
  on overflow (`grow_table`; the reference holds 4096 slots); a run is one seed over
  `kv_horizon_s` simulated seconds. Reference `bench_kv.bench_reference`. Checked: epochs,
  batches and completions, exactly.
- offline (`bench_offline.real_family`, `exec_orders`): n = 200 requests of section 7's real
  mix, FCFS order, M = 16,492 tokens; a run is one instance. Reference: the NumPy executor
  (`bench_offline.bench_numpy`). Checked: TEL, exactly. The full run adds FCFS at n = 1000 and
  2000 with S = 64 only (`--offline-extra`), where the offline target is stated.
- interval (`bench_interval.instances`, drawn in one jitted call by `interval.jobs` and checked
  against it): A_min on n = 200 LMSYS-like jobs, M = 4096, bucket intervals; a run is one
  instance. Reference `bench_interval.bench_reference`. Checked: TEL and
  evictions, exactly.
- budget (`bench_budget._config`): Sarathi and vLLM on Fig. 1's engine at 14.3 qps, the ring
  starting at `bench_budget.GROWN_Q` (256 and 512) and grown on overflow; a run is one seed
  over `budget_horizon_s`. Reference `bench_budget.bench_reference`. Checked: batches and
  departures, exactly.
- network (`bench_network.case`): `parallel` (K = 2 behind the fewest-tokens router) and `rs`
  (Rybko-Stolyar, stable priorities), rings starting at `bench_network.GROWN_Q` (256 and 128)
  and grown on overflow; a run is one seed over the horizon set here
  (max_steps stays the bench's, an upper bound). Reference `bench_network.bench_reference`.
  Checked: batches and departures, exactly.

Measurements, per case:
- engine runs/s at each S: a first call over S runs compiles and warms up, then REPEATS
  identical calls are timed; runs/s = S / the fastest one's wall seconds (the engines return
  NumPy metrics, so the time includes all device work and the transfer of the results to the
  host).
- reference runs/s: runs one at a time, interleaved with the engine: a first slice of about
  `--reference-s` seconds (at least one run; its runs' metrics are the compared ones), then a
  slice of SLICE_FRACTION of that after each S; runs/s = runs / their seconds. With
  `--reference-json FILE` the rate (every slice together) and the per-run metrics of FILE's run
  are reused instead (its setup must be the same), so a GPU run compares against CPU reference
  rates; the rows record where the rate came from.
- ratio at S = the engine's runs/s / the faster reference slice just before and after its
  calls. On a shared host whose speed drifts, a disturbance only adds time; so each side's
  least disturbed figure is compared, both taken within the same minute.
- target met: ratio >= 30 at S = 1024 (offline: >= 10 against the NumPy executor, read at
  S = 1024 for n = 200 and at S = 64 for the extra n = 1000, 2000 rows; the Rybko-Stolyar
  network: >= 10); empty where that S was not run.
- equal: on every run both the engine (at that S) and the reference made, the checked metrics
  agree; the script exits 1 if any row differs.
- ops per step and compile s: `step_cost.step_cost` on the case's config, STEP_COST_SEEDS runs
  (kernels of one scan step of the optimized program; lowering excluded from compile s).
- load average (1 min) before and after each case's rows, in every row; a warning on stderr
  (and in the markdown) when either exceeds LOAD_WARN. The figure counts this script's own busy
  threads too, so "before" is the one that tells of other work on the machine.

Run lengths: `FULL` and `QUICK` below. On a shared 2-core x86-64 machine (AMD EPYC under KVM)
the full run (S = 1, 64, 1024, with the offline n = 1000 and 2000 rows) took 13 minutes with a
1-minute load average of 3 to 5 and 15 minutes at 5 to 7 (other work on the machine; the
S = 1024 calls of kv, interval, budget and network take 15 to 60 s each, twice), and --quick
(S = 1, 8) 2.5 minutes at 2 to 4, mostly compilation. On a GPU,
`--sizes 1024 4096 16384 65536 --reference-json CPU_RUN.json` times the engines alone.

Writes the JSON (machine, settings, one object per row, the reference records) to --out
(default `benchmarks/results/speed_table.json`, with --quick `speed_table_quick.json`) and the
markdown next to it (.md); prints the markdown on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

_HERE = Path(__file__).resolve().parent
ENGINES = ("dp", "kv", "offline", "interval", "budget", "network")
SIZES = (1, 64, 1024)
QUICK_SIZES = (1, 8)
TARGET_RATIO = 30.0  # engine / reference runs/s at TARGET_SIZE
OFFLINE_TARGET_RATIO = 10.0  # against the NumPy executor
# The Rybko-Stolyar network's: its reference's batches are one slot of a few tasks, the
# cheapest per event of any reference.
RS_TARGET_RATIO = 10.0
TARGET_SIZE = 1024
OFFLINE_EXTRA_SIZE = 64  # the batch of the extra offline rows (n = 1000, 2000)
REPEATS = 3  # timed engine calls per S, after a first; the row takes the fastest
SLICE_FRACTION = 0.25  # the reference's slice after each S, as a fraction of reference_s
PROBE_LOOPS = 200_000  # `core_ms`'s loop: about 6-10 ms per core on the 2-core machine
LOAD_WARN = 1.5  # 1-minute load average above which the timings are suspect on 2 cores
STEP_COST_SEEDS = 64  # runs in step_cost's vmapped step (the count per step hardly depends on it)
DP_G = 16  # bench_dp's first shape: (G, B, R) = (16, 72, 64)
OFFLINE_N = 200


@dataclass(frozen=True)
class Mode:
    """Run lengths of a full or quick table. Horizons in simulated seconds; reference_s in wall
    seconds; reference_rows: instances drawn at least for the offline and interval references."""

    name: str
    sizes: tuple[int, ...]
    reference_s: float
    reference_rows: int
    dp_steps: int
    kv_horizon_s: float
    budget_horizon_s: float
    parallel_horizon_s: float
    rs_horizon_s: float
    offline_extra_n: tuple[int, ...]


# Chosen so that the full table takes under 20 minutes on 2 cores: the S = 1024 calls dominate
# (each is made twice), so the horizons are those of the bench modules where a 1024-seed call
# takes under about 40 s, and shorter for the network engine (its bench's 30 s and 300 s take
# 100 s and 280 s per 1024-seed call there).
FULL = Mode(
    name="full",
    sizes=SIZES,
    reference_s=10.0,
    reference_rows=256,
    dp_steps=1000,
    kv_horizon_s=1.0,
    budget_horizon_s=60.0,
    parallel_horizon_s=10.0,
    rs_horizon_s=50.0,
    offline_extra_n=(1000, 2000),
)
QUICK = Mode(
    name="quick",
    sizes=QUICK_SIZES,
    reference_s=1.0,
    reference_rows=32,
    dp_steps=100,
    kv_horizon_s=0.25,
    budget_horizon_s=10.0,
    parallel_horizon_s=3.0,
    rs_horizon_s=30.0,
    offline_extra_n=(),
)


@dataclass
class Case:
    """One engine configuration and its reference.

    metrics(S, seed_chunk=None) -> {name: array[S, ...]}: every metric of runs 0..S-1 from one
    engine call (`engine_call` picks the checked ones), in the runner's default chunks or in
    chunks of seed_chunk runs. reference(target_s) -> {"runs": k, "seconds": s,
    "values": float64[k, len(checked)]}: runs 0..k-1 one at a time for about target_s wall
    seconds. step_setup() -> (Config, Params) whose step `step_cost` compiles. setup: what
    defines one run (a reused reference must match it). rtol: 0 for exact equality. sizes:
    fixed batch sizes (else the table's).
    """

    engine: str
    name: str
    run: str
    checked: tuple[str, ...]
    setup: dict[str, Any]
    metrics: Callable[[int], dict[str, np.ndarray]]
    reference: Callable[[float], dict[str, Any]]
    step_setup: Callable[[], tuple[Any, Any]]
    rtol: float = 0.0
    target: float = TARGET_RATIO
    target_size: int = TARGET_SIZE
    sizes: tuple[int, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def engine_call(self, S: int) -> np.ndarray:
        """float64[S, len(checked)]: the checked metrics of runs 0..S-1 from one engine call."""
        return columns(self.metrics(S), self.checked)

    @property
    def key(self) -> str:
        """The case's name in the JSON's reference records."""
        return f"{self.engine}/{self.name}"


def log(msg: str) -> None:
    """Progress line on stderr (stdout carries only the markdown)."""
    print(f"[speed_table {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def columns(metrics: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    """float64[S, len(names)]: the named per-run metrics side by side."""
    return np.stack([np.asarray(metrics[n], np.float64) for n in names], axis=1)


def reference_record(runs: int, seconds: float, values: np.ndarray) -> dict[str, Any]:
    """The reference's measurement: runs made, their wall seconds, float64[runs, m] metrics."""
    return {"runs": int(runs), "seconds": float(seconds), "values": np.asarray(values, np.float64).reshape(runs, -1)}


# --------------------------------------------------------------------------- cases


def dp_cases(mode: Mode, rows: int) -> list[Case]:
    """FCFS and BF-IO H = 0 at bench_dp's (16, 72, 64) shape, runs of mode.dp_steps steps."""
    from benchmarks import bench_dp

    return [_dp_case(bench_dp, policy, mode.dp_steps) for policy in bench_dp.POLICIES]


def _dp_case(bench_dp: Any, policy: str, steps: int) -> Case:
    from jaxsched.dp import make_params, simulate

    config = bench_dp.make_config(policy, DP_G, steps)
    params = make_params(config)
    checked = ("avg_imbalance_tokens",)

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return simulate(config, params, np.arange(S), seed_chunk=seed_chunk).metrics

    def reference(target_s: float) -> dict[str, Any]:
        values, spent = [], 0.0
        while not values or spent < target_s:
            # bench_numpy's check run gives the metric; its timed run (as many steps) the time.
            row, _ = bench_dp.bench_numpy("loops", policy, DP_G, steps, 0.0, 1, seed=len(values))
            spent += row.timed_s
            values.append([row.avg_imbalance_tokens])
        return reference_record(len(values), spent, np.array(values))

    setup = dict(policy=policy, G=DP_G, B=bench_dp.B, R=bench_dp.POOL[DP_G], steps=steps, workload="BurstGPTLike")
    return Case(
        "dp",
        policy,
        f"1 seed x {steps} steps",
        checked,
        setup,
        metrics,
        reference,
        lambda: (config, params),
        rtol=1e-12,
        extra=dict(reference_impl="benchmarks/numpy_dp_loops.py"),
    )


def kv_cases(mode: Mode, rows: int) -> list[Case]:
    """WAIT on E1 at bench_kv's load, runs of mode.kv_horizon_s simulated seconds."""
    from benchmarks import bench_kv
    from jaxsched.kv import simulate

    # The reference's table holds bench_kv.Q slots; the engine's starts at GROWN_Q and grows on
    # overflow (`grow_table`), so every run has bitwise the metrics of Q (jaxsched.tables).
    cfg, p, kw = bench_kv.case("wait", mode.kv_horizon_s)
    cfg = dataclasses.replace(cfg, table_size=bench_kv.GROWN_Q, grow_table=True)
    checked = bench_kv.COUNTS

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return simulate(cfg, p, range(S), warn=False, seed_chunk=seed_chunk).metrics

    def reference(target_s: float) -> dict[str, Any]:
        base = bench_kv.bench_reference(cfg, p, kw, target_s)
        return reference_record(base["seeds"], base["seconds"], columns(base, checked))

    setup = dict(
        policy="wait",
        experiment=bench_kv.EXPERIMENT,
        load=bench_kv.LOAD,
        horizon_s=mode.kv_horizon_s,
        Q=f"{bench_kv.GROWN_Q}, grown on overflow (reference: {bench_kv.Q})",
    )
    run = f"1 seed x {mode.kv_horizon_s:g} s"
    return [Case("kv", "wait", run, checked, setup, metrics, reference, lambda: (cfg, p))]


def offline_cases(mode: Mode, rows: int, extra_n: tuple[int, ...] = ()) -> list[Case]:
    """FCFS on the real mix at n = 200 (the table's sizes), and at each n of extra_n with
    S = OFFLINE_EXTRA_SIZE only."""
    out = [_offline_case(OFFLINE_N, rows, None)]
    # The reference gets mode.reference_rows instances of its own to fill its seconds.
    extra_rows = max(OFFLINE_EXTRA_SIZE, mode.reference_rows)
    return out + [_offline_case(n, extra_rows, (OFFLINE_EXTRA_SIZE,)) for n in extra_n]


def _offline_case(n: int, rows: int, sizes: tuple[int, ...] | None) -> Case:
    from benchmarks import bench_offline
    from jaxsched.offline import instances as inst
    from jaxsched.offline import workloads
    from jaxsched.offline.config import OfflineConfig, instance_params

    family, draw = bench_offline.real_family()
    seeds = np.arange(max(rows, 1), dtype=np.uint32)
    s, o = draw(n, seeds)
    s, o, order, _ = bench_offline.exec_orders("fcfs", n, s, o, seeds, {})
    params = instance_params(bench_offline.REAL_M)
    checked = ("tel_steps",)

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return inst.execute(params, s[:S], o[:S], order[:S], seed_chunk=seed_chunk)

    def reference(target_s: float) -> dict[str, Any]:
        seconds, tels = bench_offline.bench_numpy(s, o, order, target_s)
        return reference_record(tels.size, seconds, tels[:, None])

    setup = dict(policy="fcfs", n=n, M=bench_offline.REAL_M, family=family)
    return Case(
        "offline",
        f"fcfs n={n}",
        f"1 instance of {n}",
        checked,
        setup,
        metrics,
        reference,
        lambda: (OfflineConfig(workloads.real("mix", n), policy="fcfs"), params),
        target=OFFLINE_TARGET_RATIO,
        target_size=OFFLINE_EXTRA_SIZE if sizes else TARGET_SIZE,
        sizes=sizes,
        extra=dict(reference_impl="benchmarks/numpy_offline.py"),
    )


def interval_cases(mode: Mode, rows: int) -> list[Case]:
    """A_min on bench_interval's instances (n = 200 LMSYS-like jobs, bucket intervals)."""
    from benchmarks import bench_interval
    from jaxsched.interval import Buckets, IntervalConfig, execute, make_params
    from jaxsched.interval.workloads import LMSYS
    from jaxsched.offline.config import instance_params
    from jaxsched.workload import Batch

    n = bench_interval.N_JOBS
    config = IntervalConfig(Batch(LMSYS, n), policy="amin", intervals=Buckets.uniform(100, 10))
    arrays = interval_instances(config, rows, bench_interval.instances)
    params = instance_params(bench_interval.CAPACITY)
    checked = ("tel_steps", "evictions")

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return execute(params, *(a[:S] for a in arrays), policy="amin", seeds=np.arange(S), seed_chunk=seed_chunk)

    def reference(target_s: float) -> dict[str, Any]:
        base = bench_interval.bench_reference("amin", arrays, target_s)
        return reference_record(base["instances"], base["seconds"], np.stack([base["tel"], base["evictions"]], 1))

    setup = dict(policy="amin", n=n, M=bench_interval.CAPACITY, intervals="buckets 100 x 10")
    # The engine's step reads the interval params (start_q beside the batch model's); `execute`
    # takes the batch model's alone.
    step_setup = lambda: (config, make_params(config, capacity_tokens=bench_interval.CAPACITY))
    return [Case("interval", "amin", f"1 instance of {n}", checked, setup, metrics, reference, step_setup)]


def interval_instances(config: Any, rows: int, one_by_one: Callable[[int], tuple[np.ndarray, ...]]) -> list:
    """(s, o, l, u) int[rows, n] (tokens): run k's jobs and intervals under `config`
    (`interval.jobs`, the runner's draw), for seeds 0..rows-1 in one jitted call.

    `one_by_one(k)` (bench_interval.instances) draws the same instances one seed at a time, each
    through a fresh jit (about 0.1 s per instance on 2 cores: minutes at 1024, hours at 65,536);
    its first rows must equal these, or the table would time other instances than the bench."""
    import jax
    import jax.numpy as jnp

    from jaxsched.interval import jobs

    drawn = jax.jit(jax.vmap(lambda seed: jobs(config, seed)))(jnp.arange(rows, dtype=jnp.uint32))
    arrays = [np.asarray(a) for a in drawn]
    check = one_by_one(min(rows, 4))
    if not all(np.array_equal(a[: len(c)], c) for a, c in zip(arrays, check)):
        raise RuntimeError("interval.jobs and bench_interval.instances draw different instances")
    return arrays


def budget_cases(mode: Mode, rows: int) -> list[Case]:
    """Sarathi and vLLM on bench_budget's Fig. 1 setting, runs of mode.budget_horizon_s."""
    from benchmarks import bench_budget

    return [_budget_case(bench_budget, policy, mode.budget_horizon_s) for policy in bench_budget.POLICIES]


def _budget_case(bench_budget: Any, policy: str, horizon: float) -> Case:
    from jaxsched.budget import make_params, simulate
    from jaxsched.budget.config import keywords_read_by
    from jaxsched.budget.experiments import FIG1

    cfg = bench_budget._config(policy, horizon)
    p = make_params(cfg, rates=[bench_budget.RATE], **keywords_read_by(policy, FIG1))
    # The ring starts at GROWN_Q and grows on a rejected arrival: bitwise the results of Q.
    cfg = dataclasses.replace(cfg, table_size=bench_budget.GROWN_Q[policy], grow_table=True)
    checked = ("num_batches", "num_departed")

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return simulate(cfg, p, range(S), warn=False, seed_chunk=seed_chunk).metrics

    def reference(target_s: float) -> dict[str, Any]:
        base = bench_budget.bench_reference(policy, horizon, target_s)
        return reference_record(base["seeds"], base["seconds"], np.stack([base["num_batches"], base["departed"]], 1))

    setup = dict(
        policy=policy,
        rate_qps=bench_budget.RATE,
        horizon_s=horizon,
        Q=f"{bench_budget.GROWN_Q[policy]}, grown on overflow",
    )
    run = f"1 seed x {horizon:g} s"
    return Case("budget", policy, run, checked, setup, metrics, reference, lambda: (cfg, p))


def network_cases(mode: Mode, rows: int) -> list[Case]:
    """bench_network's parallel and Rybko-Stolyar configurations at this mode's horizons."""
    from benchmarks import bench_network

    horizons = {"parallel": mode.parallel_horizon_s, "rs": mode.rs_horizon_s}
    return [_network_case(bench_network, name, h) for name, h in horizons.items()]


def _network_case(bench_network: Any, name: str, horizon: float) -> Case:
    from jaxsched.network import simulate

    cfg, p, kw = bench_network.case(name, False)
    # A shorter horizon than the bench's: its max_steps (enough for the longer one) stays an
    # upper bound, and the runner stops each chunk once its runs reach the horizon.
    cfg = dataclasses.replace(cfg, horizon_s=horizon)
    kw = dict(kw, horizon=horizon)
    # The rings start at GROWN_Q and grow on a rejected task: bitwise the results of Q.
    cfg = dataclasses.replace(cfg, table_size=bench_network.GROWN_Q[name], grow_table=True)
    checked = ("num_batches", "num_departed")

    def metrics(S: int, seed_chunk: int | None = None) -> dict[str, np.ndarray]:
        return simulate(cfg, p, range(S), warn=False, seed_chunk=seed_chunk).metrics

    def reference(target_s: float) -> dict[str, Any]:
        base = bench_network.bench_reference(cfg, p, kw, target_s)
        return reference_record(base["seeds"], base["seconds"], np.stack([base["num_batches"], base["departed"]], 1))

    setup = dict(config=name, horizon_s=horizon, Q=f"{bench_network.GROWN_Q[name]}, grown on overflow")
    run = f"1 seed x {horizon:g} s"
    target = RS_TARGET_RATIO if name == "rs" else TARGET_RATIO
    return Case("network", name, run, checked, setup, metrics, reference, lambda: (cfg, p), target=target)


BUILDERS: dict[str, Callable[..., list[Case]]] = {
    "dp": dp_cases,
    "kv": kv_cases,
    "offline": offline_cases,
    "interval": interval_cases,
    "budget": budget_cases,
    "network": network_cases,
}


# --------------------------------------------------------------------------- measurement


def time_engine(
    call: Callable[[int], np.ndarray], S: int, repeats: int = REPEATS
) -> tuple[float, list[float], np.ndarray]:
    """(first call s, the `repeats` timed calls' s, float64[S, m] values): `call(S)` once to
    compile and warm, then `repeats` times, each timed; values of the last call."""
    t0 = time.perf_counter()
    call(S)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        values = call(S)
        times.append(time.perf_counter() - t0)
    return first, times, values


def pooled_rate(slices: list[dict]) -> float:
    """Runs/s of reference slices taken together ({"runs", "seconds"} each)."""
    return sum(s["runs"] for s in slices) / sum(s["seconds"] for s in slices)


def fastest_slice(slices: list[dict]) -> dict:
    """The fastest of the reference slices ({"runs", "seconds"} each), by runs/s."""
    return max(slices, key=lambda s: s["runs"] / s["seconds"])


def agree(engine: np.ndarray, reference: np.ndarray, rtol: float) -> tuple[int, bool]:
    """(k, equal): the checked metrics of the first k = min(S, reference runs) runs compared,
    exactly when rtol is 0."""
    k = min(engine.shape[0], reference.shape[0])
    a, b = engine[:k], reference[:k]
    same = np.array_equal(a, b) if rtol == 0 else np.allclose(a, b, rtol=rtol, atol=0.0)
    return k, bool(same)


def core_ms(loops: int = PROBE_LOOPS) -> list[float] | None:
    """Milliseconds of a fixed pure-Python loop on each CPU this process may use, the calling
    thread pinned to one at a time (best of three each; None where the platform cannot pin).

    The load average counts this machine's runnable tasks only; on a virtual machine the host's
    other tenants can slow a core without any of them showing. A core slower than the others
    slows a batched engine, which waits for its slowest thread, more than a one-threaded
    reference, so the records carry this probe beside the load."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    out = []
    try:
        for cpu in sorted(allowed):
            os.sched_setaffinity(0, {cpu})
            best = math.inf
            for _ in range(3):
                t0 = time.perf_counter()
                s = 0
                for i in range(loops):
                    s += i * i
                best = min(best, time.perf_counter() - t0)
            out.append(round(1000 * best, 1))
    finally:
        os.sched_setaffinity(0, allowed)
    return out


def loadavg() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def case_step_cost(case: Case) -> dict[str, Any]:
    """`step_cost`'s row for the case's config and params, STEP_COST_SEEDS runs."""
    from benchmarks.step_cost import step_cost
    from jaxsched.engine import get_engine

    config, params = case.step_setup()
    # The case's own params: the defaults of a config need not be valid (e.g. rates too high
    # for its max_steps).
    return step_cost(get_engine(case.engine), config, seeds=STEP_COST_SEEDS, params=params)


INCOMPLETE = " INCOMPLETE: the rows measured so far (the run is going on or was stopped)."
NO_STEP_COST = dict(ops_per_step=None, copies=None, compile_s=None, lower_s=None, seeds=None)


def measure_case(
    case: Case,
    sizes: tuple[int, ...],
    reference_s: float,
    reused: dict | None,
    machine: str,
    step_cost: bool = True,
    on_row: Callable[[dict], None] | None = None,
    repeats: int = REPEATS,
) -> tuple[list[dict], dict]:
    """(rows, reference record) of one case: step cost (unless `step_cost` is False), the
    reference (measured here on `machine`, or `reused`), then the engine at every S; the load
    average before and after goes into each row. `on_row(row)` is called as each row is
    measured (the load after is then the load so far), so that a run stopped by a time limit
    keeps the rows it finished.

    A measured reference runs interleaved with the engine: a first slice of about reference_s
    wall seconds (its runs' metrics are the ones compared), then one of reference_s *
    SLICE_FRACTION after each S. The ratio at S divides the engine's fastest call by the
    faster of the two reference slices around it: on a shared host whose speed drifts, a
    disturbance only adds time, so each side's least disturbed figure is compared, measured
    in the same minute."""
    before, cores_before = loadavg(), core_ms()
    cost = case_step_cost(case) if step_cost else NO_STEP_COST
    if step_cost:
        log(f"{case.key}: {cost['ops_per_step']} ops per step, compile {cost['compile_s']:.2f} s")
    ref = reused or dict(case.reference(reference_s), source=None, machine=machine)
    slices = [{"runs": ref["runs"], "seconds": ref["seconds"]}]
    log(f"{case.key}: reference {pooled_rate(slices):.4g} runs/s ({ref['runs']} runs in {ref['seconds']:.2f} s)")
    rows = []
    for S in case.sizes or sizes:
        first, times, values = time_engine(case.engine_call, S, repeats)
        if reused is None:
            extra = case.reference(reference_s * SLICE_FRACTION)
            slices.append({"runs": extra["runs"], "seconds": extra["seconds"]})
        k, equal = agree(values, np.asarray(ref["values"], np.float64), case.rtol)
        rows.append(row_of(case, S, first, times, ref, slices[-2:], k, equal, cost))
        rows[-1].update(loadavg_before=before, loadavg_after=loadavg())
        if on_row is not None:
            on_row(rows[-1])
        log(
            f"{case.key} S={S}: {rows[-1]['engine_runs_per_s']:.4g} runs/s (fastest {rows[-1]['engine_s']:.2f} s of "
            f"{', '.join(f'{x:.2f}' for x in times)}), reference {rows[-1]['reference_runs_per_s']:.4g} runs/s "
            f"around it, ratio {rows[-1]['ratio']:.3g}, equal {equal} on {k}"
        )
    after, cores_after = loadavg(), core_ms()
    log(f"{case.key}: core probe {cores_before} ms before, {cores_after} ms after")
    for r in rows:
        r.update(loadavg_before=before, loadavg_after=after, reference_all_runs_per_s=pooled_rate(slices))
        r.update(core_ms_before=cores_before, core_ms_after=cores_after)
    if max(x or 0.0 for x in (before, after)) > LOAD_WARN:
        log(f"WARNING: {case.key}: load average {before} before, {after} after (above {LOAD_WARN})")
    record = {k: ref[k] for k in ("source", "machine")}
    # The rate a later run reuses (--reference-json) is that of every slice.
    record.update(runs=sum(s["runs"] for s in slices), seconds=sum(s["seconds"] for s in slices))
    record["slices"] = slices
    record.update(setup=case.setup, checked=list(case.checked), values=np.asarray(ref["values"]).tolist())
    return rows, record


def row_of(
    case: Case,
    S: int,
    first: float,
    times: list[float],
    ref: dict,
    around: list[dict],
    k: int,
    equal: bool,
    cost: dict,
) -> dict:
    """One JSON row (rates in runs/s): the engine's first and timed calls (s) at S runs, the
    reference record `ref` and its slices `around` the calls ({"runs", "seconds"}; the
    reused record alone when it was not measured here), equality on k runs, `step_cost`'s row."""
    timed = min(times)
    chosen = fastest_slice(around)
    rate, ref_rate = S / timed, chosen["runs"] / chosen["seconds"]
    ratio = rate / ref_rate
    return dict(
        engine=case.engine,
        case=case.name,
        run=case.run,
        size=S,
        engine_runs_per_s=rate,
        engine_s=timed,
        engine_times_s=list(times),
        engine_first_call_s=first,
        reference_runs_per_s=ref_rate,
        reference_runs=chosen["runs"],  # the slice the ratio is taken against
        reference_s=chosen["seconds"],
        reference_measured=ref.get("source") is None,
        reference_from=ref.get("source"),
        reference_machine=ref.get("machine"),
        ratio=ratio,
        target_ratio=case.target,
        target_size=case.target_size,
        target_met=(ratio >= case.target) if S == case.target_size else None,
        checked=list(case.checked),
        equal_on=k,
        equal=equal,
        ops_per_step=cost["ops_per_step"],
        copies_per_step=cost["copies"],
        compile_s=cost["compile_s"],
        lower_s=cost["lower_s"],
        step_cost_seeds=cost["seeds"],
        setup=case.setup,
        **case.extra,
    )


# --------------------------------------------------------------------------- reused references


def machine_line(env: dict[str, Any]) -> str:
    """The machine in a few words: backend, device kind, CPUs, platform."""
    return f"{env.get('backend')} ({env.get('device_kind')}), {env.get('cpu_count')} CPUs, {env.get('platform')}"


def load_references(path: Path) -> dict[str, dict]:
    """{case key: reference record with its source and machine} from an earlier run's JSON."""
    data = json.loads(path.read_text())
    machine = machine_line(data["environment"])
    out = {}
    for key, rec in data["references"].items():
        # The compared runs (the first slice's), not every slice's runs.
        values = np.asarray(rec["values"], np.float64).reshape(-1, len(rec["checked"]))
        out[key] = dict(
            rec, values=values, source=rec.get("source") or str(path), machine=rec.get("machine") or machine
        )
    return out


def reused_reference(case: Case, refs: dict[str, dict] | None) -> dict | None:
    """The earlier record for `case` (None: measure it); an error when the earlier run had none
    or another setup, since its rate and metrics would then describe other runs."""
    if refs is None:
        return None
    rec = refs.get(case.key)
    if rec is None:
        raise SystemExit(f"speed_table: --reference-json has no reference for {case.key}")
    if rec["setup"] != json.loads(json.dumps(case.setup)):
        raise SystemExit(f"speed_table: {case.key}: the reference was measured on {rec['setup']}, not {case.setup}")
    return rec


# --------------------------------------------------------------------------- output


def _fmt(x: float | None) -> str:
    """Three significant digits, '-' for None."""
    return "-" if x is None else f"{x:.3g}"


def _cores(ms: list[float] | None) -> str:
    """`core_ms`'s probe, one figure per core, '-' where none was taken."""
    return "-" if not ms else ", ".join(f"{x:.0f}" for x in ms)


def _yes(x: bool | None) -> str:
    return "-" if x is None else ("yes" if x else "NO")


def summary_table(rows: list[dict], sizes: tuple[int, ...]) -> str:
    """One line per case: the reference rate, the ratio at each S of `sizes` (and at any fixed
    size of its own), ops per step, compile s, the target, equality and the load."""
    from jaxsched.results import markdown_table

    cases: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        cases.setdefault((r["engine"], r["case"]), []).append(r)
    all_sizes = sorted({*sizes, *(r["size"] for r in rows)})
    header = ["engine", "case", "one run", "reference runs/s", *(f"ratio @{S}" for S in all_sizes)]
    header += ["ops/step", "compile s", "target", "target met", "equal", "load before / after"]
    header += ["core ms before / after"]
    lines = []
    for (engine, name), rs in cases.items():
        by_size = {r["size"]: r for r in rs}
        first = rs[0]
        reference = first.get("reference_all_runs_per_s", first["reference_runs_per_s"])  # older rows lack it
        met = next((r["target_met"] for r in rs if r["target_met"] is not None), None)
        ratios = [f"{by_size[S]['ratio']:.3g}x" if S in by_size else "" for S in all_sizes]
        lines.append(
            [
                engine,
                name,
                first["run"],
                _fmt(reference),
                *ratios,
            ]
            + [_fmt(first["ops_per_step"]), "-" if first["compile_s"] is None else f"{first['compile_s']:.2f}"]
            + [f">= {first['target_ratio']:g}x @{first['target_size']}", _yes(met)]
            + [_yes(all(r["equal"] for r in rs)), f"{_fmt(first['loadavg_before'])} / {_fmt(first['loadavg_after'])}"]
            + [f"{_cores(first.get('core_ms_before'))} / {_cores(first.get('core_ms_after'))}"]
        )
    return markdown_table(header, lines)


def detail_table(rows: list[dict]) -> str:
    """One line per JSON row."""
    from jaxsched.results import markdown_table

    header = ["engine", "case", "S", "engine runs/s", "engine s", "reference runs/s", "ratio", "equal (on k)"]
    return markdown_table(
        header,
        [
            [
                r["engine"],
                r["case"],
                str(r["size"]),
                _fmt(r["engine_runs_per_s"]),
                f"{r['engine_s']:.3g}",
                _fmt(r["reference_runs_per_s"]),
                f"{r['ratio']:.3g}x",
                f"{_yes(r['equal'])} ({r['equal_on']})",
            ]
            for r in rows
        ],
    )


def markdown(rows: list[dict], env: dict[str, Any], meta: dict[str, Any]) -> str:
    """The report: machine, the summary table, notes, the per-size table."""
    from benchmarks.bench_dp import environment_line

    quick = " (--quick)" if meta["mode"] == "quick" else ""
    reused = sorted({r["reference_from"] for r in rows if not r["reference_measured"]})
    source = (
        f"Reference rates reused from {', '.join(reused)} (measured on "
        f"{', '.join(sorted({r['reference_machine'] for r in rows if not r['reference_measured']}))})."
        if reused
        else (
            f"References measured in this run: a first slice of about {meta['reference_s']:g} s, then "
            f"{meta['reference_s'] * SLICE_FRACTION:g} s after each S."
        )
    )
    warnings = [
        f"WARNING: load average above {LOAD_WARN} around {r['engine']}/{r['case']}: "
        f"{_fmt(r['loadavg_before'])} before, {_fmt(r['loadavg_after'])} after."
        for r in {(r["engine"], r["case"]): r for r in rows}.values()
        if max(x or 0.0 for x in (r["loadavg_before"], r["loadavg_after"])) > LOAD_WARN
    ]
    return "\n".join(
        [
            f"# Speed of the six engines against their references{quick}",
            "",
            f"{environment_line(env)}; {env.get('platform', '')}.",
            "",
            summary_table(rows, tuple(meta["sizes"])),
            "",
            f"ratio @S: engine runs/s over S runs at once (the fastest of {meta.get('repeats', REPEATS)} "
            "timed calls after a first, results on the host) / the reference's runs/s (one run "
            "at a time) in the faster of its slices just before and after those calls (reference "
            "runs/s: every slice together). ops/step and compile s: "
            f"`step_cost` on the case's config with {STEP_COST_SEEDS} runs. equal: the checked "
            "metrics of every run both made agree (JSON `checked`). load: 1-minute load average "
            "before and after the case. core ms: a fixed pure-Python loop on each core, best of three "
            f"(`core_ms`): a shared host's other tenants slow a core without showing in the load. {source}",
            *([""] + warnings if warnings else []),
            "",
            detail_table(rows),
            "",
            f"Total wall time {meta['wall_s']:.0f} s."
            + (
                ""
                if meta.get("complete", True)
                else " INCOMPLETE: the rows measured so far (the run is going on or was stopped)."
            ),
            "",
        ]
    )


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed_table", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"S = {QUICK_SIZES}, short runs: 2 to 3 minutes on 2 cores")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    ap.add_argument("--sizes", nargs="+", type=int, default=None, metavar="S", help=f"batch sizes (default {SIZES})")
    ap.add_argument(
        "--out", type=Path, default=None, help="JSON output (default benchmarks/results/speed_table[_quick].json)"
    )
    ap.add_argument("--reference-s", type=float, default=None, help="wall seconds per reference (default by mode)")
    ap.add_argument(
        "--reference-json", type=Path, default=None, help="reuse the reference rates of an earlier run's JSON"
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="write one table from earlier runs' JSON files (e.g. one per engine, each under its own time limit)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        metavar="N",
        help=f"timed engine calls per S after the first; the fastest counts (default {REPEATS})",
    )
    ap.add_argument(
        "--skip-step-cost",
        action="store_true",
        help="leave out ops/step and compile s (saves one compilation per case, e.g. on a GPU lease)",
    )
    ap.add_argument(
        "--offline-extra",
        nargs="*",
        type=int,
        default=None,
        metavar="N",
        help=f"offline n also timed at S = {OFFLINE_EXTRA_SIZE} (default: {FULL.offline_extra_n}, none with --quick)",
    )
    a = ap.parse_args(argv)
    if a.sizes is not None and min(a.sizes) < 1:
        ap.error("--sizes must be >= 1")
    if a.reference_s is not None and a.reference_s < 0:
        ap.error("--reference-s must be >= 0")
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")
    return a


def build_cases(engines: list[str], mode: Mode, sizes: tuple[int, ...], extra_n: tuple[int, ...]) -> list[Case]:
    """Every case of the engines asked for, in ENGINES order."""
    rows = max(max(sizes), mode.reference_rows)
    cases = []
    for name in (e for e in ENGINES if e in engines):
        kw = dict(extra_n=extra_n) if name == "offline" else {}
        cases += BUILDERS[name](mode, rows, **kw)
    return cases


def main(argv: list[str] | None = None) -> int:
    from benchmarks.bench_offline import environment

    a = parse_args(argv)
    if a.merge:
        return merge(a.merge, a.out or _HERE / "results" / "speed_table_merged.json")
    mode = QUICK if a.quick else FULL
    sizes = tuple(dict.fromkeys(a.sizes)) if a.sizes else mode.sizes
    extra_n = tuple(a.offline_extra) if a.offline_extra is not None else mode.offline_extra_n
    reference_s = mode.reference_s if a.reference_s is None else a.reference_s
    out = a.out or _HERE / "results" / ("speed_table_quick.json" if a.quick else "speed_table.json")
    refs = load_references(a.reference_json) if a.reference_json else None
    env = environment()
    log(f"backend {env['backend']} ({env['device_kind']}), {env['cpu_count']} CPUs, load {env['loadavg_at_start']}")
    machine = machine_line(env)
    t0 = time.perf_counter()
    rows: list[dict] = []
    references: dict[str, dict] = {}

    def report(final: bool) -> tuple[dict, str]:
        meta = dict(mode=mode.name, sizes=list(sizes), reference_s=reference_s, wall_s=time.perf_counter() - t0)
        meta["repeats"] = a.repeats
        meta["complete"] = final
        env["loadavg_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
        md = markdown(rows, env, meta)
        payload = dict(
            environment=env,
            settings=dict(meta, mode_settings=dataclasses.asdict(mode), offline_extra_n=list(extra_n)),
            reference_json=str(a.reference_json) if a.reference_json else None,
            rows=rows,
            references=references,
            markdown=md,
        )
        return payload, md

    def checkpoint(_row: dict) -> None:
        # Rows so far, marked incomplete: what a run stopped by a time limit leaves behind.
        payload, md = report(final=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, json.dumps(payload, indent=1, default=float))
        atomic_write(out.with_suffix(".md"), md)

    for case in build_cases(a.engines, mode, sizes, extra_n):
        reused = reused_reference(case, refs)
        new, references[case.key] = measure_case(
            case,
            sizes,
            reference_s,
            reused,
            machine,
            not a.skip_step_cost,
            lambda r: (rows.append(r), checkpoint(r)),
            a.repeats,
        )
    payload, md = report(final=True)
    from benchmarks.bench_dp import write_report

    return write_report(out, payload, md, all(r["equal"] for r in rows), log)


def merge(paths: list[Path], out: Path) -> int:
    """One report from several runs' JSON files (their rows in the order given, the first
    file's machine and settings; a file a time limit cut short counts as incomplete); exit 1
    if any row's engine and reference differ. Files that are missing are named and skipped."""
    from benchmarks.bench_dp import write_report

    runs = []
    for path in paths:
        if path.exists():
            runs.append(json.loads(path.read_text()))
        else:
            log(f"merge: {path} is missing (that run wrote nothing): skipped")
    if not runs:
        raise SystemExit("speed_table: --merge: none of the files exists")
    rows = [r for run in runs for r in run["rows"]]
    complete = all(run["settings"].get("complete", True) for run in runs) and len(runs) == len(paths)
    sizes = sorted({S for run in runs for S in run["settings"]["sizes"]})
    meta = dict(runs[0]["settings"], sizes=sizes, complete=complete)
    meta["wall_s"] = sum(run["settings"]["wall_s"] for run in runs)
    env = runs[0]["environment"]
    md = markdown(rows, env, meta)
    references = {k: v for run in runs for k, v in run["references"].items()}
    payload = dict(environment=env, settings=meta, merged=[str(p) for p in paths], rows=rows, references=references)
    payload["markdown"] = md
    return write_report(out, payload, md, all(r["equal"] for r in rows), log)


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename, so a reader (or a run
    stopped midway) never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
