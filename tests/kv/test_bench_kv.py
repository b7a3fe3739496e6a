"""The kv speed benchmark (benchmarks/bench_kv.py) on a tiny case: its engine-vs-reference
consistency path gives equal epoch, batch and completion counts on two seeds."""

from __future__ import annotations

import jax
import numpy as np

from benchmarks import bench_kv


def test_engine_and_reference_counts_agree():
    # E1 at rho = 0.5 under WAIT for 0.3 s: ~80 epochs, 22 batches and the first ~80
    # completions per seed (none before ~0.25 s); one compile of a 2-seed chunk, ~6 s.
    cfg, p, kw = bench_kv.case("wait", 0.3)
    engine = bench_kv.bench_engine(cfg, p, 2)
    base = bench_kv.bench_reference(cfg, p, kw, target_s=float("inf"), max_seeds=2)
    assert base["seeds"] == 2
    assert bench_kv.equal_counts(engine, base, 2), {k: (engine[k].tolist(), base[k].tolist()) for k in bench_kv.COUNTS}
    assert np.all(engine["num_completed"] > 0) and np.all(engine["num_batches"] > 0)
    assert engine["epochs"] == base["num_epochs"].sum()
    # The benchmark runs in JAX's default 32-bit mode: no float64 on the device.
    assert not jax.config.jax_enable_x64


def test_seed_counts_cap_nested_wait_unless_counts_are_given():
    assert bench_kv.seed_counts("wait", False, None) == list(bench_kv.SEEDS)
    assert bench_kv.seed_counts("nested_wait", False, None) == [
        s for s in bench_kv.SEEDS if s <= bench_kv.MAX_SEEDS["nested_wait"]
    ]
    assert max(bench_kv.seed_counts("nested_wait", False, None)) < max(bench_kv.SEEDS)
    assert bench_kv.seed_counts("nested_wait", False, [1024, 16384, 1024]) == [1024, 16384]
    assert bench_kv.seed_counts("wait", True, None) == list(bench_kv.QUICK_SEEDS)
