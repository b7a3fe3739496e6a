"""Speed of the interval engine (paper 003): A_min and A_max, 1 to 1024 instances at once,
against the plain-Python reference in the same run.

    python -m benchmarks.bench_interval [--quick] [--out benchmarks/results/interval_speed.json]
    python -m benchmarks.bench_interval --events   # event skipping against unit steps

Instances: the LMSYS-like jobs of paper 003's section 6 (`jaxsched.interval.workloads.LMSYS`),
n = N_JOBS per instance, instance k from seed k, M = CAPACITY tokens, Experiment 2's bucket
intervals ([1, 100], ..., [901, 1000]), unit steps. For each policy and batch size S in
BATCHES, `jaxsched.interval.execute` runs S instances: a first call compiles and warms up, the
second identical call is timed (it returns NumPy metrics, so all device work is included);
instances/s = S / seconds. The reference (`tests/reference/interval.py::simulate`) runs
instances one at a time for about REF_TARGET_S seconds (at least one): instances/s = instances
run / their seconds. ratio = engine / reference, both from this run. The engine's TEL and
eviction count must equal the reference's on every instance the reference ran; the script
exits 1 otherwise. Writes JSON to --out and the markdown table next to it (.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_dp import environment, environment_line, write_report
from jaxsched.interval import Buckets, execute
from jaxsched.interval.workloads import LMSYS
from jaxsched.offline.config import instance_params
from jaxsched.results import markdown_table
from jaxsched.workload import materialize
from tests.reference import interval as ref

_HERE = Path(__file__).resolve().parent
N_JOBS = 200
CAPACITY = 4096
BATCHES = (1, 4, 16, 64, 256, 1024)
QUICK_BATCHES = (1, 16)
POLICIES = ("amin", "amax")
REF_TARGET_S = 20.0
QUICK_REF_TARGET_S = 3.0


def log(msg: str) -> None:
    print(f"[bench_interval {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def instances(S: int) -> tuple[np.ndarray, ...]:
    """(s, o, l, u) int[S, N_JOBS]: instance k drawn from seed k, bucket intervals."""
    s, o = (np.stack(x) for x in zip(*(materialize(LMSYS, k, N_JOBS) for k in range(S))))
    lo, hi = (np.asarray(v) for v in Buckets.uniform(100, 10).bounds(o))
    return s, o, lo, hi


def bench_engine(policy: str, inst, S: int) -> dict:
    args = [a[:S] for a in inst]
    P = instance_params(CAPACITY)
    t0 = time.perf_counter()
    execute(P, *args, policy=policy, seeds=np.arange(S))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = execute(P, *args, policy=policy, seeds=np.arange(S))
    dt = time.perf_counter() - t0
    return dict(
        policy=policy,
        instances=S,
        seconds=dt,
        compile_s=max(0.0, first - dt),
        per_s=S / dt,
        tel=out["tel_steps"],
        evictions=out["evictions"],
        max_makespan=float(out["makespan_steps"].max()),
    )


def bench_reference(policy: str, inst, target_s: float) -> dict:
    tels, evs, t0 = [], [], time.perf_counter()
    while not tels or (time.perf_counter() - t0 < target_s and len(tels) < inst[0].shape[0]):
        k = len(tels)
        r = ref.simulate(*(list(map(int, a[k])) for a in inst), CAPACITY, policy, seed=k)
        tels.append(r["tel"])
        evs.append(sum(r["evictions"]))
    dt = time.perf_counter() - t0
    return dict(
        policy=policy,
        instances=len(tels),
        seconds=dt,
        per_s=len(tels) / dt,
        tel=np.array(tels, float),
        evictions=np.array(evs, float),
    )


@contextlib.contextmanager
def unit_stepping():
    """`execute` runs one unit step per scan step inside this context (the engine's
    `unit_step`, as before event skipping), for the events-against-unit-steps comparison."""
    import jaxsched.interval.instances as ii
    from jaxsched.interval.engine import step_bound, unit_step

    def step(config, inst, state, record):
        new, row = unit_step(config, inst.params, state, step_bound(config, inst.params))
        return new, (row if record else None)

    saved = ii.INSTANCES
    ii.INSTANCES = dataclasses.replace(saved, name="interval_instances_unit", step=step)
    try:
        yield
    finally:
        ii.INSTANCES = saved


def events_against_unit_steps(S: int = 64, rounds: int = 3) -> list[dict]:
    """Per policy: instances/s of `execute` with event skipping and with unit steps on the same
    S instances, timed alternately `rounds` times after a warm-up call of each (best of the
    rounds); TEL and evictions must be equal."""
    inst, rows = instances(S), []
    for policy in POLICIES:
        ev, un = bench_engine(policy, inst, S), None
        with unit_stepping():
            un = bench_engine(policy, inst, S)
        best_ev, best_un = ev["seconds"], un["seconds"]
        for _ in range(rounds - 1):
            best_ev = min(best_ev, bench_engine(policy, inst, S)["seconds"])
            with unit_stepping():
                best_un = min(best_un, bench_engine(policy, inst, S)["seconds"])
        equal = bool((ev["tel"] == un["tel"]).all() and (ev["evictions"] == un["evictions"]).all())
        rows.append(
            dict(
                policy=policy,
                instances=S,
                events_per_s=S / best_ev,
                unit_per_s=S / best_un,
                ratio=best_un / best_ev,
                equal=equal,
            )
        )
        log(f"{policy}: events {S / best_ev:.3g}/s, unit steps {S / best_un:.3g}/s, ratio {best_un / best_ev:.3g}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_interval", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="batches 1 and 16, a short reference")
    ap.add_argument(
        "--events",
        action="store_true",
        help="only event skipping against unit stepping (64 instances, alternated, best of 3)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/interval_speed[_quick].json); markdown beside it (.md)",
    )
    a = ap.parse_args(argv)
    if a.events:
        load = os.getloadavg()[0]
        rows = events_against_unit_steps()
        print(
            markdown_table(
                ["policy", "instances", "events /s", "unit steps /s", "ratio", "equal"],
                [
                    [
                        r["policy"],
                        str(r["instances"]),
                        f"{r['events_per_s']:.3g}",
                        f"{r['unit_per_s']:.3g}",
                        f"{r['ratio']:.2f}x",
                        str(r["equal"]),
                    ]
                    for r in rows
                ],
            )
            + f"\n\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after"
        )
        return 0 if all(r["equal"] for r in rows) else 1
    out = a.out or _HERE / "results" / ("interval_speed_quick.json" if a.quick else "interval_speed.json")
    batches = QUICK_BATCHES if a.quick else BATCHES
    env = environment()
    inst = instances(max(batches))
    rows, ok = [], True
    for policy in POLICIES:
        base = bench_reference(policy, inst, QUICK_REF_TARGET_S if a.quick else REF_TARGET_S)
        log(f"{policy}: reference {base['per_s']:.3g} instances/s over {base['instances']}")
        for S in batches:
            r = bench_engine(policy, inst, S)
            k = min(S, base["instances"])
            equal = bool(
                (r["tel"][:k] == base["tel"][:k]).all() and (r["evictions"][:k] == base["evictions"][:k]).all()
            )
            ok &= equal
            rows.append(
                dict(
                    policy=policy,
                    instances=S,
                    engine_per_s=r["per_s"],
                    engine_s=r["seconds"],
                    compile_s=r["compile_s"],
                    max_makespan=r["max_makespan"],
                    reference_per_s=base["per_s"],
                    reference_instances=base["instances"],
                    ratio=r["per_s"] / base["per_s"],
                    equal_on=k,
                    equal=equal,
                )
            )
            log(
                f"{policy} S={S}: {r['per_s']:.3g} instances/s ({r['seconds']:.2f} s), ratio "
                f"{r['per_s'] / base['per_s']:.3g}, equal {equal}"
            )
    md = "\n".join(
        [
            f"# Interval engine speed{' (--quick)' if a.quick else ''}",
            "",
            f"{environment_line(env)}.",
            "",
            f"Instances: LMSYS-like, n = {N_JOBS} jobs, M = {CAPACITY} tokens, bucket intervals "
            "(Experiment 2), unit steps. Engine: instances / seconds of the second of two identical "
            "`execute` calls; reference: `tests/reference/interval.py` one instance at a time; "
            "ratio = engine / reference instances/s, from this run. equal: engine TEL and "
            "evictions = reference's on the instances both ran.",
            "",
            markdown_table(
                [
                    "policy",
                    "instances",
                    "engine inst/s",
                    "engine s",
                    "compile s",
                    "max makespan",
                    "reference inst/s",
                    "ratio",
                    "equal (on k)",
                ],
                [
                    [
                        r["policy"],
                        str(r["instances"]),
                        f"{r['engine_per_s']:.4g}",
                        f"{r['engine_s']:.3g}",
                        f"{r['compile_s']:.3g}",
                        f"{r['max_makespan']:.0f}",
                        f"{r['reference_per_s']:.3g}",
                        f"{r['ratio']:.3g}",
                        f"{'yes' if r['equal'] else 'NO'} ({r['equal_on']})",
                    ]
                    for r in rows
                ],
            ),
            "",
        ]
    )
    return write_report(out, dict(environment=env, rows=rows), md, ok, log)


if __name__ == "__main__":
    sys.exit(main())
