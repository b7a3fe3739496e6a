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
    """Grid, legend, tidy ticks, tight layout; save the PNG and close the figure. The legend goes
    where matplotlib finds least data, or outside the axes on the right when every place inside
    would cover a curve (`place_legend`); log and symlog axes get plain-number ticks
    (`tidy_ticks`)."""
    ax.grid(alpha=0.3)
    for a in fig.axes:
        tidy_ticks(a)
    place_legend(fig, ax, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def save_compact(fig, path: str | Path, *, dpi: int = 110) -> Path:
    """Save `fig` (bbox tight) at `dpi`; a PNG is then stored with an adaptive palette of 256
    colours, without dithering: a figure of a few line colours looks the same at about a third
    of the bytes (multi-panel figures with error bars otherwise pass 200 KB)."""
    path = Path(path)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    if path.suffix.lower() == ".png":
        from PIL import Image  # a dependency of matplotlib

        with Image.open(path) as im:
            rgb = im.convert("RGB")
        rgb.quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


def wrap_title(title: str, width_in: float) -> str:
    """`title` broken into lines that fit `width_in` inches at fontsize 10 (about 14 characters
    per inch), so that a title giving the whole configuration is never cut at the figure's
    edge."""
    import textwrap

    # Lines break at spaces only: "BF-IO" or "MC-SF" split at the hyphen reads as two words.
    return "\n".join(textwrap.wrap(title, max(20, int(14 * width_in)), break_on_hyphens=False)) or title


def _plain(value, _pos=None) -> str:
    """A tick label without a power of ten: 0.2, 5, 300, 2000 (1e+06 from a million on)."""
    return f"{value:g}"


def tidy_ticks(ax) -> None:
    """Readable ticks on an axes' log and symlog axes (linear axes are left alone):
    - log: major ticks at the powers of ten when 3 or more are in view, else at 1, 2, 5 x 10^k or
      1, 2, 3, 5 x 10^k: the sparsest of these that puts at least 4 ticks in view (3 on an axis
      spanning less than a decade; `_log_subs`), labelled as plain numbers, with unlabelled minor
      ticks; a range too narrow for any of them (e.g. 180 to 250) gets evenly stepped round
      numbers;
    - symlog: when the curves use at most 12 distinct positions on that axis (a sweep of a few
      values, e.g. the lookahead H = 0, 16, 64, 256), the ticks are exactly those positions, so
      that no tick stands where there is no data.
    Axes whose ticks were set explicitly (`set_xticks`, `set_yticks`) keep them."""
    ticker = matplotlib.ticker
    for axis, scale, lim, col in (
        (ax.xaxis, ax.get_xscale(), ax.get_xlim(), 0),
        (ax.yaxis, ax.get_yscale(), ax.get_ylim(), 1),
    ):
        if isinstance(axis.get_major_locator(), ticker.FixedLocator):
            continue  # ticks the caller chose
        if scale == "log":
            lo, hi = sorted(lim)
            subs = _log_subs(lo, hi)
            if subs is None:
                # A narrow range (e.g. 180 to 250): evenly stepped round numbers, as on a linear
                # axis, rather than one labelled tick or crowded 2 x 10^2-style minor labels.
                axis.set_major_locator(ticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
                axis.set_minor_locator(ticker.NullLocator())
            else:
                axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
                axis.set_minor_locator(ticker.LogLocator(base=10, subs=np.arange(2, 10)))
            axis.set_major_formatter(ticker.FuncFormatter(_plain))
            axis.set_minor_formatter(ticker.NullFormatter())
        elif scale == "symlog":
            values = np.unique(
                np.concatenate([np.asarray(line.get_data()[col], float).ravel() for line in ax.lines] or [np.zeros(0)])
            )
            values = values[np.isfinite(values)]
            if 0 < values.size <= 12:
                axis.set_major_locator(ticker.FixedLocator(values))
                axis.set_major_formatter(ticker.FuncFormatter(_plain))
                axis.set_minor_locator(ticker.NullLocator())


def _log_subs(lo: float, hi: float, least: int = 4) -> tuple[int, ...] | None:
    """The multiples of each power of ten to tick on a log axis showing [lo, hi]: (1) when at
    least 3 powers of ten are in view, else the sparsest of (1, 2, 5), (1, 2, 3, 5) with at
    least `least` ticks in view, else the sparsest of them with 3 (an axis spanning less than a
    decade, e.g. 10, 20, 30: every multiple would crowd 6, 7, 8, 9 together below 10), else None
    (a range too narrow for multiples of powers of ten: `tidy_ticks` steps it evenly)."""
    if not (lo > 0 and hi > lo):
        return (1,)
    decades = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)

    def in_view(subs) -> int:
        ticks = np.outer(10.0**decades, subs).ravel()
        return int(((ticks >= lo) & (ticks <= hi)).sum())

    # Three powers of ten in view are enough: 1, 2, 5 x 10^k over three or more decades crowds
    # the labels (500, 1000, 2000, 5000, 10000, ... on a 6-inch axis).
    if in_view((1,)) >= min(3, least):
        return (1,)
    for need, choices in ((least, ((1, 2, 5), (1, 2, 3, 5))), (min(3, least), ((1, 2, 5), (1, 2, 3, 5)))):
        for subs in choices:
            if in_view(subs) >= need:
                return subs
    return None


def _curve_points(fig, ax) -> np.ndarray:
    """float[P, 2]: display coordinates of the curves drawn in `ax` and in its twins (axes at
    the same place), each line's segments sampled densely, so that a legend box can be tested
    against them."""
    twins = [a for a in fig.axes if a is ax or np.allclose(a.get_position().bounds, ax.get_position().bounds)]
    pts = []
    for a in twins:
        for line in a.lines:
            xy = np.column_stack([np.asarray(v, float).ravel() for v in line.get_data()])
            xy = xy[np.isfinite(xy).all(1)]
            if len(xy) == 0:
                continue
            d = line.get_transform().transform(xy)
            if len(d) > 1 and line.get_linestyle() not in ("None", "none", "", " "):
                t = np.linspace(0, 1, 16)[:, None, None]
                d = (d[:-1] + t * (d[1:] - d[:-1])).reshape(-1, 2)
            pts.append(d)
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def place_legend(fig, ax, *, fontsize: float = 8):
    """A legend for `ax` (None when nothing is labelled) that covers no curve: matplotlib's
    "best" place inside the axes when the curves leave room for it, else outside on the right
    (then save with bbox_inches="tight")."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    leg = ax.legend(fontsize=fontsize, loc="best")
    fig.tight_layout()
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)  # the final layout: "best" and the transforms are resolved when drawn
    box = leg.get_window_extent(renderer).expanded(1.02, 1.05)
    pts = _curve_points(fig, ax)
    inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    if inside.any():
        leg.remove()
        from matplotlib.transforms import ScaledTranslation

        # The gap right of the axes in inches, not in axes fractions: a later tight_layout
        # narrows the axes to make room for the legend, and a twin axis's tick labels and label
        # keep their width in points, so a gap in axes fractions would shrink onto them.
        right = [a for a in fig.axes if a is not ax and a.get_position().bounds == ax.get_position().bounds]
        gap_in = 0.08
        for twin in right:
            extra_px = twin.get_tightbbox(renderer).x1 - ax.get_window_extent(renderer).x1
            gap_in = max(gap_in, extra_px / fig.dpi + 0.1)
        leg = ax.legend(
            fontsize=fontsize,
            loc="upper left",
            bbox_to_anchor=(1, 1),
            bbox_transform=ax.transAxes + ScaledTranslation(gap_in, 0, fig.dpi_scale_trans),
            borderaxespad=0,
        )
    return leg


def plot_offline(report, path: str | Path) -> Path:
    """The figure of a paper-002 or paper-003 experiment (`jaxsched.results.Report.plot`):
    - "ratio_hist": TEL / OPT per algorithm as box plots (opt);
    - "loglog": ratio against M on log-log axes with fitted slopes (lower_bound);
    - "curves": average latency against n per algorithm, one panel per (mix, step model), as
      the paper's Fig. 8 (real), with 95% CI bands over the seeds; any other y against x with
      the plot's "xlabel", "ylabel", "xscale" and "yscale" (paper 003's figures), or
      per-panel labels in "axes" {title: (xlabel, ylabel)} (paper 004's figures); one legend
      for all panels, below them; "sharey": True gives every panel the same y axis (and
      ticks), for panels meant to be compared.
    Long titles are wrapped to the figure's width."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plot = report.plot
    if plot["kind"] == "ratio_hist":
        labels = list(plot["ratios"])
        fig, ax = subplots(figsize=(8, 0.45 * len(labels) + 1.5))
        ax.boxplot([plot["ratios"][k] for k in labels], vert=False, whis=(0, 100))
        ax.set_yticks(np.arange(1, len(labels) + 1), labels)
        ax.axvline(1.0, color="k", lw=0.8, ls=":")
        ax.set(xlabel="TEL / OPT (ratio; box: quartiles, line: median, whiskers: min and max)")
        ax.set_title(wrap_title(report.title, 8), fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120, bbox_inches="tight")
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
        ax.set_title(wrap_title(report.title, 7), fontsize=10)
        return finish(fig, ax, path)
    panels = plot["panels"]  # {title: {label: (n[], mean[], half[])}}
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = subplots(
        rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False, sharey=bool(plot.get("sharey", False))
    )
    labels = list(dict.fromkeys(k for series in panels.values() for k in series))
    colour = {k: f"C{i % 10}" for i, k in enumerate(labels)}  # one colour per algorithm
    handles = {}
    for i, (ax, (title, series)) in enumerate(zip(axes.ravel(), panels.items())):
        for label, (n, mean, half) in series.items():
            n, mean, half = (np.asarray(v, float) for v in (n, mean, half))
            (handles[label],) = ax.plot(n, mean, "o-" if n.size <= 80 else "-", ms=3, label=label, color=colour[label])
            ax.fill_between(n, mean - np.nan_to_num(half), mean + np.nan_to_num(half), alpha=0.15, color=colour[label])
        xlabel, ylabel = plot.get("axes", {}).get(
            title, (plot.get("xlabel", "requests n"), plot.get("ylabel", "average latency"))
        )
        if plot.get("sharey") and i % cols:
            ylabel = ""  # a shared y axis is labelled once, on the left
        ax.set(xlabel=xlabel, ylabel=ylabel, xscale=plot.get("xscale", "linear"), yscale=plot.get("yscale", "linear"))
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        tidy_ticks(ax)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(wrap_title(report.title, 6 * cols), fontsize=10)
    fig.tight_layout()
    # One legend for every panel (an algorithm keeps its colour), below them, over no curve.
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(len(handles), 4),
        fontsize=8,
        frameon=False,
    )
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path
