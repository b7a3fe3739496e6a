"""The field's trace formats (`read_trace`, `jaxsched.workload.formats`, docs/traces.md).

Each layout has a small made-up fixture under tests/fixtures/traces/: the reader must return
the lengths, times (s since the first row) and kept extras that an independent reading of the
fixture (csv / json from the standard library, with the layout's column names written here)
gives. Then: `format=` overrides detection, bad files raise one ConfigError naming the file,
line and column, the extras stay out of a run's identity, and every fixture reaches the
engines that take traces (dp through the command line's --trace/--trace-format, budget in
Poisson and trace-replay mode, offline, interval, network).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from jaxsched.errors import ConfigError
from jaxsched.workload import Trace, read_trace
from jaxsched.workload.formats import FORMAT_NAMES, FORMATS, detect_csv
from jaxsched.workload.traces import BlockHashes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a fixture is laid out, as the trace's publisher documents it."""

    file: str
    format: str
    prompt: str
    output: str
    time: str | None  # None: a lengths-only file
    unit: float = 1.0  # seconds per time unit (numbers); 0.0: ISO date-times
    count: str | None = None
    hashes: str | None = None


LAYOUTS = {
    "vidur": Layout("vidur.csv", "vidur", "num_prefill_tokens", "num_decode_tokens", "arrived_at"),
    "vidur_lengths": Layout("vidur_lengths.csv", "vidur", "num_prefill_tokens", "num_decode_tokens", None),
    "splitwise": Layout("splitwise.csv", "splitwise", "prompt_size", "token_size", "arrival_timestamp"),
    "mooncake": Layout(
        "mooncake.jsonl", "mooncake", "input_length", "output_length", "timestamp", unit=1e-3, hashes="hash_ids"
    ),
    "azure_lmm_2025": Layout(
        "azure_lmm_2025.csv", "azure_lmm", "ContextTokens", "GeneratedTokens", "TIMESTAMP", 0.0, count="NumImages"
    ),
    "azure_llm_2024": Layout("azure_llm_2024.csv", "azure", "ContextTokens", "GeneratedTokens", "TIMESTAMP", 0.0),
}


def _records(layout: Layout) -> list[dict]:
    """The fixture's rows as dicts, read by the standard library alone."""
    path = FIXTURES / layout.file
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _expected_times(layout: Layout, rows: list[dict]) -> np.ndarray:
    """Seconds since the first row: date-times by the standard library's own ISO parser
    (offsets included), numbers scaled by the layout's unit."""
    from datetime import datetime

    if layout.unit == 0.0:
        first = datetime.fromisoformat(rows[0][layout.time])
        return np.array([(datetime.fromisoformat(r[layout.time]) - first).total_seconds() for r in rows])
    t = np.array([float(r[layout.time]) for r in rows])
    return (t - t[0]) * layout.unit


# ------------------------------------------------------------------------------ reading
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_fixture_reads_as_its_publisher_describes_it(name):
    layout = LAYOUTS[name]
    rows = _records(layout)
    tr = read_trace(FIXTURES / layout.file, order="sequential", times=layout.time is not None)
    assert tr.prompt.tolist() == [int(r[layout.prompt]) for r in rows]
    assert tr.output.tolist() == [int(r[layout.output]) for r in rows]
    assert tr.num_requests == len(rows) and tr.name == Path(layout.file).stem
    if layout.time is not None:
        assert tr.arrival_s[0] == 0.0
        assert tr.arrival_s == pytest.approx(_expected_times(layout, rows), abs=1e-9)
    if layout.count is not None:
        assert tr.num_images.tolist() == [int(r[layout.count]) for r in rows]
    else:
        assert tr.num_images is None
    if layout.hashes is not None:
        assert len(tr.hash_ids) == len(rows)
        assert [tr.hash_ids.row(i).tolist() for i in range(len(rows))] == [r[layout.hashes] for r in rows]
    else:
        assert tr.hash_ids is None


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_format_keyword_reads_the_same_as_detection(name):
    layout = LAYOUTS[name]
    path = FIXTURES / layout.file
    times = layout.time is not None
    assert read_trace(path, times=times, format=layout.format) == read_trace(path, times=times)
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            header = next(csv.reader(f))
        assert detect_csv(header).name == layout.format


def test_lengths_only_reading_keeps_no_times():
    tr = read_trace(FIXTURES / "vidur.csv")
    assert tr.arrival_s is None
    assert tr != read_trace(FIXTURES / "vidur.csv", times=True)  # times are part of a trace's equality
    with pytest.raises(ConfigError, match=r"vidur_lengths\.csv' line 1: times=True needs .*'arrived_at'"):
        read_trace(FIXTURES / "vidur_lengths.csv", times=True)


def test_azure_2024_utc_offsets_are_applied(tmp_path):
    # Mixed stamps as in the 2024 files (with and without a fraction), and offsets other than
    # +00:00: 01:00:00+01:00 is 00:00:00 UTC, 00:00:01Z one second later.
    p = tmp_path / "az.csv"
    p.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-12 01:00:00+01:00,5,1\n"
        "2024-05-12 00:00:01Z,6,2\n"
        "2024-05-11 19:00:01.5-0500,7,3\n"
        "2024-05-12 00:00:02.000001+00:00,8,4\n"
    )
    tr = read_trace(p, times=True)
    assert tr.arrival_s.tolist() == [0.0, 1.0, 1.5, 2.000001]
    # The same instants without offsets read the same (the 2023 layout).
    q = tmp_path / "az2023.csv"
    q.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-12 00:00:00,5,1\n2024-05-12 00:00:01,6,2\n"
        "2024-05-12 00:00:01.5,7,3\n2024-05-12 00:00:02.000001,8,4\n"
    )
    assert read_trace(q, times=True) == tr


def test_jsonl_detected_by_content_and_by_name(tmp_path):
    text = (FIXTURES / "mooncake.jsonl").read_text()
    want = read_trace(FIXTURES / "mooncake.jsonl", times=True)
    other = tmp_path / "mooncake.txt"  # no .jsonl name: the leading '{' tells
    other.write_text("\n" + text)
    assert read_trace(other, times=True) == want
    # A .ndjson name with a CSV inside is read as JSON Lines, and says so at line 1.
    bad = tmp_path / "t.ndjson"
    bad.write_text("prompt,output\n1,2\n")
    with pytest.raises(ConfigError, match=r"t\.ndjson' line 1: must be one JSON object"):
        read_trace(bad)
    # format="plain" forces a CSV reading even of a .jsonl name.
    plain = tmp_path / "plain.jsonl"
    plain.write_text("prompt,output\n3,4\n")
    assert read_trace(plain, format="plain").prompt.tolist() == [3]


def test_mooncake_without_hashes_and_block_hashes_checks(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1}\n')
    assert read_trace(p).hash_ids is None
    h = BlockHashes(np.array([5, 6, 7]), np.array([0, 2, 2, 3]))
    assert len(h) == 3 and h.row(0).tolist() == [5, 6] and h.row(1).tolist() == [] and h.row(2).tolist() == [7]
    with pytest.raises(ConfigError, match=r"BlockHashes"):
        BlockHashes(np.array([5, 6]), np.array([0, 3]))
    with pytest.raises(ConfigError, match=r"hash_ids must be None or BlockHashes of 2 rows"):
        Trace(np.array([1, 2]), np.array([1, 1]), hash_ids=h)
    with pytest.raises(ConfigError, match=r"num_images must be None or 2 integers >= 0"):
        Trace(np.array([1, 2]), np.array([1, 1]), num_images=np.array([1, -1]))


def test_extras_stay_out_of_equality_and_run_identity():
    from jaxsched.results import identity, readable, trace_sha

    moon = read_trace(FIXTURES / "mooncake.jsonl")
    bare = Trace(moon.prompt, moon.output, name=moon.name)
    assert moon == bare and identity(moon) == identity(bare) and readable(moon) == readable(bare)
    assert trace_sha(moon) == trace_sha(bare)
    lmm = read_trace(FIXTURES / "azure_lmm_2025.csv")
    assert identity(lmm) == identity(Trace(lmm.prompt, lmm.output, name=lmm.name))


# ------------------------------------------------------------------------------ bad files
def _edit_csv(text: str, row: int, column: str, value: str) -> str:
    """`text` with data row `row` (0-based) of `column` set to `value`."""
    lines = text.splitlines()
    header = lines[0].split(",")
    cells = lines[row + 1].split(",")
    cells[header.index(column)] = value
    lines[row + 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


def _drop_csv_column(text: str, column: str) -> str:
    lines = [line.split(",") for line in text.splitlines()]
    i = lines[0].index(column)
    return "\n".join(",".join(c[:i] + c[i + 1 :]) for c in lines) + "\n"


def _edit_jsonl(text: str, row: int, key: str, value) -> str:
    rows = [json.loads(line) for line in text.splitlines()]
    if value is _DROP:
        del rows[row][key]
    else:
        rows[row][key] = value
    return "\n".join(json.dumps(r) for r in rows) + "\n"


_DROP = object()
# (case, layout, edit, times, the line the message must name, the column it must name, pattern)
BAD = [
    (
        "missing_prompt",
        "vidur",
        lambda t: _drop_csv_column(t, "num_prefill_tokens"),
        False,
        1,
        "num_prefill_tokens",
        "vidur layout needs",
    ),
    (
        "missing_output",
        "splitwise",
        lambda t: _drop_csv_column(t, "token_size"),
        False,
        1,
        "token_size",
        "missing columns",
    ),
    (
        "missing_count",
        "azure_lmm_2025",
        lambda t: _drop_csv_column(t, "GeneratedTokens"),
        False,
        1,
        "GeneratedTokens",
        "azure_lmm layout needs",
    ),
    (
        "negative_length",
        "vidur",
        lambda t: _edit_csv(t, 1, "num_decode_tokens", "-3"),
        False,
        3,
        "num_decode_tokens",
        r"'-3'",
    ),
    (
        "fraction_length",
        "splitwise",
        lambda t: _edit_csv(t, 2, "prompt_size", "87.5"),
        False,
        4,
        "prompt_size",
        r"integer",
    ),
    ("zero_count", "azure_lmm_2025", lambda t: _edit_csv(t, 0, "NumImages", "-1"), False, 2, "NumImages", r"'-1'"),
    (
        "unsorted_times",
        "vidur",
        lambda t: _edit_csv(t, 3, "arrived_at", "0.25"),
        True,
        5,
        "arrived_at",
        r"nondecreasing",
    ),
    (
        "negative_time",
        "splitwise",
        lambda t: _edit_csv(t, 0, "arrival_timestamp", "-0.5"),
        True,
        2,
        "arrival_timestamp",
        r">= 0",
    ),
    (
        "unsorted_dates",
        "azure_llm_2024",
        lambda t: _edit_csv(t, 2, "TIMESTAMP", "2024-05-12 00:00:00+00:00"),
        True,
        4,
        "TIMESTAMP",
        r"nondecreasing",
    ),
    (
        "bad_offset_date",
        "azure_lmm_2025",
        lambda t: _edit_csv(t, 1, "TIMESTAMP", "tomorrow+00:00"),
        True,
        3,
        "TIMESTAMP",
        r"ISO date-time",
    ),
    (
        "jsonl_missing_output",
        "mooncake",
        lambda t: _edit_jsonl(t, 2, "output_length", _DROP),
        False,
        3,
        "output_length",
        r"missing output length",
    ),
    (
        "jsonl_negative_length",
        "mooncake",
        lambda t: _edit_jsonl(t, 1, "input_length", -7),
        False,
        2,
        "input_length",
        r"-7",
    ),
    (
        "jsonl_fraction_length",
        "mooncake",
        lambda t: _edit_jsonl(t, 4, "output_length", 2.5),
        False,
        5,
        "output_length",
        r"integer",
    ),
    (
        "jsonl_string_length",
        "mooncake",
        lambda t: _edit_jsonl(t, 0, "input_length", "12"),
        False,
        1,
        "input_length",
        r"'12'",
    ),
    (
        "jsonl_unsorted_times",
        "mooncake",
        lambda t: _edit_jsonl(t, 3, "timestamp", 100),
        True,
        4,
        "timestamp",
        r"nondecreasing",
    ),
    ("jsonl_negative_time", "mooncake", lambda t: _edit_jsonl(t, 0, "timestamp", -1), True, 1, "timestamp", r">= 0"),
    (
        "jsonl_missing_time",
        "mooncake",
        lambda t: _edit_jsonl(t, 1, "timestamp", _DROP),
        True,
        2,
        "timestamp",
        r"missing arrival time",
    ),
    (
        "jsonl_bad_hashes",
        "mooncake",
        lambda t: _edit_jsonl(t, 2, "hash_ids", [1, "x"]),
        False,
        3,
        "hash_ids",
        r"list of integers",
    ),
    (
        "jsonl_some_hashes",
        "mooncake",
        lambda t: _edit_jsonl(t, 4, "hash_ids", _DROP),
        False,
        5,
        "hash_ids",
        r"other rows have one",
    ),
    (
        "jsonl_not_object",
        "mooncake",
        lambda t: t.replace('{"timestamp": 2500', '[{"timestamp": 2500', 1),
        False,
        3,
        None,
        r"malformed JSON",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_files_name_the_file_line_and_column(tmp_path, case):
    _, name, edit, times, line, column, pattern = case
    layout = LAYOUTS[name]
    path = tmp_path / layout.file
    path.write_text(edit((FIXTURES / layout.file).read_text()))
    with pytest.raises(ConfigError) as info:
        read_trace(path, times=times)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg, msg
    assert re.search(rf"\bline {line}\b", msg), msg
    if column is not None:
        assert column in msg, msg
    assert re.search(pattern, msg), msg


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("text", ["", "\n \n"])
def test_empty_files(tmp_path, suffix, text):
    p = tmp_path / f"e{suffix}"
    p.write_text(text)
    with pytest.raises(ConfigError, match=rf"{re.escape(str(p))}' is empty"):
        read_trace(p)


def test_named_format_needs_its_columns(tmp_path):
    with pytest.raises(ConfigError, match=r"vidur\.csv' line 1: format 'splitwise' needs column 'prompt_size'"):
        read_trace(FIXTURES / "vidur.csv", format="splitwise")
    with pytest.raises(ConfigError, match=r"format 'azure_lmm' needs column 'NumImages'"):
        read_trace(FIXTURES / "azure_llm_2024.csv", format="azure_lmm")
    with pytest.raises(ConfigError, match=r"splitwise\.csv' line 1: must be one JSON object"):
        read_trace(FIXTURES / "splitwise.csv", format="mooncake")
    with pytest.raises(ConfigError, match=r"format \(--trace-format on the command line\) must be .*'mooncake'"):
        read_trace(FIXTURES / "vidur.csv", format="parquet")
    with pytest.raises(ConfigError, match=r"columns must be None when format is 'vidur'"):
        read_trace(FIXTURES / "vidur.csv", format="vidur", columns=("arrived_at", "num_decode_tokens"))


def test_format_table_is_the_documented_one():
    names = [f.name for f in FORMATS]
    assert len(set(names)) == len(names) and FORMAT_NAMES == (*names, "plain")
    docs = (Path(__file__).resolve().parents[2] / "docs" / "traces.md").read_text()
    for f in FORMATS:
        assert f"`{f.name}`" in docs and f.source in docs, f.name
        for col in (f.prompt, f.output, f.time, f.count, f.hashes):
            assert col is None or f"`{col}`" in docs, (f.name, col)


# ------------------------------------------------------------------------------ engines
NEW = ["vidur", "vidur_lengths", "splitwise", "mooncake", "azure_lmm_2025", "azure_llm_2024"]


def _cli_workload(argv: list[str]):
    from jaxsched.cli import build_parser
    from jaxsched.cli.base import resolve
    from jaxsched.cli.dp import workload_from_args

    return workload_from_args(resolve(build_parser(), argv))


@pytest.mark.parametrize("name", NEW)
def test_dp_takes_each_fixture_through_the_command_line(name):
    from jaxsched.dp import DPConfig, make_params

    layout = LAYOUTS[name]
    path = str(FIXTURES / layout.file)
    tr = _cli_workload(["run", "--trace", path])
    assert tr == read_trace(path) and tr.order == "resample"
    assert _cli_workload(["run", "--trace", path, "--trace-format", layout.format]) == tr
    cfg = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=20, policy="fcfs", workload=tr)
    assert make_params(cfg) is not None and cfg.workload.max_prompt == max(
        int(r[layout.prompt]) for r in _records(layout)
    )


def test_dp_command_line_refuses_a_bad_format():
    with pytest.raises(ConfigError, match=r"--trace-format"):
        _cli_workload(["run", "--trace", str(FIXTURES / "vidur.csv"), "--trace-format", "csv"])
    with pytest.raises(ConfigError, match=r"format 'splitwise' needs column"):
        _cli_workload(["run", "--trace", str(FIXTURES / "vidur.csv"), "--trace-format", "splitwise"])


def test_dp_help_lists_every_format():
    from jaxsched.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    help_text = " ".join(a.help or "" for a in sub.choices["run"]._actions if "--trace-format" in a.option_strings)
    assert all(n in help_text for n in FORMAT_NAMES), help_text


@pytest.mark.parametrize("name", NEW)
def test_budget_takes_each_fixture(name):
    from jaxsched.budget import BudgetConfig, make_params
    from jaxsched.budget.config import enough_steps

    layout = LAYOUTS[name]
    path = FIXTURES / layout.file
    # Poisson arrivals, lengths resampled from the trace (every layout).
    poisson = BudgetConfig(workload=(read_trace(path),), horizon_s=5.0)
    assert make_params(poisson, rates=[2.0]) is not None
    if layout.time is None:
        return
    # Trace replay: the file's own arrival times (docs/budget-semantics.md §1).
    timed = read_trace(path, times=True)
    cfg = enough_steps(BudgetConfig(workload=(timed,), arrival_mode="trace", horizon_s=5.0), rate_scale=1.0)
    assert make_params(cfg, rate_scale=1.0) is not None


def test_budget_replays_the_mooncake_arrivals():
    # The replayed stream of one seed: its rows' lengths, and gaps equal to the file's gaps
    # (ms -> s) divided by rate_scale between consecutive rows.
    from jaxsched.budget import BudgetConfig, make_params, request_stream
    from jaxsched.budget.config import enough_steps

    tr = read_trace(FIXTURES / "mooncake.jsonl", times=True)
    scale = 2.0
    cfg = enough_steps(BudgetConfig(workload=(tr,), arrival_mode="trace", horizon_s=30.0), rate_scale=scale)
    s = request_stream(cfg, make_params(cfg, rate_scale=scale), 0, 12)
    rows = s["row"]
    assert rows.size >= 6
    assert s["vp"].tolist() == tr.prompt[rows].tolist() and s["vd"].tolist() == tr.output[rows].tolist()
    t = s["t_hi"].astype(np.float64) + s["t_lo"].astype(np.float64)
    step = np.flatnonzero(rows[1:] == rows[:-1] + 1)
    assert step.size >= 3
    want = (tr.arrival_s[rows[step + 1]] - tr.arrival_s[rows[step]]) / scale
    assert np.diff(t)[step] == pytest.approx(want, abs=1e-5)


@pytest.mark.parametrize("name", NEW)
def test_offline_interval_network_take_each_fixture(name):
    from jaxsched.budget import BudgetConfig
    from jaxsched.interval import IntervalConfig
    from jaxsched.network import NetworkConfig
    from jaxsched.offline import OfflineConfig
    from jaxsched.offline.workloads import azure_conversation

    path = FIXTURES / LAYOUTS[name].file
    first = azure_conversation(path, 2, order="first", capacity_tokens=10**6)
    assert first.prompt.tolist() == read_trace(path).prompt[:2].tolist()
    assert OfflineConfig(workload=first).workload is first
    assert IntervalConfig(workload=first).workload is first
    tr = read_trace(path)
    assert NetworkConfig(workload=(tr,)).workload[0][0] is tr
    assert BudgetConfig(workload=(tr, tr)).workload == (tr, tr)
