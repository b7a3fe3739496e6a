"""Ordering a step's writes after its reads, so XLA updates loop-carried arrays in place.

XLA's CPU backend orders a loop body's operations by their data dependencies only. It updates a
loop-carried array in place when every read of the array's old value comes before the write
in that order, and copies the whole array every step otherwise: one kernel that reads the old
value and that the new value does not depend on is enough. Masking the write with a flag that
depends on the results of every read (`all_computed`) puts those reads first.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def all_computed(tree) -> jnp.ndarray:
    """bool scalar True that depends on every leaf of `tree` (arrays of any shape and of an
    integer, float or bool dtype): all (x | 1) != 0 over the int32 bits of each leaf's first
    element. A write masked with it comes after everything that computes the leaves. The test
    is a reduction, a kernel of its own, so it is not recomputed for each element of the
    writes that read it."""
    bits = []
    for x in jax.tree.leaves(tree):
        x = jnp.ravel(jnp.asarray(x))[0]
        if jnp.issubdtype(x.dtype, jnp.floating):
            x = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)
        bits.append(x.astype(jnp.int32))
    return jnp.all((jnp.stack(bits) | 1) != 0)


def written_after(ready, new, old):
    """`new` where the scalar `ready` (an `all_computed` flag, always True), else `old`, leaf by
    leaf: the write of `new` over `old`, ordered after what `ready` depends on."""
    return jax.tree.map(lambda a, b: jnp.where(ready, a, b), new, old)
