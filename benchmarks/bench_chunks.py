"""CPU seed chunk sizes against the default (`jaxsched.run.default_seed_chunk`), in the same run.

    python -m benchmarks.bench_chunks [--engines kv budget] [--seeds 1024] [--small 64]
        [--chunks 32 64 128 256 512 1024] [--repeats 3] [--quick]
        [--out benchmarks/results/chunks.json]

For each speed-table case of the engines (`benchmarks.speed_table`, full sizes; --quick: its
quick ones; any of the six engines), one warm-up call per arm (compilation excluded), then
`--repeats` rounds that call every arm once, in alternating order. The arms: `--seeds` runs
in the default chunk and in each of `--chunks`, and `--small` runs in their default chunk
(the speed table's smaller size, for the per-run cost). The metrics of every arm must be
bitwise those of the default chunk on the same runs (exit 1 otherwise). Reports the fastest
call of each arm in milliseconds per run, the default chunk, and the load average before and
after; writes `--out` (.json and .md).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "chunks.json"


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray], n: int) -> bool:
    """Whether the first n runs' metrics of a and b are bitwise equal."""
    return a.keys() == b.keys() and all(a[k][:n].tobytes() == b[k][:n].tobytes() for k in a)


def main(argv=None) -> int:
    from benchmarks import speed_table
    from benchmarks.bench_dp import environment, environment_line, write_report
    from jaxsched.engine import engine_of
    from jaxsched.results import markdown_table
    from jaxsched.run import default_seed_chunk

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--engines",
        nargs="+",
        default=["kv", "budget"],
        choices=["dp", "kv", "offline", "interval", "budget", "network"],
    )
    p.add_argument("--seeds", type=int, default=1024)
    p.add_argument("--small", type=int, default=64)
    p.add_argument("--chunks", type=int, nargs="+", default=[32, 64, 128, 256, 512, 1024])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="the speed table's quick cases (a smoke test)")
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args(argv)
    if a.seeds < 2 or not 1 <= a.small <= a.seeds or a.repeats < 1 or min(a.chunks) < 1:
        p.error("need --seeds >= 2, 1 <= --small <= --seeds, --repeats >= 1 and every --chunks >= 1")
    env = environment()
    rows, ok = [], True
    for case in speed_table.build_cases(a.engines, speed_table.QUICK if a.quick else speed_table.FULL, (a.seeds,), ()):
        cfg, _ = case.step_setup()
        # The offline and interval cases run their engine on explicit instances, whose chunk
        # depends on n alone, like their step_setup config's.
        default = default_seed_chunk(engine_of(cfg), cfg, a.seeds)
        others = [c for c in sorted(set(a.chunks)) if c != default]
        arms = [(a.seeds, None)] + [(a.seeds, c) for c in others] + [(a.small, None)]

        def call(arm):
            return {k: np.asarray(v) for k, v in case.metrics(arm[0], seed_chunk=arm[1]).items()}

        base = call(arms[0])
        case_ok = all(same(base, call(arm), arm[0]) for arm in arms[1:])
        ok &= case_ok
        times = {arm: [] for arm in arms}
        for r in range(a.repeats):
            for arm in arms if r % 2 == 0 else arms[::-1]:
                t0 = time.perf_counter()
                call(arm)
                times[arm].append(time.perf_counter() - t0)
        ms = {arm: 1e3 * min(t) / arm[0] for arm, t in times.items()}
        row = {"case": case.key, "default chunk": default, f"ms/run @{a.seeds}, default": round(ms[arms[0]], 3)}
        row |= {f"chunk {c}": round(ms[(a.seeds, c)], 3) for c in others}
        row |= {f"ms/run @{a.small}, default": round(ms[arms[-1]], 3), "same metrics": case_ok}
        row["load after"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        print(row, flush=True)
    env["loadavg_at_end"] = list(os.getloadavg())
    # One table per case: the chunk columns differ with the default chunk.
    tables = [markdown_table(list(r), [[str(v) for v in r.values()]]) for r in rows]
    md = "\n\n".join([f"{environment_line(env)}, at end {env['loadavg_at_end']}", *tables])
    return write_report(Path(a.out), dict(environment=env, args=vars(a), rows=rows), md + "\n", ok, print)


if __name__ == "__main__":
    raise SystemExit(main())
