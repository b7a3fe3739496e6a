"""Unit tests of the kv engine (docs/kv-semantics.md): hand-computed runs, invariants, errors."""

from __future__ import annotations

import dataclasses
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import kernels
from jaxsched.errors import ConfigError
from jaxsched.kv import POLICIES, KVConfig, batches, engine, make_params, policies, simulate
from jaxsched.kv.config import work_per_request
from jaxsched.workload.arrivals import arrival_stream

# Prop. 4 instance (notes/001.md §5): l = (1, 1), l' = (1, 2), lambda = (1, 1), d0 + 9 d1 = 1,
# C = 9. Its fluid counts n*_j = (2, 3) are the per-type totals; WAIT's per-stage thresholds
# are n_j = lambda_j dT* = (1, 1), whose M^pi = 1 * (1 + 2) + 1 * (1 + 2 + 3) = 9 = C.
PROP4 = dict(prefill_tokens=(1, 1), decode_tokens=(1, 2))
PROP4_PARAMS = dict(rates=(1.0, 1.0), d0_s=0.1, d1_s_per_token=0.1, capacity_tokens=9)


def burst(policy: str, n: int, **kw):
    """One type l = 1, l' = 2, N requests arriving within microseconds, d0 = 1 s, d1 = 0.5 s."""
    cfg = KVConfig(prefill_tokens=(1,), decode_tokens=(2,), policy=policy, num_requests=n, table_size=8, max_steps=100)
    p = make_params(cfg, rates=(1e6,), d0_s=1.0, d1_s_per_token=0.5, check_stability=False, **kw)
    return cfg, p


def test_registry_matches_config():
    # The registry is the one list of names: the config accepts each and names them all on error.
    for name in POLICIES:
        assert KVConfig(policy=name).policy == name
    with pytest.raises(ConfigError, match="policy must be one of " + re.escape(str(tuple(POLICIES)))):
        KVConfig(policy="nope")


def test_wait_burst_hand_computed():
    # Thresholds 2: batch at a_1 (reqs 0, 1 prefill: 2 tokens, tau = 2), then at a_1 + 2 (0, 1
    # at stage 1 and 2, 3 prefill: 2*2 + 2*1 = 6 tokens, tau = 4), a_1 + 6 (10 tokens, tau 6,
    # 0 and 1 complete at a_1 + 12), a_1 + 12 (2, 3 at stage 2: 6 tokens, done at a_1 + 16).
    cfg, p = burst("wait", 4, capacity_tokens=20, thresholds=(2,))
    res = simulate(cfg, p, [7], record=True)
    a = arrival_stream(cfg, p, 7, 4)
    a = a["t_hi"].astype(np.float64) + a["t_lo"]
    b = batches(res, 0)
    np.testing.assert_array_equal(b["tokens"], [2, 6, 10, 6])
    np.testing.assert_array_equal(b["memory_tokens"], [2, 6, 10, 6])
    np.testing.assert_allclose(b["start_s"], a[1] + np.array([0, 2, 6, 12]), rtol=0, atol=1e-9)
    np.testing.assert_array_equal(b["tau_s"], [2, 4, 6, 4])
    np.testing.assert_array_equal(b["counts"][:, 0], [[2, 0, 0], [2, 2, 0], [0, 2, 2], [0, 0, 2]])
    m = {k: v[0] for k, v in res.metrics.items()}
    lat = np.array([a[1] + 12 - a[0], 12, a[1] + 16 - a[2], a[1] + 16 - a[3]])
    ttft = np.array([a[1] + 2 - a[0], 2, a[1] + 6 - a[2], a[1] + 6 - a[3]])
    assert m["latency_mean_s"] == pytest.approx(lat.mean(), rel=1e-7)
    assert m["ttft_mean_s"] == pytest.approx(ttft.mean(), rel=1e-7)
    assert m["throughput_tokens_per_s"] == pytest.approx(4 * 3 / (a[1] + 16), rel=1e-9)
    assert m["decode_throughput_tokens_per_s"] == pytest.approx(4 * 2 / (a[1] + 16), rel=1e-9)
    assert (m["num_completed"], m["num_batches"], m["peak_memory_tokens"]) == (4, 4, 10)
    assert m["busy_s"] == 16 and m["idle_s"] == pytest.approx(a[1], rel=1e-6)
    assert m["preemption_count"] == 0 and m["done"] == 1
    kinds = res.trajectories["kind"][0]
    assert list(kinds[:7]) == [3, 3, 2, 2, 2, 2, 4] and not kinds[7:].any()


def test_fcfs_burst_hand_computed_with_restart():
    # C = 5. Batches (work l + k): {0} 1 -> {0:2, 1, 2, 3} 5 -> {0:3, 1:2} 5 with 2, 3 (stage 1,
    # resident) preempted -> {1:3, 2:2 recompute} 5 -> {2:3, 3:2 recompute} 5 -> {3:3} 3.
    cfg, p = burst("fcfs", 4, capacity_tokens=5)
    res = simulate(cfg, p, [7], record=True)
    a0 = np.float64(arrival_stream(cfg, p, 7, 1)["t_hi"][0])
    b = batches(res, 0)
    np.testing.assert_array_equal(b["tokens"], [1, 5, 5, 5, 5, 3])
    np.testing.assert_array_equal(b["preempted"], [0, 0, 2, 0, 0, 0])
    np.testing.assert_allclose(b["start_s"] - a0, [0, 1.5, 5, 8.5, 12, 15.5], atol=1e-9)
    np.testing.assert_array_equal(b["counts"][2, 0], [0, 1, 1])  # 1 at stage 1, 0 at stage 2
    np.testing.assert_array_equal(b["counts"][3, 0], [0, 1, 1])  # 2 recomputes at stage 1
    m = {k: v[0] for k, v in res.metrics.items()}
    assert (m["preemption_count"], m["num_batches"], m["peak_memory_tokens"]) == (2, 6, 5)
    assert m["overflow_count"] == 0 and m["num_completed"] == 4
    assert m["end_time_s"] == pytest.approx(a0 + 18, abs=1e-9)


def test_vllm_burst_hand_computed():
    # Blocks of 1 token, C = 5, no watermark. Prefill {0} -> prefill {1, 2, 3} (0 running holds
    # 2) -> decode {0, 1}, 2 and 3 restart (2 + 2 + 2 + 2 > 5) -> decode {0}, 1 restarts
    # (3 + 3 > 5), 0 completes -> prefill {1: recompute 3, 2: 2} (3 does not fit), 1 completes
    # -> prefill {3} (3 + 2 = 5) -> decode {2}, 3 restarts -> prefill {3: recompute 3}.
    cfg, p = burst("vllm", 4, capacity_tokens=5, block_size=1, watermark=0.0)
    res = simulate(cfg, p, [7], record=True)
    a0 = np.float64(arrival_stream(cfg, p, 7, 1)["t_hi"][0])
    b = batches(res, 0)
    np.testing.assert_array_equal(b["tokens"], [1, 3, 4, 3, 5, 2, 3, 3])
    np.testing.assert_array_equal(b["preempted"], [0, 0, 2, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(b["completed"], [0, 0, 0, 1, 1, 0, 1, 1])
    np.testing.assert_allclose(b["start_s"] - a0, [0, 1.5, 4, 7, 9.5, 13, 15, 17.5], atol=1e-9)
    assert np.all(b["memory_tokens"] <= 5)
    m = {k: v[0] for k, v in res.metrics.items()}
    assert (m["preemption_count"], m["num_completed"], m["overflow_count"]) == (4, 4, 0)
    assert m["end_time_s"] == pytest.approx(a0 + 20, abs=1e-9)


def test_vllm_caps_and_blocks():
    # Batch cap 3: never more than 3 requests hold KV; blocks of 4 tokens bound the memory.
    kw = dict(prefill_tokens=(3, 5), decode_tokens=(4, 9), num_requests=120, table_size=128, max_steps=5000)
    cfg = KVConfig(policy="vllm", **kw)
    p = make_params(
        cfg, rates=(0.6, 0.4), d0_s=0.2, d1_s_per_token=0.004, capacity_tokens=40, batch_size_cap=3, block_size=4
    )
    res = simulate(cfg, p, range(3), record=True)
    tr = res.trajectories
    b = tr["kind"] == 2
    assert np.all(tr["counts"][b].sum(axis=(1, 2)) <= 3)
    assert np.all(tr["memory_tokens"] <= 40)
    assert np.all(res.metrics["num_completed"] == 120)
    with pytest.raises(ConfigError, match="max_tokens_in_batch"):
        make_params(cfg, rates=(0.6, 0.4), d0_s=0.2, d1_s_per_token=0.004, capacity_tokens=40, max_tokens_in_batch=10)


def test_sarathi_burst_hand_computed_chunks():
    # l = 4, l' = 1, blocks of 1 token, chunk budget 6 (a decode takes 1 of it).
    # {0: prefill 4} -> {0: decode 5, 1: prefill 4, 2: chunk 1 of 4} (0 completes)
    # -> {1: decode 5, 2: chunk 3 (rest)} (1 completes) -> {2: decode 5}.
    cfg = KVConfig(
        prefill_tokens=(4,), decode_tokens=(1,), policy="sarathi", num_requests=3, table_size=8, max_steps=100
    )
    p = make_params(
        cfg,
        rates=(1e6,),
        d0_s=1.0,
        d1_s_per_token=0.5,
        check_stability=False,
        capacity_tokens=20,
        block_size=1,
        watermark=0.0,
        chunk_size=6,
    )
    res = simulate(cfg, p, [7], record=True)
    a = arrival_stream(cfg, p, 7, 3)
    a = a["t_hi"].astype(np.float64) + a["t_lo"]
    b = batches(res, 0)
    np.testing.assert_array_equal(b["tokens"], [4, 10, 8, 5])
    np.testing.assert_array_equal(b["memory_tokens"], [4, 13, 9, 5])
    np.testing.assert_array_equal(b["completed"], [0, 1, 1, 1])
    np.testing.assert_allclose(b["start_s"] - a[0], [0, 3, 9, 14], atol=1e-9)
    np.testing.assert_array_equal(b["counts"][:, 0], [[1, 0], [2, 1], [1, 1], [0, 1]])
    m = {k: v[0] for k, v in res.metrics.items()}
    ttft = [3, a[0] + 9 - a[1], a[0] + 14 - a[2]]
    lat = [9, a[0] + 14 - a[1], a[0] + 17.5 - a[2]]
    assert m["ttft_mean_s"] == pytest.approx(np.mean(ttft), rel=1e-7)
    assert m["latency_mean_s"] == pytest.approx(np.mean(lat), rel=1e-7)
    assert m["end_time_s"] == pytest.approx(a[0] + 17.5, abs=1e-9)


def test_sarathi_tight_blocks_restart_and_fit():
    cfg = KVConfig(
        policy="sarathi", prefill_tokens=(6, 9), decode_tokens=(4, 12), num_requests=120, table_size=128, max_steps=8000
    )
    p = make_params(
        cfg, rates=(0.6, 0.4), d0_s=0.2, d1_s_per_token=0.004, capacity_tokens=48, block_size=4, chunk_size=8
    )
    res = simulate(cfg, p, range(3), record=True)
    m = res.metrics
    assert np.all(res.trajectories["memory_tokens"] <= 48)
    assert m["preemption_count"].sum() > 0 and np.all(m["num_completed"] == 120)
    assert np.all(m["done"] == 1) and np.all(m["stalled"] == 0)


def test_nested_one_segment_equals_wait_one_type():
    # One type and one segment: Alg. 2 is Alg. 1 (and with C >= M^pi nothing is preempted).
    kw = dict(prefill_tokens=(3,), decode_tokens=(5,), num_requests=60, table_size=64, max_steps=2000)
    pk = dict(rates=(0.5,), d0_s=0.2, d1_s_per_token=0.01, capacity_tokens=200, thresholds=(3,))
    out = []
    for pol in ("wait", "nested_wait"):
        cfg = KVConfig(policy=pol, **kw)
        out.append(simulate(cfg, make_params(cfg, **pk), [1, 2], record=True))
    for k in out[0].trajectories:
        np.testing.assert_array_equal(out[0].trajectories[k], out[1].trajectories[k], err_msg=k)
    for k in out[0].metrics:
        np.testing.assert_array_equal(out[0].metrics[k], out[1].metrics[k], err_msg=k)


def _states(cfg, p, seed, epochs):
    """The state before each of `epochs` epochs of one seed, stepping the jitted engine."""
    step = jax.jit(lambda s, p: engine.step(cfg, p, s)[0])
    s = engine.init(cfg, p, jnp.uint32(seed))
    out = []
    for _ in range(epochs):
        out.append(s)
        s = step(s, p)
    return out


@pytest.mark.parametrize("policy", ["wait", "nested_wait"])
def test_fast_ranks_equal_sorted_ranks(policy):
    # The O(Q) ranks rely on no request overtaking an older one of its group; check them
    # against the sort-based definition at every epoch of tight runs (restarts included).
    cfg = KVConfig(
        policy=policy,
        prefill_tokens=(2, 2, 2),
        decode_tokens=(2, 5, 9),
        num_requests=200,
        table_size=64,
        max_steps=4000,
    )
    p = make_params(
        cfg,
        rates=(0.8, 0.6, 0.4),
        d0_s=0.2,
        d1_s_per_token=0.004,
        capacity_tokens=140 if policy == "wait" else 30,
        thresholds=(2, 2, 1) if policy == "wait" else (3, 2, 1),
    )
    K1 = cfg.num_stages
    rank_fast = jax.jit(lambda v: policies.wait_rank(cfg, v) if policy == "wait" else policies.stage_rank(cfg, v))
    rank_sort = jax.jit(
        lambda v: kernels.group_rank(
            v.table.type * K1 + v.table.stage if policy == "wait" else v.table.stage, v.table.id, v.valid
        )
    )
    for s in _states(cfg, p, 1, 240)[::2]:
        t = s.table
        valid = t.id >= 0
        view = policies.View(
            t,
            valid,
            valid.astype(jnp.int32),
            jnp.bool_(False),
            s.gen.num_arrived % cfg.table_size,
            s.type_completed,
            t.prefilled,
        )
        v = np.asarray(valid)
        np.testing.assert_array_equal(np.asarray(rank_fast(view))[v], np.asarray(rank_sort(view))[v])


def test_wait_invariant_and_memory_bound():
    cfg = KVConfig(policy="wait", num_requests=400, table_size=128, max_steps=5000, **PROP4)
    p = make_params(cfg, thresholds=(1, 1), **PROP4_PARAMS)
    n = np.array([1, 1])
    for st in _states(cfg, p, 3, 240):
        t = jax.tree_util.tree_map(np.asarray, st.table)
        v = t.id >= 0
        for j in range(2):
            per_stage = np.bincount(t.stage[v & (t.type == j)], minlength=4)
            assert np.all(per_stage[1:] <= n[j])  # n_jk <= n_j for k >= 1
        held = np.sum(np.where(v & t.resident, np.array([1, 1])[t.type] + t.stage, 0))
        assert held <= 9
    res = simulate(cfg, p, range(4))
    assert np.all(res.metrics["peak_memory_tokens"] <= 9)
    assert np.all(res.metrics["overflow_count"] == 0)
    assert np.all(res.metrics["num_completed"] == 400)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_conservation(policy):
    kw = dict(prefill_tokens=(4, 4, 4), decode_tokens=(3, 6, 9), num_requests=150, table_size=256, max_steps=3000)
    cfg = KVConfig(policy=policy, **kw)
    th = None if policy == "nested_wait" else ((2, 2, 2) if policy == "wait" else None)
    p = make_params(cfg, rates=(0.3, 0.2, 0.1), d0_s=0.3, d1_s_per_token=0.004, capacity_tokens=320, thresholds=th)
    res = simulate(cfg, p, range(5), record=True)
    m = res.metrics
    np.testing.assert_array_equal(m["num_arrived"], 150)
    np.testing.assert_array_equal(
        m["num_arrived"], m["num_completed"] + m["num_in_system"] + m["num_dropped"] + m["table_overflow"]
    )
    assert np.all(m["done"] == 1) and np.all(m["num_completed"] == 150)
    tr = res.trajectories
    # Along the run: in system = inserted so far - completed so far (nothing is dropped).
    live = tr["kind"] > 0
    balance = np.cumsum(tr["inserted"], axis=1) - np.cumsum(tr["completed"], axis=1)
    np.testing.assert_array_equal(tr["in_system"][live], balance[live])
    assert tr["completed"].sum() == 5 * 150
    if policy == "fcfs":
        assert np.all(m["peak_memory_tokens"] <= 320) and np.all(m["overflow_count"] == 0)
        assert np.all(tr["memory_tokens"] <= 320)
    # Batch tokens are sum over members of l_j + k.
    b = batches(res, 0)
    work = 4 + np.arange(cfg.num_stages)
    np.testing.assert_array_equal(b["tokens"], (b["counts"] * work).sum(axis=(1, 2)))


# One fcfs config shared by several tests (params are traced: no recompilation).
FCFS = KVConfig(policy="fcfs", num_requests=300, table_size=256, max_steps=20000, **PROP4)


def test_fcfs_tight_memory_preempts_and_never_overflows():
    p = make_params(FCFS, **PROP4_PARAMS)
    res = simulate(FCFS, p, range(4), record=True)
    m = res.metrics
    assert np.all(m["peak_memory_tokens"] <= 9) and np.all(m["overflow_count"] == 0)
    assert np.all(res.trajectories["memory_tokens"] <= 9)
    assert m["preemption_count"].sum() > 0  # the limit binds: restarts happen
    assert np.all(m["num_completed"] == 300)


def test_nested_wait_preempts_on_overflow():
    # Entry queues of segment 2 are unbounded; a small C forces the restart fallback.
    cfg = KVConfig(
        policy="nested_wait",
        prefill_tokens=(2, 2),
        decode_tokens=(2, 8),
        num_requests=200,
        table_size=128,
        max_steps=20000,
    )
    p = make_params(cfg, rates=(1.0, 1.0), d0_s=0.2, d1_s_per_token=0.01, capacity_tokens=24, thresholds=(2, 1))
    res = simulate(cfg, p, range(3), record=True)
    m = res.metrics
    assert np.all(res.trajectories["memory_tokens"] <= 24)
    assert m["preemption_count"].sum() > 0 and np.all(m["overflow_count"] == 0)
    assert np.all(m["num_completed"] == 200) and np.all(m["stalled"] == 0)


def test_chunk_size_invariance():
    p = make_params(FCFS, **PROP4_PARAMS)
    seeds = [5, 9, 11, 2**32 - 1, 0]
    whole = simulate(FCFS, p, seeds, record=True)
    parts = simulate(FCFS, p, seeds, record=True, seed_chunk=2)
    for k in whole.metrics:
        np.testing.assert_array_equal(whole.metrics[k], parts.metrics[k], err_msg=k)
    for k in whole.trajectories:
        np.testing.assert_array_equal(whole.trajectories[k], parts.trajectories[k], err_msg=k)
    # Another pair of seeds (the same chunk shape, no new compilation): same rows again.
    two = simulate(FCFS, p, seeds[2:4], record=True)
    np.testing.assert_array_equal(two.metrics["latency_mean_s"], whole.metrics["latency_mean_s"][2:4])
    e = two.trajectories["counts"].shape[1]
    np.testing.assert_array_equal(two.trajectories["counts"], whole.trajectories["counts"][2:4, :e])
    assert not whole.trajectories["kind"][2:4, e:].any()


def test_arrivals_rates_types_and_engine_agree():
    p = make_params(FCFS, rates=(3.0, 1.0), d0_s=0.01, d1_s_per_token=0.001, capacity_tokens=50)
    a = arrival_stream(FCFS, p, 4, 4000)
    t = a["t_hi"].astype(np.float64) + a["t_lo"]
    assert np.all(a["accepted"])  # P = 1: no thinning
    assert t[-1] / 4000 == pytest.approx(1 / 4.0, rel=0.05)  # Lambda = 4 /s
    assert np.mean(a["type"] == 0) == pytest.approx(0.75, abs=0.03)
    assert np.all(a["exhausted"] == (np.arange(4000) >= 300))
    # The engine's first batch starts at the first arrival (fcfs serves it at once), and the
    # vmapped engine sees the same candidate times as arrival_stream.
    res = simulate(FCFS, p, [4, 5], record=True)
    for s, seed in enumerate([4, 5]):
        a = arrival_stream(FCFS, p, seed, 300)
        b = batches(res, s)
        assert b["t_hi"][0] == a["t_hi"][0] and b["t_lo"][0] == a["t_lo"][0]
        idle = res.trajectories["kind"][s] == 3  # idle jumps land on arrivals
        jumps = res.trajectories["t_hi"][s][1:][idle[:-1]]
        assert np.all(np.isin(jumps, a["t_hi"]))
    assert np.all(res.metrics["num_arrived"] == 300)


def test_time_varying_rates_thin_by_period():
    # Period 0: 4 req/s, period 1: 1 req/s (10 s each).
    cfg = KVConfig(
        policy="fcfs",
        prefill_tokens=(1,),
        decode_tokens=(1,),
        num_requests=None,
        horizon_s=2000.0,
        table_size=256,
        max_steps=40000,
    )
    p = make_params(cfg, rates=[[4.0], [1.0]], d0_s=0.01, d1_s_per_token=0.001, capacity_tokens=50, period_s=10.0)
    a = arrival_stream(cfg, p, 0, 12000)
    t = (a["t_hi"].astype(np.float64) + a["t_lo"])[a["accepted"] & ~a["exhausted"]]
    per = np.floor(t / 10).astype(int) % 2
    assert np.sum(per == 0) / np.sum(per == 1) == pytest.approx(4.0, rel=0.1)
    res = simulate(cfg, p, [0])
    m = {k: v[0] for k, v in res.metrics.items()}
    assert m["num_arrived"] == t.size and m["done"] == 1
    assert m["end_time_s"] >= 1990.0  # the last batch before T, or T itself
    assert m["throughput_tokens_per_s"] == pytest.approx(2.5 * 2, rel=0.1)  # 2 tokens each


def test_force_clear_drops_and_drain_does_not():
    kw = dict(prefill_tokens=(2, 2), decode_tokens=(2, 4), num_requests=41, table_size=64, max_steps=3000)
    pk = dict(rates=(1.0, 1.0), d0_s=0.2, d1_s_per_token=0.01, capacity_tokens=120, thresholds=(4, 4))
    res = {}
    for mode in ("drain", "force_clear"):
        cfg = KVConfig(policy="wait", end_mode=mode, **kw)
        res[mode] = simulate(cfg, make_params(cfg, **pk), range(6)).metrics
    assert np.all(res["drain"]["num_completed"] == 41) and np.all(res["drain"]["num_dropped"] == 0)
    fc = res["force_clear"]
    assert fc["num_dropped"].sum() > 0
    np.testing.assert_array_equal(fc["num_completed"] + fc["num_dropped"] + fc["num_in_system"], 41)


def test_table_overflow_is_reported():
    cfg = KVConfig(prefill_tokens=(1,), decode_tokens=(2,), policy="wait", num_requests=20, table_size=8, max_steps=200)
    p = make_params(
        cfg, rates=(1e6,), d0_s=1.0, d1_s_per_token=0.5, check_stability=False, capacity_tokens=100, thresholds=(4,)
    )
    with pytest.warns(RuntimeWarning, match="table"):
        res = simulate(cfg, p, [0])
    m = res.metrics
    assert m["table_overflow"][0] > 0
    assert m["num_arrived"][0] == m["num_completed"][0] + m["num_in_system"][0] + m["table_overflow"][0]


def test_max_steps_too_small_warns():
    cfg = KVConfig(policy="fcfs", num_requests=100, table_size=64, max_steps=20, **PROP4)
    with pytest.warns(RuntimeWarning, match="max_steps"):
        res = simulate(cfg, make_params(cfg, **PROP4_PARAMS), [0])
    assert res.metrics["done"][0] == 0 and res.metrics["num_epochs"][0] == 20


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(prefill_tokens=(0, 1)), "prefill_tokens"),
        (dict(decode_tokens=(1,)), "decode_tokens"),
        (dict(policy="sjf"), "policy"),
        (dict(num_requests=None), "num_requests"),
        (dict(num_requests=0), "num_requests"),
        (dict(end_mode="stop"), "end_mode"),
        (dict(table_size=0), "table_size"),
        (dict(arrivals_per_step=0), "arrivals_per_step"),
        (dict(prefill_tokens=(2**29, 1), table_size=8), "table_size"),
        (dict(segment_bounds=(1, 2)), "segment_bounds"),
        (dict(policy="nested_wait", segment_bounds=(1, 3)), "segment_bounds"),
        (dict(policy="nested_wait", prefill_tokens=(1, 2)), "prefill_tokens"),
    ],
)
def test_config_errors(kw, field):
    base = dict(prefill_tokens=(1, 1), decode_tokens=(1, 2))
    with pytest.raises(ConfigError, match=field):
        KVConfig(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(rates=(1.0, 0.0)), "rates"),
        (dict(rates=(1.0,)), "rates"),
        (dict(d0_s=0.0), "d0_s"),
        (dict(d1_s_per_token=0.2), "d1_s_per_token"),  # d1 * A = 0.2 * 9 >= 1
        (dict(capacity_tokens=8), "capacity_tokens"),  # below M^pi = 9
        (dict(capacity_tokens=2), "capacity_tokens"),  # one request does not fit
        (dict(thresholds=(1,)), "thresholds"),
        (dict(thresholds=(0, 1)), "thresholds"),
        (dict(period_s=0.0), "period_s"),
    ],
)
def test_param_errors(kw, field):
    cfg = KVConfig(policy="wait", **PROP4)
    args = {**PROP4_PARAMS, "thresholds": (1, 1), **kw}
    with pytest.raises(ConfigError, match=field):
        make_params(cfg, **args)


def test_default_thresholds_meet_memory():
    cfg = KVConfig(policy="wait", **PROP4)
    p = make_params(cfg, **PROP4_PARAMS)
    # dT* = d0 / (1 - d1 A) = 0.1 / (1 - 0.9) = 1: n_j = lambda_j dT* = 1.
    np.testing.assert_array_equal(np.asarray(p.thresholds), [1, 1])
    assert int(np.dot(np.asarray(p.thresholds), work_per_request(cfg))) == 9
    cfg = KVConfig(policy="nested_wait", prefill_tokens=(10,) * 4, decode_tokens=(20, 40, 80, 160))
    p = make_params(cfg, rates=(20.0, 40.0, 80.0, 160.0), d0_s=0.5, d1_s_per_token=1e-7, capacity_tokens=10**6)
    th = np.asarray(p.thresholds)
    assert np.all(np.diff(th) <= 0) and th[0] > th[-1]  # proportional to the tail rates
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert work_per_request(cfg)[0] == 21 * 10 + 20 * 21 // 2


def test_histogram_bins_and_quantiles():
    from jaxsched.histogram import bit_bin_host as histogram_bin
    from jaxsched.histogram import bit_bins
    from jaxsched.histogram import bit_quantile as histogram_quantile

    cfg = KVConfig(**PROP4)
    rng = np.random.default_rng(0)
    x = np.exp(rng.uniform(-12, 12, 4000)).astype(np.float32)
    edge = np.float32([0, 2.0**-21, 2.0**-20, 1.5, 2.0**20 * 0.999, 2.0**20, 2.0**25])
    allx = np.concatenate([x, edge])
    got = np.asarray(bit_bins(jnp.asarray(allx), jnp.ones(allx.shape, bool), cfg.hist_octave_bits))
    np.testing.assert_array_equal(got, histogram_bin(allx, cfg.hist_octave_bits))
    np.testing.assert_array_equal(got[-7:], [0, 0, 1, got[-4], cfg.hist_bins - 2, cfg.hist_bins - 1, cfg.hist_bins - 1])
    h = np.bincount(got[:4000], minlength=cfg.hist_bins)
    for q in (0.5, 0.99):
        exact = np.sort(x)[int(np.ceil(q * 4000)) - 1]
        assert histogram_quantile(h, q) == pytest.approx(exact, rel=2.0 ** -(cfg.hist_octave_bits + 1))


@pytest.mark.parametrize("policy", list(POLICIES))
def test_batch_limits_apply_to_every_policy(policy):
    # One batch limit for every policy: no batch holds more than 2 requests or processes more
    # than 2 max footprints of tokens, and every run still completes all its requests.
    cfg = KVConfig(
        prefill_tokens=(3, 3), decode_tokens=(2, 4), policy=policy, num_requests=12, table_size=32, max_steps=2000
    )
    limit = 2 * cfg.max_len
    kw = dict(rates=(50.0, 50.0), d0_s=0.01, d1_s_per_token=1e-4, capacity_tokens=200, check_stability=False)
    capped = simulate(cfg, make_params(cfg, batch_limit=2, token_limit=limit, **kw), [0, 1], record=True)
    free = simulate(cfg, make_params(cfg, **kw), [0, 1], record=True)
    for s in range(2):
        b = batches(capped, s)
        assert b["counts"].sum(axis=(1, 2)).max() <= 2 and b["tokens"].max() <= limit
    assert (capped.metrics["num_completed"] == 12).all()
    # The limit binds: uncapped, some batch is larger.
    assert max(batches(free, s)["counts"].sum(axis=(1, 2)).max() for s in range(2)) > 2
    with pytest.raises(ConfigError, match="token_limit"):
        make_params(cfg, token_limit=cfg.max_len - 1, **kw)
    with pytest.raises(ConfigError, match="batch_limit"):
        make_params(cfg, batch_limit=0, **kw)


def test_prefill_price_is_an_option_and_makes_restarts_dearer():
    # Off by default (eq. (1)); refused without the config switch; when on, a dearer prefill
    # token makes every batch with a prefill longer, so the same requests take longer to serve.
    cfg = KVConfig(prefill_tokens=(3, 3), decode_tokens=(2, 4), policy="fcfs", num_requests=12, table_size=32)
    kw = dict(rates=(50.0, 50.0), d0_s=0.01, d1_s_per_token=1e-4, capacity_tokens=40, check_stability=False)
    with pytest.raises(ConfigError, match="d1_prefill_s_per_token"):
        make_params(cfg, d1_prefill_s_per_token=1e-2, **kw)
    priced = dataclasses.replace(cfg, prefill_price=True)
    cheap = simulate(priced, make_params(priced, d1_prefill_s_per_token=1e-4, **kw), [0, 1])
    dear = simulate(priced, make_params(priced, d1_prefill_s_per_token=1e-2, **kw), [0, 1])
    assert (dear.metrics["busy_s"] > cheap.metrics["busy_s"]).all()
    assert (dear.metrics["num_completed"] == 12).all()


def test_measurement_window_leaves_the_run_alone_and_measures_its_middle():
    # The burn-in K only chooses what is measured (docs §8): same trajectory for every K; the
    # window is shorter than the run and its throughput counts the window's completions only.
    cfg = KVConfig(policy="fcfs", num_requests=600, table_size=1024)
    runs = {k: simulate(cfg, make_params(cfg, burn_in_requests=k), (3,), record=True) for k in (0, 150)}
    for key in ("kind", "t_hi", "t_lo", "tokens", "memory_tokens", "in_system"):
        np.testing.assert_array_equal(runs[0].trajectories[key], runs[150].trajectories[key])
    m0, m1 = runs[0].metrics, runs[150].metrics
    assert m1["window_s"][0] < 0.8 * m0["window_s"][0]
    assert m0["in_system_open"][0] == 1 and m0["in_system_close"][0] == 0  # K = 0: whole run
    assert m1["in_system_open"][0] > 1 and m1["in_system_close"][0] > 0  # mid-run marks
    assert m1["latency_mean_s"][0] != m0["latency_mean_s"][0]
    assert m0["throughput_tokens_per_s"][0] == m1["throughput_tokens_per_s"][0]
    # The window's tokens are at most the run's, over a shorter time.
    assert (
        m1["window_throughput_tokens_per_s"][0] * m1["window_s"][0]
        < m0["throughput_tokens_per_s"][0] * m0["last_completion_s"][0]
    )


@pytest.mark.parametrize("cfg_kw, k", [(dict(num_requests=10), 5), (dict(num_requests=None, horizon_s=5.0), 1)])
def test_burn_in_must_leave_a_measured_request(cfg_kw, k):
    cfg = KVConfig(policy="fcfs", **cfg_kw)
    with pytest.raises(ConfigError, match="burn_in_requests"):
        make_params(cfg, burn_in_requests=k)
