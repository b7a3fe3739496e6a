"""The registries (`jaxsched.registry`): built-in names, policies added from user code, the
example that adds power of two choices from outside the package, and the references."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxsched.errors import ConfigError
from jaxsched.registry import ENGINES, Registry, policies, register_policy, unregister_policy

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str):
    """The module examples/<name>.py (examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_registry_module_imports_no_jax():
    code = (
        "import sys, jaxsched.registry as r; names = r.ENGINES.names(); "
        "assert 'jax' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m); "
        "print(','.join(names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "dp,kv,offline,interval,budget,network"


def test_engines_resolve_to_their_engine():
    for name in ENGINES:
        assert ENGINES[name].fn.name == name


def test_register_refuses_bad_entries():
    reg = Registry("toy", "policy")
    reg.register("a", lambda: 0, "one", builtin=True)
    with pytest.raises(ConfigError, match="built-in name"):
        reg.register("a", lambda: 1, "again", replace=True)
    for bad in ("", "A", "two words", "1x", None):
        with pytest.raises(ConfigError, match="name must be a lower-case Python identifier"):
            reg.register(bad, lambda: 0, "doc")
    with pytest.raises(ConfigError, match="doc must be"):
        reg.register("b", lambda: 0, "  ")
    with pytest.raises(ConfigError, match="target must be an object or a 'module:attribute'"):
        reg.register("b", "no_colon", "doc")
    reg.register("b", lambda: 0, "doc")
    with pytest.raises(ConfigError, match="taken"):
        reg.register("b", lambda: 1, "doc")
    reg.register("b", lambda: 2, "doc", replace=True)
    assert reg["b"].fn() == 2
    with pytest.raises(ConfigError, match="only a name added from user code"):
        reg.unregister("a")
    with pytest.raises(ConfigError, match=r"field must be one of \('a', 'b'\), got 'c'"):
        reg.require("c", "field")
    with pytest.raises(ConfigError, match="engine must be one of"):
        policies("nope")
    with pytest.raises(ConfigError, match="fn must be callable"):
        register_policy("dp", "x", "not callable", "doc")


# Each registry and the plain-Python reference (module, list of names) that implements it.
REFERENCES = {
    ("dp", "POLICIES"): ("dp", "POLICIES"),
    ("kv", "POLICIES"): ("kv", "POLICIES"),
    ("offline", "POLICIES"): ("offline", "POLICIES"),
    ("interval", "POLICIES"): ("interval", "POLICIES"),
    ("budget", "POLICIES"): ("budget", "POLICIES"),
    ("network", "POLICIES"): ("budget", "POLICIES"),  # every agent runs budget's policies
    ("network", "ROUTERS"): ("network", "ROUTERS"),
}


def test_every_engine_registry_has_a_reference():
    assert {e for e, _ in REFERENCES} == set(ENGINES)


@pytest.mark.parametrize("engine, registry", list(REFERENCES))
def test_reference_implements_every_registered_name(engine, registry):
    module, names = REFERENCES[engine, registry]
    implemented = getattr(importlib.import_module(f"tests.reference.{module}"), names)
    reg = getattr(importlib.import_module(f"jaxsched.{engine}.registry"), registry)
    missing = [p for p, e in reg.items() if e.builtin and p not in implemented]
    assert not missing, f"tests/reference/{module}.py lacks the registered {registry} {missing}"


@pytest.fixture
def user_policy():
    ex = _example("power_of_two")
    ex.register()
    yield ex
    unregister_policy("dp", "my_power_of_two")


def test_user_policy_in_a_sweep_equals_the_builtin(user_policy, tmp_path):
    from jaxsched.dp import DPConfig
    from jaxsched.results import read_rows
    from jaxsched.sweep import run_sweep

    with pytest.raises(ConfigError, match="my_power_of_two"):  # the error lists it now
        DPConfig(policy="no_such_policy")
    base = DPConfig(num_workers=5, slots_per_worker=6, pool_size=9, num_steps=60)
    out = run_sweep(
        base,
        {"policy": ["power_of_two", "my_power_of_two"]},
        range(3),
        tmp_path / "p2c.csv",
        progress=False,
        switch_policies=True,
    )
    rows = read_rows(out)
    assert [r["policy"] for r in rows] == ["power_of_two", "my_power_of_two"]
    metrics = [k for k in rows[0] if k.endswith("_mean")]
    assert metrics and all(rows[0][k] == rows[1][k] for k in metrics)
    assert rows[0]["key"] != rows[1]["key"]


def test_power_of_two_differs_from_its_deterministic_neighbours():
    # Random draws matter: it is not JSQ by tokens on the same requests.
    from jaxsched.dp import DPConfig, simulate

    runs = {
        p: simulate(
            DPConfig(num_workers=6, pool_size=12, num_steps=80, policy=p), seeds=range(4), progress=False
        ).metrics["avg_imbalance_tokens"]
        for p in ("power_of_two", "jsq_tokens")
    }
    assert not np.array_equal(runs["power_of_two"], runs["jsq_tokens"])


def test_unregistered_policy_is_refused_and_key_tracks_user_code():
    from jaxsched.dp import DPConfig, make_params
    from jaxsched.results import run_key, user_policy_code

    ex = _example("power_of_two")
    ex.register()
    try:
        cfg = DPConfig(policy="my_power_of_two", num_steps=10)
        k1 = run_key("dp", cfg, make_params(cfg), [0])
        register_policy(
            "dp",
            "my_power_of_two",
            lambda config, params, obs: ex.my_power_of_two(config, params, obs),
            "the same, wrapped",
            replace=True,
        )
        assert run_key("dp", cfg, make_params(cfg), [0]) != k1
        builtin = DPConfig(policy="power_of_two", num_steps=10)
        assert user_policy_code("dp", builtin) == {}
        assert list(user_policy_code("dp", cfg)) == ["my_power_of_two"]
    finally:
        unregister_policy("dp", "my_power_of_two")
    with pytest.raises(ConfigError, match="policy must be one of"):
        DPConfig(policy="my_power_of_two")
