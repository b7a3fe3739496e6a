"""Matplotlib figures. Every function writes a PNG and returns its path; no global style changes."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")  # files only: works on machines without a display
import matplotlib.pyplot as plt
import numpy as np


def load_trajectories(loads: Mapping[str, np.ndarray], path: str | Path, *, dt_s: Mapping[str, np.ndarray] | None = None,
                      title: str = "Per-worker load (post-growth, pre-removal)") -> Path:
    """Per-worker load over steps, one panel per policy (the BF-IO paper's Fig. 6).

    loads: {policy label: int[K, G] tokens}. Panels share the y axis so imbalance is comparable.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(loads)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.4 * n), sharex=True, sharey=True, squeeze=False)
    for ax, (label, L) in zip(axes[:, 0], loads.items()):
        L = np.asarray(L)
        steps = np.arange(1, L.shape[0] + 1)
        for g in range(L.shape[1]):
            ax.plot(steps, L[:, g] / 1e3, lw=0.5, alpha=0.8)
        gap = (L.max(1) - L.min(1)).mean()
        ax.set_title(f"{label}: mean max-min gap {gap / 1e3:.1f}k tokens", fontsize=9)
        ax.set_ylabel("load (k tokens)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("decode step")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def horizon_curve(curves: Mapping[str, Mapping[int, np.ndarray]], path: str | Path, *,
                  ylabel: str = "average imbalance (tokens)", title: str = "") -> Path:
    """Mean +- 95% CI of a metric against the lookahead H (symlog x axis), one line per label."""
    from .results import mean_ci
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, by_h in curves.items():
        hs = sorted(by_h)
        stats = [mean_ci(by_h[h]) for h in hs]
        mean = np.array([s[0] for s in stats])
        half = np.nan_to_num(np.array([s[2] for s in stats]))
        ax.plot(hs, mean, "o-", label=label)
        ax.fill_between(hs, mean - half, mean + half, alpha=0.2)
    ax.set_xscale("symlog", linthresh=1)
    ax.set(xlabel="lookahead H (steps)", ylabel=ylabel)
    ax.set_title(title, fontsize=10)
    return _finish(fig, ax, path)


def error_curves(curves: Mapping[str, Mapping[float, np.ndarray]], path: str | Path) -> Path:
    """Mean imbalance against the prediction-error level, one line per (predictor, H) label."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, by in curves.items():
        lv = sorted(by)
        ax.plot(lv, [np.mean(by[x]) for x in lv], "o-" if label.startswith("noisy") else "s--", label=label)
    ax.set(xlabel="noise d (o * U[1-d, 1+d]) or classifier error rate (fp = fn)",
           ylabel="average imbalance (tokens)")
    ax.set_title("BF-IO(H) under prediction errors (synthetic, G=16)", fontsize=10)
    return _finish(fig, ax, path)


def _finish(fig, ax, path: Path) -> Path:
    """Grid, legend, tight layout; save the PNG and close the figure."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
