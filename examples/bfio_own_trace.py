"""BF-IO against FCFS on your own request trace, from Python.

Reads a trace with `jaxsched.read_trace` (any layout of docs/traces.md: BurstGPT, Azure,
Mooncake, Vidur, splitwise-sim or a plain two-column CSV of prompt and output lengths; or a
name from `jaxsched data list` once downloaded), resamples it per seed, runs the dp engine's
FCFS and BF-IO admission over the same seeds with `jaxsched.simulate`, prints each policy's
mean and 95% confidence interval over the seeds, and saves the per-seed and summary CSVs.
Without `--trace` it first writes a small synthetic two-column CSV (heavy-tailed prompts and
outputs) into the output folder and uses that.

    python examples/bfio_own_trace.py [--trace PATH_OR_NAME] [--seeds 8] [--steps 2000]
                                      [--G 8] [--B 32] [--out results/bfio_own_trace] [--quick]

Files in --out: per_seed.csv (policy, seed, every metric), summary.csv (policy, metric mean and
95% CI half-width), and synthetic_trace.csv when no --trace was given.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from jaxsched.results import write_csv

POLICIES = ("fcfs", "bfio")
# The metrics the table shows: mean token imbalance across workers (tokens), throughput
# (tokens/s) and the p99 wait before admission (s).
SHOWN = ("avg_imbalance_tokens", "throughput_tokens_per_s", "queue_delay_p99_s")


def write_synthetic_trace(path: Path, rows: int, seed: int = 0) -> Path:
    """A two-column CSV (prompt,output) of `rows` requests: log-normal lengths in tokens,
    prompts of median about 250 and outputs of median about 60, both capped at 8192."""
    gen = np.random.default_rng(seed)
    prompt = np.clip(np.rint(gen.lognormal(np.log(250), 1.0, rows)), 1, 8192).astype(int)
    output = np.clip(np.rint(gen.lognormal(np.log(60), 1.2, rows)), 1, 8192).astype(int)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt", "output"])
        w.writerows(zip(prompt.tolist(), output.tolist()))
    return path


def compare(trace, seeds: range, steps: int, G: int, B: int, R: int) -> dict[str, dict[str, np.ndarray]]:
    """{policy: {metric: float64[len(seeds)]}}: one dp run per (policy, seed) on `trace`."""
    import jaxsched as js

    out = {}
    for policy in POLICIES:
        cfg = js.dp.DPConfig(
            policy=policy, num_workers=G, slots_per_worker=B, pool_size=R, num_steps=steps, workload=trace
        )
        out[policy] = js.simulate(cfg, seeds=seeds).metrics
    return out


def summarize(metrics: dict[str, dict[str, np.ndarray]]) -> list[dict]:
    """One row per policy: each shown metric's mean and 95% CI half-width over the seeds."""
    from jaxsched.stats import mean_ci

    rows = []
    for policy, m in metrics.items():
        row: dict = {"policy": policy, "seeds": len(m[SHOWN[0]])}
        for k in SHOWN:
            mean, _, half, _ = mean_ci(m[k])
            row[f"{k}_mean"], row[f"{k}_ci95"] = mean, half
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    """The summary as aligned text, one line per policy."""
    head = f"{'policy':<8}" + "".join(f"{k:>34}" for k in SHOWN)
    lines = [head]
    for r in rows:
        cells = "".join(f"{r[f'{k}_mean']:>22.4g} ± {r[f'{k}_ci95']:<9.3g}" for k in SHOWN)
        lines.append(f"{r['policy']:<8}{cells}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="trace file or known trace name (default: a synthetic CSV written here)")
    ap.add_argument("--out", default="results/bfio_own_trace", help="output folder")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2000, help="decode steps per run")
    ap.add_argument("--G", type=int, default=8, help="workers")
    ap.add_argument("--B", type=int, default=32, help="slots per worker")
    ap.add_argument("--quick", action="store_true", help="a small run: 3 seeds, 200 steps, G=4, B=8")
    a = ap.parse_args()
    if a.quick:
        a.seeds, a.steps, a.G, a.B = 3, 200, 4, 8
    from jaxsched.workload import read_trace

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    source = a.trace or write_synthetic_trace(out / "synthetic_trace.csv", rows=2000)
    trace = read_trace(source)  # resampled per seed; a name resolves in the data folder
    print(f"trace: {source} ({trace.prompt.size} rows, mean prompt {trace.prompt.mean():.0f} tokens)")
    metrics = compare(trace, range(a.seeds), a.steps, a.G, a.B, R=2 * a.G)
    per_seed = [
        {"policy": p, "seed": s, **{k: float(v[i]) for k, v in m.items()}}
        for p, m in metrics.items()
        for i, s in enumerate(range(a.seeds))
    ]
    summary = summarize(metrics)
    print(f"G={a.G}, B={a.B}, {a.steps} steps, mean ± 95% CI over {a.seeds} seeds:")
    print(table(summary))
    print(f"results: {write_csv(out / 'per_seed.csv', per_seed)}, {write_csv(out / 'summary.csv', summary)}")


if __name__ == "__main__":
    main()
