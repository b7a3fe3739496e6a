"""The kv step's table counts and lookups (`key_counts`, `lookup`): the one-pass and select forms
against a scatter-add and a gather, on both sides of their size thresholds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.kv.policies import ONE_HOT_BINS, SELECT_MAX, key_counts, lookup


@pytest.mark.parametrize("bins", [1, 2, 42, ONE_HOT_BINS, ONE_HOT_BINS + 1, 200])
def test_key_counts_match_scatter_add(bins):
    rng = np.random.default_rng(bins)
    Q = 300
    key = jnp.asarray(rng.integers(0, bins, Q), jnp.int32)
    masks = [jnp.asarray(rng.random(Q) < p) for p in (0.2, 0.7, 1.0)]
    got = jax.jit(lambda k, ms: key_counts(k, ms, bins))(key, masks)
    for mask, g in zip(masks, got):
        want = np.bincount(np.asarray(key)[np.asarray(mask)], minlength=bins)
        assert g.dtype == jnp.int32 and g.shape == (bins,)
        np.testing.assert_array_equal(np.asarray(g), want)


def test_key_counts_under_vmap():
    rng = np.random.default_rng(7)
    key = jnp.asarray(rng.integers(0, 6, (5, 40)), jnp.int32)
    mask = jnp.asarray(rng.random((5, 40)) < 0.5)
    got = jax.vmap(lambda k, m: key_counts(k, (m,), 6)[0])(key, mask)
    want = np.stack([np.bincount(np.asarray(k)[np.asarray(m)], minlength=6) for k, m in zip(key, mask)])
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("n", [1, 2, 3, SELECT_MAX, SELECT_MAX + 1, 21])
def test_lookup_matches_gather(n):
    rng = np.random.default_rng(n)
    values = rng.integers(-1000, 1000, n).astype(np.int32)
    key = jnp.asarray(rng.integers(0, n, 257), jnp.int32)
    for v in (values, jnp.asarray(values)):  # host constants and traced arrays
        got = jax.jit(lookup)(v, key) if isinstance(v, jax.Array) else lookup(v, key)
        np.testing.assert_array_equal(np.asarray(got), values[np.asarray(key)])
