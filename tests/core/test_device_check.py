"""benchmarks.device_check: the comparison of two devices' metrics finds every difference."""

import numpy as np

from benchmarks.device_check import compare


def test_compare_counts_the_runs_that_differ_and_names_the_first():
    a = {"x/y/tel": np.array([3.0, 4.0, 5.0, 6.0]), "x/y/s": np.arange(12).reshape(4, 3), "_device": np.array("a")}
    b = {"x/y/tel": np.array([3.0, 4.5, 5.0, 7.0]), "x/y/s": np.arange(12).reshape(4, 3), "_device": np.array("b")}
    rows, same = compare(a, b)
    assert not same
    by = {r[0]: r for r in rows}
    assert by["x/y/s"][1] == "yes"
    tel = by["x/y/tel"]
    assert tel[1] == "NO" and tel[2] == "2 of 4" and float(tel[3]) == 1.0
    assert tel[5].startswith("run 1: entry 0: 4 vs 4.5")


def test_compare_equal_files_and_nan_and_shape():
    a = {"k/c/m": np.array([np.nan, 1.0]), "k/c/n": np.zeros((2, 2))}
    rows, same = compare(a, {"k/c/m": np.array([np.nan, 1.0]), "k/c/n": np.zeros((2, 2))})
    assert same and all(r[1] == "yes" for r in rows)
    rows, same = compare(a, {"k/c/m": np.array([np.nan, 1.0]), "k/c/n": np.zeros((2, 3))})
    assert not same and "shape" in {r[0]: r for r in rows}["k/c/n"][2]
