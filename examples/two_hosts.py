"""A sweep split over two hosts with `jax.distributed`, launched here as two local processes.

Each "host" is one process of a two-process `jax.distributed` job (docs/multihost.md): both run
the same `jaxsched.sweep.run_sweep` call; for every point, process p simulates its contiguous
block of the seed list (`jaxsched.multihost.seed_block`), the per-seed results are gathered to
both, and only process 0 (`is_writer()`) writes the results file, so the two write one results
folder without racing. This script is both the launcher and the host program:

    python examples/two_hosts.py [--seeds 16] [--steps 1000] [--out results/two_hosts] [--quick]

starts `--host 0` and `--host 1` on this machine (CPU, a free localhost port as the
coordinator), waits for both, and prints each host's seed blocks and the merged results. On two
real machines, run the host program on each, with process 0's address:

    python examples/two_hosts.py --host 0 --coordinator host0.example.org:12345 --out /shared/run
    python examples/two_hosts.py --host 1 --coordinator host0.example.org:12345 --out /shared/run

Files in --out: sweep.csv (one row per point, written by host 0 from every host's seeds),
host0.json and host1.json (each host's process index and seed block per point) and host0.log,
host1.log (the local launcher's capture of each host's output).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HOSTS = 2
UNAVAILABLE = 77  # a host's exit status when jax.distributed cannot start on this platform


def host(a: argparse.Namespace) -> int:
    """The program every host runs: join the job, run the sweep, record the seed blocks."""
    import jax

    # The launcher's choice (library code never sets JAX flags): gloo carries cross-process
    # collectives on CPU; it is the default in recent JAX and named for older versions.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator_address=a.coordinator, num_processes=HOSTS, process_id=a.host, initialization_timeout=60
        )
    except Exception as e:  # no port, no gloo: the platform cannot run a job at all
        print(f"jax.distributed cannot start: {type(e).__name__}: {e}", file=sys.stderr)
        return UNAVAILABLE
    from jaxsched.dp import DPConfig
    from jaxsched.multihost import seed_block
    from jaxsched.sweep import run_sweep

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(a.seeds))
    base = DPConfig(num_workers=a.G, slots_per_worker=a.B, pool_size=2 * a.G, num_steps=a.steps)
    run_sweep(base, {"policy": ["fcfs", "bfio"]}, seeds=seeds, out=out / "sweep.csv", progress=False)
    block = seed_block(seeds, jax.process_index(), jax.process_count()).tolist()
    info = {"process_index": jax.process_index(), "process_count": jax.process_count(), "seeds": block}
    (out / f"host{a.host}.json").write_text(json.dumps(info) + "\n")
    jax.distributed.shutdown()
    return 0


def free_port() -> int:
    """A localhost TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(a: argparse.Namespace) -> int:
    """Start both hosts on this machine, wait for them, and print the merged results."""
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    coordinator = f"127.0.0.1:{free_port()}"
    # One CPU device per host: the two processes share this machine's cores.
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    sizes = ["--seeds", str(a.seeds), "--steps", str(a.steps), "--G", str(a.G), "--B", str(a.B)]
    procs, logs = [], []
    for i in range(HOSTS):
        log = (out / f"host{i}.log").open("w")
        cmd = [sys.executable, __file__, "--host", str(i), "--coordinator", coordinator, "--out", str(out), *sizes]
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
        logs.append(log)
    t0 = time.perf_counter()
    codes = [wait(p, a.timeout_s - (time.perf_counter() - t0)) for p in procs]
    for log in logs:
        log.close()
    print(f"hosts finished in {time.perf_counter() - t0:.1f} s with exit statuses {codes}")
    if any(c != 0 for c in codes):
        for i in range(HOSTS):
            print(f"--- host {i} ({out / f'host{i}.log'}):\n{(out / f'host{i}.log').read_text()[-2000:]}")
        return UNAVAILABLE if UNAVAILABLE in codes else 1
    report(out)
    return 0


def wait(p: subprocess.Popen, timeout_s: float) -> int:
    """p's exit status; killed (status -9) when it runs past `timeout_s`."""
    try:
        return p.wait(timeout=max(timeout_s, 1.0))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return -9


def report(out: Path) -> None:
    """Print which seeds each host ran and the rows host 0 wrote."""
    for i in range(HOSTS):
        info = json.loads((out / f"host{i}.json").read_text())
        print(f"host {i}: process {info['process_index']} of {info['process_count']}, seeds {info['seeds']} per point")
    with (out / "sweep.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    print(f"{'policy':<8} {'seeds':>5} {'avg imbalance (tokens)':>24} {'throughput (tokens/s)':>22}")
    for r in rows:
        imb, thr = float(r["avg_imbalance_tokens_mean"]), float(r["throughput_tokens_per_s_mean"])
        print(f"{r['policy']:<8} {r['num_seeds']:>5} {imb:>24.1f} {thr:>22.1f}")
    print(f"results: {out / 'sweep.csv'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/two_hosts", help="results folder shared by the hosts")
    ap.add_argument("--seeds", type=int, default=16, help="seeds per point, split over the hosts")
    ap.add_argument("--steps", type=int, default=1000, help="decode steps per run")
    ap.add_argument("--G", type=int, default=8, help="workers")
    ap.add_argument("--B", type=int, default=32, help="slots per worker")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="launcher: the longest wait for the hosts")
    ap.add_argument("--quick", action="store_true", help="a tiny sweep: 3 seeds, 100 steps, G=2, B=4")
    ap.add_argument("--host", type=int, choices=range(HOSTS), help="run as this host (process id) of the job")
    ap.add_argument("--coordinator", help="--host: process 0's address, HOST:PORT")
    a = ap.parse_args()
    if a.quick:
        a.seeds, a.steps, a.G, a.B = 3, 100, 2, 4
    if a.host is None:
        return launch(a)
    if not a.coordinator:
        ap.error("--host needs --coordinator HOST:PORT (process 0's address)")
    return host(a)


if __name__ == "__main__":
    sys.exit(main())
