"""The recipes of docs/contributing.md are true: an engine and a policy added from outside the
package, by the steps the recipes list, work with the runner, sweeps and the conformance kit."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

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


RECIPES = Path(__file__).resolve().parents[2] / "docs" / "contributing.md"


def _recipe(title: str, bullet: str) -> str:
    """The text of one bullet (`*From your own code*`, ...) of the recipe `**How to add TITLE**`."""
    text = RECIPES.read_text(encoding="utf-8")
    assert f"**How to add {title}**" in text, f"docs/contributing.md has no recipe 'How to add {title}'"
    recipe = text.split(f"**How to add {title}**", 1)[1].split("\n**", 1)[0]
    items = re.split(r"\n- ", recipe)
    found = [item for item in items if item.startswith(bullet)]
    assert len(found) == 1, f"the recipe 'How to add {title}' has no single bullet {bullet!r}"
    return found[0]


def test_the_engine_recipe_names_what_the_toy_engine_builds(toy):
    # The recipe that tests/toy_engine.py follows is the one the docs print: every Engine field
    # the recipe's "from your own code" step names is one the toy engine sets, and the steps
    # it names exist under those names.
    from jaxsched.engine import Engine

    text = _recipe("an engine", "*From your own code*")
    named = set(re.findall(r"`([A-Za-z_][A-Za-z_0-9]*)", text))
    fields = {f.name for f in dataclasses.fields(Engine)}
    required = named & fields
    assert {"init", "step", "done", "finalize", "METRICS", "max_steps", "working_set_bytes", "peak_bytes"} <= required
    for name in sorted(required):
        assert getattr(toy.ENGINE, name) is not None, f"the recipe names {name}, which the toy engine leaves unset"
    assert "jaxsched.register_engine(" in text
    import jaxsched

    assert callable(jaxsched.register_engine)


def test_the_policy_recipe_names_the_function_that_registers_a_policy():
    import jaxsched

    text = _recipe("a policy", "*From your own code*")
    assert "jaxsched.register_policy(engine, name, fn, doc," in text
    assert callable(jaxsched.register_policy)
    built_in = _recipe("a policy", "*As a built-in*")
    for path in ("jaxsched/<engine>/policies.py", "jaxsched/<engine>/registry.py", "tests/reference/<engine>.py"):
        assert f"`{path}`" in built_in
