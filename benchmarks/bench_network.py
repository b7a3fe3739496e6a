"""Speed of the network engine (paper 004 §4): simulated events and batches per second for 1,
64 and 1024 seeds against the plain-Python reference run one seed at a time, in the same run.

    python -m benchmarks.bench_network [--quick] [--out benchmarks/results/network_speed.json]

Configurations: `parallel`, K = 2 of Fig. 1's engines (b = 512, M = 256, a = 0.18 ms/token
assumed) behind the fewest-tokens router at rho = 0.85, Poisson(129) + Poisson(112) tokens,
HORIZON_S simulated seconds; `rs`, the Rybko-Stolyar network of Fig. 8 with the stable
priorities (bounded queues) for RS_SLOTS slots. Both with Q slots per agent. Engine:
`jaxsched.run.simulate` over S seeds; a first call compiles and warms up, the second identical
call is timed (it returns NumPy metrics, so all device work is included). Reference
(`tests/reference/network.py::simulate`) on the same requests (`engine_inputs`), one seed after
another for about REF_TARGET_S seconds (at least one seed). ratio = engine / reference batches
per second from this run. The engine's batch counts, departures and steps must equal the
reference's on the seeds both ran; the script exits 1 otherwise. Writes JSON to --out and the
markdown table next to it (.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_dp import environment, environment_line, write_report
from jaxsched.budget.config import capacity_tokens_per_s
from jaxsched.budget.experiments import FIG1
from jaxsched.network import NetworkConfig, enough_steps, make_params, rates_for_load, simulate
from jaxsched.network.experiments import FIG1_POISSON, RS_AGENT, RS_ORDERS, rs_config, rs_rates
from jaxsched.results import markdown_table
from tests.reference import network as ref

_HERE = Path(__file__).resolve().parent
HORIZON_S = 30.0
RS_SLOTS = 300.0
Q = 512
# Where the speed table starts each configuration's rings instead (`grow_table`: a run that
# rejects a task runs again at twice the slots): no run of 256 needed more here. Bitwise the
# results of Q (jaxsched.tables).
GROWN_Q = {"parallel": 256, "rs": 128}
SEEDS = (1, 64, 1024)
QUICK_SEEDS = (1, 16)
REF_TARGET_S = 20.0
QUICK_REF_TARGET_S = 3.0
AGENT = dict(
    budget=FIG1["budget"],
    max_requests=FIG1["max_requests"],
    c_s=FIG1["c_s"],
    a_s_per_token=FIG1["a_s_per_token"],
    b0=FIG1["b0"],
)


def log(msg: str) -> None:
    print(f"[bench_network {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def case(name: str, quick: bool):
    """(config, params, reference keywords) of configuration `name`."""
    if name == "rs":
        cfg = rs_config(RS_ORDERS["stable"], RS_SLOTS / (3 if quick else 1), 0.0, Q)
        p = make_params(cfg, rates=rs_rates(cfg), **RS_AGENT)
        agent = dict(
            budget=RS_AGENT["budget"],
            max_requests=RS_AGENT["max_requests"],
            c=RS_AGENT["c_s"],
            a=RS_AGENT["a_s_per_token"],
            b0=RS_AGENT["b0"],
        )
        kw = dict(
            topology="routes",
            K=2,
            agents=[agent] * 2,
            policy="priority",
            routes=cfg.routes,
            type_orders=cfg.type_orders,
        )
    else:
        base = NetworkConfig(
            topology="parallel",
            agents=2,
            workload=(FIG1_POISSON,),
            router="fewest_tokens",
            horizon_s=HORIZON_S / (3 if quick else 1),
            table_size=Q,
        )
        cap = capacity_tokens_per_s(FIG1["budget"], FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"])
        rates = rates_for_load(base, 0.85, [cap, cap])
        cfg = enough_steps(base, rates, **AGENT)
        p = make_params(cfg, rates=rates, **AGENT)
        agent = dict(
            budget=FIG1["budget"],
            max_requests=FIG1["max_requests"],
            c=FIG1["c_s"],
            a=FIG1["a_s_per_token"],
            b0=FIG1["b0"],
        )
        kw = dict(topology="parallel", K=2, agents=[agent] * 2, policy="sarathi", router="fewest_tokens")
    kw.update(horizon=cfg.horizon_s, burn_in=cfg.burn_in_s, table_size=Q, snapshots=cfg.snapshots)
    return cfg, p, kw


def bench_engine(cfg, p, S: int) -> dict:
    simulate(cfg, p, range(S), warn=False)
    t0 = time.perf_counter()
    m = simulate(cfg, p, range(S), warn=False).metrics
    dt = time.perf_counter() - t0
    return dict(
        seconds=dt,
        batches=float(m["num_batches"].sum()),
        events=float(m["num_steps"].sum()),
        num_batches=m["num_batches"],
        departed=m["num_departed"],
    )


def bench_reference(cfg, p, kw: dict, target_s: float) -> dict:
    counts, departed, events, spent = [], [], 0, 0.0
    n_cand = int(float(np.asarray(p.arrival.rate_max)) * cfg.horizon_s * 1.5) + 200
    while not counts or spent < target_s:
        reqs = ref.engine_inputs(cfg, p, len(counts), n_cand)
        t0 = time.perf_counter()
        out = ref.simulate(reqs, **kw)
        spent += time.perf_counter() - t0
        counts.append(out["metrics"]["num_batches"])
        departed.append(out["metrics"]["num_departed"])
        events += len(out["events"])
    return dict(
        seeds=len(counts),
        seconds=spent,
        per_s=sum(counts) / spent,
        events_per_s=events / spent,
        num_batches=np.array(counts, float),
        departed=np.array(departed, float),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_network", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 and 16 seeds, a third of the horizon")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/network_speed[_quick].json); markdown beside it (.md)",
    )
    a = ap.parse_args(argv)
    out = a.out or _HERE / "results" / ("network_speed_quick.json" if a.quick else "network_speed.json")
    env = environment()
    rows, ok = [], True
    for name in ("parallel", "rs"):
        cfg, p, kw = case(name, a.quick)
        base = bench_reference(cfg, p, kw, QUICK_REF_TARGET_S if a.quick else REF_TARGET_S)
        log(f"{name}: reference {base['per_s']:.4g} batches/s over {base['seeds']} seeds")
        for S in QUICK_SEEDS if a.quick else SEEDS:
            r = bench_engine(cfg, p, S)
            k = min(S, base["seeds"])
            equal = bool(
                np.array_equal(r["num_batches"][:k], base["num_batches"][:k])
                and np.array_equal(r["departed"][:k], base["departed"][:k])
            )
            ok &= equal
            per_s = r["batches"] / r["seconds"]
            rows.append(
                dict(
                    config=name,
                    seeds=S,
                    engine_batches_per_s=per_s,
                    engine_events_per_s=r["events"] / r["seconds"],
                    engine_s=r["seconds"],
                    batches_per_seed=r["batches"] / S,
                    reference_batches_per_s=base["per_s"],
                    reference_events_per_s=base["events_per_s"],
                    reference_seeds=base["seeds"],
                    ratio=per_s / base["per_s"],
                    equal_on=k,
                    equal=equal,
                )
            )
            log(
                f"{name} S={S}: {per_s:.4g} batches/s ({r['seconds']:.2f} s), ratio "
                f"{per_s / base['per_s']:.3g}, equal {equal}"
            )
    md = "\n".join(
        [
            f"# Network engine speed{' (--quick)' if a.quick else ''}",
            "",
            f"{environment_line(env)}.",
            "",
            f"parallel: K = 2 Fig. 1 engines, fewest-tokens router, rho = 0.85; rs: the "
            f"Rybko-Stolyar network, stable priorities; Q = {Q} per agent. Engine: the second of two "
            "identical `simulate` calls over S seeds; reference: `tests/reference/network.py` one "
            "seed at a time on the same requests; ratio = engine / reference batches/s, from this "
            "run. equal: batch counts and departures equal on the seeds both ran.",
            "",
            markdown_table(
                [
                    "config",
                    "seeds",
                    "engine batches/s",
                    "engine events/s",
                    "engine s",
                    "batches per seed",
                    "reference batches/s",
                    "ratio",
                    "equal (on k)",
                ],
                [
                    [
                        r["config"],
                        str(r["seeds"]),
                        f"{r['engine_batches_per_s']:.4g}",
                        f"{r['engine_events_per_s']:.4g}",
                        f"{r['engine_s']:.3g}",
                        f"{r['batches_per_seed']:.0f}",
                        f"{r['reference_batches_per_s']:.4g}",
                        f"{r['ratio']:.3g}",
                        f"{'yes' if r['equal'] else 'NO'} ({r['equal_on']})",
                    ]
                    for r in rows
                ],
            ),
            "",
        ]
    )
    return write_report(out, dict(environment=env, rows=rows), md, ok, log)


if __name__ == "__main__":
    sys.exit(main())
