"""The conformance kit (`jaxsched.testing`) over every registered engine."""

from __future__ import annotations

import pytest

from jaxsched import testing
from jaxsched.engine import get_engine
from jaxsched.registry import ENGINES


@pytest.mark.parametrize("name", list(ENGINES))
def test_engine_conforms(name):
    testing.check_engine(get_engine(name))


SHARD_SCRIPT = r"""
import sys, jax
from jaxsched import testing
from jaxsched.engine import get_engine
assert len(jax.local_devices()) == 2, jax.local_devices()
for name in sys.argv[1:]:
    testing.check_sharding(get_engine(name))
print("OK")
"""


# Every engine's example sharded over two host devices (a subprocess: XLA_FLAGS must be set
# before JAX starts; about 20 s on 2 cores).
def test_every_engine_shards_bitwise():
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARD_SCRIPT, *ENGINES], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stderr[-3000:]
