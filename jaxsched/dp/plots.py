"""The dp engine's figures (BF-IO paper): per-worker load trajectories, metrics against the
lookahead H or the prediction error, and the theorem checks' improvement ratio, FCFS
prediction and BF-IO gap. Every function writes a PNG and returns its path; no global style
changes."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import matplotlib
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize

from ..plots import finish, save_compact, subplots, tidy_ticks, wrap_title


def load_trajectories(
    loads: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    dt_s: Mapping[str, np.ndarray] | None = None,
    title: str = "Per-worker load (post-growth, pre-removal)",
    dpi: int = 120,
) -> Path:
    """Per-worker load over steps, one panel per policy (the BF-IO paper's Fig. 6).

    loads: {policy label: int[K, G] tokens}. Panels share the y axis so imbalance is comparable;
    a worker keeps its colour in every panel, and the colour bar names it. The caller's title
    should say which seed and steps are shown. dpi: the PNG's resolution (16 noisy lines per
    panel make a large file; 110 keeps a two-panel figure near 150 KB).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(loads)
    G = max(np.asarray(L).shape[1] for L in loads.values())
    cmap = matplotlib.colormaps["viridis"].resampled(G)
    fig, axes = subplots(n, 1, figsize=(10, 2.4 * n + 0.4), sharex=True, sharey=True, squeeze=False)
    for ax, (label, L) in zip(axes[:, 0], loads.items()):
        L = np.asarray(L)
        steps = np.arange(1, L.shape[0] + 1)
        for g in range(L.shape[1]):
            ax.plot(steps, L[:, g] / 1e3, lw=0.5, alpha=0.8, color=cmap(g))
        gap = (L.max(1) - L.min(1)).mean()
        ax.set_title(f"{label}: mean max-min gap {gap / 1e3:.1f}k tokens", fontsize=9)
        ax.set_ylabel("load (k tokens)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("decode step")
    fig.suptitle(wrap_title(title, 10), fontsize=10)
    fig.tight_layout()
    sm = ScalarMappable(cmap=cmap, norm=Normalize(-0.5, G - 0.5))
    bar = fig.colorbar(
        sm,
        ax=list(axes[:, 0]),
        pad=0.01,
        fraction=0.03,
        ticks=np.arange(0, G, -(-G // 8)),  # an even step, at most 8 ticks (rounded spacing collides)
    )
    bar.set_label("worker g")
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def lookahead_curve(
    curves: Mapping[str, Mapping[int, np.ndarray]],
    path: str | Path,
    *,
    ylabel: str = "average imbalance (tokens)",
    title: str = "",
) -> Path:
    """Mean +- 95% CI of a metric against the lookahead H (symlog x axis), one line per label.
    A title that does not mention the seeds gets their count appended."""
    from ..stats import mean_ci

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = subplots(figsize=(7, 4))
    for label, by_h in curves.items():
        hs = sorted(by_h)
        stats = [mean_ci(by_h[h]) for h in hs]
        mean = np.array([s[0] for s in stats])
        half = np.nan_to_num(np.array([s[2] for s in stats]))
        ax.plot(hs, mean, "o-", label=label)
        ax.fill_between(hs, mean - half, mean + half, alpha=0.2)
    ax.set_xscale("symlog", linthresh=1)
    ax.set(xlabel="lookahead H (steps)", ylabel=ylabel)
    ax.set_title(wrap_title(_with_seeds(title, curves), 7), fontsize=10)
    return finish(fig, ax, path)


def _with_seeds(title: str, curves: Mapping[str, Mapping[float, np.ndarray]]) -> str:
    """`title`, with "; N seeds per point" appended when it does not mention the seeds (N read
    from the arrays of per-seed values)."""
    counts = sorted({np.asarray(v).size for by in curves.values() for v in by.values()})
    if not counts or "seed" in title.lower():
        return title
    n = "/".join(map(str, counts))
    return (title + "; " if title else "") + f"{n} seed{'s' if counts != [1] else ''} per point"


def error_curves(
    curves: Mapping[str, Mapping[float, np.ndarray]],
    path: str | Path,
    *,
    ylabel: str = "average imbalance (tokens)",
    title: str = "BF-IO(H) under prediction errors (synthetic, G=16)",
) -> Path:
    """Mean imbalance against the prediction-error level, one line per (predictor, H) label.
    The caller's title should say the workload and the steps; the seeds' count is appended when
    it does not mention them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = subplots(figsize=(7, 4))
    for label, by in curves.items():
        lv = sorted(by)
        ax.plot(lv, [np.mean(by[x]) for x in lv], "o-" if label.startswith("noisy") else "s--", label=label)
    ax.set(
        xlabel="noise d (o * U[1-d, 1+d]) or classifier error rate (fp = fn) (fraction)",
        ylabel=ylabel,
    )
    ax.set_title(wrap_title(_with_seeds(title, curves), 7), fontsize=10)
    return finish(fig, ax, path)


def improvement_ratio(
    series: Mapping[str, tuple], path: str | Path, *, title: str = "Improvement ratio against sqrt(B log G)"
) -> Path:
    """FCFS / BF-IO average imbalance against sqrt(B log G) (log-log), one marker set per group.

    series: {group: (x = sqrt(B ln G) values, ratio values)}. The dotted line has slope 1 (the
    theorems' ratio = Omega(sqrt(B log G))), through the geometric mean of all points. The
    caller's title should say the kernel, the seeds and the steps (`theorems.report.grid_setting`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = subplots(figsize=(7, 4.5))
    allx, ally = [], []
    for label, (x, r) in series.items():
        ax.plot(x, r, "o", ms=4, label=label)
        allx += list(x)
        ally += list(r)
    if allx:
        x = np.array([min(allx), max(allx)])
        c = np.exp(np.mean(np.log(ally)) - np.mean(np.log(allx)))
        ax.plot(x, c * x, "k:", lw=1, label="slope 1 (reference)")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sqrt(B ln G) (B in slots per worker)",
        ylabel="FCFS / BF-IO average imbalance (ratio)",
    )
    ax.set_title(wrap_title(title, 7), fontsize=10)
    return finish(fig, ax, path)


def fcfs_vs_prediction(
    series: Mapping[str, tuple],
    path: str | Path,
    *,
    tolerance: float = 0.15,
    title: str = "FCFS imbalance against its prediction",
) -> Path:
    """Measured FCFS average imbalance against G sigma sqrt(B) e_G (log-log), with the y = x line
    and the +-tolerance band. series: {group: (predictions, means, CI half-widths)} in tokens.
    The caller's title should say the semantics, the seeds and the steps
    (`theorems.report.grid_setting`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = subplots(figsize=(6, 5))
    lo, hi = np.inf, 0.0
    for label, (pred, mean, half) in series.items():
        pred, mean = np.asarray(pred, float), np.asarray(mean, float)
        ax.errorbar(pred, mean, yerr=np.nan_to_num(np.asarray(half, float)), fmt="o", ms=4, capsize=2, label=label)
        lo, hi = min(lo, pred.min(), mean.min()), max(hi, pred.max(), mean.max())
    if hi > 0:
        x = np.geomspace(lo / 1.2, hi * 1.2, 50)
        ax.plot(x, x, "k-", lw=1, label="y = x")
        ax.fill_between(
            x, x * (1 - tolerance), x * (1 + tolerance), color="k", alpha=0.1, label=f"±{100 * tolerance:.0f}%"
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="prediction G sigma sqrt(B) e_G (tokens)",
        ylabel="FCFS average imbalance (tokens)",
    )
    ax.set_title(wrap_title(title, 6), fontsize=10)
    return finish(fig, ax, path)


def bfio_gap_vs_b(
    series: Mapping[str, Mapping[int, tuple]],
    bounds: Mapping[str, float],
    path: str | Path,
    *,
    title: str = "BF-IO average max-min gap against B",
) -> Path:
    """BF-IO average max-min gap against B, one panel per group, one line per G (a G keeps its
    colour in every panel), with the group's bound (s_max / p, or s_max for Theorem 1) dashed;
    one legend, in the first unused panel or else below the panels, so that it covers no curve.
    series: {group: {G: (B values, gap means, CI half-widths)}}; bounds: {group: tokens}. The
    caller's title should say the kernel, the seeds and the steps."""
    from matplotlib.lines import Line2D

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = max(1, len(series))
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    colors = {G: f"C{i % 10}" for i, G in enumerate(sorted({G for by_g in series.values() for G in by_g}))}
    for ax, (label, by_g) in zip(axes.flat, series.items()):
        for G in sorted(by_g):
            B, gap, half = (np.asarray(a, float) for a in by_g[G])
            o = np.argsort(B)
            ax.errorbar(B[o], gap[o], yerr=np.nan_to_num(half[o]), fmt="o-", ms=3, capsize=2, color=colors[G])
        ax.axhline(bounds[label], color="k", ls="--", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="B (slots per worker)", ylabel="avg gap (tokens)")
        # The B values themselves as ticks: log-axis minor labels overlap on short ranges.
        ticks = sorted({float(b) for G in by_g for b in by_g[G][0]})
        ax.set_xticks(ticks, [f"{b:g}" for b in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
        tidy_ticks(ax)  # the gap axis: plain numbers (the B axis keeps its ticks, set above)
    spare = list(axes.flat)[n:]
    for ax in spare:
        ax.axis("off")
    handles = [Line2D([], [], color=c, marker="o", ms=3, label=f"G = {G}") for G, c in colors.items()]
    handles.append(Line2D([], [], color="k", ls="--", lw=1, label="bound: s_max / p\n(Theorem 1: s_max)"))
    fig.suptitle(wrap_title(title, 4.2 * cols), fontsize=10)
    fig.tight_layout()
    if spare:
        spare[0].legend(handles=handles, loc="center", fontsize=9)
    else:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(handles), fontsize=8)
    return save_compact(fig, path, dpi=120)
