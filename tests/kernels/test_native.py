"""The valley fill's native CPU kernel (kernels/native): the same assignments as the XLA form at
engine-like sizes, where each is used, and what happens where it cannot be built."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched import kernels
from jaxsched.kernels import native

needs_native = pytest.mark.skipif(
    not native.available(), reason="the native kernel could not be built here (no C++ compiler)"
)


def _forms(native_on: bool):
    return jax.jit(jax.vmap(functools.partial(kernels.valley_fill, native=native_on)))


# (G, R): R = 64 is the paper's pool; 50 and 100 are not powers of two (the packed keys round R
# up); G = 1 has a single worker.
SHAPES = [(16, 64), (1, 50), (37, 100)]
_fills = {shape: (_forms(False), _forms(True)) for shape in SHAPES} if native.available() else {}


@needs_native
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"G{s[0]}R{s[1]}")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_native_equals_the_xla_form(shape, data):
    # 8 instances at once with engine-like magnitudes: loads up to 2 * 10^5 tokens, heavy-tailed
    # sizes up to 2 * 10^4 (G * max load stays below 2^31, as the engine guarantees), many ties
    # (sizes and loads drawn from few values in some examples), 0-6 free slots per worker,
    # partly filled pools and per-instance targets.
    G, R = shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    few = data.draw(st.booleans())
    loads = rng.choice([1000, 1500, 2000], (8, G)) if few else rng.integers(0, 200_000, (8, G))
    free = rng.integers(0, 7, (8, G))
    sizes = (
        rng.choice([1, 50, 300], (8, R))
        if few
        else np.minimum(rng.lognormal(6, 1.5, (8, R)).astype(np.int64) + 1, 20_000)
    )
    valid = rng.random((8, R)) < data.draw(st.sampled_from([0.0, 0.3, 1.0]))
    target = rng.integers(0, 250_000, 8) * data.draw(st.booleans())
    args = [
        jnp.asarray(a, dt)
        for a, dt in ((loads, jnp.int32), (free, jnp.int32), (sizes, jnp.int32), (valid, bool), (target, jnp.int32))
    ]
    xla, nat = _fills[shape]
    for a, b in zip(xla(*args), nat(*args)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@needs_native
def test_each_platform_lowers_its_own_form():
    # The native kernel is an XLA custom call for the CPU only; a GPU lowering must contain the
    # XLA form and no call to it.
    f = jax.jit(jax.vmap(kernels.valley_fill))
    args = (
        jnp.zeros((4, 3), jnp.int32),
        jnp.ones((4, 3), jnp.int32),
        jnp.ones((4, 5), jnp.int32),
        jnp.ones((4, 5), bool),
    )
    cpu, gpu = (f.trace(*args).lower(lowering_platforms=(p,)).as_text() for p in ("cpu", "cuda"))
    assert native.TARGET in cpu
    assert native.TARGET not in gpu and "stablehlo.while" in gpu
    xla_only = jax.jit(jax.vmap(functools.partial(kernels.valley_fill, native=False)))
    assert native.TARGET not in xla_only.trace(*args).lower(lowering_platforms=("cpu",)).as_text()


def test_native_true_without_the_kernel_is_an_error(monkeypatch):
    monkeypatch.setattr(native, "available", lambda: False)
    args = [jnp.zeros(2, jnp.int32), jnp.ones(2, jnp.int32), jnp.ones(3, jnp.int32), jnp.ones(3, bool)]
    with pytest.raises(ValueError, match="native=True"):
        kernels.valley_fill(*args, native=True)
    w, _ = kernels.valley_fill(*args)  # the default falls back to the XLA form
    assert sorted(np.asarray(w).tolist()) == [-1, 0, 1]


def test_without_a_compiler_the_kernel_is_unavailable_with_one_warning(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("JAXSCHED_NATIVE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(OSError):
        native.build()
    assert not list((tmp_path / "cache").glob("*.so"))  # nothing partial is left behind
    with pytest.warns(RuntimeWarning, match="could not be built"):
        assert native.available.__wrapped__() is False


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("JAXSCHED_NATIVE", "0")
    assert native.available.__wrapped__() is False


@needs_native
def test_a_built_library_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSCHED_NATIVE_CACHE", str(tmp_path))
    first = native.build()
    stamp = first.stat().st_mtime_ns
    assert native.build() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


_DIGEST = """
import hashlib, sys
import numpy as np
import jaxsched
cfg = jaxsched.dp.DPConfig(num_workers=6, slots_per_worker=8, pool_size=24, lookahead_steps=0,
                           policy="bfio", semantics="paper", num_steps=300,
                           workload=jaxsched.BurstGPTLike())
res = jaxsched.dp.simulate(cfg, jaxsched.dp.make_params(cfg), np.arange(16))
h = hashlib.sha256()
for k in sorted(res.metrics):
    h.update(np.ascontiguousarray(res.metrics[k]).tobytes())
print(h.hexdigest())
"""


@needs_native
def test_the_engine_gives_the_same_results_with_either_form():
    # BF-IO H = 0 over 16 seeds and 300 steps, in two fresh processes: the native kernel, and the
    # XLA form (JAXSCHED_NATIVE=0); every metric of every seed must agree bit for bit.
    digests = []
    for flag in ("1", "0"):
        env = dict(os.environ, JAXSCHED_NATIVE=flag)
        out = subprocess.run(
            [sys.executable, "-c", _DIGEST], env=env, capture_output=True, text=True, check=True, timeout=600
        )
        digests.append(out.stdout.split()[-1])
    assert digests[0] == digests[1]
