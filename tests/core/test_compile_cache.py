"""The command line's persistent compilation cache (jaxsched.cli.compile_cache): the settings it
derives from the environment and the flag, and, across real processes, that a second command
loads the programs the first one compiled, with the same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from jaxsched.cli import build_parser
from jaxsched.cli.compile_cache import (
    DIR_ENV,
    ENV,
    JAX_DIR_ENV,
    THRESHOLDS,
    cache_folder,
    cache_wanted,
    use_compile_cache,
)
from jaxsched.errors import ConfigError

# The cheapest command that compiles real programs: two simulation steps over 0.5 s each here.
TINY = [
    "run",
    "--G",
    "2",
    "--B",
    "4",
    "--R",
    "4",
    "--steps",
    "40",
    "--seeds",
    "2",
    "--quiet",
    "--policies",
    "fcfs",
    "--plot",
    "none",
]

# Runs `main(argv)` and prints JAX's compilation-cache events as one JSON line. The listeners
# need JAX, and importing JAX before main() would (rightly) make main() leave the cache off, so
# they are registered from an import hook on the first import after jax's monitoring module has
# loaded: after main() has set the environment, before the command compiles anything.
CHILD = r"""
import collections, json, sys
events = collections.Counter()
seconds = collections.Counter()

def on_event(name, **kw):
    events[name.rsplit("/", 1)[-1]] += 1

def on_duration(name, secs, **kw):
    seconds[name.rsplit("/", 1)[-1]] += secs

def hook(event, args):
    mon = sys.modules.get("jax._src.monitoring")
    if (event == "import" and not events["listening"] and mon is not None
            and hasattr(mon, "register_event_duration_secs_listener")):
        events["listening"] = 1
        mon.register_event_listener(on_event)
        mon.register_event_duration_secs_listener(on_duration)

sys.addaudithook(hook)
from jaxsched.cli import main
rc = main(sys.argv[1:])
print("COMPILE_CACHE " + json.dumps({"rc": rc, "events": events, "seconds": seconds}))
"""


def _env(**extra: str) -> dict[str, str]:
    """This environment without any cache setting of the user's, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in (ENV, DIR_ENV, JAX_DIR_ENV, *THRESHOLDS)}
    env.update(JAXSCHED_CPU_DEVICES="1", **extra)
    return env


def _child(argv: list[str], env: dict[str, str]) -> dict:
    """Run CHILD with `argv` and return its events (the command must succeed)."""
    p = subprocess.run([sys.executable, "-c", CHILD, *argv], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("COMPILE_CACHE "))
    out = json.loads(line.split(" ", 1)[1])
    assert out["rc"] == 0 and out["events"]["listening"] == 1, (out, p.stderr)
    return out


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def jax_not_loaded(monkeypatch):
    """As in a fresh `jaxsched` process: JAX not imported yet (restored afterwards)."""
    monkeypatch.delitem(sys.modules, "jax", raising=False)


def test_switch_values():
    assert cache_wanted({}) and cache_wanted({ENV: ""}) and cache_wanted({ENV: "1"})
    assert not cache_wanted({ENV: "0"})
    for bad in ("yes", "no", "true", "off", "2", "-1"):
        with pytest.raises(
            ConfigError,
            match=rf"^{ENV} must be 0 \(no compile cache\), "
            rf"1 or empty \(cache\), got '{bad}'$",
        ):
            cache_wanted({ENV: bad})


def test_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder({}) == tmp_path / "home" / ".cache" / "jaxsched" / "xla"
    assert cache_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/jaxsched/xla")
    assert cache_folder({"XDG_CACHE_HOME": "", DIR_ENV: ""}) == cache_folder({})
    assert cache_folder({"XDG_CACHE_HOME": "/c", DIR_ENV: "/elsewhere"}) == Path("/elsewhere")
    monkeypatch.chdir(tmp_path)
    assert cache_folder({DIR_ENV: "rel"}) == tmp_path / "rel"
    assert cache_folder({DIR_ENV: "~/x"}) == tmp_path / "home" / "x"


def test_sets_jax_environment_before_import(tmp_path, jax_not_loaded):
    env = {DIR_ENV: str(tmp_path / "a" / "xla"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "5"}
    assert use_compile_cache(env) == tmp_path / "a" / "xla"
    assert (tmp_path / "a" / "xla").is_dir()
    assert env[JAX_DIR_ENV] == str(tmp_path / "a" / "xla")
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "5"  # the user's own stays
    assert env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] == "-1"
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), ENV: "1"}
    assert use_compile_cache(env) == tmp_path / "xdg" / "jaxsched" / "xla"
    assert float(env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) <= 0.5


@pytest.mark.parametrize(
    "env, enabled",
    [
        ({ENV: "0"}, True),  # JAXSCHED_COMPILE_CACHE=0
        ({}, False),  # --no-compile-cache
        ({JAX_DIR_ENV: "/users/own"}, True),  # the user's own JAX cache folder
        ({JAX_DIR_ENV: ""}, True),  # the user's own "no folder"
    ],
)
def test_leaves_environment_alone(tmp_path, jax_not_loaded, env, enabled):
    env = {**env, DIR_ENV: str(tmp_path / "xla")}
    before = dict(env)
    assert use_compile_cache(env, enabled=enabled) is None
    assert env == before and not (tmp_path / "xla").exists()


def test_nothing_once_jax_is_imported(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", sys.modules.get("jax") or types.ModuleType("jax"))
    env = {DIR_ENV: str(tmp_path / "xla")}
    assert use_compile_cache(env) is None
    assert env == {DIR_ENV: str(tmp_path / "xla")} and not (tmp_path / "xla").exists()


def test_bad_switch_is_an_error_even_when_off(jax_not_loaded):
    with pytest.raises(ConfigError, match=ENV):
        use_compile_cache({ENV: "yes"}, enabled=False)


def test_unusable_folder_warns_once_and_runs_without(tmp_path, jax_not_loaded, capsys):
    (tmp_path / "file").write_text("")
    env = {DIR_ENV: str(tmp_path / "file" / "xla")}
    assert use_compile_cache(env) is None
    assert env == {DIR_ENV: str(tmp_path / "file" / "xla")}
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsched: warning: compile cache folder")
    assert str(tmp_path / "file" / "xla") in err[0] and "without a compile cache" in err[0]


def test_flag_is_top_level():
    assert build_parser().parse_args(["--no-compile-cache", *TINY]).no_compile_cache
    assert not build_parser().parse_args(TINY).no_compile_cache


def test_bad_switch_from_the_command_line(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "jaxsched.cli", *TINY, "--out", str(tmp_path / "r.csv")],
        env=_env(**{ENV: "on"}),
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and not (tmp_path / "r.csv").exists()
    assert p.stderr.splitlines() == [
        f"jaxsched: error: {ENV} must be 0 (no compile cache), 1 or empty (cache), got 'on'"
    ]


def test_second_command_loads_what_the_first_compiled(tmp_path):
    folder = tmp_path / "xla"
    env = _env(**{DIR_ENV: str(folder)})
    cold = _child([*TINY, "--out", str(tmp_path / "cold.csv")], env)
    written = _entries(folder)
    # The first process compiles and writes every program over the threshold, loads none.
    assert cold["events"]["cache_misses"] >= 1 and cold["events"].get("cache_hits", 0) == 0
    assert len(written) == cold["events"]["cache_misses"]
    assert any(name.startswith("jit_run_block") for name in written), written
    warm = _child([*TINY, "--out", str(tmp_path / "warm.csv")], env)
    # The second loads each of them instead of compiling it, and computes the same results.
    assert warm["events"]["cache_hits"] == cold["events"]["cache_misses"]
    # (Not JAX's compile_time_saved_sec: under load a small program's load can outlast its
    # recorded compile, and the sum may go negative. Compiles plus loads is the measure.)
    assert warm["seconds"]["backend_compile_duration"] < cold["seconds"]["backend_compile_duration"] / 2, (cold, warm)
    assert (tmp_path / "warm.csv").read_bytes() == (tmp_path / "cold.csv").read_bytes()
    # The flag is the process's: the options file, read back by --config, does not name it.
    assert "compile" not in (tmp_path / "warm.config.toml").read_text()


@pytest.mark.parametrize("how", ["flag", "env"])
def test_turned_off_leaves_the_folder_empty(tmp_path, how):
    folder = tmp_path / "xla"
    argv = (["--no-compile-cache"] if how == "flag" else []) + [*TINY, "--out", str(tmp_path / "r.csv")]
    extra = {ENV: "0"} if how == "env" else {}
    out = _child(argv, _env(**{DIR_ENV: str(folder)}, **extra))
    assert _entries(folder) == []
    assert "cache_misses" not in out["events"] and "cache_hits" not in out["events"]
    assert "compile" not in (tmp_path / "r.config.toml").read_text()
