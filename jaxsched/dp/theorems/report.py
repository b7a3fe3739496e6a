"""The outputs of `jaxsched check theorems`: the markdown report and the three plots."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from ...results import markdown_table
from .checks import FCFS_TOLERANCE, Check, by_policy, num, ratio_rows, throughput


def render_report(
    rows: Sequence[dict],
    checks: Sequence[Check],
    tables: dict,
    *,
    settings: str,
    elapsed_s: float,
    plots: Sequence[Path],
) -> str:
    """The markdown report: settings, check summary, detail tables (`all_checks`), plots.

    elapsed_s: wall seconds of the whole invocation; plots: PNG files beside the report.
    """
    wall, cpu, steps, rate = throughput(rows)
    parts = [
        "# BF-IO Theorems 1-3: `jaxsched check theorems`",
        "",
        f"Settings: {settings}.",
        "",
        f"Wall time of this invocation {elapsed_s:.1f} s; simulation (compile + run) over all "
        f"{len(rows)} runs {wall:.1f} s wall, {cpu:.1f} s process CPU, for {steps:.0f} "
        f"seed-steps ({rate:.0f} seed-steps per wall second, compilation included).",
        "",
        "Sigma is the per-slot snapshot standard deviation derived analytically "
        "(`jaxsched.dp.theorems.snapshot_var`): sigma_s^2 = (s_max^2 - 1)/12 (Theorem 1), "
        "sigma_s^2 + (1-p)/p^2 (Theorem 2), and for a common drift with mean mu and variance v "
        "sigma_s^2 + (q/p) v + mu^2 q/p^2 - v q^2/(1-q^2), q = 1-p (Theorem 3: the variance given "
        "the drift path, averaged over paths).",
        "",
        "## Checks",
        "",
        markdown_table(["check", "status", "numbers"], [[c.name, c.status, c.detail] for c in checks]),
        "",
        "## FCFS imbalance against G sigma sqrt(B) e_G",
        "",
        markdown_table(["group", "G", "B", "sigma", "FCFS imbalance", "prediction", "error", ""], tables["fcfs"]),
        "",
        "## BF-IO gap and imbalance against the bounds",
        "",
        markdown_table(
            ["group", "G", "B", "kernel", "kappa/phi", "avg gap", "gap bound", "avg imbalance", "imb. bound", ""],
            tables["bfio"],
        ),
        "",
        "## Improvement ratio FCFS / BF-IO",
        "",
        markdown_table(["group", "points", "ratio range", "slope vs B", "slope vs log G", "theorem"], tables["growth"]),
        "",
        "Values are means over seeds ± 95% CI half-widths (tokens).",
        "",
    ]
    if plots:
        parts += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots] + [""]
    return "\n".join(parts)


def grid_setting(rows: Sequence[dict]) -> str:
    """The configuration a theorem plot comes from, for its title: runs, seeds per run, steps per
    run (burn-in included) and the BF-IO kernels, read from the result rows."""

    def span(values) -> str:
        lo, hi = min(values), max(values)
        return f"{lo:,.0f}" if lo == hi else f"{lo:,.0f}-{hi:,.0f}"

    if not rows:
        return "no runs"
    seeds = [num(r, "n") for r in rows]
    steps = [num(r, "num_steps") for r in rows]
    burn = [num(r, "burn_in_steps") for r in rows]
    kernels = sorted({str(r["kernel"]) for r in by_policy(rows, "bfio") if r.get("kernel")})
    text = (
        f"theory semantics (overloaded pool), {len(rows)} runs, {span(seeds)} seeds each, "
        f"{span(steps)} steps per run ({span(burn)} burn-in)"
    )
    return text + (f"; BF-IO H = 0, kernel {' / '.join(kernels)}" if kernels else "")


def make_plots(rows: Sequence[dict], out_dir: Path) -> list[Path]:
    """The three figures (PNG) in out_dir: the improvement ratio against sqrt(B log G), FCFS
    against its prediction, and BF-IO's gap against B beside its bound; each title says the
    configuration of the runs (`grid_setting`)."""
    from ..plots import bfio_gap_vs_b, fcfs_vs_prediction, improvement_ratio

    ratio = {
        g: ([math.sqrt(B * math.log(G)) for G, B, _ in pts], [r for *_, r in pts])
        for g, pts in ratio_rows(rows).items()
    }
    fcfs: dict[str, tuple] = {}
    for r in by_policy(rows, "fcfs"):
        fcfs.setdefault(r["group"], ([], [], []))
        for lst, v in zip(fcfs[r["group"]], (num(r, "prediction"), num(r, "imb_mean"), num(r, "imb_ci95"))):
            lst.append(v)
    gaps: dict[str, dict] = {}
    bounds: dict[str, float] = {}
    for r in by_policy(rows, "bfio"):
        d = gaps.setdefault(r["group"], {}).setdefault(int(r["G"]), ([], [], []))
        for lst, v in zip(d, (int(r["B"]), num(r, "gap_mean"), num(r, "gap_ci95"))):
            lst.append(v)
        bounds[r["group"]] = num(r, "gap_bound")
    fcfs_rows = by_policy(rows, "fcfs")
    return [
        improvement_ratio(
            ratio,
            out_dir / "ratio_vs_sqrt_B_logG.png",
            title=f"FCFS / BF-IO average imbalance against sqrt(B log G): {grid_setting(rows)}",
        ),
        fcfs_vs_prediction(
            fcfs,
            out_dir / "fcfs_vs_prediction.png",
            tolerance=FCFS_TOLERANCE,
            title=f"FCFS (no predictions) imbalance against G sigma sqrt(B) e_G: {grid_setting(fcfs_rows)}",
        ),
        bfio_gap_vs_b(
            gaps,
            bounds,
            out_dir / "bfio_gap_vs_B.png",
            title=f"BF-IO average max-min gap against B: {grid_setting(by_policy(rows, 'bfio'))}",
        ),
    ]
