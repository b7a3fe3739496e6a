"""What one host device per core gains: the same runs with 1 CPU device and with one per core.

    python -m benchmarks.bench_cores [--quick] [--out benchmarks/results/cores_speed.json]

The command line makes one host CPU device per core before JAX starts (`jaxsched.cli.devices`)
and the runner shards each seed chunk over the devices (`jaxsched.run`). This benchmark runs
each case in a fresh subprocess per device count (the count is fixed when JAX starts), with
`JAXSCHED_CPU_DEVICES` set exactly as the command line reads it. In each subprocess the first
`simulate` call compiles and warms up and the best of two identical timed calls is kept. gain =
time on 1 device / time on N devices, both from this run. equal: the SHA-256 of every metric
array of every seed is the same for both device counts (the script exits 1 otherwise).

Cases: dp FCFS and BF-IO H = 0 at (G, B, R) = (16, 72, 64) with 1024 seeds, as in bench_dp;
the kv engine's default configuration with 500 requests and 256 seeds; the budget engine as in
bench_budget (Fig. 1, Sarathi at 14.3 qps, Q = 1024, 60 s) with 256 seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent

# (seeds, steps or horizon) per case; --quick shrinks both for a smoke test.
FULL = {"dp_fcfs": (1024, 800), "dp_bfio": (1024, 480), "kv": (256, 500), "budget": (256, 60.0)}
QUICK = {"dp_fcfs": (64, 100), "dp_bfio": (64, 60), "kv": (64, 200), "budget": (16, 20.0)}


def make_case(name: str, size) -> tuple:
    """(config, params or None) of a case (imports JAX: call inside the subprocess)."""
    import jaxsched as js

    if name.startswith("dp_"):
        policy = name[3:]
        return js.dp.DPConfig(
            num_workers=16, slots_per_worker=72, pool_size=64, policy=policy, lookahead_steps=0, num_steps=int(size)
        ), None
    if name == "kv":
        return js.kv.KVConfig(num_requests=int(size)), None
    from benchmarks.bench_budget import RATE, _config
    from jaxsched.budget.config import keywords_read_by
    from jaxsched.budget.experiments import FIG1

    cfg = _config("sarathi", float(size))
    return cfg, js.budget.make_params(cfg, rates=[RATE], **keywords_read_by(cfg.policy, FIG1))


def child(name: str, quick: bool) -> None:
    """Runs one case on the device count the environment asks for; prints one JSON line."""
    from jaxsched.cli.devices import use_every_core

    use_every_core()
    import hashlib

    import jax

    from jaxsched.run import simulate

    seeds, size = (QUICK if quick else FULL)[name]
    cfg, params = make_case(name, size)
    first = time.perf_counter()
    res = simulate(cfg, params, range(seeds))
    first = time.perf_counter() - first
    timed = []
    for _ in range(2):
        t0 = time.perf_counter()
        res = simulate(cfg, params, range(seeds))
        timed.append(time.perf_counter() - t0)
    h = hashlib.sha256()
    for k in sorted(res.metrics):
        h.update(k.encode() + res.metrics[k].tobytes())
    print(
        json.dumps(
            dict(
                case=name,
                devices=jax.local_device_count(),
                seeds=seeds,
                first_call_s=first,
                timed_s=min(timed),
                digest=h.hexdigest(),
            )
        )
    )


def run_child(name: str, devices: int, quick: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAXSCHED_CPU_DEVICES=str(devices), JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "benchmarks.bench_cores", "--child", name]
    r = subprocess.run(cmd + (["--quick"] if quick else []), env=env, cwd=_ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{name} on {devices} devices failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small runs (a smoke test)")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (.md written beside it)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cases = QUICK if args.quick else FULL
    if args.child is not None:
        child(args.child, args.quick)
        return 0
    from benchmarks.bench_dp import environment
    from jaxsched.cli.devices import requested_devices
    from jaxsched.results import markdown_table

    n = requested_devices({})
    if n < 2:
        print("bench_cores: this machine has one core; nothing to compare", file=sys.stderr)
        return 0
    rows = []
    for name in cases:
        one, many = run_child(name, 1, args.quick), run_child(name, n, args.quick)
        rows.append(
            dict(
                case=name,
                seeds=one["seeds"],
                devices=many["devices"],
                one_device_s=one["timed_s"],
                all_devices_s=many["timed_s"],
                gain=one["timed_s"] / many["timed_s"],
                equal=one["digest"] == many["digest"],
            )
        )
        print(
            f"[bench_cores] {name}: 1 device {one['timed_s']:.2f} s, {many['devices']} devices "
            f"{many['timed_s']:.2f} s, gain {rows[-1]['gain']:.2f}, equal {rows[-1]['equal']}",
            file=sys.stderr,
            flush=True,
        )
    out = args.out or _HERE / "results" / f"cores_speed{'_quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    env = environment()
    out.write_text(json.dumps(dict(environment=env, rows=rows), indent=1))
    table = markdown_table(
        ["case", "seeds", "devices", "1 device (s)", "all devices (s)", "gain", "bitwise equal"],
        [
            [
                r["case"],
                str(r["seeds"]),
                str(r["devices"]),
                f"{r['one_device_s']:.2f}",
                f"{r['all_devices_s']:.2f}",
                f"{r['gain']:.2f}x",
                "yes" if r["equal"] else "NO",
            ]
            for r in rows
        ],
    )
    md = (
        f"# One host device per core\n\n{env}\n\n{table}\n\ngain = 1-device time / all-devices "
        "time, best of two timed calls each, in fresh subprocesses of this run.\n"
    )
    out.with_suffix(".md").write_text(md)
    print(md)
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
