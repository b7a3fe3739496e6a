"""Tune Sarathi's token budget for p99 time to first token, from Python, with `jaxsched.tune`.

The budget engine (paper 004) at Fig. 1's load (14.3 requests/s of 129 prompt + 112 output
tokens): CMA-ES searches the per-batch token budget b in [64, 2048] for the lowest p99 TTFT,
subject to the stability check's constraint (the tokens in system grow by at most 69 tokens/s,
2% of the offered 3446 tokens/s). Every generation is one vmapped run of the population x the
training seeds; the best candidate and the baseline (Fig. 1's b = 512) are then compared on
held-out seeds. `jaxsched tune --config examples/tune/sarathi_ttft.toml` is the same search
from the command line, at full size; docs/tuning.md explains the options.

    python examples/tune_threshold.py [--population 8] [--generations 6] [--horizon-s 300]
                                      [--out results/tune_threshold] [--quick]

Needs the optional dependency evosax (`pip install -e ".[tune]"`). Files in --out (written by
`jaxsched.tune.write`): history.csv (one row per candidate: generation, index, budget,
objective, fitness, feasible, reason), summary.md (tuned against baseline, held-out result) and
convergence.png.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def search(population: int, generations: int, horizon_s: float, train: int, test: int):
    """The finished `TuneResult` of the budget search (sizes as given)."""
    from jaxsched import tune as T
    from jaxsched.budget import BudgetConfig

    config = BudgetConfig(policy="sarathi", horizon_s=horizon_s, burn_in_s=horizon_s / 5, table_size=1024)
    objective = T.parse_objective("min ttft_p99_s", ["token_growth_per_s<=69"])
    return T.tune(
        config,
        [T.Field("budget", 64, 2048, "int")],
        objective,
        fixed={"rates": [14.3]},
        train_seeds=range(train),
        test_seeds=range(1000, 1000 + test),
        population=population,
        generations=generations,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", type=int, default=8, help="candidates per generation (>= 4)")
    ap.add_argument("--generations", type=int, default=6)
    ap.add_argument("--horizon-s", type=float, default=300.0, help="simulated seconds per run")
    ap.add_argument("--train-seeds", type=int, default=8)
    ap.add_argument("--test-seeds", type=int, default=16)
    ap.add_argument("--out", default="results/tune_threshold", help="output folder")
    ap.add_argument(
        "--quick", action="store_true", help="a small search: 4 candidates x 2 generations, 60 s runs, 2 + 2 seeds"
    )
    a = ap.parse_args()
    if a.quick:
        a.population, a.generations, a.horizon_s, a.train_seeds, a.test_seeds = 4, 2, 60.0, 2, 2
    from jaxsched import tune as T

    res = search(a.population, a.generations, a.horizon_s, a.train_seeds, a.test_seeds)
    print(res.summary())
    setting = f"budget, policy sarathi, rates 14.3/s, {a.horizon_s:g} s runs"
    files = T.write(res, Path(a.out), setting=setting, unit="s")
    print("files: " + ", ".join(str(p) for p in files.values()))


if __name__ == "__main__":
    main()
