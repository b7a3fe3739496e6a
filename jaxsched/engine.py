"""The engine protocol: what every simulator in jaxsched is, and the registry of engines.

An engine is a pure step function over immutable state, in the shape of gymnax's
`environment.py`:

- `Config` (static, a frozen dataclass): shapes, policy name, step semantics, the end of a run.
  Changing it recompiles. It validates itself when built, before anything compiles.
- `Params` (traced, an equinox Module of arrays): the numbers a sweep may vary without
  recompiling. `make_params(config, **overrides)` builds validated params; with no overrides
  it gives the engine's documented defaults (`default_params`).
- `State` (an equinox Module of fixed-shape arrays; one run, `vmap` adds the seed axis).
- Pure functions `init(config, params, seed) -> state`, `step(config, params, state, record)
  -> (state, out)`, `done(config, state) -> bool` (cheap: read flags, never scan arrays),
  `finalize(config, params, state) -> {metric: float64[...]}` on the host.
- `METRICS`: {name: Metric(unit, doc)}, the names every result carries.
- `POLICIES`: the engine's policy `Registry` (`jaxsched/<engine>/registry.py`, JAX-free), the
  single source of truth for policy names and for the config / params fields each policy reads.
  One policy signature per engine family, documented in the engine's `policies` module.

`jaxsched.run.simulate(engine, config, params, seeds)` runs any engine: block scans, seed
chunks, device sharding, progress, early stop. `jaxsched.sweep.run_sweep` sweeps any engine's
Config and Params fields. An engine registers its name in `jaxsched.registry.ENGINES`; its
package exposes the instance as `ENGINE`.
"""
from __future__ import annotations

import abc
import dataclasses
import inspect
from typing import Any, ClassVar, Generic, Mapping, NamedTuple, TypeVar

import numpy as np

from .errors import ConfigError
from .registry import Registry

# Units whose per-seed values are whole numbers (written as integers in results files), unless
# a metric says otherwise (`Metric.whole`, e.g. a mean number of steps).
INTEGER_UNITS = ("count", "steps", "step", "flag")


# An engine's Config, Params and State types (`Engine[C, P, S]`).
C = TypeVar("C")
P = TypeVar("P")
S = TypeVar("S")


class Metric(NamedTuple):
    """One summary metric of a run: its unit ("tokens", "s", "J", "count", "fraction", ...),
    a one-line definition, and whether each run's value is a whole number (`whole`; None: by
    the unit, `INTEGER_UNITS`)."""
    unit: str
    doc: str
    whole: bool | None = None

    @property
    def integer(self) -> bool:
        """Whether each run's value is a whole number (a count, a step index, a flag)."""
        return self.unit in INTEGER_UNITS if self.whole is None else self.whole


class Engine(abc.ABC, Generic[C, P, S]):
    """Base class of every engine; subclasses are stateless singletons (`ENGINE`)."""

    name: ClassVar[str]
    Config: ClassVar[type]
    Params: ClassVar[type]
    METRICS: ClassVar[Mapping[str, Metric]]
    POLICIES: ClassVar[Registry]          # jaxsched/<engine>/registry.py
    # One scan step is a "step" (dp: a decode step) or an "epoch" (kv: a decision epoch).
    step_unit: ClassVar[str] = "step"
    # Inside a block, skip the steps of a chunk whose runs are all done (lax.cond around the
    # vmapped step) instead of letting them run as no-ops (vmap of a plain scan). Worth it when
    # a step is expensive and runs end at very different times; the cond costs a reduction
    # of `done` and keeps the carry out of XLA's fusion across steps.
    skip_done_in_block: ClassVar[bool] = False
    # Config fields that a run may take as traced values inside a larger config (a size
    # bucket, `pad`): a sweep over them compiles once per bucket instead of once per point.
    size_fields: ClassVar[tuple[str, ...]] = ()

    # ------------------------------------------------------------------ the model

    @abc.abstractmethod
    def make_params(self, config: C, **overrides: Any) -> P:
        """Validated Params; every keyword has a documented default."""

    def default_params(self, config: C) -> P:
        """The engine's default Params for `config`."""
        return self.make_params(config)

    @abc.abstractmethod
    def init(self, config: C, params: P, seed: Any) -> S:
        """State at the start of run `seed` (uint32 scalar)."""

    @abc.abstractmethod
    def step(self, config: C, params: P, state: S, record: bool) -> tuple[S, dict | None]:
        """(next state, this step's trajectory row {name: array} when `record`, else None).
        A step of a run that is done changes nothing."""

    @abc.abstractmethod
    def done(self, config: C, state: S) -> Any:
        """bool (batch shape of the state): the run has ended; every later step is a no-op."""

    @abc.abstractmethod
    def finalize(self, config: C, params: P, state: S) -> dict[str, np.ndarray]:
        """Metrics {name in METRICS: float64[batch]} from the streaming sums, on the host."""

    @abc.abstractmethod
    def max_steps(self, config: C) -> int:
        """Scan steps after which every run is done."""

    # ------------------------------------------------------------------ runner hints

    def trajectory_length(self, config: C, metrics: Mapping[str, np.ndarray]) -> int:
        """Rows of recorded trajectories (later rows are cut, missing ones are zeros)."""
        return self.max_steps(config)

    def example(self) -> C:
        """A small Config of this engine whose runs take a second or two: the conformance kit
        (`jaxsched.testing`) runs every check on it."""
        raise NotImplementedError(f"engine {self.name!r} declares no example configuration")

    @abc.abstractmethod
    def working_set_bytes(self, config: C) -> int:
        """Bytes one run touches per step (sizes the default seed chunk on CPU)."""

    @abc.abstractmethod
    def peak_bytes(self, config: C, record: bool) -> int:
        """Upper estimate of one run's memory, temporaries included (memory budgets)."""

    def check(self, config: C, metrics: Mapping[str, np.ndarray]) -> list[str]:
        """Warnings about results that are not what the config asked for (default none)."""
        return []

    def can_pad(self, config: C) -> bool:
        """Whether runs of `config` can run padded inside a size bucket (`pad`)."""
        return False

    def can_switch(self, config: C) -> bool:
        """Whether runs of `config` can run as one entry of a policy set picked by a traced
        index (`switch`), so that a sweep's policies share one program."""
        return False

    def switch(self, config: C, params: P, policy_set: tuple[str, ...]) -> tuple[C, P]:
        """(config, params) that run `config.policy` as one entry of `policy_set`, bitwise
        the plain config's results; see `can_switch`."""
        raise ConfigError(f"engine {self.name!r} does not switch policies in one program")

    def pad_group(self, config: C) -> Any:
        """A hashable that must agree between configs padded into one bucket (default None):
        an engine whose float results change when an axis is padded from some size (dp: a
        size of 1) keeps such configs apart."""
        return None

    def size_free(self, config: C) -> C:
        """`config` as compared with other configs of a bucket (`jaxsched.buckets`), whose size
        fields are left out of the comparison by name (default: `config` itself). An engine
        whose other fields embed a size (offline: the workload's batch of n requests) returns
        the config at one canonical size, so that those fields agree across sizes."""
        return config

    def pad(self, config: C, params: P, capacity: Mapping[str, int]) -> tuple[C, P]:
        """(bucket config, params) that run `config` with `params` inside the shapes
        `capacity` ({size field: value >= config's}, the fields missing keep the config's
        value): the bucket config has the capacity's shapes, the params carry the run's own
        sizes, and the run's metrics are bitwise those of the unpadded run. Every run padded
        into the same capacity shares one bucket config, so one compiled program."""
        raise ConfigError(f"engine {self.name!r} does not run configs padded into size buckets")

    def trim(self, config: C, trajectories: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Trajectories of `config` recorded by a run padded into a larger bucket config, cut
        to the shapes the unpadded run records (default: unchanged)."""
        return dict(trajectories)

    def describe(self, config: C) -> dict[str, Any]:
        """The configuration's columns in result rows (plain values)."""
        return {"policy": config.policy}

    # ------------------------------------------------------------------ sweepable fields

    def config_fields(self) -> tuple[str, ...]:
        """Config fields a sweep may vary."""
        return tuple(f.name for f in dataclasses.fields(self.Config))

    def params_fields(self) -> tuple[str, ...]:
        """Keywords of `make_params` a sweep may vary."""
        sig = inspect.signature(self.make_params)
        return tuple(n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY)


def get_engine(name: str) -> Engine:
    """The registered engine `name` (ConfigError naming the allowed names otherwise)."""
    from .registry import ENGINES
    return ENGINES[ENGINES.require(name, "engine")].fn


def engine_of(config: Any) -> Engine:
    """The engine whose Config `config` is."""
    from .registry import ENGINES
    for name in ENGINES:
        eng = get_engine(name)
        if isinstance(config, eng.Config):
            return eng
    raise ConfigError(f"config must be the Config of an engine in {ENGINES.names()}, "
                      f"got {type(config).__name__}")
