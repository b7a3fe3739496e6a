"""Rows describe themselves: every setting a row's resume key hashes is readable in the row.

Two rows of different keys must also differ in a column a reader sees (not only in `key`,
`wall_s` and the metrics), and rows computed by other code (`results.code_sha`) are computed
again on resume, with the old row kept beside the new one."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import jaxsched
from benchmarks import behaviour
from jaxsched import results
from jaxsched.cli import main
from jaxsched.dp import DPConfig, make_params
from jaxsched.results import code_sha, key_columns, readable, run_key, source_sha
from jaxsched.sweep import run_sweep
from jaxsched.workload import read_trace

CFG = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=30, policy="fcfs")
# Columns that may differ between two rows of the same settings, or that only restate the key.
NOT_DESCRIBING = ("key", "wall_s", "row_sha")
STATS = ("_mean", "_std", "_ci95")


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _describing_diff(a: dict, b: dict) -> set[str]:
    """Columns other than the key, the wall time, the checksum and the statistics in which two
    rows differ."""
    cols = (set(a) | set(b)) - set(NOT_DESCRIBING)
    return {c for c in cols if not c.endswith(STATS) and a.get(c, "") != b.get(c, "")}


def _recomputed(before: list[dict], after: list[dict], column: str) -> None:
    """The old row is kept as it was, one new row of another key is added, and the two rows
    differ in `column`."""
    assert len(after) == len(before) + 1
    assert after[0] == before[0]
    assert after[-1]["key"] != after[0]["key"]
    diff = _describing_diff(after[0], after[-1])
    assert column in diff, diff


def _sweep(out: Path, *, seeds=(0, 1), cfg: DPConfig = CFG, params: dict | None = None) -> list[dict]:
    run_sweep(cfg, {"policy": [cfg.policy]}, list(seeds), out, progress=False, params=params or {})
    return _rows(out)


def test_a_changed_seed_list_is_recomputed_and_shows_in_seeds_sha(tmp_path):
    out = tmp_path / "s.csv"
    one = _sweep(out, seeds=[0, 1, 9])
    assert _sweep(out, seeds=[0, 1, 9]) == one  # same seeds: resumed
    two = _sweep(out, seeds=[0, 5, 9])
    _recomputed(one, two, "seeds_sha")
    # Same ends and count: only the hash of the list tells the rows apart.
    assert _describing_diff(two[0], two[1]) == {"seeds_sha"}
    assert two[1]["num_seeds"] == "3"


def test_a_changed_params_value_is_recomputed_and_shows_in_params(tmp_path):
    out = tmp_path / "s.csv"
    one = _sweep(out, params={"per_token_s": 1e-6})
    two = _sweep(out, params={"per_token_s": 2e-6})
    _recomputed(one, two, "params")
    assert json.loads(two[0]["params"])["per_token_s"] == 1e-6
    assert json.loads(two[1]["params"])["per_token_s"] == 2e-6


def test_a_changed_policy_option_is_recomputed_and_shows_in_config(tmp_path):
    out = tmp_path / "s.csv"
    bfio = dataclasses.replace(CFG, policy="bfio", lookahead_steps=2)
    one = _sweep(out, cfg=bfio)
    # lookahead_decay is no column of the dp engine's own (`describe`); only `config` shows it.
    two = _sweep(out, cfg=dataclasses.replace(bfio, lookahead_decay=0.5))
    _recomputed(one, two, "config")
    assert _describing_diff(two[0], two[1]) == {"config"}
    assert json.loads(two[1]["config"])["lookahead_decay"] == 0.5


def _trace(path: Path, scale: int, rows: int = 100) -> Path:
    path.write_text("prompt,output\n" + "\n".join(f"{10 * scale + i},{1 + (i * scale) % 7}" for i in range(rows)))
    return path


def test_a_rewritten_trace_is_recomputed_and_shows_in_trace_sha(tmp_path):
    out, trace = tmp_path / "s.csv", _trace(tmp_path / "t.csv", 1)
    args = ["sweep", "--axis", "policy=fcfs", "--set", "num_workers=2", "--set", "slots_per_worker=4"]
    args += ["--set", "pool_size=4", "--steps", "30", "--seeds", "2", "--quiet", "--trace", str(trace)]
    assert main([*args, "--out", str(out)]) == 0
    one = _rows(out)
    assert len(one[0]["trace_sha"]) == 16
    _trace(trace, 3)  # the same path and name, other lengths
    assert main([*args, "--out", str(out)]) == 0
    two = _rows(out)
    _recomputed(one, two, "trace_sha")
    assert two[0]["workload"] == two[1]["workload"] == "t"


def test_other_code_is_recomputed_and_shows_in_code(tmp_path, monkeypatch):
    out = tmp_path / "s.csv"
    one = _sweep(out)
    assert one[0]["code"] == code_sha()
    monkeypatch.setattr(results, "code_sha", lambda: "0123456789abcdef")
    two = _sweep(out)
    _recomputed(one, two, "code")
    assert two[1]["code"] == "0123456789abcdef"
    assert _sweep(out) == two  # that code again: resumed
    monkeypatch.undo()
    assert _sweep(out) == two  # the first code again: its row is still current


def test_rows_of_an_older_header_stay_and_only_matching_keys_count(tmp_path):
    # A row written before the describing columns existed (no `code`, other key) stays in the
    # file as it was; the point is computed again and appended under the wider header.
    out = tmp_path / "s.csv"
    out.write_text('key,point,policy,n\nabc,"{""engine"": ""dp""}",fcfs,2\n')
    rows = _sweep(out)
    assert len(rows) == 2 and rows[0]["key"] == "abc" and rows[0]["code"] == ""
    assert rows[1]["code"] == code_sha()


# (what changes, name, value): each changes the key of CFG run over seeds [0, 1].
CHANGES = [
    *[("config", f, v) for f, v in [("semantics", "theory"), ("lookahead_decay", 0.5), ("delay_bins", 256)]],
    *[("config", f, v) for f, v in [("burn_in_steps", 3), ("bfio_kernel", "ms_lf"), ("predictor", "noisy")]],
    *[("params", k, v) for k, v in [("step_const_s", 0.03), ("max_power_w", 500.0), ("power_exponent", 2.0)]],
    ("seeds", "list", [0, 2]),
    ("seeds", "count", [0, 1, 2]),
]


# BF-IO's options: changed on a BF-IO config (make_params refuses them for FCFS, which ignores them).
BFIO_OPTIONS = ("lookahead_decay", "bfio_kernel", "predictor")


@pytest.mark.parametrize("what, name, value", CHANGES)
def test_every_change_of_key_shows_in_a_column(what, name, value):
    start = dataclasses.replace(CFG, policy="bfio") if name in BFIO_OPTIONS else CFG
    cfg, par, seeds = start, make_params(start), [0, 1]
    base = key_columns("dp", cfg, par, seeds)
    if what == "config":
        cfg = dataclasses.replace(start, **{name: value})
        par = make_params(cfg)
    elif what == "params":
        par = make_params(start, **{name: value})
    else:
        seeds = value
    other = key_columns("dp", cfg, par, seeds)
    assert other["key"] != base["key"]
    assert {k for k in base if k != "key" and base[k] != other[k]}


def test_kv_rates_show_in_params():
    from jaxsched import kv

    cfg = kv.KVConfig(num_requests=60, table_size=64)
    one, two = (key_columns("kv", cfg, kv.make_params(cfg, rates=r), [0, 1]) for r in ((500.0, 500.0), (800.0, 800.0)))
    assert one["key"] != two["key"]
    assert one["params"] != two["params"] and one["config"] == two["config"]


def test_trace_content_shows_in_trace_sha_and_config(tmp_path):
    cols = []
    for scale in (1, 3):
        cfg = dataclasses.replace(CFG, workload=read_trace(_trace(tmp_path / "t.csv", scale), order="resample"))
        cols.append(key_columns("dp", cfg, make_params(cfg), [0, 1]))
    assert cols[0]["key"] != cols[1]["key"]
    assert cols[0]["trace_sha"] != cols[1]["trace_sha"] and len(cols[0]["trace_sha"]) == 16
    # 100 rows: the lengths are summarised in `config` by a short hash, not written out.
    prompt = json.loads(cols[0]["config"])["workload"]["prompt"]
    assert prompt["shape"] == [100] and len(prompt["sha256"]) == 16
    assert key_columns("dp", CFG, make_params(CFG), [0, 1])["trace_sha"] == ""


def test_key_columns_carry_the_key_of_run_key():
    par = make_params(CFG)
    cols = key_columns("dp", CFG, par, [0, 1, 9])
    assert cols["key"] == run_key("dp", CFG, par, [0, 1, 9])
    assert cols["num_seeds"] == 3 and len(cols["seeds_sha"]) == 16
    assert cols["code"] == code_sha() and cols["version"] == jaxsched.__version__
    assert json.loads(cols["config"])["num_workers"] == 2


def test_the_key_holds_the_code_revision(monkeypatch):
    par = make_params(CFG)
    base = run_key("dp", CFG, par, [0, 1])
    monkeypatch.setattr(results, "code_sha", lambda: "0123456789abcdef")
    assert run_key("dp", CFG, par, [0, 1]) != base


def test_code_sha_is_the_package_source_and_follows_every_file(tmp_path):
    pkg = Path(jaxsched.__file__).resolve().parent
    # The uncached function, read back to back with the check: the files may change while a
    # test session runs, and the cached value is that of the first call.
    assert code_sha.__wrapped__() == source_sha(pkg)
    assert code_sha() is code_sha()  # computed once per process
    copy = tmp_path / "elsewhere" / "jaxsched"
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    assert source_sha(copy) == source_sha(pkg)  # the location is not part of it
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "notes.txt").write_text("not code")
    assert source_sha(copy) == source_sha(pkg)  # nor are files other than Python source
    target = copy / "results.py"
    target.write_bytes(target.read_bytes() + b"\n")
    edited = source_sha(copy)
    assert edited != source_sha(pkg)
    target.rename(copy / "results2.py")  # the same bytes under another name
    assert source_sha(copy) not in (edited, source_sha(pkg))


def test_readable_writes_numbers_as_their_own_dtype_reads_them():
    assert readable(np.float32(0.03)) == 0.03
    assert readable(np.array([0.1, np.nan, np.inf], np.float32)) == [0.1, "nan", "inf"]
    assert readable(np.arange(3, dtype=np.int32)) == [0, 1, 2]
    big = readable(np.arange(1000))
    assert big["shape"] == [1000] and len(big["sha256"]) == 16


def test_the_behaviour_record_ignores_the_code_revision(tmp_path):
    # Every refactoring changes `code`; the record must still compare.
    assert "code" in behaviour.VOLATILE
    for name, code in (("a", "1111111111111111"), ("b", "2222222222222222")):
        (tmp_path / name / "sweep").mkdir(parents=True)
        (tmp_path / name / "sweep" / "s.csv").write_text(f"key,code,x_mean\n{code},{code},1.5\n")
    assert behaviour.compare(tmp_path / "a", tmp_path / "b") == []
