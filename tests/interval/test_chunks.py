"""Seed chunks of the interval engine on CPU (`engine.working_set_bytes`).

A vmapped chunk runs each step's admission loop as often as its busiest lane needs, so the
engine asks for small chunks: about 15 runs of n = 200 jobs, not the hundreds its state alone
would give. The chunking must change no number.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxsched.batchmodel import instance_params, run_instances
from jaxsched.interval import execute
from jaxsched.interval.config import with_start
from jaxsched.interval.engine import ENGINE, working_set_bytes
from jaxsched.interval.instances import INSTANCES, policy_config
from jaxsched.run import default_seed_chunk


def test_working_set_is_proportional_to_n():
    """Bucket plans compare working sets across sizes: proportional to n, they group as before."""
    sizes = (1, 40, 200, 1000)
    per_job = {working_set_bytes(policy_config("amin", n, 64)) / n for n in sizes}
    assert len(per_job) == 1
    assert ENGINE.working_set_bytes is working_set_bytes


@pytest.mark.skipif(jax.default_backend() != "cpu" or jax.local_device_count() != 1, reason="one CPU device")
def test_cpu_chunks_of_n200_runs_are_small():
    config = policy_config("amin", 200, 1024)
    chunks = {S: default_seed_chunk(INSTANCES, config, S) for S in (4, 64, 1024)}
    assert chunks[4] == 4
    assert all(8 <= chunks[S] <= 32 for S in (64, 1024)), chunks


def test_execute_in_chunks_equals_one_chunk():
    """20 instances of n = 200 run in chunks of 10 by default; one chunk of 20 gives every
    metric and per-job array bitwise the same."""
    rnd = np.random.default_rng(5)
    S, n, M = 20, 200, 600
    o = rnd.integers(1, 17, (S, n))
    low = np.maximum(1, o - rnd.integers(0, 4, (S, n)))
    high = np.minimum(16, o + rnd.integers(0, 4, (S, n)))
    s = rnd.integers(0, 20, (S, n))
    params = instance_params(M)
    assert default_seed_chunk(INSTANCES, policy_config("amin", n, 16), S) < S or jax.default_backend() != "cpu"
    got = execute(params, s, o, low, high, policy="amin", seeds=np.arange(S), per_job=True)
    one, _ = run_instances(
        INSTANCES,
        policy_config("amin", n, 16),
        with_start(params, 0),
        (s, o, low, high),
        np.arange(S, dtype=np.uint32),
        seed_chunk=S,
    )
    assert got["evictions"].sum() > 0  # overflow handling runs
    for k, v in got.pop("jobs").items():
        np.testing.assert_array_equal(v, one[f"jobs.{k}"], err_msg=k)
    for k, v in got.items():
        np.testing.assert_array_equal(v, one[k], err_msg=k)


def test_execute_takes_the_chunk_and_refuses_a_bad_one():
    """`execute(seed_chunk=...)` (interval and offline) runs the instances in chunks of that many
    and changes no number; a chunk below 1 is one clear error before anything compiles."""
    from jaxsched.errors import ConfigError
    from jaxsched.offline.instances import execute as offline_execute

    rnd = np.random.default_rng(9)
    S, n = 6, 12
    o = rnd.integers(1, 9, (S, n))
    low, high = np.maximum(1, o - 1), np.minimum(8, o + 1)
    s = rnd.integers(1, 6, (S, n))  # the offline executor takes prompts of 1 token or more
    params = instance_params(60)
    whole = execute(params, s, o, low, high, seeds=np.arange(S), seed_chunk=S)
    parts = execute(params, s, o, low, high, seeds=np.arange(S), seed_chunk=4)
    assert whole.keys() == parts.keys()
    for k in whole:
        np.testing.assert_array_equal(whole[k], parts[k], err_msg=k)
    order = np.argsort(o, axis=1, kind="stable")
    whole = offline_execute(params, s, o, order, seed_chunk=S)
    parts = offline_execute(params, s, o, order, seed_chunk=4)
    for k in whole:
        np.testing.assert_array_equal(whole[k], parts[k], err_msg=k)
    with pytest.raises(ConfigError, match="seed_chunk"):
        execute(params, s, o, low, high, seeds=np.arange(S), seed_chunk=0)
    with pytest.raises(ConfigError, match="seed_chunk"):
        offline_execute(params, s, o, order, seed_chunk=0)
