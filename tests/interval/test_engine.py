"""The interval engine (jaxsched.interval) against its plain-Python reference.

docs/interval-semantics.md is the contract of both; tests/reference/interval.py implements it
one job at a time. On random small instances every policy must give the identical schedule:
the same completion step, eviction count and wasted tokens per job, the same memory at every
step and the same overflow steps; memory never exceeds M after overflow handling.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.batchmodel import instance_params
from jaxsched.errors import ConfigError
from jaxsched.interval import IntervalConfig, execute, make_params, simulate
from jaxsched.interval.intervals import Buckets, Relative, Shared
from tests.reference import interval as ref

N = 6  # one shape per policy: hypothesis examples share one compilation
STEPS = 256  # recorded steps: > any makespan of these instances (4 n u_max + 64 = 256)
CHOICES = [
    ("hsf", {}),
    ("amax", {}),
    ("amax", dict(amax_order="random")),
    ("amin", {}),
    ("amin", dict(eviction_key="live")),
    ("al", {}),
    ("arandom", {}),
]


@st.composite
def instances(draw, n: int = N, max_u: int = 8, max_s: int = 4):
    """(s, o, l, u, M): small lengths (many ties), M from 'each job barely fits' upward."""
    o = draw(st.lists(st.integers(1, max_u), min_size=n, max_size=n))
    lo = [draw(st.integers(1, x)) for x in o]
    hi = [draw(st.integers(x, max_u)) for x in o]
    s = draw(st.lists(st.integers(0, max_s), min_size=n, max_size=n))
    need = max(2, max(a + b for a, b in zip(s, hi)))
    M = draw(st.integers(need, 3 * need))
    return s, o, lo, hi, M


def _compare(s, o, lo, hi, M, policy, options, seed):
    got = execute(
        instance_params(M), s, o, lo, hi, policy=policy, seeds=seed, per_job=True, record_steps=STEPS, **options
    )
    want = ref.simulate(s, o, lo, hi, M, policy, seed=seed, **options)
    jobs = got["jobs"]
    assert list(jobs["c"][0]) == want["completion"]
    assert list(jobs["evictions"][0]) == want["evictions"]
    assert list(jobs["wasted"][0]) == want["wasted"]
    T = want["makespan"]
    mem = got["steps"]["memory"][0]
    assert list(mem[:T]) == want["memory"] and not mem[T:].any()
    assert list(got["steps"]["evicted"][0][:T]) == [len(e) for e in want["evicted"]]
    assert got["overflow_steps"][0] == want["overflow_steps"]
    assert got["tel_steps"][0] == want["tel"] and got["makespan_steps"][0] == T
    assert got["peak_memory_tokens"][0] == want["peak_memory"] <= M
    np.testing.assert_array_equal(got["jobs"]["est"][0], want["estimates"])
    return want


@pytest.mark.parametrize("policy, options", CHOICES)
@settings(max_examples=60, deadline=None)
@given(inst=instances(), seed=st.integers(0, 2**32 - 1))
def test_engine_equals_reference(policy, options, inst, seed):
    _compare(*inst, policy, options, seed)


@pytest.mark.parametrize("policy, options", CHOICES)
def test_engine_equals_reference_larger_batch(policy, options):
    """40 random instances of 14 jobs in one batched call, against the reference one by one."""
    rnd = random.Random(hash((policy, tuple(options.items()))) % 2**32)
    S, n = 40, 14
    rows = []
    for _ in range(S):
        o = [rnd.randint(1, 20) for _ in range(n)]
        lo = [rnd.randint(1, x) for x in o]
        hi = [rnd.randint(x, 24) for x in o]
        s = [rnd.randint(0, 10) for _ in range(n)]
        rows.append((s, o, lo, hi))
    s, o, lo, hi = (np.array([r[k] for r in rows]) for k in range(4))
    M = int((s + hi).max()) + 12
    seeds = np.arange(S, dtype=np.uint32) * 7919
    got = execute(instance_params(M), s, o, lo, hi, policy=policy, seeds=seeds, per_job=True, **options)
    for k in range(S):
        want = ref.simulate(*(list(map(int, a[k])) for a in (s, o, lo, hi)), M, policy, seed=int(seeds[k]), **options)
        assert list(got["jobs"]["c"][k]) == want["completion"]
        assert list(got["jobs"]["evictions"][k]) == want["evictions"]
    if policy in ("hsf", "amax", "arandom"):
        assert got["evictions"].sum() == 0


def test_amin_evicts_on_these_instances():
    """The random cases above exercise eviction: A_min overflows on most of them."""
    rnd = random.Random(5)
    S, n = 20, 14
    o = np.array([[rnd.randint(1, 20) for _ in range(n)] for _ in range(S)])
    got = execute(
        instance_params(44), np.ones_like(o), o, np.ones_like(o), np.full_like(o, 20), policy="amin", seeds=np.arange(S)
    )
    assert (got["overflow_steps"] > 0).mean() > 0.5
    assert (got["peak_memory_tokens"] <= 44).all()


def test_linear_step_model_times_match_reference():
    s, o, lo, hi, M = [3, 1, 2, 0, 4], [5, 2, 7, 1, 3], [1, 1, 4, 1, 2], [6, 4, 9, 2, 3], 16
    model = dict(
        step_const_s=0.5, per_decode_s=0.25, per_prefill_token_s=0.125, per_kv_token_s=0.0625
    )  # exact in binary: float32 sums are exact here
    for policy in ("amin", "al", "amax"):
        got = execute(instance_params(M, **model), s, o, lo, hi, policy=policy, seeds=3)
        want = ref.simulate(s, o, lo, hi, M, policy, seed=3, step_model=model)
        assert got["tel_s"][0] == pytest.approx(sum(want["finish_s"]), rel=1e-6)


def test_runner_equals_explicit_instances():
    """simulate (jobs drawn from the seed inside the scan) = execute on the same arrays."""
    cfg = IntervalConfig("lmsys", policy="amin", num_requests=60, intervals=Buckets.uniform())
    params = make_params(cfg, capacity_tokens=3000)
    res = simulate(cfg, params, seeds=[0, 1, 2])
    import jax

    from jaxsched.interval import jobs

    s, o, lo, hi = (np.asarray(a) for a in jax.vmap(lambda x: jobs(cfg, x))(np.arange(3, dtype=np.uint32)))
    got = execute(params, s, o, lo, hi, policy="amin", seeds=np.arange(3))
    np.testing.assert_array_equal(res.metrics["tel_steps"], got["tel_steps"])
    np.testing.assert_array_equal(res.metrics["evictions"], got["evictions"])


def test_runner_is_chunk_invariant():
    cfg = IntervalConfig("lmsys", policy="amin", num_requests=50, intervals=Relative(0.5))
    params = make_params(cfg, capacity_tokens=2500)
    a = simulate(cfg, params, seeds=range(4))
    b = simulate(cfg, params, seeds=range(4), seed_chunk=1, block_steps=7)
    for k in ("tel_steps", "evictions", "wasted_tokens", "tel_s"):
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k])


def test_hsf_equals_offline_executor_on_sorted_order():
    """With distinct o and one shared prompt size, H-SF is paper 002's executor on the order
    sorted by o (no tie to break)."""
    from jaxsched.offline import execute as offline_execute

    rnd = random.Random(2)
    S, n = 10, 30
    o = np.array([rnd.sample(range(1, 200), n) for _ in range(S)])
    s = np.full_like(o, 5)
    got = execute(instance_params(600), s, o, o, o, policy="hsf", seeds=np.arange(S))
    off = offline_execute(instance_params(600), s, o, np.argsort(o, axis=1))
    np.testing.assert_array_equal(got["tel_steps"], off["tel_steps"])


def test_shared_interval_must_cover_the_workload():
    with pytest.raises(ConfigError, match="intervals"):
        IntervalConfig("lmsys", num_requests=10, intervals=Shared(1, 500))
    with pytest.raises(ConfigError, match="intervals"):
        IntervalConfig("lmsys", num_requests=10, intervals=Buckets.uniform(100, 5))


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(low=[3, 1]), "low"),  # l > u for job 0 (u = 2)
        (dict(o=[1, 6]), "o must lie"),  # o outside [l, u]
        (dict(o=[0, 2]), "o must be >= 1"),
        (dict(s=[-1, 1]), "s must be >= 0"),
        (dict(high=[2, 30]), "s \\+ u must be <= M"),
        (dict(low=[1, 1.5]), "low \\(l\\) must hold integers"),
    ],
)
def test_bad_instances_name_the_field(change, field):
    args = dict(s=[1, 1], o=[1, 2], low=[1, 1], high=[2, 3])
    args.update(change)
    with pytest.raises(ConfigError, match=field):
        execute(instance_params(10), **args)


def test_intervals_short_forms():
    from jaxsched.interval.intervals import parse

    assert parse("shared:1:1000") == Shared(1, 1000)
    assert parse("buckets:100:10") == Buckets.uniform(100, 10)
    assert parse("relative:0.95") == Relative(0.95)
    assert IntervalConfig("lmsys", num_requests=10, intervals="relative:0.5").intervals == Relative(0.5)
    for bad in ("bucket:1", "shared:1", "relative:x", "exact:3"):
        with pytest.raises(ConfigError, match="intervals must be one of"):
            parse(bad)
    with pytest.raises(ConfigError, match="intervals.low"):
        parse("shared:0:10")
