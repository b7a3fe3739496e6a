"""benchmarks/bench_sweep.py: the variants' rows are compared cell by cell with the first
variant's, and the report is rewritten after each variant, marked incomplete until the end."""

import csv
import json

from benchmarks import bench_sweep


def _csv(path, cells):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["point", "key", "avg_imbalance_tokens_mean", "wall_s"])
        w.writeheader()
        for i, v in enumerate(cells):
            w.writerow({"point": f"G={i}", "key": f"{i:016x}", "avg_imbalance_tokens_mean": v, "wall_s": 1.0 + i})


def _result(name, path):
    return dict(
        variant=name, csv=str(path), wall_s=10.0, compiles=3, block_programs=1, compile_s=2.0, cache_hits=0, jax="x"
    )


def test_rows_compared_with_the_first_variant_and_partial_reports(tmp_path):
    _csv(tmp_path / "a.csv", ["1.5", "2.5"])
    _csv(tmp_path / "b.csv", ["1.5", "2.5"])
    _csv(tmp_path / "c.csv", ["1.5", "2.75"])
    env = {"date": "d", "cpu_count": 2, "load_before": [0.1]}
    results = [_result("buckets, cold cache", tmp_path / "a.csv"), _result("buckets, warm cache", tmp_path / "b.csv")]
    bench_sweep._compare_rows(results, env)
    assert env["rows_equal"] is True and env["differences"] == []
    out = tmp_path / "r" / "sweep.json"
    md = bench_sweep._write(out, env, bench_sweep.QUICK, 8, 200, results, {}, final=False)
    assert "INCOMPLETE" in md and "rows equal to the buckets, cold cache rows" in md
    data = json.loads(out.read_text())
    assert data["env"]["complete"] is False and all("csv" not in r for r in data["results"])
    results.append(_result("per point", tmp_path / "c.csv"))
    bench_sweep._compare_rows(results, env)
    assert env["rows_equal"] is False
    # A row is keyed by its point and the first 8 characters of its key.
    assert env["differences"] == ["per point: G=1 00000000 avg_imbalance_tokens_mean 2.5 != 2.75"]
    md = bench_sweep._write(out, env, bench_sweep.QUICK, 8, 200, results, {}, final=True)
    assert "INCOMPLETE" not in md and json.loads(out.read_text())["env"]["complete"] is True
