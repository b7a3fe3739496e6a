"""The command line: `jaxsched run` writes a table, a CSV and a plot; bad input exits with 2."""

from __future__ import annotations

import csv

import pytest

from jaxsched.cli import main
from jaxsched.dp.experiments import PolicySpec, parse_policies
from jaxsched.errors import ConfigError

SMALL = ["--G", "4", "--B", "8", "--R", "8", "--steps", "120", "--seeds", "3", "--quiet", "--plot-steps", "50"]


def test_run_writes_csv_table_and_plot(tmp_path, capsys):
    out, png = tmp_path / "r.csv", tmp_path / "loads.png"
    assert main(["run", *SMALL, "--policies", "fcfs,bfio:0,bfio:2", "--out", str(out), "--plot", str(png)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 * 3
    assert {(r["label"], r["seed"]) for r in rows} == {
        (p, str(s)) for p in ("fcfs", "bfio(H=0)", "bfio(H=2)") for s in range(3)
    }
    for col in ("policy", "seed", "avg_imbalance_tokens", "throughput_tokens_per_s", "tpot_s", "energy_j"):
        assert col in rows[0]
    assert all(float(r["throughput_tokens_per_s"]) > 0 for r in rows)
    assert png.stat().st_size > 10_000
    table = capsys.readouterr().out
    assert "| bfio(H=2) |" in table and "±" in table


def test_run_on_a_trace(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("prompt,output\n" + "\n".join(f"{10 + i},{1 + i % 5}" for i in range(50)))
    out = tmp_path / "r.csv"
    assert (
        main(["run", *SMALL, "--policies", "jsq_tokens", "--trace", str(trace), "--out", str(out), "--plot", "none"])
        == 0
    )
    rows = list(csv.DictReader(out.open()))
    assert [r["workload"] for r in rows] == ["t"] * 3


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--policies", "nope"], "policies"),
        (["--policies", "fcfs:3"], "only bfio takes a lookahead"),
        (["--G", "0"], "num_workers (G) must be an integer >= 1"),
        (["--seeds", "0"], "--seeds"),
        (["--trace", "/nonexistent.csv"], "does not exist"),
    ],
)
def test_run_bad_input_exits_2_with_message(args, needle, capsys, tmp_path):
    code = main(["run", *SMALL, *args, "--out", str(tmp_path / "x.csv"), "--plot", "none"])
    assert code == 2
    assert needle in capsys.readouterr().err


def test_parse_policies():
    assert parse_policies("fcfs, bfio:20") == [PolicySpec("fcfs"), PolicySpec("bfio", 20)]
    with pytest.raises(ConfigError, match="lookahead H"):
        parse_policies("bfio:-1")


@pytest.mark.slow  # 26 s; tests/core/test_sweep.py checks resuming through the API by default
def test_sweep_command_writes_and_resumes(tmp_path, capsys):
    out = tmp_path / "s.csv"
    args = [
        "sweep",
        "--axis",
        "policy=fcfs,bfio",
        "--axis",
        "num_workers=2,3",
        "--axis",
        "slots_per_worker=4",
        "--axis",
        "pool_size=4",
        "--seeds",
        "2",
        "--steps",
        "50",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4 and {r["policy"] for r in rows} == {"fcfs", "bfio"}
    assert main(args) == 0  # resumed: nothing to do, nothing duplicated
    assert list(csv.DictReader(out.open())) == rows
    assert main(["sweep", "--axis", "bogus", "--out", str(out)]) == 2
    assert "--axis must look like" in capsys.readouterr().err


def test_engine_groups_and_their_top_level_aliases(tmp_path, capsys):
    # `jaxsched ENGINE COMMAND` for every engine; today's top-level commands are aliases that
    # give the same rows.
    rows = {}
    for argv in (["run"], ["dp", "run"]):
        out = tmp_path / f"{len(argv)}.csv"
        assert main([*argv, *SMALL, "--policies", "fcfs,power_of_two", "--out", str(out), "--plot", "none"]) == 0
        rows[len(argv)] = [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(out.open())]
    assert rows[1] == rows[2] and {r["policy"] for r in rows[1]} == {"fcfs", "power_of_two"}
    assert "dp run" in (tmp_path / "2.config.toml").read_text().splitlines()[0]
    for argv in (
        ["dp", "check", "--help"],
        ["dp", "reproduce", "--help"],
        ["kv", "tune", "--help"],
        ["budget", "check-stability", "--help"],
    ):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    capsys.readouterr()
    assert main(["dp", "check", "stability"]) == 2
    assert "budget check-stability" in capsys.readouterr().err


def test_flags_and_config_keys_take_the_config_field_names(tmp_path):
    # `--num-workers` is `--G` (the Config field's name beside the paper's letter), on the
    # command line and as a --config key; one option given under two names is refused.
    outs = []
    for i, argv in enumerate((["--G", "3", "--steps", "40"], ["--num-workers", "3", "--num-steps", "40"])):
        out = tmp_path / f"{i}.csv"
        assert (
            main(
                [
                    "dp",
                    "run",
                    "--B",
                    "4",
                    "--R",
                    "4",
                    "--seeds",
                    "2",
                    "--quiet",
                    "--policies",
                    "fcfs",
                    *argv,
                    "--out",
                    str(out),
                    "--plot",
                    "none",
                ]
            )
            == 0
        )
        outs.append([{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(out.open())])
    assert outs[0] == outs[1] and outs[0][0]["num_workers"] == "3"
    conf = tmp_path / "c.toml"
    conf.write_text(
        "num_workers = 3\nslots_per_worker = 4\npool_size = 4\nnum_steps = 40\n"
        "seeds = 2\npolicies = 'fcfs'\nquiet = true\nplot = 'none'\n"
    )
    out = tmp_path / "2.csv"
    assert main(["dp", "run", "--config", str(conf), "--out", str(out)]) == 0
    assert [{k: v for k, v in r.items() if k != "wall_s"} for r in csv.DictReader(out.open())] == outs[0]
    conf.write_text("G = 3\nnum_workers = 4\n")
    assert main(["dp", "run", "--config", str(conf)]) == 2
