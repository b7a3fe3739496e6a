"""`jaxsched kv run | experiment` and `jaxsched tune`: the kv engine (WAIT paper).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from ..errors import ConfigError, Reads, reads_from, require_int
from ..kv.registry import BLOCK_RULES as KV_BLOCK_RULES
from ..kv.registry import CAPACITY_RULES as KV_CAPACITY_RULES
from ..kv.registry import DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN
from ..kv.registry import EXPERIMENTS as KV_EXPERIMENTS
from ..kv.registry import POLICIES as KV_POLICIES
from ..outputs import check_dir, check_file, save
from .base import (
    add_overwrite,
    check_folder_outputs,
    check_options,
    command,
    config_path,
    file_outputs,
    folder_outputs,
    fresh_folder,
    print_metrics,
    require_what,
    save_resolved,
    save_seed_rows,
    split_list,
)

# `kv experiment`: the options of E1-E4 that Theorem 1's scaling run does not read.
EXPERIMENT_READS = {
    d: (Reads("experiment", tuple(n for n in KV_EXPERIMENTS if n != "scaling")),)
    for d in ("policies", "prefill_price", "loads", "batch_limits", "capacity")
}


def _kv_ints(text: str, flag: str) -> tuple[int, ...]:
    """'10,20' -> (10, 20) (one value per type: repeats allowed); ConfigError naming the flag
    otherwise."""
    items = split_list(text, flag, unique=False)
    try:
        return tuple(int(v) for v in items)
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got {text!r}") from None


def _floats(text: str | None, flag: str, unique: bool = False) -> tuple[float, ...] | None:
    """'0.5,0.9' -> (0.5, 0.9); None stays None; ConfigError naming the flag otherwise (an
    empty entry, or with unique a repeated value: a grid point would run twice)."""
    if text is None:
        return None
    items = split_list(text, flag, unique=False)
    try:
        values = tuple(float(x) for x in items)
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag} must be comma-separated finite numbers, got {text!r}")
    if unique and len(set(values)) < len(values):
        raise ConfigError(f"{flag} must not repeat a value, got {text!r}")
    return values


def _limits(text: str | None) -> tuple[int | None, ...] | None:
    """'none,512,128' -> (None, 512, 128) for --batch-limits (no empty or repeated entry)."""
    if text is None:
        return None
    out = []
    for x in split_list(text, "--batch-limits"):
        if x.lower() == "none":
            out.append(None)
            continue
        try:
            out.append(int(x))
        except ValueError:
            raise ConfigError(f"--batch-limits must be 'none' or integers >= 1, got {x!r}") from None
    if len(set(out)) < len(out):
        raise ConfigError(f"--batch-limits must not repeat a limit, got {text!r}")
    return tuple(out)


def cmd_kv_run(a: argparse.Namespace) -> int:
    """One kv configuration over several seeds: prints each metric's mean and 95% CI and, with
    --out, writes one CSV row per seed."""
    check_options(a, reads_from(KV_POLICIES, "policy"), {"policy": a.policy})
    from ..kv import KVConfig, make_params, simulate

    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=4096)
    out = None if a.out is None else check_file(a.out, "--out")
    out, _, conf = file_outputs(a, out)
    cfg = KVConfig(
        prefill_tokens=_kv_ints(a.prefill, "--prefill"),
        decode_tokens=_kv_ints(a.decode, "--decode"),
        policy=a.policy,
        num_requests=require_int(a.num_requests, "--num-requests", lo=1),
        table_size=require_int(a.table_size, "--table-size", lo=1),
        block_rules=a.block_rules,
        grow_table=a.grow_table,
    )
    th = None if a.thresholds is None else _kv_ints(a.thresholds, "--thresholds")
    rates = _floats(a.rates, "--rates")
    params = make_params(
        cfg, rates=rates, d0_s=a.d0_s, d1_s_per_token=a.d1_s_per_token, capacity_tokens=a.capacity_tokens, thresholds=th
    )
    print(
        f"jaxsched kv run: policy={a.policy} prefill={list(cfg.prefill_tokens)} "
        f"decode={list(cfg.decode_tokens)} rates={list(rates)} "
        f"thresholds={list(map(int, params.thresholds))} C={a.capacity_tokens} d0={a.d0_s} d1={a.d1_s_per_token} "
        f"N={a.num_requests} Q={a.table_size} seeds={n_seeds}"
        + (f" block_rules={a.block_rules}" if "block_rules" in KV_POLICIES[a.policy].options else ""),
        file=sys.stderr,
    )
    res = simulate(cfg, params, range(n_seeds), progress=not a.quiet)
    print_metrics(res, n_seeds)
    if out is None:
        return 0
    columns = {
        "policy": a.policy,
        "prefill": a.prefill,
        "decode": a.decode,
        "rates": "/".join(map(str, rates)),
        "thresholds": "/".join(map(str, map(int, params.thresholds))),
        "capacity_tokens": a.capacity_tokens,
        "d0_s": a.d0_s,
        "d1_s_per_token": a.d1_s_per_token,
        "num_requests": a.num_requests,
        "table_size": a.table_size,
    }
    if "block_rules" in KV_POLICIES[a.policy].options:
        columns["block_rules"] = a.block_rules
    return save_seed_rows(a, res, columns, out, conf)


def _tokens(values) -> str:
    """Per-type token counts for a title: "10 x 4", "20, 40, 80, 160", "50 to 500 in steps of 50"."""
    v = [int(x) for x in values]
    if len(set(v)) == 1:
        return f"{v[0]} x {len(v)}"
    steps = {b - a for a, b in zip(v, v[1:])}
    if len(v) > 4 and len(steps) == 1:
        return f"{v[0]} to {v[-1]} in steps of {steps.pop()}"
    return ", ".join(map(str, v))


def experiment_title(exp, rows) -> str:
    """The title of an E1-E4 figure: the experiment and its paper figure, the request types,
    the loads and the rules for C that `rows` ran (line styles when there are several);
    `plot_kv_rates` appends the seeds per point and the requests per run."""
    loads = sorted({float(r["load"]) for r in rows if r.get("load") not in (None, "")})
    rules = list(dict.fromkeys(str(r.get("capacity_rule", "-")) for r in rows))
    styles = ("solid", "dashed", "dotted", "dash-dot")
    caps = rules[0] if len(rules) == 1 else " or ".join(f"{c} ({s})" for c, s in zip(rules, styles))
    ratio = ":".join(f"{x:g}" for x in exp.rate_ratio)
    return (
        f"{exp.name.upper()}: {exp.title} (paper {exp.figure}): {len(exp.prefill)} request types, prefill "
        f"{_tokens(exp.prefill)} and decode {_tokens(exp.decode)} tokens, rates {ratio}; load rho = "
        f"{', '.join(f'{x:g}' for x in loads)}; C = {caps}; mean ± 95% CI"
    )


def cmd_kv_experiment(a: argparse.Namespace) -> int:
    """E1-E4 (notes/001.md §4) or Theorem 1's scaling: markdown table, CSV and PNG in --out."""
    what = require_what(a.what, "kv experiment: the experiment", KV_EXPERIMENTS.names())
    check_options(a, EXPERIMENT_READS, {"experiment": what})
    seeds = None if a.seeds is None else require_int(a.seeds, "--seeds", lo=2 if what == "scaling" else 1, hi=4096)
    pols = None if a.policies is None else split_list(a.policies, "--policies")
    for p in pols or ():
        if p not in KV_POLICIES:
            raise ConfigError(f"--policies must be a comma-separated subset of {', '.join(KV_POLICIES)}, got {p!r}")
    loads, limits = _floats(a.loads, "--loads", unique=True), _limits(a.batch_limits)
    caps = None if a.capacity is None else split_list(a.capacity, "--capacity")
    for c in caps or ():
        if c not in KV_CAPACITY_RULES:
            raise ConfigError(
                f"--capacity must be comma-separated rules among {', '.join(KV_CAPACITY_RULES)}, got {c!r}"
            )
    out = check_dir(a.out, "--out")
    stem = "scaling" if what == "scaling" else what
    files = {"CSV": f"{stem}.csv", "plot": f"{stem}.png", "options file": f"{what}.config.toml"}
    files = folder_outputs(a, out, {**files, "fits": "scaling_fits.csv" if what == "scaling" else None})
    from ..kv import experiments as kx
    from ..kv.plots import plot_kv_rates, plot_kv_scaling
    from ..progress import Progress
    from ..results import write_csv

    bar = Progress(f"kv {what}, points", enabled=not a.quiet)
    t0 = time.perf_counter()
    if what == "scaling":
        rows, fits = kx.run_scaling(quick=a.quick, seeds=seeds, progress=bar)
        bar.close()
        print(kx.scaling_tables(rows, fits))
        csv, ok = save(lambda p: write_csv(p, rows), files["CSV"], "--out")
        save(lambda p: write_csv(p, fits), files["fits"], "--out")
        png = plot_kv_scaling(rows, fits, files["plot"])
    else:
        exp = kx.EXPERIMENTS[what]
        rows = kx.run_experiment(
            what,
            quick=a.quick,
            seeds=seeds,
            policies=pols,
            prefill_price=a.prefill_price,
            loads=loads,
            batch_limits=limits,
            capacities=caps,
            progress=bar,
        )
        bar.close()
        print(f"{what.upper()}: {exp.title} (paper {exp.figure}); paper's claim: {exp.claim}\n")
        print(
            "cells with ±: mean ± 95% CI half-width over the seeds (Student t); p99: the "
            "mean over seeds of each seed's 99th percentile\n"
        )
        print(kx.experiment_table(rows))
        csv, ok = save(lambda p: write_csv(p, rows), files["CSV"], "--out")
        png = plot_kv_rates(rows, files["plot"], title=experiment_title(exp, rows))
    conf, _ = save_resolved(a, files["options file"])
    print(f"\nresults: {csv}\nplot: {png}\noptions: {conf}\nwall time: {time.perf_counter() - t0:.1f} s")
    bad = [r for r in rows if r.get("status") == "invalid" or r.get("dropped_arrivals", 0) > 0]
    if bad:
        print(
            f"kv experiment: {len(bad)} rows INVALID or with arrivals lost to the request "
            "table (their metrics leave those requests out): "
            + "; ".join(f"{r['policy']} rho={r['load']} B={r.get('batch_limit')}: {r['issues']}" for r in bad),
            file=sys.stderr,
        )
        return 1
    return 0 if ok else 1


def cmd_tune(a: argparse.Namespace) -> int:
    """`jaxsched tune e3|e4`: relaxation-tuned thresholds against the fluid ones, held-out seeds."""
    experiment = require_what(a.experiment, "tune: the experiment", ("e3", "e4"))
    n_seeds = require_int(a.seeds, "--seeds", lo=2, hi=4096)
    seeds = range(require_int(a.seed_start, "--seed-start", lo=0, hi=2**32 - n_seeds), a.seed_start + n_seeds)
    steps = require_int(a.steps, "--steps", lo=1, hi=1_000_000)
    if a.lam is not None and not (math.isfinite(a.lam) and a.lam >= 0):
        raise ConfigError(f"--lam must be a finite number >= 0, got {a.lam!r}")
    out = fresh_folder(a, a.out or f"results/tune_{experiment}")
    check_folder_outputs(out, {"options file": config_path(out, folder=True).name})
    from ..kv.tuning import tune_experiment
    from ..progress import Progress

    bar = Progress(f"tune {experiment}, optimizer steps", steps, enabled=not a.quiet)
    run = tune_experiment(
        experiment, steps=steps, lam=a.lam, seeds=seeds, out_dir=out, log=bar if not a.quiet else None
    )
    bar.close()
    conf, _ = save_resolved(a, config_path(out, folder=True))
    print(run["markdown"])
    print(f"files in {out}\noptions: {conf}")
    if not run["valid"]:
        print(
            "tune: INVALID comparison, an arm is unstable: "
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in run["issues"].items() if v),
            file=sys.stderr,
        )
        return 2
    return 0


def add_parsers(sub) -> None:
    """The kv engine's commands: the `jaxsched kv` group (run, experiment, tune) and `jaxsched
    tune`, the same as `jaxsched kv tune`."""
    k = sub.add_parser(
        "kv",
        help="the WAIT paper's KV-memory engine: one run, experiments E1-E4, threshold tuning",
        description="The WAIT paper's KV-memory engine: `kv run` (one "
        "configuration), `kv experiment` (E1-E4, scaling) or `kv tune` "
        "(Nested WAIT thresholds by gradient).",
    )
    ksub = k.add_subparsers(dest="kv_command", required=True, metavar="SUBCOMMAND")
    r = command(ksub, "run", help="one configuration over several seeds, prints its metrics")
    r.add_argument("--policy", default="wait", choices=KV_POLICIES, help="batch policy")
    r.add_argument("--prefill", default="10,10", help="prefill tokens per type")
    r.add_argument("--decode", default="10,20", help="decode tokens per type")
    r.add_argument("--rates", default="1000,1000", help="arrival rates per type, requests/s")
    r.add_argument(
        "--thresholds",
        default=None,
        help="integer thresholds (wait: per type; nested_wait: per segment); default: the fluid thresholds",
    )
    r.add_argument(
        "--block-rules",
        default="kv",
        choices=KV_BLOCK_RULES,
        help="vllm: how KV blocks are counted: kv (the blocks the running requests' next tokens need) or "
        "vidur (Vidur's vLLM scheduler: admission counts the blocks held, each decode needs a free block)",
    )
    r.add_argument("--d0-s", "--d0", type=float, default=DEFAULT_D0_S, help="d0, s per batch")
    r.add_argument("--d1-s-per-token", "--d1", type=float, default=DEFAULT_D1_S_PER_TOKEN, help="d1, s per token")
    r.add_argument(
        "--capacity-tokens", "--capacity", type=int, default=DEFAULT_CAPACITY_TOKENS, help="KV capacity C, tokens"
    )
    r.add_argument("--num-requests", type=int, default=5000, help="N per seed")
    r.add_argument("--table-size", type=int, default=4096, help="request table slots Q")
    r.add_argument(
        "--grow-table",
        action="store_true",
        help="start the table at --table-size (a power of two) and run a seed that loses an arrival to a full table "
        "again with twice the slots, until none does: the results of a table large enough from the start",
    )
    r.add_argument("--seeds", type=int, default=8, help="number of seeds")
    r.add_argument(
        "--out", default=None, help="CSV file, one row per seed (default: none; the resolved options go beside it)"
    )
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_kv_run)
    e = command(ksub, "experiment", help="E1-E4 of the WAIT paper, or Theorem 1's scaling")
    e.add_argument("what", nargs="?", help=f"one of {', '.join(KV_EXPERIMENTS)}")
    e.add_argument("--quick", action="store_true", help="reduced grid, requests and seeds")
    e.add_argument("--seeds", type=int, default=None, help="seeds per point (default per experiment)")
    e.add_argument(
        "--policies", default=None, help=f"comma-separated subset of {', '.join(KV_POLICIES)} (default: all)"
    )
    e.add_argument(
        "--prefill-price",
        type=float,
        default=None,
        help="price a prefill token (first prefills, restarts) at this multiple of d1 (default: eq. (1), one price)",
    )
    e.add_argument("--loads", default=None, help="comma-separated loads rho in (0, 1) (default per experiment)")
    e.add_argument(
        "--batch-limits",
        default=None,
        help="comma-separated batch limits B for every policy, 'none' for uncapped (default per experiment)",
    )
    e.add_argument(
        "--capacity",
        default=None,
        help="comma-separated rules for C: "
        + "; ".join(f"{n} ({r.doc})" for n, r in KV_CAPACITY_RULES.items())
        + " (default per "
        "experiment)",
    )
    e.add_argument("--out", default="results/kv", help="folder for the CSV, PNG and options files")
    e.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(e)
    e.set_defaults(func=cmd_kv_experiment)

    _add_tune(ksub)
    _add_tune(sub, alias=True)


def _add_tune(sub, alias: bool = False) -> None:
    """`tune` on `sub` (the kv group's, or the top level's)."""
    t = command(
        sub,
        "tune",
        help="tune Nested WAIT thresholds on a differentiable relaxation "
        "and compare them with the fluid ones in the exact engine" + (" (= `jaxsched kv tune`)" if alias else ""),
    )
    what = "operating point, e3 or e4 (jaxsched.kv.tuning)"
    if alias:
        what = (
            "e3 or e4: Nested WAIT thresholds by gradient (jaxsched.kv.tuning); or an engine name "
            "(dp, kv, offline, interval, budget, network): evolution strategies over its Params "
            "(jaxsched.tune; the options marked 'engine tuner')"
        )
    t.add_argument("experiment", nargs="?", metavar="WHAT", help=what)
    t.add_argument("--steps", type=int, default=200, help="optimizer steps")
    t.add_argument(
        "--lam",
        type=float,
        default=None,
        help="latency price, tokens/s per s (default 0.1 throughput* / fluid latency)",
    )
    t.add_argument("--seeds", type=int, default=32, help="held-out seeds")
    if alias:
        from .tune import add_engine_options

        add_engine_options(t)
    t.add_argument("--seed-start", type=int, default=1000, help="first held-out seed")
    t.add_argument(
        "--out",
        default=None,
        help="folder for the thresholds, history, held-out "
        "comparison, plot and options (default results/tune_<experiment>)",
    )
    t.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(t)
    t.set_defaults(func=_tune_any if alias else cmd_tune)


def _tune_any(a: argparse.Namespace) -> int:
    """`jaxsched tune WHAT`: kv's gradient tuner for e3 and e4, the engine tuner otherwise."""
    from .tune import KV_TUNERS, TUNE_READS, cmd_tune_engine

    if a.experiment is None or a.experiment.lower() in KV_TUNERS:
        check_options(a, TUNE_READS, {"tuner": (a.experiment or "e3").lower(), "engine": "kv"})
        return cmd_tune(a)
    return cmd_tune_engine(a)
