"""Lanes that refill against chunks that wait for their slowest run, in the same run.

    python -m benchmarks.bench_lanes [--seeds 1024] [--engines offline interval ...] [--repeats 2]

For each engine whose runs end at different steps (kv, offline, interval, budget, network), one
configuration (`CASES`) runs `--seeds` seeds through `jaxsched.simulate` twice per repeat,
chunked (`lanes=False`) and through lanes that refill (`lanes=True`), in alternating order after
one warm-up call of each (compilation excluded). The metrics must be bitwise equal (exit 1
otherwise). Reports the median times, the ratio chunks / lanes, and the spread of run lengths
that the lanes recover (steps of the longest run over the mean); lanes (= the chunk) per
program: with no more seeds than one chunk holds, both are the same run. Writes
`benchmarks/results/lanes.{json,md}` with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "lanes.json"


def cases() -> dict:
    """{case: (config, params or None, steps metric)}: configurations whose runs end at spread-out
    steps."""
    from jaxsched.budget import BudgetConfig
    from jaxsched.interval import IntervalConfig
    from jaxsched.kv import KVConfig
    from jaxsched.network import NetworkConfig
    from jaxsched.offline import OfflineConfig, make_params
    from jaxsched.offline.workloads import named
    from jaxsched.workload import Batch, Independent, UniformInt

    batch = Batch(Independent(UniformInt(1, 200), UniformInt(1, 400)), 200)
    mix, M = named("mix", 200)  # section 7's LMSYS/arXiv-like mix: widely spread run lengths
    mix_cfg = OfflineConfig(mix, policy="fcfs")
    return {
        "offline": (OfflineConfig(batch, policy="fcfs"), None, "makespan_steps"),
        "offline_mix": (mix_cfg, make_params(mix_cfg, capacity_tokens=M), "makespan_steps"),
        "interval": (IntervalConfig(batch), None, "makespan_steps"),
        "kv": (KVConfig(num_requests=400, table_size=512), None, "num_epochs"),
        "budget": (BudgetConfig(horizon_s=20.0, table_size=512), None, "num_steps"),
        "network": (NetworkConfig(horizon_s=10.0, table_size=512), None, "num_steps"),
    }


def main(argv=None) -> int:
    from benchmarks.bench_dp import environment, environment_line, write_report
    from jaxsched.engine import engine_of
    from jaxsched.results import markdown_table
    from jaxsched.run import default_seed_chunk, simulate

    all_cases = cases()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=1024)
    p.add_argument("--engines", nargs="+", default=list(all_cases), choices=list(all_cases))
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args(argv)
    if a.seeds < 2 or a.repeats < 1:
        p.error("--seeds must be >= 2 and --repeats >= 1")
    env = environment()
    rows, ok = [], True
    for name in a.engines:
        cfg, params, steps_metric = all_cases[name]
        eng = engine_of(cfg)
        seeds = range(a.seeds)
        run = lambda lanes: simulate(cfg, params, seeds=seeds, lanes=lanes, warn=False)
        ref = {lanes: run(lanes) for lanes in (False, True)}  # compile and warm up
        same = all(ref[False].metrics[k].tobytes() == ref[True].metrics[k].tobytes() for k in eng.METRICS)
        ok &= same
        times = {False: [], True: []}
        for r in range(a.repeats):
            for lanes in (False, True) if r % 2 == 0 else (True, False):
                t0 = time.perf_counter()
                run(lanes)
                times[lanes].append(time.perf_counter() - t0)
        steps = ref[False].metrics[steps_metric]
        chunks_s, lanes_s = statistics.median(times[False]), statistics.median(times[True])
        rows.append(
            dict(
                engine=name,
                seeds=a.seeds,
                lanes=default_seed_chunk(eng, cfg, a.seeds),
                chunks_s=round(chunks_s, 3),
                lanes_s=round(lanes_s, 3),
                speedup=round(chunks_s / lanes_s, 2),
                longest_over_mean_steps=round(float(steps.max() / steps.mean()), 2),
                same_metrics=same,
            )
        )
        print(rows[-1], flush=True)
    env["loadavg_at_end"] = list(os.getloadavg())
    md = (
        f"{environment_line(env)}, at end {env['loadavg_at_end']}\n\n"
        + markdown_table(list(rows[0]), [[str(v) for v in r.values()] for r in rows])
        + "\n"
    )
    return write_report(Path(a.out), dict(environment=env, rows=rows), md, ok, print)


if __name__ == "__main__":
    raise SystemExit(main())
