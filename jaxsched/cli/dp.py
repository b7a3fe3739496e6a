"""`jaxsched run`, `jaxsched reproduce` and `jaxsched check`: the dp engine (BF-IO paper).

`jaxsched run` with no arguments runs the BF-IO paper's Table 1 configuration (G = 16, B = 72,
R = 64) on the BurstGPT-like workload over 8 seeds, prints a policy-by-metric table (mean and
95% CI), and writes a CSV (one row per policy and seed), a load-trajectory plot and the
resolved options (`run.config.toml`, which `--config` reads back).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from ..dp.registry import KERNELS as BFIO_KERNELS
from ..dp.registry import POLICIES as DP_POLICIES
from ..dp.registry import PREDICTORS as DP_PREDICTORS
from ..dp.registry import REPRODUCTIONS
from ..dp.registry import SEMANTICS as DP_SEMANTICS
from ..dp.registry import WORKLOADS as DP_WORKLOADS
from ..errors import ConfigError, Reads, as_one_grid, merge_reads, reads_from, require_int
from ..outputs import check_dir, check_file, check_output_paths, save
from .base import (
    Interrupted,
    add_overwrite,
    add_trace_format,
    check_folder_outputs,
    check_options,
    command,
    config_path,
    file_outputs,
    fresh_names,
    numbered,
    read_trace_option,
    require_what,
    save_resolved,
    split_list,
)

CHECKS = ("theorems", "stability")

# Options that exclude each other, (dest, dest, why): `run` and `sweep` (dp).
WORKLOAD_EXCLUSIVE = (("workload", "trace", "--trace replaces the synthetic workload"),)
# `reproduce`: what reads each option (table1 is one run on the trace, without a plot).
REPRODUCE_READS = {
    "trace": (Reads("reproduce", ("table1",)),),
    "seeds": (Reads("reproduce", ("fig4", "noise")),),
    "plot": (Reads("reproduce", ("fig4", "noise")),),
}
# `check`: the theorem checks' own options (`check stability` runs the budget experiment).
CHECK_READS = {
    **{d: (Reads("check", ("theorems",)),) for d in ("kernel", "t1_kernel", "measured", "bucket_waste", "no_buckets")},
    # check theorems resumes its folder's results; only the stability check writes anew.
    "overwrite": (Reads("check", ("stability",)),),
}


def run_reads() -> dict[str, tuple[Reads, ...]]:
    """What reads each option of `run`: the policies' registry options first (BF-IO reads the
    predictor and its error rates; --noise sets noise_lo and noise_hi), then the predictor's
    and the trace's."""
    return merge_reads(
        reads_from(DP_POLICIES, "policy", rename={"noise_lo": "noise", "noise_hi": "noise"}),
        {
            "noise": (Reads("predictor", ("noisy",)),),
            "fp_rate": (Reads("predictor", ("classifier",)),),
            "fn_rate": (Reads("predictor", ("classifier",)),),
            "trace_columns": (Reads("--trace", ("FILE",)),),
            "trace_format": (Reads("--trace", ("FILE",)),),
        },
    )


def workload_from_args(a: argparse.Namespace):
    """The request lengths of `run`/`sweep`: a trace, or a named synthetic workload."""
    check_options(a, {}, {}, WORKLOAD_EXCLUSIVE)
    if a.trace:
        columns = getattr(a, "trace_columns", None)
        cols = None if columns is None else tuple(split_list(columns, "--trace-columns"))
        if cols is not None and len(cols) != 2:
            raise ConfigError(f"--trace-columns must name two columns, PROMPT,OUTPUT, got {columns!r}")
        return read_trace_option(a.trace, getattr(a, "trace_format", None), order="resample", columns=cols)
    return DP_WORKLOADS[a.workload or "burstgpt_like"].fn()


def _run_policies(a: argparse.Namespace) -> tuple[str, ...]:
    """The policy names of `run --policies` (no empty or repeated entries), checked before JAX
    is imported; their lookaheads are parsed with the configs."""
    names = tuple(item.partition(":")[0] for item in split_list(a.policies, "--policies"))
    for n in names:
        DP_POLICIES.require(n, "--policies entry")
    return names


def _predictor_params(a: argparse.Namespace) -> dict:
    """make_params keywords of the predictor flags (`run_reads` refuses the ones ignored)."""
    return dict(noise_lo=a.noise, noise_hi=a.noise, fp_rate=a.fp_rate, fn_rate=a.fn_rate)


def _plot_run(base, specs, seed: int, steps: int, path: Path, params_kw: dict, progress: bool) -> Path:
    """One recorded run per policy (seed `seed`, first `steps` steps) drawn as Fig. 6."""
    from ..dp import make_params, simulate
    from ..dp.plots import load_trajectories
    from ..progress import Progress

    steps = min(steps, base.num_steps)
    bar = Progress("plot (seed %d, steps 1-%d)" % (seed, steps), len(specs), enabled=progress)
    loads = {}
    with as_one_grid():  # the policies share the predictor keywords, as in `run_policies`
        configs = [
            dataclasses.replace(base, policy=spec.name, lookahead_steps=spec.lookahead_steps, num_steps=steps)
            for spec in specs
        ]
        params = [make_params(cfg, **params_kw) for cfg in configs]
    for spec, cfg, par in zip(specs, configs, params):
        res = simulate(cfg, par, [seed], record=True)
        loads[spec.label] = res.trajectories["hist_loads"][0]
        bar.advance(1, spec.label)
    bar.close()
    return load_trajectories(
        loads,
        path,
        title=f"Per-worker load (post-growth, pre-removal): seed {seed}, steps 1-{steps}, {base.workload.name}",
    )


def cmd_run(a: argparse.Namespace) -> int:
    """`jaxsched run`: every policy of --policies on one configuration over the seeds."""
    names = _run_policies(a)
    chosen = {
        "policy": names,
        "predictor": a.predictor,
        "--trace": "FILE" if a.trace else "none",
    }
    check_options(a, run_reads(), chosen, WORKLOAD_EXCLUSIVE)
    from ..dp.config import DPConfig, make_params
    from ..dp.experiments import parse_policies, result_rows, run_policies, summary_table
    from ..results import write_csv

    specs = parse_policies(a.policies)
    runs = [(s.name, s.lookahead_steps) for s in specs]
    twice = next((s for i, s in enumerate(specs) if (s.name, s.lookahead_steps) in runs[:i]), None)
    if twice is not None:
        raise ConfigError(f"--policies must not repeat a run, got {twice.label} twice in {a.policies!r}")
    seeds_n = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    require_int(a.seed_start, "--seed-start", lo=0, hi=2**32 - seeds_n)
    plot_steps = require_int(a.plot_steps, "--plot-steps", lo=1)
    out = check_file(a.out, "--out")
    png = None if a.plot == "none" else check_file(a.plot, "--plot", image=True)
    out, png, conf = file_outputs(a, out, png)
    params_kw = _predictor_params(a)
    workload = workload_from_args(a)
    base = DPConfig(
        num_workers=a.num_workers,
        slots_per_worker=a.slots_per_worker,
        pool_size=a.pool_size,
        num_steps=a.num_steps,
        semantics=a.semantics,
        workload=workload,
        predictor=a.predictor,
    )
    # Validate every policy's config and params before compiling anything; the policies are one
    # grid: an option is refused only if none of them reads it (`run_reads` already checked).
    with as_one_grid():
        for s in specs:
            make_params(dataclasses.replace(base, policy=s.name, lookahead_steps=s.lookahead_steps), **params_kw)
    seeds = list(range(a.seed_start, a.seed_start + seeds_n))
    print(
        f"jaxsched run: G={a.num_workers} B={a.slots_per_worker} R={a.pool_size} steps={a.num_steps} seeds={seeds_n} "
        f"workload={workload.name} semantics={a.semantics} predictor={a.predictor} "
        f"policies={a.policies}",
        file=sys.stderr,
    )
    results = []
    try:
        run_policies(base, specs, seeds, params_kw=params_kw, progress=not a.quiet, into=results)
    except KeyboardInterrupt:
        if not results:
            raise
        written, _ = save(lambda p: write_csv(p, result_rows(results, seeds)), out, "--out")
        save_resolved(a, conf)
        raise Interrupted(
            f"{len(results)} of {len(specs)} policies had finished; their rows are in {written}"
        ) from None
    print(summary_table(results))
    written, ok = save(lambda p: write_csv(p, result_rows(results, seeds)), out, "--out")
    conf, conf_ok = save_resolved(a, conf)
    ok = ok and conf_ok
    print(f"\nresults: {written}\noptions: {conf}")
    if png is not None:
        try:
            print(f"load trajectories: {_plot_run(base, specs, seeds[0], plot_steps, png, params_kw, not a.quiet)}")
        except OSError as e:
            print(f"jaxsched: warning: could not write --plot {str(png)!r} ({e.strerror or e})", file=sys.stderr)
            ok = False
    return 0 if ok else 1


def cmd_reproduce(a: argparse.Namespace) -> int:
    what = require_what(a.what, "reproduce: the experiment", REPRODUCTIONS.names())
    check_options(a, REPRODUCE_READS, {"reproduce": what})
    seeds = require_int(a.seeds, "--seeds", lo=1, hi=4096)
    out = check_dir(a.out, "--out")
    png = None if what == "table1" else check_file(a.plot or out / f"{what}.png", "--plot", image=True)
    if what == "table1" and not a.trace:
        raise ConfigError("reproduce table1 needs --trace PATH (the BurstGPT sample, burstgpt_8000.csv)")
    csv, conf_path = out / f"{what}.csv", out / f"{what}.config.toml"
    check_output_paths({"--out's CSV": csv, "--plot": png, "--out's options file": conf_path})
    # A plot left at its default lies in --out and is numbered with the CSV.
    plot_group = ("out", [csv, conf_path, png]) if a.plot is None else ("out", [csv, conf_path])
    sfx = fresh_names(a, {"--out": plot_group, "--plot": ("plot", [png] if a.plot is not None else [])})
    csv, conf_path = numbered(csv, sfx["--out"]), numbered(conf_path, sfx["--out"])
    png = numbered(png, sfx["--out"] if a.plot is None else sfx["--plot"])
    check_output_paths({"--out's CSV": csv, "--plot": png, "--out's options file": conf_path})
    if what == "fig4":
        rows, text, png = _reproduce_fig4(seeds, png, a.quiet)
    elif what == "noise":
        rows, text, png = _reproduce_noise(seeds, png, a.quiet)
    else:
        rows, text = _reproduce_table1(a.trace, a.quiet)
    print(text)
    from ..results import write_csv

    written, ok = save(lambda p: write_csv(p, rows), csv, "--out")
    conf, conf_ok = save_resolved(a, conf_path)
    ok = ok and conf_ok
    print(f"\nresults: {written}" + (f"\nplot: {png}" if png else "") + f"\noptions: {conf}")
    return 0 if ok else 1


def _reproduce_table1(trace: str, quiet: bool):
    from ..dp.config import DPConfig
    from ..dp.experiments import TABLE1_POLICIES, result_rows, run_policies, table1_rows, table1_workload

    workload = table1_workload(trace)
    base = DPConfig(num_workers=16, slots_per_worker=72, pool_size=64, num_steps=50_000, workload=workload)
    print(
        "jaxsched reproduce table1: G=16 B=72 R=64, N=100000 requests (numpy default_rng(42).choice(8000)), one run",
        file=sys.stderr,
    )
    results = run_policies(base, TABLE1_POLICIES, [0], progress=not quiet, block_steps=4096)
    return result_rows(results, [0], extra={"trace": str(trace)}), table1_rows(results)


def _fig4_setting(predictions: str) -> str:
    """The configuration of `reproduce fig4` and `noise` for a figure's title, read from the
    sweep's own config: lengths, G, B, R, the predictions and the window's decay."""
    from ..dp.experiments import FIG4_STEPS, fig4_config

    cfg = fig4_config(0, FIG4_STEPS, 1.0)
    lengths = "bivariate-normal lengths" if cfg.workload.base.name.startswith("bivariate") else cfg.workload.base.name
    return (
        f"{lengths}, G = {cfg.num_workers}, B = {cfg.slots_per_worker}, R = {cfg.pool_size}, {predictions}, "
        f"window decay {cfg.lookahead_decay:g}"
    )


def _fig4_runs(n_seeds: int) -> str:
    """The size of a Fig. 4 sweep for a title: "S seeds, N = 8,000 requests and 8,000 steps per seed"."""
    from ..dp.experiments import FIG4_STEPS, fig4_config

    cfg = fig4_config(0, FIG4_STEPS, 1.0)
    return (
        f"{n_seeds} seed{'s' if n_seeds != 1 else ''}, N = {cfg.workload.num_requests:,} requests and "
        f"{cfg.num_steps:,} steps per seed"
    )


def _reproduce_fig4(n_seeds: int, png: Path, quiet: bool):
    from ..dp.experiments import fig4_sweep
    from ..dp.plots import lookahead_curve
    from ..results import markdown_table, mean_ci_column

    seeds = list(range(n_seeds))
    print(
        f"jaxsched reproduce fig4: BF-IO(H) on the synthetic workload, {n_seeds} seeds, "
        "N = 8000 requests each, G=16 B=72 R=64, C/8",
        file=sys.stderr,
    )
    res = fig4_sweep(seeds=seeds, progress=not quiet)
    rows = [
        dict(lookahead_steps=H, seed=s, avg_imbalance_tokens=float(v[i]))
        for H, v in res.items()
        for i, s in enumerate(seeds)
    ]
    cells = mean_ci_column(list(res.values()))
    text = f"mean ± 95% CI over {n_seeds} seeds\n\n" + markdown_table(
        ["H", "avg imbalance (tokens)"], [[str(H), c] for H, c in zip(res, cells)]
    )
    title = (
        f"BF-IO(H) imbalance against the lookahead (paper Fig. 4): {_fig4_setting('oracle predictions (no noise)')}; "
        f"{_fig4_runs(n_seeds)}; mean ± 95% CI"
    )
    # Thousands of tokens on the plot (the CSV keeps tokens): six-digit tick labels read badly.
    png = lookahead_curve(
        {"BF-IO(H), oracle": {H: v / 1e3 for H, v in res.items()}},
        png,
        ylabel="average imbalance G max - sum (k tokens)",
        title=title,
    )
    return rows, text, png


def _reproduce_noise(n_seeds: int, png: Path, quiet: bool):
    from ..dp.experiments import noise_sweep
    from ..dp.plots import error_curves
    from ..results import markdown_table, mean_ci_column

    seeds = list(range(n_seeds))
    res = noise_sweep(seeds=seeds, progress=not quiet)
    rows = [
        dict(series=k, level=lvl, seed=s, avg_imbalance_tokens=float(v[i]))
        for k, by in res.items()
        for lvl, v in by.items()
        for i, s in enumerate(seeds)
    ]
    keys = [(k, lvl) for k, by in res.items() for lvl in by]
    cells = mean_ci_column([res[k][lvl] for k, lvl in keys])
    text = f"mean ± 95% CI over {n_seeds} seeds\n\n" + markdown_table(
        ["series", "error level", "avg imbalance (tokens)"], [[k, str(lvl), c] for (k, lvl), c in zip(keys, cells)]
    )
    title = (
        "BF-IO(H) under prediction errors (paper Fig. 4's setting): "
        f"{_fig4_setting('noisy predictor o * U[1-d, 1+d] or classifier (fp = fn)')}; {_fig4_runs(n_seeds)}; "
        "mean over the seeds"
    )
    thousands = {k: {lvl: v / 1e3 for lvl, v in by.items()} for k, by in res.items()}
    return rows, text, error_curves(thousands, png, ylabel="average imbalance G max - sum (k tokens)", title=title)


def cmd_dp_check(a: argparse.Namespace) -> int:
    """`jaxsched dp check theorems` (paper 004's stability check is `jaxsched budget
    check-stability`)."""
    if a.what == "stability":
        raise ConfigError(
            "dp check: the check must be theorems; paper 004's stability check is `jaxsched budget check-stability`"
        )
    require_what(a.what, "dp check: the check", ("theorems",))
    return cmd_check(a)


def cmd_check(a: argparse.Namespace) -> int:
    what = require_what(a.what, "check: the check", CHECKS)
    check_options(a, CHECK_READS, {"check": what})
    if what == "stability":  # paper 004's check, run by the budget engine's experiment
        from ..budget.registry import EXPERIMENTS as BUDGET_EXPERIMENTS
        from .base import run_experiment

        a.out = a.out or "results/budget"
        return run_experiment(a, "check", BUDGET_EXPERIMENTS)
    a.out = a.out or "results/theorems"
    a.seeds = 4 if a.seeds is None else a.seeds
    for flag, name in (("--kernel", a.kernel), ("--t1-kernel", a.t1_kernel)):
        if name not in BFIO_KERNELS:
            raise ConfigError(f"{flag} must be one of {', '.join(BFIO_KERNELS)}, got {name!r}")
    seeds = require_int(a.seeds, "--seeds", lo=2, hi=4096)
    from ..buckets import check_max_waste

    try:
        waste = None if a.no_buckets else check_max_waste(a.bucket_waste)
    except ConfigError:
        raise ConfigError(
            f"--bucket-waste must be a number in [1, 1e6] (the most work a padded "
            f"run may do relative to its own), got {a.bucket_waste!r}"
        ) from None
    measured = None if a.measured is None else require_int(a.measured, "--measured", lo=1, hi=100_000)
    out = check_dir(a.out, "--out")
    check_folder_outputs(out, {"options file": config_path(out, folder=True).name})
    print(
        f"jaxsched check theorems: {'quick' if a.quick else 'full'} grid, {seeds} seeds, "
        f"BF-IO kernels {a.kernel} (Theorems 2, 3) and {a.t1_kernel} (Theorem 1), results in {out}",
        file=sys.stderr,
    )
    from ..dp.theorems import check_theorems

    try:
        ok, checks, report = check_theorems(
            out,
            quick=a.quick,
            kernel=a.kernel,
            t1_kernel=a.t1_kernel,
            seeds=seeds,
            measured=measured,
            progress=not a.quiet,
            bucket_waste=waste,
        )
    except KeyboardInterrupt:
        # Each finished run is a row of the folder's results file already.
        save_resolved(a, config_path(out, folder=True))
        raise Interrupted(f"the finished runs are in {out}; the same command resumes from there") from None
    conf, conf_ok = save_resolved(a, config_path(out, folder=True))
    for c in checks:
        print(f"{c.status:4s}  {c.name}: {c.detail}")
    print(f"\nreport: {report}\noptions: {conf}")
    return 0 if ok and conf_ok else 1


def add_shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--num-workers", "--G", type=int, default=16, help="workers G")
    p.add_argument("--slots-per-worker", "--B", type=int, default=72, help="slots per worker B")
    p.add_argument("--pool-size", "--R", type=int, default=64, help="waiting-pool size R")


def add_parsers(sub) -> None:
    """The dp engine's commands, `jaxsched dp run | reproduce | check`, and the same commands at
    the top level (`jaxsched run | reproduce | check`, where `check` also runs `stability`)."""
    k = sub.add_parser(
        "dp",
        help="the BF-IO paper's data-parallel decode engine: runs, the paper's tables and figures, the theorem checks",
        description="G data-parallel decode workers with B sticky slots behind a "
        "barrier (paper 000): `dp run`, `dp reproduce`, `dp check "
        "theorems`. The same commands also answer at the top level.",
    )
    ksub = k.add_subparsers(dest="dp_command", required=True, metavar="SUBCOMMAND")
    _add_commands(ksub, group=True)
    _add_commands(sub, group=False)


def _add_commands(sub, group: bool) -> None:
    """run, reproduce, check on `sub` (the dp group's, or the top level's)."""
    alias = "" if group else " (= `jaxsched dp run`)"
    r = command(
        sub, "run", help="compare policies on one configuration over several seeds (dp engine, BF-IO paper)" + alias
    )
    add_shape_args(r)
    r.add_argument(
        "--policies",
        default="fcfs,jsq_tokens,bfio:0,bfio:20",
        help=f"comma-separated, from {', '.join(DP_POLICIES)}; bfio:H gives BF-IO a "
        "lookahead of H decode steps (DPConfig.lookahead_steps)",
    )
    r.add_argument("--seeds", type=int, default=8, help="number of seeds")
    r.add_argument("--seed-start", type=int, default=0, help="first seed")
    r.add_argument("--num-steps", "--steps", type=int, default=3000, help="decode steps per run")
    r.add_argument(
        "--trace",
        metavar="FILE",
        help="trace whose lengths each seed resamples (a path, or a name of `jaxsched data list`; any "
        "layout of docs/traces.md); replaces --workload",
    )
    r.add_argument(
        "--trace-columns",
        metavar="PROMPT,OUTPUT",
        default=None,
        help="--trace: the header names of its prompt and output columns (default: a known layout, "
        "or two columns with known names)",
    )
    add_trace_format(r)
    r.add_argument(
        "--workload", choices=DP_WORKLOADS, default=None, help="synthetic request lengths (default burstgpt_like)"
    )
    r.add_argument("--semantics", choices=DP_SEMANTICS, default="paper", help="step semantics")
    r.add_argument("--predictor", choices=DP_PREDICTORS, default="oracle", help="BF-IO's output-length predictions")
    r.add_argument("--noise", type=float, default=0.0, help="--predictor noisy: o * U[1-d, 1+d]")
    r.add_argument("--fp-rate", type=float, default=0.0, help="--predictor classifier: false-positive rate")
    r.add_argument("--fn-rate", type=float, default=0.0, help="--predictor classifier: false-negative rate")
    r.add_argument("--out", default="results/run.csv", help="CSV file, one row per policy and seed")
    r.add_argument(
        "--plot", default="results/loads.png", help="load-trajectory image (.png, .pdf, .svg, ...; 'none' to skip)"
    )
    r.add_argument("--plot-steps", type=int, default=2000, help="steps shown in the plot")
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_run)

    q = command(
        sub,
        "reproduce",
        help="reproduce a table or figure of the BF-IO paper" + ("" if group else " (= `jaxsched dp reproduce`)"),
    )
    q.add_argument(
        "what",
        nargs="?",
        help=f"one of {', '.join(REPRODUCTIONS)}: " + "; ".join(f"{e.name}: {e.doc}" for e in REPRODUCTIONS.values()),
    )
    q.add_argument("--trace", help="table1: path to burstgpt_8000.csv")
    q.add_argument("--seeds", type=int, default=8, help="seeds (fig4, noise)")
    q.add_argument(
        "--out", default="results", help="folder for <what>.csv, <what>.config.toml and (fig4, noise) the plot"
    )
    q.add_argument("--plot", help="image file (fig4, noise; default <out>/<what>.png)")
    q.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(q)
    q.set_defaults(func=cmd_reproduce)

    c = command(
        sub,
        "check",
        help="check the BF-IO theorems (paper 000)"
        if group
        else "check a paper's claims: the BF-IO theorems (= `jaxsched dp check theorems`) or "
        "the stability of token-budget schedulers (= `jaxsched budget check-stability`)",
    )
    c.add_argument(
        "what",
        nargs="?",
        help="theorems (BF-IO Theorems 1-3: FCFS prediction, BF-IO "
        "bounds, ratio growth)"
        + (
            ""
            if group
            else " or stability (paper 004's Fig. 1 and Theorem 1: growth against the load; "
            "also `jaxsched budget check-stability`)"
        ),
    )
    c.add_argument(
        "--quick",
        action="store_true",
        help="the reduced grid (theorems: 8 runs, "
        "about 30 CPU seconds; stability: 3 loads, 200 s runs, about a minute)",
    )
    c.add_argument(
        "--out",
        default=None,
        help="folder for the report, results (resumed if present) and the plots "
        "(default results/theorems or results/budget)",
    )
    c.add_argument(
        "--kernel",
        default="window",
        choices=BFIO_KERNELS,
        metavar="KERNEL",
        help=f"BF-IO kernel of Theorems 2 and 3, one of {', '.join(BFIO_KERNELS)} "
        "(window: the proofs' max-min minimizing BF-IO; vf: valley fill, the IO "
        "objective)",
    )
    c.add_argument(
        "--t1-kernel",
        default="round_lpt",
        choices=BFIO_KERNELS,
        metavar="KERNEL",
        help="BF-IO kernel of Theorem 1's rounds (round_lpt: max - min <= s_max - 1)",
    )
    c.add_argument(
        "--seeds", type=int, default=None, help="seeds per point (default: theorems 4, stability 8, quick 4)"
    )
    c.add_argument(
        "--measured",
        type=int,
        default=None,
        help="measured rounds (Theorem 1) or slot lifetimes 1/p (default 48; quick 20)",
    )
    c.add_argument(
        "--bucket-waste",
        type=float,
        default=2.0,
        help="theorems: small runs of different sizes share one compiled program when "
        "padding makes none do more than this many times its own work (>= 1)",
    )
    c.add_argument(
        "--no-buckets", action="store_true", help="theorems: compile each run on its own (same rows, slower)"
    )
    c.add_argument("--quiet", action="store_true", help="no progress output")
    if not group:  # the stability check writes anew; check theorems resumes its folder
        add_overwrite(c)
    c.set_defaults(func=cmd_dp_check if group else cmd_check)
