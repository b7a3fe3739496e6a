"""The README's recipes are true: an engine and a policy added from outside the package, by
the steps the README lists, work with the runner, sweeps and the conformance kit."""

from __future__ import annotations

import dataclasses

import pytest

from jaxsched import testing
from jaxsched.errors import ConfigError
from jaxsched.registry import ENGINES, register_policy, unregister_engine, unregister_policy


@pytest.fixture
def toy():
    from tests import toy_engine

    toy_engine.register()
    yield toy_engine
    unregister_engine("toy")


def test_toy_engine_passes_the_conformance_kit(toy):
    assert "toy" in ENGINES
    testing.check_engine(toy.ENGINE)


def test_toy_engine_sweeps_with_a_policy_added_from_user_code(toy, tmp_path):
    from jaxsched.results import read_rows
    from jaxsched.sweep import run_sweep

    def longest_first(config, params, remaining):
        return toy.jnp.argmax(remaining).astype(toy.jnp.int32)

    register_policy("toy", "longest_first", longest_first, "the most work left first")
    try:
        out = run_sweep(
            toy.ToyConfig(),
            {"policy": ["fifo", "shortest_first", "longest_first"], "num_jobs": [4, 8]},
            range(5),
            tmp_path / "toy.csv",
            progress=False,
        )
        rows = {(r["policy"], int(r["num_jobs"])): float(r["mean_completion_s_mean"]) for r in read_rows(out)}
    finally:
        unregister_policy("toy", "longest_first")
    # Shortest first minimizes the mean completion time on one server; longest first is worst.
    for n in (4, 8):
        assert rows["shortest_first", n] <= rows["fifo", n] <= rows["longest_first", n]
    assert rows["shortest_first", 8] < rows["longest_first", 8]
    with pytest.raises(ConfigError, match="policy must be one of"):
        toy.ToyConfig(policy="longest_first")


def test_kit_catches_a_broken_engine(toy):
    # The kit is not vacuous: an engine whose finalize forgets a metric, or whose steps keep
    # changing a finished run, fails it.
    eng = toy.ENGINE

    def forgets(config, params, state):
        return {"num_finished": eng.finalize(config, params, state)["num_finished"]}

    with pytest.raises(AssertionError, match="METRICS lists"):
        testing.check_run(dataclasses.replace(eng, finalize=forgets))

    def restless(config, params, state, record):
        new, out = eng.step(config, params, state, record)
        return type(new)(new.remaining, new.finish, new.step + 1), out

    with pytest.raises(AssertionError, match="a step after the end changed the state"):
        testing.check_pure_steps(dataclasses.replace(eng, step=restless))
