"""Speed of the interval engine (paper 003): A_min and A_max, 1 to 1024 instances at once,
against the plain-Python reference in the same run.

    python -m benchmarks.bench_interval [--quick] [--out benchmarks/results/interval_speed.json]

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_interval", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="batches 1 and 16, a short reference")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/interval_speed[_quick].json); markdown beside it (.md)",
    )
    a = ap.parse_args(argv)
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
