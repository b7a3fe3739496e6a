"""The dp benchmark's own arithmetic: state bytes, the bandwidth probe, cost ratios, step counts."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bench_dp
from benchmarks.bench_dp import (
    EngineRow,
    full_steps,
    make_config,
    measure_bandwidth,
    policy_cost_ratios,
    state_bytes_per_seed,
)


def test_state_bytes_count_every_slot_and_pool_field():
    small, big = make_config("fcfs", 16, 10), make_config("fcfs", 32, 10)
    b16, b32 = state_bytes_per_seed(small), state_bytes_per_seed(big)
    # The H = 0 slots hold base and finish (int32) and inv_out (float32): 12 bytes per slot.
    slots16, slots32 = 12 * 16 * bench_dp.B, 12 * 32 * bench_dp.B
    assert slots16 < b16 < slots16 + 8192 and slots32 < b32 < slots32 + 8192
    # Pool entries (prompt, output, pred_out, pred_u, reveal_steps, reveal_load hi/lo) and
    # the per-worker loads: what is left after the slots grows with R and G.
    assert (b32 - slots32) - (b16 - slots16) == 28 * (bench_dp.POOL[32] - bench_dp.POOL[16]) + 4 * 16


def test_bandwidth_probe_is_a_plausible_rate():
    bw = measure_bandwidth(1 << 20, repeats=2)
    assert np.isfinite(bw) and 1e8 < bw < 1e13  # between 0.1 GB/s and 10 TB/s


def _row(policy, G, seeds, rate):
    return EngineRow(
        policy,
        G,
        bench_dp.B,
        bench_dp.POOL[G],
        seeds,
        10,
        1.0,
        1.0,
        0.0,
        rate,
        rate * G * bench_dp.B,
        0.0,
        1000,
        rate * 1000,
    )


def test_cost_ratios_pair_each_policy_with_fcfs_at_the_same_shape_and_seeds():
    rows = [
        _row("fcfs", 16, 1024, 200.0),
        _row("bfio", 16, 1024, 80.0),
        _row("fcfs", 16, 64, 100.0),
        _row("bfio", 16, 64, 100.0),
        _row("bfio", 32, 64, 5.0),
    ]
    got = {(c["policy"], c["G"], c["seeds"]): c["cost_vs_fcfs"] for c in policy_cost_ratios(rows)}
    assert got == {("bfio", 16, 1024): pytest.approx(2.5), ("bfio", 16, 64): pytest.approx(1.0)}


def test_unlisted_seed_counts_keep_the_nearest_listed_seed_steps():
    assert full_steps("bfio", 16, 1024) == bench_dp.FULL_STEPS[("bfio", 16)][1024]
    assert full_steps("bfio", 16, 2048) == bench_dp.FULL_STEPS[("bfio", 16)][1024] // 2
    assert full_steps("fcfs", 16, 2) == bench_dp.FULL_STEPS[("fcfs", 16)][1] // 2
    assert full_steps("fcfs", 32, 10**6) == 50


def test_cost_table_shows_the_interleaved_ratio_beside_the_sequential_one():
    ratios = [dict(policy="bfio", G=16, seeds=1024, cost_vs_fcfs=2.5, cost_vs_fcfs_interleaved=1.6)]
    table = bench_dp.cost_table(ratios)
    assert table.splitlines()[0].endswith("| interleaved |")
    assert table.splitlines()[2] == "| bfio | 16 | 1024 | 2.50x | 1.60x |"
    plain = bench_dp.cost_table([dict(policy="bfio", G=16, seeds=1024, cost_vs_fcfs=2.5)])
    assert "interleaved" not in plain and plain.splitlines()[2] == "| bfio | 16 | 1024 | 2.50x |"


def test_the_checked_run_is_the_64_seed_one_or_the_smallest_timed():
    assert bench_dp.check_seed_count((1, 64, 1024)) == 64
    assert bench_dp.check_seed_count((65536, 1024, 16384)) == 1024


def test_shapes_option_rejects_an_untabled_worker_count_before_running():
    with pytest.raises(SystemExit):
        bench_dp.main(["--shapes", "8"])
    with pytest.raises(SystemExit):
        bench_dp.main(["--quick", "--shapes", "32"])


def test_environment_line_names_an_accelerator_but_not_the_cpu():
    env = dict(
        date="D", jax="J", backend="cpu", device_kind="cpu", cpu_count=2, machine="x86_64", loadavg_at_start=[0.5]
    )
    assert bench_dp.environment_line(env) == (
        "D; jax J on cpu (2 CPUs, x86_64), load average at start [0.5]; valley fill xla"
    )
    assert bench_dp.environment_line({**env, "valley_fill": "native"}).endswith("valley fill native")
    gpu = dict(env, backend="gpu", device_kind="NVIDIA H100 80GB HBM3", cpu_count=16)
    assert "on gpu (NVIDIA H100 80GB HBM3; 16 CPUs, x86_64)" in bench_dp.environment_line(gpu)
