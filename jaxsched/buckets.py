"""Size buckets: many configurations of different sizes run by one compiled program.

A Config fixes array shapes, so every size a sweep varies (dp: G, B, R) used to be a new program
to compile, and most of a sweep's time was the compiler. An engine that lists `size_fields`
can instead run a config padded into a larger one (`Engine.pad`): the arrays take the bucket's
shapes, the run's own sizes ride in its params as traced values, and the extra workers, slots
or pool entries are masked out, so every metric is bitwise that of the unpadded run
(tests/dp/test_buckets.py). Runs padded into the same capacity share one bucket config, so
one compilation.

`plan_buckets` groups a sweep's points. The rule, greedy from the largest point:
1. points are grouped by everything but their sizes and the engine's `value_fields` (dp's
   lookahead decay, which a padded run carries in its params) (policy, semantics, workload, ...
   must agree, and the engine's `pad_group`), and only configs the engine can pad
   (`Engine.can_pad`) are grouped;
2. the largest remaining point (by `Engine.working_set_bytes`, the engine's per-step work)
   opens a bucket at its own sizes;
3. each smaller point, largest first, joins the bucket when the bucket's work, grown to hold
   it (the elementwise maximum of the sizes), stays within `max_waste` times that point's work
   (default 2: no run does more than about twice its own work) and the grown bucket is a valid
   config;
4. repeat until every point has a bucket.
A caller that knows its runs' lengths may also pass `cheap`, a test of the grown bucket: a
point joins a bucket whose runs cost less than a compilation whatever the waste of step 3
(`jaxsched check theorems` pads its short runs so: `dp.theorems.grid.plan_grid`).
`max_waste` = 1 pads only points whose work equals the bucket's; buckets can be turned off.
A bucket with one point runs unpadded.

With `switch=True` the policy is left out of step 1 for engines that can switch policies by a
traced index (`Engine.can_switch`, dp): a bucket's points of several policies then run in one
program that computes every policy's choice in every run (`DPEngine.switch`): less compiling,
more simulating (benchmarks/bench_sweep.py measures both).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .engine import Engine
from .errors import ConfigError, require_int

DEFAULT_MAX_WASTE = 2.0


def check_max_waste(max_waste: Any) -> float:
    """max_waste as a float in [1, 1e6] (one ConfigError naming the field otherwise)."""
    ok = isinstance(max_waste, (int, float)) and not isinstance(max_waste, bool)
    if not ok or not math.isfinite(max_waste) or not 1.0 <= max_waste <= 1e6:
        raise ConfigError(
            f"bucket max_waste must be a number in [1, 1e6] (the most work a padded "
            f"run may do relative to its own), got {max_waste!r}"
        )
    return float(max_waste)


def check_capacity(engine: Engine, config: Any, capacity: Mapping[str, int]) -> dict[str, int]:
    """The capacity {size field: int} that pads `config`, validated: every key one of the
    engine's size fields and every value at least the config's (fields missing keep it)."""
    if not isinstance(capacity, Mapping):
        raise ConfigError(f"capacity must be a mapping {{size field: int}}, got {capacity!r}")
    out = {f: getattr(config, f) for f in engine.size_fields}
    for name, value in capacity.items():
        if name not in engine.size_fields:
            raise ConfigError(
                f"capacity field {name!r} must be one of {engine.name}'s size fields {engine.size_fields}"
            )
        own = getattr(config, name)
        out[name] = require_int(value, f"capacity {name}", lo=own, hi=2**31 - 1)
    return out


@dataclass
class Bucket:
    """One compiled program's share of a sweep: `config` has the bucket's shapes; `members`
    are indices into the planned list; `padded` is False when every member has the bucket's
    sizes; `policies` the policy set its members switch among (() when they share one)."""

    config: Any
    members: list[int]
    padded: bool
    policies: tuple[str, ...] = ()


def _signature(engine: Engine, config: Any, switch: bool) -> tuple:
    """Everything of a config but its sizes (and its policy when `switch`): configs with equal
    signatures can share a bucket."""
    skip = set(engine.size_fields) | set(engine.value_fields) | ({"policy", "policy_set"} if switch else set())
    config = engine.size_free(config)
    return tuple((f.name, getattr(config, f.name)) for f in dataclasses.fields(config) if f.name not in skip)


def _sizes(engine: Engine, config: Any) -> tuple[int, ...]:
    return tuple(getattr(config, f) for f in engine.size_fields)


def _values(engine: Engine, config: Any) -> tuple:
    return tuple(getattr(config, f) for f in engine.value_fields)


def _grown(engine: Engine, config: Any, sizes: Sequence[int]) -> Any | None:
    """`config` with `sizes`, or None when that is not a valid config (e.g. int32 headroom)."""
    try:
        return dataclasses.replace(config, **dict(zip(engine.size_fields, sizes)))
    except ConfigError:
        return None


def plan_buckets(
    engine: Engine,
    configs: Sequence[Any],
    max_waste: float | None = DEFAULT_MAX_WASTE,
    switch: bool = False,
    cheap: Callable[[Any], bool] | None = None,
) -> list[Bucket]:
    """Group `configs` into buckets by the module's rule; max_waste None: no padding (one bucket
    per distinct config); switch: points of different policies may share a bucket. cheap: a
    test of a grown bucket config whose runs cost less than a compilation (e.g. few slot-steps
    over all seeds): a point also joins such a bucket whatever the waste, since padding it costs
    less than compiling it alone. Buckets come in the order of their first member."""
    if max_waste is not None:
        max_waste = check_max_waste(max_waste)
    if not isinstance(switch, bool):
        raise ConfigError(f"switch must be True or False, got {switch!r}")
    work = [engine.working_set_bytes(c) for c in configs]
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(configs):
        paddable = max_waste is not None and bool(engine.size_fields) and engine.can_pad(c)
        sw = switch and engine.can_switch(c)
        key = ("pad", _signature(engine, c, sw), engine.pad_group(c), sw) if paddable else ("as is", c)
        groups.setdefault(key, []).append(i)
    buckets = []
    for (kind, *_), idx in groups.items():
        if kind == "as is":
            buckets.append(Bucket(configs[idx[0]], idx, False))
            continue
        left = sorted(idx, key=lambda i: (-work[i], i))
        while left:
            first = left.pop(0)
            cap, cfg, members = _sizes(engine, configs[first]), configs[first], [first]
            for i in list(left):
                grown = tuple(map(max, cap, _sizes(engine, configs[i])))
                cand = _grown(engine, cfg, grown) if grown != cap else cfg
                if cand is not None and (
                    engine.working_set_bytes(cand) <= max_waste * work[i] or (cheap is not None and cheap(cand))
                ):
                    cap, cfg = grown, cand
                    members.append(i)
                    left.remove(i)
            members.sort()
            # A member whose value fields differ from the bucket config's reads them from its
            # params, so it runs padded even at the bucket's sizes.
            padded = any(
                _sizes(engine, configs[i]) != cap or _values(engine, configs[i]) != _values(engine, cfg)
                for i in members
            )
            policies = tuple(dict.fromkeys(configs[i].policy for i in members))
            if len(policies) > 1:
                cfg = dataclasses.replace(cfg, policy=policies[0], policy_set=policies)
            buckets.append(Bucket(cfg, members, padded, policies if len(policies) > 1 else ()))
    buckets.sort(key=lambda b: b.members[0])
    return buckets


def simulate_buckets(
    runs: Sequence[tuple[Any, Any]],
    seeds: Sequence[int] = (0,),
    *,
    max_waste: float | None = DEFAULT_MAX_WASTE,
    record: bool = False,
    block_steps: int | None = None,
    seed_chunk: int | None = None,
    progress: bool = False,
    label: str = "runs",
) -> list:
    """`jaxsched.run.simulate` of every (config, params) in `runs` over the same seeds, the runs
    grouped into size buckets (`plan_buckets`): one compiled program per bucket, its runs x
    seeds vmapped together (`simulate_points`). Returns one `Results` per run, in order, each
    bitwise the run's own `simulate` (its config, metrics, and trajectories trimmed to its own
    shapes by `Engine.trim`); wall_s and compile_s are the bucket's, split evenly among its
    runs. max_waste None: no padding (runs of equal configs still share a program).
    seed_chunk counts (run, seed) pairs. progress: one bar over the runs."""
    from .engine import engine_of
    from .progress import Progress, Share
    from .run import simulate_points

    if not isinstance(runs, (list, tuple)) or not runs or not all(isinstance(r, tuple) and len(r) == 2 for r in runs):
        raise ConfigError(f"runs must be a non-empty list of (config, params) pairs, got {runs!r}")
    engine = engine_of(runs[0][0])
    for i, (c, _) in enumerate(runs):
        if not isinstance(c, engine.Config):
            raise ConfigError(f"runs[{i}] must hold a {engine.Config.__name__} like runs[0], got {type(c).__name__}")
    plan = plan_buckets(engine, [c for c, _ in runs], max_waste)
    bar = Progress(label, len(runs), enabled=progress)
    out: list = [None] * len(runs)
    done = 0
    for b, bucket in enumerate(plan, 1):
        cap = {f: getattr(bucket.config, f) for f in engine.size_fields}
        params = [engine.pad(runs[i][0], runs[i][1], cap)[1] if bucket.padded else runs[i][1] for i in bucket.members]
        share = Share(bar, done, len(params), f"bucket {b}/{len(plan)} ({len(params)} runs)")
        res = simulate_points(
            bucket.config,
            params,
            seeds,
            engine=engine,
            record=record,
            block_steps=block_steps,
            progress=share,
            warn=False,
            seed_chunk=seed_chunk,
        )
        for i, r in zip(bucket.members, res):
            own = runs[i][0]
            traj = None if r.trajectories is None else engine.trim(own, r.trajectories)
            out[i] = dataclasses.replace(
                r, config=own, trajectories=traj, wall_s=r.wall_s / len(res), compile_s=r.compile_s / len(res)
            )
        done += len(params)
        bar.update(done)
    bar.close()
    return out
