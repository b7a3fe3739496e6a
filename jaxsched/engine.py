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
Config and Params fields. An engine is one `Engine` value built from these functions and the
runner's hints (no subclass); it registers its name in `jaxsched.registry.ENGINES`, and its
package exposes the value as `ENGINE`.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Generic, Mapping, NamedTuple, TypeVar

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


def _no_warnings(config: Any, metrics: Mapping[str, np.ndarray]) -> list[str]:
    return []


def _unchanged(config: Any) -> Any:
    return config


def _no_group(config: Any) -> Any:
    return None


def _same_trajectories(config: Any, trajectories: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return dict(trajectories)


def _policy_column(config: Any) -> dict[str, Any]:
    return {"policy": config.policy}


# The functions an engine must give, and the hints it may (None: the default filled in by
# `Engine.__post_init__`).
_REQUIRED = ("make_params", "init", "step", "done", "finalize", "max_steps", "working_set_bytes", "peak_bytes")
_STEP_UNITS = ("step", "epoch", "event")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Engine(Generic[C, P, S]):
    """An engine: its types, its pure functions and the runner's hints, as one value (in the
    spirit of optax's `GradientTransformation`). Every engine module builds one with
    `Engine(name=..., Config=..., init=init, step=step, ...)` and exposes it as `ENGINE`; an
    engine from user code does the same and calls `jaxsched.registry.register_engine`.
    Engines compare and hash by identity (each is one value, used as a static argument).

    The model (required):
      name: the registered name. Config, Params: the types (see the module docstring).
      METRICS: {name: Metric}. POLICIES: the policy `Registry` (`jaxsched/<engine>/registry.py`).
      make_params(config, **overrides) -> Params: validated; every keyword has a documented
        default (the keyword-only parameters are the sweepable params fields).
      init(config, params, seed) -> State: state at the start of run `seed` (uint32 scalar).
      step(config, params, state, record) -> (State, row | None): one scan step; the row
        {name: array} only when `record`. A step of a run that is done changes nothing.
      done(config, state) -> bool (batch shape of the state): the run has ended; cheap (read
        flags, never scan arrays).
      finalize(config, params, state) -> {metric in METRICS: float64[batch]}, on the host.
      max_steps(config) -> int: scan steps after which every run is done.
      working_set_bytes(config) -> int: bytes one run touches per step (sizes the seed chunk).
      peak_bytes(config, record) -> int: upper estimate of one run's memory (memory budgets).

    Runner hints (optional):
      step_unit: what one scan step is: "step" (dp: a decode step), "epoch" (kv, budget: a
        decision epoch) or "event" (network: the events of a recorded trajectory row; without
        a record a scan step takes several).
      skip_done_in_block: a block ends as soon as every run of the chunk is done (a
        while_loop over the vmapped step; recording: lax.cond around it) instead of running
        the remaining steps as no-ops. Worth it when a step is expensive and runs end at very
        different times; the check costs a reduction of `done` per step.
      trajectory_length(config, metrics) -> int: rows of recorded trajectories (later rows are
        cut, missing ones are zeros); default max_steps(config).
      example() -> Config: a small config whose runs take a second or two; the conformance kit
        (`jaxsched.testing`) runs every check on it.
      check(config, metrics) -> [str]: warnings about results that are not what the config
        asked for (default none).
      describe(config) -> {column: value}: the config's columns in result rows (default the
        policy).
      sweep_hidden: Config fields a sweep does not vary (dp's policy_set: sweep the policy).
      regrow(config, params, metrics) -> (config, params, bool[S]) | None: tables sized to the
        run. When some runs outgrew a table the config sizes (they say so in their metrics;
        metrics whose names start with "_" are the runner's only and dropped from results), the
        config and params with larger tables and which runs to repeat with them; None when none
        did. `params` are the call's (stacked over points in `simulate_points`; a padded run's
        own sizes live in them). The runner repeats those runs until none outgrows, so a
        table's size never changes a result (`jaxsched.tables`).

    Size buckets and policy sets (optional; `jaxsched.buckets`):
      size_fields: Config fields a run may take as traced values inside a larger config, so a
        sweep over them compiles once per bucket instead of once per point.
      value_fields: Config fields that are not sizes but that a padded run also carries in its
        params (dp: lookahead_decay, as its window weights), so that configs differing in them
        share a bucket; the bucket config holds any member's value and reads none.
      pad_into(config, params, capacity) -> (bucket config, params): called by `pad` with the
        validated capacity {size field: int >= config's}; the bucket config has the capacity's
        shapes, the params carry the run's own sizes, and the run's metrics are bitwise those of
        the unpadded run. None: the engine never pads.
      pad_check(config): raises ConfigError saying why runs of `config` cannot pad (None:
        every config pads); `can_pad(config)` reads it.
      pad_group(config): a hashable that must agree between configs padded into one bucket
        (default None): an engine whose float results change when an axis is padded from some
        size (dp: a size of 1) keeps such configs apart.
      size_free(config) -> Config: the config as compared with others of a bucket, size
        fields aside (default itself; offline: the workload at one canonical n).
      trim(config, trajectories) -> {name: array}: trajectories of a padded run cut to the
        unpadded run's shapes (default unchanged).
      switch(config, params, policy_set) -> (config, params): run `config.policy` as one entry
        of `policy_set` picked by a traced index, bitwise the plain config's results, so that a
        sweep's policies share one program. None: the engine never switches.
      can_switch(config) -> bool: whether `config` can switch (default: whether switch is set).
    """

    name: str
    Config: type
    Params: type
    METRICS: Mapping[str, Metric]
    POLICIES: Registry
    make_params: Callable[..., P]
    init: Callable[[C, P, Any], S]
    step: Callable[[C, P, S, bool], tuple[S, dict | None]]
    done: Callable[[C, S], Any]
    finalize: Callable[[C, P, S], dict[str, np.ndarray]]
    max_steps: Callable[[C], int]
    working_set_bytes: Callable[[C], int]
    peak_bytes: Callable[[C, bool], int]
    step_unit: str = "step"
    skip_done_in_block: bool = False
    trajectory_length: Callable[[C, Mapping[str, np.ndarray]], int] | None = None
    example: Callable[[], C] | None = None
    check: Callable[[C, Mapping[str, np.ndarray]], list[str]] = _no_warnings
    describe: Callable[[C], dict[str, Any]] = _policy_column
    sweep_hidden: tuple[str, ...] = ()
    regrow: Callable[[C, P, Mapping[str, np.ndarray]], tuple[C, P, np.ndarray] | None] | None = None
    size_fields: tuple[str, ...] = ()
    value_fields: tuple[str, ...] = ()
    pad_into: Callable[[C, P, dict[str, int]], tuple[C, P]] | None = None
    pad_check: Callable[[C], None] | None = None
    pad_group: Callable[[C], Any] = _no_group
    size_free: Callable[[C], C] = _unchanged
    trim: Callable[[C, Mapping[str, np.ndarray]], dict[str, np.ndarray]] = _same_trajectories
    switch: Callable[[C, P, tuple[str, ...]], tuple[C, P]] | None = None
    can_switch: Callable[[C], bool] | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.isidentifier()):
            raise ConfigError(f"Engine name must be an identifier, got {self.name!r}")
        for f in ("Config", "Params"):
            if not isinstance(getattr(self, f), type):
                raise ConfigError(f"Engine {self.name!r}: {f} must be a class, got {getattr(self, f)!r}")
        if not isinstance(self.POLICIES, Registry):
            raise ConfigError(
                f"Engine {self.name!r}: POLICIES must be a jaxsched.registry."
                f"Registry, got {type(self.POLICIES).__name__}"
            )
        if self.step_unit not in _STEP_UNITS:
            raise ConfigError(f"Engine {self.name!r}: step_unit must be one of {_STEP_UNITS}, got {self.step_unit!r}")
        for f in _REQUIRED:
            if not callable(getattr(self, f)):
                raise ConfigError(f"Engine {self.name!r}: {f} must be a function, got {getattr(self, f)!r}")
        fields = {f.name for f in dataclasses.fields(self.Config)} if dataclasses.is_dataclass(self.Config) else set()
        for f in self.size_fields + self.sweep_hidden:
            if f not in fields:
                raise ConfigError(
                    f"Engine {self.name!r}: {f!r} (size_fields / sweep_hidden) is not a field of {self.Config.__name__}"
                )
        # The hints whose defaults read other fields: filled in here, and filled in again by
        # `dataclasses.replace` (which hands the old value back), so that they always read this
        # value's own fields.
        derived = lambda f: getattr(self, f) is None or getattr(getattr(self, f), "derived", False)
        fill = lambda f, fn: (setattr(fn, "derived", True), object.__setattr__(self, f, fn))
        if derived("trajectory_length"):
            fill("trajectory_length", lambda config, metrics: self.max_steps(config))
        if derived("example"):
            fill("example", lambda: self._no_example())
        if derived("can_switch"):
            fill("can_switch", lambda config: self.switch is not None)

    def __repr__(self) -> str:
        return f"Engine({self.name!r})"

    def _no_example(self) -> Any:
        raise NotImplementedError(f"engine {self.name!r} declares no example configuration")

    # ------------------------------------------------------------------ derived

    def default_params(self, config: C) -> P:
        """The engine's default Params for `config`."""
        return self.make_params(config)

    def pad(self, config: C, params: P, capacity: Mapping[str, int]) -> tuple[C, P]:
        """(bucket config, params) that run `config` with `params` inside the shapes
        `capacity` ({size field: value >= config's}, the fields missing keep the config's
        value): the bucket config has the capacity's shapes, the params carry the run's own
        sizes, and the run's metrics are bitwise those of the unpadded run. Every run padded
        into the same capacity shares one bucket config, so one compiled program."""
        from .buckets import check_capacity
        from .errors import require

        if self.pad_into is None:
            raise ConfigError(f"engine {self.name!r} does not run configs padded into size buckets")
        require(isinstance(config, self.Config), "config", f"a {self.Config.__name__}", type(config).__name__)
        if self.pad_check is not None:
            self.pad_check(config)
        require(
            getattr(params, "sizes", None) is None,
            "params",
            "params of an unpadded run (sizes None)",
            "params already padded",
        )
        return self.pad_into(config, params, check_capacity(self, config, capacity))

    def can_pad(self, config: C) -> bool:
        """Whether runs of `config` can run padded inside a size bucket (`pad`)."""
        if self.pad_into is None:
            return False
        try:
            if self.pad_check is not None:
                self.pad_check(config)
        except ConfigError:
            return False
        return True

    def config_fields(self) -> tuple[str, ...]:
        """Config fields a sweep may vary."""
        return tuple(f.name for f in dataclasses.fields(self.Config) if f.name not in self.sweep_hidden)

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
    raise ConfigError(f"config must be the Config of an engine in {ENGINES.names()}, got {type(config).__name__}")
