"""The kv engine's figures (WAIT paper): throughput and latency against the arrival rate,
Theorem 1's scaling in the horizon, and a threshold tuning run. Every function writes a PNG and
returns its path; no global style changes."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from ..plots import finish, place_legend, save_compact, subplots, tidy_ticks, wrap_title


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
    fig, axes = subplots(2, len(limits), figsize=(4.2 * len(limits), 6.5), squeeze=False, sharex=True)
    for col, b in enumerate(limits):
        for rule in rules:
            for pol in policies:
                sub = sorted(
                    (
                        r
                        for r in rows
                        if str(r.get("batch_limit", "none")) == b
                        and str(r.get("capacity_rule", "-")) == rule
                        and r["label"] == pol
                        and np.isfinite(r["throughput"])
                    ),
                    key=lambda r: r["rate_total_req_s"],
                )
                if not sub:
                    continue
                x = np.array([r["rate_total_req_s"] for r in sub])
                label = pol if len(rules) == 1 else f"{pol}, C = {rule}"
                for ax, key, scale in (
                    (axes[0, col], "throughput", "fluid_throughput"),
                    (axes[1, col], "latency_mean", None),
                ):
                    div = np.array([r[scale] for r in sub]) if scale else 1.0
                    y = np.array([r[key] for r in sub]) / div
                    e = np.nan_to_num(np.array([r[key + "_ci"] for r in sub])) / div
                    ax.errorbar(x, y, yerr=e, ls=styles[rule], color=colors[pol], capsize=2, lw=1.2, label=label)
                    ok = np.array([r.get("status", "ok") == "ok" for r in sub])
                    ax.plot(x[ok], y[ok], "o", color=colors[pol], ms=4)
                    ax.plot(x[~ok], y[~ok], "o", mfc="none", color=colors[pol], ms=5)
        axes[0, col].set(title=f"B = {b}", ylabel="throughput / fluid throughput* (ratio)")
        axes[0, col].axhline(1.0, color="k", lw=0.8, ls="--")
        axes[1, col].set(xlabel="arrival rate (requests/s)", ylabel="mean latency (s)", yscale="log")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
        tidy_ticks(ax)  # the log latency axis: plain-number ticks
    fig.suptitle(
        wrap_title(_with_size(title, rows), 4.2 * len(limits))
        + "\n(hollow markers: overloaded, unsettled or invalid rows)",
        fontsize=9,
    )
    fig.tight_layout()
    # One legend below the panels, where it covers no curve: a colour per policy drawn, and a
    # line style per capacity rule when there are several.
    from matplotlib.lines import Line2D

    drawn = {t for ax in axes.ravel() for t in ax.get_legend_handles_labels()[1]}
    handles = [
        Line2D([], [], color=colors[p], marker="o", ms=4, label=p)
        for p in policies
        if any(t == p or t.startswith(f"{p}, C = ") for t in drawn)
    ]
    if len(rules) > 1:
        handles += [Line2D([], [], color="k", ls=styles[r], label=f"C = {r}") for r in rules]
    if handles:
        fig.legend(
            handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(handles), 7), fontsize=8
        )
    return save_compact(fig, path, dpi=110)


def _with_size(title: str, rows) -> str:
    """`title` with the seeds per point and the requests per run of `rows` appended, when it
    does not mention the seeds and the rows say."""

    def span(key: str) -> str:
        v = set()
        for r in rows:
            try:
                x = float(r.get(key))
            except (TypeError, ValueError):  # absent, None, or text: says nothing
                continue
            if np.isfinite(x):
                v.add(int(x))
        v = sorted(v)
        return "" if not v else (f"{v[0]:,}" if v[0] == v[-1] else f"{v[0]:,}-{v[-1]:,}")

    if "seed" in title.lower() or not span("seeds"):
        return title
    n = span("num_requests")
    return f"{title}; {span('seeds')} seeds per point" + (f", {n} requests per run" if n else "")


def plot_kv_scaling(rows, fits, path: str | Path, *, title: str | None = None) -> Path:
    """Theorem 1: throughput gap and mean latency against the horizon T (log-log), one line per
    instance, with the fitted slope in the legend and reference slopes -1/2 and -1 dotted.

    rows, fits: from jaxsched.kv.experiments.run_scaling (keys instance, T, seeds, gap, gap_ci,
    latency_mean, latency_mean_ci; fits: instance, gap_slope, gap_slope_ci, latency_slope).
    title: None gives the policy, the seeds and the horizons read from the rows.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (a1, a2) = subplots(1, 2, figsize=(11, 4))
    by_fit = {f["instance"]: f for f in fits}
    for name in dict.fromkeys(r["instance"] for r in rows):
        sub = sorted((r for r in rows if r["instance"] == name), key=lambda r: r["T"])
        T = np.array([r["T"] for r in sub])
        f = by_fit.get(name, {})
        for ax, key, sk in ((a1, "gap", "gap_slope"), (a2, "latency_mean", "latency_slope")):
            y = np.array([r[key] for r in sub])
            e = np.nan_to_num(np.array([r[key + "_ci"] for r in sub]))
            ok = y > 0
            ax.errorbar(
                T[ok],
                y[ok],
                yerr=np.minimum(e[ok], 0.99 * y[ok]),
                fmt="o-",
                ms=4,
                capsize=2,
                label=f"{name}: slope {f.get(sk, np.nan):.2f}",
            )
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
        ax.grid(alpha=0.3)
        tidy_ticks(ax)  # plain-number major ticks (100, 200, 500, ...), unlabelled minor ones
    a1.set(ylabel="throughput* - E[throughput] (tokens/s)")
    a2.set(ylabel="mean latency (s)")
    for ax in (a1, a2):
        place_legend(fig, ax, fontsize=7)
    if title is None:
        seeds = sorted({int(r["seeds"]) for r in rows if "seeds" in r})
        horizons = sorted({float(r["T"]) for r in rows})
        title = (
            "WAIT, Theorem 1: (9) with equality vs strict, one type, Poisson arrivals"
            + (f", {'/'.join(map(str, seeds))} seeds per point" if seeds else "")
            + (f", horizon T = {horizons[0]:g}-{horizons[-1]:g} s" if horizons else "")
            + " (dotted: reference slopes)"
        )
    fig.suptitle(wrap_title(title, 11), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def plot_tuning(history: Mapping[str, np.ndarray], path: str | Path, *, title: str = "") -> Path:
    """Objective of a threshold tuning run (jaxsched.kv.tune.TuneResult.history) against the step,
    with its 20-step moving average, and the temperature on a second (log) axis."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = np.asarray(history["step"])
    obj = np.asarray(history["objective"], float)
    fig, ax = subplots(figsize=(7, 4))
    ax.plot(step, obj, lw=0.6, alpha=0.5, label="objective (one noise sample)")
    w = min(20, len(obj))
    if w > 1:
        smooth = np.convolve(obj, np.ones(w) / w, mode="valid")
        ax.plot(step[w - 1 :], smooth, lw=1.5, label=f"moving average ({w} steps)")
    ax.set(xlabel="optimizer step", ylabel="relaxed objective (units of throughput*)")
    ax.set_title(wrap_title(title or "Threshold tuning", 7), fontsize=10)
    if "temperature" in history:
        ax2 = ax.twinx()
        ax2.plot(step, np.asarray(history["temperature"], float), "k:", lw=1)
        ax2.set_yscale("log")
        ax2.set_ylabel("temperature (dotted; dimensionless)")
    return finish(fig, ax, path)
