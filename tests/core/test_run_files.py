"""A run never replaces an earlier run's files silently, writes its options file with its
results, and keeps what finished when Ctrl-C stops it.

- A taken path left at its default moves to the next free numbered name (results/run.csv ->
  results/run-2.csv, its options file and plot numbered with it); a taken path the user named
  is one ConfigError line before any work; `--overwrite` replaces.
- The options file is written after the results, so a command that validation refuses leaves
  none, and the rerun command in its header works from the folder the command ran in.
- Ctrl-C: one `jaxsched: interrupted: ...` line, exit status 130, no traceback; `run` keeps the
  policies that finished, `sweep` its finished points (and resumes from them).
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import jaxsched.dp.experiments as ex
from jaxsched.cli import main
from jaxsched.cli.base import folder_outputs, fresh_names, numbered
from jaxsched.errors import ConfigError

RUN = ["run", "--G", "2", "--B", "4", "--R", "4", "--steps", "40", "--seeds", "2", "--quiet", "--policies", "fcfs"]


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    """Run in an empty folder, so the commands' default paths (results/...) land there."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_numbered_keeps_a_results_file_and_its_options_file_a_pair():
    assert numbered(Path("results/run.csv"), "-2") == Path("results/run-2.csv")
    assert numbered(Path("results/run.config.toml"), "-2") == Path("results/run-2.config.toml")
    assert numbered(Path("results/tune_e3"), "-3") == Path("results/tune_e3-3")
    assert numbered(Path("a.csv"), "") == Path("a.csv") and numbered(None, "-2") is None


def _ns(**kw) -> argparse.Namespace:
    given = kw.pop("given", ())
    ns = argparse.Namespace(**{"overwrite": False, **kw})
    ns._given = frozenset(given)
    return ns


def test_fresh_names_rules(tmp_path):
    csv_, png = tmp_path / "r.csv", tmp_path / "p.png"
    groups = {"--out": ("out", [csv_]), "--plot": ("plot", [png])}
    assert fresh_names(_ns(), groups) == {"--out": "", "--plot": ""}  # nothing taken
    csv_.write_text("x")
    # Defaults share one suffix, the first under which every default path is free.
    (tmp_path / "p-2.png").write_text("x")
    assert fresh_names(_ns(), groups) == {"--out": "-3", "--plot": "-3"}
    # A named path that is taken is refused; a named free one keeps its name.
    with pytest.raises(ConfigError, match=r"^--out would replace '.*r\.csv' of an earlier run: pass --overwrite"):
        fresh_names(_ns(given={"out"}), groups)
    assert fresh_names(_ns(given={"plot"}), groups) == {"--out": "-2", "--plot": ""}
    # --overwrite replaces, named or not.
    assert fresh_names(_ns(overwrite=True, given={"out"}), groups) == {"--out": "", "--plot": ""}


def test_folder_outputs_number_an_experiments_files_together(tmp_path):
    files = {"CSV": "e1.csv", "plot": "e1.png", "options file": "e1.config.toml"}
    (tmp_path / "e1.png").write_text("x")
    paths = folder_outputs(_ns(), tmp_path, files)
    assert [p.name for p in paths.values()] == ["e1-2.csv", "e1-2.png", "e1-2.config.toml"]
    with pytest.raises(ConfigError, match="--out would replace"):
        folder_outputs(_ns(given={"out"}), tmp_path, files)


def test_a_second_run_with_default_paths_keeps_the_first(in_tmp, capsys):
    assert main([*RUN, "--plot-steps", "20"]) == 0
    res = in_tmp / "results"
    first = {p.name: p.read_bytes() for p in res.iterdir()}
    assert set(first) == {"run.csv", "run.config.toml", "loads.png"}
    capsys.readouterr()
    assert main([*RUN, "--plot-steps", "20"]) == 0
    out = capsys.readouterr().out
    assert "results: results/run-2.csv" in out and "options: results/run-2.config.toml" in out
    assert {p.name for p in res.iterdir()} == set(first) | {"run-2.csv", "run-2.config.toml", "loads-2.png"}
    assert all((res / name).read_bytes() == data for name, data in first.items())
    # Same config and seeds: the same numbers in the new file.
    assert _rows(res / "run-2.csv") == _rows(res / "run.csv")


@pytest.fixture
def no_work(monkeypatch):
    monkeypatch.setattr(ex, "run_policies", lambda *a, **k: pytest.fail("ran before the check"))


def test_a_named_path_that_is_taken_is_refused_before_any_work(tmp_path, capsys, no_work):
    out = tmp_path / "mine.csv"
    out.write_text("earlier results\n")
    assert main([*RUN, "--out", str(out), "--plot", "none"]) == 2
    (line,) = _err_lines(capsys)
    assert line.startswith("jaxsched: error: --out would replace") and "mine.csv" in line and "--overwrite" in line
    assert out.read_text() == "earlier results\n" and not (tmp_path / "mine.config.toml").exists()
    png = tmp_path / "mine.png"
    png.write_bytes(b"png")
    assert main([*RUN, "--out", str(tmp_path / "new.csv"), "--plot", str(png)]) == 2
    assert "--plot would replace" in _err_lines(capsys)[0] and png.read_bytes() == b"png"


def test_overwrite_replaces_and_is_not_written_to_the_options_file(tmp_path, capsys):
    out = tmp_path / "mine.csv"
    out.write_text("earlier results\n")
    assert main([*RUN, "--out", str(out), "--plot", "none", "--overwrite"]) == 0
    assert len(_rows(out)) == 2
    options = tomllib.loads((tmp_path / "mine.config.toml").read_text())
    assert "overwrite" not in options and options["out"] == str(out)


def test_overwrite_without_an_output_is_refused(capsys):
    assert main(["kv", "run", "--seeds", "1", "--overwrite"]) == 2
    assert "--overwrite is read only with --out" in _err_lines(capsys)[0]


def test_a_refused_command_writes_no_options_file(tmp_path, capsys):
    out = tmp_path / "r.csv"
    # --steps 0 is refused by the config, after the output paths were checked.
    assert main([*RUN[:8], "0", *RUN[9:], "--out", str(out), "--plot", "none"]) == 2
    assert "num_steps" in _err_lines(capsys)[0]
    assert not list(tmp_path.iterdir())


def test_the_rerun_line_of_the_options_file_works_from_where_the_command_ran(in_tmp, capsys):
    assert main([*RUN, "--plot", "none"]) == 0
    head = (in_tmp / "results/run.config.toml").read_text().splitlines()
    assert str(in_tmp) in head[0]
    line = next(h for h in head if "--config" in h)
    words = shlex.split(line.lstrip("# "))
    assert words[:4] == ["jaxsched", "run", "--config", "results/run.config.toml"]
    capsys.readouterr()
    assert main(words[1:]) == 0  # the default --out is taken: the rerun goes to run-2.csv
    assert _rows(in_tmp / "results/run-2.csv") == _rows(in_tmp / "results/run.csv")


def test_ctrl_c_in_run_keeps_the_finished_policies(tmp_path, capsys, monkeypatch):
    real, calls = ex.simulate, []

    def simulate(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(ex, "simulate", simulate)
    out = tmp_path / "r.csv"
    argv = [*RUN[:-1], "fcfs,bfio", "--out", str(out), "--plot", "none"]
    assert main(argv) == 130
    err = _err_lines(capsys)  # the run's header line, then the interruption's
    assert len(err) == 2 and err[-1] == f"jaxsched: interrupted: 1 of 2 policies had finished; their rows are in {out}"
    rows = _rows(out)
    assert [r["policy"] for r in rows] == ["fcfs", "fcfs"] and (tmp_path / "r.config.toml").exists()


def test_ctrl_c_before_anything_finished(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ex, "simulate", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main([*RUN, "--out", str(tmp_path / "r.csv"), "--plot", "none"]) == 130
    assert _err_lines(capsys)[1:] == ["jaxsched: interrupted: nothing had finished; nothing was written"]
    assert not list(tmp_path.iterdir())


def test_ctrl_c_in_a_sweep_is_one_line_and_the_sweep_resumes(tmp_path):
    out = tmp_path / "s.csv"
    argv = [
        *("sweep", "--axis", "num_workers=2,3,4,5,6,7", "--set", "slots_per_worker=4", "--set", "pool_size=4"),
        *("--seeds", "2", "--steps", "3000", "--no-buckets", "--quiet", "--out", str(out)),
    ]
    env = {**os.environ, "JAXSCHED_COMPILE_CACHE": "0"}
    # A job started in the background by a shell without job control inherits SIGINT ignored,
    # and Python then installs no handler for it: the command gets Python's usual one first
    # (in the child: a preexec_fn would fork the multithreaded test process).
    launch = "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    launch += "runpy.run_module('jaxsched', run_name='__main__', alter_sys=True)"
    proc = subprocess.Popen(
        [sys.executable, "-c", launch, *argv], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and not (out.exists() and _rows(out)):
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"the sweep ended before it could be interrupted: {proc.communicate()}")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines() == [
        f"jaxsched: interrupted: the finished points are in {out}; the same command resumes from there"
    ]
    kept = _rows(out)
    assert 1 <= len(kept) < 6 and (tmp_path / "s.config.toml").exists()
    assert main(argv) == 0
    rows = _rows(out)
    assert len(rows) == 6 and rows[: len(kept)] == kept
