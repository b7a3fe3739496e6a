"""Results files: atomic CSV rows, read back, resumed by key."""

from __future__ import annotations

import pytest

from jaxsched.results import ResultsFile, read_rows, write_csv


def test_results_file_resumes_by_key(tmp_path):
    path = tmp_path / "r.csv"
    first = ResultsFile(path, "key")
    assert first.rows == [] and first.done == set()
    first.append({"key": "a", "x": 1.5, "n": 3})
    first.append({"key": "b", "x": 0.1})
    (tmp_path / ".r.csv.123.tmp").write_text("torn")  # an interrupted write
    again = ResultsFile(path, "key")
    assert again.done == {"a", "b"} and not list(tmp_path.glob(".r.csv.*"))
    a = again.rows[0]
    assert a == {"key": "a", "x": "1.5", "n": "3", "row_sha": a["row_sha"]}  # floats as repr, exact
    again.append({"key": "c", "x": 2.0})
    assert [r["key"] for r in read_rows(path)] == ["a", "b", "c"]
    with pytest.raises(KeyError, match="key column 'key'"):
        again.append({"x": 1})


def test_non_writer_reads_and_writes_nothing(tmp_path):
    path = tmp_path / "r.csv"
    write_csv(path, [{"key": "a"}])
    other = ResultsFile(path, "key", writer=False)
    assert other.done == set()
    other.append({"key": "b"})
    assert [r["key"] for r in read_rows(path)] == ["a"]


def test_metric_values_are_never_truncated():
    from jaxsched.engine import Metric
    from jaxsched.offline.metrics import METRICS
    from jaxsched.results import metric_value

    assert metric_value(35.0, Metric("steps", "a count of steps")) == 35
    assert isinstance(metric_value(35.0, Metric("steps", "a count of steps")), int)
    # A mean number of steps is not whole, and a fraction is kept even where a metric's unit
    # promises whole numbers.
    assert not METRICS["avg_latency_steps"].integer
    assert metric_value(12.5, METRICS["avg_latency_steps"]) == 12.5
    assert metric_value(12.5, Metric("count", "x")) == 12.5
