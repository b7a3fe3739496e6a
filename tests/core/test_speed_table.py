"""benchmarks/speed_table.py: one command gives every engine's runs/s against its reference, with
the equality checks, the load average and the step cost in each row, and a later run (a GPU's)
can reuse the reference rates of an earlier one instead of measuring them again."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from benchmarks import bench_offline, speed_table

COLUMNS = {
    "engine",
    "case",
    "run",
    "size",
    "engine_runs_per_s",
    "engine_s",
    "reference_runs_per_s",
    "reference_runs",
    "reference_s",
    "reference_measured",
    "reference_from",
    "ratio",
    "target_ratio",
    "target_size",
    "target_met",
    "checked",
    "equal_on",
    "equal",
    "ops_per_step",
    "compile_s",
    "loadavg_before",
    "loadavg_after",
    "setup",
}


def test_quick_table_then_reused_references(tmp_path, monkeypatch):
    first = tmp_path / "first.json"
    # One timed call per size here (the fastest-of logic is tested below on made-up times).
    argv = "--engines offline budget --sizes 1 2 --quick --reference-s 0.3 --repeats 1".split() + ["--out", str(first)]
    assert speed_table.main(argv) == 0
    data = json.loads(first.read_text())
    rows = data["rows"]
    want = [("offline", "fcfs n=200"), ("budget", "sarathi"), ("budget", "vllm")]
    assert [(r["engine"], r["case"], r["size"]) for r in rows] == [(e, c, S) for e, c in want for S in (1, 2)]
    for r in rows:
        assert COLUMNS <= set(r)
        compared = data["references"][f"{r['engine']}/{r['case']}"]["slices"][0]["runs"]  # the first slice's
        assert r["equal"] is True and r["equal_on"] == min(r["size"], compared) >= 1
        assert r["ratio"] > 0 and math.isfinite(r["ratio"])
        assert r["ratio"] == pytest.approx(r["engine_runs_per_s"] / r["reference_runs_per_s"])
        assert isinstance(r["loadavg_before"], float) and isinstance(r["loadavg_after"], float)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        for probe in (r["core_ms_before"], r["core_ms_after"]):
            assert probe is None if cores is None else (len(probe) == cores and min(probe) > 0)
        assert r["reference_measured"] is True and r["reference_from"] is None
        assert r["ops_per_step"] > 0 and r["compile_s"] > 0
        assert r["target_met"] is None  # S = 1024 was not run
    assert {"platform", "cpu_count", "jax", "backend", "device_kind"} <= set(data["environment"])
    md = first.with_suffix(".md").read_text()
    assert "| engine | case | one run | reference runs/s | ratio @1 | ratio @2 |" in md

    # The reused reference must not run: the NumPy executor now fails if called.
    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran again")

    monkeypatch.setattr(bench_offline, "bench_numpy", no_reference)
    second = tmp_path / "second.json"
    argv = ["--engines", "offline", "--sizes", "2", "--quick", "--out", str(second), "--reference-json", str(first)]
    assert speed_table.main(argv + ["--skip-step-cost", "--repeats", "2"]) == 0
    (again,) = json.loads(second.read_text())["rows"]
    assert again["ops_per_step"] is None and again["compile_s"] is None
    (before,) = [r for r in rows if r["engine"] == "offline" and r["size"] == 2]
    assert again["reference_measured"] is False and again["reference_from"] == str(first)
    record = data["references"]["offline/fcfs n=200"]
    assert len(record["slices"]) == 3  # the first, and one after each S
    assert again["reference_s"] == record["seconds"] and again["reference_runs"] == record["runs"]
    assert again["reference_runs_per_s"] == before["reference_all_runs_per_s"] and again["equal"] is True
    assert len(again["engine_times_s"]) == 2 and again["engine_s"] == min(again["engine_times_s"])
    assert "the fastest of 2 timed calls" in second.with_suffix(".md").read_text()
    with pytest.raises(SystemExit):
        speed_table.parse_args(["--repeats", "0"])
    assert str(first) in second.with_suffix(".md").read_text()
    assert data["settings"]["complete"] is True

    # One table from both runs; a file that a stopped run never wrote is named and skipped, and
    # the merged table says it is incomplete.
    merged = tmp_path / "merged.json"
    argv = ["--merge", str(first), str(second), str(tmp_path / "absent.json"), "--out", str(merged)]
    assert speed_table.main(argv) == 0
    m = json.loads(merged.read_text())
    assert m["rows"] == rows + [again] and m["settings"]["complete"] is False
    assert set(m["references"]) == {"offline/fcfs n=200", "budget/sarathi", "budget/vllm"}
    assert "INCOMPLETE" in merged.with_suffix(".md").read_text()


def test_ratios_divide_by_the_reference_slices_around_each_size(monkeypatch):
    # A reference whose rate doubles from slice to slice (a machine that speeds up): the ratio
    # at each S uses the faster of the slices just before and after its calls, and the
    # engine's fastest call.
    rates = iter([10.0, 20.0, 40.0])

    def reference(target_s: float) -> dict:
        rate = next(rates)
        return speed_table.reference_record(4, 4 / rate, np.zeros((4, 1)))

    metrics = lambda S: {"m": np.zeros(S)}
    case = speed_table.Case("kv", "toy", "1 run", ("m",), {}, metrics, reference, lambda: None)
    ticks = iter(([0.0, 1.0] + [0.0, 0.7, 0.0, 0.5, 0.0, 0.9]) * 2)  # a first call, then 0.7, 0.5, 0.9 s
    monkeypatch.setattr(speed_table.time, "perf_counter", lambda: next(ticks))
    monkeypatch.setattr(speed_table, "core_ms", lambda: None)  # it reads the clock too
    rows, record = speed_table.measure_case(case, (1, 64), 10.0, None, "cpu", step_cost=False)
    assert [r["engine_s"] for r in rows] == [0.5, 0.5]
    assert [r["engine_times_s"] for r in rows] == [[0.7, 0.5, 0.9]] * 2
    assert [r["reference_runs_per_s"] for r in rows] == [pytest.approx(20.0), pytest.approx(40.0)]
    assert [r["ratio"] for r in rows] == [pytest.approx(2 / 20), pytest.approx(128 / 40)]
    # Each row's reference runs and seconds are those of the slice its ratio divides by.
    assert [(r["reference_runs"], r["reference_s"]) for r in rows] == [(4, pytest.approx(0.2)), (4, pytest.approx(0.1))]
    assert record["runs"] == 12 and record["seconds"] == pytest.approx(0.4 + 0.2 + 0.1)
    assert rows[0]["reference_all_runs_per_s"] == pytest.approx(12 / 0.7)


def _row(engine: str, case: str, S: int, ratio: float, equal: bool = True) -> dict:
    """A JSON row as measure_case writes it, with made-up numbers."""
    return dict(
        engine=engine,
        case=case,
        run="1 seed x 1 s",
        size=S,
        engine_runs_per_s=10.0 * ratio,
        engine_s=0.5,
        reference_runs_per_s=10.0,
        reference_measured=True,
        reference_from=None,
        reference_machine="cpu",
        ratio=ratio,
        target_ratio=30.0,
        target_size=1024,
        target_met=(ratio >= 30) if S == 1024 else None,
        equal_on=min(S, 5),
        equal=equal,
        ops_per_step=100,
        compile_s=1.5,
        loadavg_before=0.5,
        loadavg_after=2.0,
    )


def test_markdown_summary_and_warnings():
    rows = [_row("kv", "wait", S, r) for S, r in ((1, 2.0), (64, 20.0), (1024, 40.0))]
    rows += [_row("budget", "vllm", S, r, equal=S != 64) for S, r in ((1, 1.0), (64, 5.0), (1024, 10.0))]
    env = dict(date="d", jax="0", backend="cpu", device_kind="cpu", cpu_count=2, machine="x", loadavg_at_start=[0])
    md = speed_table.markdown(rows, env, dict(mode="full", sizes=[1, 64, 1024], reference_s=10.0, wall_s=3.0))
    lines = md.splitlines()
    kv = next(line for line in lines if line.startswith("| kv | wait | 1 seed"))
    assert "| 2x | 20x | 40x | 100 | 1.50 | >= 30x @1024 | yes | yes | 0.5 / 2 | - / - |" in kv
    budget = next(line for line in lines if line.startswith("| budget | vllm | 1 seed"))
    assert "| 10x | 100 | 1.50 | >= 30x @1024 | NO | NO |" in budget
    assert sum("WARNING: load average above 1.5" in line for line in lines) == 2
    assert "| budget | vllm | 64 | 50 | 0.5 | 10 | 5x | NO (5) |" in md


def test_reused_reference_must_match_the_setup():
    case = speed_table.Case("kv", "wait", "r", ("x",), {"horizon_s": 1.0}, None, None, None)
    rec = {"setup": {"horizon_s": 0.25}, "runs": 1, "seconds": 1.0, "values": np.zeros((1, 1))}
    assert speed_table.reused_reference(case, None) is None
    with pytest.raises(SystemExit, match="measured on"):
        speed_table.reused_reference(case, {"kv/wait": rec})
    with pytest.raises(SystemExit, match="no reference"):
        speed_table.reused_reference(case, {})
    assert speed_table.reused_reference(case, {"kv/wait": dict(rec, setup={"horizon_s": 1.0})}) is not None


def test_agree_is_exact_unless_a_tolerance_is_given():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert speed_table.agree(a, a[:2], 0.0) == (2, True)
    assert speed_table.agree(a * (1 + 1e-14), a, 0.0) == (3, False)
    assert speed_table.agree(a * (1 + 1e-14), a, 1e-12) == (3, True)


def test_gpu_script_parses_and_refuses_a_cpu_without_its_flag(tmp_path):
    # benchmarks/gpu_all.sh runs only on a GPU lease; here: it is valid bash, names its usage,
    # and stops before any benchmark on a machine whose JAX backend is not a GPU.
    import shutil
    import subprocess
    from pathlib import Path

    script = Path(speed_table.__file__).with_name("gpu_all.sh")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    usage = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert usage.returncode != 0 and "usage: bash benchmarks/gpu_all.sh OUT_DIR" in usage.stderr
    if shutil.which("python3") is None:
        pytest.skip("no python3 on PATH")
    repo = script.parents[1]
    env = {"PATH": f"{Path(__import__('sys').executable).parent}:/usr/bin:/bin", "GPU_ALL_ALLOW_CPU": "0"}
    run = subprocess.run(
        ["bash", str(script), str(tmp_path / "out"), "engines"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert run.returncode == 1 and "no GPU backend: stopping" in run.stdout
    assert not list((tmp_path / "out").glob("speed_table_gpu_*.json"))


# The reference file benchmarks/gpu_all.sh reuses for each engine's cases (its `case` line).
GPU_REFERENCES = {"kv": "speed_table_run7.json", "budget": "speed_table_run7.json", "network": "speed_table_run7.json"}


def test_gpu_script_reuses_references_measured_on_the_cases_as_they_are():
    # A reference reused for a case whose setup changed (e.g. its table size) stops the GPU
    # run for that engine: every full-size case must find its setup in the file the script names.
    from pathlib import Path

    script = Path(speed_table.__file__).with_name("gpu_all.sh")
    assert "case $e in kv | budget | network) ref=speed_table_run7.json ;; *) ref=speed_table.json ;; esac" in (
        script.read_text()
    )
    results = script.parent / "results"
    for name, build in speed_table.BUILDERS.items():
        refs = speed_table.load_references(results / GPU_REFERENCES.get(name, "speed_table.json"))
        extra = dict(extra_n=(1000, 2000)) if name == "offline" else {}  # the script's --offline-extra
        for case in build(speed_table.FULL, 64, **extra):
            assert speed_table.reused_reference(case, refs) is not None, case.key
