"""Matplotlib figures. Every function writes a PNG and returns its path; no global style changes."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import matplotlib
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure


def _subplots(*args, **kwargs):
    """(figure, axes) drawn off-screen. Figures are made without pyplot, so plotting needs no
    display and never switches the caller's matplotlib backend (notebooks keep theirs)."""
    fig = Figure(figsize=kwargs.pop("figsize", None))
    return fig, fig.subplots(*args, **kwargs)


def load_trajectories(loads: Mapping[str, np.ndarray], path: str | Path, *, dt_s: Mapping[str, np.ndarray] | None = None,
                      title: str = "Per-worker load (post-growth, pre-removal)") -> Path:
    """Per-worker load over steps, one panel per policy (the BF-IO paper's Fig. 6).

    loads: {policy label: int[K, G] tokens}. Panels share the y axis so imbalance is comparable;
    a worker keeps its colour in every panel, and the colour bar names it. The caller's title
    should say which seed and steps are shown.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(loads)
    G = max(np.asarray(L).shape[1] for L in loads.values())
    cmap = matplotlib.colormaps["viridis"].resampled(G)
    fig, axes = _subplots(n, 1, figsize=(10, 2.4 * n + 0.4), sharex=True, sharey=True, squeeze=False)
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
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    sm = ScalarMappable(cmap=cmap, norm=Normalize(-0.5, G - 0.5))
    bar = fig.colorbar(sm, ax=list(axes[:, 0]), pad=0.01, fraction=0.03,
                       ticks=np.unique(np.linspace(0, G - 1, min(G, 9)).round().astype(int)))
    bar.set_label("worker g")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def horizon_curve(curves: Mapping[str, Mapping[int, np.ndarray]], path: str | Path, *,
                  ylabel: str = "average imbalance (tokens)", title: str = "") -> Path:
    """Mean +- 95% CI of a metric against the lookahead H (symlog x axis), one line per label."""
    from .stats import mean_ci
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = _subplots(figsize=(7, 4))
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
    fig, ax = _subplots(figsize=(7, 4))
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
    return path


def improvement_ratio(series: Mapping[str, tuple], path: str | Path) -> Path:
    """FCFS / BF-IO average imbalance against sqrt(B log G) (log-log), one marker set per group.

    series: {group: (x = sqrt(B ln G) values, ratio values)}. The dotted line has slope 1 (the
    theorems' ratio = Omega(sqrt(B log G))), through the geometric mean of all points.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = _subplots(figsize=(7, 4.5))
    allx, ally = [], []
    for label, (x, r) in series.items():
        ax.plot(x, r, "o", ms=4, label=label)
        allx += list(x)
        ally += list(r)
    if allx:
        x = np.array([min(allx), max(allx)])
        c = np.exp(np.mean(np.log(ally)) - np.mean(np.log(allx)))
        ax.plot(x, c * x, "k:", lw=1, label="slope 1 (reference)")
    ax.set(xscale="log", yscale="log", xlabel="sqrt(B ln G)", ylabel="FCFS / BF-IO average imbalance")
    ax.set_title("Improvement ratio against sqrt(B log G)", fontsize=10)
    return _finish(fig, ax, path)


def fcfs_vs_prediction(series: Mapping[str, tuple], path: str | Path, *, tolerance: float = 0.15) -> Path:
    """Measured FCFS average imbalance against G sigma sqrt(B) e_G (log-log), with the y = x line
    and the +-tolerance band. series: {group: (predictions, means, CI half-widths)} in tokens."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = _subplots(figsize=(6, 5))
    lo, hi = np.inf, 0.0
    for label, (pred, mean, half) in series.items():
        pred, mean = np.asarray(pred, float), np.asarray(mean, float)
        ax.errorbar(pred, mean, yerr=np.nan_to_num(np.asarray(half, float)), fmt="o", ms=4,
                    capsize=2, label=label)
        lo, hi = min(lo, pred.min(), mean.min()), max(hi, pred.max(), mean.max())
    if hi > 0:
        x = np.geomspace(lo / 1.2, hi * 1.2, 50)
        ax.plot(x, x, "k-", lw=1, label="y = x")
        ax.fill_between(x, x * (1 - tolerance), x * (1 + tolerance), color="k", alpha=0.1,
                        label=f"±{100 * tolerance:.0f}%")
    ax.set(xscale="log", yscale="log", xlabel="prediction G sigma sqrt(B) e_G (tokens)",
           ylabel="FCFS average imbalance (tokens)")
    ax.set_title("FCFS imbalance against its prediction", fontsize=10)
    return _finish(fig, ax, path)


def bfio_gap_vs_b(series: Mapping[str, Mapping[int, tuple]], bounds: Mapping[str, float],
                  path: str | Path) -> Path:
    """BF-IO average max-min gap against B, one panel per group, one line per G, with the
    group's bound (s_max / p, or s_max for Theorem 1) dashed.
    series: {group: {G: (B values, gap means, CI half-widths)}}; bounds: {group: tokens}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = max(1, len(series))
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = _subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (label, by_g) in zip(axes.flat, series.items()):
        for G in sorted(by_g):
            B, gap, half = (np.asarray(a, float) for a in by_g[G])
            o = np.argsort(B)
            ax.errorbar(B[o], gap[o], yerr=np.nan_to_num(half[o]), fmt="o-", ms=3, capsize=2,
                        label=f"G={G}")
        ax.axhline(bounds[label], color="k", ls="--", lw=1, label="bound")
        ax.set(xscale="log", yscale="log", xlabel="B", ylabel="avg gap (tokens)")
        # The B values themselves as ticks: log-axis minor labels overlap on short ranges.
        ticks = sorted({float(b) for G in by_g for b in by_g[G][0]})
        ax.set_xticks(ticks, [f"{b:g}" for b in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("BF-IO average max-min gap against B", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_kv_rates(rows, path: str | Path, *, title: str = "") -> Path:
    """Throughput / fluid throughput* (8) and mean latency against total arrival rate (kv
    engine): one column of panels per batch limit B, one line per policy (a line style per
    capacity rule when there are several).

    rows: dicts from jaxsched.kv.experiments.run_experiment (keys label, batch_limit,
    capacity_rule, rate_total_req_s, throughput_ratio, throughput_ci, fluid_throughput,
    latency_mean, latency_mean_ci, status). Error bars are 95% CIs over seeds; hollow markers
    are rows whose status is not "ok" (overloaded, unsettled, invalid). Rows with nan metrics (a
    policy infeasible there) are left out.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    limits = list(dict.fromkeys(str(r.get("batch_limit", "none")) for r in rows))
    rules = list(dict.fromkeys(str(r.get("capacity_rule", "-")) for r in rows))
    policies = list(dict.fromkeys(r["label"] for r in rows))
    colors = {p: f"C{i}" for i, p in enumerate(policies)}
    styles = dict(zip(rules, ("-", "--", ":", "-.")))
    fig, axes = _subplots(2, len(limits), figsize=(4.2 * len(limits), 6.5), squeeze=False,
                             sharex=True)
    for col, b in enumerate(limits):
        for rule in rules:
            for pol in policies:
                sub = sorted((r for r in rows if str(r.get("batch_limit", "none")) == b
                              and str(r.get("capacity_rule", "-")) == rule and r["label"] == pol
                              and np.isfinite(r["throughput"])), key=lambda r: r["rate_total_req_s"])
                if not sub:
                    continue
                x = np.array([r["rate_total_req_s"] for r in sub])
                label = pol if len(rules) == 1 else f"{pol}, C = {rule}"
                for ax, key, scale in ((axes[0, col], "throughput", "fluid_throughput"),
                                       (axes[1, col], "latency_mean", None)):
                    div = np.array([r[scale] for r in sub]) if scale else 1.0
                    y = np.array([r[key] for r in sub]) / div
                    e = np.nan_to_num(np.array([r[key + "_ci"] for r in sub])) / div
                    ax.errorbar(x, y, yerr=e, ls=styles[rule], color=colors[pol], capsize=2,
                                lw=1.2, label=label)
                    ok = np.array([r.get("status", "ok") == "ok" for r in sub])
                    ax.plot(x[ok], y[ok], "o", color=colors[pol], ms=4)
                    ax.plot(x[~ok], y[~ok], "o", mfc="none", color=colors[pol], ms=5)
        axes[0, col].set(title=f"B = {b}", ylabel="throughput / fluid throughput*")
        axes[0, col].axhline(1.0, color="k", lw=0.8, ls="--")
        axes[1, col].set(xlabel="arrival rate (requests/s)", ylabel="mean latency (s)",
                         yscale="log")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    for ax in axes[0]:          # the first panel with lines carries the legend
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
            break
    fig.suptitle(title + "\n(hollow markers: overloaded, unsettled or invalid rows)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def plot_kv_scaling(rows, fits, path: str | Path) -> Path:
    """Theorem 1: throughput gap and mean latency against the horizon T (log-log), one line per
    instance, with the fitted slope in the legend and reference slopes -1/2 and -1 dotted.

    rows, fits: from jaxsched.kv.experiments.run_scaling (keys instance, T, gap, gap_ci,
    latency_mean, latency_mean_ci; fits: instance, gap_slope, gap_slope_ci, latency_slope).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (a1, a2) = _subplots(1, 2, figsize=(11, 4))
    by_fit = {f["instance"]: f for f in fits}
    for name in dict.fromkeys(r["instance"] for r in rows):
        sub = sorted((r for r in rows if r["instance"] == name), key=lambda r: r["T"])
        T = np.array([r["T"] for r in sub])
        f = by_fit.get(name, {})
        for ax, key, sk in ((a1, "gap", "gap_slope"), (a2, "latency_mean", "latency_slope")):
            y = np.array([r[key] for r in sub])
            e = np.nan_to_num(np.array([r[key + "_ci"] for r in sub]))
            ok = y > 0
            ax.errorbar(T[ok], y[ok], yerr=np.minimum(e[ok], 0.99 * y[ok]), fmt="o-", ms=4,
                        capsize=2, label=f"{name}: slope {f.get(sk, np.nan):.2f}")
    for ax, slopes in ((a1, (-0.5, -1.0)), (a2, (0.5, 0.0))):
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
        if lines:
            x0 = min(min(ln.get_xdata()) for ln in lines)
            x1 = max(max(ln.get_xdata()) for ln in lines)
            y0 = np.exp(np.mean([np.log(np.mean(ln.get_ydata())) for ln in lines]))
            for s in slopes:
                xs = np.array([x0, x1])
                ax.plot(xs, y0 * (xs / np.sqrt(x0 * x1)) ** s, "k:", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="horizon T (s)")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # no overlapping labels
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    a1.set(ylabel="throughput* - E[throughput] (tokens/s)")
    a2.set(ylabel="mean latency (s)")
    fig.suptitle("WAIT, Theorem 1: (9) with equality vs strict (dotted: reference slopes)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_tuning(history: Mapping[str, np.ndarray], path: str | Path, *, title: str = "") -> Path:
    """Objective of a threshold tuning run (jaxsched.tune.TuneResult.history) against the step,
    with its 20-step moving average, and the temperature on a second (log) axis."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = np.asarray(history["step"])
    obj = np.asarray(history["objective"], float)
    fig, ax = _subplots(figsize=(7, 4))
    ax.plot(step, obj, lw=0.6, alpha=0.5, label="objective (one noise sample)")
    w = min(20, len(obj))
    if w > 1:
        smooth = np.convolve(obj, np.ones(w) / w, mode="valid")
        ax.plot(step[w - 1:], smooth, lw=1.5, label=f"moving average ({w} steps)")
    ax.set(xlabel="optimizer step", ylabel="relaxed objective")
    ax.set_title(title or "Threshold tuning", fontsize=10)
    if "temperature" in history:
        ax2 = ax.twinx()
        ax2.plot(step, np.asarray(history["temperature"], float), "k:", lw=1)
        ax2.set_yscale("log")
        ax2.set_ylabel("temperature (dotted)")
    return _finish(fig, ax, path)


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
        fig, ax = _subplots(figsize=(8, 0.45 * len(labels) + 1.5))
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
        fig, ax = _subplots(figsize=(7, 4.5))
        for label, (M, ratio, slope, half) in plot["series"].items():
            ax.plot(M, ratio, "o-", label=f"{label}: slope {slope:.3f} ± {half:.3f}")
        top = max(plot["series"].values(), key=lambda v: v[1][-1])
        M0, r0 = top[0][-1], top[1][-1]
        Ms = np.array([min(v[0][0] for v in plot["series"].values()), M0], float)
        ax.plot(Ms, r0 * (Ms / M0) ** 0.25, "k:", lw=1, label="reference slope 1/4")
        ax.set(xscale="log", yscale="log", xlabel="KV limit M (tokens)",
               ylabel="TEL(MC-SF or MC-SF2) / TEL(type 2 first)")
        lo = min(min(v[1]) for v in plot["series"].values())
        hi = max(max(v[1]) for v in plot["series"].values())
        ax.set_yticks([v for v in (0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 50)
                       if lo / 1.2 <= v <= hi * 1.2])
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        ax.set_title(report.title, fontsize=10)
        return _finish(fig, ax, path)
    panels = plot["panels"]              # {title: {label: (n[], mean[], half[])}}
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = _subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    labels = list(dict.fromkeys(k for series in panels.values() for k in series))
    colour = {k: f"C{i % 10}" for i, k in enumerate(labels)}      # one colour per algorithm
    for ax, (title, series) in zip(axes.ravel(), panels.items()):
        for label, (n, mean, half) in series.items():
            n, mean, half = (np.asarray(v, float) for v in (n, mean, half))
            ax.plot(n, mean, "o-" if n.size <= 80 else "-", ms=3, label=label,
                    color=colour[label])
            ax.fill_between(n, mean - np.nan_to_num(half), mean + np.nan_to_num(half),
                            alpha=0.15, color=colour[label])
        xlabel, ylabel = plot.get("axes", {}).get(title, (plot.get("xlabel", "requests n"),
                                                          plot.get("ylabel", "average latency")))
        ax.set(xlabel=xlabel, ylabel=ylabel, xscale=plot.get("xscale", "linear"))
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(report.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
