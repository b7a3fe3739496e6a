"""Sharding the seed axis over devices gives bitwise the results of one device.

The test runs in a subprocess with two forced host CPU devices (XLA_FLAGS must be set before
JAX starts, and library code never sets it).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import sys, numpy as np, jax
import jaxsched as js
from jaxsched.dp import simulate
assert len(jax.local_devices()) == 2, jax.local_devices()
out = {}
full = sys.argv[1:] == ["full"]
for policy, H in [("fcfs", 0), ("bfio", 0), ("bfio", 2)] if full else [("bfio", 2)]:
    cfg = js.dp.DPConfig(num_workers=4, slots_per_worker=8, pool_size=8, policy=policy, lookahead_steps=H,
                      num_steps=200)
    p = js.dp.make_params(cfg)
    a = simulate(cfg, p, range(6), shard=True, record=True)
    b = simulate(cfg, p, range(6), shard=False, record=True)
    for k in a.metrics:
        out[f"{policy}{H}:{k}"] = (a.metrics[k].tobytes() == b.metrics[k].tobytes())
    for k in a.trajectories:
        out[f"{policy}{H}:traj:{k}"] = (a.trajectories[k].tobytes() == b.trajectories[k].tobytes())
# An engine whose blocks skip finished runs (a cond on every run being done) shards the same way
# (every engine's example is sharded in test_conformance.py too).
ncfg = js.network.NetworkConfig(agents=2, horizon_s=5.0, table_size=128)
if full:
    a = js.run.simulate(ncfg, seeds=range(4), shard=True)
    b = js.run.simulate(ncfg, seeds=range(4), shard=False)
    for k in a.metrics:
        out[f"network:{k}"] = a.metrics[k].tobytes() == b.metrics[k].tobytes()
# Default chunks are a multiple of the device count, so an odd seed count shards too (padded).
out["chunk"] = js.run.default_seed_chunk(js.dp.ENGINE, cfg, 3) == 4
out["chunk1"] = js.run.default_seed_chunk(js.dp.ENGINE, cfg, 1) == 1
# A run of several blocks compiles its block program once: the initial state is placed like
# the seeds, as every block's outputs are (a replicated leaf would recompile the second block).
import jax.monitoring as mon
blocks = []
mon.register_event_duration_secs_listener(
    lambda ev, d, **kw: blocks.append(1) if ev == "/jax/core/compile/backend_compile_duration"
    and "run_block" in str(kw.get("fun_name")) else None)
cfg3 = js.dp.DPConfig(num_workers=3, slots_per_worker=5, pool_size=8, policy="fcfs", num_steps=30)
js.run.simulate(cfg3, seeds=range(4), block_steps=10)
out["one block program"] = len(blocks) == 1
# A run padded into a size bucket and sharded equals the unpadded run on one device.
c = js.dp.DPConfig(num_workers=3, slots_per_worker=5, pool_size=6, policy="bfio", num_steps=40)
bc, bp = js.dp.ENGINE.pad(c, js.dp.make_params(c), dict(num_workers=5, slots_per_worker=8, pool_size=8))
a = js.run.simulate(c, seeds=range(4), shard=False)
b = js.run.simulate(bc, bp, seeds=range(4), shard=True)
for k in a.metrics:
    out[f"padded:{k}"] = a.metrics[k].tobytes() == b.metrics[k].tobytes()
# Lanes that refill, sharded over the devices: bitwise the chunked runs on one device, and one
# block program however often lanes are refilled.
blocks.clear()
a = js.run.simulate(ncfg, seeds=range(7), seed_chunk=2, lanes=True, shard=True, block_steps=64)
out["lanes: one block program"] = len(blocks) == 1
b = js.run.simulate(ncfg, seeds=range(7), seed_chunk=2, lanes=False, shard=False, block_steps=64)
for k in a.metrics:
    out[f"lanes:{k}"] = a.metrics[k].tobytes() == b.metrics[k].tobytes()
bad = [k for k, v in out.items() if not v]
print("MISMATCH", bad) if bad else print("OK", len(out))
"""


# The default run shards one dp policy (BF-IO with lookahead); `-m slow` adds FCFS, H = 0 and
# the network engine's example.
@pytest.mark.parametrize("cases", ["reduced", pytest.param("full", marks=pytest.mark.slow)])
def test_two_host_devices_bitwise_equal_to_one(cases):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", SCRIPT, cases], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().startswith("OK"), r.stdout + r.stderr[-2000:]


CLI_SCRIPT = r"""
import sys
from jaxsched.cli import main
rc = main(sys.argv[1:])
import jax
print("DEVICES", jax.local_device_count())
sys.exit(rc)
"""


def _cli_run(tmp_path, devices: str) -> tuple[str, list[str]]:
    out = tmp_path / f"run{devices}.csv"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAXSCHED_CPU_DEVICES=devices, JAX_PLATFORMS="cpu")
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI_SCRIPT,
            "run",
            "--G",
            "4",
            "--B",
            "8",
            "--R",
            "8",
            "--steps",
            "200",
            "--seeds",
            "3",
            "--policies",
            "fcfs,jsq_tokens",
            "--quiet",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    rows = out.read_text().splitlines()
    header = rows[0].split(",")
    keep = [i for i, h in enumerate(header) if "wall" not in h]
    return r.stdout, [",".join(c for i, c in enumerate(row.split(",")) if i in keep) for row in rows]


def test_command_line_uses_every_core_and_matches_one_device(tmp_path):
    """The command line asks for JAXSCHED_CPU_DEVICES host devices before JAX starts, and the
    results file is bitwise that of one device (3 seeds: padded to 4 and sharded)."""
    out2, rows2 = _cli_run(tmp_path, "2")
    out1, rows1 = _cli_run(tmp_path, "1")
    assert "DEVICES 2" in out2 and "DEVICES 1" in out1
    assert rows2 == rows1 and len(rows1) == 1 + 2 * 3


def test_device_count_setting():
    from jaxsched import ConfigError
    from jaxsched.cli.devices import FLAG, requested_devices, use_every_core

    assert requested_devices({"JAXSCHED_CPU_DEVICES": "3"}) == 3
    assert requested_devices({}) >= 1
    for bad in ("0", "-1", "two", "1025", ""):
        with pytest.raises(ConfigError, match=r"JAXSCHED_CPU_DEVICES must be an integer in \[1, 1024\]"):
            requested_devices({"JAXSCHED_CPU_DEVICES": bad})
    # In this process JAX is loaded, so the flag could no longer act: the environment is left alone.
    env = {"JAXSCHED_CPU_DEVICES": "2"}
    assert use_every_core(env) is None and "XLA_FLAGS" not in env
    assert FLAG.startswith("--xla_force_host_platform_device_count")
