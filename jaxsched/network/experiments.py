"""Paper 004 §4's checks on networks of engines, one function each (`jaxsched network
experiment NAME`). Each returns a `jaxsched.results.Report`; the numbers are in
docs/papers/004-budget.md.

- routing: Proposition 1. K engines of Fig. 1 behind each router (random, fewest requests,
  fewest tokens), over the load rho = lambda (m_p + m_d) / (K b / t_b): the tokens in the
  network stay bounded below capacity (4.1) under every router and grow above it; the
  routers' latencies side by side.
- fork_join: Conjecture 1. Agent 0, then agents 1 and 2 in parallel, then agent 3 after the
  join, Sarathi at each, every agent at the same load: bounded below the per-agent condition
  lambda (m_p^j + m_d^j) < b^j / t_b^j and growing above it.
- rybko_stolyar: Fig. 8. Two agents, b = 768, one slot per batch, Poisson sizes, load 0.9 per
  agent: with priority to the long, exiting class at each agent the network grows without
  bound; with the priorities swapped it stays bounded. Growth slopes with 95% CIs and the
  requests / tokens over time.
"""

from __future__ import annotations

import numpy as np

from ..budget.config import capacity_tokens_per_s
from ..budget.experiments import FIG1, GROWTH_THRESHOLD, verdict
from ..errors import require_int
from ..progress import declare, share, tick
from ..results import Report, markdown_table
from ..run import simulate, simulate_points
from ..stats import mean_ci
from ..workload import Independent, Poisson
from .config import NetworkConfig, enough_steps, make_params, rates_for_load, stage_work
from .engine import KIND_ARRIVAL, KIND_BATCH, KIND_FLUSH

# Fig. 1's requests with Poisson sizes (notes/004.md §6: "constant, or Poisson around those
# means"), so that the routers see unequal requests.
FIG1_POISSON = Independent(Poisson(129.0), Poisson(112.0), name="fig1-poisson")
ROUTING_AGENTS = 2
# The routers of Proposition 1 (paper 004 §4.1); `weighted`, with its default equal weights,
# is a random router too and adds nothing to the check.
PAPER_ROUTERS = ("random", "fewest_requests", "fewest_tokens")


def _growth_row(m, offered: float, S: int, by: str = "tokens") -> dict:
    """Growth statistics of one point: the token and request slopes with 95% CIs, and the
    verdict (jaxsched.budget.experiments.verdict) on the `by` slope as a fraction of the
    offered rate of the same unit (`offered`: tokens/s, or requests/s)."""
    frac = m[f"{'token' if by == 'tokens' else 'request'}_growth_per_s"] / offered
    v, mean, half = verdict(frac, m["overflowed"])
    g_mean, _, g_half, _ = mean_ci(m["token_growth_per_s"])
    r_mean, _, r_half, _ = mean_ci(m["request_growth_per_s"])
    return dict(
        seeds=S,
        growth_tokens_per_s=g_mean,
        growth_ci95=g_half,
        growth_fraction=mean,
        growth_fraction_ci95=half,
        request_growth_per_s=r_mean,
        request_growth_ci95=r_half,
        verdict=v,
        overflowed_seeds=int(np.sum(m["overflowed"] > 0)),
    )


def routing(quick: bool = False, seeds: int | None = None, progress=None) -> Report:
    """Prop. 1: K engines behind each router, growth against the load (module docstring)."""
    S = seeds or (3 if quick else 4)
    require_int(S, "--seeds (the growth CI needs at least 3 seeds)", lo=3, hi=4096)
    loads = (0.8, 1.15) if quick else (0.7, 0.9, 1.1)
    horizon, burn_in = (120.0, 30.0) if quick else (240.0, 60.0)
    K = ROUTING_AGENTS
    rows, growth_panel, latency_panel, verdicts = [], {}, {}, {}
    declare(progress, len(PAPER_ROUTERS) * len(loads))  # one unit per point
    for router in PAPER_ROUTERS:
        base = NetworkConfig(
            topology="parallel",
            agents=K,
            workload=(FIG1_POISSON,),
            router=router,
            horizon_s=horizon,
            burn_in_s=burn_in,
            table_size=1024,
        )
        kw = dict(
            budget=FIG1["budget"],
            max_requests=FIG1["max_requests"],
            c_s=FIG1["c_s"],
            a_s_per_token=FIG1["a_s_per_token"],
            b0=FIG1["b0"],
        )
        caps = np.full(K, capacity_tokens_per_s(FIG1["budget"], FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"]))
        rates = [rates_for_load(base, rho, caps) for rho in loads]
        cfg = enough_steps(base, rates[-1], **kw)
        results = simulate_points(cfg, [make_params(cfg, rates=r, **kw) for r in rates], range(S), warn=False)
        work = float(stage_work(cfg)[0, 0])
        series = ([], [], [])
        lat = ([], [], [])
        for rho, r, res in zip(loads, rates, results):
            m = res.metrics
            row = dict(
                router=router,
                agents=K,
                load=rho,
                rate_qps=float(r.sum()),
                **_growth_row(m, float(r.sum()) * work, S),
                throughput_qps=float(m["throughput_requests_per_s"].mean()),
                latency_mean_s=float(m["latency_mean_s"].mean()),
                latency_p99_s=float(m["latency_p99_s"].mean()),
                idle_fraction=float(m["idle_fraction_mean"].mean()),
                batch_share_max=float(m["batch_share_max"].mean()),
            )
            rows.append(row)
            verdicts[(router, rho)] = row["verdict"]
            for lst, val in zip(series, (rho, row["growth_fraction"], row["growth_fraction_ci95"])):
                lst.append(val)
            if rho < 1:
                l_mean, _, l_half, _ = mean_ci(m["latency_mean_s"])
                for lst, val in zip(lat, (rho, l_mean, l_half)):
                    lst.append(val)
            tick(progress, f"{router} rho={rho}")
        growth_panel[router] = series
        latency_panel[router] = lat
    return _routing_report(rows, loads, verdicts, growth_panel, latency_panel, horizon, S, K)


def _routing_report(rows, loads, verdicts, growth_panel, latency_panel, horizon, S, K) -> Report:
    below = [rho for rho in loads if rho < 1]
    above = [rho for rho in loads if rho > 1]
    checks = [
        (
            f"every router keeps the network bounded below K b / t_b (Prop. 1), loads {below}",
            all(verdicts[(r, rho)] == "bounded" for r in PAPER_ROUTERS for rho in below),
        ),
        (
            f"every router grows above capacity, loads {above}",
            all(verdicts[(r, rho)] == "grows" for r in PAPER_ROUTERS for rho in above),
        ),
    ]
    table = markdown_table(
        [
            "router",
            "rho",
            "qps",
            "growth / offered",
            "verdict",
            "throughput (qps)",
            "mean latency (s)",
            "p99 latency (s)",
            "idle",
            "busiest agent's batches",
        ],
        [
            [
                r["router"],
                f"{r['load']:.2f}",
                f"{r['rate_qps']:.1f}",
                f"{r['growth_fraction']:.3f} ± {r['growth_fraction_ci95']:.3f}",
                r["verdict"],
                f"{r['throughput_qps']:.2f}",
                f"{r['latency_mean_s']:.2f}",
                f"{r['latency_p99_s']:.2f}",
                f"{r['idle_fraction']:.3f}",
                f"{r['batch_share_max']:.3f}",
            ]
            for r in rows
        ],
    )
    md = (
        f"K = {K} engines of Fig. 1 (b = 512, M = 256, t(b') = 45.5 ms + 0.18 ms/token x "
        f"(b' - 64)^+, a assumed), Sarathi in each, requests Poisson(129) + Poisson(112) "
        f"tokens; rho = lambda (m_p + m_d) / (K b / t_b); {horizon:.0f} s per run, {S} seeds; "
        f"'grows' when the 95% CI of the token growth lies above {GROWTH_THRESHOLD:.0%} of "
        "the offered tokens/s.\n\n"
        + table
        + "\n\n"
        + "\n".join(f"- {'PASS' if ok else 'FAIL'}: {name}" for name, ok in checks)
    )
    g_title = "growth of tokens in the network / offered (95% CI)"
    l_title = "mean end-to-end latency below capacity (95% CI)"
    plot = dict(
        kind="curves",
        panels={g_title: growth_panel, l_title: latency_panel},
        axes={
            g_title: ("load rho (of K b / t_b)", "growth / offered"),
            l_title: ("load rho (of K b / t_b)", "latency (s)"),
        },
    )
    return Report(
        "routing", f"Paper 004, Prop. 1: {K} engines behind a router", rows, md, all(ok for _, ok in checks), plot
    )


# Fig. 8 (notes/004.md §3-§5): the short task is (32, 32) tokens, the long one (512, 32), both
# Poisson; type A visits agent 0 then agent 1, type B agent 1 then agent 0; b = 768 and every
# batch lasts one slot (c = 1 s standing for one slot, a = 0). M = b (no request cap binds).
RS_SHORT = Independent(Poisson(32.0), Poisson(32.0), name="short")
RS_LONG = Independent(Poisson(512.0), Poisson(32.0), name="long")
RS_AGENT = dict(budget=768, max_requests=768, c_s=1.0, a_s_per_token=0.0, b0=0)
RS_LOAD = 0.9
# Agent 0 serves A short and B long; agent 1 B short and A long. "unstable": each agent gives
# priority to its long, exiting class (B at agent 0, A at agent 1); "stable": the swap.
RS_ORDERS = {"unstable": ((1, 0), (0, 1)), "stable": ((0, 1), (1, 0))}


def rs_config(orders, horizon: float, burn_in: float, table_size: int) -> NetworkConfig:
    """The Rybko-Stolyar network of Fig. 8 with per-agent type priorities `orders`."""
    base = NetworkConfig(
        topology="routes",
        agents=2,
        workload=((RS_SHORT, RS_LONG), (RS_SHORT, RS_LONG)),
        routes=((0, 1), (1, 0)),
        policy="priority",
        type_orders=orders,
        horizon_s=horizon,
        burn_in_s=burn_in,
        table_size=table_size,
        snapshots=64,
    )
    return enough_steps(base, rs_rates(base), **RS_AGENT)


def rs_rates(config: NetworkConfig) -> np.ndarray:
    """Equal rates per type (per slot) at load 0.9 at each agent: 0.9 b / (64 + 544) each."""
    return rates_for_load(config, RS_LOAD, np.full(2, float(RS_AGENT["budget"])))


def rybko_stolyar(quick: bool = False, seeds: int | None = None, progress=None) -> Report:
    """Fig. 8: unstable and stable priorities in the RS network (module docstring)."""
    S = seeds or (3 if quick else 6)
    require_int(S, "--seeds (the growth CI needs at least 3 seeds)", lo=3, hi=4096)
    horizon, burn_in = (1200.0, 200.0) if quick else (4000.0, 500.0)
    Q = 4096 if quick else 8192
    rows, panels, verdicts = [], {"requests in the network": {}, "tokens in the network": {}}, {}
    declare(progress, len(RS_ORDERS))  # one unit per priority order
    for name, orders in RS_ORDERS.items():
        cfg = rs_config(orders, horizon, burn_in, Q)
        rates = rs_rates(cfg)
        params = make_params(cfg, rates=rates, **RS_AGENT)
        m = simulate(cfg, params, range(S), warn=False).metrics
        # The verdict is on the requests: under the unstable priorities the tokens swing between
        # the two long classes with a growing amplitude (Fig. 8, right), a noisy slope.
        row = dict(
            priority=name,
            orders=str(orders),
            load=RS_LOAD,
            rate_per_type=float(rates[0]),
            **_growth_row(m, float(rates.sum()), S, by="requests"),
            throughput_per_slot=float(m["throughput_requests_per_s"].mean()),
            requests_end=float(m["requests_end"].mean()),
            tokens_end=float(m["tokens_end"].mean()),
            idle_fraction=float(m["idle_fraction_mean"].mean()),
        )
        rows.append(row)
        verdicts[name] = row["verdict"]
        # Fig. 8's curves: requests and tokens in the network at every event of seed 0.
        traj = simulate(cfg, params, [0], record=True, warn=False).trajectories
        kind = traj["kind"][0]
        keep = np.flatnonzero(np.isin(kind, (KIND_ARRIVAL, KIND_BATCH, KIND_FLUSH)))
        keep = keep[np.unique(np.linspace(0, keep.size - 1, 1500).astype(int))]
        t = traj["t_hi"][0][keep].astype(np.float64) + traj["t_lo"][0][keep]
        for key, title in (("requests", "requests in the network"), ("tokens", "tokens in the network")):
            panels[title][name] = (t, traj[key][0][keep].astype(float), np.zeros(keep.size))
        tick(progress, name)
    return _rs_report(rows, verdicts, panels, horizon, S)


def _rs_report(rows, verdicts, panels, horizon, S) -> Report:
    checks = [
        ("priority to the long, exiting class grows without bound (Fig. 8, top)", verdicts["unstable"] == "grows"),
        ("the swapped priorities stay bounded (Fig. 8, bottom)", verdicts["stable"] == "bounded"),
    ]
    table = markdown_table(
        [
            "priority",
            "type orders (agent 0, agent 1)",
            "request growth / slot",
            "growth / offered requests",
            "token growth / slot",
            "verdict",
            "requests at end",
            "throughput / slot",
        ],
        [
            [
                r["priority"],
                r["orders"],
                f"{r['request_growth_per_s']:.3f} ± {r['request_growth_ci95']:.3f}",
                f"{r['growth_fraction']:.3f} ± {r['growth_fraction_ci95']:.3f}",
                f"{r['growth_tokens_per_s']:.1f} ± {r['growth_ci95']:.1f}",
                r["verdict"],
                f"{r['requests_end']:.0f}",
                f"{r['throughput_per_slot']:.3f}",
            ]
            for r in rows
        ],
    )
    md = (
        f"Rybko-Stolyar network of Fig. 8: two agents, b = 768, every batch one slot, types A "
        f"(agent 0 then 1) and B (agent 1 then 0), short tasks Poisson (32, 32) and long ones "
        f"Poisson (512, 32) tokens, {rows[0]['rate_per_type']:.4f} requests per slot per type "
        f"(load {RS_LOAD} at each agent); {horizon:.0f} slots, {S} seeds; growth = least-squares "
        "slope of the requests in the network over the snapshots after the burn-in, 'grows' "
        f"when its 95% CI lies above {GROWTH_THRESHOLD:.0%} of the offered requests per slot "
        "(the tokens swing between the two long classes, a noisy slope).\n\n"
        + table
        + "\n\n"
        + "\n".join(f"- {'PASS' if ok else 'FAIL'}: {name}" for name, ok in checks)
    )
    plot = dict(
        kind="curves", panels=panels, axes={title: ("time (slots), seed 0", title.split(" in ")[0]) for title in panels}
    )
    return Report(
        "rybko_stolyar", "Paper 004, Fig. 8: the Rybko-Stolyar network", rows, md, all(ok for _, ok in checks), plot
    )


# Conjecture 1's network with every agent at the same load (assumed: the paper gives no sizes;
# equal per-agent work puts all four agents near the condition at once, the hardest case for
# the conjecture): each task is Fig. 1's request, Poisson(129) + Poisson(112) tokens.
FORK_JOIN_LAWS = (FIG1_POISSON,) * 4


def fork_join(quick: bool = False, seeds: int | None = None, progress=None) -> Report:
    """Conjecture 1: the fork-join network below and above its per-agent condition."""
    # Eight seeds in the quick run too: with 3 or 6 the growth CI at rho = 0.8 over 120 s is
    # too wide to call it bounded (3 seeds: -0.004 +- 0.065 of one agent's offered tokens/s).
    S = seeds or 8
    require_int(S, "--seeds (the growth CI needs at least 3 seeds)", lo=3, hi=4096)
    loads = (0.8, 1.1) if quick else (0.8, 0.95, 1.05)
    horizon, burn_in = (120.0, 30.0) if quick else (240.0, 60.0)
    base = NetworkConfig(
        topology="fork_join",
        agents=4,
        workload=(FORK_JOIN_LAWS,),
        horizon_s=horizon,
        burn_in_s=burn_in,
        table_size=1024,
    )
    kw = dict(
        budget=FIG1["budget"],
        max_requests=FIG1["max_requests"],
        c_s=FIG1["c_s"],
        a_s_per_token=FIG1["a_s_per_token"],
        b0=FIG1["b0"],
    )
    caps = np.full(4, capacity_tokens_per_s(FIG1["budget"], FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"]))
    rates = [rates_for_load(base, rho, caps) for rho in loads]
    cfg = enough_steps(base, rates[-1], **kw)
    # One unit per load. Every run shares one compilation, so the runner reports its blocks
    # through a Share of the units: the compilation shows as a phase, the ETA counts the runs.
    declare(progress, len(loads))
    results = simulate_points(
        cfg,
        [make_params(cfg, rates=r, **kw) for r in rates],
        range(S),
        warn=False,
        progress=share(progress, 0, len(loads), "loads x seeds"),
    )
    # Growth is measured against one agent's offered tokens/s, since the condition is per agent:
    # above it, agent 0 grows at (1 - 1/rho) of its input and the agents after it receive
    # exactly their capacity, so the network's growth is that of one agent, not of four.
    per_agent = float((rates[0] @ stage_work(cfg)).max() / rates[0].sum())
    rows, panel, verdicts = [], ([], [], []), {}
    for rho, r, res in zip(loads, rates, results):
        m = res.metrics
        row = dict(
            load=rho,
            rate_qps=float(r.sum()),
            **_growth_row(m, float(r.sum()) * per_agent, S),
            throughput_qps=float(m["throughput_requests_per_s"].mean()),
            latency_mean_s=float(m["latency_mean_s"].mean()),
            latency_p99_s=float(m["latency_p99_s"].mean()),
            mean_tasks=float(m["mean_requests_in_system"].mean()),
        )
        rows.append(row)
        verdicts[rho] = row["verdict"]
        for lst, val in zip(panel, (rho, row["growth_fraction"], row["growth_fraction_ci95"])):
            lst.append(val)
    checks = [
        (
            "bounded at every load below the per-agent condition (Conjecture 1)",
            all(verdicts[rho] == "bounded" for rho in loads if rho < 1),
        ),
        ("grows above it", all(verdicts[rho] == "grows" for rho in loads if rho > 1)),
    ]
    table = markdown_table(
        [
            "rho (every agent)",
            "qps",
            "growth / one agent's offered",
            "verdict",
            "throughput (qps)",
            "mean latency (s)",
            "p99 latency (s)",
            "mean tasks in network",
        ],
        [
            [
                f"{r['load']:.2f}",
                f"{r['rate_qps']:.2f}",
                f"{r['growth_fraction']:.3f} ± {r['growth_fraction_ci95']:.3f}",
                r["verdict"],
                f"{r['throughput_qps']:.2f}",
                f"{r['latency_mean_s']:.2f}",
                f"{r['latency_p99_s']:.2f}",
                f"{r['mean_tasks']:.0f}",
            ]
            for r in rows
        ],
    )
    md = (
        "Fork-join network of Conjecture 1: agent 0, then agents 1 and 2 in parallel, then "
        "agent 3 after the join; every agent is Fig. 1's engine (b = 512, M = 256, a = 0.18 "
        "ms/token assumed) running Sarathi, and every task is Poisson(129) + Poisson(112) "
        f"tokens, so all four agents run at the same load rho; {horizon:.0f} s per run, {S} "
        f"seeds; 'grows' when the 95% CI of the token growth lies above "
        f"{GROWTH_THRESHOLD:.0%} of one agent's offered tokens/s (the condition is per agent: "
        "above it agent 0 grows at (1 - 1/rho) of its input, and the agents after it receive "
        "exactly their capacity).\n\n"
        + table
        + "\n\n"
        + "\n".join(f"- {'PASS' if ok else 'FAIL'}: {name}" for name, ok in checks)
    )
    title = "growth of tokens in the network / one agent's offered (95% CI)"
    plot = dict(
        kind="curves",
        panels={title: {"fork-join": panel}},
        axes={title: ("load rho at every agent", "growth / one agent's offered")},
    )
    return Report(
        "fork_join", "Paper 004, Conjecture 1: the fork-join network", rows, md, all(ok for _, ok in checks), plot
    )


EXPERIMENTS = {f.__name__: f for f in (routing, fork_join, rybko_stolyar)}
