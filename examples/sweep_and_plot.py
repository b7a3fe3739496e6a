"""A (B, G) sweep of FCFS and BF-IO, and a heatmap of their imbalance ratio over (B, G).

Runs `jaxsched.sweep.run_sweep` on the dp engine over slots per worker B, workers G and the
policies fcfs and bfio (one results row per point; rerunning resumes from the file), then reads
the results CSV back with the csv module and plots avg imbalance of BF-IO / avg imbalance of
FCFS for every (B, G) as a heatmap (1 = no better; below 1, BF-IO balances better).

    python examples/sweep_and_plot.py [--B 16,32,64] [--G 4,8,16] [--seeds 8] [--steps 2000]
                                      [--out results/sweep_and_plot] [--quick]

Files in --out: sweep.csv (the sweep's rows, `jaxsched sweep`'s columns), ratio.csv (B, G,
the two policies' mean imbalance in tokens and their ratio) and ratio.png (the heatmap).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from jaxsched.results import write_csv

METRIC = "avg_imbalance_tokens_mean"  # the sweep's column: mean over seeds, tokens


def run(out: Path, Bs: list[int], Gs: list[int], seeds: int, steps: int) -> Path:
    """The sweep's results file: every (B, G, policy) point over `seeds` seeds."""
    from jaxsched.dp import DPConfig
    from jaxsched.sweep import run_sweep

    base = DPConfig(num_steps=steps)
    axes = {"slots_per_worker": Bs, "num_workers": Gs, "policy": ["fcfs", "bfio"]}
    return run_sweep(base, axes, seeds=range(seeds), out=out / "sweep.csv", progress=False)


def ratios(path: Path) -> tuple[list[int], list[int], np.ndarray, list[dict]]:
    """(Bs, Gs, ratio float64[len(Bs), len(Gs)], rows) from the sweep's CSV: ratio[i, j] is
    BF-IO's mean imbalance over FCFS's at B = Bs[i], G = Gs[j] (nan where a point is missing)."""
    with path.open(newline="") as f:
        cells = {
            (int(r["slots_per_worker"]), int(r["num_workers"]), r["policy"]): float(r[METRIC])
            for r in csv.DictReader(f)
        }
    Bs = sorted({b for b, _, _ in cells})
    Gs = sorted({g for _, g, _ in cells})
    ratio = np.full((len(Bs), len(Gs)), np.nan)
    rows = []
    for i, b in enumerate(Bs):
        for j, g in enumerate(Gs):
            fcfs, bfio = cells.get((b, g, "fcfs"), np.nan), cells.get((b, g, "bfio"), np.nan)
            ratio[i, j] = bfio / fcfs if fcfs > 0 else np.nan
            rows.append(
                {"B": b, "G": g, "fcfs_imbalance_tokens": fcfs, "bfio_imbalance_tokens": bfio, "ratio": ratio[i, j]}
            )
    return Bs, Gs, ratio, rows


def plot(path: Path, Bs: list[int], Gs: list[int], ratio: np.ndarray, seeds: int, steps: int) -> Path:
    """The heatmap of `ratio` (rows B, columns G), each cell labelled with its value."""
    import matplotlib

    matplotlib.use("Agg")  # a script's choice: write files, open no window
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(Gs) + 3), max(4.0, 0.9 * len(Bs) + 2)), constrained_layout=True)
    im = ax.imshow(ratio, origin="lower", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(Gs)), [str(g) for g in Gs])
    ax.set_yticks(range(len(Bs)), [str(b) for b in Bs])
    ax.set_xlabel("G (workers)")
    ax.set_ylabel("B (slots per worker)")
    for i in range(len(Bs)):
        for j in range(len(Gs)):
            if np.isfinite(ratio[i, j]):
                dark = im.norm(ratio[i, j]) < 0.5  # light text on the dark end of viridis
                ax.text(j, i, f"{ratio[i, j]:.3g}", ha="center", va="center", color="w" if dark else "k")
    fig.colorbar(im, ax=ax, label="imbalance ratio BF-IO / FCFS (tokens per token)")
    ax.set_title(f"dp: avg imbalance, BF-IO / FCFS\n{seeds} seeds x {steps} steps per point", fontsize=11)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--B", default="16,32,64", help="slots per worker, comma-separated")
    ap.add_argument("--G", default="4,8,16", help="workers, comma-separated")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2000, help="decode steps per run")
    ap.add_argument("--out", default="results/sweep_and_plot", help="output folder")
    ap.add_argument("--quick", action="store_true", help="a small sweep: B 4,8, G 2,4, 3 seeds, 200 steps")
    a = ap.parse_args()
    if a.quick:
        a.B, a.G, a.seeds, a.steps = "4,8", "2,4", 3, 200
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    Bs, Gs = [int(x) for x in a.B.split(",")], [int(x) for x in a.G.split(",")]
    results = run(out, Bs, Gs, a.seeds, a.steps)
    Bs, Gs, ratio, rows = ratios(results)
    print(f"{'B':>4} {'G':>4} {'fcfs (tokens)':>14} {'bfio (tokens)':>14} {'ratio':>7}")
    for r in rows:
        fcfs, bfio = r["fcfs_imbalance_tokens"], r["bfio_imbalance_tokens"]
        print(f"{r['B']:>4} {r['G']:>4} {fcfs:>14.1f} {bfio:>14.1f} {r['ratio']:>7.3f}")
    png = plot(out / "ratio.png", Bs, Gs, ratio, a.seeds, a.steps)
    print(f"results: {results}, {write_csv(out / 'ratio.csv', rows)}, {png}")


if __name__ == "__main__":
    main()
