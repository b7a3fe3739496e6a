"""Sweeps: grid expansion, memory-budgeted chunks, atomic rows, resume after an interruption."""

from __future__ import annotations

import csv
import dataclasses
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jaxsched as js
from jaxsched import kv
from jaxsched.dp import ENGINE, simulate
from jaxsched.errors import ConfigError
from jaxsched.run import seeds_for_budget
from jaxsched.sweep import grid_points, parse_axis, point_label, run_sweep

BASE = js.dp.DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=60, policy="fcfs")
AXES = {"policy": ["fcfs", "bfio"], "num_workers": [2, 3], "step_const_s": [0.01, 0.02]}


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def test_grid_and_bad_axes():
    pts = grid_points(ENGINE, AXES)
    assert len(pts) == 8 and pts[0] == {"policy": "fcfs", "num_workers": 2, "step_const_s": 0.01}
    with pytest.raises(ConfigError, match="sweep axis 'nope'"):
        grid_points(ENGINE, {"nope": [1]})
    with pytest.raises(ConfigError, match="at least one value"):
        grid_points(ENGINE, {"policy": []})
    with pytest.raises(ConfigError, match="num_workers"):  # validated before anything runs
        run_sweep(BASE, {"num_workers": [2, 0]}, [0, 1], "/tmp/never.csv", progress=False)


def test_rows_match_direct_runs(tmp_path):
    out = run_sweep(BASE, AXES, range(3), tmp_path / "s.csv", progress=False)
    rows = _rows(out)
    assert len(rows) == 8 and len({r["point"] for r in rows}) == 8
    r = next(r for r in rows if r["policy"] == "bfio" and r["num_workers"] == "3" and float(r["step_const_s"]) == 0.02)
    cfg = js.dp.DPConfig(num_workers=3, slots_per_worker=4, pool_size=4, num_steps=60, policy="bfio")
    m = simulate(cfg, js.dp.make_params(cfg, step_const_s=0.02), range(3)).metrics
    assert float(r["throughput_tokens_per_s_mean"]) == pytest.approx(m["throughput_tokens_per_s"].mean(), rel=1e-12)
    assert float(r["avg_imbalance_tokens_std"]) == pytest.approx(m["avg_imbalance_tokens"].std(ddof=1), rel=1e-12)
    assert int(r["n"]) == 3


def test_resume_skips_finished_points_and_never_duplicates(tmp_path):
    out = tmp_path / "s.csv"

    class Stop(Exception):
        pass

    def stop_after_3(n, row):
        if n == 3:
            raise Stop

    with pytest.raises(Stop):
        run_sweep(BASE, AXES, range(2), out, progress=False, on_point=stop_after_3)
    first = _rows(out)
    assert len(first) == 3
    ran = []
    run_sweep(BASE, AXES, range(2), out, progress=False, on_point=lambda n, row: ran.append(row["point"]))
    rows = _rows(out)
    assert len(ran) == 5 and len(rows) == 8 and len({r["point"] for r in rows}) == 8
    assert rows[:3] == first  # finished rows are kept as they were
    assert not set(ran) & {r["point"] for r in first}


def test_chunked_seeds_give_identical_rows(tmp_path):
    a = _rows(run_sweep(BASE, {"policy": ["bfio"]}, range(5), tmp_path / "a.csv", progress=False))
    b = _rows(
        run_sweep(BASE, {"policy": ["bfio"]}, range(5), tmp_path / "b.csv", progress=False, memory_budget_mb=1e-3)
    )  # one seed per chunk
    drop = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "row_sha")}  # row_sha covers wall_s
    assert [drop(r) for r in a] == [drop(r) for r in b]
    assert seeds_for_budget(ENGINE, BASE, 1e-3) == 1 and seeds_for_budget(ENGINE, BASE, 1024) > 1000


def test_resume_after_sigkill(tmp_path):
    out = tmp_path / "k.csv"
    script = (
        "import jaxsched as js\n"
        "from jaxsched.sweep import run_sweep\n"
        "base = js.dp.DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=400)\n"
        f"run_sweep(base, {{'policy': ['fcfs', 'bfio'], "
        f"'num_workers': [2, 3, 4]}}, range(2), {str(out)!r}, progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 120
    while time.time() < deadline and (not out.exists() or len(_rows(out)) < 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = _rows(out)
    assert 2 <= len(killed) < 6
    base = js.dp.DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=400)
    run_sweep(base, {"policy": ["fcfs", "bfio"], "num_workers": [2, 3, 4]}, range(2), out, progress=False)
    rows = _rows(out)
    assert len(rows) == 6 and len({r["point"] for r in rows}) == 6
    assert rows[: len(killed)] == killed
    assert not list(tmp_path.glob(".k.csv.*"))  # no temporary file left behind... once resumed


def test_point_label_is_canonical():
    assert point_label(ENGINE, {"a": 1, "b": 2}) == point_label(ENGINE, {"b": 2, "a": 1})
    assert point_label(ENGINE, {"a": 1}) != point_label(ENGINE, {"a": 2})


def test_parse_axis_values_and_sequences():
    assert parse_axis("num_workers=8,16") == ("num_workers", [8, 16])
    assert parse_axis("step_const_s=0.01,x") == ("step_const_s", [0.01, "x"])
    assert parse_axis("rates=[1000,500],[2000,1000.5]") == ("rates", [(1000, 500), (2000, 1000.5)])
    with pytest.raises(ConfigError, match="--axis must look like"):
        parse_axis("num_workers")
    assert parse_axis("routes=[]") == ("routes", [()])
    # An empty entry is an error, not a value dropped in silence.
    for text in ("num_workers=8,,16", "num_workers=8,16,", "rates=[1000,],[2000,1000]", "rates=[1,2],,[3,4]"):
        with pytest.raises(ConfigError, match=r"^--axis (num_workers|rates): .*must not have an empty entry"):
            parse_axis(text)


KV_BASE = kv.KVConfig(num_requests=60, table_size=64)


def test_kv_sweep_rows_match_direct_runs(tmp_path):
    # The same runner sweeps the kv engine: Config fields and make_params keywords as axes,
    # shared params keywords, and one row per point equal to a direct run.
    out = run_sweep(
        KV_BASE,
        {"policy": ["wait", "fcfs"], "capacity_tokens": [5000, 20000]},
        range(2),
        tmp_path / "kv.csv",
        params=dict(rates=(500.0, 500.0)),
        progress=False,
    )
    rows = _rows(out)
    assert len(rows) == 4 and {r["policy"] for r in rows} == {"wait", "fcfs"}
    r = next(r for r in rows if r["policy"] == "fcfs" and r["capacity_tokens"] == "5000")
    cfg = dataclasses.replace(KV_BASE, policy="fcfs")
    m = kv.simulate(cfg, kv.make_params(cfg, rates=(500.0, 500.0), capacity_tokens=5000), range(2)).metrics
    assert float(r["latency_mean_s_mean"]) == pytest.approx(m["latency_mean_s"].mean(), rel=1e-12)
    assert r["prefill_tokens"] == "10/10" and int(r["n"]) == 2
    with pytest.raises(ConfigError, match="sweep axis 'num_workers' must be a KVConfig field"):
        run_sweep(KV_BASE, {"num_workers": [2]}, [0], tmp_path / "x.csv", progress=False)


def test_cli_sweep_kv(tmp_path, capsys):
    from jaxsched.cli import main

    out = tmp_path / "kv.csv"
    assert (
        main(
            [
                "sweep",
                "--engine",
                "kv",
                "--axis",
                "policy=fcfs,wait",
                "--set",
                "num_requests=40",
                "--set",
                "table_size=64",
                "--set",
                "rates=[400,400]",
                "--seeds",
                "2",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert [r["policy"] for r in _rows(out)] == ["fcfs", "wait"]
    assert main(["sweep", "--engine", "kv", "--axis", "policy=fcfs", "--steps", "9", "--out", str(out)]) == 2
    assert "--num-steps is read only by engine dp" in capsys.readouterr().err


def test_cli_sweep_takes_old_field_names(tmp_path, capsys):
    # kv's max_epochs is now max_steps (`jaxsched.kv.registry.RENAMED`): --set and --axis, as
    # flags or in a --config file, take the old name and mean the new one.
    from jaxsched.cli import main
    from jaxsched.cli.sweep import renamed_fields

    assert renamed_fields("kv") == {"max_epochs": "max_steps"}
    common = [
        "sweep",
        "--engine",
        "kv",
        "--set",
        "num_requests=40",
        "--set",
        "table_size=64",
        "--seeds",
        "1",
        "--quiet",
    ]
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    assert main([*common, "--axis", "max_epochs=5000", "--out", str(old)]) == 0
    assert main([*common, "--axis", "max_steps=5000", "--out", str(new)]) == 0
    (r_old,), (r_new,) = _rows(old), _rows(new)
    assert r_old["key"] == r_new["key"] and r_old["point"] == r_new["point"]
    assert r_old["max_steps"] == "5000" and "max_epochs" not in r_old
    # The same point from a --config file with the old name: resumed, no new row.
    conf = tmp_path / "c.toml"
    conf.write_text(
        'engine = "kv"\naxis = ["policy=wait"]\nseeds = 1\nquiet = true\n'
        'set = ["num_requests=40", "table_size=64", "max_epochs=5000"]\n'
    )
    assert main(["sweep", "--config", str(conf), "--out", str(new)]) == 0
    assert len(_rows(new)) == 1
    capsys.readouterr()
    assert (
        main([*common, "--set", "max_steps=9", "--set", "max_epochs=9", "--axis", "policy=wait", "--out", str(new)])
        == 2
    )
    assert "'max_epochs' is given twice (as 'max_steps'" in capsys.readouterr().err
    assert main([*common, "--set", "max_steps=9", "--axis", "max_epochs=9", "--out", str(new)]) == 2
    assert "also fixed by --set" in capsys.readouterr().err


def test_points_of_one_config_with_other_param_shapes_run_apart(tmp_path):
    # A constant rate and a two-period profile are params of one config that cannot be stacked
    # into one simulate_points call: the sweep runs them one by one, as before buckets.
    from jaxsched.budget import BudgetConfig
    from jaxsched.sweep import run_sweep

    out = run_sweep(
        BudgetConfig(horizon_s=5.0, table_size=256),
        {"rates": [(5.0,), ((5.0,), (8.0,))]},
        range(2),
        tmp_path / "s.csv",
        params={"period_s": 2.0},
        progress=False,
    )
    rows = out.read_text().splitlines()
    assert len(rows) == 3
