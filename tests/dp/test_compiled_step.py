"""The compiled dp step updates its slot arrays in place.

Admission scatters into the slot arrays; XLA does that in place only when no read of the old
arrays can come after the write. A reduction over the old slots that admission does not depend
on (the TPOT weight, when it was summed before admission) made XLA copy slot arrays every step,
which cost as much as the rest of the step's passes over the slots. The test compiles a scanned,
vmapped block of steps and looks for slot-shaped copies inside its loop.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

import jaxsched
from jaxsched.dp import engine

S, G, B, R = 6, 4, 24, 8


def _loop_copies(policy: str, lookahead_steps: int) -> list[str]:
    config = jaxsched.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        lookahead_steps=lookahead_steps,
        num_steps=50,
        semantics="paper",
        workload=jaxsched.BurstGPTLike(),
    )
    params = jaxsched.dp.make_params(config)
    state = jax.vmap(lambda s: engine.init(config, params, s))(jnp.arange(S, dtype=jnp.uint32))

    def block(st):
        return jax.lax.scan(lambda x, _: (engine.step(config, params, x)[0], None), st, None, length=4)[0]

    text = jax.jit(jax.vmap(block)).lower(state).compile().as_text()
    # Copies of whole slot arrays [S, G, B] outside the entry computation, i.e. inside a loop.
    body = text[: text.index("ENTRY")]
    shape = re.escape(f"[{S},{G},{B}]")
    return re.findall(rf"%\S+ = [sf]32{shape}\S* copy\(", body)


@pytest.mark.parametrize("policy,lookahead_steps", [("fcfs", 0), ("bfio", 2)])
def test_step_copies_no_slot_array(policy, lookahead_steps):
    assert _loop_copies(policy, lookahead_steps) == []
