"""`jaxsched interval run | experiment`: n jobs at t = 0 with predicted output intervals
(paper 003).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import Reads, merge_reads, reads_from, require_float, require_int
from ..interval.registry import AMAX_ORDERS, EVICTION_KEYS, INTERVAL_KINDS, STEP_MODELS
from ..interval.registry import EXPERIMENTS as INTERVAL_EXPERIMENTS
from ..interval.registry import POLICIES as INTERVAL_POLICIES
from ..interval.registry import WORKLOADS as INTERVAL_WORKLOADS
from ..outputs import check_file
from .base import (
    add_overwrite,
    check_options,
    command,
    experiment_options,
    file_outputs,
    print_metrics,
    run_experiment,
    save_seed_rows,
)

# `interval run`: the flags of each interval predictor (--intervals).
INTERVAL_READS = {
    "low": (Reads("intervals", ("shared",)),),
    "high": (Reads("intervals", ("shared",)),),
    "bucket_width": (Reads("intervals", ("buckets",)),),
    "buckets": (Reads("intervals", ("buckets",)),),
    "x": (Reads("intervals", ("relative",)),),
}


def _intervals(a: argparse.Namespace):
    from ..interval import Buckets, Exact, Relative, Shared

    if a.intervals == "shared":
        return Shared(a.low, a.high)
    if a.intervals == "buckets":
        return Buckets.uniform(a.bucket_width, a.buckets)
    if a.intervals == "relative":
        return Relative(a.x)
    return Exact()


def cmd_interval_run(a: argparse.Namespace) -> int:
    """One configuration over several seeds: each metric's mean and 95% CI; --out writes one
    CSV row per seed."""
    reads = merge_reads(reads_from(INTERVAL_POLICIES, "policy"), INTERVAL_READS)
    check_options(a, reads, {"policy": a.policy, "intervals": a.intervals})
    start = require_float(a.start_fraction, "--start-fraction", lo=0.0, hi=1.0)
    from ..interval import IntervalConfig, make_params, simulate

    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    out = None if a.out is None else check_file(a.out, "--out")
    out, _, conf = file_outputs(a, out)
    spec = _intervals(a)
    cfg = IntervalConfig(
        a.workload,
        policy=a.policy,
        intervals=spec,
        num_requests=a.num_requests,
        eviction_key=a.eviction_key,
        amax_order=a.amax_order,
    )
    params = make_params(cfg, capacity_tokens=a.capacity_tokens, start_fraction=start, **STEP_MODELS[a.step_model].fn)
    print(
        f"jaxsched interval run: policy={a.policy} workload={a.workload} n={cfg.n} "
        f"intervals={spec.name} M={a.capacity_tokens} step model={a.step_model} seeds={n_seeds}"
        + (f" start_fraction={start:g}" if "start_fraction" in INTERVAL_POLICIES[a.policy].options else ""),
        file=sys.stderr,
    )
    res = simulate(cfg, params, range(n_seeds), progress=not a.quiet)
    print_metrics(res, n_seeds)
    if out is None:
        return 0
    columns = {
        "policy": a.policy,
        "workload": a.workload,
        "n": cfg.n,
        "intervals": spec.name,
        "capacity_tokens": a.capacity_tokens,
        "step_model": a.step_model,
        "eviction_key": a.eviction_key,
        "amax_order": a.amax_order,
        "start_fraction": start,
    }
    return save_seed_rows(a, res, columns, out, conf)


def cmd_interval_experiment(a: argparse.Namespace) -> int:
    """A check or experiment of paper 003 (`jaxsched.interval.experiments`)."""
    return run_experiment(a, "interval", INTERVAL_EXPERIMENTS)


def add_parsers(sub) -> None:
    """The `jaxsched interval` group."""
    k = sub.add_parser(
        "interval",
        help="paper 003's interval engine: n jobs at t = 0 with "
        "predicted output intervals; one run or the paper's checks",
        description="n jobs present at t = 0 on one worker with a KV limit M, "
        "whose output lengths are known only as intervals [l, u] "
        "(paper 003): `interval run` (one configuration) or "
        "`interval experiment` (the paper's examples, formulas and "
        "experiments).",
    )
    ksub = k.add_subparsers(dest="interval_command", required=True, metavar="SUBCOMMAND")
    r = command(ksub, "run", help="one configuration over several seeds, prints its metrics")
    r.add_argument(
        "--policy",
        default="amin",
        choices=INTERVAL_POLICIES,
        help="hsf (hindsight), amax, amin, al (promote-l), arandom",
    )
    r.add_argument(
        "--workload", default="lmsys", choices=INTERVAL_WORKLOADS, help="job mix: the section 6 LMSYS-like lengths"
    )
    r.add_argument("--num-requests", "--n", type=int, default=1000, help="jobs per instance")
    r.add_argument("--capacity-tokens", "--capacity", type=int, default=16492, help="KV limit M, tokens")
    r.add_argument(
        "--intervals",
        default="shared",
        choices=INTERVAL_KINDS,
        help="predictor: one shared interval [--low, --high] (Experiment 1), "
        "buckets of --bucket-width (Experiment 2), relative +-x (Experiment 3), "
        "or exact",
    )
    r.add_argument("--low", type=int, default=1, help="shared: l")
    r.add_argument("--high", type=int, default=1000, help="shared: u")
    r.add_argument("--bucket-width", type=int, default=100, help="buckets: width, tokens")
    r.add_argument("--buckets", type=int, default=10, help="buckets: number of classes")
    r.add_argument("--x", type=float, default=0.5, help="relative: x in [0, 1]")
    r.add_argument(
        "--eviction-key",
        default="stale",
        choices=EVICTION_KEYS,
        help="amin: evict by the stale estimate (literal) or max(estimate, generated)",
    )
    r.add_argument(
        "--amax-order",
        default="sorted",
        choices=AMAX_ORDERS,
        help="amax with per-job intervals: ascending u, or Algorithm 1's random order",
    )
    r.add_argument(
        "--start-fraction",
        type=float,
        default=0.0,
        help="amin, al: start each job's estimate this fraction of the way from l to u, in [0, 1] "
        "(0: the paper's algorithms, which start at l; 1: at u, A_max's estimate; docs/interval-semantics.md)",
    )
    r.add_argument(
        "--step-model",
        default="unit",
        choices=STEP_MODELS,
        help="step time: unit steps, or the linear model (assumed coefficients)",
    )
    r.add_argument("--seeds", type=int, default=8, help="number of seeds (instances)")
    r.add_argument(
        "--out", default=None, help="CSV file, one row per seed (default: none; the resolved options go beside it)"
    )
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_interval_run)
    e = command(ksub, "experiment", help="a check or experiment of paper 003")
    e.add_argument("what", nargs="?", help=f"one of {', '.join(INTERVAL_EXPERIMENTS)}")
    experiment_options(e, "results/interval", seeds="instances or seeds (default per experiment)")
    e.set_defaults(func=cmd_interval_experiment)
