"""Sharding the seed axis over devices gives bitwise the results of one device.

The test runs in a subprocess with two forced host CPU devices (XLA_FLAGS must be set before
JAX starts, and library code never sets it).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

SCRIPT = r"""
import sys, numpy as np, jax
import jaxsched as js
from jaxsched.dp import simulate
assert len(jax.local_devices()) == 2, jax.local_devices()
out = {}
for policy, H in [("fcfs", 0), ("bfio", 0), ("bfio", 2)]:
    cfg = js.dp.DPConfig(num_workers=4, slots_per_worker=8, pool_size=8, policy=policy, horizon=H,
                      num_steps=200)
    p = js.dp.make_params(cfg)
    a = simulate(cfg, p, range(6), shard=True, record=True)
    b = simulate(cfg, p, range(6), shard=False, record=True)
    for k in a.metrics:
        out[f"{policy}{H}:{k}"] = (a.metrics[k].tobytes() == b.metrics[k].tobytes())
    for k in a.trajectories:
        out[f"{policy}{H}:traj:{k}"] = (a.trajectories[k].tobytes() == b.trajectories[k].tobytes())
bad = [k for k, v in out.items() if not v]
print("MISMATCH", bad) if bad else print("OK", len(out))
"""


def test_two_host_devices_bitwise_equal_to_one():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().startswith("OK"), r.stdout + r.stderr[-2000:]
