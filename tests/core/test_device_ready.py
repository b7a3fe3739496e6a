"""What a GPU needs from every engine's scanned step: no host round trip, no 64-bit types, one
compilation however many blocks a run takes.

A host callback inside `lax.scan` stalls the device every step; a float64 or int64 value is
emulated (or refused) on most accelerators; and a block function that retraces on its second
call (a weak type or a shape that drifts between the state `init` returns and the state a block
returns) recompiles in the middle of a sweep. These checks run on the CPU and hold on any
backend, because they inspect the traced programs rather than timing them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import Jaxpr

from jaxsched.engine import get_engine
from jaxsched.registry import ENGINES
from jaxsched.run import DEFAULT_BLOCK, _compiled

from .test_engine_protocol import SMALL

WIDE = {np.dtype(t) for t in ("float64", "int64", "uint64", "complex128")}


def _eqns(jaxpr):
    """Every equation of a jaxpr, recursing into the jaxprs of scan, cond, while, pjit..."""
    for eqn in jaxpr.eqns:
        yield eqn
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(sub, "jaxpr", sub)
                if isinstance(inner, Jaxpr):
                    yield from _eqns(inner)


def _problems(closed) -> list[str]:
    found = []
    for eqn in _eqns(closed.jaxpr):
        if "callback" in eqn.primitive.name:
            found.append(f"host callback {eqn.primitive.name}")
        for var in (*eqn.invars, *eqn.outvars):
            dtype = getattr(getattr(var, "aval", None), "dtype", None)
            if dtype is not None and np.dtype(dtype) in WIDE:
                found.append(f"{np.dtype(dtype)} in {eqn.primitive.name}")
    return sorted(set(found))


def test_the_checker_sees_callbacks_and_wide_types():
    # The walker must reach inside a scan, or the engine checks below would pass vacuously.
    def body(c, _):
        jax.debug.callback(lambda x: None, c)
        return c + 1, None

    closed = jax.make_jaxpr(lambda x: jax.lax.scan(body, x, None, length=3))(np.int32(0))
    assert _problems(closed) == ["host callback debug_callback"]
    with jax.enable_x64(True):
        wide = jax.make_jaxpr(lambda x: jax.lax.scan(lambda c, _: (c * 2.0, None), x, None, length=2))(np.float64(1.0))
    assert any(p.startswith("float64") for p in _problems(wide))


@pytest.mark.parametrize("name", list(ENGINES))
def test_scanned_steps_have_no_callback_and_no_64_bit_value(name):
    eng, cfg = get_engine(name), SMALL[name]
    params = eng.make_params(cfg)
    init, run_block = _compiled(eng, cfg, 4, False)
    seeds = np.arange(2, dtype=np.uint32)
    state = jax.eval_shape(init, seeds, params)
    assert _problems(jax.make_jaxpr(init)(seeds, params)) == []
    assert _problems(jax.make_jaxpr(run_block)(state, params)) == []


# The kv step takes about two minutes to compile at SMALL's table size on 2 cores: its case
# runs with -m slow (the protocol tests compile it in the default run already).
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "kv" else n for n in ENGINES])
def test_a_run_of_many_blocks_compiles_each_function_once(name):
    eng, cfg = get_engine(name), SMALL[name]
    params = eng.make_params(cfg)
    # The runner's own block length and the protocol tests' three seeds.
    init, run_block = _compiled(eng, cfg, min(eng.max_steps(cfg), DEFAULT_BLOCK), False)
    state = init(jnp.asarray(np.array([3, 1, 2], np.uint32)), params)
    state, _ = run_block(state, params)
    compiled = (init._cache_size(), run_block._cache_size())
    for _ in range(3):  # blocks after the first must reuse its executable
        state, _ = run_block(state, params)
    jax.block_until_ready(state)
    assert (init._cache_size(), run_block._cache_size()) == compiled
