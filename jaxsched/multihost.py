"""Sweeps over several hosts through `jax.distributed`: split the seeds, simulate, gather.

Seeds are independent runs, so nothing is exchanged while they run: process p of P simulates the
contiguous block `seed_block(seeds, p, P)` of the seed list on its own local devices (where
`jaxsched.run.simulate` shards each chunk over them), and the per-seed results are then gathered
to every process with `jax.experimental.multihost_utils.process_allgather`. Results depend only
on (config, params, seed), so the gathered metrics are bitwise those of a one-device run
(tests/core/test_multihost.py checks it with two processes of two forced host CPU devices each).

The caller's launcher calls `jax.distributed.initialize(...)` before any other JAX call; this
module never initializes JAX nor changes its flags (see docs/multihost.md). Without
`jax.distributed` (one process) every function here reduces to its single-process meaning.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Sequence

import jax
import numpy as np

from .engine import Engine, engine_of
from .errors import require_int
from .rng import check_seeds
from .run import Results, simulate


def block_bounds(n: int, process_index: int, process_count: int) -> tuple[int, int]:
    """[lo, hi) of process `process_index`'s block of n items split over `process_count`.

    Blocks are contiguous, in process order, and cover 0..n-1 exactly once; their sizes differ
    by at most one (the first n % process_count processes take one more). A block is empty when
    n < process_count.
    """
    n = require_int(n, "n", lo=0)
    count = require_int(process_count, "process_count", lo=1)
    index = require_int(process_index, "process_index", lo=0, hi=count - 1)
    q, r = divmod(n, count)
    lo = index * q + min(index, r)
    return lo, lo + q + (1 if index < r else 0)


def seed_block(seeds: Sequence[int], process_index: int, process_count: int) -> np.ndarray:
    """The contiguous block of `seeds` (1-d, uint32) that process `process_index` simulates."""
    seeds = check_seeds(seeds)
    lo, hi = block_bounds(len(seeds), process_index, process_count)
    return seeds[lo:hi]


def is_writer() -> bool:
    """True on the one process that writes shared outputs (results files): process 0."""
    return jax.process_index() == 0


def broadcast_from_writer(obj: Any) -> Any:
    """Process 0's value of a JSON-serializable `obj`, returned on every process.

    Used where processes must agree on host-side state that only process 0 can trust, e.g. the
    rows already in a results file when resuming a sweep (other hosts may not see that file):
    every process must then run the same points, or the gathers would pair different points.
    """
    if jax.process_count() == 1:
        return obj
    from jax.experimental import multihost_utils

    data = np.frombuffer(json.dumps(obj, sort_keys=True).encode(), np.uint8)
    # Two broadcasts: the length first, so that every process passes the same shape.
    n = int(multihost_utils.broadcast_one_to_all(np.array([data.size], np.int32))[0])
    buf = np.zeros(n, np.uint8)
    if is_writer():
        buf[:] = data
    out = np.asarray(multihost_utils.broadcast_one_to_all(buf), np.uint8)
    return json.loads(out.tobytes().decode())


def _to_words(a: np.ndarray, rows: int) -> np.ndarray:
    """[n, ...] of any dtype -> uint32[rows, w]: the raw bytes of each row, zero-padded to `rows`
    rows and to whole 32-bit words. Gathering raw bytes keeps float64 exact: JAX without x64
    would round float64 arrays to float32 on their way to a device."""
    flat = np.ascontiguousarray(a).reshape(a.shape[0], -1).view(np.uint8)
    nbytes = -(-flat.shape[1] // 4) * 4
    out = np.zeros((rows, nbytes), np.uint8)
    out[: flat.shape[0], : flat.shape[1]] = flat
    return out.view(np.uint32)


def _from_words(w: np.ndarray, like: np.ndarray, n: int) -> np.ndarray:
    """Inverse of `_to_words` for the first n rows, with `like`'s dtype and trailing shape."""
    nbytes = int(np.prod(like.shape[1:], dtype=np.int64)) * like.dtype.itemsize
    b = np.ascontiguousarray(w[:n]).view(np.uint8)[:, :nbytes]
    return np.ascontiguousarray(b).view(like.dtype).reshape(n, *like.shape[1:])


def _gather_rows(arrays: dict[str, np.ndarray], n_local: int, counts: list[int]) -> dict[str, np.ndarray]:
    """Concatenate, in process order, each process's first counts[p] rows of every array.

    arrays: {name: [>= n_local, ...]} with the same names, dtypes and trailing shapes on every
    process. All arrays travel in one gather of uint32[P, max(counts), sum of row words].
    """
    from jax.experimental import multihost_utils

    rows = max(counts)
    names = sorted(arrays)
    parts = [_to_words(arrays[k][:n_local], rows) for k in names]
    widths = np.cumsum([0] + [p.shape[1] for p in parts])
    gathered = np.asarray(multihost_utils.process_allgather(np.concatenate(parts, axis=1)))
    return {
        k: np.concatenate(
            [_from_words(gathered[p, :, widths[i] : widths[i + 1]], arrays[k], c) for p, c in enumerate(counts)]
        )
        for i, k in enumerate(names)
    }


def _check_same_seeds(seeds: np.ndarray) -> None:
    """Fail loudly when processes were given different seed lists (their blocks would overlap
    or leave gaps)."""
    from jax.experimental import multihost_utils

    h = np.array([zlib.crc32(seeds.tobytes()), len(seeds)], np.uint32)
    multihost_utils.assert_equal(h, "simulate_multihost: processes were given different seed lists")


def simulate_multihost(
    config: Any, params: Any, seeds: Sequence[int], *, engine: Engine | None = None, **kw
) -> Results:
    """`jaxsched.run.simulate` over every process of a `jax.distributed` job.

    engine: by default the engine whose Config `config` is. Every process calls it with the
    same (config, params, seeds); each simulates its `seed_block` on its local devices
    (keywords such as seed_chunk, block_steps, record, progress, shard pass through to
    `simulate`), and every process returns the full result: metrics {name: float64[S]} and
    trajectories {name: [S, K, ...]} in the order of `seeds`, bitwise equal to a one-device
    run. wall_s is the slowest process's. A process whose block is empty (fewer seeds than
    processes) runs the first seed and drops it, so that it knows the shapes it must pass to
    the gather.
    """
    engine = engine_of(config) if engine is None else engine
    seeds = check_seeds(seeds)
    P, p = jax.process_count(), jax.process_index()
    if P == 1:
        return simulate(config, params, seeds, engine=engine, **kw)
    _check_same_seeds(seeds)
    counts = [hi - lo for lo, hi in (block_bounds(len(seeds), i, P) for i in range(P))]
    block = seed_block(seeds, p, P)
    local = simulate(config, params, block if len(block) else seeds[:1], engine=engine, **kw)
    arrays = {f"m:{k}": v for k, v in local.metrics.items()}
    arrays.update({f"t:{k}": v for k, v in (local.trajectories or {}).items()})
    arrays["wall_s"] = np.array([local.wall_s], np.float64)
    walls = _gather_rows({"wall_s": arrays.pop("wall_s")}, 1, [1] * P)["wall_s"]
    full = _gather_rows(arrays, len(block), counts)
    metrics = {k: full[f"m:{k}"] for k in local.metrics}  # simulate's key order
    traj = {k: full[f"t:{k}"] for k in local.trajectories} if local.trajectories else None
    return Results(engine.name, config, seeds, metrics, traj, float(walls.max()))
