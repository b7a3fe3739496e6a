"""`jaxsched offline run | experiment`: n requests at t = 0 under a KV limit (paper 002).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError, Reads, merge_reads, reads_from, require_int
from ..offline.registry import EXPERIMENTS as OFFLINE_EXPERIMENTS
from ..offline.registry import POLICIES as OFFLINE_POLICIES
from ..offline.registry import STEP_MODELS as OFFLINE_STEP_MODELS
from ..offline.registry import WORKLOADS as OFFLINE_WORKLOADS
from ..outputs import check_file
from .base import (
    add_overwrite,
    add_trace_format,
    check_options,
    command,
    experiment_options,
    file_outputs,
    print_metrics,
    read_trace_option,
    run_experiment,
    save_seed_rows,
)


def run_reads() -> dict[str, tuple[Reads, ...]]:
    """What reads each option of `offline run`: the policies' solver options (the registry's),
    --trace (the file of the azure mix) and --trace-format (that file's layout)."""
    return merge_reads(
        reads_from(OFFLINE_POLICIES, "policy"),
        {
            "trace": (Reads("workload", ("azure",)),),
            "trace_format": (Reads("workload", ("azure",)), Reads("--trace", ("FILE",))),
        },
    )


def cmd_offline_run(a: argparse.Namespace) -> int:
    """One configuration over several seeds: each metric's mean and 95% CI; --out writes one
    CSV row per seed."""
    chosen = {"policy": a.policy, "workload": a.workload, "--trace": "FILE" if a.trace else "none"}
    check_options(a, run_reads(), chosen)
    from ..offline import OfflineConfig, make_params, simulate
    from ..offline.workloads import named

    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    out = None if a.out is None else check_file(a.out, "--out")
    out, _, conf = file_outputs(a, out)
    # A trace given is read here, so that its errors name --trace and --trace-format.
    trace = None if a.trace is None else read_trace_option(a.trace, a.trace_format)
    try:
        workload, default_m = named(a.workload, a.num_requests, trace=trace)
    except FileNotFoundError as e:
        raise ConfigError(f"--trace: {e}") from None
    M = default_m if a.capacity_tokens is None else a.capacity_tokens
    cfg = OfflineConfig(
        workload,
        policy=a.policy,
        dp_width=a.dp_width,
        epsilon=a.epsilon,
        scale_b=a.scale_b,
        quantile=a.quantile,
        sample_fraction=a.sample_fraction,
    )
    params = make_params(cfg, capacity_tokens=M, **OFFLINE_STEP_MODELS[a.step_model].fn)
    print(
        f"jaxsched offline run: policy={a.policy} workload={a.workload} n={cfg.n} M={M} "
        f"step model={a.step_model} seeds={n_seeds}",
        file=sys.stderr,
    )
    res = simulate(cfg, params, range(n_seeds), progress=not a.quiet)
    print_metrics(res, n_seeds)
    if out is None:
        return 0
    columns = {"policy": a.policy, "workload": a.workload, "n": cfg.n, "capacity_tokens": M, "step_model": a.step_model}
    return save_seed_rows(a, res, columns, out, conf)


def cmd_offline_experiment(a: argparse.Namespace) -> int:
    """A reproduction of paper 002 (`jaxsched.offline.experiments`): markdown on stdout, CSV,
    markdown and (where there is one) a PNG in --out."""
    return run_experiment(a, "offline", OFFLINE_EXPERIMENTS)


def add_parsers(sub) -> None:
    """The `jaxsched offline` group."""
    k = sub.add_parser(
        "offline",
        help="paper 002's offline engine: n requests at t = 0 under a KV limit; one run or the paper's reproductions",
        description="n requests present at t = 0 on one worker with a KV limit "
        "M (paper 002): `offline run` (one configuration) or "
        "`offline experiment` (the paper's examples, theorems and "
        "experiments).",
    )
    ksub = k.add_subparsers(dest="offline_command", required=True, metavar="SUBCOMMAND")
    r = command(ksub, "run", help="one configuration over several seeds, prints its metrics")
    r.add_argument("--policy", default="sorted_f_swap", choices=OFFLINE_POLICIES, help="admission order")
    r.add_argument(
        "--workload",
        default="uniform",
        choices=OFFLINE_WORKLOADS,
        help="request mix: EC.4.2 synthetic laws, the section 7 LMSYS/arXiv-like "
        "mixes, or azure: the lengths of a trace (--trace), resampled per seed",
    )
    r.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        help="--workload azure: the trace whose prompt and output lengths it resamples (a path, or a "
        "name of `jaxsched data list`; any layout of docs/traces.md; its times are not read: every "
        "request is present at t = 0; default: the Azure 2023 conversation trace, "
        "../shared/data/azure_llm_2023_conv.csv beside the checkout or the working directory)",
    )
    add_trace_format(r)
    r.add_argument(
        "--num-requests",
        "--n",
        type=int,
        default=None,
        help="requests per instance (default: the workload's, e.g. 100 for EC.4.2)",
    )
    r.add_argument(
        "--capacity-tokens",
        "--capacity",
        type=int,
        default=None,
        help="KV limit M, tokens (default: 100 for EC.4.2 laws, 16492 otherwise)",
    )
    r.add_argument(
        "--step-model",
        default="unit",
        choices=OFFLINE_STEP_MODELS,
        help="step time: unit steps, or the linear model (assumed coefficients)",
    )
    r.add_argument("--dp-width", type=int, default=256, help="sorted_f_dp: table width >= M")
    r.add_argument("--epsilon", type=float, default=0.1, help="sorted_f_scaled: epsilon (assumed)")
    r.add_argument("--scale-b", type=int, default=100, help="sorted_f_scaled: B (assumed)")
    r.add_argument("--quantile", type=float, default=0.3, help="sorted_f_quantile: quantile level")
    r.add_argument("--sample-fraction", type=float, default=0.5, help="sorted_f_quantile: sample fraction")
    r.add_argument("--seeds", type=int, default=8, help="number of seeds (instances)")
    r.add_argument(
        "--out", default=None, help="CSV file, one row per seed (default: none; the resolved options go beside it)"
    )
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_offline_run)
    e = command(ksub, "experiment", help="a reproduction of paper 002")
    e.add_argument("what", nargs="?", help=f"one of {', '.join(OFFLINE_EXPERIMENTS)}")
    experiment_options(e, "results/offline", seeds="instances or seeds (default per experiment)")
    e.set_defaults(func=cmd_offline_experiment)
