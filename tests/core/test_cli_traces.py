"""Every command that takes a trace takes every trace format, and the value flags of the
weighted router and of A_min's starting estimate (docs/traces.md, "Which commands take a
trace"; docs/guide/cli.md).

The fixtures are the made-up files under tests/fixtures/traces/ (tests/core/test_trace_formats.py
checks how each reads). Most checks stop where the command would simulate: `simulate` is
replaced by a catcher that records the config and params the command built, so that they can
be compared with what the Python API builds from the same file. Two commands run for real,
tiny: `budget run --trace` (its rows against the API's run) and `sweep --trace` (its rows'
`trace_sha`). Every refusal is one `jaxsched: error:` line naming the flag, exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxsched.cli import build_parser, main
from jaxsched.workload import read_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
# The fixtures with arrival times, and their layouts (test_trace_formats.LAYOUTS).
TIMED = {
    "vidur.csv": "vidur",
    "splitwise.csv": "splitwise",
    "mooncake.jsonl": "mooncake",
    "azure_lmm_2025.csv": "azure_lmm",
    "azure_llm_2024.csv": "azure",
}
ALL = {**TIMED, "vidur_lengths.csv": "vidur"}
# budget run on a fixture, small: 20 simulated seconds, a 256-slot table.
BUDGET_SMALL = ["--horizon", "20", "--burn-in", "2", "--table-size", "256", "--seeds", "2", "--quiet"]


class Caught(Exception):
    """Raised by the catcher in place of simulating."""


@pytest.fixture
def caught(monkeypatch):
    """{"config", "params"} of the run a command was about to simulate (`main` raises Caught)."""
    import jaxsched.budget
    import jaxsched.interval
    import jaxsched.offline
    import jaxsched.run

    seen: dict = {}
    for module in (jaxsched.budget, jaxsched.interval, jaxsched.offline, jaxsched.run):
        monkeypatch.setattr(module, "simulate", _catcher(seen))
    return seen


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxsched: error: ") and "\n" not in err, err
    return err


def _subcommand(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return parser


# ------------------------------------------------------------------------------ the flags


TRACE_COMMANDS = [("run",), ("dp", "run"), ("sweep",), ("budget", "run"), ("offline", "run")]


@pytest.mark.parametrize("path", TRACE_COMMANDS, ids=" ".join)
def test_every_command_with_a_trace_takes_every_format(path):
    from jaxsched.cli.base import TRACE_FORMATS
    from jaxsched.workload.formats import FORMAT_NAMES

    # The parsers' JAX-free copy of the names is read_trace's.
    assert TRACE_FORMATS == FORMAT_NAMES
    options = {s: a for a in _subcommand(*path)._actions for s in a.option_strings}
    assert "--trace" in options and options["--trace-format"].dest == "trace_format"
    assert all(name in options["--trace-format"].help for name in FORMAT_NAMES)


def test_rate_scale_range_is_the_budget_engines():
    from jaxsched.budget.config import RATE_SCALE_RANGE
    from jaxsched.cli.budget import RATE_SCALE_RANGE as CLI_RANGE

    assert CLI_RANGE == RATE_SCALE_RANGE


def test_admission_caps_are_the_budget_engines():
    from jaxsched.budget.config import ADMISSION_CAPS
    from jaxsched.cli.budget import ADMISSION_CAPS as CLI_CAPS

    assert CLI_CAPS == ADMISSION_CAPS
    options = {s: a for a in _subcommand("budget", "run")._actions for s in a.option_strings}
    assert options["--admission-cap"].choices == ADMISSION_CAPS and options["--admission-cap"].default == "batch"


def test_refusals_come_before_jax_is_imported():
    vidur = str(FIXTURES / "vidur.csv")
    argvs = [
        ["budget", "run", "--trace", vidur, "--rate", "5"],
        ["budget", "run", "--rate-scale", "2"],
        ["offline", "run", "--workload", "azure", "--trace-format", "vidur"],
        ["network", "run", "--router-weights", "1,2"],
        ["interval", "run", "--policy", "hsf", "--start-fraction", "0.5"],
        ["interval", "run", "--start-fraction", "2"],
    ]
    code = (
        "import sys\nfrom jaxsched.cli import main\n"
        f"codes = [main(a) for a in {argvs!r}]\n"
        "print(codes, 'jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{[2] * len(argvs)} False"


# ------------------------------------------------------------------------------ budget run --trace


@pytest.mark.parametrize("file", list(TIMED))
def test_budget_run_replays_each_timed_format(file, caught, capsys):
    path = FIXTURES / file
    with pytest.raises(Caught):
        main(["budget", "run", "--trace", str(path), "--trace-format", TIMED[file], "--rate-scale", "2.5"])
    cfg, params = caught["config"], caught["params"]
    assert cfg.arrival_mode == "trace" and cfg.workload == (read_trace(path, times=True),)
    assert float(params.rate_scale) == pytest.approx(2.5)
    # The lengths and gaps replayed are the file's rows.
    assert np.asarray(params.trace_prompt).tolist() == read_trace(path).prompt.tolist()
    assert "rate_scale=2.5" in capsys.readouterr().err


def test_budget_run_on_a_trace_is_the_apis_run(tmp_path, monkeypatch):
    # A real run: its rows are the API's run of the same trace (the command's timing flags are
    # in ms: c = 45.5 ms, a = 0.18 ms/token), and its written options rerun the same run.
    import jaxsched.budget
    from jaxsched.budget import BudgetConfig, make_params, simulate
    from jaxsched.budget.config import enough_steps
    from jaxsched.results import trace_sha

    path = FIXTURES / "vidur.csv"
    out = tmp_path / "b.csv"
    argv = ["budget", "run", "--trace", str(path), "--rate-scale", "2", "--out", str(out), *BUDGET_SMALL]
    assert main(argv) == 0
    rows = list(csv.DictReader(out.open()))
    trace = read_trace(path, times=True)
    timing = dict(c_s=45.5 / 1000, a_s_per_token=0.18 / 1000, b0=64)
    cfg = BudgetConfig(workload=(trace,), arrival_mode="trace", horizon_s=20.0, burn_in_s=2.0, table_size=256)
    cfg = enough_steps(cfg, rate_scale=2.0, **timing)
    res = simulate(cfg, make_params(cfg, rate_scale=2.0, **timing), [0, 1])
    assert [int(r["seed"]) for r in rows] == [0, 1]
    for i, r in enumerate(rows):
        for metric in ("num_departed", "latency_mean_s", "ttft_mean_s", "num_batches"):
            assert float(r[metric]) == float(res.metrics[metric][i]), metric
    assert {r["trace_sha"] for r in rows} == {trace_sha(trace)} and len(rows[0]["trace_sha"]) == 16
    # Five rows per replay period of 3.75 s (the mean gap, 0.9375 s, wraps row 4 to row 0),
    # replayed twice as fast.
    assert float(rows[0]["rate_qps"]) == pytest.approx(5 / (3.75 / 2))
    assert rows[0]["lengths"] == "trace:vidur" and float(rows[0]["rate_scale"]) == 2.0
    seen: dict = {}
    monkeypatch.setattr(jaxsched.budget, "simulate", _catcher(seen))
    with pytest.raises(Caught):
        main(["budget", "run", "--config", str(out.with_name("b.config.toml")), "--overwrite"])
    assert seen["config"] == cfg


def _catcher(seen: dict):
    """A `simulate` that records its config and params in `seen` and raises Caught."""

    def catch(config, params=None, *args, **kwargs):
        seen.update(config=config, params=params)
        raise Caught

    return catch


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--rate", "5"], r"--rate and --trace are exclusive \(the trace's times give the arrivals"),
        (["--load", "0.5"], r"--load and --trace are exclusive"),
        (["--lengths", "poisson"], r"--lengths and --trace are exclusive \(the trace's rows give the lengths"),
        (["--prompt", "10"], r"--prompt and --trace are exclusive"),
        (["--decode", "10"], r"--decode and --trace are exclusive"),
        (["--rate-scale", "0"], r"--rate-scale must be a finite number >= 1e-06 and <= 1000000.0, got 0.0"),
        (["--rate-scale", "nan"], r"--rate-scale must be a finite number"),
        (["--trace-format", "csv"], r"^jaxsched: error: --trace-format must be one of azure_lmm, .*plain .*got 'csv'$"),
        (["--trace-format", "splitwise"], r"--trace: trace file .* format 'splitwise' needs column 'prompt_size'"),
    ],
)
def test_budget_run_trace_refusals_are_one_line(argv, needle, capsys):
    import re

    assert main(["budget", "run", "--trace", str(FIXTURES / "vidur.csv"), *argv]) == 2
    assert re.search(needle, _one_error_line(capsys))


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--rate-scale", "2"], "--rate-scale is read only by --trace FILE; --trace none ignores it"),
        (["--trace-format", "vidur"], "--trace-format is read only by --trace FILE"),
        (["--trace", "/nonexistent/t.csv"], "--trace: trace file '/nonexistent/t.csv' does not exist"),
        # A lengths-only file: the replay needs times, and the reader names the missing column.
        (["--trace", str(FIXTURES / "vidur_lengths.csv")], "--trace: budget run replays the rows' arrival times: "),
        (["--trace", str(FIXTURES / "vidur_lengths.csv")], "needs an arrival-time column ('arrived_at')"),
    ],
)
def test_budget_run_trace_options_need_a_timed_trace(argv, needle, capsys):
    assert main(["budget", "run", *argv]) == 2
    assert needle in _one_error_line(capsys)


def _data_folder(monkeypatch, tmp_path, name: str, fixture: str) -> Path:
    """A data folder ($JAXSCHED_DATA) holding `fixture` as the file of the known trace `name`."""
    from jaxsched.workload.datasets import TRACES

    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / TRACES[name].filename
    path.write_bytes((FIXTURES / fixture).read_bytes())
    monkeypatch.setenv("JAXSCHED_DATA", str(folder))
    return path


def test_budget_run_takes_a_trace_by_name(tmp_path, monkeypatch, caught, capsys):
    path = _data_folder(monkeypatch, tmp_path, "azure_2024_code", "azure_llm_2024.csv")
    with pytest.raises(Caught):
        main(["budget", "run", "--trace", "azure_2024_code"])
    assert caught["config"].workload == (read_trace(path, times=True),)
    assert "trace=AzureLLMInferenceTrace_code_1week (4 rows" in capsys.readouterr().err
    # A known name whose file is not in the data folder: one line saying how to get it.
    assert main(["budget", "run", "--trace", "azure_2023_conv"]) == 2
    assert "run `jaxsched data get azure_2023_conv`" in _one_error_line(capsys)


# ------------------------------------------------------------------------------ sweep --trace


def test_sweep_reads_a_trace_format_and_records_the_trace(tmp_path, capsys):
    from jaxsched.results import trace_sha

    path = FIXTURES / "mooncake.jsonl"
    out = tmp_path / "s.csv"
    grid = ["--axis", "policy=fcfs", "--axis", "num_workers=2", "--axis", "slots_per_worker=4", "--axis", "pool_size=4"]
    argv = ["sweep", *grid, "--steps", "30", "--seeds", "2", "--quiet", "--out", str(out), "--trace", str(path)]
    assert main([*argv, "--trace-format", "mooncake"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 1 and rows[0]["trace_sha"] == trace_sha(read_trace(path)) != ""
    # The same trace read as `plain` is another layout: refused, naming the file's header.
    assert main([*argv, "--trace-format", "plain"]) == 2
    assert "mooncake.jsonl" in _one_error_line(capsys)


def test_sweep_takes_a_trace_by_name(tmp_path, monkeypatch):
    import jaxsched.sweep

    path = _data_folder(monkeypatch, tmp_path, "mooncake_toolagent", "mooncake.jsonl")
    seen: dict = {}

    def catch(base, *args, **kwargs):
        seen["base"] = base
        raise Caught

    monkeypatch.setattr(jaxsched.sweep, "run_sweep", catch)
    with pytest.raises(Caught):
        main(["sweep", "--axis", "policy=fcfs", "--trace", "mooncake_toolagent", "--out", str(tmp_path / "s.csv")])
    assert seen["base"].workload == read_trace(path)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--trace-format", "vidur"], "--trace-format is read only by --trace FILE"),
        (["--trace-columns", "a,b"], "--trace-columns is read only by --trace FILE"),
        (["--engine", "budget", "--trace", "{vidur}"], "--trace is read only by engine dp; engine budget ignores it"),
        (["--trace", "{vidur}", "--trace-format", "csv"], "--trace-format must be one of azure_lmm, azure,"),
    ],
)
def test_sweep_trace_options_are_refused_where_not_read(argv, needle, tmp_path, capsys):
    argv = [a.format(vidur=FIXTURES / "vidur.csv") for a in argv]
    assert main(["sweep", "--axis", "policy=fcfs", "--out", str(tmp_path / "s.csv"), *argv]) == 2
    assert needle in _one_error_line(capsys)


# ------------------------------------------------------------------------------ offline run --trace


@pytest.mark.parametrize("file", list(ALL))
def test_offline_azure_workload_reads_each_format(file, caught):
    # Lengths only: a lengths-only layout works too.
    path = FIXTURES / file
    with pytest.raises(Caught):
        main(["offline", "run", "--workload", "azure", "--trace", str(path), "--trace-format", ALL[file], "--n", "7"])
    batch = caught["config"].workload
    tr = read_trace(path)
    assert batch.num_requests == 7
    assert batch.base.prompt.tolist() == tr.prompt.tolist() and batch.base.output.tolist() == tr.output.tolist()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--workload", "azure", "--trace-format", "vidur"], "--trace-format is read only by --trace FILE"),
        (["--trace", "{vidur}"], "--trace is read only by workload azure; workload uniform ignores it"),
        (["--workload", "azure", "--trace", "{vidur}", "--trace-format", "splitwise"], "needs column 'prompt_size'"),
        (["--workload", "azure", "--trace", "/nonexistent/t.csv"], "--trace: trace file '/nonexistent/t.csv' does not"),
        (["--workload", "azure", "--trace", "{vidur}", "--trace-format", "csv"], "--trace-format must be one of"),
    ],
)
def test_offline_trace_refusals_are_one_line(argv, needle, capsys):
    argv = [a.format(vidur=FIXTURES / "vidur.csv") for a in argv]
    assert main(["offline", "run", *argv]) == 2
    assert needle in _one_error_line(capsys)


def test_offline_workloads_take_a_trace_or_a_path_with_its_format():
    from jaxsched.errors import ConfigError
    from jaxsched.offline.workloads import azure_conversation, named

    path = FIXTURES / "splitwise.csv"
    tr = read_trace(path)
    by_path = azure_conversation(path, 3, order="first", format="splitwise")
    assert by_path == azure_conversation(tr, 3, order="first")
    assert by_path.prompt.tolist() == tr.prompt[:3].tolist()
    assert named("azure", 5, trace=path, format="splitwise")[0] == named("azure", 5, trace=tr)[0]
    with pytest.raises(ConfigError, match=r"^format must be None when the trace is given as a Trace"):
        azure_conversation(tr, 3, format="splitwise")
    with pytest.raises(ConfigError, match=r"^trace and format are read only by workload azure; workload lmsys"):
        named("lmsys", 5, trace=tr)
    with pytest.raises(ConfigError, match=r"needs column 'arrived_at'|format 'vidur' needs column"):
        named("azure", 5, trace=path, format="vidur")


# ------------------------------------------------------------------------------ network --router-weights


def test_network_router_weights_reach_the_params(caught, capsys):
    from jaxsched.network.config import weight_cuts

    with pytest.raises(Caught):
        main(["network", "run", "--agents", "3", "--router", "weighted", "--router-weights", "1,0,3", "--rate", "5"])
    assert np.asarray(caught["params"].route_cuts).tolist() == weight_cuts((1.0, 0.0, 3.0)).tolist()
    assert "router=weighted (weights 1,0,3)" in capsys.readouterr().err
    with pytest.raises(Caught):
        main(["network", "run", "--router", "weighted", "--rate", "5"])  # default: equal weights
    assert np.asarray(caught["params"].route_cuts).tolist() == weight_cuts((1.0, 1.0)).tolist()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--router-weights", "1,2"], "--router-weights is read only by router weighted; router fewest_tokens"),
        (["--topology", "rs", "--router-weights", "1,2"], "--router-weights is read only by topology parallel"),
        (["--router", "weighted", "--router-weights", "1,2,3"], "--router-weights must be K = 2 comma-separated"),
        (["--router", "weighted", "--router-weights", "1,-1"], "numbers >= 0, one per agent (--agents)"),
        (["--router", "weighted", "--router-weights", "0,0"], "with a positive sum (only their ratios matter)"),
        (["--router", "weighted", "--router-weights", "1,x"], "got '1,x'"),
        (["--router", "weighted", "--router-weights", "1,,2"], "got '1,,2'"),
        (["--router", "weighted", "--router-weights", "1,inf"], "got '1,inf'"),
    ],
)
def test_network_router_weights_refusals_are_one_line(argv, needle, capsys):
    assert main(["network", "run", *argv]) == 2
    assert needle in _one_error_line(capsys)


# ------------------------------------------------------------------------------ interval --start-fraction


@pytest.mark.parametrize("policy, theta, q", [("amin", "0.5", 512), ("al", "1", 1024), ("hsf", None, 0)])
def test_interval_start_fraction_reaches_the_params(policy, theta, q, caught):
    argv = ["interval", "run", "--policy", policy, "--n", "20"]
    with pytest.raises(Caught):
        main(argv + ([] if theta is None else ["--start-fraction", theta]))
    assert int(caught["params"].start_q) == q


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--start-fraction", "1.5"], "--start-fraction must be a finite number >= 0.0 and <= 1.0, got 1.5"),
        (["--start-fraction", "-0.1"], "--start-fraction must be a finite number >= 0.0 and <= 1.0"),
        (["--start-fraction", "nan"], "--start-fraction must be a finite number"),
        (["--policy", "amax", "--start-fraction", "0.5"], "--start-fraction is read only by policy amin, al"),
    ],
)
def test_interval_start_fraction_refusals_are_one_line(argv, needle, capsys):
    assert main(["interval", "run", *argv]) == 2
    assert needle in _one_error_line(capsys)
