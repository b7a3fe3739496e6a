"""kernels.ordered_sum: a fixed pairwise tree of float32 adds, the same for any batch shape."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels import ordered_mean, ordered_sum


def _pairwise(x: np.ndarray) -> np.float32:
    """The same tree in NumPy float32, one row."""
    n = len(x)
    width = 1 << max(0, (n - 1).bit_length())
    x = np.concatenate([x, np.zeros(width - n, np.float32)])
    while len(x) > 1:
        x = x[: len(x) // 2] + x[len(x) // 2:]
    return x[0]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100])
def test_ordered_sum_is_the_pairwise_tree_for_every_batch_shape(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((37, n)) * 10.0 ** rng.integers(-3, 4, (37, n))).astype(np.float32)
    want = np.array([_pairwise(row) for row in x])
    got = np.asarray(jax.jit(jax.vmap(ordered_sum))(jnp.asarray(x)))
    assert got.tobytes() == want.tobytes()
    for rows in (1, 5, 32):          # a different vmapped shape rounds the same
        part = np.asarray(jax.jit(jax.vmap(ordered_sum))(jnp.asarray(x[:rows])))
        assert part.tobytes() == want[:rows].tobytes()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-3)
    assert np.asarray(ordered_mean(jnp.asarray(x[0]))) == np.float32(want[0] / np.float32(n))
