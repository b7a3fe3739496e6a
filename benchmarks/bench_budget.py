"""Speed of the budget engine (paper 004): simulated batches per second for 1, 64 and 1024
seeds against the plain-Python reference run one seed at a time, in the same run.

    python -m benchmarks.bench_budget [--quick] [--out benchmarks/results/budget_speed.json]

Configuration: Fig. 1's engine (b = 512, M = 256, c = 45.5 ms, a = 0.18 ms/token, b0 = 64) and
requests (129 prefill + 112 decode tokens) at 14.3 qps (rho = 0.85), HORIZON_S simulated
seconds per seed, table of Q slots; policies sarathi (bounded queue) and vllm (a growing one).
Engine: `jaxsched.budget.simulate` over S seeds; a first call compiles and warms up, the second
identical call is timed (it returns NumPy metrics, so all device work is included); batches/s
= the seeds' batches / seconds. Reference (`tests/reference/budget.py::simulate`) on the same
requests (`request_stream`), one seed after another for about REF_TARGET_S seconds (at least
one seed). ratio = engine / reference batches/s from this run. The engine's batch count and
departures must equal the reference's on the seeds both ran; the script exits 1 otherwise.
Writes JSON to --out and the markdown table next to it (.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_dp import environment, environment_line, write_report
from jaxsched.budget import BudgetConfig, make_params, request_stream, simulate
from jaxsched.budget.config import keywords_read_by
from jaxsched.budget.experiments import FIG1
from jaxsched.results import markdown_table
from tests.reference import budget as ref
from tests.reference.kv import DF

_HERE = Path(__file__).resolve().parent
HORIZON_S = 60.0
QUICK_HORIZON_S = 30.0
RATE = 14.3
Q = 1024
# Where the speed table starts each policy's ring instead (`grow_table`: a run that rejects an
# arrival runs again at twice the slots): Sarathi never needs more than 256 slots here, vLLM
# needs 1024 in about one run in nine. Bitwise the results of Q (jaxsched.tables).
GROWN_Q = {"sarathi": 256, "vllm": 512}
SEEDS = (1, 64, 1024)
QUICK_SEEDS = (1, 16)
POLICIES = ("sarathi", "vllm")
REF_TARGET_S = 20.0
QUICK_REF_TARGET_S = 3.0


def log(msg: str) -> None:
    print(f"[bench_budget {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _config(policy: str, horizon: float) -> BudgetConfig:
    return BudgetConfig(policy=policy, horizon_s=horizon, table_size=Q, max_steps=40_000)


def bench_engine(policy: str, S: int, horizon: float) -> dict:
    cfg = _config(policy, horizon)
    p = make_params(cfg, rates=[RATE], **keywords_read_by(policy, FIG1))
    simulate(cfg, p, range(S), warn=False)
    t0 = time.perf_counter()
    res = simulate(cfg, p, range(S), warn=False)
    dt = time.perf_counter() - t0
    m = res.metrics
    n = float(m["num_batches"].sum())
    return dict(seconds=dt, batches=n, per_s=n / dt, num_batches=m["num_batches"], departed=m["num_departed"])


def bench_reference(policy: str, horizon: float, target_s: float) -> dict:
    cfg = _config(policy, horizon)
    p = make_params(cfg, rates=[RATE], **keywords_read_by(policy, FIG1))
    counts, departed, spent = [], [], 0.0
    while not counts or spent < target_s:
        seed = len(counts)
        s = request_stream(cfg, p, seed, int(RATE * horizon * 1.5) + 100)
        reqs = [
            (DF(np.float32(h), np.float32(lo)), int(t), int(a), int(b))
            for h, lo, t, a, b in zip(s["t_hi"], s["t_lo"], s["type"], s["vp"], s["vd"])
        ]
        t0 = time.perf_counter()
        out = ref.simulate(
            reqs,
            policy,
            horizon=horizon,
            table_size=Q,
            **{
                "budget": FIG1["budget"],
                "max_requests": FIG1["max_requests"],
                "prefill_cap": FIG1["prefill_cap"],
                "c": FIG1["c_s"],
                "a": FIG1["a_s_per_token"],
                "b0": FIG1["b0"],
            },
        )
        spent += time.perf_counter() - t0
        counts.append(len(out["batches"]))
        departed.append(out["metrics"]["num_departed"])
    return dict(
        seeds=len(counts),
        seconds=spent,
        per_s=sum(counts) / spent,
        num_batches=np.array(counts, float),
        departed=np.array(departed, float),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_budget", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 and 16 seeds, 30 s horizon")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/budget_speed[_quick].json); markdown beside it (.md)",
    )
    a = ap.parse_args(argv)
    out = a.out or _HERE / "results" / ("budget_speed_quick.json" if a.quick else "budget_speed.json")
    seeds = QUICK_SEEDS if a.quick else SEEDS
    horizon = QUICK_HORIZON_S if a.quick else HORIZON_S
    env = environment()
    rows, ok = [], True
    for policy in POLICIES:
        base = bench_reference(policy, horizon, QUICK_REF_TARGET_S if a.quick else REF_TARGET_S)
        log(f"{policy}: reference {base['per_s']:.4g} batches/s over {base['seeds']} seeds")
        for S in seeds:
            r = bench_engine(policy, S, horizon)
            k = min(S, base["seeds"])
            # The engine counts the batches starting in the window [0, horizon): all of them.
            equal = bool(
                np.array_equal(r["num_batches"][:k], base["num_batches"][:k])
                and np.array_equal(r["departed"][:k], base["departed"][:k])
            )
            ok &= equal
            rows.append(
                dict(
                    policy=policy,
                    seeds=S,
                    engine_batches_per_s=r["per_s"],
                    engine_s=r["seconds"],
                    batches_per_seed=r["batches"] / S,
                    reference_batches_per_s=base["per_s"],
                    reference_seeds=base["seeds"],
                    ratio=r["per_s"] / base["per_s"],
                    equal_on=k,
                    equal=equal,
                )
            )
            log(
                f"{policy} S={S}: {r['per_s']:.4g} batches/s ({r['seconds']:.2f} s), ratio "
                f"{r['per_s'] / base['per_s']:.3g}, equal {equal}"
            )
    md = "\n".join(
        [
            f"# Budget engine speed{' (--quick)' if a.quick else ''}",
            "",
            f"{environment_line(env)}.",
            "",
            f"Fig. 1's engine and requests at {RATE} qps, {horizon:g} s per seed, Q = {Q}. Engine: "
            "batches / seconds of the second of two identical `simulate` calls over S seeds; "
            "reference: `tests/reference/budget.py` one seed at a time on the same requests; ratio = "
            "engine / reference batches/s, from this run. equal: batch counts and departures equal "
            "on the seeds both ran.",
            "",
            markdown_table(
                [
                    "policy",
                    "seeds",
                    "engine batches/s",
                    "engine s",
                    "batches per seed",
                    "reference batches/s",
                    "ratio",
                    "equal (on k)",
                ],
                [
                    [
                        r["policy"],
                        str(r["seeds"]),
                        f"{r['engine_batches_per_s']:.4g}",
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
