"""Same-run before/after pairs: the dp engine's speed at a git revision against the working tree.

A refactoring must not slow the engine down. This benchmark checks out `--base` (default HEAD)
into a temporary git worktree and times one dp run per policy in alternating child processes,
base and working tree (who goes first alternates), `--pairs` times, so that both see the same
machine load. Each child
imports jaxsched from its own tree (PYTHONPATH), compiles and warms up with one call, then times
a second identical call (`simulate`, 1024 seeds x 2000 steps at G = 16, B = 72, R = 64 by
default). It also checks that both trees give bitwise the same metrics.

    python -m benchmarks.bench_revisions [--base REV] [--pairs 3] [--seeds 1024] [--steps 2000]

Writes `benchmarks/results/revisions.{json,md}` (the per-pair times, the median ratio new/base
per policy, the load average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"

# One timed run in a child process: prints {"s": seconds, "metrics": sha256 of the metrics}.
CHILD = r"""
import hashlib, json, sys, time
import numpy as np
import jaxsched as js
policy, seeds, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg = js.dp.DPConfig(num_workers=16, slots_per_worker=72, pool_size=64, policy=policy,
                     num_steps=steps)
js.simulate(cfg, seeds=range(seeds))
t0 = time.perf_counter()
res = js.simulate(cfg, seeds=range(seeds))
s = time.perf_counter() - t0
h = hashlib.sha256(b"".join(np.asarray(res.metrics[k]).tobytes() for k in sorted(res.metrics)))
print(json.dumps({"s": s, "metrics": h.hexdigest(), "file": js.__file__}))
"""


def _child(tree: Path, policy: str, seeds: int, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, policy, str(seeds), str(steps)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    if out.returncode != 0:
        raise SystemExit(f"child in {tree} failed:\n{out.stderr[-2000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    if not row["file"].startswith(str(tree)):
        raise SystemExit(f"child meant for {tree} imported {row['file']}")
    return row


def _load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD", help="git revision to compare against")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--policies", nargs="+", default=["fcfs", "bfio"])
    a = ap.parse_args()
    load0 = _load()
    with tempfile.TemporaryDirectory(prefix="jaxsched-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), a.base], cwd=ROOT, check=True, capture_output=True
        )
        rev = subprocess.run(
            ["git", "rev-parse", "--short", a.base], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
        try:
            rows = []
            for policy in a.policies:
                for i in range(a.pairs):
                    if i % 2 == 0:  # who goes first alternates between pairs
                        b = _child(base, policy, a.seeds, a.steps)
                        n = _child(ROOT, policy, a.seeds, a.steps)
                    else:
                        n = _child(ROOT, policy, a.seeds, a.steps)
                        b = _child(base, policy, a.seeds, a.steps)
                    rows.append(
                        dict(
                            policy=policy,
                            pair=i,
                            base_s=b["s"],
                            new_s=n["s"],
                            same_metrics=b["metrics"] == n["metrics"],
                        )
                    )
                    print(
                        f"{policy} pair {i}: base {b['s']:.3f} s, new {n['s']:.3f} s, "
                        f"same metrics {rows[-1]['same_metrics']}",
                        file=sys.stderr,
                    )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    load1 = _load()
    summary = {p: statistics.median(r["new_s"] / r["base_s"] for r in rows if r["policy"] == p) for p in a.policies}
    doc = dict(
        base=rev,
        seeds=a.seeds,
        steps=a.steps,
        shape="G=16 B=72 R=64",
        load_before=load0,
        load_after=load1,
        rows=rows,
        median_ratio_new_over_base=summary,
    )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "revisions.json").write_text(json.dumps(doc, indent=1))
    lines = [
        f"dp speed, working tree against {rev} ({a.seeds} seeds x {a.steps} steps, "
        f"G = 16, B = 72, R = 64; load {load0:.2f} -> {load1:.2f})",
        "",
        "| policy | base s (pairs) | new s (pairs) | median new / base | same metrics |",
        "|---|---|---|---|---|",
    ]
    for p in a.policies:
        rs = [r for r in rows if r["policy"] == p]
        base_s = ", ".join(f"{r['base_s']:.3f}" for r in rs)
        new_s = ", ".join(f"{r['new_s']:.3f}" for r in rs)
        same = all(r["same_metrics"] for r in rs)
        lines.append(f"| {p} | {base_s} | {new_s} | {summary[p]:.3f} | {same} |")
    (OUT / "revisions.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not all(r["same_metrics"] for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
