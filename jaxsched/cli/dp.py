"""`jaxsched run`, `jaxsched reproduce` and `jaxsched check`: the dp engine (BF-IO paper).

`jaxsched run` with no arguments runs the BF-IO paper's Table 1 configuration (G = 16, B = 72,
R = 64) on the BurstGPT-like workload over 8 seeds, prints a policy-by-metric table (mean and
95% CI), and writes a CSV (one row per policy and seed) and a load-trajectory plot.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..dp.config import DPConfig
from ..dp.experiments import (TABLE1_POLICIES, parse_policies, result_rows, run_policies, summary_table,
                              table1_rows, table1_workload)
from ..dp.policies import POLICIES
from ..errors import ConfigError, require_int
from ..results import write_csv
from ..workload import BivariateNormal, BurstGPTLike, read_trace

WORKLOADS = {"burstgpt_like": BurstGPTLike, "bivariate_normal": BivariateNormal}


def _add_shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--G", type=int, default=16, help="workers (default 16)")
    p.add_argument("--B", type=int, default=72, help="slots per worker (default 72)")
    p.add_argument("--R", type=int, default=64, help="waiting-pool size (default 64)")


def _plot_run(base: DPConfig, specs, seed: int, steps: int, path: Path, params_kw: dict) -> Path:
    """One recorded run per policy (seed `seed`, first `steps` steps) drawn as Fig. 6."""
    from ..dp import make_params, simulate
    from ..plots import load_trajectories
    loads = {}
    for spec in specs:
        cfg = dataclasses.replace(base, policy=spec.name, horizon=spec.horizon,
                                  num_steps=min(steps, base.num_steps))
        res = simulate(cfg, make_params(cfg, **params_kw), [seed], record=True)
        loads[spec.label] = res.trajectories["hist_loads"][0]
    return load_trajectories(loads, path)


def cmd_run(a: argparse.Namespace) -> int:
    specs = parse_policies(a.policies)
    if a.trace:
        workload = read_trace(a.trace, order="resample")
    else:
        workload = WORKLOADS[a.workload]()
    if a.seeds < 1:
        raise ConfigError(f"--seeds must be an integer >= 1, got {a.seeds}")
    base = DPConfig(num_workers=a.G, slots_per_worker=a.B, pool_size=a.R, num_steps=a.steps,
                    semantics=a.semantics, workload=workload, predictor=a.predictor)
    for s in specs:  # validate every policy's config before compiling anything
        dataclasses.replace(base, policy=s.name, horizon=s.horizon)
    seeds = list(range(a.seed_start, a.seed_start + a.seeds))
    params_kw = dict(noise_lo=a.noise, noise_hi=a.noise, fp_rate=a.fp_rate, fn_rate=a.fn_rate)
    print(f"jaxsched run: G={a.G} B={a.B} R={a.R} steps={a.steps} seeds={a.seeds} "
          f"workload={workload.name} semantics={a.semantics}", file=sys.stderr)
    results = run_policies(base, specs, seeds, params_kw=params_kw, progress=not a.quiet)
    print(summary_table(results))
    out = write_csv(a.out, result_rows(results, seeds))
    print(f"\nresults: {out}")
    if a.plot != "none":
        png = _plot_run(base, specs, seeds[0], a.plot_steps, Path(a.plot), params_kw)
        print(f"load trajectories: {png}")
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    if a.what not in ("table1", "fig4", "noise"):
        raise ConfigError(f"reproduce: unknown experiment {a.what!r}; available: table1, fig4, noise")
    if a.what == "fig4":
        return _reproduce_fig4(a)
    if a.what == "noise":
        return _reproduce_noise(a)
    if not a.trace:
        raise ConfigError("reproduce table1 needs --trace PATH (the BurstGPT sample, burstgpt_8000.csv)")
    workload = table1_workload(a.trace)
    base = DPConfig(num_workers=16, slots_per_worker=72, pool_size=64, num_steps=50_000,
                    workload=workload)
    print("jaxsched reproduce table1: G=16 B=72 R=64, N=100000 requests "
          "(numpy default_rng(42).choice(8000)), one run", file=sys.stderr)
    results = run_policies(base, TABLE1_POLICIES, [0], progress=not a.quiet, block_steps=4096)
    print(table1_rows(results))
    out = write_csv(a.out or "results/table1.csv", result_rows(results, [0], extra={"trace": str(a.trace)}))
    print(f"\nresults: {out}")
    return 0


def _reproduce_fig4(a: argparse.Namespace) -> int:
    from ..dp.experiments import fig4_sweep
    from ..plots import horizon_curve
    seeds = list(range(a.seeds))
    print(f"jaxsched reproduce fig4: BF-IO(H) on the synthetic workload, {a.seeds} seeds, "
          "N = 8000 requests each, G=16 B=72 R=64, C/8", file=sys.stderr)
    res = fig4_sweep(seeds=seeds, progress=not a.quiet)
    rows = [dict(horizon=H, seed=s, avg_imbalance_tokens=float(v[i])) for H, v in res.items()
            for i, s in enumerate(seeds)]
    from ..results import markdown_table, format_value
    from ..stats import mean_ci
    print(markdown_table(["H", "avg imbalance (tokens)", "95% CI"],
                         [[str(H), format_value(mean_ci(v)[0]), format_value(mean_ci(v)[2])]
                          for H, v in res.items()]))
    out = write_csv(a.out or "results/fig4.csv", rows)
    png = horizon_curve({"BF-IO(H), oracle": res}, a.plot or "results/fig4.png",
                        title="Imbalance against lookahead (synthetic, G=16, B=72; paper Fig. 4)")
    print(f"\nresults: {out}\nplot: {png}")
    return 0


def _reproduce_noise(a: argparse.Namespace) -> int:
    from ..dp.experiments import noise_sweep
    seeds = list(range(a.seeds))
    res = noise_sweep(seeds=seeds, progress=not a.quiet)
    rows = [dict(series=k, level=lvl, seed=s, avg_imbalance_tokens=float(v[i]))
            for k, by in res.items() for lvl, v in by.items() for i, s in enumerate(seeds)]
    from ..results import markdown_table, format_value
    from ..stats import mean_ci
    print(markdown_table(["series", "error level", "avg imbalance (tokens)"],
                         [[k, str(lvl), format_value(mean_ci(v)[0])] for k, by in res.items()
                          for lvl, v in by.items()]))
    out = write_csv(a.out or "results/noise.csv", rows)
    from ..plots import error_curves
    png = error_curves(res, a.plot or "results/noise.png")
    print(f"\nresults: {out}\nplot: {png}")
    return 0


def cmd_check(a: argparse.Namespace) -> int:
    if a.what != "theorems":
        raise ConfigError(f"check: unknown check {a.what!r}; available: theorems")
    from kernels import BFIO_VARIANTS
    for flag, name in (("--kernel", a.kernel), ("--t1-kernel", a.t1_kernel)):
        if name not in BFIO_VARIANTS:
            raise ConfigError(f"{flag} must be one of {tuple(BFIO_VARIANTS)}, got {name!r}")
    from ..dp.theorems import check_theorems
    seeds = require_int(a.seeds, "--seeds", lo=2, hi=4096)
    measured = None if a.measured is None else require_int(a.measured, "--measured", lo=1, hi=100_000)
    print(f"jaxsched check theorems: {'quick' if a.quick else 'full'} grid, {seeds} seeds, "
          f"BF-IO kernels {a.kernel} (Theorems 2, 3) and {a.t1_kernel} (Theorem 1), results in {a.out}",
          file=sys.stderr)
    ok, checks, report = check_theorems(a.out, quick=a.quick, kernel=a.kernel, t1_kernel=a.t1_kernel,
                                        seeds=seeds, measured=measured, progress=not a.quiet)
    for c in checks:
        print(f"{c.status:4s}  {c.name}: {c.detail}")
    print(f"\nreport: {report}")
    return 0 if ok else 1


def add_parsers(sub) -> None:
    """The dp engine's commands: run, reproduce, check."""
    r = sub.add_parser("run", help="compare policies on one configuration over several seeds")
    _add_shape_args(r)
    r.add_argument("--policies", default="fcfs,jsq_tokens,bfio:0,bfio:20",
                   help=f"comma-separated, from {', '.join(POLICIES)}; bfio:H gives BF-IO a lookahead H "
                        "(default %(default)s)")
    r.add_argument("--seeds", type=int, default=8, help="number of seeds (default 8)")
    r.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    r.add_argument("--steps", type=int, default=3000, help="decode steps per run (default 3000)")
    r.add_argument("--trace", help="CSV trace to resample per seed (BurstGPT, Azure or two columns)")
    r.add_argument("--workload", choices=sorted(WORKLOADS), default="burstgpt_like")
    r.add_argument("--semantics", choices=["paper", "theory"], default="paper")
    r.add_argument("--predictor", choices=["oracle", "noisy", "classifier"], default="oracle")
    r.add_argument("--noise", type=float, default=0.0, help="noisy predictor: o * U[1-d, 1+d]")
    r.add_argument("--fp-rate", type=float, default=0.0, help="classifier false-positive rate")
    r.add_argument("--fn-rate", type=float, default=0.0, help="classifier false-negative rate")
    r.add_argument("--out", default="results/run.csv", help="CSV results file")
    r.add_argument("--plot", default="results/loads.png", help="load-trajectory PNG ('none' to skip)")
    r.add_argument("--plot-steps", type=int, default=2000, help="steps shown in the plot")
    r.add_argument("--quiet", action="store_true", help="no progress output")
    r.set_defaults(func=cmd_run)

    q = sub.add_parser("reproduce", help="reproduce a table of a paper")
    q.add_argument("what", help="table1 (BF-IO paper, Table 1), fig4 (imbalance against H), "
                                "noise (BF-IO(H) under prediction errors)")
    q.add_argument("--trace", help="path to burstgpt_8000.csv (table1)")
    q.add_argument("--seeds", type=int, default=8, help="seeds (fig4, noise; default 8)")
    q.add_argument("--out", help="CSV results file (default results/<what>.csv)")
    q.add_argument("--plot", help="PNG (fig4, noise; default results/<what>.png)")
    q.add_argument("--quiet", action="store_true")
    q.set_defaults(func=cmd_reproduce)

    c = sub.add_parser("check", help="check the BF-IO paper's theorems in the theory semantics")
    c.add_argument("what", help="theorems (Theorems 1-3: FCFS prediction, BF-IO bounds, ratio growth)")
    c.add_argument("--quick", action="store_true", help="the reduced grid (8 runs, about 30 CPU seconds)")
    c.add_argument("--out", default="results/theorems",
                   help="folder for report.md, results.csv (resumed if present) and the PNG plots")
    c.add_argument("--kernel", default="window",
                   help="BF-IO kernel of Theorems 2 and 3 (kernels.BFIO_VARIANTS; default window: "
                        "the proofs' max-min minimizing BF-IO; vf: valley fill, the IO objective)")
    c.add_argument("--t1-kernel", default="round_lpt",
                   help="BF-IO kernel of Theorem 1's rounds (default round_lpt: max - min <= s_max - 1)")
    c.add_argument("--seeds", type=int, default=4, help="seeds per point (default 4)")
    c.add_argument("--measured", type=int, default=None,
                   help="measured rounds (Theorem 1) or slot lifetimes 1/p (default 48; quick 20)")
    c.add_argument("--quiet", action="store_true", help="no progress output")
    c.set_defaults(func=cmd_check)
