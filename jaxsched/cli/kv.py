"""`jaxsched kv run | experiment` and `jaxsched tune`: the kv engine (WAIT paper)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import ConfigError, require_int
from ..results import write_csv


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
    from ..kv import KVConfig, make_params, simulate
    from ..results import format_value, markdown_table
    from ..stats import mean_ci
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
    from ..kv import experiments as kx
    from ..plots import plot_kv_rates, plot_kv_scaling
    what = a.what.lower()
    if what not in (*kx.EXPERIMENTS, "scaling"):
        raise ConfigError(f"kv experiment: unknown experiment {a.what!r}; available: "
                          f"{', '.join((*kx.EXPERIMENTS, 'scaling'))}")
    seeds = None if a.seeds is None else require_int(a.seeds, "--seeds", lo=2 if what == "scaling"
                                                     else 1, hi=4096)
    pols = None if a.policies is None else [p for p in a.policies.split(",") if p]
    out = Path(a.out)
    log = None if a.quiet else (lambda s: print(s, file=sys.stderr))
    t0 = time.perf_counter()
    if what == "scaling":
        if pols is not None or a.prefill_price is not None:
            raise ConfigError("--policies and --prefill-price do not apply to 'scaling'")
        rows, fits = kx.run_scaling(quick=a.quick, seeds=seeds, progress=log)
        print(kx.scaling_tables(rows, fits))
        csv = write_csv(out / "scaling.csv", rows)
        write_csv(out / "scaling_fits.csv", fits)
        png = plot_kv_scaling(rows, fits, out / "scaling.png")
    else:
        exp = kx.EXPERIMENTS[what]
        rows = kx.run_experiment(what, quick=a.quick, seeds=seeds, policies=pols,
                                 prefill_price=a.prefill_price, loads=_floats(a.loads, "--loads"),
                                 batch_limits=_limits(a.batch_limits),
                                 capacities=None if a.capacity is None else
                                 [c for c in a.capacity.split(",") if c], progress=log)
        print(f"{what.upper()}: {exp.title} (paper {exp.figure}); paper's claim: {exp.claim}\n")
        print(kx.experiment_table(rows))
        csv = write_csv(out / f"{what}.csv", rows)
        png = plot_kv_rates(rows, out / f"{what}.png",
                            title=f"{what.upper()}: {exp.title} (paper {exp.figure})")
    print(f"\nresults: {csv}\nplot: {png}\nwall time: {time.perf_counter() - t0:.1f} s")
    bad = [r for r in rows if r.get("status") == "invalid" or r.get("dropped_arrivals", 0) > 0]
    if bad:
        print(f"kv experiment: {len(bad)} rows INVALID or with arrivals lost to the request "
              "table (their metrics leave those requests out): " + "; ".join(
                  f"{r['policy']} rho={r['load']} B={r.get('batch_limit')}: {r['issues']}"
                  for r in bad), file=sys.stderr)
        return 1
    return 0


def _floats(text: str | None, flag: str) -> tuple[float, ...] | None:
    """'0.5,0.9' -> (0.5, 0.9); None stays None; ConfigError naming the flag otherwise."""
    if text is None:
        return None
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated numbers, got {text!r}") from None


def _limits(text: str | None) -> tuple[int | None, ...] | None:
    """'none,512,128' -> (None, 512, 128) for --batch-limits."""
    if text is None:
        return None
    out = []
    for x in (x.strip() for x in text.split(",") if x.strip()):
        if x.lower() == "none":
            out.append(None)
            continue
        try:
            out.append(int(x))
        except ValueError:
            raise ConfigError(f"--batch-limits must be 'none' or integers >= 1, got {x!r}") from None
    return tuple(out)


def add_parsers(sub) -> None:
    """The kv engine's commands: the `jaxsched kv` group and `jaxsched tune`."""
    from ..kv.config import DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN
    from ..kv.policies import POLICIES
    k = sub.add_parser("kv", help="the WAIT paper's KV-memory engine: one run or experiments E1-E4")
    ksub = k.add_subparsers(dest="kv_command", required=True)
    r = ksub.add_parser("run", help="one configuration over several seeds, prints its metrics")
    r.add_argument("--policy", default="wait",
                   help=f"batch policy, one of {', '.join(POLICIES)} (default wait)")
    r.add_argument("--prefill", default="10,10", help="prefill tokens per type (default 10,10)")
    r.add_argument("--decode", default="10,20", help="decode tokens per type (default 10,20)")
    r.add_argument("--rates", default="1000,1000", help="arrival rates per type, requests/s")
    r.add_argument("--thresholds", default=None,
                   help="integer thresholds (wait: per type; nested_wait: per segment); "
                        "default: the fluid thresholds")
    r.add_argument("--d0", type=float, default=DEFAULT_D0_S, help="d0, s (default %(default)s)")
    r.add_argument("--d1", type=float, default=DEFAULT_D1_S_PER_TOKEN,
                   help="d1, s per token (default %(default)s)")
    r.add_argument("--capacity", type=int, default=DEFAULT_CAPACITY_TOKENS,
                   help="KV capacity C, tokens (default %(default)s)")
    r.add_argument("--num-requests", type=int, default=5000, help="N per seed (default 5000)")
    r.add_argument("--table-size", type=int, default=4096, help="request table slots Q")
    r.add_argument("--seeds", type=int, default=4, help="number of seeds (default 4)")
    r.set_defaults(func=cmd_kv_run)
    e = ksub.add_parser("experiment", help="E1-E4 of the WAIT paper, or Theorem 1's scaling")
    e.add_argument("what", help="e1, e2, e3, e4 or scaling")
    e.add_argument("--quick", action="store_true", help="reduced grid, requests and seeds")
    e.add_argument("--seeds", type=int, default=None, help="seeds per point (default per experiment)")
    e.add_argument("--policies", default=None,
                   help=f"comma-separated subset of {', '.join(POLICIES)} (default: all)")
    e.add_argument("--prefill-price", type=float, default=None,
                   help="price a prefill token (first prefills, restarts) at this multiple of "
                        "d1 (default: eq. (1), one price)")
    e.add_argument("--loads", default=None, help="comma-separated loads rho in (0, 1) "
                   "(default per experiment)")
    e.add_argument("--batch-limits", default=None, help="comma-separated batch limits B for "
                   "every policy, 'none' for uncapped (default per experiment)")
    e.add_argument("--capacity", default=None, help="comma-separated rules for C: mstar (C = "
                   "1.2 M*), mpi (C = M^pi of the featured policy), hardware (110,000 tokens) "
                   "(default per experiment)")
    e.add_argument("--out", default="results/kv", help="folder for the CSV and PNG files")
    e.add_argument("--quiet", action="store_true", help="no progress output")
    e.set_defaults(func=cmd_kv_experiment)

    t = sub.add_parser("tune", help="tune Nested WAIT thresholds on a differentiable relaxation "
                                    "and compare them with the fluid ones in the exact engine")
    t.add_argument("experiment", choices=["e3", "e4"], help="operating point (jaxsched.kv.tuning)")
    t.add_argument("--steps", type=int, default=200, help="optimizer steps (default 200)")
    t.add_argument("--lam", type=float, default=None,
                   help="latency price, tokens/s per s (default 0.1 throughput* / fluid latency)")
    t.add_argument("--seeds", type=int, default=32, help="held-out seeds (default 32)")
    t.add_argument("--seed-start", type=int, default=1000, help="first held-out seed (default 1000)")
    t.add_argument("--out", default=None, help="output folder (default results/tune_<experiment>)")
    t.add_argument("--quiet", action="store_true", help="no progress output")
    t.set_defaults(func=cmd_tune)


def cmd_tune(a: argparse.Namespace) -> int:
    """`jaxsched tune e3|e4`: relaxation-tuned thresholds against the fluid ones, held-out seeds."""
    from ..kv.tuning import tune_experiment
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
