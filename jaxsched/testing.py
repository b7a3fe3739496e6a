"""The conformance kit: the checks every engine passes, run over every registered engine.

Each engine declares a small example configuration (`Engine.example()`, a run of a second or
two). `check_engine(engine)` runs every check below on it and raises AssertionError naming the
first one that fails; `tests/core/test_conformance.py` runs it for every name in
`jaxsched.registry.ENGINES`, so an engine added with `register_engine` is tested by being
registered. The checks:

- `check_protocol`: metric table, policy registry (resolvable, documented, options that are
  fields), sweepable fields, the config accepting exactly the registered policy names.
- `check_run`: `simulate` returns exactly the metric table, float64 per seed, whole numbers for
  integer units, no NaN; recorded trajectories have one row per seed.
- `check_pure_steps`: `init`, `step` and `done` stepped by hand (jitted, one run) reach the
  runner's metrics bitwise, and a run that is done stays unchanged by further steps.
- `check_invariance`: the same seeds in another order, in chunks of one seed, and one seed
  alone give bitwise the same per-seed metrics (chunking and batching change no number).
- `check_bad_input`: an unknown policy, an unknown params keyword and bad seeds each raise one
  ConfigError before anything compiles.
- `check_sharding` (needs two or more devices, e.g. XLA_FLAGS=
  --xla_force_host_platform_device_count=2 before JAX starts; not part of `check_engine`): the
  seeds sharded over the devices give bitwise the metrics of one device.

Agreement with a plain-Python reference is engine-specific (each engine's tests compare
trajectories with `tests/reference/<engine>.py` under hypothesis); `check_engine` takes an
optional `reference(config, params, seed) -> {metric: float}` to include it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import numpy as np

from .engine import Engine, Metric
from .errors import ConfigError
from .registry import Registry

SEEDS = (3, 1, 2)


def _run(engine: Engine, config: Any, seeds=SEEDS, **kw):
    from .run import simulate

    return simulate(config, engine.make_params(config), list(seeds), engine=engine, progress=False, **kw)


def check_protocol(engine: Engine) -> None:
    """The engine's tables and registry agree with its Config and Params."""
    cfg = engine.example()
    assert isinstance(cfg, engine.Config), f"{engine.name}: example() must be a {engine.Config}"
    assert engine.METRICS and all(isinstance(m, Metric) and m.unit and m.doc for m in engine.METRICS.values()), (
        f"{engine.name}: METRICS"
    )
    assert isinstance(engine.POLICIES, Registry), f"{engine.name}: POLICIES must be a Registry"
    cfg_f, par_f = set(engine.config_fields()), set(engine.params_fields())
    assert "policy" in cfg_f and par_f and not cfg_f & par_f, f"{engine.name}: sweepable fields"
    for name, entry in engine.POLICIES.items():
        assert callable(entry.fn) and entry.doc, f"{engine.name} policy {name}: fn and doc"
        assert set(entry.options) <= cfg_f | par_f, (
            f"{engine.name} policy {name}: options {set(entry.options) - cfg_f - par_f} are not Config or Params fields"
        )
        assert dataclasses.replace(cfg, policy=name).policy == name
    assert set(engine.size_fields) <= cfg_f, f"{engine.name}: size_fields must be Config fields"


def check_run(engine: Engine) -> Any:
    """`simulate` on the example: exactly the metric table, per seed, finite where numeric."""
    cfg = engine.example()
    res = _run(engine, cfg, record=True)
    assert list(res.metrics) == list(engine.METRICS), (
        f"{engine.name}: finalize gives {list(res.metrics)}, METRICS lists {list(engine.METRICS)}"
    )
    for k, v in res.metrics.items():
        assert v.dtype == np.float64 and v.shape == (len(SEEDS),), f"{engine.name} {k}: {v.shape}"
        if engine.METRICS[k].integer:
            finite = v[np.isfinite(v)]
            assert np.array_equal(finite, np.round(finite)), f"{engine.name} {k}: not whole"
    assert res.trajectories and all(t.shape[0] == len(SEEDS) for t in res.trajectories.values())
    return res


def check_pure_steps(engine: Engine) -> None:
    """init / step / done by hand, one run: the runner's metrics bitwise, and steps after the
    end change nothing."""
    import jax

    cfg = engine.example()
    params = engine.make_params(cfg)
    seed = np.uint32(SEEDS[0])
    n = engine.max_steps(cfg)
    step = jax.jit(lambda p, st: engine.step(cfg, p, st, False)[0])
    run = jax.jit(lambda p, s: jax.lax.fori_loop(0, n, lambda _, st: step(p, st), engine.init(cfg, p, s)))
    state = run(params, seed)
    assert bool(engine.done(cfg, state)), f"{engine.name}: not done after max_steps = {n}"
    again = step(params, state)
    same = jax.tree_util.tree_all(
        jax.tree_util.tree_map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), state, again)
    )
    assert same, f"{engine.name}: a step after the end changed the state"
    batched = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], state)
    by_hand = engine.finalize(cfg, params, batched)
    ref = _run(engine, cfg, seeds=[int(seed)]).metrics
    for k in engine.METRICS:
        assert np.asarray(by_hand[k], np.float64).tobytes() == ref[k].tobytes(), (
            f"{engine.name} {k}: stepping by hand gives {by_hand[k]}, the runner {ref[k]}"
        )


def check_invariance(engine: Engine, res: Any = None) -> None:
    """Seed order, chunking and batching change no per-seed number."""
    cfg = engine.example()
    res = res if res is not None else _run(engine, cfg)
    order = [1, 2, 0]
    other = _run(engine, cfg, seeds=[SEEDS[i] for i in order])
    chunked = _run(engine, cfg, seed_chunk=1)
    alone = _run(engine, cfg, seeds=[SEEDS[1]])
    for k, v in res.metrics.items():
        assert other.metrics[k].tobytes() == v[order].tobytes(), f"{engine.name} {k}: seed order"
        assert chunked.metrics[k].tobytes() == v.tobytes(), f"{engine.name} {k}: seed chunks"
        assert alone.metrics[k].tobytes() == v[1:2].tobytes(), f"{engine.name} {k}: alone"


def _raises_config_error(fn: Callable[[], Any], match: str, what: str) -> None:
    try:
        fn()
    except ConfigError as e:
        assert match in str(e), f"{what}: the error {str(e)!r} does not name {match!r}"
        return
    raise AssertionError(f"{what}: no ConfigError")


def check_bad_input(engine: Engine) -> None:
    """One ConfigError, naming the field, for each of a few bad inputs."""
    from .run import simulate

    cfg = engine.example()
    _raises_config_error(
        lambda: dataclasses.replace(cfg, policy="no_such_policy"), "policy", f"{engine.name}: unknown policy"
    )
    try:
        engine.make_params(cfg, no_such_field=1.0)
    except (ConfigError, TypeError) as e:
        assert "no_such_field" in str(e), f"{engine.name}: unknown params keyword: {e}"
    else:
        raise AssertionError(f"{engine.name}: make_params accepted an unknown keyword")
    _raises_config_error(lambda: simulate(cfg, seeds=[-1], engine=engine), "seeds", f"{engine.name}: negative seed")
    _raises_config_error(lambda: simulate(cfg, seeds=[], engine=engine), "seeds", f"{engine.name}: no seeds")


def check_sharding(engine: Engine) -> None:
    """Seeds sharded over the local devices give bitwise the metrics of one device."""
    import jax

    n = len(jax.local_devices())
    assert n >= 2, f"check_sharding needs two or more devices, this process has {n}"
    cfg = engine.example()
    seeds = range(2 * n)
    a = _run(engine, cfg, seeds=seeds, shard=True)
    b = _run(engine, cfg, seeds=seeds, shard=False)
    for k, v in a.metrics.items():
        assert v.tobytes() == b.metrics[k].tobytes(), f"{engine.name} {k}: sharded differs"


def check_reference(
    engine: Engine, reference: Callable[[Any, Any, int], Mapping[str, float]], rel: float = 1e-6
) -> None:
    """The example's metrics against `reference(config, params, seed)` for each seed (the
    metrics the reference returns, to relative tolerance `rel`)."""
    cfg = engine.example()
    params = engine.make_params(cfg)
    res = _run(engine, cfg)
    for j, seed in enumerate(SEEDS):
        want = reference(cfg, params, seed)
        for k, w in want.items():
            got = float(res.metrics[k][j])
            assert abs(got - w) <= rel * max(abs(w), 1.0), f"{engine.name} seed {seed} {k}: engine {got}, reference {w}"


def check_engine(engine: Engine, reference: Callable | None = None) -> None:
    """Every check of the kit on `engine` (and `reference`, if given)."""
    check_protocol(engine)
    res = check_run(engine)
    check_pure_steps(engine)
    check_invariance(engine, res)
    check_bad_input(engine)
    if reference is not None:
        check_reference(engine, reference)
