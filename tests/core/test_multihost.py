"""Multi-host sweeps: the seed split, and a real two-process `jax.distributed` job on localhost.

The job runs two subprocesses with two forced host CPU devices each (XLA_FLAGS must be set
before JAX starts, and library code never sets it); their gathered results must be bitwise
those of a single-process, single-device run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jaxsched as js
from jaxsched.dp import simulate
from jaxsched.errors import ConfigError
from jaxsched.multihost import block_bounds, broadcast_from_writer, is_writer, seed_block, simulate_multihost

# --- the seed split ----------------------------------------------------------------------------


@given(n=st.integers(0, 200), count=st.integers(1, 17))
def test_blocks_cover_every_seed_once_in_order(n, count):
    bounds = [block_bounds(n, i, count) for i in range(count)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(bounds[i][1] == bounds[i + 1][0] for i in range(count - 1))  # contiguous
    sizes = [hi - lo for lo, hi in bounds]
    assert max(sizes) - min(sizes) <= 1 and sorted(sizes, reverse=True) == sizes


def test_seed_block_examples():
    seeds = list(range(10, 17))  # 7 seeds over 2 and 3 processes
    assert [seed_block(seeds, i, 2).tolist() for i in range(2)] == [[10, 11, 12, 13], [14, 15, 16]]
    assert [seed_block(seeds, i, 3).tolist() for i in range(3)] == [[10, 11, 12], [13, 14], [15, 16]]
    assert [seed_block([5, 6], i, 4).tolist() for i in range(4)] == [[5], [6], [], []]
    assert seed_block(seeds, 0, 2).dtype == np.uint32


def test_seed_block_rejects_bad_process_ids():
    with pytest.raises(ConfigError, match="process_index"):
        seed_block(range(4), 2, 2)
    with pytest.raises(ConfigError, match="process_count"):
        seed_block(range(4), 0, 0)
    with pytest.raises(ConfigError, match="seeds"):
        seed_block([], 0, 1)


def _config(policy: str) -> js.dp.DPConfig:
    """The small configuration of every test here (one compile per policy in this process)."""
    return js.dp.DPConfig(num_workers=4, slots_per_worker=8, pool_size=8, policy=policy, num_steps=200)


def test_single_process_is_plain_simulate():
    cfg = _config("fcfs")
    p = js.dp.make_params(cfg)
    a, b = simulate_multihost(cfg, p, range(7), record=True), simulate(cfg, p, range(7), record=True)
    assert is_writer() and broadcast_from_writer({"x": [1]}) == {"x": [1]}
    assert a.seeds.tolist() == list(range(7))
    assert all(a.metrics[k].tobytes() == b.metrics[k].tobytes() for k in b.metrics)


# --- two processes on localhost ------------------------------------------------------------------

UNAVAILABLE = 77  # a worker's exit code when jax.distributed itself cannot start

WORKER = r"""
import sys
port, pid, out, policy = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
import jax
# A global flag, so the launcher sets it (library code never does); gloo is the default in
# recent JAX and is named here for older versions.
jax.config.update("jax_cpu_collectives_implementation", "gloo")
try:
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=pid, initialization_timeout=60)
except Exception as e:                   # the platform cannot run jax.distributed at all
    print("UNAVAILABLE", type(e).__name__, e, file=sys.stderr)
    sys.exit(77)
import numpy as np
import jaxsched as js
from jaxsched.multihost import broadcast_from_writer, is_writer, simulate_multihost
assert (jax.process_count(), jax.process_index(), jax.local_device_count(), jax.device_count()) \
    == (2, pid, 2, 4)
assert is_writer() == (pid == 0)
assert broadcast_from_writer({"from": pid}) == {"from": 0}
cfg = js.dp.DPConfig(num_workers=4, slots_per_worker=8, pool_size=8, policy=policy, num_steps=200)
# 7 seeds: process 0 runs 4 (sharded over its 2 devices), process 1 runs 3 (on one device).
r = simulate_multihost(cfg, js.dp.make_params(cfg), range(7), record=True)
assert r.seeds.tolist() == list(range(7))
np.savez(out, **{f"m:{k}": v for k, v in r.metrics.items()},
         **{f"t:{k}": v for k, v in r.trajectories.items()})
jax.distributed.shutdown()
print("DONE", pid)
"""


def _free_port() -> int:
    """A localhost TCP port that was free a moment ago (skip if none can be bound)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    except OSError as e:
        pytest.skip(f"jax.distributed needs a localhost TCP port, and none can be bound: {e}")


def _reference(policy: str) -> dict[str, np.ndarray]:
    """The single-process, single-device run, keyed as the workers save theirs."""
    cfg = _config(policy)
    r = simulate(cfg, js.dp.make_params(cfg), range(7), shard=False, record=True)
    return {**{f"m:{k}": v for k, v in r.metrics.items()}, **{f"t:{k}": v for k, v in r.trajectories.items()}}


def _run_job(tmp_path: Path, policy: str) -> tuple[list[Path], dict[str, np.ndarray]]:
    """Launch the two worker processes and, while they run, the reference; return the workers'
    output files and the reference."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    port = _free_port()
    outs = [tmp_path / f"proc{i}.npz" for i in range(2)]
    # Logs go to files: a full pipe would block a worker while the reference runs.
    logs = [(tmp_path / f"proc{i}.log").open("w+") for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(port), str(i), str(outs[i]), policy],
            env=env,
            stdout=logs[i],
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    try:
        ref = _reference(policy)
    except BaseException:
        for pr in procs:
            pr.kill()
        raise
    try:
        for pr in procs:
            pr.wait(timeout=120)
    except subprocess.TimeoutExpired:
        for pr in procs:
            pr.kill()
            pr.wait()
        pytest.fail("a two-process worker ran past 120 s:\n" + _tails(logs))
    codes = [pr.returncode for pr in procs]
    if UNAVAILABLE in codes:
        pytest.skip("jax.distributed cannot start on this platform: " + _tails(logs, 300))
    assert codes == [0, 0], f"worker exit codes {codes}:\n" + _tails(logs)
    return outs, ref


def _tails(logs, n: int = 3000) -> str:
    """The last n characters of each worker's log."""
    out = []
    for i, f in enumerate(logs):
        f.seek(0)
        out.append(f"--- process {i}:\n{f.read()[-n:]}")
    return "\n".join(out)


# Each job compiles its policy three times (two workers and the reference): bfio, the slower
# compile, runs with -m slow.
@pytest.mark.parametrize("policy", ["fcfs", pytest.param("bfio", marks=pytest.mark.slow)])
def test_two_processes_gather_bitwise_equal_to_one_device(tmp_path, policy):
    outs, ref = _run_job(tmp_path, policy)
    for i, path in enumerate(outs):  # every process holds the full result
        with np.load(path) as got:
            assert sorted(got.files) == sorted(ref)
            bad = [
                k
                for k in ref
                if got[k].dtype != ref[k].dtype or got[k].shape != ref[k].shape or got[k].tobytes() != ref[k].tobytes()
            ]
            assert not bad, f"process {i} differs from one device in {bad}"
