"""Resume never returns stale rows: every setting that changes a row's numbers is in its key.

A sweep rerun into an existing file keeps the rows whose key matches and adds rows for
anything else; each case below changes one setting and must add rows, computed anew."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import jaxsched
from jaxsched.cli import main
from jaxsched.dp import DPConfig, make_params
from jaxsched.results import run_key
from jaxsched.sweep import run_sweep

BASE = [
    "sweep",
    "--axis",
    "policy=fcfs",
    "--set",
    "num_workers=2",
    "--set",
    "slots_per_worker=4",
    "--set",
    "pool_size=4",
    "--steps",
    "30",
    "--seeds",
    "2",
    "--quiet",
]


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def _trace(path: Path, scale: int) -> Path:
    path.write_text("prompt,output\n" + "\n".join(f"{10 * scale + i},{1 + (i * scale) % 7}" for i in range(40)))
    return path


@pytest.mark.parametrize(
    "first, second",
    [
        (["--steps", "30"], ["--steps", "80"]),
        (["--semantics", "paper"], ["--semantics", "theory"]),
        (["--workload", "burstgpt_like"], ["--workload", "bivariate_normal"]),
        (["--set", "per_token_s=0.001"], ["--set", "per_token_s=0.002"]),
        (["--seed-start", "0"], ["--seed-start", "1"]),
    ],
)
def test_a_changed_setting_adds_rows_never_returns_old_ones(first, second, tmp_path):
    out = tmp_path / "s.csv"
    one = _sweep(first, out)
    assert len(one) == 1
    assert _sweep(first, out) == one  # same settings: resumed, nothing added
    _changed(one, _sweep(second, out))


def test_a_trace_is_known_by_its_content(tmp_path):
    out, trace = tmp_path / "s.csv", _trace(tmp_path / "t.csv", 1)
    one = _sweep(["--trace", str(trace)], out)
    assert _sweep(["--trace", str(trace)], out) == one
    _trace(trace, 3)  # same path, other lengths
    _changed(one, _sweep(["--trace", str(trace)], out))


def _sweep(extra: list[str], out: Path) -> list[dict]:
    assert main([*BASE, *extra, "--out", str(out)]) == 0
    return _rows(out)


def _changed(before: list[dict], after: list[dict]) -> None:
    """The old row is kept as it was and a new row, with other numbers, is added."""
    assert len(after) == 2 and after[0] == before[0]
    assert after[1]["key"] != after[0]["key"]
    metrics = ("avg_imbalance_tokens_mean", "throughput_tokens_per_s_mean")
    assert any(after[1][m] != after[0][m] for m in metrics)


def test_seed_lists_with_equal_ends_and_count_are_different_keys(tmp_path):
    cfg = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=30, policy="fcfs")
    par = make_params(cfg)
    assert run_key("dp", cfg, par, [0, 1, 9]) != run_key("dp", cfg, par, [0, 5, 9])
    out = tmp_path / "s.csv"
    run_sweep(cfg, {"policy": ["fcfs"]}, [0, 1, 9], out, progress=False)
    run_sweep(cfg, {"policy": ["fcfs"]}, [0, 5, 9], out, progress=False)
    rows = _rows(out)
    assert len(rows) == 2 and rows[0]["avg_imbalance_tokens_mean"] != rows[1]["avg_imbalance_tokens_mean"]
    run_sweep(cfg, {"policy": ["fcfs"]}, [0, 5, 9], out, progress=False)
    assert len(_rows(out)) == 2


def test_key_covers_every_config_and_params_field_and_the_version(monkeypatch):
    cfg = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=30)
    par = make_params(cfg)
    base = run_key("dp", cfg, par, [0, 1])
    import dataclasses

    for f, v in [
        ("semantics", "theory"),
        ("lookahead_decay", 0.5),
        ("delay_bins", 256),
        ("burn_in_steps", 3),
        ("bfio_kernel", "ms_lf"),
        ("num_steps", 31),
    ]:
        other = dataclasses.replace(cfg, **{f: v})
        assert run_key("dp", other, make_params(other), [0, 1]) != base, f
    for k, v in [("step_const_s", 0.03), ("max_power_w", 500.0), ("power_exponent", 2.0)]:
        assert run_key("dp", cfg, make_params(cfg, **{k: v}), [0, 1]) != base, k
    assert run_key("dp", cfg, par, [0, 1]) == base  # and it is deterministic
    monkeypatch.setattr(jaxsched, "__version__", "9.9.9")
    assert run_key("dp", cfg, par, [0, 1]) != base


def test_old_files_without_a_key_column_are_rerun_not_trusted(tmp_path):
    out = tmp_path / "old.csv"
    out.write_text('point,policy,n\n"{""engine"": ""dp""}",fcfs,2\n')
    cfg = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=30, policy="fcfs")
    run_sweep(cfg, {"policy": ["fcfs"]}, [0, 1], out, progress=False)
    rows = _rows(out)
    assert len(rows) == 2 and rows[1]["key"]
