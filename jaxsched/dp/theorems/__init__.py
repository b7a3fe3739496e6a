"""`jaxsched check theorems`: the BF-IO paper's Theorems 1-3 checked in the `theory` semantics.

`check_theorems` runs FCFS and BF-IO over a grid of (G, B, s_max, p, drift) points and checks the
measured imbalance and max-min gap against the theorems' predictions and bounds. One job per
module: `predictions` (analytic formulas), `grid` (the points, the model per theorem, and the
runner), `checks` (pass/fail logic and its tolerances), `report` (report.md and the plots).
docs/theorems.md describes the model, the checks, the choice of BF-IO kernels and the measured
numbers behind them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ...buckets import DEFAULT_MAX_WASTE, check_max_waste
from ...errors import require, require_bool, require_choice, require_int
from ...stats import ols
from .checks import (
    FCFS_MIN_B,
    FCFS_TOLERANCE,
    Check,
    admission_margin,
    all_checks,
    bfio_check,
    fcfs_check,
    growth_report,
    overload_check,
    ratio_rows,
    rounds_check,
    throughput,
)

# Re-exported: the simulator and its parameters as the grid runs them (tests run points through
# them; `grid` holds the only import of the runner), and the least squares the fits use (`ols`).
from .grid import (
    COMPILE_S,
    MAX_POOL,
    MAX_WINDOW_WORK,
    POOL_SIGMAS,
    Point,
    make_params,
    plan_grid,
    run_cost_s,
    run_grid,
    run_point,
    simulate,
    theorem_grid,
)
from .predictions import (
    drift_moments,
    expected_max_normal,
    fcfs_prediction,
    ratio_slopes,
    snapshot_sigma,
    snapshot_var,
    uniform_prompt_var,
)
from .report import make_plots, render_report

# BF-IO kernels (kernels.BFIO_VARIANTS), one per proof (docs/theorems.md, "BF-IO kernels"):
DEFAULT_KERNEL = "window"  # Theorems 2, 3: minimize max - min, every worker refilled exactly
DEFAULT_T1_KERNEL = "round_lpt"  # Theorem 1: deal a round's prompts descending, s_max-balanced


def check_theorems(
    out_dir: str | Path,
    *,
    quick: bool = False,
    kernel: str = DEFAULT_KERNEL,
    t1_kernel: str = DEFAULT_T1_KERNEL,
    seeds: int = 4,
    measured: int | None = None,
    progress: bool = True,
    plots: bool = True,
    bucket_waste: float | None = DEFAULT_MAX_WASTE,
) -> tuple[bool, list[Check], Path]:
    """Run the grid (resuming `out_dir/results.csv`), write report.md and the plots.

    measured: measured rounds (Theorem 1) or slot lifetimes 1/p (Theorems 2/3) per run; default
    48 (quick: 20). bucket_waste: size buckets of the small runs (`grid.plan_grid`; None: every
    run its own program; the rows are bitwise the same). Returns (all checks passed, checks,
    report path).
    """
    # Every argument is checked before the folder is made and anything compiles (a bad count
    # would otherwise surface as a DPConfig field the caller never set).
    require(isinstance(out_dir, (str, os.PathLike)) and str(out_dir).strip() != "", "out_dir", "a folder path", out_dir)
    require(
        not Path(out_dir).exists() or Path(out_dir).is_dir(),
        "out_dir",
        "a folder (it exists and is not one)",
        str(out_dir),
    )
    require_bool(quick, "quick")
    from ...kernels import BFIO_VARIANTS

    require_choice(kernel, "kernel", BFIO_VARIANTS)
    require_choice(t1_kernel, "t1_kernel", BFIO_VARIANTS)
    # Two seeds at least: the checks use 95% confidence intervals over seeds.
    seeds = require_int(seeds, "seeds", lo=2, hi=4096)
    if measured is not None:
        require_int(measured, "measured", lo=1, hi=100_000)
    if bucket_waste is not None:
        check_max_waste(bucket_waste)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    measured = (20 if quick else 48) if measured is None else measured
    t0 = time.perf_counter()
    points = theorem_grid(quick)
    rows = run_grid(
        points,
        out_dir / "results.csv",
        kernel=kernel,
        t1_kernel=t1_kernel,
        measured=measured,
        seeds=range(seeds),
        progress=progress,
        bucket_waste=bucket_waste,
    )
    checks, tables = all_checks(rows)
    pngs = make_plots(rows, out_dir) if plots else []
    settings = (
        f"{'quick' if quick else 'full'} grid, {len(points)} points, {len(rows)} runs, "
        f"{seeds} seeds, {measured} measured rounds / lifetimes, BF-IO kernel {kernel!r} "
        f"(Theorems 2, 3) and {t1_kernel!r} (Theorem 1)"
    )
    report = out_dir / "report.md"
    report.write_text(
        render_report(rows, checks, tables, settings=settings, elapsed_s=time.perf_counter() - t0, plots=pngs)
    )
    return all(c.status != "FAIL" for c in checks), checks, report


__all__ = [
    "check_theorems",
    "DEFAULT_KERNEL",
    "DEFAULT_T1_KERNEL",
    "expected_max_normal",
    "uniform_prompt_var",
    "drift_moments",
    "snapshot_var",
    "snapshot_sigma",
    "fcfs_prediction",
    "ratio_slopes",
    "Point",
    "theorem_grid",
    "run_point",
    "run_grid",
    "plan_grid",
    "COMPILE_S",
    "run_cost_s",
    "MAX_WINDOW_WORK",
    "POOL_SIGMAS",
    "MAX_POOL",
    "Check",
    "fcfs_check",
    "admission_margin",
    "bfio_check",
    "rounds_check",
    "overload_check",
    "ratio_rows",
    "growth_report",
    "all_checks",
    "throughput",
    "FCFS_TOLERANCE",
    "FCFS_MIN_B",
    "render_report",
    "make_plots",
    "simulate",
    "make_params",
    "ols",
]
