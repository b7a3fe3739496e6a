"""The scripts in examples/ run, at their `--quick` sizes, and write what their docstrings say.

Each runs as a user would (`python examples/NAME.py --quick --out DIR`, in a fresh interpreter,
from a scratch working directory), and its files are read back: the rows and columns each
promises, and the relations between them that hold whatever the numbers are."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures" / "traces"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(script: str, *args: str, cwd: Path, env: dict | None = None, ok=(0,)) -> subprocess.CompletedProcess:
    """Run examples/`script` with `args` in `cwd`; fail with its output unless it exits in `ok`."""
    p = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=cwd,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode in ok, f"{script} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _is_png(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 1000


def _module(name: str):
    """examples/`name`.py as a module (its main() is not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_example_has_a_docstring_with_its_command():
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        assert text.startswith('"""'), path.name
        assert f"python examples/{path.name}" in text, path.name  # how to run it
        assert "--quick" in text, path.name  # and a small size


def test_synthetic_trace_reads_back(tmp_path):
    from jaxsched.workload import read_trace

    path = _module("bfio_own_trace").write_synthetic_trace(tmp_path / "t.csv", rows=500, seed=3)
    assert path.read_text().splitlines()[0] == "prompt,output"
    trace = read_trace(path)
    assert trace.prompt.size == 500 and 1 <= trace.prompt.min() and trace.max_prompt <= 8192
    assert 100 < float(trace.prompt.mean()) and float(trace.output.mean()) < float(trace.prompt.mean())


def test_bfio_own_trace_by_name(tmp_path):
    # The trace by its registered name, from a data folder holding a fixture in its place.
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(FIXTURES / "azure_llm_2024.csv", data / "AzureLLMInferenceTrace_code_1week.csv")
    out = tmp_path / "out"
    env = {"JAXSCHED_DATA": str(data)}
    p = _run("bfio_own_trace.py", "--quick", "--trace", "azure_2024_code", "--out", str(out), cwd=tmp_path, env=env)
    assert "trace: azure_2024_code (4 rows" in p.stdout
    per_seed = _rows(out / "per_seed.csv")
    assert [(r["policy"], r["seed"]) for r in per_seed] == [(p, s) for p in ("fcfs", "bfio") for s in "012"]
    assert all(float(r["avg_imbalance_tokens"]) >= 0 and float(r["throughput_tokens_per_s"]) > 0 for r in per_seed)
    summary = _rows(out / "summary.csv")
    assert [r["policy"] for r in summary] == ["fcfs", "bfio"]
    for r in summary:
        mine = [float(x["avg_imbalance_tokens"]) for x in per_seed if x["policy"] == r["policy"]]
        assert float(r["avg_imbalance_tokens_mean"]) == pytest.approx(sum(mine) / 3)
        assert float(r["avg_imbalance_tokens_ci95"]) >= 0 and r["seeds"] == "3"
    assert not (out / "synthetic_trace.csv").exists()  # only written without --trace


def test_sweep_and_plot(tmp_path):
    out = tmp_path / "out"
    _run("sweep_and_plot.py", "--quick", "--out", str(out), cwd=tmp_path)
    sweep = _rows(out / "sweep.csv")
    cells = {
        (r["slots_per_worker"], r["num_workers"], r["policy"]): float(r["avg_imbalance_tokens_mean"]) for r in sweep
    }
    assert len(sweep) == 8 and len(cells) == 8  # B 4,8 x G 2,4 x fcfs, bfio
    assert {r["num_seeds"] for r in sweep} == {"3"} and {r["num_steps"] for r in sweep} == {"200"}
    ratio = _rows(out / "ratio.csv")
    assert [(r["B"], r["G"]) for r in ratio] == [("4", "2"), ("4", "4"), ("8", "2"), ("8", "4")]
    for r in ratio:
        fcfs, bfio = cells[(r["B"], r["G"], "fcfs")], cells[(r["B"], r["G"], "bfio")]
        assert float(r["ratio"]) == pytest.approx(bfio / fcfs)
    assert _is_png(out / "ratio.png")


def test_power_of_two_from_user_code(tmp_path):
    out = tmp_path / "p2.csv"
    _run("power_of_two.py", "--quick", "--out", str(out), cwd=tmp_path)
    rows = {r["policy"]: r for r in _rows(out)}
    assert set(rows) == {"power_of_two", "my_power_of_two"}
    assert {r["num_workers"] for r in rows.values()} == {"4"}
    # The user-code policy is the built-in written again: the same numbers to the last digit.
    assert rows["my_power_of_two"]["avg_imbalance_tokens_mean"] == rows["power_of_two"]["avg_imbalance_tokens_mean"]


def test_tune_threshold(tmp_path):
    pytest.importorskip("evosax", reason="the tuning example needs jaxsched[tune] (evosax)")
    out = tmp_path / "out"
    p = _run("tune_threshold.py", "--quick", "--out", str(out), cwd=tmp_path)
    history = _rows(out / "history.csv")
    assert len(history) == 4 * 2  # population x generations
    assert [int(r["generation"]) for r in history] == [0] * 4 + [1] * 4
    assert history[0]["budget"] == "512"  # the search starts at the baseline
    assert all(64 <= int(r["budget"]) <= 2048 for r in history)
    assert {"objective", "feasible", "reason", "ttft_p99_s", "token_growth_per_s"} <= set(history[0])
    assert "| budget | 512 |" in (out / "summary.md").read_text() and "budget" in p.stdout
    assert _is_png(out / "convergence.png")


def test_two_hosts(tmp_path):
    out = tmp_path / "out"
    p = _run("two_hosts.py", "--quick", "--out", str(out), cwd=tmp_path, ok=(0, 77))
    if p.returncode == 77:
        pytest.skip("jax.distributed cannot start on this platform:\n" + p.stdout[-500:])
    blocks = [json.loads((out / f"host{i}.json").read_text()) for i in range(2)]
    assert [b["process_index"] for b in blocks] == [0, 1] and {b["process_count"] for b in blocks} == {2}
    assert [b["seeds"] for b in blocks] == [[0, 1], [2]]  # 3 seeds: contiguous blocks, the first larger
    rows = _rows(out / "sweep.csv")  # written once, by host 0, from both hosts' seeds
    assert [r["policy"] for r in rows] == ["fcfs", "bfio"]
    assert {(r["num_seeds"], r["seed_first"], r["seed_last"]) for r in rows} == {("3", "0", "2")}
    assert "host 1: process 1 of 2, seeds [2]" in p.stdout
