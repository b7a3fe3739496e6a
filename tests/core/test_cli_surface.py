"""The command line's surface: fast help that lists names and defaults, --version, --config
files, output paths checked before any work, fallback files, umask, readable results."""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from jaxsched import __version__
from jaxsched.cli import build_parser, main
from jaxsched.errors import ConfigError
from jaxsched.outputs import check_dir, check_file, file_mode, save
from jaxsched.results import ResultsFile, write_csv

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--G", "2", "--B", "4", "--R", "4", "--steps", "40", "--seeds", "2", "--quiet", "--policies", "fcfs"]


ENGINE_NAMES = ("dp", "kv", "offline", "interval", "budget", "network")


def _registry(engine: str):
    return importlib.import_module(f"jaxsched.{engine}.registry")


@pytest.mark.parametrize("engine", ENGINE_NAMES[1:])  # dp's reproductions live in cli/dp.py
def test_registered_experiments_are_the_live_ones(engine):
    # The parsers list these names without importing JAX; each is the engine's own, and
    # `jaxsched ENGINE experiment NAME` runs the registered function.
    reg = _registry(engine).EXPERIMENTS
    live = importlib.import_module(f"jaxsched.{engine}.experiments").EXPERIMENTS
    if engine == "kv":  # E1-E4 run by name; Theorem 1's scaling has its own runner
        from jaxsched.kv import experiments as kx

        assert reg.names() == (*live, "scaling")
        assert all(reg[n].fn is kx.run_experiment for n in live)
        assert reg["scaling"].fn is kx.run_scaling
        assert all(live[n].title in reg[n].doc and live[n].figure in reg[n].doc for n in live)
    else:
        assert reg.names() == tuple(live)
        assert all(reg[n].fn is live[n] for n in live)


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_registered_sweep_fields_are_the_live_engines(engine):
    from jaxsched import get_engine

    eng, reg = get_engine(engine), _registry(engine)
    assert (reg.CONFIG_FIELDS, reg.PARAMS_FIELDS) == (tuple(eng.config_fields()), tuple(eng.params_fields()))


def test_dp_registries_are_the_live_names():
    from jaxsched import kernels
    from jaxsched.dp import DPConfig
    from jaxsched.dp import registry as reg
    from tests.reference import dp as ref

    assert reg.KERNELS.names() == tuple(kernels.BFIO_VARIANTS)
    assert all(callable(e.fn) and e.fn is getattr(kernels, e.fn.__name__) for e in reg.KERNELS.values())
    assert all(e.fn().name == n for n, e in reg.WORKLOADS.items())  # each its constructor
    assert (reg.SEMANTICS, reg.PREDICTORS) == (ref.SEMANTICS, ref.PREDICTORS)
    for s in reg.SEMANTICS:
        assert DPConfig(semantics=s).semantics == s
    for p in reg.PREDICTORS:
        assert DPConfig(predictor=p).predictor == p
    for k in reg.KERNELS:
        assert DPConfig(bfio_kernel=k).bfio_kernel == k


def test_kv_registries_are_the_live_names():
    import inspect

    from jaxsched.kv import config, experiments
    from jaxsched.kv import registry as reg

    assert reg.CAPACITY_RULES.names() == tuple(experiments.CAPACITY_RULES)
    assert all(e.fn is experiments.capacity_for for e in reg.CAPACITY_RULES.values())
    defaults = inspect.signature(config.make_params).parameters
    assert (reg.DEFAULT_CAPACITY_TOKENS, reg.DEFAULT_D0_S, reg.DEFAULT_D1_S_PER_TOKEN) == (
        defaults["capacity_tokens"].default,
        defaults["d0_s"].default,
        defaults["d1_s_per_token"].default,
    )
    hw = experiments.HARDWARE
    assert (hw.capacity_tokens, hw.d0_s, hw.d1_s_per_token) == (
        reg.DEFAULT_CAPACITY_TOKENS,
        reg.DEFAULT_D0_S,
        reg.DEFAULT_D1_S_PER_TOKEN,
    )


def test_offline_and_interval_registries_are_the_live_names():
    import typing

    from jaxsched import batchmodel
    from jaxsched.interval import intervals
    from jaxsched.interval import registry as ireg
    from jaxsched.interval import workloads as iwork
    from jaxsched.offline import compare, workloads
    from jaxsched.offline import registry as oreg
    from tests.reference import interval as iref

    assert oreg.WORKLOADS.names() == workloads.NAMES
    assert all(e.fn is workloads.named for e in oreg.WORKLOADS.values())
    assert oreg.STEP_MODELS.names() == tuple(compare.STEP_MODELS) == ("unit", "linear")
    assert (oreg.STEP_MODELS["unit"].fn, oreg.STEP_MODELS["linear"].fn) == (
        batchmodel.UNIT_STEP_MODEL,
        batchmodel.LINEAR_STEP_MODEL,
    )
    assert ireg.STEP_MODELS is oreg.STEP_MODELS  # the batch model's, shared
    assert ireg.WORKLOADS.names() == iwork.NAMES
    assert all(e.fn is iwork.named for e in ireg.WORKLOADS.values())
    # Every predictor class has a name, and `parse` reads each name's short form.
    assert tuple(e.fn for e in ireg.INTERVAL_KINDS.values()) == typing.get_args(intervals.IntervalSpec)
    short = {"shared": "shared:1:10", "buckets": "buckets:10:3", "relative": "relative:0.5", "exact": "exact"}
    assert {n: type(intervals.parse(short[n])) for n in ireg.INTERVAL_KINDS} == {
        n: e.fn for n, e in ireg.INTERVAL_KINDS.items()
    }
    assert (ireg.EVICTION_KEYS, ireg.AMAX_ORDERS) == (iref.EVICTION_KEYS, iref.AMAX_ORDERS)


def test_help_and_version_do_not_import_jax():
    # `--help`, `--version` and the help of every command (walked from the parser) in one
    # fresh interpreter: none imports JAX.
    paths = list(command_paths(build_parser()))
    assert {p[0] for p in paths} == {*ENGINE_NAMES, "run", "reproduce", "check", "sweep", "tune", "list", "data"}
    # `jaxsched list` reads the registries only: it answers at once too.
    argvs = [["--help"], ["--version"], ["list"]] + [[*p, "--help"] for p in paths]
    code = (
        "import json, sys\nfrom jaxsched.cli import main\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "assert 'jax' not in sys.modules, 'help imported jax'\n"
    )
    p = subprocess.run([sys.executable, "-c", code, json.dumps(argvs)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("usage: jaxsched") == len(argvs) - 2  # all but --version, list
    p = subprocess.run([sys.executable, "-m", "jaxsched.cli", "--version"], capture_output=True, text=True)
    # The version and the code revision (a git checkout's commit, "-dirty" with local edits).
    line = rf"jaxsched {re.escape(__version__)} \(revision ([0-9a-f]+(-dirty)?|unknown)\)"
    assert re.fullmatch(line, p.stdout.strip()), p.stdout


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: sub
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for name, sub in a.choices.items()
    }


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every command of `parser` as its argument path: ("run",), ("kv",), ("kv", "run"), ..."""
    for name, sub in _subcommands(parser).items():
        yield (*prefix, name)
        yield from command_paths(sub, (*prefix, name))


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


# What `--out` names, by command kind: a run (and a sweep) writes one CSV file; an experiment,
# a reproduction, a check or a tuning writes a folder of files. Its help begins by saying so.
OUT_KINDS = {
    "run": "file",
    "sweep": "file",
    "experiment": "folder",
    "reproduce": "folder",
    "check": "folder",
    "check-stability": "folder",
    "tune": "folder",
}
OUT_HELP = {"file": "CSV file, one row per ", "folder": "folder for "}


def test_every_run_takes_8_seeds_and_every_out_says_file_or_folder():
    root = build_parser()
    commands = {}
    for path in command_paths(root):
        parser = root
        for name in path:
            parser = _subcommands(parser)[name]
        commands[path] = parser
    runs = [p for p in commands if p[-1] == "run"]
    assert len(runs) == 7  # run, and dp, kv, offline, interval, budget, network run
    for path in runs:
        assert _option(commands[path], "--seeds").default == 8, path
    with_out = {p: _option(c, "--out") for p, c in commands.items() if _option(c, "--out")}
    assert {p[-1] for p in with_out} == set(OUT_KINDS)  # every command with --out has a kind
    for path, action in with_out.items():
        kind = OUT_KINDS[path[-1]]
        assert action.help.startswith(OUT_HELP[kind]), (path, action.help)
        assert action.default is None or str(action.default).endswith(".csv") == (kind == "file"), path


def test_reproduce_writes_its_csv_into_the_out_folder(tmp_path, monkeypatch, capsys):
    import jaxsched.cli.dp as cli_dp

    rows = [{"lookahead_steps": 0, "seed": 0, "avg_imbalance_tokens": 1.5}]
    monkeypatch.setattr(cli_dp, "_reproduce_fig4", lambda n, png, quiet: (rows, "table", png))
    out = tmp_path / "r"
    assert main(["reproduce", "fig4", "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    assert list(csv.DictReader((out / "fig4.csv").open())) == [
        {"lookahead_steps": "0", "seed": "0", "avg_imbalance_tokens": "1.5"}
    ]
    conf = tomllib.loads((out / "fig4.config.toml").read_text())
    assert conf["out"] == str(out) and conf["seeds"] == 2
    assert f"plot: {out / 'fig4.png'}" in capsys.readouterr().out  # the plot's default place
    (tmp_path / "f.csv").write_text("x")
    assert main(["reproduce", "fig4", "--out", str(tmp_path / "f.csv")]) == 2
    assert "--out must be a folder" in capsys.readouterr().err


def _help(*argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*argv, "--help"])
    assert e.value.code == 0
    return ""


@pytest.mark.parametrize(
    "argv, needles",
    [
        (
            ["run"],
            [
                "fcfs_alg2",
                "round_robin",
                "(default: 3000)",
                "(default: 16)",
                "(default: results/run.csv)",
                "(default: oracle)",
            ],
        ),
        (["check"], ["ms_lf", "round_lpt", "(default: window)", "theorems 4, stability 8", "stability"]),
        (
            ["reproduce"],
            ["table1, fig4, noise", "folder for <what>.csv", "(default: results)", "default <out>/<what>.png"],
        ),
        (
            ["sweep"],
            [
                "num_workers",
                "step_const_s",
                "capacity_tokens",
                "burn_in_requests",
                "(default: 64)",
                "(default: 1024.0)",
            ],
        ),
        (["kv", "run"], ["nested_wait", "sarathi", "(default: 110000)", "(default: 0.01)"]),
        (["kv", "experiment"], ["e1, e2, e3, e4, scaling", "mstar"]),
        (["tune"], ["(default: 200)", "(default: 1000)"]),
        (
            ["offline", "run"],
            ["sorted_f_quantile", "azure", "(default: sorted_f_swap)", "(default: unit)", "(default: 0.1)"],
        ),
        (["offline", "experiment"], ["example1", "lower_bound", "ec42", "(default: results/offline)"]),
    ],
)
def test_help_lists_names_and_defaults(argv, needles, capsys):
    _help(*argv)
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for n in needles:
        assert n in text, n


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--G", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsched: error:") and "--G" in err[0]


# ---------------------------------------------------------------- --config files


def test_config_file_sets_options_and_flags_win(tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text('G = 3\nsteps = 30\nseeds = 2\npolicies = "fcfs"\nplot = "none"\nquiet = true\nB = 4\nR = 4\n')
    out = tmp_path / "r.csv"
    assert main(["run", "--config", str(conf), "--steps", "25", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {r["num_workers"] for r in rows} == {"3"}  # from the file
    assert {r["num_steps"] for r in rows} == {"25"}  # the flag wins
    resolved = tomllib.loads((tmp_path / "r.config.toml").read_text())
    assert resolved["num_workers"] == 3 and resolved["num_steps"] == 25 and resolved["policies"] == "fcfs"
    # The written options repeat the run exactly.
    again = tmp_path / "again.csv"
    assert main(["run", "--config", str(tmp_path / "r.config.toml"), "--out", str(again), "--quiet"]) == 0
    a, b = list(csv.DictReader(out.open())), list(csv.DictReader(again.open()))
    assert a == b


@pytest.mark.parametrize(
    "text, needle",
    [
        ("nope = 3\n", "unknown option 'nope'"),
        ("G = 'x'\n", "G must be a int"),
        ("semantics = 'odd'\n", "semantics must be one of paper, theory"),
        ("quiet = 3\n", "quiet must be true or false"),
        ("G = [1, 2]\n", "G must be a single value"),
        ("G = \n", "not valid TOML"),
    ],
)
def test_bad_config_files_fail_with_one_line(text, needle, tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text(text)
    assert main(["run", "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_config_file_for_sweep_axes(tmp_path):
    conf = tmp_path / "s.toml"
    conf.write_text(
        'axis = ["num_workers=2,3"]\nset = ["slots_per_worker=4", "pool_size=4"]\nsteps = 30\nseeds = 2\nquiet = true\n'
    )
    out = tmp_path / "s.csv"
    assert main(["sweep", "--config", str(conf), "--out", str(out)]) == 0
    assert [r["num_workers"] for r in csv.DictReader(out.open())] == ["2", "3"]
    assert tomllib.loads((tmp_path / "s.config.toml").read_text())["axis"] == ["num_workers=2,3"]


# ---------------------------------------------------------------- outputs


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--out", "{tmp}"], "--out must be a file path, got the directory"),
        (["--out", "{tmp}/file.txt/x.csv"], "--out must be a path in a folder that can be created"),
        (["--plot", "{tmp}/loads.txt"], "--plot must be an image path"),
        (["--plot", "{tmp}"], "--plot must be a file path"),
    ],
)
def test_bad_output_paths_fail_before_any_work(argv, needle, tmp_path, capsys, monkeypatch):
    (tmp_path / "file.txt").write_text("x")
    import jaxsched.dp.experiments as ex

    monkeypatch.setattr(ex, "run_policies", lambda *a, **k: pytest.fail("ran before the check"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["run", *TINY, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_check_helpers():
    with pytest.raises(ConfigError, match="image path"):
        check_file("/tmp/x.csv", "plot", image=True)
    assert check_file("/tmp/jaxsched-x/y.PNG", "plot", image=True).suffix == ".PNG"
    with pytest.raises(ConfigError, match="must be a folder"):
        check_dir(__file__, "out")


def test_failed_write_goes_to_a_fallback_file(tmp_path, capsys):
    def write(p):
        if p.parent == tmp_path:
            raise OSError(28, "No space left on device")
        return write_csv(p, [{"a": 1}])

    written, ok = save(write, tmp_path / "r.csv", "--out")
    assert not ok and written.is_file() and written.parent != tmp_path
    assert list(csv.DictReader(written.open())) == [{"a": "1"}]
    assert str(written) in capsys.readouterr().err
    written.unlink()


def test_results_file_moves_to_a_fallback_when_its_folder_breaks(tmp_path, monkeypatch, capsys):
    import jaxsched.results as r

    path = tmp_path / "s.csv"
    f = ResultsFile(path, "key")
    f.append({"key": "a", "v": 1})
    real = r.write_csv
    monkeypatch.setattr(
        r, "write_csv", lambda p, rows: (_ for _ in ()).throw(OSError(5, "I/O error")) if p == path else real(p, rows)
    )
    f.append({"key": "b", "v": 2})
    assert f.path != path and [x["key"] for x in csv.DictReader(f.path.open())] == ["a", "b"]
    assert str(f.path) in capsys.readouterr().err
    f.path.unlink()


def test_files_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        assert file_mode() == 0o644
        write_csv(tmp_path / "a.csv", [{"a": 1}])
        assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_csv(tmp_path / "b.csv", [{"a": 1}])
        assert (tmp_path / "b.csv").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


# ---------------------------------------------------------------- readable results


def test_run_results_are_readable(tmp_path, capsys, monkeypatch):
    import jaxsched.dp.plots as plots

    titles = []
    real = plots.load_trajectories
    monkeypatch.setattr(
        plots, "load_trajectories", lambda loads, path, **kw: titles.append(kw["title"]) or real(loads, path, **kw)
    )
    out = tmp_path / "r.csv"
    assert (
        main(
            [
                "run",
                *TINY,
                "--out",
                str(out),
                "--plot",
                str(tmp_path / "l.png"),
                "--plot-steps",
                "30",
                "--seed-start",
                "5",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "mean ± 95% CI half-width over 2 seeds" in text
    row = next(csv.DictReader(out.open()))
    for k in ("num_admitted", "num_finished", "num_steps_measured", "cut_step"):
        assert row[k].isdigit(), (k, row[k])  # counts stay integers
    assert "." in row["throughput_tokens_per_s"]
    assert "seed 5" in titles[0] and "steps 1-30" in titles[0]


def test_summary_columns_share_one_format():
    import numpy as np

    from jaxsched.results import mean_ci_column

    cells = mean_ci_column([np.array([1.0, 1.2, 1.1]), np.array([12.5, 13.0, 12.0])])
    assert cells[0].startswith("1.10 ± ") and cells[1].startswith("12.50 ± ")
    assert all(len(part.split(".")[1]) == 2 for c in cells for part in c.split(" ± "))
    sci = mean_ci_column([np.array([2e-5, 3e-5]), np.array([4e-4, 5e-4])])
    assert all("e-0" in c for c in sci)


def test_kv_run_writes_a_csv_and_echoes_its_configuration(tmp_path, capsys):
    out = tmp_path / "kv.csv"
    assert (
        main(["kv", "run", "--num-requests", "40", "--table-size", "64", "--seeds", "2", "--quiet", "--out", str(out)])
        == 0
    )
    captured = capsys.readouterr()
    assert "policy=wait" in captured.err and "thresholds=" in captured.err
    rows = list(csv.DictReader(out.open()))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert rows[0]["num_completed"] == "40" and rows[0]["policy"] == "wait"
    assert tomllib.loads((tmp_path / "kv.config.toml").read_text())["num_requests"] == 40


@pytest.mark.parametrize(
    "argv",
    [
        ["kv", "run", "--num-requests", "30", "--table-size", "64", "--seeds", "2"],
        ["offline", "run", "--workload", "uniform", "--n", "20", "--policy", "mcsf", "--seeds", "2"],
        ["interval", "run", "--n", "30", "--intervals", "relative", "--x", "0.5", "--seeds", "2"],
    ],
)
def test_group_commands_rerun_from_their_written_options(argv, tmp_path):
    # The options file of `jaxsched GROUP run` names no subcommand plumbing, so --config
    # accepts it and repeats the run cell for cell.
    out, again = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    written = tomllib.loads((tmp_path / "a.config.toml").read_text())
    assert not any(k.endswith("_command") for k in written)
    assert main([*argv[:2], "--config", str(tmp_path / "a.config.toml"), "--quiet", "--out", str(again)]) == 0
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert strip(csv.DictReader(out.open())) == strip(csv.DictReader(again.open()))


def test_list_shows_every_registered_name_and_docs_names_is_its_output(capsys):
    # `jaxsched list` reads the registries: every policy of every engine, with its doc and the
    # fields it reads, is listed; docs/names.md is exactly `jaxsched list --markdown`.
    from jaxsched.cli.names import registries, render
    from jaxsched.registry import ENGINES, policies

    assert main(["list"]) == 0
    text = capsys.readouterr().out
    sections = text.split("\n\n")
    for engine, section in zip(ENGINES, sections):
        assert section.startswith(f"{engine}: {ENGINES[engine].doc}\n")
        for name, entry in policies(engine).items():
            line = next(x for x in section.splitlines() if x.strip().startswith(name + " ") and entry.doc in x)
            assert all(o in line for o in entry.options), line
    assert set(registries("dp")) >= {"POLICIES", "KERNELS", "WORKLOADS"}
    doc = Path(__file__).resolve().parents[2] / "docs" / "names.md"
    assert doc.read_text() == render(list(ENGINES), markdown=True), (
        "docs/names.md is out of date: run `jaxsched list --markdown > docs/names.md`"
    )
    assert main(["list", "nope"]) == 2
    assert "engine must be one of" in capsys.readouterr().err


@pytest.mark.parametrize(
    "path, engine", [(("run",), "dp"), (("sweep",), "dp")] + [((e, "run"), e) for e in ENGINE_NAMES]
)
def test_flags_are_named_by_their_fields(path, engine):
    # A flag that sets a Config or make_params field is named by the field (its short form is an
    # alias): the options file a command writes, and `--config` files, use the field names.
    from jaxsched.engine import get_engine

    eng = get_engine(engine)
    fields = set(eng.config_fields()) | set(eng.params_fields())
    parser = build_parser()
    for name in path:
        parser = _subcommands(parser)[name]
    named = 0
    for action in parser._actions:
        longs = [s[2:].replace("-", "_") for s in action.option_strings if s.startswith("--")]
        hit = [n for n in longs if n in fields]
        if hit:
            named += 1
            assert action.dest == hit[0], (path, action.option_strings, action.dest)
            assert action.option_strings[0] == "--" + hit[0].replace("_", "-"), action.option_strings
    assert named >= 1


def test_command_choice_registries_are_the_live_names():
    # The choices of `reproduce`, `budget run --lengths` and `network run --topology/--priority`
    # come from the registries, whose entries resolve to what the commands run.
    from jaxsched.budget.registry import LENGTH_LAWS
    from jaxsched.dp.registry import REPRODUCTIONS
    from jaxsched.network.experiments import RS_ORDERS
    from jaxsched.network.registry import RS_PRIORITIES, RUN_TOPOLOGIES
    from jaxsched.workload import Constant, Poisson

    assert all(callable(e.fn) for e in REPRODUCTIONS.values())
    assert REPRODUCTIONS.names() == ("table1", "fig4", "noise")
    assert [e.fn for e in LENGTH_LAWS.values()] == [Constant, Poisson]
    assert set(RS_PRIORITIES.names()) == set(RS_ORDERS) and RS_PRIORITIES["stable"].fn is RS_ORDERS
    assert all(callable(e.fn) for e in RUN_TOPOLOGIES.values())
    root = build_parser()
    net = _subcommands(_subcommands(root)["network"])["run"]
    assert tuple(_option(net, "--topology").choices) == RUN_TOPOLOGIES.names()
    assert tuple(_option(net, "--priority").choices) == RS_PRIORITIES.names()
    bud = _subcommands(_subcommands(root)["budget"])["run"]
    assert tuple(_option(bud, "--lengths").choices) == LENGTH_LAWS.names()
