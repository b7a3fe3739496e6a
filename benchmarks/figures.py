"""The figures of the paper pages (docs/papers/NNN-*.md), one per reproduced result, written to
docs/figures/ at a documented reduced size.

    python -m benchmarks.figures                         # every figure (a few minutes on 2 cores)
    python -m benchmarks.figures --only bfio_lookahead   # one figure (a comma-separated list: several)
    python -m benchmarks.figures --tiny --out /tmp/figs  # every figure at a smoke-test size
    python -m benchmarks.figures --list                  # the names, their files and sizes

Each figure comes from the engines' own experiment and figure functions (`jaxsched.dp.experiments`,
`jaxsched.kv.experiments`, `jaxsched.offline.experiments`, `jaxsched.interval.experiments`,
`jaxsched.budget.experiments`, drawn by `jaxsched.dp.plots`, `jaxsched.kv.plots` and
`jaxsched.plots`); what this script adds is the size of each run and a title that states the
configuration (policies, predictor and noise, seeds, steps or horizon). The full-size runs are
the commands named on the paper pages (`jaxsched reproduce fig4`, `jaxsched check stability`,
...); each figure's caption there gives its size here and the full run's.

`--tiny` runs every figure at a size that only exercises the code (tests/core/test_figures.py);
its pictures carry no result. Each run prints the wall time and file size of every figure and
the load average before and after.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "figures"
# The Table 1 sample of the BF-IO paper, beside the repository (absent: a synthetic stand-in).
TABLE1_TRACE = ROOT.parent / "shared" / "data" / "burstgpt_8000.csv"


@dataclass(frozen=True)
class Made:
    """One figure written: its file, the title drawn on it and the wall seconds it took."""

    name: str
    path: Path
    title: str
    wall_s: float


@dataclass(frozen=True)
class Figure:
    """A docs figure: its paper, file name, what it shows, and the function that draws it at
    the full or the tiny size (`draw(path, tiny) -> title`)."""

    name: str
    paper: str
    file: str
    what: str
    size: str
    draw: Callable[[Path, bool], str]


def _n(x: int) -> str:
    """A count with thousands separators (4,000)."""
    return f"{x:,}"


# --------------------------------------------------------------------------------------------
# Paper 000 (BF-IO, the dp engine)
# --------------------------------------------------------------------------------------------
LOADS_FULL = dict(steps=1000, policies=(("fcfs", 0), ("bfio", 0)))
LOADS_TINY = dict(steps=40, policies=(("fcfs", 0),))  # one policy: one compilation


def bfio_loads(path: Path, tiny: bool) -> str:
    """Table 1's policies on its BurstGPT sample (G = 16, B = 72, R = 64): every worker's load
    over the first steps of seed 0, one panel per policy (the paper's Fig. 6)."""
    import jaxsched as js
    from jaxsched.dp import experiments as X
    from jaxsched.dp.plots import load_trajectories

    size = LOADS_TINY if tiny else LOADS_FULL
    steps = size["steps"]
    base = js.dp.DPConfig(num_workers=16, slots_per_worker=72, pool_size=64, num_steps=steps)
    if TABLE1_TRACE.is_file():
        base = dataclasses.replace(base, workload=X.table1_workload(str(TABLE1_TRACE)))
        workload = "BurstGPT sample, N = 100,000 requests (Table 1)"
    else:
        base = dataclasses.replace(base, workload=js.BurstGPTLike())
        workload = "BurstGPT-like synthetic workload (the Table 1 sample is absent)"
    loads = {}
    for policy, H in size["policies"]:
        cfg = dataclasses.replace(base, policy=policy, lookahead_steps=H)
        res = js.simulate(cfg, js.dp.make_params(cfg), [0], record=True, warn=False)
        label = f"BF-IO H = {H}" if policy == "bfio" else {"fcfs": "FCFS", "jsq_tokens": "JSQ (tokens)"}[policy]
        loads[label] = res.trajectories["hist_loads"][0]
    if any(H for _, H in size["policies"]):
        predictor = f"BF-IO's window: oracle predictions, no noise, decay {base.lookahead_decay:g}"
    else:
        predictor = "no output predictions used"  # FCFS and BF-IO H = 0 read no output lengths
    title = (
        f"Per-worker load (post-growth, pre-removal), {workload}, G = 16, B = 72, R = 64; "
        f"{', '.join(loads)} ({predictor}); seed 0 (1 seed), steps 1-{_n(steps)}"
    )
    load_trajectories(loads, path, title=title, dpi=110)
    return title


LOOKAHEAD_FULL = dict(H=(0, 16, 64, 256), seeds=4, requests=4000, steps=4000)
LOOKAHEAD_TINY = dict(H=(0, 4), seeds=2, requests=300, steps=60)


def bfio_lookahead(path: Path, tiny: bool) -> str:
    """BF-IO(H)'s imbalance against the lookahead H on Fig. 4's synthetic workload
    (`jaxsched.dp.experiments.fig4_sweep`, reduced)."""
    from jaxsched.dp.experiments import fig4_sweep
    from jaxsched.dp.plots import lookahead_curve

    size = LOOKAHEAD_TINY if tiny else LOOKAHEAD_FULL
    res = fig4_sweep(
        lookahead_steps=size["H"],
        seeds=range(size["seeds"]),
        num_requests=size["requests"],
        steps=size["steps"],
        progress=False,
    )
    title = (
        "BF-IO(H) imbalance against the lookahead (reduced Fig. 4): bivariate-normal lengths, "
        "G = 16, B = 72, R = 64, oracle predictions (no noise), window decay 1; "
        f"{size['seeds']} seeds, N = {_n(size['requests'])} requests and {_n(size['steps'])} steps "
        "per seed; mean ± 95% CI"
    )
    thousands = {H: v / 1e3 for H, v in res.items()}
    lookahead_curve(
        {"BF-IO(H), oracle": thousands}, path, ylabel="average imbalance G max - sum (k tokens)", title=title
    )
    return title


THEOREMS_FULL = dict(seeds=4, measured=20)
THEOREMS_TINY = dict(seeds=2, measured=2)


def bfio_theorems(path: Path, tiny: bool) -> str:
    """FCFS's imbalance against its prediction G sigma sqrt(B) e_G on the quick grid of
    `jaxsched check theorems` (`jaxsched.dp.theorems.check_theorems`, its own figure)."""
    from jaxsched.dp.theorems import check_theorems
    from jaxsched.dp.theorems.checks import by_policy
    from jaxsched.dp.theorems.report import grid_setting
    from jaxsched.results import read_rows

    size = THEOREMS_TINY if tiny else THEOREMS_FULL
    with tempfile.TemporaryDirectory(prefix="jaxsched-figures-") as tmp:
        check_theorems(tmp, quick=True, seeds=size["seeds"], measured=size["measured"], progress=False)
        rows = read_rows(Path(tmp) / "results.csv")
        shutil.copyfile(Path(tmp) / "fcfs_vs_prediction.png", path)
    # The title `make_plots` drew (the same function of the same rows).
    return f"FCFS (no predictions) imbalance against G sigma sqrt(B) e_G: {grid_setting(by_policy(rows, 'fcfs'))}"


# --------------------------------------------------------------------------------------------
# Paper 001 (WAIT, the kv engine)
# --------------------------------------------------------------------------------------------
SCALING_FULL = dict(seeds=32, horizons=(125.0, 250.0, 500.0, 1000.0, 2000.0))
SCALING_TINY = dict(seeds=2, horizons=(20.0, 40.0))


def wait_scaling(path: Path, tiny: bool) -> str:
    """Theorem 1 of the WAIT paper: throughput gap and latency against the horizon T, (9) with
    equality against strict (`jaxsched.kv.experiments.run_scaling`, reduced)."""
    from jaxsched.kv.experiments import run_scaling
    from jaxsched.kv.experiments.scaling import SCALING_INSTANCES
    from jaxsched.kv.plots import plot_kv_scaling

    size = SCALING_TINY if tiny else SCALING_FULL
    rows, fits = run_scaling(seeds=size["seeds"], horizons=size["horizons"])
    inst = SCALING_INSTANCES[0]
    T = size["horizons"]
    title = (
        f"WAIT (Theorem 1) on one type: prefill {inst.prefill} + decode {inst.decode} token, Poisson "
        f"{inst.rate:g} req/s, d0 = {inst.d0_s:g} s, d1 = {inst.d1_s_per_token:g} s/token; "
        + "; ".join(f"{i.name}: threshold {i.threshold}, C = {i.capacity_tokens} tokens" for i in SCALING_INSTANCES)
        + f"; {size['seeds']} seeds per point, horizons {T[0]:,.0f} to {T[-1]:,.0f} s "
        "(dotted: reference slopes -1/2 and -1, right: 1/2 and 0)"
    )
    plot_kv_scaling(rows, fits, path, title=title)
    return title


# --------------------------------------------------------------------------------------------
# Paper 002 (the offline engine)
# --------------------------------------------------------------------------------------------
OPT_FULL = dict(instances=40)
OPT_TINY = dict(instances=2)


def offline_opt(path: Path, tiny: bool) -> str:
    """Every order's TEL over the exact optimum on small random instances
    (`jaxsched.offline.experiments.opt`, reduced), drawn by `jaxsched.plots.plot_offline`."""
    from jaxsched.offline.experiments import opt
    from jaxsched.plots import plot_offline

    S = (OPT_TINY if tiny else OPT_FULL)["instances"]
    rep = opt(seeds=S)
    title = (
        f"TEL / OPT of paper 002's orders: {S} random instances (n = 8 requests, s ~ U{{1..12}}, "
        "o ~ U{1..8} tokens, M = 30 tokens), one run each (FCFS: seed = instance), unit steps; "
        "OPT from the integer program"
    )
    plot_offline(dataclasses.replace(rep, title=title), path)
    return title


# --------------------------------------------------------------------------------------------
# Paper 003 (the interval engine)
# --------------------------------------------------------------------------------------------
WIDTH_FULL = dict(x=(0.0, 0.1, 0.25, 0.5, 0.75, 0.95, 0.99), n=1000, capacities=(16492, 8192), seeds=4)
WIDTH_TINY = dict(x=(0.0, 0.5), n=40, capacities=(16492,), seeds=2)
WIDTH_POLICIES = {
    "A_min (stale eviction key)": ("amin", {}),
    "A_min (live eviction key)": ("amin", dict(eviction_key="live")),
    "A_max": ("amax", {}),
}


def interval_width(path: Path, tiny: bool) -> str:
    """A_min and A_max against the width of relative intervals [(1 - x) o, (1 + x) o]
    (Experiment 3 of section 6 over a range of x) on LMSYS-like jobs, as TEL / TEL(H-SF)
    (`jaxsched.interval.experiments.ratios_to_hsf`), two memory sizes."""
    from jaxsched.interval import Relative
    from jaxsched.interval.experiments import ratios_to_hsf
    from jaxsched.interval.workloads import LMSYS
    from jaxsched.plots import plot_offline
    from jaxsched.results import Report
    from jaxsched.stats import mean_ci
    from jaxsched.workload import materialize

    size = WIDTH_TINY if tiny else WIDTH_FULL
    S, n = size["seeds"], size["n"]
    # Seed k's jobs: the first n requests of run k of the LMSYS-like law (one instance per seed).
    s, o = (np.stack(v) for v in zip(*(materialize(LMSYS, k, n) for k in range(S))))
    panels = {}
    for M in size["capacities"]:
        series = {label: ([], [], []) for label in WIDTH_POLICIES}
        for x in size["x"]:
            lo, hi = (np.asarray(v) for v in Relative(x).bounds(o))
            for label, (policy, options) in WIDTH_POLICIES.items():
                r = ratios_to_hsf(s, o, lo, hi, M, (policy,), np.arange(S), **options)[policy]
                mean, _, half, _ = mean_ci(r)
                for column, v in zip(series[label], (x, mean, half)):
                    column.append(v)
        panels[f"M = {_n(M)} tokens (n / M = {n / M:.3g} jobs per token)"] = series
    title = (
        f"A_min and A_max against the interval width (section 6, Experiment 3 over x): "
        f"LMSYS-like jobs, n = {_n(n)}, intervals [(1 - x) o, (1 + x) o], unit steps; "
        f"{S} seeds (one instance each), mean ± 95% CI"
    )
    rep = Report(
        "interval_width",
        title,
        [],
        "",
        True,
        plot=dict(
            kind="curves",
            panels=panels,
            xlabel="relative interval half-width x (fraction of o)",
            ylabel="TEL / TEL(H-SF) (ratio)",
            sharey=True,
        ),
    )
    plot_offline(rep, path)
    return title


# --------------------------------------------------------------------------------------------
# Paper 004 (the budget engine)
# --------------------------------------------------------------------------------------------
STABILITY_FULL = dict(seeds=4)
STABILITY_TINY = dict(seeds=3)


def budget_stability(path: Path, tiny: bool) -> str:
    """Fig. 1 and Theorem 1: the growth of the tokens in system against the load per policy,
    and Fig. 1's backlog over time (`jaxsched.budget.experiments.stability`, its quick size)."""
    from jaxsched.budget.experiments import FIG1, STABILITY_POLICIES, stability
    from jaxsched.plots import plot_offline

    S = (STABILITY_TINY if tiny else STABILITY_FULL)["seeds"]
    rep = stability(quick=True, seeds=S)
    loads = sorted({r["load"] for r in rep.rows})
    title = (
        f"Fig. 1 engine (b = {FIG1['budget']} tokens, M = {FIG1['max_requests']} requests, "
        f"t(b') = {FIG1['c_s'] * 1e3:g} ms + {FIG1['a_s_per_token'] * 1e3:g} ms/token x (b' - {FIG1['b0']})^+), "
        f"129 + 112 tokens per request, Poisson arrivals; {', '.join(STABILITY_POLICIES)}; "
        f"loads {', '.join(f'{x:g}' for x in loads)}; {S} seeds, 200 s per run (40 s burn-in)"
    )
    # The backlog (unprocessed tokens in system) in thousands: six-digit tick labels crowd the
    # panel.
    (growth, backlog), (g_axes, b_axes) = rep.plot["panels"].items(), rep.plot["axes"].values()
    backlog_k = {p: (t, np.asarray(y) / 1e3, np.asarray(h) / 1e3) for p, (t, y, h) in backlog[1].items()}
    plot = dict(
        rep.plot,
        panels={growth[0]: growth[1], backlog[0]: backlog_k},
        axes={growth[0]: g_axes, backlog[0]: (b_axes[0], "backlog (k tokens)")},
    )
    plot_offline(dataclasses.replace(rep, title=title, plot=plot), path)
    return title


FIGURES = {
    f.name: f
    for f in (
        Figure(
            "bfio_loads",
            "000",
            "000-bfio-loads.png",
            "per-worker load over time, FCFS and BF-IO H = 0 on Table 1's stream (Fig. 6)",
            "1 seed, 1,000 steps, 2 policies",
            bfio_loads,
        ),
        Figure(
            "bfio_lookahead",
            "000",
            "000-bfio-lookahead.png",
            "BF-IO(H) imbalance against the lookahead H (Fig. 4)",
            "4 lookaheads, 4 seeds, 4,000 requests and steps",
            bfio_lookahead,
        ),
        Figure(
            "bfio_theorems",
            "000",
            "000-bfio-theorems-fcfs.png",
            "FCFS imbalance against its prediction (Theorems 1-3)",
            "quick grid: 8 runs, 4 seeds, 20 measured lifetimes",
            bfio_theorems,
        ),
        Figure(
            "wait_scaling",
            "001",
            "001-wait-scaling.png",
            "WAIT's throughput gap and latency against the horizon (Theorem 1)",
            "32 seeds, T = 125-2,000 s, 2 instances",
            wait_scaling,
        ),
        Figure(
            "offline_opt",
            "002",
            "002-offline-opt.png",
            "TEL / OPT per order (against the exact optimum)",
            "40 instances",
            offline_opt,
        ),
        Figure(
            "interval_width",
            "003",
            "003-interval-width.png",
            "A_min and A_max against the interval width (Experiment 3)",
            "7 widths, 2 memory sizes, n = 1,000, 4 seeds",
            interval_width,
        ),
        Figure(
            "budget_stability",
            "004",
            "004-budget-stability.png",
            "growth of the backlog against the load per scheduler (Fig. 1, Theorem 1)",
            "4 policies, 3 loads, 4 seeds, 200 s",
            budget_stability,
        ),
    )
}


def make(names, out: Path, *, tiny: bool = False, log=print) -> list[Made]:
    """Draw the figures `names` into `out` (made if missing); one `Made` per figure."""
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for name in names:
        fig = FIGURES[name]
        path = out / fig.file
        t0 = time.perf_counter()
        title = fig.draw(path, tiny)
        m = Made(name, path, title, time.perf_counter() - t0)
        log(f"{name}: {path} ({path.stat().st_size / 1024:.0f} KB, {m.wall_s:.1f} s)")
        made.append(m)
    return made


def _names(text: str | None) -> list[str]:
    if not text:
        return list(FIGURES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in FIGURES]
    if bad or not names:
        raise SystemExit(f"--only: each name must be one of {', '.join(FIGURES)}, got {text!r}")
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated figure names (default: every figure)")
    ap.add_argument("--out", default=str(OUT), help="output folder (default: docs/figures)")
    ap.add_argument("--tiny", action="store_true", help="smoke-test sizes (pictures carry no result)")
    ap.add_argument("--list", action="store_true", help="list the figures and exit")
    a = ap.parse_args(argv)
    if a.list:
        for f in FIGURES.values():
            print(f"{f.name:18s} paper {f.paper}  {f.file:28s} {f.what} [{f.size}]")
        return 0
    names = _names(a.only)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    made = make(names, Path(a.out), tiny=a.tiny)
    load1 = os.getloadavg()
    print(
        f"{len(made)} figures in {time.perf_counter() - t0:.1f} s; load average before "
        f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
