"""The offline engine against the plain-Python executor of tests/reference/offline.py: the same
start step for every request under every order, memory within M at every step, Example 1 of
paper 002, the step-time model, and one clear error for bad input."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

import jaxsched as js
from jaxsched import offline as off
from jaxsched.errors import ConfigError
from jaxsched.offline.engine import advance, start
from jaxsched.offline.registry import POLICIES
from jaxsched.workload import Batch, Independent, Trace, UniformInt
from tests.offline import strategies
from tests.reference import offline as ref


def _instance_cfg(s, o, policy="mcsf") -> off.OfflineConfig:
    return off.OfflineConfig(Trace(np.asarray(s), np.asarray(o), name="inst", order="sequential"), policy=policy)


@functools.partial(jax.jit, static_argnums=(4, 5))
def _run(s, o, order, params, steps: int, record: bool):
    """The engine's executor on one instance for `steps` steps (no workload: a fixed n)."""
    state = start(s, o, order, params)
    return jax.lax.scan(lambda st, _: advance(params, st, record, steps), state, None, length=steps)


def _engine_schedule(s, o, order, M, **time_model):
    s, o = np.asarray(s, np.int32), np.asarray(o, np.int32)
    params = off.make_params(_instance_cfg(s, o), capacity_tokens=M, **time_model)
    steps = 12 * len(s) + 1  # >= any makespan (o <= 12); one compilation per n
    state, rows = _run(jnp.asarray(s), jnp.asarray(o), jnp.asarray(order, jnp.int32), params, steps, True)
    return state, jax.tree_util.tree_map(np.asarray, rows)


instances = strategies.instances(8, 12, s_min=1)


@settings(max_examples=120, deadline=None)
@given(instances)
def test_engine_matches_the_reference_executor_for_any_order(inst):
    s, o, extra, perm = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    for order in (perm, ref.order_mcsf(s, o), ref.order_mcsf2(s, o)):
        p_ref, c_ref = ref.execute(s, o, order, M)
        state, rows = _engine_schedule(s, o, order, M)
        assert np.asarray(state.p).tolist() == p_ref and np.asarray(state.c).tolist() == c_ref
        mem_ref = ref.memory_trajectory(s, o, p_ref)
        mem = rows["memory"][rows["live"]].tolist()
        assert mem == mem_ref and max(mem) <= M
        assert int(state.peak_memory) == max(mem_ref) and int(state.last) == max(c_ref)


@settings(max_examples=40, deadline=None)
@given(instances)
def test_step_time_model_prices_each_step(inst):
    s, o, extra, perm = inst
    M = max(a + b for a, b in zip(s, o)) + extra
    coef = dict(step_const_s=0.5, per_decode_s=0.25, per_prefill_token_s=0.125, per_kv_token_s=0.0625)
    state, rows = _engine_schedule(s, o, perm, M, **coef)
    p, c = ref.execute(s, o, perm, M)
    T = max(c)
    clock, finish = 0.0, {}
    for t in range(1, T + 1):
        decoding = sum(1 for i in range(len(s)) if p[i] < t <= c[i])
        prefill = sum(s[i] for i in range(len(s)) if p[i] == t - 1)
        memory = sum(s[i] + t - p[i] for i in range(len(s)) if p[i] < t <= c[i])
        clock += 0.5 + 0.25 * decoding + 0.125 * prefill + 0.0625 * memory
        finish.update({i: clock for i in range(len(s)) if c[i] == t})
    got = state.finish.to_numpy()
    assert got.tolist() == [finish[i] for i in range(len(s))]  # dyadic: exact in float32


# policy -> (seed -> the reference Phase-1 solver); quantile greedy's sample depends on the seed.
REF_SOLVERS = {
    "sorted_f_swap": lambda seed: ref.local_swap,
    "sorted_f_dp": lambda seed: ref.exact_dp,
    "sorted_f_scaled": lambda seed: ref.scaled_dp,
    "sorted_f_quantile": ref.hash_quantile_solver,
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_policies_give_permutations_and_the_runner_agrees(policy):
    # The exact DP's table width (M = 120 fits); make_params refuses it for the other policies.
    width = {"dp_width": 128} if policy == "sorted_f_dp" else {}
    cfg = off.OfflineConfig(Batch(Independent(UniformInt(1, 30), UniformInt(1, 30)), 25), policy=policy, **width)
    params = off.make_params(cfg, capacity_tokens=120)
    res = js.simulate(cfg, params, seeds=[0, 1, 2], record=True)
    for i, seed in enumerate([0, 1, 2]):
        st0 = off.init(cfg, params, seed)
        s, o, order = (np.asarray(x).tolist() for x in (st0.s, st0.o, st0.order))
        assert sorted(order) == list(range(25))
        if policy == "mcsf":
            assert order == ref.order_mcsf(s, o)
        elif policy == "mcsf2":
            assert order == ref.order_mcsf2(s, o)
        elif policy in REF_SOLVERS:
            assert order == ref.sorted_f(s, o, 120, REF_SOLVERS[policy](seed))[0]
        p, c = ref.execute(s, o, order, 120)
        assert res.metrics["tel_steps"][i] == ref.tel(c)
        assert res.metrics["makespan_steps"][i] == max(c)
        assert res.metrics["avg_latency_s"][i] == ref.tel(c) / 25  # unit steps
        mem = res.trajectories["memory"][i]
        assert mem.max() <= 120 and res.metrics["peak_memory_tokens"][i] == mem.max()
    # The random order differs between seeds (FCFS is a fresh permutation per run).
    if policy == "fcfs":
        orders = {tuple(np.asarray(off.init(cfg, params, k).order).tolist()) for k in range(4)}
        assert len(orders) > 1


def test_example_1_of_paper_002():
    # M = 64: one request (s = 63, o = 1) and 21 requests (s = 1, o = 2). MC-SF serves the big
    # one first: TEL 1 + 21 x 3 = 64; shorter-batch-first (MC-SF2 here, Sorted-F) gives 45.
    s, o = [63] + [1] * 21, [1] + [2] * 21
    got = {}
    for policy in ("mcsf", "mcsf2"):
        cfg = _instance_cfg(s, o, policy)
        got[policy] = js.simulate(cfg, off.make_params(cfg, capacity_tokens=64), [0]).metrics
    assert got["mcsf"]["tel_steps"][0] == 64 and got["mcsf2"]["tel_steps"][0] == 45
    assert got["mcsf"]["makespan_steps"][0] == 3 and got["mcsf"]["peak_memory_tokens"][0] == 64


def test_requests_that_cannot_fit_are_dropped_and_counted():
    cfg = off.OfflineConfig(Batch(Independent(UniformInt(1, 40), UniformInt(1, 40)), 30))
    res = js.simulate(cfg, off.make_params(cfg, capacity_tokens=50), [0, 1], warn=False)
    s, o = (np.asarray(x) for x in off.jobs(cfg, 0))
    assert res.metrics["num_dropped"][0] == int((s + o > 50).sum()) > 0
    assert res.metrics["num_served"][0] == 30 - res.metrics["num_dropped"][0]
    with pytest.warns(RuntimeWarning, match="dropped"):
        js.simulate(cfg, off.make_params(cfg, capacity_tokens=50), [0])


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: off.make_params(_instance_cfg([63, 1], [2, 2]), capacity_tokens=64), r"largest s \+ o"),
        (lambda: off.make_params(_instance_cfg([1], [1]), capacity_tokens=1), "capacity_tokens"),
        (lambda: off.make_params(_instance_cfg([1], [1]), capacity_tokens=10, step_const_s=-1.0), "step_const_s"),
        (lambda: off.make_params(_instance_cfg([1], [1]), capacity_tokens=10, step_const_s=0.0), "step_const_s"),
        (lambda: off.OfflineConfig(Batch(Independent(), 2_000_000)), "num_requests"),
        (lambda: off.OfflineConfig(Batch(Independent(), 70_000), policy="sorted_f_quantile"), "num_requests"),
        (lambda: off.OfflineConfig(Independent()), "workload"),
        (lambda: off.OfflineConfig(Batch(Independent(), 4), policy="sorted"), "policy"),
        (lambda: off.OfflineConfig(Batch(Independent(), 4), max_steps=0), "max_steps"),
        (lambda: _instance_cfg([0, 1], [1, 1]), "prompt"),
        (lambda: _instance_cfg([1, 1], [0, 1]), "output"),
    ],
)
def test_bad_input_is_one_clear_error(make, needle):
    with pytest.raises(ConfigError, match=needle) as e:
        make()
    assert "\n" not in str(e.value)


def test_synthetic_batches_of_ec_4_2_run():
    from jaxsched.offline.workloads import SYNTHETIC, SYNTHETIC_CAPACITY_TOKENS, synthetic

    for name, (law, n) in SYNTHETIC.items():
        assert law.max_prompt <= 50 and law.max_output <= 50
        cfg = off.OfflineConfig(synthetic(name), policy="mcsf")
        res = js.simulate(cfg, off.make_params(cfg, capacity_tokens=SYNTHETIC_CAPACITY_TOKENS), [0, 1])
        assert (res.metrics["num_served"] == n).all() and (res.metrics["num_dropped"] == 0).all()
        assert (res.metrics["peak_memory_tokens"] <= SYNTHETIC_CAPACITY_TOKENS).all()
    with pytest.raises(ConfigError, match="name must be one of"):
        synthetic("zipf")
