"""Running the kv engine over many seeds: vmap over seeds, scan over epochs, in blocks.

`simulate(config, params, seeds)` returns per-seed metrics (float64 numpy) and, with
`record=True`, per-epoch trajectories (docs/kv-semantics.md §9). Results depend only on
(config, params, seed): the seed axis may be split into chunks of any size (`seed_chunk`) with
bitwise-identical results. Epochs run in blocks of `block_epochs` (a progress callback is
called after each), and a chunk stops early once every seed in it is done.
"""
from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..clock import DF
from ..errors import ConfigError, require_int
from ..rng import check_seeds
from . import engine
from .config import KVConfig, KVParams
from .metrics import finalize


@dataclass
class KVResults:
    """Per-seed metrics {name: float64[S]} and optional trajectories {name: array[S, E, ...]}
    (E = the largest num_epochs over the seeds)."""
    config: KVConfig
    seeds: np.ndarray
    metrics: dict[str, np.ndarray]
    trajectories: dict[str, np.ndarray] | None
    wall_s: float

    def batches(self, s: int) -> dict[str, np.ndarray]:
        """The batch epochs (kind 2) of seed index s: trajectory rows plus start_s and tau_s
        (float64 values of the double-floats)."""
        if self.trajectories is None:
            raise ConfigError("batches() needs simulate(..., record=True)")
        rows = self.trajectories["kind"][s] == engine.KIND_BATCH
        out = {k: v[s][rows] for k, v in self.trajectories.items()}
        out["start_s"] = DF(out["t_hi"], out["t_lo"]).to_numpy()
        out["tau_s"] = DF(out["tau_hi"], out["tau_lo"]).to_numpy()
        return out


@functools.lru_cache(maxsize=64)
def _compiled(config: KVConfig, block: int, record: bool):
    """Jitted vmapped init and block-of-epochs functions for one static config."""
    step = jax.vmap(lambda s, params: engine._step(config, params, s, record), in_axes=(0, None))

    def run_block(state, params):
        def body(s, _):
            # Once every seed of the chunk is done, epochs are no-ops: skip their work. (Each
            # seed's result is the same either way, so chunking cannot change it.)
            return jax.lax.cond(jnp.all(s.done), lambda s: _idle(step, s, params),
                                lambda s: step(s, params), s)
        return jax.lax.scan(body, state, None, length=block)

    init = jax.jit(jax.vmap(lambda seed, params: engine.init(config, params, seed),
                            in_axes=(0, None)))
    blk = jax.jit(run_block, donate_argnums=0)
    return init, blk


def _idle(step, state, params):
    """(state, zero record) without running an epoch: the record's shapes come from tracing
    `step` abstractly (no computation)."""
    out = jax.eval_shape(step, state, params)[1]
    return state, jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), out)


def _pad(a: np.ndarray, E: int) -> np.ndarray:
    """Extend a trajectory [S, e, ...] to E epochs with zero rows (kind 0: after the end)."""
    if a.shape[1] >= E:
        return a[:, :E]
    return np.concatenate([a, np.zeros((a.shape[0], E - a.shape[1], *a.shape[2:]), a.dtype)], axis=1)


def _warn(metrics: dict[str, np.ndarray]) -> None:
    """Loud reports of results that are not what the config asked for."""
    lost = int(metrics["table_overflow"].sum())
    if lost:
        warnings.warn(f"kv: {lost} arrivals found the request table full and were dropped "
                      "(raise table_size Q); metrics exclude them", RuntimeWarning, stacklevel=3)
    open_ = int((metrics["done"] == 0).sum())
    if open_:
        warnings.warn(f"kv: {open_} seeds did not finish within max_epochs (raise max_epochs); "
                      "their metrics cover the epochs run", RuntimeWarning, stacklevel=3)
    stalled = int(metrics["stalled"].sum())
    if stalled:
        warnings.warn(f"kv: {stalled} seeds stalled with requests left (no batch fits)",
                      RuntimeWarning, stacklevel=3)


def simulate(config: KVConfig, params: KVParams, seeds: Sequence[int], *, record: bool = False,
             seed_chunk: int | None = None, block_epochs: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> KVResults:
    """Run `config` for every seed; see the module docstring and docs/kv-semantics.md.

    record: also return per-epoch trajectories (memory O(S * E * m * K1): small runs only).
    seed_chunk: seeds per vmapped call (None: all at once). block_epochs: epochs per jitted
    call (default min(max_epochs, 1024)). progress(done_blocks, max_blocks) after each block.
    """
    seeds = check_seeds(seeds)
    chunk = len(seeds) if seed_chunk is None else require_int(seed_chunk, "seed_chunk", lo=1)
    E = config.max_epochs
    block = min(E, 1024 if block_epochs is None else require_int(block_epochs, "block_epochs", lo=1))
    init, run_block = _compiled(config, block, bool(record))
    n_blocks = -(-E // block)
    total_work = n_blocks * -(-len(seeds) // chunk)
    t0 = time.perf_counter()
    metrics, trajs = [], []
    done_work = 0
    for c0 in range(0, len(seeds), chunk):
        part = seeds[c0:c0 + chunk]
        n = len(part)
        # A short last chunk is padded with copies of its last seed (dropped below), so every
        # chunk has one shape and compiles once.
        part = np.concatenate([part, np.repeat(part[-1:], min(chunk, len(seeds)) - n)])
        state = init(jnp.asarray(part), params)
        outs = []
        for b in range(n_blocks):
            state, out = run_block(state, params)
            if record:
                # scan stacks epochs first: [block, S, ...] -> [S, block, ...]
                outs.append(jax.tree_util.tree_map(lambda a: np.swapaxes(np.asarray(a), 0, 1), out))
            done_work += 1
            if progress is not None:
                progress(done_work, total_work)
            if bool(np.asarray(state.done).all()):
                done_work += n_blocks - b - 1
                break
        metrics.append({k: v[:n] for k, v in finalize(config, state).items()})
        if record:
            trajs.append({k: np.concatenate([o[k] for o in outs], axis=1)[:n] for k in outs[0]})
    jax.block_until_ready(state)
    wall = time.perf_counter() - t0
    merged = {k: np.concatenate([m[k] for m in metrics]) for k in metrics[0]}
    traj = None
    if record:
        # Chunks stop after different numbers of blocks: cut or pad every chunk to the longest
        # run (max num_epochs; later rows are all-zero kind-0 rows), which does not depend on
        # the chunking or the block size.
        e_max = int(merged["num_epochs"].max())
        traj = {k: np.concatenate([_pad(t[k], e_max) for t in trajs]) for k in trajs[0]}
    _warn(merged)
    return KVResults(config, seeds, merged, traj, wall)
