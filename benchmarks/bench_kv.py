"""Speed of the kv engine (paper 001, WAIT / Nested WAIT): simulated epochs and completed
requests per second for 1, 64 and 1024 seeds against the plain-Python reference run one seed at
a time, in the same run.

    python -m benchmarks.bench_kv [--quick] [--seeds S ...] [--out benchmarks/results/kv_speed.json]

Configuration: experiment E1 at its first load (`jaxsched.kv.experiments.EXPERIMENTS["e1"]`:
10-token prompts, 10 and 20 decode tokens at equal rates, the kv defaults), rho = LOAD = 0.5
(1709 requests/s), the paper's hardware (d0 = 10 ms, d1 = 1 us/token), C = 1.2 M* (the
experiments' "mstar" rule, 12,000 tokens) and each policy's threshold rule (`thresholds_for`:
WAIT n = (19, 19), Nested WAIT n = (38, 20)); HORIZON_S simulated seconds per seed from an
empty system, Q table slots and A arrivals per epoch as the E1 runner sizes this point. An
epoch is one decision epoch of docs/kv-semantics.md §5 (one scan step: an insertion only, a
batch, an idle jump to the next arrival, or the end), counted by the metric num_epochs;
requests are num_completed. Nested WAIT runs 1 and 64 seeds only (MAX_SEEDS; --quick: both
policies 1 and 16; --seeds: the counts given, both policies). Engine: `jaxsched.kv.simulate`
over S seeds; a first call over one seed chunk (`jaxsched.run.default_seed_chunk`: the same
compiled shape) compiles and warms up, then the call over all S seeds is timed (it returns
NumPy metrics, so all device work is included); epochs/s = the seeds' epochs / seconds,
requests/s likewise. Reference (`tests/reference/kv.py::simulate`) on the same requests (the
engine's gaps, `arrival_stream`), one seed after another for about REF_TARGET_S seconds (at least one seed).
ratio = engine /
reference epochs/s (and requests/s) from this run. The engine's epoch, batch and completed
request counts must equal the reference's on the seeds both ran; the script exits 1
otherwise. Writes JSON to --out and the markdown table next to it (.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np

from benchmarks.bench_dp import check_seed_option, environment, environment_line, write_report
from jaxsched.kv import ENGINE, KVConfig, make_params, simulate
from jaxsched.kv.experiments import EXPERIMENTS, HARDWARE, capacity_for, thresholds_for
from jaxsched.results import markdown_table
from jaxsched.run import default_seed_chunk
from jaxsched.workload.arrivals import arrival_stream
from tests.reference import kv as ref

_HERE = Path(__file__).resolve().parent
EXPERIMENT = "e1"
LOAD = 0.5
# From empty, the first request completes after ~0.25 s and the queue settles within about one
# relaxation time (0.64 s at this load): 1 s per seed holds ~1,100 completions and ~60 batches
# of a settled system. Shorter runs are mostly warm-up (WAIT idles to every arrival until its
# thresholds fill, and no request completes before 0.25 s), which flatters the reference: its
# epochs cost O(requests in the system), the engine's O(Q) whatever the state. At 1 s WAIT
# takes about a minute at 1024 seeds on 2 cores (~0.45 ms per seed-epoch at Q = 4096); the
# whole run about 2.5 minutes.
HORIZON_S = 1.0
QUICK_HORIZON_S = 0.5
# The table the E1 runner starts this point with (`runner._sizes`: the next power of two
# above 4 x the ~550 requests in flight); it never loses an arrival here (<= ~650 in the system).
Q = 4096
# Where the speed table starts its table instead (`grow_table`: a run that loses an arrival runs
# again at 2048, ...): above the ~650 requests in flight, and bitwise the results of Q.
GROWN_Q = 1024
# Arrivals examined per epoch, as the E1 runner (up to ~34 arrivals are due per 20 ms batch).
A = 64
SEEDS = (1, 64, 1024)
QUICK_SEEDS = (1, 16)
POLICIES = ("wait", "nested_wait")
# Nested WAIT has ~3x WAIT's epochs per simulated second (an idle jump per arrival while the
# entry queues fill), ~3 minutes at 1024 seeds: it runs 1 and 64 seeds only (--quick: both).
MAX_SEEDS = {"wait": 1024, "nested_wait": 64}
REF_TARGET_S = 15.0
QUICK_REF_TARGET_S = 2.0


def log(msg: str) -> None:
    print(f"[bench_kv {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def case(policy: str, horizon: float, table_size: int = Q) -> tuple[KVConfig, object, dict]:
    """(config, params, keywords of `tests.reference.kv.simulate` but gaps and seed) of E1 at
    LOAD under `policy`: runs of `horizon` simulated seconds (no request count)."""
    exp = EXPERIMENTS[EXPERIMENT]
    C, _ = capacity_for(exp, LOAD, "mstar")
    hw = dataclasses.replace(HARDWARE, capacity_tokens=C)
    types = exp.types(LOAD, hw)
    th, _ = thresholds_for(exp, policy, types)
    # Every epoch runs a batch (>= d0 long), inserts an arrival or idles to the next one.
    max_steps = int(horizon / hw.d0_s + 2 * types.total_rate * horizon) + 1024
    cfg = KVConfig(
        prefill_tokens=exp.prefill,
        decode_tokens=exp.decode,
        policy=policy,
        num_requests=None,
        horizon_s=horizon,
        table_size=table_size,
        arrivals_per_step=A,
        max_steps=max_steps,
    )
    p = make_params(
        cfg, rates=types.rates, d0_s=hw.d0_s, d1_s_per_token=hw.d1_s_per_token, capacity_tokens=C, thresholds=th
    )
    kw = dict(
        prefill=cfg.prefill_tokens,
        decode=cfg.decode_tokens,
        policy=policy,
        rates=types.rates.tolist(),
        d0=float(p.d0_s),
        d1=float(p.d1_s_per_token),
        capacity=int(p.capacity_tokens),
        thresholds=np.asarray(p.thresholds).tolist(),
        horizon_s=horizon,
        table_size=table_size,
        arrivals_per_step=A,
        max_steps=max_steps,
        segment_bounds=cfg.segment_bounds,
        hist_octave_bits=cfg.hist_octave_bits,
        batch_limit=int(p.batch_limit),
        token_limit=int(p.token_limit),
    )
    return cfg, p, kw


def bench_engine(cfg: KVConfig, p, S: int) -> dict:
    simulate(cfg, p, range(default_seed_chunk(ENGINE, cfg, S)), warn=False)
    t0 = time.perf_counter()
    m = simulate(cfg, p, range(S), warn=False).metrics
    dt = time.perf_counter() - t0
    return dict(
        seconds=dt,
        epochs=float(m["num_epochs"].sum()),
        completed=float(m["num_completed"].sum()),
        num_epochs=m["num_epochs"],
        num_batches=m["num_batches"],
        num_completed=m["num_completed"],
    )


def reference_run(cfg: KVConfig, p, kw: dict, seed: int) -> tuple[dict, float]:
    """(metrics, seconds of `simulate` alone) of the reference on seed `seed`'s candidates."""
    n = int(float(p.rate_max) * cfg.horizon_s * 1.5) + 256
    while True:
        gaps = arrival_stream(cfg, p, seed, n)["gap_s"]
        t0 = time.perf_counter()
        try:
            out = ref.simulate(gaps=gaps, seed=seed, **kw)
        except IndexError:  # the run needed more candidates than fetched
            n *= 2
            continue
        return out["metrics"], time.perf_counter() - t0


def bench_reference(cfg: KVConfig, p, kw: dict, target_s: float, max_seeds: int | None = None) -> dict:
    rows, spent = [], 0.0
    while not rows or (spent < target_s and (max_seeds is None or len(rows) < max_seeds)):
        m, dt = reference_run(cfg, p, kw, len(rows))
        spent += dt
        rows.append(m)
    col = lambda k: np.array([m[k] for m in rows], float)
    epochs, completed = col("num_epochs"), col("num_completed")
    return dict(
        seeds=len(rows),
        seconds=spent,
        per_s=epochs.sum() / spent,
        requests_per_s=completed.sum() / spent,
        num_epochs=epochs,
        num_batches=col("num_batches"),
        num_completed=completed,
    )


COUNTS = ("num_epochs", "num_batches", "num_completed")


def seed_counts(policy: str, quick: bool, asked: list[int] | None) -> list[int]:
    """Seed counts to time for `policy`: --quick's, the ones asked for, or SEEDS up to the
    policy's MAX_SEEDS."""
    if quick:
        return list(QUICK_SEEDS)
    if asked is not None:
        return list(dict.fromkeys(asked))
    return [s for s in SEEDS if s <= MAX_SEEDS[policy]]


def equal_counts(engine: dict, base: dict, k: int) -> bool:
    """Epoch, batch and completion counts equal on the first k seeds."""
    return all(np.array_equal(engine[c][:k], base[c][:k]) for c in COUNTS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_kv", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 and 16 seeds, 0.5 s horizon")
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON output (default benchmarks/results/kv_speed[_quick].json); markdown beside it (.md)",
    )
    ap.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        metavar="S",
        help=f"seed counts to time for both policies (default {' '.join(map(str, SEEDS))}, "
        f"Nested WAIT up to {MAX_SEEDS['nested_wait']}); larger counts pay on a GPU",
    )
    a = ap.parse_args(argv)
    check_seed_option(ap, a.seeds, a.quick)
    out = a.out or _HERE / "results" / ("kv_speed_quick.json" if a.quick else "kv_speed.json")
    horizon = QUICK_HORIZON_S if a.quick else HORIZON_S
    env = dict(environment(), jax_enable_x64=bool(jax.config.jax_enable_x64))
    rows, setup, ok = [], {}, True
    for policy in POLICIES:
        cfg, p, kw = case(policy, horizon)
        setup[policy] = dict(
            capacity_tokens=kw["capacity"],
            thresholds=kw["thresholds"],
            rates_req_s=kw["rates"],
            table_size=Q,
            arrivals_per_step=A,
            max_steps=cfg.max_steps,
        )
        base = bench_reference(cfg, p, kw, QUICK_REF_TARGET_S if a.quick else REF_TARGET_S)
        log(
            f"{policy}: reference {base['per_s']:.4g} epochs/s, {base['requests_per_s']:.4g} "
            f"requests/s over {base['seeds']} seeds"
        )
        for S in seed_counts(policy, a.quick, a.seeds):
            r = bench_engine(cfg, p, S)
            k = min(S, base["seeds"])
            equal = equal_counts(r, base, k)
            ok &= equal
            per_s, req_s = r["epochs"] / r["seconds"], r["completed"] / r["seconds"]
            rows.append(
                dict(
                    policy=policy,
                    seeds=S,
                    engine_epochs_per_s=per_s,
                    engine_requests_per_s=req_s,
                    engine_s=r["seconds"],
                    epochs_per_seed=r["epochs"] / S,
                    batches_per_seed=float(r["num_batches"].sum()) / S,
                    requests_per_seed=r["completed"] / S,
                    reference_epochs_per_s=base["per_s"],
                    reference_requests_per_s=base["requests_per_s"],
                    reference_seeds=base["seeds"],
                    ratio=per_s / base["per_s"],
                    ratio_requests=req_s / base["requests_per_s"],
                    equal_on=k,
                    equal=equal,
                )
            )
            log(
                f"{policy} S={S}: {per_s:.4g} epochs/s, {req_s:.4g} requests/s "
                f"({r['seconds']:.2f} s), ratio {per_s / base['per_s']:.3g} / "
                f"{req_s / base['requests_per_s']:.3g}, equal {equal}"
            )
    md = "\n".join(
        [
            f"# kv engine speed{' (--quick)' if a.quick else ''}",
            "",
            f"{environment_line(env)}.",
            "",
            f"E1 at rho = {LOAD} (C = 1.2 M*, the experiments' thresholds), {horizon:g} s per seed "
            f"from empty, Q = {Q}, A = {A}. Engine: epochs (or completed requests) / seconds of a "
            "`simulate` call over S seeds after a warm-up call on one seed chunk; reference: "
            "`tests/reference/kv.py` one seed at a time on the same requests; ratio = engine / "
            "reference epochs/s, requests ratio the same for completed requests/s, from this run. "
            "equal: epoch, batch and completion counts equal on the seeds both ran.",
            "",
            markdown_table(
                [
                    "policy",
                    "seeds",
                    "engine epochs/s",
                    "engine requests/s",
                    "engine s",
                    "epochs per seed",
                    "requests per seed",
                    "reference epochs/s",
                    "reference requests/s",
                    "ratio",
                    "requests ratio",
                    "equal (on k)",
                ],
                [
                    [
                        r["policy"],
                        str(r["seeds"]),
                        f"{r['engine_epochs_per_s']:.4g}",
                        f"{r['engine_requests_per_s']:.4g}",
                        f"{r['engine_s']:.3g}",
                        f"{r['epochs_per_seed']:.0f}",
                        f"{r['requests_per_seed']:.0f}",
                        f"{r['reference_epochs_per_s']:.4g}",
                        f"{r['reference_requests_per_s']:.4g}",
                        f"{r['ratio']:.3g}",
                        f"{r['ratio_requests']:.3g}",
                        f"{'yes' if r['equal'] else 'NO'} ({r['equal_on']})",
                    ]
                    for r in rows
                ],
            ),
            "",
        ]
    )
    return write_report(out, dict(environment=env, horizon_s=horizon, setup=setup, rows=rows), md, ok, log)


if __name__ == "__main__":
    sys.exit(main())
