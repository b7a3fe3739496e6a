"""Quality against speed of the BF-IO H = 0 kernel variants, inside the running engine.

For every variant in `kernels.BFIO_VARIANTS`:
- its cost per step inside the dp engine (G = 16, B = 72, R = 64, BurstGPT-like workload,
  `--seeds` seeds, after compilation), in microseconds per seed-step;
- its effect on the simulated metrics of the Table 1 stream (BurstGPT sample, N = 100 000,
  numpy default_rng(42)), over the first `--steps` steps (average imbalance, throughput), or on
  the BurstGPT-like workload when the trace is absent;
- its exactness on the instance families of `bench_kernel_quality.py`
  (benchmarks/results/kernel_quality.json, when present).
Writes benchmarks/results/kernel_frontier.{md,json,png}. Run:
    python -m benchmarks.bench_kernel_frontier [--steps 1000] [--seeds 8] [--variants vf,vf_ls] [--plot-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import jaxsched as js
from jaxsched.dp import simulate
from jaxsched.dp.experiments import table1_workload
from jaxsched.kernels import BFIO_VARIANTS
from jaxsched.results import markdown_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TRACE = ROOT.parent / "shared" / "data" / "burstgpt_8000.csv"


def log(msg: str) -> None:
    print(f"[frontier {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def step_cost_us(variant: str, seeds: int, steps: int) -> float:
    """Microseconds per seed-step of the engine with this kernel (after compilation)."""
    cfg = js.dp.DPConfig(policy="bfio", bfio_kernel=variant, num_steps=steps)
    p = js.dp.make_params(cfg)
    simulate(cfg, p, range(seeds))
    return simulate(cfg, p, range(seeds)).wall_s / (seeds * steps) * 1e6


def table1_metrics(variant: str, steps: int) -> dict[str, float]:
    """Average imbalance and throughput over the first `steps` steps of the Table 1 stream."""
    wl = table1_workload(str(TRACE)) if TRACE.is_file() else js.BurstGPTLike()
    cfg = js.dp.DPConfig(policy="bfio", bfio_kernel=variant, num_steps=steps, workload=wl)
    m = simulate(cfg, js.dp.make_params(cfg), [0], block_steps=min(steps, 1024)).metrics
    return {
        "avg_imbalance_tokens": float(m["avg_imbalance_tokens"][0]),
        "throughput_tokens_per_s": float(m["throughput_tokens_per_s"][0]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_kernel_frontier", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000, help="Table 1 steps per variant")
    ap.add_argument("--seeds", type=int, default=8, help="seeds for the cost measurement")
    ap.add_argument("--cost-steps", type=int, default=50, help="steps for the cost measurement")
    ap.add_argument("--variants", default=",".join(BFIO_VARIANTS))
    ap.add_argument(
        "--plot-only", action="store_true", help="redraw the table and plot from kernel_frontier.json without measuring"
    )
    a = ap.parse_args()
    if a.plot_only:
        saved = json.loads((RESULTS / "kernel_frontier.json").read_text())
        return write_outputs(saved["rows"], saved["steps"], saved.get("seeds", a.seeds))
    quality_path = RESULTS / "kernel_quality.json"
    quality = json.loads(quality_path.read_text()) if quality_path.is_file() else None
    rows = []
    for v in a.variants.split(","):
        log(f"{v}: cost")
        cost = step_cost_us(v, a.seeds, a.cost_steps)
        log(f"{v}: {cost:.0f} us/seed-step; Table 1 stream, {a.steps} steps")
        t = time.perf_counter()
        met = table1_metrics(v, a.steps)
        log(f"{v}: imbalance {met['avg_imbalance_tokens']:.0f} ({time.perf_counter() - t:.0f} s)")
        row = {"variant": v, "us_per_seed_step": cost, **met}
        if quality:
            for res in quality.get("families", []):
                q = res.get("methods", {}).get(v)
                if q:
                    row[f"exact_{res['family']}"] = q["exact"]
                    row[f"excess_{res['family']}"] = q["agg_excess"]
        rows.append(row)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "kernel_frontier.json").write_text(
        json.dumps({"steps": a.steps, "seeds": a.seeds, "rows": rows}, indent=1)
    )
    return write_outputs(rows, a.steps, a.seeds)


def write_outputs(rows: list[dict], steps: int, seeds: int) -> int:
    """kernel_frontier.md (rows in the given order) and .png (points joined in order of cost)."""
    fams = [k[len("exact_") :] for k in rows[0] if k.startswith("exact_")]
    table = markdown_table(
        ["variant", "us / seed-step", "avg imbalance (tokens)", "throughput (tok/s)"] + [f"exact {f}" for f in fams],
        [
            [
                r["variant"],
                f"{r['us_per_seed_step']:.0f}",
                f"{r['avg_imbalance_tokens']:.0f}",
                f"{r['throughput_tokens_per_s']:.0f}",
            ]
            + [f"{100 * r['exact_' + f]:.1f}%" for f in fams]
            for r in rows
        ],
    )
    src = "Table 1 stream" if TRACE.is_file() else "BurstGPT-like workload"
    md = (
        f"# BF-IO H = 0 kernels: quality against speed\n\nEngine cost at G=16, B=72, R=64 "
        f"({seeds} seeds); metrics over the first {steps} steps of the {src}; exactness "
        f"from kernel_quality.json.\n\n{table}\n"
    )
    (RESULTS / "kernel_frontier.md").write_text(md)
    print(md)
    from jaxsched.plots import place_legend, subplots, tidy_ticks, wrap_title

    quality_path = RESULTS / "kernel_quality.json"
    n_inst = json.loads(quality_path.read_text()).get("n") if quality_path.is_file() else None
    fig, axes = subplots(1, 2 if fams else 1, figsize=(11 if fams else 6, 4.2), squeeze=False)
    rows = sorted(rows, key=lambda r: r["us_per_seed_step"])
    x = [r["us_per_seed_step"] for r in rows]
    ax = axes[0, 0]
    ax.plot(x, [r["avg_imbalance_tokens"] / 1e3 for r in rows], "o-")
    ys = [r["avg_imbalance_tokens"] / 1e3 for r in rows]
    span = np.log10(max(x) / min(x)) or 1.0
    for i, (r, xi, yi) in enumerate(zip(rows, x, ys)):
        # Each label right of its point (left near the axis' right end), above when the point is
        # higher than its nearest neighbour in cost and below otherwise: the costliest variants
        # lie close together.
        near = min((j for j in range(len(x)) if j != i), key=lambda j: abs(np.log10(x[j] / xi)), default=i)
        up = yi >= ys[near]
        right = np.log10(xi / min(x)) < 0.8 * span
        ax.annotate(
            r["variant"],
            (xi, yi),
            xytext=(6 if right else -6, 5 if up else -5),
            textcoords="offset points",
            ha="left" if right else "right",
            va="bottom" if up else "top",
            fontsize=8,
        )
    ax.margins(y=0.1)
    ax.set(
        xscale="log",
        xlabel="engine cost (us per seed-step)",
        ylabel="average imbalance G max - sum (k tokens)",
    )
    ax.set_title(f"Simulated imbalance: {src}, seed 0, first {steps} steps", fontsize=9)
    if fams:
        ax = axes[0, 1]
        for f in fams:
            ax.plot(x, [100 * r["exact_" + f] for r in rows], "o-", label=f)
        ax.set(xscale="log", xlabel="engine cost (us per seed-step)", ylabel="instances solved exactly (%)")
        per = f"{n_inst} instances per family" if n_inst else "kernel_quality.json"
        ax.set_title(f"Exactness against the MILP optimum ({per})", fontsize=9)
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        tidy_ticks(ax)
        place_legend(fig, ax)
    fig.suptitle(
        wrap_title(
            f"BF-IO H = 0 kernels: quality against engine cost (G = 16, B = 72, R = 64; cost over {seeds} seeds "
            "of the BurstGPT-like workload after compilation)",
            11 if fams else 6,
        ),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(RESULTS / "kernel_frontier.png", dpi=110, bbox_inches="tight")
    log(f"wrote {RESULTS / 'kernel_frontier.md'} and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
