"""The chunk-size benchmark (`benchmarks/bench_chunks.py`) on the speed table's quick interval and
budget cases (explicit instances and seeded runs)."""

import json

import numpy as np

from benchmarks import bench_chunks


def test_chunk_arms_agree_and_are_reported(tmp_path, capsys):
    out = tmp_path / "chunks.json"
    argv = ["--quick", "--engines", "interval", "budget", "--seeds", "4", "--small", "2", "--chunks", "1", "4"]
    assert bench_chunks.main([*argv, "--repeats", "1", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["case"] for r in rows] == ["interval/amin", "budget/sarathi", "budget/vllm"]
    for r in rows:
        assert r["same metrics"] is True
        # The default chunk of 4 runs is all of them, so "chunk 4" is not a second arm.
        assert r["default chunk"] == 4 and "chunk 4" not in r and r["chunk 1"] > 0
        assert r["ms/run @4, default"] > 0 and r["ms/run @2, default"] > 0
    assert "budget/vllm" in out.with_suffix(".md").read_text()


def test_arms_that_differ_fail():
    a = {"x": np.arange(4.0)}
    assert bench_chunks.same(a, {"x": np.arange(4.0)}, 4)
    assert not bench_chunks.same(a, {"x": np.array([0.0, 1.0, 2.0, 3.5])}, 4)
    assert bench_chunks.same(a, {"x": np.array([0.0, 1.0, 2.0, 3.5])}, 3)
