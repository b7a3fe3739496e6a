"""Counter-based random numbers: request i of run `seed` is a pure function of (seed, i).

A run never holds an N-length array of its own: the lengths of request i are drawn when it is
revealed, from a 32-bit hash of (seed, i, stream). The hash is the `lowbias32` integer mixer
(two multiply-xorshift rounds), chained over the three words. It is far cheaper than
`jax.random.fold_in` + threefry per request, and its statistical quality (moments and
independence across seeds and request ids) is tested in `tests/core/test_rng.py`.

Everything here works on uint32 arrays of any shape and is jittable and vmappable.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .errors import ConfigError

_M1 = np.uint32(0x7FEB352D)
_M2 = np.uint32(0x846CA68B)
_GOLDEN = np.uint32(0x9E3779B9)
_SALT = np.uint32(0x5BD1E995)

# Stream tags: independent draws for different fields of the same request.
STREAM_PROMPT = 1
STREAM_OUTPUT = 2
STREAM_MIX = 3
STREAM_PRED = 4
STREAM_CLASSIFIER = 5
STREAM_INDEX = 6
# Per-step (not per-request) draws: index = step number k >= 1. The common drift delta_k of
# the theory semantics (docs/dp-semantics.md).
STREAM_DRIFT = 7
# kv engine arrivals (docs/kv-semantics.md §3): index = candidate number i >= 0.
STREAM_KV_GAP = 8
STREAM_KV_TYPE = 9
# offline engine (papers 002, 003): index = request index; the random orders (FCFS) sort by it.
STREAM_ORDER = 10
# interval engine (paper 003, docs/interval-semantics.md): per-step random tie-breaks of the
# admission and eviction orders, drawn by `hash_step` (index = job, step = t).
STREAM_TIE_ADMIT = 12
STREAM_TIE_EVICT = 13
# network engine (paper 004 §4, docs/network-semantics.md): the sizes of stage s >= 1 are drawn
# with the stage seed hash3(seed, s, STREAM_STAGE); the random router's draw per request id.
STREAM_STAGE = 14
STREAM_ROUTE = 15
# randomized admission policies (dp power of two choices): the stream of step k is
# hash3(seed, k, STREAM_POLICY), draw i of it hash3(that, i, STREAM_POLICY).
STREAM_POLICY = 16
# trace-driven arrivals (docs/budget-semantics.md): the replay's starting row, hash3(seed, 0,
# tag) mod n. 63 keeps it clear of the sequential tags above and of `uniform`'s stream * 64 + sub.
STREAM_TRACE_START = 63


def mix32(x: jnp.ndarray) -> jnp.ndarray:
    """lowbias32 bijective mixer on uint32 (wrapping arithmetic)."""
    x = x.astype(jnp.uint32)
    x = x ^ (x >> 16)
    x = x * _M1
    x = x ^ (x >> 15)
    x = x * _M2
    x = x ^ (x >> 16)
    return x


def hash3(seed: jnp.ndarray, index: jnp.ndarray, stream: int) -> jnp.ndarray:
    """uint32 hash of (seed, request index, stream tag); broadcasts its arguments.

    The seed enters twice: once before the index is folded in and once after. With only the
    first, seeds whose mixed values differ by a small XOR d would share whole streams (request
    i of one equal to request i ^ d of the other); the second entry makes them differ.
    """
    seed = jnp.asarray(seed, jnp.uint32)
    h = mix32(seed * _GOLDEN + np.uint32(stream))
    h = mix32(h ^ jnp.asarray(index, jnp.uint32).astype(jnp.uint32))
    return mix32(h + mix32(seed ^ _SALT))


def hash_step(seed: jnp.ndarray, step: jnp.ndarray, index: jnp.ndarray, stream: int) -> jnp.ndarray:
    """uint32 hash of (seed, step, index, stream): a fresh draw per index at every step,
    hash3(hash3(seed, step, stream), index, stream)."""
    return hash3(hash3(seed, step, stream), index, stream)


def uniform(seed, index, stream: int, sub: int = 0) -> jnp.ndarray:
    """float32 in [0, 1) with 24 random bits; `sub` selects further independent draws."""
    h = hash3(seed, index, stream * 64 + sub)
    return (h >> 8).astype(jnp.float32) * np.float32(2.0**-24)


def normal_pair(seed, index, stream: int, sub: int = 0) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Two independent standard normals by Box-Muller, float32."""
    u1 = uniform(seed, index, stream, 2 * sub)
    u2 = uniform(seed, index, stream, 2 * sub + 1)
    r = jnp.sqrt(-2.0 * jnp.log1p(-u1))  # 1 - u1 in (0, 1]: never log(0)
    t = np.float32(2.0 * np.pi) * u2
    return r * jnp.cos(t), r * jnp.sin(t)


def check_seeds(seeds) -> np.ndarray:
    """The seeds of a run as uint32[S]; one ConfigError for anything else (before compiling),
    a repeated seed included: it would be one run counted twice in every mean and CI."""
    seeds = np.asarray(seeds)
    if seeds.ndim != 1 or seeds.size == 0 or seeds.dtype.kind not in "iu":
        raise ConfigError(f"seeds must be a non-empty 1-d sequence of integers, got {seeds!r}")
    if (seeds < 0).any() or (seeds >= 2**32).any():
        raise ConfigError("seeds must be integers in [0, 2^32 - 1]")
    values, counts = np.unique(seeds, return_counts=True)
    if (counts > 1).any():
        i = int(np.argmax(counts > 1))
        raise ConfigError(f"seeds must be distinct, got seed {int(values[i])} {int(counts[i])} times")
    return seeds.astype(np.uint32)
