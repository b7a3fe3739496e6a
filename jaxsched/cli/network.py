"""`jaxsched network run | experiment`: K token-budget engines behind a router, and the
Rybko-Stolyar agent network (paper 004 §4).

Engines are imported inside the commands, so that `--help` does not import JAX.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace

from ..errors import ConfigError, Reads, merge_reads, reads_from, require_float, require_int
from ..network.registry import EXPERIMENTS as NETWORK_EXPERIMENTS
from ..network.registry import POLICIES as NETWORK_POLICIES
from ..network.registry import ROUTERS as NETWORK_ROUTERS
from ..network.registry import RS_PRIORITIES, RUN_TOPOLOGIES
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
    split_list,
)
from .budget import RATE_EXCLUSIVE

# `network run`: the options of each topology (rs runs Fig. 8's fixed agents: b = 768, one
# slot per batch).
_PARALLEL = (
    "agents",
    "router",
    "router_weights",
    "policy",
    "prompt",
    "decode",
    "rate",
    "budget",
    "max_requests",
    "c_ms",
    "a_ms",
    "b0",
)
TOPOLOGY_READS = {
    **{d: (Reads("topology", ("parallel",)),) for d in _PARALLEL},
    "priority": (Reads("topology", ("rs",)),),
}


def run_reads() -> dict[str, tuple[Reads, ...]]:
    """What reads each option of `network run`: the topology (TOPOLOGY_READS), then the
    routers' registry options (router `weighted` reads --router-weights)."""
    return merge_reads(TOPOLOGY_READS, reads_from(NETWORK_ROUTERS, "router"))


def router_weights(text: str | None, K: int) -> tuple[float, ...] | None:
    """--router-weights W1,W2,... as K floats, one per agent: each a finite number >= 0, with a
    positive sum (only the ratios matter); one ConfigError naming the flag otherwise. None: not
    given (equal weights)."""
    if text is None:
        return None
    allowed = (
        f"--router-weights must be K = {K} comma-separated numbers >= 0, one per agent (--agents), "
        f"with a positive sum (only their ratios matter), got {text!r}"
    )
    try:
        weights = tuple(float(x) for x in split_list(text, "--router-weights", unique=False))
    except ValueError:
        raise ConfigError(allowed) from None
    if len(weights) != K or not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
        raise ConfigError(allowed)
    return weights


def _weights_text(weights: tuple[float, ...] | None) -> str:
    """Router weights as written in a results row ('1,2.5'; '' when not given)."""
    return "" if weights is None else ",".join(f"{w:g}" for w in weights)


def _parallel(a: argparse.Namespace):
    """(config, params, description) of K Fig. 1 engines behind --router."""
    from ..budget.config import capacity_tokens_per_s
    from ..network import NetworkConfig, enough_steps, make_params, rates_for_load
    from ..workload import Independent, Poisson

    prompt = require_float(a.prompt, "--prompt", lo=1.0, hi=2.0**20)
    decode = require_float(a.decode, "--decode", lo=1.0, hi=2.0**20)
    base = NetworkConfig(
        topology="parallel",
        agents=a.agents,
        router=a.router,
        policy=a.policy,
        workload=(Independent(Poisson(prompt), Poisson(decode)),),
        horizon_s=a.horizon_s,
        burn_in_s=a.burn_in_s,
        table_size=a.table_size,
        grow_table=a.grow_table,
    )
    kw = dict(budget=a.budget, max_requests=a.max_requests, c_s=a.c_ms / 1000.0, a_s_per_token=a.a_ms / 1000.0, b0=a.b0)
    weights = router_weights(a.router_weights, base.K)
    if a.rate is None:
        load = require_float(a.load, "--load", lo=0.0, hi=10.0, lo_open=True)
        make_params(enough_steps(base, [1.0], **kw), rates=[1.0], **kw)  # names bad constants
        cap = capacity_tokens_per_s(a.budget, kw["c_s"], kw["a_s_per_token"], a.b0)
        rates = rates_for_load(base, load, [cap] * base.K)
    else:
        rates = [require_float(a.rate, "--rate", lo=0.0, lo_open=True)]
    cfg = enough_steps(base, rates, **kw)
    router = a.router + ("" if weights is None else f" (weights {_weights_text(weights)})")
    return (
        cfg,
        make_params(cfg, rates=rates, router_weights=weights, **kw),
        (f"K={a.agents} router={router} policy={a.policy} rate={sum(rates):.4g}/s b={a.budget}"),
    )


def _rs(a: argparse.Namespace):
    """(config, params, description) of the Rybko-Stolyar network of Fig. 8."""
    from ..network import make_params, rates_for_load
    from ..network.experiments import RS_AGENT, RS_ORDERS, rs_config

    load = require_float(a.load, "--load", lo=0.0, hi=10.0, lo_open=True)
    cfg = replace(rs_config(RS_ORDERS[a.priority], a.horizon_s, a.burn_in_s, a.table_size), grow_table=a.grow_table)
    rates = rates_for_load(cfg, load, [float(RS_AGENT["budget"])] * 2)
    from ..network import enough_steps

    cfg = enough_steps(cfg, rates, **RS_AGENT)
    return (
        cfg,
        make_params(cfg, rates=rates, **RS_AGENT),
        (f"Rybko-Stolyar priority={a.priority} load={load:g} rate/type={rates[0]:.4g}/slot"),
    )


def cmd_network_run(a: argparse.Namespace) -> int:
    """One network configuration over several seeds: each metric's mean and 95% CI; --out
    writes one CSV row per seed."""
    check_options(a, run_reads(), {"topology": a.topology, "router": a.router}, RATE_EXCLUSIVE)
    from ..run import simulate

    n_seeds = require_int(a.seeds, "--seeds", lo=1, hi=1 << 20)
    out = None if a.out is None else check_file(a.out, "--out")
    out, _, conf = file_outputs(a, out)
    cfg, params, what = (_rs if a.topology == "rs" else _parallel)(a)
    print(f"jaxsched network run: {what} horizon={a.horizon_s:g} seeds={n_seeds}", file=sys.stderr)
    res = simulate(cfg, params, range(n_seeds), progress=not a.quiet)
    print_metrics(res, n_seeds)
    if out is None:
        return 0
    columns = {
        "topology": a.topology,
        "agents": cfg.K,
        "router": a.router,
        "priority": a.priority,
        "load": a.load,
        "horizon_s": a.horizon_s,
    }
    if a.topology == "parallel" and a.router == "weighted":
        # The weights the run used (equal ones when not given).
        columns["router_weights"] = _weights_text(router_weights(a.router_weights, cfg.K) or (1.0,) * cfg.K)
    return save_seed_rows(a, res, columns, out, conf)


def cmd_network_experiment(a: argparse.Namespace) -> int:
    """A check or experiment of paper 004 §4 (`jaxsched.network.experiments`)."""
    return run_experiment(a, "network", NETWORK_EXPERIMENTS)


def add_parsers(sub) -> None:
    """The `jaxsched network` group."""
    k = sub.add_parser(
        "network",
        help="paper 004 §4: engines behind a router, agent networks",
        description="K token-budget engines that requests visit (paper 004 §4): "
        "`network run` (one configuration) or `network experiment` "
        "(Prop. 1 routing, the Rybko-Stolyar network of Fig. 8).",
    )
    ksub = k.add_subparsers(dest="network_command", required=True, metavar="SUBCOMMAND")
    r = command(ksub, "run", help="one configuration over several seeds, prints its metrics")
    r.add_argument(
        "--topology",
        default="parallel",
        choices=RUN_TOPOLOGIES.names(),
        help="; ".join(f"{e.name}: {e.doc}" for e in RUN_TOPOLOGIES.values()),
    )
    r.add_argument("--agents", type=int, default=2, help="engines K (parallel)")
    r.add_argument(
        "--router", default="fewest_tokens", choices=NETWORK_ROUTERS, help="how an arrival picks its engine (parallel)"
    )
    r.add_argument(
        "--router-weights",
        metavar="W1,W2,...",
        default=None,
        help="--router weighted: agent k takes an arrival with probability w_k / sum(w); K numbers "
        ">= 0 with a positive sum, one per agent (default: equal weights)",
    )
    r.add_argument(
        "--priority",
        default="unstable",
        choices=RS_PRIORITIES.names(),
        help="rs: " + "; ".join(f"{e.name}: {e.doc}" for e in RS_PRIORITIES.values()),
    )
    r.add_argument(
        "--policy", default="sarathi", choices=NETWORK_POLICIES, help="each engine's batch policy (parallel)"
    )
    r.add_argument("--prompt", type=float, default=129, help="mean prefill tokens (Poisson)")
    r.add_argument("--decode", type=float, default=112, help="mean decode tokens (Poisson)")
    r.add_argument("--rate", type=float, default=None, help="arrivals per second (parallel; default: from --load)")
    r.add_argument(
        "--load", type=float, default=0.85, help="parallel: lambda (m_p + m_d) / (K b / t_b); rs: load at each agent"
    )
    r.add_argument("--budget", type=int, default=512, help="token budget b per batch (parallel)")
    r.add_argument("--max-requests", type=int, default=256, help="requests per batch M")
    r.add_argument("--c-ms", type=float, default=45.5, help="batch time constant c, ms")
    r.add_argument("--a-ms", type=float, default=0.18, help="ms per token above b0 (assumed)")
    r.add_argument("--b0", type=int, default=64, help="tokens below which a batch costs c")
    r.add_argument("--horizon-s", "--horizon", type=float, default=300.0, help="simulated seconds (rs: slots) per run")
    r.add_argument("--burn-in-s", "--burn-in", type=float, default=60.0, help="left out of the metrics")
    r.add_argument(
        "--table-size", type=int, default=4096, help="task slots per engine; a full table rejects tasks (unstable)"
    )
    r.add_argument(
        "--grow-table",
        action="store_true",
        help="start the table at --table-size (a power of two) and run a seed that rejects a task "
        "again with twice the slots, until none does: the results of a table large enough from the start",
    )
    r.add_argument("--seeds", type=int, default=8, help="number of seeds")
    r.add_argument(
        "--out", default=None, help="CSV file, one row per seed (default: none; the resolved options go beside it)"
    )
    r.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(r)
    r.set_defaults(func=cmd_network_run)
    e = command(ksub, "experiment", help="a check or experiment of paper 004 §4")
    e.add_argument("what", nargs="?", help=f"one of {', '.join(NETWORK_EXPERIMENTS)}")
    experiment_options(e, "results/network")
    e.set_defaults(func=cmd_network_experiment)
