"""Command line: `jaxsched run`, `jaxsched sweep`, `jaxsched reproduce ...` and `jaxsched check theorems`.

`jaxsched run` with no arguments runs the BF-IO paper's Table 1 configuration (G = 16, B = 72,
R = 64) on the BurstGPT-like workload over 8 seeds, prints a policy-by-metric table (mean and
95% CI), and writes a CSV (one row per policy and seed) and a load-trajectory plot.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from .dp.config import DPConfig
from .errors import ConfigError, require_int
from .dp.experiments import (TABLE1_POLICIES, parse_policies, result_rows, run_policies, summary_table,
                          table1_rows, table1_workload)
from .results import write_csv
from .workload import BivariateNormal, BurstGPTLike, read_trace

WORKLOADS = {"burstgpt_like": BurstGPTLike, "bivariate_normal": BivariateNormal}


def _add_shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--G", type=int, default=16, help="workers (default 16)")
    p.add_argument("--B", type=int, default=72, help="slots per worker (default 72)")
    p.add_argument("--R", type=int, default=64, help="waiting-pool size (default 64)")


def _plot_run(base: DPConfig, specs, seed: int, steps: int, path: Path, params_kw: dict) -> Path:
    """One recorded run per policy (seed `seed`, first `steps` steps) drawn as Fig. 6."""
    from .dp.config import make_params
    from .dp import simulate
    from .plots import load_trajectories
    loads = {}
    for spec in specs:
        cfg = dataclasses.replace(base, policy=spec.name, horizon=spec.horizon,
                                  num_steps=min(steps, base.num_steps), record_loads=True)
        res = simulate(cfg, make_params(cfg, **params_kw), [seed])
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


def cmd_sweep(a: argparse.Namespace) -> int:
    from .sweep import parse_axis, run_sweep
    axes = dict(parse_axis(t) for t in a.axis)
    workload = read_trace(a.trace, order="resample") if a.trace else WORKLOADS[a.workload]()
    base = DPConfig(num_steps=a.steps, workload=workload, semantics=a.semantics)
    seeds = range(a.seed_start, a.seed_start + require_int(a.seeds, "--seeds", lo=1))
    out = run_sweep(base, axes, seeds, a.out, memory_budget_mb=a.memory_mb, progress=not a.quiet)
    print(f"results: {out}")
    return 0


def _reproduce_fig4(a: argparse.Namespace) -> int:
    from .dp.experiments import fig4_sweep
    from .plots import horizon_curve
    seeds = list(range(a.seeds))
    print(f"jaxsched reproduce fig4: BF-IO(H) on the synthetic workload, {a.seeds} seeds, "
          "N = 8000 requests each, G=16 B=72 R=64, C/8", file=sys.stderr)
    res = fig4_sweep(seeds=seeds, progress=not a.quiet)
    rows = [dict(horizon=H, seed=s, avg_imbalance_tokens=float(v[i])) for H, v in res.items()
            for i, s in enumerate(seeds)]
    from .results import markdown_table, format_value
    from .stats import mean_ci
    print(markdown_table(["H", "avg imbalance (tokens)", "95% CI"],
                         [[str(H), format_value(mean_ci(v)[0]), format_value(mean_ci(v)[2])]
                          for H, v in res.items()]))
    out = write_csv(a.out or "results/fig4.csv", rows)
    png = horizon_curve({"BF-IO(H), oracle": res}, a.plot or "results/fig4.png",
                        title="Imbalance against lookahead (synthetic, G=16, B=72; paper Fig. 4)")
    print(f"\nresults: {out}\nplot: {png}")
    return 0


def _reproduce_noise(a: argparse.Namespace) -> int:
    from .dp.experiments import noise_sweep
    from .plots import horizon_curve
    seeds = list(range(a.seeds))
    res = noise_sweep(seeds=seeds, progress=not a.quiet)
    rows = [dict(series=k, level=lvl, seed=s, avg_imbalance_tokens=float(v[i]))
            for k, by in res.items() for lvl, v in by.items() for i, s in enumerate(seeds)]
    from .results import markdown_table, format_value
    from .stats import mean_ci
    print(markdown_table(["series", "error level", "avg imbalance (tokens)"],
                         [[k, str(lvl), format_value(mean_ci(v)[0])] for k, by in res.items()
                          for lvl, v in by.items()]))
    out = write_csv(a.out or "results/noise.csv", rows)
    from .plots import error_curves
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
    from .dp.theorems import check_theorems
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


# --------------------------------------------------------------------------- kv (WAIT paper)

def _kv_ints(text: str, flag: str) -> tuple[int, ...]:
    """'10,20' -> (10, 20); ConfigError naming the flag otherwise."""
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got {text!r}") from None


def _kv_floats(text: str, flag: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def cmd_kv_run(a: argparse.Namespace) -> int:
    """One kv configuration over several seeds: prints each metric's mean and 95% CI."""
    from .kv import KVConfig, make_params, simulate
    from .results import format_value, markdown_table
    from .stats import mean_ci
    cfg = KVConfig(prefill_tokens=_kv_ints(a.prefill, "--prefill"),
                   decode_tokens=_kv_ints(a.decode, "--decode"), policy=a.policy,
                   num_requests=require_int(a.num_requests, "--num-requests", lo=1),
                   table_size=require_int(a.table_size, "--table-size", lo=1))
    th = None if a.thresholds is None else _kv_ints(a.thresholds, "--thresholds")
    params = make_params(cfg, rates=_kv_floats(a.rates, "--rates"), d0_s=a.d0,
                         d1_s_per_token=a.d1, capacity_tokens=a.capacity, thresholds=th)
    seeds = range(require_int(a.seeds, "--seeds", lo=1, hi=4096))
    res = simulate(cfg, params, seeds)
    print(f"jaxsched kv run: policy={a.policy} thresholds={list(map(int, params.thresholds))} "
          f"N={a.num_requests} seeds={a.seeds} ({res.wall_s:.1f} s)", file=sys.stderr)
    rows = []
    for k, v in res.metrics.items():
        m, _, half, _ = mean_ci(v)
        rows.append([k, format_value(m), format_value(half)])
    print(markdown_table(["metric", "mean", "95% CI"], rows))
    return 0


def cmd_kv_experiment(a: argparse.Namespace) -> int:
    """E1-E4 (notes/001.md §4) or Theorem 1's scaling: markdown table, CSV and PNG in --out."""
    from .kv import experiments as kx
    from .plots import plot_kv_rates, plot_kv_scaling
    what = a.what.lower()
    if what not in (*kx.EXPERIMENTS, "scaling"):
        raise ConfigError(f"kv experiment: unknown experiment {a.what!r}; available: "
                          f"{', '.join((*kx.EXPERIMENTS, 'scaling'))}")
    seeds = None if a.seeds is None else require_int(a.seeds, "--seeds", lo=2 if what == "scaling"
                                                     else 1, hi=4096)
    pols = None if a.policies is None else [p for p in a.policies.split(",") if p]
    out = Path(a.out)
    log = None if a.quiet else (lambda s: print(s, file=sys.stderr))
    import time
    t0 = time.perf_counter()
    if what == "scaling":
        if pols is not None:
            raise ConfigError("--policies does not apply to 'scaling' (WAIT only)")
        rows, fits = kx.run_scaling(quick=a.quick, seeds=seeds, progress=log)
        print(kx.scaling_tables(rows, fits))
        csv = write_csv(out / "scaling.csv", rows)
        write_csv(out / "scaling_fits.csv", fits)
        png = plot_kv_scaling(rows, fits, out / "scaling.png")
    else:
        exp = kx.EXPERIMENTS[what]
        rows = kx.run_experiment(what, quick=a.quick, seeds=seeds, policies=pols, progress=log)
        print(f"{what.upper()}: {exp.title} (paper {exp.figure}); paper's claim: {exp.claim}\n")
        print(kx.experiment_table(rows))
        csv = write_csv(out / f"{what}.csv", rows)
        png = plot_kv_rates(rows, out / f"{what}.png",
                            title=f"{what.upper()}: {exp.title} (paper {exp.figure})")
    print(f"\nresults: {csv}\nplot: {png}\nwall time: {time.perf_counter() - t0:.1f} s")
    return 0


def _add_kv_parser(sub) -> None:
    """The `jaxsched kv` command group (the WAIT paper's kv engine)."""
    from .kv.experiments import HARDWARE
    k = sub.add_parser("kv", help="the WAIT paper's KV-memory engine: one run or experiments E1-E4")
    ksub = k.add_subparsers(dest="kv_command", required=True)
    r = ksub.add_parser("run", help="one configuration over several seeds, prints its metrics")
    r.add_argument("--policy", default="wait", help="a name in jaxsched.kv.POLICIES (default wait)")
    r.add_argument("--prefill", default="10,10", help="prefill tokens per type (default 10,10)")
    r.add_argument("--decode", default="10,20", help="decode tokens per type (default 10,20)")
    r.add_argument("--rates", default="1000,1000", help="arrival rates per type, requests/s")
    r.add_argument("--thresholds", default=None,
                   help="integer thresholds (wait: per type; nested_wait: per segment); "
                        "default: the fluid thresholds")
    r.add_argument("--d0", type=float, default=HARDWARE.d0_s, help="d0, s (default 0.01)")
    r.add_argument("--d1", type=float, default=HARDWARE.d1_s_per_token,
                   help="d1, s per token (default 1e-6)")
    r.add_argument("--capacity", type=int, default=HARDWARE.capacity_tokens,
                   help="KV capacity C, tokens (default 110000)")
    r.add_argument("--num-requests", type=int, default=5000, help="N per seed (default 5000)")
    r.add_argument("--table-size", type=int, default=4096, help="request table slots Q")
    r.add_argument("--seeds", type=int, default=4, help="number of seeds (default 4)")
    r.set_defaults(func=cmd_kv_run)
    e = ksub.add_parser("experiment", help="E1-E4 of the WAIT paper, or Theorem 1's scaling")
    e.add_argument("what", help="e1, e2, e3, e4 or scaling")
    e.add_argument("--quick", action="store_true", help="reduced grid, requests and seeds")
    e.add_argument("--seeds", type=int, default=None, help="seeds per point (default per experiment)")
    e.add_argument("--policies", default=None,
                   help="comma-separated subset of jaxsched.kv.POLICIES (default: all registered)")
    e.add_argument("--out", default="results/kv", help="folder for the CSV and PNG files")
    e.add_argument("--quiet", action="store_true", help="no progress output")
    e.set_defaults(func=cmd_kv_experiment)


def cmd_tune(a: argparse.Namespace) -> int:
    """`jaxsched tune e3|e4`: relaxation-tuned thresholds against the fluid ones, held-out seeds."""
    from .kv.relaxed import tune_experiment
    seeds = range(a.seed_start, a.seed_start + require_int(a.seeds, "--seeds", lo=2))
    out = Path(a.out or f"results/tune_{a.experiment}")
    log = None if a.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    run = tune_experiment(a.experiment, steps=require_int(a.steps, "--steps", lo=1), lam=a.lam,
                          seeds=seeds, out_dir=out, log=log)
    print(run["markdown"])
    print(f"files in {out}")
    if not run["valid"]:
        print("tune: INVALID comparison, an arm is unstable: " + "; ".join(
            f"{k}: {', '.join(v)}" for k, v in run["issues"].items() if v), file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxsched", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="compare policies on one configuration over several seeds")
    _add_shape_args(r)
    r.add_argument("--policies", default="fcfs,jsq_tokens,bfio:0,bfio:20",
                   help="comma-separated: fcfs, fcfs_alg2, jsq_tokens, jsq_count, round_robin, bfio:H")
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

    w = sub.add_parser("sweep", help="a grid of configurations x seeds, one resumable row per point")
    w.add_argument("--axis", action="append", default=[], required=True,
                   help="name=v1,v2,... (a DPConfig field or a params keyword); repeat for more axes")
    w.add_argument("--seeds", type=int, default=64, help="seeds per point (default 64)")
    w.add_argument("--seed-start", type=int, default=0)
    w.add_argument("--steps", type=int, default=2000, help="decode steps per run (default 2000)")
    w.add_argument("--trace", help="CSV trace to resample per seed")
    w.add_argument("--workload", choices=sorted(WORKLOADS), default="burstgpt_like")
    w.add_argument("--semantics", choices=["paper", "theory"], default="paper")
    w.add_argument("--memory-mb", type=float, default=1024.0, help="memory budget per seed chunk")
    w.add_argument("--out", default="results/sweep.csv", help="results file (resumed if it exists)")
    w.add_argument("--quiet", action="store_true")
    w.set_defaults(func=cmd_sweep)

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

    t = sub.add_parser("tune", help="tune Nested WAIT thresholds on a differentiable relaxation "
                                    "and compare them with the fluid ones in the exact engine")
    t.add_argument("experiment", choices=["e3", "e4"], help="operating point (jaxsched.kv.relaxed)")
    t.add_argument("--steps", type=int, default=200, help="optimizer steps (default 200)")
    t.add_argument("--lam", type=float, default=None,
                   help="latency price, tokens/s per s (default 0.1 throughput* / fluid latency)")
    t.add_argument("--seeds", type=int, default=32, help="held-out seeds (default 32)")
    t.add_argument("--seed-start", type=int, default=1000, help="first held-out seed (default 1000)")
    t.add_argument("--out", default=None, help="output folder (default results/tune_<experiment>)")
    t.add_argument("--quiet", action="store_true", help="no progress output")
    t.set_defaults(func=cmd_tune)
    _add_kv_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"jaxsched: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
