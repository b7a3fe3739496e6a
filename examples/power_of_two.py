"""Add a dp admission policy from outside the package and sweep it against the built-ins.

Power of two choices: each waiting request, in queue order, draws two workers with a free slot
from the run's random stream and joins the one with the smaller token load. jaxsched ships it
as the built-in `power_of_two`; this example writes it again in user code, registers it as
`my_power_of_two` with `jaxsched.registry.register_policy`, and runs a sweep over G and the
policy. Its rows equal the built-in's to the last bit (tests/core/test_registry.py checks this).

    python examples/power_of_two.py [--out results/power_of_two.csv] [--seeds 16] [--steps 1000] [--quick]

`--quick` runs a small sweep (G = 4, the built-in and the user-code policy only, 3 seeds, 200
steps), as tests/test_examples.py does.
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp

from jaxsched import rng
from jaxsched.dp.policies import Observation, in_queue_order, step_stream, uniform_worker
from jaxsched.registry import register_policy


def my_power_of_two(config, params, obs: Observation):
    """The dp policy signature: (config, params, obs) -> (worker int32[R], rank int32[R],
    rr_pointer): the static DPConfig, the traced DPParams, then the engine's view."""
    stream = step_stream(obs)  # this admission's share of the run's stream

    def choose(loads, free, p):  # pool entry p (queue order), free slots now
        g1 = uniform_worker(rng.hash3(stream, 2 * p, rng.STREAM_POLICY), free)
        g2 = uniform_worker(rng.hash3(stream, 2 * p + 1, rng.STREAM_POLICY), free)
        second = (loads[g2] < loads[g1]) | ((loads[g2] == loads[g1]) & (g2 < g1))
        return jnp.where(second, g2, g1)

    def update(loads, g, p):  # the chosen worker's load grows by the prompt
        return loads.at[g].add(obs.pool_size_tokens[p])

    worker, rank, _ = in_queue_order(obs, choose, update, obs.loads)
    return worker, rank, obs.rr_pointer


def register() -> None:
    """Register `my_power_of_two` with the dp engine (idempotent within a process)."""
    register_policy(
        "dp", "my_power_of_two", my_power_of_two, "power of two choices, written outside the package", replace=True
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/power_of_two.csv")
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="a small sweep: G = 4, two policies, 3 seeds, 200 steps")
    a = ap.parse_args()
    workers = [4] if a.quick else [4, 8]
    policies = ["fcfs", "jsq_tokens", "power_of_two", "my_power_of_two"]
    if a.quick:  # the pair whose rows must agree, one compile each
        policies = policies[2:]
        a.seeds, a.steps = 3, 200
    register()
    from jaxsched.dp import DPConfig
    from jaxsched.results import read_rows
    from jaxsched.sweep import run_sweep

    base = DPConfig(num_steps=a.steps, pool_size=64)
    out = run_sweep(
        base,
        {"num_workers": workers, "policy": policies},
        seeds=range(a.seeds),
        out=a.out,
    )
    print(f"{'G':>3} {'policy':<16} {'avg imbalance (tokens)':>24}")
    for row in read_rows(out):
        print(f"{row['num_workers']:>3} {row['policy']:<16} {float(row['avg_imbalance_tokens_mean']):>24.1f}")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
