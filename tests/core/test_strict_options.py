"""Options the chosen settings ignore are refused by one mechanism, and values are strict.

`jaxsched.errors.refuse_ignored` is the one check: every option names what reads it (a
registry entry's options, a predictor, a topology, an experiment), and an option given while
the chosen settings ignore it, or two options that exclude each other, is one error line. The
command line gives it the flags the user set (`jaxsched.cli.base.resolve`: the command line's,
and a --config file's values other than the defaults, so a written options file repeats its
run); the configs give it their fields set away from their defaults. The cases refused are in
`core/test_bad_inputs.py`; this module checks the mechanism itself and that what the chosen
settings do read is still accepted. Nothing here compiles: an accepted command stops at the
runner's compilation (the guard below).
"""

from __future__ import annotations

import dataclasses
import tomllib

import numpy as np
import pytest

from jaxsched.cli import build_parser, main
from jaxsched.cli.base import check_options, resolve, resolved_options, split_list, write_resolved
from jaxsched.errors import ConfigError, Reads, changed_fields, merge_reads, reads_from, refuse_ignored


class ReachedCompilation(Exception):
    """Raised by the guard: the command accepted its options and was about to compile."""


@pytest.fixture
def no_compile(monkeypatch):
    import jaxsched.run

    def refuse(*args, **kwargs):
        raise ReachedCompilation

    monkeypatch.setattr(jaxsched.run, "_compiled", refuse)


# ------------------------------------------------------------------------------ refuse_ignored

READS = {
    "epsilon": (Reads("policy", ("sorted_f_scaled",)),),
    "noise": (Reads("policy", ("bfio",)), Reads("predictor", ("noisy",))),
}


def test_an_option_its_setting_reads_passes():
    refuse_ignored(["epsilon"], {"policy": "sorted_f_scaled"}, READS)
    refuse_ignored(["noise"], {"policy": ("fcfs", "bfio"), "predictor": "noisy"}, READS)
    refuse_ignored(["unlisted"], {}, READS)  # read by every setting


def test_an_ignored_option_is_one_line_naming_it_and_its_readers():
    with pytest.raises(ConfigError) as info:
        refuse_ignored(["epsilon"], {"policy": "fcfs"}, READS, label=lambda o: f"--{o}")
    assert str(info.value) == "--epsilon is read only by policy sorted_f_scaled; policy fcfs ignores it"
    with pytest.raises(ConfigError, match=r"^noise is read only by policy bfio; policies fcfs, jsq ignore it$"):
        refuse_ignored(["noise"], {"policy": ("fcfs", "jsq"), "predictor": "noisy"}, READS)
    # The conditions in order: the outer setting (the policy) is named first.
    with pytest.raises(ConfigError, match=r"by predictor noisy; predictor oracle ignores it"):
        refuse_ignored(["noise"], {"policy": "bfio", "predictor": "oracle"}, READS)


def test_exclusive_options_are_refused_together_only():
    pair = (("rate", "load", "--load sets the rate"),)
    refuse_ignored(["rate"], {}, {}, pair)
    refuse_ignored(["load"], {}, {}, pair)
    with pytest.raises(ConfigError, match=r"^rate and load are exclusive \(--load sets the rate\): give one"):
        refuse_ignored(["load", "rate"], {}, {}, pair)


def test_reads_from_a_registry_lists_each_options_readers():
    from jaxsched.offline.registry import POLICIES

    reads = reads_from(POLICIES, "policy")
    assert reads["dp_width"] == (Reads("policy", ("sorted_f_dp",)),)
    assert reads["epsilon"] == reads["scale_b"] == (Reads("policy", ("sorted_f_scaled",)),)
    # Two options renamed to one flag name their reader once.
    from jaxsched.dp.registry import POLICIES as DP

    noise = reads_from(DP, "policy", rename={"noise_lo": "noise", "noise_hi": "noise"})["noise"]
    assert noise == (Reads("policy", ("bfio",)),)


def test_a_policy_registered_from_user_code_declares_what_it_reads():
    from jaxsched.registry import register_policy, unregister_policy

    register_policy("offline", "eps_order", lambda c, p, v: None, "a test order", ("epsilon",))
    try:
        reads = reads_from(__import__("jaxsched.offline.registry").offline.registry.POLICIES, "policy")
        assert reads["epsilon"] == (Reads("policy", ("sorted_f_scaled", "eps_order")),)
    finally:
        unregister_policy("offline", "eps_order")


def test_merge_reads_keeps_every_condition_in_order():
    a = {"x": (Reads("policy", ("p",)),)}
    b = {"x": (Reads("mode", ("m",)),), "y": (Reads("mode", ("m",)),)}
    assert merge_reads(a, b) == {"x": (Reads("policy", ("p",)), Reads("mode", ("m",))), "y": b["y"]}


def test_changed_fields_are_the_ones_set_away_from_their_defaults():
    from jaxsched.interval import IntervalConfig

    cfg = IntervalConfig("lmsys", policy="amin", eviction_key="live", num_requests=10)
    assert changed_fields(cfg, ("eviction_key", "amax_order")) == ["eviction_key"]


# ------------------------------------------------------------------------------ lists


def test_split_list_strips_entries_and_refuses_empty_or_repeated_ones():
    assert split_list(" fcfs , bfio:20", "--policies") == ["fcfs", "bfio:20"]
    assert split_list("10,10", "--prefill", unique=False) == ["10", "10"]
    for text in ("", ",", "a,,b", "a,", " , a"):
        with pytest.raises(ConfigError, match=r"^--x must be a comma-separated list without empty entries"):
            split_list(text, "--x")
    with pytest.raises(ConfigError, match=r"^--x must not repeat an entry, got 'a' twice"):
        split_list("a,b,a", "--x")


# ------------------------------------------------------------------------------ given flags


def _resolve(argv):
    return resolve(build_parser(), argv)


def test_given_flags_are_the_command_lines_even_at_their_defaults():
    a = _resolve(["offline", "run", "--policy", "fcfs", "--epsilon", "0.1", "--quiet"])
    assert {"policy", "epsilon", "quiet"} <= a._given and "dp_width" not in a._given
    assert "_given" not in resolved_options(a)  # plumbing, never written


def test_repeatable_and_positional_options_count_as_given():
    a = _resolve(["sweep", "--axis", "policy=fcfs", "--axis", "num_workers=2"])
    assert "axis" in a._given and "set" not in a._given and a.axis == ["policy=fcfs", "num_workers=2"]
    assert "what" in _resolve(["reproduce", "fig4"])._given


def test_a_config_file_gives_the_values_that_differ_from_the_defaults(tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text('policy = "fcfs"\nepsilon = 0.1\nscale_b = 50\n')
    a = _resolve(["offline", "run", "--config", str(conf)])
    assert "scale_b" in a._given and "policy" in a._given and "epsilon" not in a._given


def test_a_written_options_file_repeats_its_run_without_refusal(tmp_path):
    # The file lists every option, those the policy ignores at their defaults.
    from jaxsched.cli.offline import run_reads

    a = _resolve(["offline", "run", "--policy", "fcfs", "--n", "20"])
    vars(a).pop("no_compile_cache")  # the process's flag, dropped by `main` before writing
    path = write_resolved(a, tmp_path / "r.config.toml")
    assert tomllib.loads(path.read_text())["epsilon"] == 0.1
    again = _resolve(["offline", "run", "--config", str(path)])
    assert "epsilon" not in again._given
    check_options(again, run_reads(), {"policy": again.policy, "workload": again.workload})


def test_the_error_names_the_flag_the_option_is_set_by():
    from jaxsched.cli.offline import run_reads

    a = _resolve(["offline", "run", "--policy", "mcsf", "--capacity", "200", "--scale-b", "7"])
    with pytest.raises(ConfigError, match=r"^--scale-b is read only by policy sorted_f_scaled; policy mcsf"):
        check_options(a, run_reads(), {"policy": a.policy, "workload": a.workload})


# ------------------------------------------------------------------------------ what is read passes


ACCEPTED = [
    ["run", "--predictor", "noisy", "--noise", "0.3", "--policies", "fcfs,bfio:2", "--plot", "none"],
    ["run", "--predictor", "classifier", "--fp-rate", "0.1", "--fn-rate", "0.2", "--policies", "bfio:4"],
    ["run", "--workload", "bivariate_normal", "--policies", "fcfs", "--plot", "none"],
    ["run", "--trace", "{trace}", "--trace-columns", "input_tokens,foo", "--policies", "fcfs", "--plot", "none"],
    ["offline", "run", "--policy", "sorted_f_scaled", "--epsilon", "0.2", "--scale-b", "50"],
    ["offline", "run", "--policy", "sorted_f_dp", "--dp-width", "128"],
    ["offline", "run", "--policy", "sorted_f_quantile", "--quantile", "0.5", "--sample-fraction", "0.3"],
    ["interval", "run", "--policy", "amin", "--eviction-key", "live", "--low", "1", "--high", "900"],
    ["interval", "run", "--policy", "amax", "--amax-order", "random", "--intervals", "relative", "--x", "0.3"],
    ["interval", "run", "--intervals", "buckets", "--bucket-width", "100", "--buckets", "9"],
    ["kv", "run", "--policy", "nested_wait", "--thresholds", "5,5", "--num-requests", "40"],
    ["budget", "run", "--policy", "vllm", "--prefill-cap", "600", "--horizon", "20", "--burn-in", "5"],
    ["budget", "run", "--rate", "5", "--horizon", "20", "--burn-in", "5"],
    ["network", "run", "--topology", "rs", "--priority", "stable", "--load", "0.5", "--horizon", "200"],
    ["network", "run", "--agents", "3", "--router", "random", "--rate", "5", "--horizon", "20", "--burn-in", "5"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda argv: "-".join(a.strip("-") for a in argv[:4]))
def test_options_the_chosen_settings_read_are_accepted(argv, no_compile, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "t.csv"
    trace.write_text("input_tokens,foo\n10,2\n20,3\n")
    with pytest.raises(ReachedCompilation):
        main([a.format(trace=trace) for a in argv] + ["--seeds", "2", "--quiet"])
    assert "error" not in capsys.readouterr().err


def test_toml_numbers_of_the_right_type_are_accepted(tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text("load = 1\nbudget = 256\nhorizon_s = 20\n")  # an integer for a float option
    a = _resolve(["budget", "run", "--config", str(conf)])
    assert (a.load, a.budget, a.horizon_s) == (1.0, 256, 20.0) and isinstance(a.load, float)


# ------------------------------------------------------------------------------ the API


def _law():
    from jaxsched.workload import Constant, Independent

    return Independent(Constant(4), Constant(2))


def test_configs_accept_the_options_their_policy_reads():
    from jaxsched.budget import BudgetConfig
    from jaxsched.interval import IntervalConfig
    from jaxsched.network import NetworkConfig

    assert IntervalConfig("lmsys", policy="amin", eviction_key="live").eviction_key == "live"
    assert IntervalConfig("lmsys", policy="amax", amax_order="random").amax_order == "random"
    two = (_law(), _law())
    assert BudgetConfig(policy="wc", phase_first="prefill", inner_order="srpt").inner_order == "srpt"
    assert BudgetConfig(policy="priority", workload=two, type_order=(1, 0)).type_order == (1, 0)
    # The identity order is type_order's default: any policy may carry it.
    assert BudgetConfig(policy="sarathi", workload=two, type_order=(0, 1)).type_order == (0, 1)
    net = NetworkConfig(policy="priority", workload=two, type_orders=((1, 0), (0, 1)), horizon_s=10.0)
    assert net.type_orders == ((1, 0), (0, 1))
    assert NetworkConfig(policy="orca", workload=two, type_orders=((0, 1), (0, 1)), horizon_s=10.0).policy == "orca"
    routes = NetworkConfig(topology="routes", workload=((_law(), _law()),), routes=((0, 1),), horizon_s=10.0)
    assert routes.router == "fewest_tokens"  # the default router, never read there


def test_changing_the_policy_of_a_config_refuses_the_options_left_behind():
    # A sweep over policies with a policy's option fixed runs into this (dataclasses.replace).
    from jaxsched.budget import BudgetConfig

    wc = BudgetConfig(policy="wc", inner_order="srpt")
    with pytest.raises(ConfigError, match=r"^inner_order is read only by policy wc; policy orca ignores it$"):
        dataclasses.replace(wc, policy="orca")


def test_distinct_seeds_pass_and_a_repeat_is_named():
    from jaxsched.rng import check_seeds

    assert check_seeds([3, 1, 2]).dtype == np.uint32
    with pytest.raises(ConfigError, match=r"^seeds must be distinct, got seed 1 3 times$"):
        check_seeds([1, 2, 1, 1])


# ------------------------------------------------------------------------------ trace columns


@pytest.mark.parametrize(
    "header",
    ["prompt,output", "input_tokens,output_tokens", "Prompt Tokens,Output-Tokens", "input,completion_tokens"],
)
def test_two_columns_with_known_names_are_read(header, tmp_path):
    from jaxsched.workload import read_trace

    p = tmp_path / "t.csv"
    p.write_text(f"{header}\n10,2\n20,3\n")
    tr = read_trace(p, order="sequential")
    assert tr.prompt.tolist() == [10, 20] and tr.output.tolist() == [2, 3]


def test_named_columns_are_read_from_any_layout(tmp_path):
    from jaxsched.workload import read_trace

    p = tmp_path / "t.csv"
    p.write_text("id,out,foo,in\n1,2,x,10\n2,3,y,20\n")
    tr = read_trace(p, order="sequential", columns=("in", "out"))
    assert tr.prompt.tolist() == [10, 20] and tr.output.tolist() == [2, 3]
    # A recognized layout is read by its names unless columns says otherwise.
    p.write_text("input_tokens,output_tokens,other\n10,2,7\n")
    assert read_trace(p, order="sequential").output.tolist() == [2]
    assert read_trace(p, order="sequential", columns=("input_tokens", "other")).output.tolist() == [7]


def test_headerless_two_columns_are_still_read(tmp_path):
    from jaxsched.workload import read_trace

    p = tmp_path / "t.csv"
    p.write_text("10,2\n20,3\n")
    assert read_trace(p, order="sequential").output.tolist() == [2, 3]


# ------------------------------------------------------------------------------ the tables


def _parser(*path):
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return parser


@pytest.mark.parametrize(
    "path, table",
    [
        (("reproduce",), "jaxsched.cli.dp:REPRODUCE_READS"),
        (("check",), "jaxsched.cli.dp:CHECK_READS"),
        (("kv", "experiment"), "jaxsched.cli.kv:EXPERIMENT_READS"),
        (("interval", "run"), "jaxsched.cli.interval:INTERVAL_READS"),
        (("network", "run"), "jaxsched.cli.network:TOPOLOGY_READS"),
        (("offline", "run"), "jaxsched.cli.offline:run_reads"),
    ],
)
def test_every_declared_option_is_a_flag_of_its_command(path, table):
    import importlib

    module, _, name = table.partition(":")
    reads = getattr(importlib.import_module(module), name)
    reads = reads() if callable(reads) else reads
    dests = {a.dest for a in _parser(*path)._actions}
    assert set(reads) <= dests, set(reads) - dests


def test_ignored_options_are_refused_before_jax_is_imported():
    import subprocess
    import sys

    argvs = [
        ["offline", "run", "--policy", "fcfs", "--epsilon", "0.2"],
        ["network", "run", "--topology", "rs", "--router", "random"],
        ["budget", "run", "--rate", "10", "--load", "0.5"],
        ["run", "--policies", "fcfs,fcfs"],
        ["check", "stability", "--kernel", "vf"],
    ]
    code = (
        "import sys\nfrom jaxsched.cli import main\n"
        f"codes = [main(a) for a in {argvs!r}]\n"
        "print(codes, 'jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[-2] == f"{[2] * len(argvs)} False", out
