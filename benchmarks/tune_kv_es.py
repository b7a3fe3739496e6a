"""Nested WAIT's thresholds by an evolution strategy on the exact kv engine against the
gradient tuner on the relaxation (`jaxsched tune e3`), same objective, same held-out seeds.

    python -m benchmarks.tune_kv_es [e3|e4] [--population 12] [--generations 10]
        [--train-seeds 8] [--out benchmarks/results/kv/tune_es_e3.md]

The gradient tuner (`jaxsched.kv.tuning.tune_experiment`) tunes on the relaxation and rounds;
the ES (`jaxsched.kv.tuning.es_experiment`, CMA-ES from the fluid thresholds) searches the
integer thresholds on the exact engine itself over the training seeds 0..N-1. Both objectives
are the window throughput - lam * the window's mean latency; `exact_comparison` then runs the
ES thresholds ("tuned"), the fluid and practical ones and the gradient tuner's on the 32
held-out seeds 1000-1031 and prints the paired differences. Writes the markdown to --out.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", nargs="?", default="e3", choices=("e3", "e4"))
    ap.add_argument("--population", type=int, default=12)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--train-seeds", type=int, default=8)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from jaxsched.kv.tuning import es_experiment, tune_experiment

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    grad = tune_experiment(a.name)
    t_grad = time.perf_counter() - t0
    t1 = time.perf_counter()
    es = es_experiment(
        a.name,
        population=a.population,
        generations=a.generations,
        train_seeds=range(a.train_seeds),
        others={"gradient": grad["tuned"]},
        progress=lambda g, n: print(f"generation {g}/{n} ({time.perf_counter() - t1:.0f} s)", flush=True),
    )
    t_es = time.perf_counter() - t1
    res = es["search"]
    best = res.history and min((h for h in res.history if h["feasible"]), key=lambda h: h["fitness"])
    md = (
        f"# Nested WAIT thresholds, {a.name}: CMA-ES on the exact engine against the gradient tuner\n\n"
        f"Gradient tuner (relaxation, rounded): {np.asarray(grad['tuned']).tolist()} in {t_grad:.0f} s "
        f"(with its own held-out runs). CMA-ES: {a.population} x {a.generations} candidates x "
        f"{a.train_seeds} training seeds in {t_es:.0f} s (with the held-out runs), best "
        f"{list(best['thresholds'])} (training objective {best['objective']:.1f}). Load average "
        f"{load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.\n\n"
        f"Held-out seeds 1000-1031, exact engine:\n\n{es['table']}\n\nPaired differences of the "
        f"objective (the ES's thresholds first):\n\n{es['diff_table']}\n"
    )
    print(md)
    out = Path(a.out or f"benchmarks/results/kv/tune_es_{a.name}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md)
    print(f"written: {out}")


if __name__ == "__main__":
    main()
