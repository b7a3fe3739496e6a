"""Explicit instances: run given (s, o, l, u) arrays, many instances at once.

The shared runner (`jaxsched.simulate`) draws each run's jobs and intervals from its seed. The
theory checks (two-point lengths, the lower-bound construction, the paper's examples) and the
benchmarks need the engine on given arrays instead:

    metrics = execute(params, s, o, low, high, policy="amin", seeds=0)   # {name: float64[S]}
    jobs = execute(..., per_job=True)["jobs"]     # c, evictions, wasted: int[S, n]
    rows = execute(..., record_steps=K)["steps"]  # memory, evicted, ...: [S, K]

`execute` runs the engine's own `step` through the shared runner (`batchmodel.run_instances`:
the instances are the runs' params), so its metrics equal `simulate`'s for the same instance.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..batchmodel import INT_LIMIT, Instance, OfflineParams, instance_engine, run_instances
from ..errors import reads_from, refuse_ignored, require, require_int
from ..run import fit_rows
from ..workload import Batch, Constant, Independent, UniformInt
from .config import IntervalConfig, check_capacity, start_quanta, with_start
from .engine import ENGINE, start
from .intervals import check_instance
from .registry import POLICIES
from .state import IntervalState


def policy_config(policy: str, n: int, max_upper: int = 1, **options) -> IntervalConfig:
    """A Config for explicit instances of n jobs whose upper bounds u_i are <= max_upper: only
    `policy`, its options (eviction_key, amax_order) and max_upper (the static width of the
    engine's completion histogram) matter; the workload is a placeholder never sampled."""
    return IntervalConfig(
        Batch(Independent(Constant(1), UniformInt(1, max_upper), name="explicit"), n), policy=policy, **options
    )


def _start(config: IntervalConfig, inst: Instance, seed) -> IntervalState:
    return start(*inst.jobs, seed, config.policy, start_q=inst.params.start_q)


def _per_job(state: IntervalState) -> dict:
    return {f"jobs.{k}": np.asarray(getattr(state, k)) for k in ("c", "evictions", "wasted", "est")}


# The engine on given instances: init takes (s, o, low, high) from the run's params.
INSTANCES = instance_engine(ENGINE, _start, _per_job)


def execute(
    params: OfflineParams,
    s,
    o,
    low,
    high,
    *,
    policy: str = "amin",
    seeds=0,
    eviction_key: str = "stale",
    amax_order: str = "sorted",
    per_job: bool = False,
    record_steps: int = 0,
    max_steps: int | None = None,
    start_fraction: float = 0.0,
    progress=None,
    lanes: bool | None = None,
    seed_chunk: int | None = None,
) -> dict:
    """Run `policy` on each instance (s, o, low, high: int[S, n] or int[n], tokens; validated:
    0 <= s, 1 <= l <= o <= u, s + u <= M); seeds (uint32[S] or one) drive its random
    tie-breaks; one instance with S seeds runs it S times.

    Returns the engine's METRICS (float64[S] each); with per_job, also "jobs": {c, evictions,
    wasted, est} int[S, n]; with record_steps = K > 0 (runs K steps, no early stop), also
    "steps": {memory, decoding, prefill_tokens, evicted, live} [S, K]. max_steps (default
    4 n u_max + 64, u_max the largest u rounded up to a power of two) cuts a run; `done` says
    which finished. start_fraction: A_min's and A_l's starting estimate (`make_params`; it
    replaces any that `params` holds). The runs go through the shared runner
    (`batchmodel.run_instances`): instances per chunk `seed_chunk`, device sharding, `progress`
    and `lanes` as in `jaxsched.simulate`; the chunking changes no number.
    """
    M = int(params.capacity_tokens)
    s, o, low, high = (np.atleast_2d(a) for a in check_instance(s, o, low, high, M))
    seeds = np.atleast_1d(np.asarray(seeds, np.uint32))
    require(
        seeds.ndim == 1 and len(seeds) in (1, s.shape[0]) or s.shape[0] == 1,
        "seeds",
        f"one seed or one per instance ({s.shape[0]})",
        seeds.shape,
    )
    S, n = max(s.shape[0], len(seeds)), s.shape[1]
    s, o, low, high = (np.broadcast_to(a, (S, n)) for a in (s, o, low, high))
    check_capacity(M, n, int((s + high).max()))
    width = 1 << max(0, int(high.max()) - 1).bit_length()  # a power of 2: few compilations
    config = policy_config(policy, n, width, eviction_key=eviction_key, amax_order=amax_order)
    q = start_quanta(start_fraction, int(high.max()))
    if start_fraction != 0.0:
        refuse_ignored(["start_fraction"], {"policy": policy}, reads_from(POLICIES, "policy"))
    params = with_start(params, q)
    require(
        isinstance(record_steps, int) and 0 <= record_steps <= 1 << 20,
        "record_steps",
        "an int in [0, 2^20]",
        record_steps,
    )
    if max_steps is not None:
        max_steps = require_int(max_steps, "max_steps", lo=1, hi=INT_LIMIT)
    if record_steps:
        max_steps = record_steps
    config = replace(config, max_steps=max_steps)
    seeds = np.broadcast_to(seeds, (S,))
    out, rows = run_instances(
        INSTANCES,
        config,
        params,
        (s, o, low, high),
        seeds,
        record=bool(record_steps),
        progress=progress,
        lanes=lanes,
        seed_chunk=seed_chunk,
    )
    jobs = {k.split(".", 1)[1]: out.pop(k) for k in list(out) if k.startswith("jobs.")}
    if per_job:
        out["jobs"] = jobs
    if record_steps:
        out["steps"] = {k: fit_rows(v, record_steps) for k, v in rows.items() if k != "time_s"}
    return out
