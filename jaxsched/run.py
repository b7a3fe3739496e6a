"""The one runner: any engine over many seeds, in seed chunks and scan blocks.

`simulate(config, params, seeds)` runs the engine whose Config `config` is (or `engine=`) and
returns a `Results`: per-seed metrics (float64 numpy)
and, with `record=True`, per-step trajectories. Results depend only on (config, params, seed):
the seed axis may be split into chunks of any size and sharded over any number of devices with
bitwise-identical results, because every run is independent and a run that is done never
changes again (the protocol of `jaxsched.engine`).

- Seeds are `vmap`ped in chunks (`seed_chunk`; default: all of them on an accelerator, on CPU
  as many as keep the engine's per-step working set within CPU_CHUNK_BYTES). Every chunk has
  the same shape, so the step compiles once: a short last chunk is padded with copies of the
  last seed, whose results are dropped.
- Each chunk is placed on all local devices with a one-axis mesh over the seeds when its size
  divides evenly.
- Steps run in jitted blocks of `block_steps` (`lax.scan`); after each block the runner reports
  progress and stops the chunk early once `engine.done` holds for every run in it.
- With `lanes=True`, runs go through lanes that refill instead of chunks, when there are more
  runs than one chunk and nothing is recorded: after each (shorter) block, a lane whose run has
  ended hands its final state over and takes the next waiting run, so no lane waits for the
  slowest run of a chunk. Each run takes the same steps as in a chunk, so its metrics are
  bitwise the same.
- The programs are compiled before the first block runs, as a phase of their own: a progress
  reporter with a `phase` method (`jaxsched.progress.Progress`) shows it and leaves it out of
  the ETA, and `Results.compile_s` says how long it took.

`simulate_points(config, [params, ...], seeds)` vmaps over parameter points too: every
(point, seed) pair is one run of the same compiled step, each point's results equal to its own
`simulate` call.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .engine import Engine, engine_of
from .errors import ConfigError, require, require_bool, require_float, require_int
from .progress import Progress
from .rng import check_seeds

# Working set of one seed chunk on CPU (bytes): chunks that stay in the caches of a small CPU
# run faster than one large chunk (docs/benchmarks.md).
CPU_CHUNK_BYTES = 6 * 2**20
DEFAULT_BLOCK = 1024


@dataclass
class Results:
    """Per-seed metrics {name: float64[S]} and optional trajectories {name: array[S, K, ...]}
    (K = `engine.trajectory_length`) of one configuration; wall_s is the wall time of the run,
    compilation included; compile_s the part of it spent compiling (or loading compiled
    programs from a cache)."""

    engine: str
    config: Any
    seeds: np.ndarray
    metrics: dict[str, np.ndarray]
    trajectories: dict[str, np.ndarray] | None
    wall_s: float
    compile_s: float = 0.0


def default_seed_chunk(engine: Engine, config: Any, n_seeds: int) -> int:
    """Seeds per vmapped chunk when the caller gives none: all of them on an accelerator; on
    CPU, as many as keep each device's per-step working set within CPU_CHUNK_BYTES, in equal
    chunks (so that padding stays small). With several local devices the chunk is a multiple
    of their count (when there are at least that many seeds), so that it shards evenly."""
    d = jax.local_device_count()
    if jax.default_backend() != "cpu":
        chunk = n_seeds
    else:
        cap = d * max(1, CPU_CHUNK_BYTES // max(1, engine.working_set_bytes(config)))
        chunk = -(-n_seeds // -(-n_seeds // cap))
    return -(-chunk // d) * d if n_seeds >= d else chunk


def seeds_for_budget(engine: Engine, config: Any, memory_budget_mb: float, record: bool = False) -> int:
    """Seeds per chunk whose estimated peak memory fits `memory_budget_mb` (at least 1)."""
    # A budget of 0 or less, NaN or inf would silently mean one seed or a crash in int().
    memory_budget_mb = require_float(memory_budget_mb, "memory_budget_mb", lo=0.0, lo_open=True)
    return max(1, int(memory_budget_mb * 2**20 // max(1, engine.peak_bytes(config, record))))


@functools.lru_cache(maxsize=64)
def _compiled(engine: Engine, config: Any, block: int, record: bool, per_run: bool = False):
    """Jitted vmapped init and block-of-steps functions for one static config.

    Two layouts, chosen by the engine (`Engine.skip_done_in_block`): a vmap of a plain scan
    (seed-major outputs [S, block, ...]), or a loop over the vmapped step that ends once every
    run of the chunk is done (recording: a scan whose body skips the step then, step-major
    outputs [block, S, ...]). per_run: params carry the
    run axis too (one parameter point per run, `simulate_points`); else they are shared.
    """
    pa = 0 if per_run else None
    init = jax.jit(jax.vmap(lambda seed, params: engine.init(config, params, seed), in_axes=(0, pa)))
    if not engine.skip_done_in_block:

        def run_block(state, params):
            return jax.lax.scan(lambda s, _: engine.step(config, params, s, record), state, None, length=block)

        return init, jax.jit(jax.vmap(run_block, in_axes=(0, pa)), donate_argnums=0)

    step = jax.vmap(lambda s, params: engine.step(config, params, s, record), in_axes=(0, pa))

    def idle(state, params):
        # The record's shapes come from tracing `step` abstractly (no computation).
        out = jax.eval_shape(step, state, params)[1]
        return state, jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), out)

    def run_block_until_done(state, params):
        # Without a record the block is a loop that stops once every run is done: a scan would
        # go on through idle steps, and each one copies the chunk's state out of a `cond`.
        def cond(carry):
            i, s = carry
            return (i < block) & ~jnp.all(engine.done(config, s))

        _, state = jax.lax.while_loop(cond, lambda c: (c[0] + 1, step(c[1], params)[0]), (jnp.int32(0), state))
        return state, None

    if not record:
        return init, jax.jit(run_block_until_done, donate_argnums=0)

    def run_block_skipping(state, params):
        def body(s, _):
            return jax.lax.cond(
                jnp.all(engine.done(config, s)), lambda s: idle(s, params), lambda s: step(s, params), s
            )

        return jax.lax.scan(body, state, None, length=block)

    return init, jax.jit(run_block_skipping, donate_argnums=0)


def _place_seeds(seeds: np.ndarray, shard: bool):
    """The seed chunk as a device array, split over all local devices when there are several
    and the chunk divides evenly (tests/core/test_sharding.py checks bitwise equality)."""
    devices = jax.local_devices()
    if shard and len(devices) > 1 and len(seeds) % len(devices) == 0:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.array(devices), ("seeds",))
        return jax.device_put(seeds, NamedSharding(mesh, PartitionSpec("seeds")))
    return jnp.asarray(seeds)


def _init_state(init, seeds: np.ndarray, params, shard: bool):
    """The chunk's initial state, every leaf placed like the seeds. XLA leaves a leaf that does
    not depend on the seed (a step counter at 0) replicated, while a block's outputs are all
    split over the seeds; a second block would then meet another input placement than the
    first and compile the block program again."""
    placed = _place_seeds(seeds, shard)
    state = init(placed, params)
    if isinstance(placed.sharding, jax.sharding.NamedSharding):
        state = jax.device_put(state, placed.sharding)
    return state


def fit_rows(a: np.ndarray, K: int) -> np.ndarray:
    """A trajectory [S, k, ...] cut or zero-padded to K rows (rows after a run ended are zeros)."""
    if a.shape[1] >= K:
        return a[:, :K]
    return np.concatenate([a, np.zeros((a.shape[0], K - a.shape[1], *a.shape[2:]), a.dtype)], axis=1)


def _progress_callback(progress, engine: Engine, config: Any) -> Callable[[int, int], None] | None:
    """progress may be None/False (silent), True (a Progress line on stderr) or a callable
    (done_blocks, total_blocks)."""
    if progress is True:
        return Progress(f"{engine.name} {getattr(config, 'policy', '')}".strip())
    return progress or None


def _compile(fns, params, seeds: np.ndarray, shard: bool) -> None:
    """Compile a chunk's init and block programs (jit keeps them for the calls that follow).
    init runs on the chunk (its state gives the block program's argument shapes and
    placement); the block program is lowered and compiled without running."""
    init, run_block = fns
    run_block.lower(_init_state(init, seeds, params, shard), params).compile()


def _run_chunk(
    engine: Engine,
    config: Any,
    params: Any,
    seeds: np.ndarray,
    fns,
    n_blocks: int,
    record: bool,
    shard: bool,
    on_block: Callable[[int], None],
):
    """One seed chunk to its end: (metrics, trajectories [S, steps run, ...] or None), on the
    host, so the chunk's device work has finished when it returns. on_block(n) is called after
    every block with the blocks it accounts for (all the rest when the chunk ended early)."""
    init, run_block = fns
    state = _init_state(init, seeds, params, shard)
    outs = []
    for b in range(n_blocks):
        state, out = run_block(state, params)
        if record:
            out = jax.tree_util.tree_map(np.asarray, out)
            if engine.skip_done_in_block:  # scan stacked steps first
                out = jax.tree_util.tree_map(lambda a: np.swapaxes(a, 0, 1), out)
            outs.append(out)
        ended = bool(np.asarray(engine.done(config, state)).all())
        on_block(n_blocks - b if ended else 1)
        if ended:
            break
    traj = {k: np.concatenate([o[k] for o in outs], axis=1) for k in outs[0]} if record else None
    return engine.finalize(config, params, state), traj


LANE_BLOCK = 128


def _lane_block(block: int) -> int:
    """Steps per block in lanes: the largest divisor of the chunks' `block` up to LANE_BLOCK, or
    `block` itself when that divisor is below LANE_BLOCK / 4 (too many host round trips)."""
    sub = max(d for d in range(1, min(block, LANE_BLOCK) + 1) if block % d == 0)
    return sub if sub >= LANE_BLOCK // 4 else block


def _use_lanes(engine: Engine, record: bool, n_runs: int, chunk: int, lanes: bool | None) -> bool:
    """Whether runs go through lanes that refill (`_run_lanes`) instead of chunks: when asked
    (`lanes=True`; None means False: see `benchmarks/bench_lanes.py` for when they pay), not
    recording, with more runs than one chunk holds."""
    return bool(lanes) and not record and n_runs > chunk


@functools.lru_cache(maxsize=64)
def _merge_fn():
    """Jitted (state, incoming, take) -> state with lane i replaced by incoming[i] where
    take[i] (bool[L]); the old state is donated, so the merge writes in place."""

    def merge(state, incoming, take):
        def leaf(old, new):
            mask = take.reshape(take.shape + (1,) * (old.ndim - 1))
            return jnp.where(mask, new, old)

        return jax.tree_util.tree_map(leaf, state, incoming)

    return jax.jit(merge, donate_argnums=0)


def _run_lanes(
    engine: Engine,
    config: Any,
    params: Any,
    seeds: np.ndarray,
    index: np.ndarray | None,
    lanes: int,
    fns,
    n_blocks: int,
    shard: bool,
    on_block: Callable[[int], None],
) -> dict[str, np.ndarray]:
    """Every run of `seeds` (with params point index[i] of the stacked `params`, or the shared
    `params` when index is None) through `lanes` lanes of one compiled block program: after each
    block, a lane whose run has ended (`engine.done`, or its `n_blocks` blocks used, as a chunk
    would) hands its final state over and takes the next waiting run, so the lanes never wait
    for the slowest run of a chunk. A run's steps are those of its chunk run (every lane is
    independent), so its metrics are bitwise the same. Runs start in seed order, initialized
    `lanes` at a time. Returns the metrics of every run, in seed order. on_block(n) counts
    run-blocks: n_blocks per run in all."""
    init, run_block = fns
    n = len(seeds)
    merge = _merge_fn()

    def point(runs: np.ndarray):
        return params if index is None else jax.tree_util.tree_map(lambda a: a[index[runs]], params)

    def fresh(first: int):
        """Initial states of runs first .. first + lanes - 1 (the last run repeated past n)."""
        runs = np.minimum(np.arange(first, first + lanes), n - 1)
        return runs, _init_state(init, seeds[runs], point(runs), shard)

    held, state = fresh(0)  # the run in each lane (-1: none)
    lane_params = point(held)
    blocks = np.zeros(lanes, np.int64)  # blocks each lane's run has taken
    queued, ready = fresh(lanes)  # the next `lanes` runs, initialized
    ready_next, nxt = 0, lanes  # next unused entry of `queued`; next run to start
    finals: list[Any] = [None] * n
    while True:
        state, _ = run_block(state, lane_params)
        blocks += 1
        live = held >= 0
        ended = live & (np.asarray(engine.done(config, state)) | (blocks >= n_blocks))
        on_block(int((live & ~ended).sum()) + int((n_blocks - blocks[ended] + 1).sum()))
        if not ended.any():
            continue
        host = jax.tree_util.tree_map(np.asarray, state)
        for lane in np.flatnonzero(ended):
            finals[held[lane]] = jax.tree_util.tree_map(lambda a: a[lane], host)
        held[ended] = -1
        free = list(np.flatnonzero(ended))
        while free and nxt < n:
            if ready_next == lanes:  # every initialized run has started: initialize the next ones
                queued, ready = fresh(nxt)
                ready_next = 0
            # One merge per batch of initialized runs (`source` indexes this `ready`).
            k = min(len(free), lanes - ready_next, n - nxt)
            take = np.zeros(lanes, bool)
            source = np.zeros(lanes, np.int32)
            for lane in free[:k]:
                take[lane], source[lane] = True, ready_next
                held[lane], blocks[lane] = queued[ready_next], 0
                ready_next += 1
                nxt += 1
            free = free[k:]
            incoming = jax.tree_util.tree_map(lambda a: a[source], ready)
            state = merge(state, incoming, jnp.asarray(take))
        if index is not None:
            lane_params = point(np.maximum(held, 0))
        if (held < 0).all():
            break
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *finals)
    return engine.finalize(config, point(np.arange(n)), stacked)


def simulate(
    config: Any,
    params: Any = None,
    seeds: Sequence[int] = (0,),
    *,
    engine: Engine | None = None,
    record: bool = False,
    seed_chunk: int | None = None,
    block_steps: int | None = None,
    progress: Callable[[int, int], None] | bool | None = None,
    shard: bool = True,
    warn: bool = True,
    lanes: bool | None = None,
) -> Results:
    """Run `config` with `params` for every seed; see the module docstring.

    params: the engine's Params (default `engine.default_params(config)`). engine: default the
    engine whose Config `config` is.
    record: also return per-step trajectories (memory O(S K)). seed_chunk: seeds per vmapped
    call. block_steps: steps per jitted call (default min(max steps, 1024)).
    progress: None, True, or a callback progress(done_blocks, total_blocks), called with 0 before
    the first block and after every block.
    shard: split each chunk over all local devices (when it divides evenly).
    warn: issue `engine.check`'s warnings as RuntimeWarning.
    lanes: run the seeds through lanes that refill when a run ends instead of chunks that wait
    for their slowest run (when not recording and there are more seeds than one chunk); the
    metrics are bitwise the same. They pay a little when run lengths spread widely (offline on
    the `mix` workload, longest run 4x the mean: 1.05-1.12x at 1024 seeds) and cost 5-20% when
    they do not (docs/benchmarks.md, "Lanes that refill"), so they are off by default (None).
    """
    # Every argument is checked here, before anything compiles: a wrong type would otherwise
    # surface as an AttributeError from inside a traced step.
    if engine is None:
        engine = engine_of(config)
    else:
        require(
            isinstance(engine, Engine),
            "engine",
            "an Engine instance (jaxsched.get_engine(name), or None for the engine of the config)",
            engine,
        )
        require(
            isinstance(config, engine.Config),
            "config",
            f"a {engine.Config.__name__} (the Config of engine {engine.name!r})",
            type(config).__name__,
        )
    params = engine.default_params(config) if params is None else params
    require(
        isinstance(params, engine.Params),
        "params",
        f"a {engine.Params.__name__} of engine {engine.name!r} (from its make_params), or None",
        type(params).__name__,
    )
    require_bool(record, "record")
    require_bool(shard, "shard")
    require_bool(warn, "warn")
    require(lanes is None or isinstance(lanes, bool), "lanes", "None, True or False", lanes)
    require(
        progress is None or isinstance(progress, bool) or callable(progress),
        "progress",
        "None, True, False or a callable progress(done_blocks, total_blocks)",
        progress,
    )
    seeds = check_seeds(seeds)
    merged, traj, wall, compile_s = simulate_runs(
        engine, config, params, seeds, None, record, seed_chunk, block_steps, progress, shard, lanes
    )
    if warn:
        for msg in engine.check(config, merged):
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return Results(engine.name, config, seeds, merged, traj, wall, compile_s)


def simulate_runs(
    engine: Engine,
    config: Any,
    params: Any,
    seeds: np.ndarray,
    points: np.ndarray | None,
    record: bool,
    seed_chunk,
    block_steps,
    progress,
    shard: bool,
    lanes: bool | None = None,
):
    """Runs seeds[i] (with params point points[i] of the stacked `params` when points is not
    None, else the shared `params`) in vmapped chunks, or in lanes that refill
    (`_use_lanes`); (metrics, trajectories, wall_s, compile_s)."""
    n_runs = len(seeds)
    per_run = points is not None
    chunk = (
        default_seed_chunk(engine, config, n_runs)
        if seed_chunk is None
        else min(n_runs, require_int(seed_chunk, "seed_chunk", lo=1))
    )
    pad = -n_runs % chunk
    padded = np.concatenate([seeds, np.repeat(seeds[-1:], pad)])
    stacked_params = params
    if per_run:
        index = np.concatenate([points, np.repeat(points[-1:], pad)])
        params = jax.tree_util.tree_map(lambda a: a[index], params)
    K = engine.max_steps(config)
    block = min(K, DEFAULT_BLOCK if block_steps is None else require_int(block_steps, "block_steps", lo=1))
    fns = _compiled(engine, config, block, bool(record), per_run)
    report = _progress_callback(progress, engine, config)
    n_blocks = -(-K // block)
    use_lanes = _use_lanes(engine, bool(record), n_runs, chunk, lanes)
    if use_lanes:
        # Shorter blocks, so a lane idles little between its run's end and its refill; they
        # divide the chunks' blocks, so a run cut at the step bound takes the same steps.
        sub = _lane_block(block)
        n_blocks, block = n_blocks * (block // sub), sub
        fns = _compiled(engine, config, block, False, per_run)
    # Progress units: blocks of a chunk, or blocks of a run through the lanes.
    total, done = n_blocks * (n_runs if use_lanes else len(padded) // chunk), [0]

    def on_block(n: int) -> None:
        done[0] += n
        if report is not None:
            report(done[0], total)

    def chunk_params(c0: int):
        if not per_run:
            return params
        return jax.tree_util.tree_map(lambda a: a[c0 : c0 + chunk], params)

    if report is not None:
        report(0, total)  # the bar appears before the first block compiles and runs
    t0 = time.perf_counter()
    phase = getattr(report, "phase", None)
    if phase is not None:
        phase("compiling")
    _compile(fns, chunk_params(0), padded[:chunk], shard)
    compile_s = time.perf_counter() - t0
    if phase is not None:
        phase(None)
    if use_lanes:
        index = np.arange(n_runs) if per_run else None
        parts = [(_run_lanes(engine, config, params, seeds, index, chunk, fns, n_blocks, shard, on_block), None)]
    else:
        parts = [
            _run_chunk(
                engine, config, chunk_params(c0), padded[c0 : c0 + chunk], fns, n_blocks, record, shard, on_block
            )
            for c0 in range(0, len(padded), chunk)
        ]
    wall = time.perf_counter() - t0
    if isinstance(report, Progress):
        report.close(f"done in {wall:.1f} s")
    merged = {k: np.concatenate([m[k] for m, _ in parts])[:n_runs] for k in parts[0][0]}
    traj = None
    if record:
        K_out = engine.trajectory_length(config, merged)
        traj = {k: np.concatenate([fit_rows(t[k], K_out) for _, t in parts])[:n_runs] for k in parts[0][1]}
    grown = None if engine.regrow is None else engine.regrow(config, stacked_params, merged)
    if grown is not None:
        # Runs that outgrew a table run again with larger tables; their results replace the
        # stopped runs' (a table's size never changes a finished run's result).
        bigger, bigger_params, again = grown
        sub, sub_traj, sub_wall, sub_compile = simulate_runs(
            engine,
            bigger,
            bigger_params,
            seeds[again],
            None if points is None else points[again],
            record,
            seed_chunk,
            block_steps,
            progress,
            shard,
            lanes,
        )
        for k in sub:
            merged[k][again] = sub[k]
        if record:
            K_out = max(traj[next(iter(traj))].shape[1], sub_traj[next(iter(sub_traj))].shape[1])
            traj = {k: fit_rows(v, K_out) for k, v in traj.items()}
            for k in traj:
                traj[k][again] = fit_rows(sub_traj[k], K_out)
        wall, compile_s = wall + sub_wall, compile_s + sub_compile
    merged = {k: v for k, v in merged.items() if not k.startswith("_")}
    return merged, traj, wall, compile_s


def simulate_points(
    config: Any,
    params_list: Sequence[Any],
    seeds: Sequence[int] = (0,),
    *,
    engine: Engine | None = None,
    record: bool = False,
    seed_chunk: int | None = None,
    block_steps: int | None = None,
    progress: Callable[[int, int], None] | bool | None = None,
    shard: bool = True,
    warn: bool = True,
    lanes: bool | None = None,
) -> list[Results]:
    """Run every (params point, seed) pair of one static `config` in the same vmapped chunks:
    a grid of arrival rates or budgets costs one compilation and fills the vector lanes even
    with few seeds. Returns one `Results` per point, each equal to `simulate(config, point,
    seeds)` (runs are independent, so the grouping changes no result; wall_s is the shared
    wall time). seed_chunk counts (point, seed) runs; lanes as in `simulate`."""
    if engine is None:
        engine = engine_of(config)
    require(
        isinstance(config, engine.Config),
        "config",
        f"a {engine.Config.__name__} (the Config of engine {engine.name!r})",
        type(config).__name__,
    )
    require(
        isinstance(params_list, (list, tuple)) and len(params_list) >= 1,
        "params_list",
        "a non-empty list of Params",
        params_list,
    )
    for i, p in enumerate(params_list):
        require(
            isinstance(p, engine.Params),
            f"params_list[{i}]",
            f"a {engine.Params.__name__} of engine {engine.name!r}",
            type(p).__name__,
        )
    for flag, name in ((record, "record"), (shard, "shard"), (warn, "warn")):
        require_bool(flag, name)
    require(lanes is None or isinstance(lanes, bool), "lanes", "None, True or False", lanes)
    require(
        progress is None or isinstance(progress, bool) or callable(progress),
        "progress",
        "None, True, False or a callable progress(done_blocks, total_blocks)",
        progress,
    )
    seeds = check_seeds(seeds)
    P, S = len(params_list), len(seeds)
    try:
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *params_list)
    except ValueError:
        raise ConfigError(
            "params_list must share every array shape (the same number of types and rate periods)"
        ) from None
    points = np.repeat(np.arange(P), S)
    merged, traj, wall, compile_s = simulate_runs(
        engine, config, stacked, np.tile(seeds, P), points, record, seed_chunk, block_steps, progress, shard, lanes
    )
    out = []
    for i in range(P):
        rows = slice(i * S, (i + 1) * S)
        m = {k: v[rows] for k, v in merged.items()}
        if warn:
            for msg in engine.check(config, m):
                warnings.warn(f"point {i}: {msg}", RuntimeWarning, stacklevel=2)
        t = None if traj is None else {k: v[rows] for k, v in traj.items()}
        out.append(Results(engine.name, config, seeds, m, t, wall, compile_s))
    return out


def trajectory_rows(results: Results, s: int, kind: int) -> dict[str, np.ndarray]:
    """The recorded steps of seed index s whose "kind" is `kind` (e.g. an engine's batch
    steps), with start_s and tau_s: float64 values of the double-float words t_hi / t_lo and
    tau_hi / tau_lo (engines with a continuous clock record them)."""
    if results.trajectories is None:
        raise ConfigError("batches() needs simulate(..., record=True)")
    from .clock import DF

    rows = results.trajectories["kind"][s] == kind
    out = {k: v[s][rows] for k, v in results.trajectories.items()}
    out["start_s"] = DF(out["t_hi"], out["t_lo"]).to_numpy()
    out["tau_s"] = DF(out["tau_hi"], out["tau_lo"]).to_numpy()
    return out
