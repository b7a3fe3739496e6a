"""The compiled network step updates its agents' rings in place.

XLA's CPU backend updates a loop-carried array in place only when every read of its old value
comes before the write in data order; otherwise it copies the array every step. The step reads
the rings of the step's input, applies every write at the end, and masks each write with a
flag that depends on everything the reads produce (`kernels.all_computed`), so no [K, Q]
field is copied (under `parallel` the plans, [K, Q, 1], are not written at all: with one stage
nothing reads them). The test compiles the runner's block (`benchmarks.step_cost`) and lists
the ring-shaped copies inside its loop.
"""

from __future__ import annotations

from benchmarks.step_cost import copied_arrays, loop_body, step_cost
from jaxsched.network import NetworkConfig, make_params
from jaxsched.network.engine import ENGINE
from jaxsched.network.experiments import RS_AGENT, RS_ORDERS, rs_config, rs_rates
from jaxsched.workload import Independent, Poisson, UniformInt

S, Q = 4, 48  # Q differs from every other size of the step


def _ring_copies(tmp_path, config, params) -> dict[str, int]:
    step_cost(ENGINE, config, seeds=S, params=params, hlo_dir=tmp_path)
    text = (tmp_path / "network.hlo.txt").read_text()
    ring = f"[{S},{config.K},{Q}"  # [S, K, Q] and the plans' [S, K, Q, stages]
    return {shape: n for shape, n in copied_arrays(text, loop_body(text)).items() if ring in shape}


def test_parallel_step_copies_no_ring(tmp_path):
    law = Independent(UniformInt(1, 12), Poisson(3.0))
    config = NetworkConfig(agents=2, workload=(law,), horizon_s=4.0, table_size=Q)
    params = make_params(config, budget=16, c_s=0.05, a_s_per_token=0.01, b0=4, rates=[3.0])
    assert _ring_copies(tmp_path, config, params) == {}


def test_routes_step_copies_no_ring(tmp_path):
    # The Rybko-Stolyar network: flushes move tasks between the agents, so every field is
    # written at both agents.
    config = rs_config(RS_ORDERS["stable"], 4.0, 0.0, Q)
    params = make_params(config, rates=rs_rates(config), **RS_AGENT)
    assert _ring_copies(tmp_path, config, params) == {}
