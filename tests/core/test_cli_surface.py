"""The command line's surface: fast help that lists names and defaults, --version, --config
files, output paths checked before any work, fallback files, umask, readable results."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
import tomllib

import pytest

from jaxsched import __version__
from jaxsched.cli import build_parser, catalog, main
from jaxsched.errors import ConfigError
from jaxsched.outputs import check_dir, check_file, file_mode, save
from jaxsched.results import ResultsFile, write_csv

TINY = ["--G", "2", "--B", "4", "--R", "4", "--steps", "40", "--seeds", "2", "--quiet",
        "--policies", "fcfs"]


def test_catalog_matches_the_live_registries():
    # The parsers list these names without importing JAX; they must be the engines' own.
    from jaxsched import get_engine
    from jaxsched.kernels import BFIO_VARIANTS
    from jaxsched.kv import experiments as kx
    from jaxsched.kv.config import DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN
    from jaxsched.kv.experiments.setups import CAPACITY_RULES
    assert catalog.BFIO_KERNELS == tuple(BFIO_VARIANTS)
    assert catalog.KV_EXPERIMENTS == tuple(kx.EXPERIMENTS)
    assert catalog.KV_CAPACITY_RULES == tuple(CAPACITY_RULES)
    assert (catalog.KV_DEFAULT_CAPACITY_TOKENS, catalog.KV_DEFAULT_D0_S,
            catalog.KV_DEFAULT_D1_S_PER_TOKEN) == (DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S,
                                                   DEFAULT_D1_S_PER_TOKEN)
    from jaxsched.offline import compare, experiments, workloads
    assert catalog.OFFLINE_EXPERIMENTS == tuple(experiments.EXPERIMENTS)
    assert catalog.OFFLINE_WORKLOADS == workloads.NAMES
    assert catalog.OFFLINE_STEP_MODELS == tuple(compare.STEP_MODELS)
    from jaxsched.interval import config as iconfig
    from jaxsched.interval import experiments as iexp
    from jaxsched.interval import workloads as iwork
    assert catalog.INTERVAL_EXPERIMENTS == tuple(iexp.EXPERIMENTS)
    assert catalog.INTERVAL_WORKLOADS == iwork.NAMES
    assert (("stale", "live"), ("sorted", "random")) == (iconfig.EVICTION_KEYS, iconfig.AMAX_ORDERS)
    for name, (cfg, par) in catalog.SWEEP_FIELDS.items():
        eng = get_engine(name)
        assert (cfg, par) == (tuple(eng.config_fields()), tuple(eng.params_fields()))


def test_help_and_version_do_not_import_jax():
    code = ("import sys; from jaxsched.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "assert 'jax' not in sys.modules, 'help imported jax'\n")
    for argv in (["--help"], ["--version"], ["run", "--help"], ["sweep", "--help"],
                 ["kv", "run", "--help"], ["kv", "experiment", "--help"], ["tune", "--help"],
                 ["check", "--help"], ["offline", "run", "--help"],
                 ["offline", "experiment", "--help"], ["interval", "run", "--help"],
                 ["interval", "experiment", "--help"]):
        p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert p.returncode == 0, (argv, p.stderr)
        assert p.stdout.strip()
    p = subprocess.run([sys.executable, "-m", "jaxsched.cli", "--version"], capture_output=True, text=True)
    assert p.stdout.strip() == f"jaxsched {__version__}"


def _help(*argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*argv, "--help"])
    assert e.value.code == 0
    return ""


@pytest.mark.parametrize("argv, needles", [
    (["run"], ["fcfs_alg2", "round_robin", "(default: 3000)", "(default: 16)",
               "(default: results/run.csv)", "(default: oracle)"]),
    (["check"], ["ms_lf", "round_lpt", "(default: window)", "theorems 4, stability 8", "stability"]),
    (["sweep"], ["num_workers", "step_const_s", "capacity_tokens", "burn_in_requests",
                 "(default: 64)", "(default: 1024.0)"]),
    (["kv", "run"], ["nested_wait", "sarathi", "(default: 110000)", "(default: 0.01)"]),
    (["kv", "experiment"], ["e1, e2, e3, e4, scaling", "mstar"]),
    (["tune"], ["(default: 200)", "(default: 1000)"]),
    (["offline", "run"], ["sorted_f_quantile", "azure", "(default: sorted_f_swap)",
                          "(default: unit)", "(default: 0.1)"]),
    (["offline", "experiment"], ["example1", "lower_bound", "ec42", "(default: results/offline)"]),
])
def test_help_lists_names_and_defaults(argv, needles, capsys):
    _help(*argv)
    text = " ".join(capsys.readouterr().out.split())      # argparse wraps lines
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
    conf.write_text('G = 3\nsteps = 30\nseeds = 2\npolicies = "fcfs"\nplot = "none"\n'
                    'quiet = true\nB = 4\nR = 4\n')
    out = tmp_path / "r.csv"
    assert main(["run", "--config", str(conf), "--steps", "25", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {r["num_workers"] for r in rows} == {"3"}          # from the file
    assert {r["num_steps"] for r in rows} == {"25"}           # the flag wins
    resolved = tomllib.loads((tmp_path / "r.config.toml").read_text())
    assert resolved["G"] == 3 and resolved["steps"] == 25 and resolved["policies"] == "fcfs"
    # The written options repeat the run exactly.
    again = tmp_path / "again.csv"
    assert main(["run", "--config", str(tmp_path / "r.config.toml"), "--out", str(again),
                 "--quiet"]) == 0
    a, b = list(csv.DictReader(out.open())), list(csv.DictReader(again.open()))
    assert a == b


@pytest.mark.parametrize("text, needle", [
    ("nope = 3\n", "unknown option 'nope'"),
    ("G = 'x'\n", "G must be a int"),
    ("semantics = 'odd'\n", "semantics must be one of paper, theory"),
    ("quiet = 3\n", "quiet must be true or false"),
    ("G = [1, 2]\n", "G must be a single value"),
    ("G = \n", "not valid TOML"),
])
def test_bad_config_files_fail_with_one_line(text, needle, tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text(text)
    assert main(["run", "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_config_file_for_sweep_axes(tmp_path):
    conf = tmp_path / "s.toml"
    conf.write_text('axis = ["num_workers=2,3"]\nset = ["slots_per_worker=4", "pool_size=4"]\n'
                    'steps = 30\nseeds = 2\nquiet = true\n')
    out = tmp_path / "s.csv"
    assert main(["sweep", "--config", str(conf), "--out", str(out)]) == 0
    assert [r["num_workers"] for r in csv.DictReader(out.open())] == ["2", "3"]
    assert tomllib.loads((tmp_path / "s.config.toml").read_text())["axis"] == ["num_workers=2,3"]


# ---------------------------------------------------------------- outputs

@pytest.mark.parametrize("argv, needle", [
    (["--out", "{tmp}"], "--out must be a file path, got the directory"),
    (["--out", "{tmp}/file.txt/x.csv"], "--out must be a path in a folder that can be created"),
    (["--plot", "{tmp}/loads.txt"], "--plot must be an image path"),
    (["--plot", "{tmp}"], "--plot must be a file path"),
])
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
    monkeypatch.setattr(r, "write_csv", lambda p, rows: (_ for _ in ()).throw(OSError(5, "I/O error"))
                        if p == path else real(p, rows))
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
    monkeypatch.setattr(plots, "load_trajectories",
                        lambda loads, path, **kw: titles.append(kw["title"]) or real(loads, path, **kw))
    out = tmp_path / "r.csv"
    assert main(["run", *TINY, "--out", str(out), "--plot", str(tmp_path / "l.png"),
                 "--plot-steps", "30", "--seed-start", "5"]) == 0
    text = capsys.readouterr().out
    assert "mean ± 95% CI half-width over 2 seeds" in text
    row = next(csv.DictReader(out.open()))
    for k in ("num_admitted", "num_finished", "num_steps_measured", "cut_step"):
        assert row[k].isdigit(), (k, row[k])             # counts stay integers
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
    assert main(["kv", "run", "--num-requests", "40", "--table-size", "64", "--seeds", "2",
                 "--quiet", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "policy=wait" in captured.err and "thresholds=" in captured.err
    rows = list(csv.DictReader(out.open()))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert rows[0]["num_completed"] == "40" and rows[0]["policy"] == "wait"
    assert tomllib.loads((tmp_path / "kv.config.toml").read_text())["num_requests"] == 40


@pytest.mark.parametrize("argv", [
    ["kv", "run", "--num-requests", "30", "--table-size", "64", "--seeds", "2"],
    ["offline", "run", "--workload", "uniform", "--n", "20", "--policy", "mcsf", "--seeds", "2"],
    ["interval", "run", "--n", "30", "--intervals", "relative", "--x", "0.5", "--seeds", "2"],
])
def test_group_commands_rerun_from_their_written_options(argv, tmp_path):
    # The options file of `jaxsched GROUP run` names no subcommand plumbing, so --config
    # accepts it and repeats the run cell for cell.
    out, again = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    written = tomllib.loads((tmp_path / "a.config.toml").read_text())
    assert not any(k.endswith("_command") for k in written)
    assert main([*argv[:2], "--config", str(tmp_path / "a.config.toml"), "--quiet", "--out",
                 str(again)]) == 0
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert strip(csv.DictReader(out.open())) == strip(csv.DictReader(again.open()))
