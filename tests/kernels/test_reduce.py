"""kernels.ordered_sum: a fixed pairwise tree of float32 adds, the same for any batch shape;
kernels.fused_sums: several integer sums in one pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.kernels import fused_sums, ordered_mean, ordered_sum


def _pairwise(x: np.ndarray) -> np.float32:
    """The same tree in NumPy float32, one row."""
    n = len(x)
    width = 1 << max(0, (n - 1).bit_length())
    x = np.concatenate([x, np.zeros(width - n, np.float32)])
    while len(x) > 1:
        x = x[: len(x) // 2] + x[len(x) // 2 :]
    return x[0]


# 257 and up take the row path (rows of 256, zero rows skipped); 1152 is a 16 x 72 dp run.
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 256, 257, 300, 1152, 2048])
def test_ordered_sum_is_the_pairwise_tree_for_every_batch_shape(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((37, n)) * 10.0 ** rng.integers(-3, 4, (37, n))).astype(np.float32)
    want = np.array([_pairwise(row) for row in x])
    got = np.asarray(jax.jit(jax.vmap(ordered_sum))(jnp.asarray(x)))
    assert got.tobytes() == want.tobytes()
    for rows in (1, 5, 32):  # a different vmapped shape rounds the same
        part = np.asarray(jax.jit(jax.vmap(ordered_sum))(jnp.asarray(x[:rows])))
        assert part.tobytes() == want[:rows].tobytes()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-3)
    assert np.asarray(ordered_mean(jnp.asarray(x[0]))) == np.float32(want[0] / np.float32(n))


@pytest.mark.parametrize("shape,axis", [((5, 72), -1), ((3, 16, 72), -1), ((3, 16, 72), 1), ((4, 33), 0)])
def test_fused_sums_equal_separate_sums(shape, axis):
    rng = np.random.default_rng(len(shape) + axis)
    a = rng.integers(-(2**20), 2**20, shape).astype(np.int32)
    b = (rng.random(shape) < 0.4).astype(np.int32)
    w = np.where(
        rng.random(shape) < 0.5, np.uint32(1) << rng.integers(0, 32, shape).astype(np.uint32), np.uint32(0)
    ).astype(np.uint32)
    got = jax.jit(lambda *x: fused_sums(x, axis))(a, b, w)
    for g, x in zip(got, (a, b, w)):
        assert g.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(g), x.sum(axis=axis, dtype=x.dtype))
    # under vmap too (the engine's case: the seed axis in front)
    got = jax.vmap(lambda *x: fused_sums(x, axis))(a[None], b[None], w[None])
    np.testing.assert_array_equal(np.asarray(got[0][0]), a.sum(axis=axis, dtype=np.int32))


def test_fused_sums_refuse_floats_and_mixed_shapes():
    with pytest.raises(ValueError, match="integer arrays of one shape"):
        fused_sums([jnp.zeros(3, jnp.float32)])
    with pytest.raises(ValueError, match="integer arrays of one shape"):
        fused_sums([jnp.zeros(3, jnp.int32), jnp.zeros(4, jnp.int32)])
