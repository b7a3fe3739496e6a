"""Matplotlib figures shared by the engines: the figure of an experiment report (`plot_offline`,
offline, interval and budget) and the helpers of every figure (`subplots`, `finish`). Each
engine's own figures are its `plots` module (jaxsched.dp.plots, jaxsched.kv.plots). Every
figure function writes a PNG and returns its path; no global style changes."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure


def subplots(*args, **kwargs):
    """(figure, axes) drawn off-screen. Figures are made without pyplot, so plotting needs no
    display and never switches the caller's matplotlib backend (notebooks keep theirs)."""
    fig = Figure(figsize=kwargs.pop("figsize", None))
    return fig, fig.subplots(*args, **kwargs)


def finish(fig, ax, path: Path) -> Path:
    """Grid, legend, tight layout; save the PNG and close the figure."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_offline(report, path: str | Path) -> Path:
    """The figure of a paper-002 or paper-003 experiment (`jaxsched.results.Report.plot`):
    - "ratio_hist": TEL / OPT per algorithm as box plots (opt);
    - "loglog": ratio against M on log-log axes with fitted slopes (lower_bound);
    - "curves": average latency against n per algorithm, one panel per (mix, step model), as
      the paper's Fig. 8 (real), with 95% CI bands over the seeds; any other y against x with
      the plot's "xlabel", "ylabel" and "xscale" (paper 003's figures), or per-panel labels
      in "axes" {title: (xlabel, ylabel)} (paper 004's figures)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plot = report.plot
    if plot["kind"] == "ratio_hist":
        labels = list(plot["ratios"])
        fig, ax = subplots(figsize=(8, 0.45 * len(labels) + 1.5))
        ax.boxplot([plot["ratios"][k] for k in labels], vert=False, whis=(0, 100))
        ax.set_yticks(np.arange(1, len(labels) + 1), labels)
        ax.axvline(1.0, color="k", lw=0.8, ls=":")
        ax.set(xlabel="TEL / OPT (whiskers: min and max)")
        ax.set_title(report.title, fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        return path
    if plot["kind"] == "loglog":
        fig, ax = subplots(figsize=(7, 4.5))
        for label, (M, ratio, slope, half) in plot["series"].items():
            ax.plot(M, ratio, "o-", label=f"{label}: slope {slope:.3f} ± {half:.3f}")
        top = max(plot["series"].values(), key=lambda v: v[1][-1])
        M0, r0 = top[0][-1], top[1][-1]
        Ms = np.array([min(v[0][0] for v in plot["series"].values()), M0], float)
        ax.plot(Ms, r0 * (Ms / M0) ** 0.25, "k:", lw=1, label="reference slope 1/4")
        ax.set(
            xscale="log", yscale="log", xlabel="KV limit M (tokens)", ylabel="TEL(MC-SF or MC-SF2) / TEL(type 2 first)"
        )
        lo = min(min(v[1]) for v in plot["series"].values())
        hi = max(max(v[1]) for v in plot["series"].values())
        ax.set_yticks([v for v in (0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 50) if lo / 1.2 <= v <= hi * 1.2])
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        ax.set_title(report.title, fontsize=10)
        return finish(fig, ax, path)
    panels = plot["panels"]  # {title: {label: (n[], mean[], half[])}}
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    labels = list(dict.fromkeys(k for series in panels.values() for k in series))
    colour = {k: f"C{i % 10}" for i, k in enumerate(labels)}  # one colour per algorithm
    for ax, (title, series) in zip(axes.ravel(), panels.items()):
        for label, (n, mean, half) in series.items():
            n, mean, half = (np.asarray(v, float) for v in (n, mean, half))
            ax.plot(n, mean, "o-" if n.size <= 80 else "-", ms=3, label=label, color=colour[label])
            ax.fill_between(n, mean - np.nan_to_num(half), mean + np.nan_to_num(half), alpha=0.15, color=colour[label])
        xlabel, ylabel = plot.get("axes", {}).get(
            title, (plot.get("xlabel", "requests n"), plot.get("ylabel", "average latency"))
        )
        ax.set(xlabel=xlabel, ylabel=ylabel, xscale=plot.get("xscale", "linear"))
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(report.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
