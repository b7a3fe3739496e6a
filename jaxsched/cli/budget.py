"""`jaxsched budget run | experiment` and `jaxsched check stability`: one LLM engine with a
token budget per batch (paper 004).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import sys

from ..budget.registry import EXPERIMENTS as BUDGET_EXPERIMENTS
from ..budget.registry import LENGTH_LAWS
from ..budget.registry import POLICIES as BUDGET_POLICIES
from ..errors import ConfigError, Reads, merge_reads, reads_from, require_float, require_int
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

# Options that exclude each other, (dest, dest, why): `budget run` and `network run`.
RATE_EXCLUSIVE = (("rate", "load", "--load sets the arrival rate that offers this load"),)
# `budget run --trace`: the trace's rows are the arrivals and their lengths, so the options of
# the Poisson stream and of the length law are refused with it.
TRACE_REPLACES = {
    "lengths": "the trace's rows give the lengths",
    "prompt": "the trace's rows give the lengths",
    "decode": "the trace's rows give the lengths",
    "rate": "the trace's times give the arrivals; scale them with --rate-scale",
    "load": "the trace's times give the arrivals; scale them with --rate-scale",
}
BUDGET_EXCLUSIVE = RATE_EXCLUSIVE + tuple((dest, "trace", why) for dest, why in TRACE_REPLACES.items())
# The options read only when --trace is given.
TRACE_READS = {
    "trace_format": (Reads("--trace", ("FILE",)),),
    "rate_scale": (Reads("--trace", ("FILE",)),),
}
# --rate-scale's range: BudgetConfig's RATE_SCALE_RANGE (jaxsched.budget.config), written here
# so that the command checks it before importing JAX (a test checks the two agree).
RATE_SCALE_RANGE = (1e-6, 1e6)
# BudgetConfig's ADMISSION_CAPS, written here so that --help does not import JAX (a test checks
# the two agree).
ADMISSION_CAPS = ("batch", "running")


def read_budget_trace(path: str, fmt: str | None):
    """The `Trace` that `budget run --trace` replays: read with its arrival times, as the
    layout `fmt` (None: detected). A file whose lengths read but whose times do not (no time
    column, a malformed or out-of-order time) is one ConfigError saying that the replay needs
    them, with the reader's message."""
    try:
        return read_trace_option(path, fmt, order="resample", times=True)
    except ConfigError as timed:
        # Read once more without the times (only on this error path): a file that fails then
        # too gets the reader's own message; otherwise the times were the problem.
        read_trace_option(path, fmt, order="resample")
        reader = str(timed).removeprefix("--trace: ")
        raise ConfigError(f"--trace: budget run replays the rows' arrival times: {reader}") from None


def cmd_budget_run(a: argparse.Namespace) -> int:
    """One configuration over several seeds: each metric's mean and 95% CI; --out writes one
    CSV row per seed. With --trace the trace's rows are the requests: its arrival times
    (divided by --rate-scale) and its lengths, replayed from a starting row of each seed."""
    reads = merge_reads(reads_from(BUDGET_POLICIES, "policy"), TRACE_READS)
    chosen = {"policy": a.policy, "--trace": "FILE" if a.trace else "none"}
    check_options(a, reads, chosen, BUDGET_EXCLUSIVE)
    lo, hi = RATE_SCALE_RANGE
    scale = None if a.rate_scale is None else require_float(a.rate_scale, "--rate-scale", lo=lo, hi=hi)
    from ..budget import BudgetConfig, make_params, rates_for_load, simulate
    from ..budget.config import enough_steps
    from ..workload import Constant, Independent

    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    out = None if a.out is None else check_file(a.out, "--out")
    out, _, conf = file_outputs(a, out)
    timing = dict(budget=a.budget, c_s=a.c_ms / 1000.0, a_s_per_token=a.a_ms / 1000.0, b0=a.b0)
    common = dict(
        policy=a.policy,
        horizon_s=a.horizon_s,
        burn_in_s=a.burn_in_s,
        table_size=a.table_size,
        admission_cap=a.admission_cap,
        grow_table=a.grow_table,
    )
    if a.trace:
        trace = read_budget_trace(a.trace, a.trace_format)
        base = BudgetConfig(workload=(trace,), arrival_mode="trace", **common)
        kw = dict(rate_scale=scale, max_requests=a.max_requests, prefill_cap=a.prefill_cap, **timing)
        cfg = enough_steps(base, None, timing["c_s"], timing["a_s_per_token"], a.b0, rate_scale=scale)
        lengths, rate, what = _trace_summary(cfg, 1.0 if scale is None else scale, timing)
    else:
        law = LENGTH_LAWS[a.lengths].fn
        prompt = require_float(a.prompt, "--prompt", lo=1.0, hi=2.0**20)
        decode = require_float(a.decode, "--decode", lo=1.0, hi=2.0**20)
        if law is Constant:
            for flag, v in (("--prompt", prompt), ("--decode", decode)):
                require_int(int(v) if float(v).is_integer() else v, flag, lo=1)
            prompt, decode = int(prompt), int(decode)
        workload = Independent(law(prompt), law(decode), name=f"{a.lengths}:{a.prompt}/{a.decode}")
        base = BudgetConfig(workload=(workload,), **common)
        if a.rate is None:
            load = require_float(a.load, "--load", lo=0.0, hi=10.0, lo_open=True)
            make_params(base, rates=[1.0], **timing)  # names a bad budget or time first
            rates = rates_for_load(base, load, **timing)
        else:
            rates = [require_float(a.rate, "--rate", lo=0.0, lo_open=True)]
        kw = dict(rates=rates, max_requests=a.max_requests, prefill_cap=a.prefill_cap, **timing)
        cfg = enough_steps(base, rates, timing["c_s"], timing["a_s_per_token"], a.b0)
        lengths, rate, what = workload.name, float(sum(rates)), f"lengths={workload.name}"
    params = make_params(cfg, **kw)
    print(
        f"jaxsched budget run: policy={a.policy} {what} rate={rate:.4g}/s "
        f"b={a.budget} M={a.max_requests} horizon={a.horizon_s:g} s seeds={n_seeds}",
        file=sys.stderr,
    )
    res = simulate(cfg, params, range(n_seeds), progress=not a.quiet)
    print_metrics(res, n_seeds)
    if out is None:
        return 0
    columns = {
        "policy": a.policy,
        "lengths": lengths,
        "rate_qps": rate,
        "budget": a.budget,
        "max_requests": a.max_requests,
        "admission_cap": a.admission_cap,
        "horizon_s": a.horizon_s,
    }
    if a.trace:
        from ..results import trace_sha

        columns.update(trace=str(a.trace), rate_scale=1.0 if scale is None else scale, trace_sha=trace_sha(cfg))
    return save_seed_rows(a, res, columns, out, conf)


def _trace_summary(cfg, scale: float, timing: dict) -> tuple[str, float, str]:
    """(lengths column, mean arrivals/s, the run's description) of a replayed trace at
    rate_scale `scale`: the replay brings the n rows once per period (the sum of its gaps,
    `arrivals.trace_gaps_s`) divided by the scale; rho is eq. (2.3)'s offered load."""
    from ..budget.config import trace_load
    from ..workload.arrivals import trace_gaps_s

    trace = cfg.workload[0]
    period = float(trace_gaps_s(trace.arrival_s).sum()) / scale
    rate = trace.arrival_s.size / period
    rho = trace_load(cfg, scale, **timing)
    what = (
        f"trace={trace.name} ({trace.arrival_s.size} rows every {period:.4g} s, rate_scale={scale:g}, load={rho:.3g})"
    )
    return f"trace:{trace.name}", rate, what


def cmd_budget_experiment(a: argparse.Namespace) -> int:
    """A check or experiment of paper 004 (`jaxsched.budget.experiments`)."""
    return run_experiment(a, "budget", BUDGET_EXPERIMENTS)


def cmd_budget_check_stability(a: argparse.Namespace) -> int:
    """`jaxsched budget check-stability`: the `stability` experiment."""
    return run_experiment(a, "budget", BUDGET_EXPERIMENTS, what="stability")


def add_parsers(sub) -> None:
    """The `jaxsched budget` group."""
    k = sub.add_parser(
        "budget",
        help="paper 004's token-budget engine: Sarathi, Orca, vLLM, FasterTransformer; one run or the paper's checks",
        description="One LLM engine whose batches carry at most b tokens and last "
        "c + a (b' - b0)^+ (paper 004): `budget run` (one "
        "configuration) or `budget experiment` (the paper's checks).",
    )
    ksub = k.add_subparsers(dest="budget_command", required=True, metavar="SUBCOMMAND")
    r = command(ksub, "run", help="one configuration over several seeds, prints its metrics")
    r.add_argument(
        "--policy",
        default="sarathi",
        choices=BUDGET_POLICIES,
        help="sarathi, orca, vllm (vanilla), ft (FasterTransformer), wc "
        "((K_p, K_d)-FCFS), priority (strict type priority)",
    )
    r.add_argument(
        "--lengths",
        default="constant",
        choices=LENGTH_LAWS.names(),
        help="request lengths: " + "; ".join(f"{e.name}: {e.doc}" for e in LENGTH_LAWS.values()),
    )
    r.add_argument("--prompt", type=float, default=129, help="prefill tokens (mean)")
    r.add_argument("--decode", type=float, default=112, help="decode tokens (mean)")
    r.add_argument("--rate", type=float, default=None, help="Poisson arrivals per second (default: from --load)")
    r.add_argument(
        "--load",
        type=float,
        default=0.85,
        help="offered load rho = lambda (m_p + m_d) t_b / b when --rate is not given",
    )
    r.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        help="replay a timed trace (a path, or a name of `jaxsched data list`): its rows arrive at "
        "their own times, with their own prompt and output lengths, each seed starting at a row of "
        "its own and wrapping around at the end; replaces --lengths, --prompt, --decode, --rate "
        "and --load (docs/traces.md)",
    )
    add_trace_format(r, "; the layout must have arrival times")
    r.add_argument(
        "--rate-scale",
        type=float,
        metavar="X",
        default=None,
        help=f"--trace: divide the trace's arrival times by this (2 = twice its rate), in "
        f"[{RATE_SCALE_RANGE[0]:g}, {RATE_SCALE_RANGE[1]:g}] (default 1)",
    )
    r.add_argument("--budget", type=int, default=512, help="token budget b per batch")
    r.add_argument("--max-requests", type=int, default=256, help="requests per batch M")
    r.add_argument(
        "--admission-cap",
        choices=ADMISSION_CAPS,
        default="batch",
        help="what --max-requests caps: the requests of one batch (batch) or the requests started "
        "and not finished (running, Vidur's allocation map); read by sarathi, orca, vllm, ft and wc "
        "(docs/budget-semantics.md section 3)",
    )
    r.add_argument("--prefill-cap", type=int, default=None, help="tokens of a whole-prompt batch (vllm, ft; default b)")
    r.add_argument("--c-ms", type=float, default=45.5, help="batch time constant c, ms")
    r.add_argument("--a-ms", type=float, default=0.18, help="ms per token above b0 (assumed)")
    r.add_argument("--b0", type=int, default=64, help="tokens below which a batch costs c")
    r.add_argument("--horizon-s", "--horizon", type=float, default=600.0, help="simulated seconds per run")
    r.add_argument("--burn-in-s", "--burn-in", type=float, default=60.0, help="seconds left out of the metrics")
    r.add_argument(
        "--table-size", type=int, default=16384, help="request slots per run; a full table rejects arrivals (unstable)"
    )
    r.add_argument(
        "--grow-table",
        action="store_true",
        help="start the table at --table-size (a power of two) and run a seed that rejects an arrival "
        "again with twice the slots, until none does: the results of a table large enough from the start",
    )
    r.add_argument("--seeds", type=int, default=8, help="number of seeds")
    r.add_argument(
        "--out", default=None, help="CSV file, one row per seed (default: none; the resolved options go beside it)"
    )
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_budget_run)
    e = command(ksub, "experiment", help="a check or experiment of paper 004")
    e.add_argument("what", nargs="?", help=f"one of {', '.join(BUDGET_EXPERIMENTS)}")
    experiment_options(e, "results/budget")
    e.set_defaults(func=cmd_budget_experiment)
    c = command(
        ksub,
        "check-stability",
        help="paper 004's Fig. 1 and Theorem 1: queue growth against the load (`jaxsched check stability`)",
    )
    experiment_options(
        c, "results/budget", quick="3 loads, 200 s runs, about a minute", seeds="seeds per point (default 8, quick 4)"
    )
    c.set_defaults(func=cmd_budget_check_stability)
