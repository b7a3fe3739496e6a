"""Built-in workloads (via jaxsched.workload.materialize) and trace reading (read_trace).

Statistical tolerances are Z = 6 standard errors of the statistic at the sample size used,
unless the brief of the statistic is a relative match to a published number (BurstGPT).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched import ConfigError, read_trace
from jaxsched.workload import (
    BivariateNormal,
    BurstGPTLike,
    Constant,
    Geometric,
    Independent,
    Trace,
    UniformInt,
    materialize,
)

Z = 6.0
N = 400_000  # draws per statistical check (one size everywhere: eager JAX compiles per shape)
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
BURSTGPT = DATA / "burstgpt_8000.csv"
AZURE = DATA / "azure_llm_2023_conv.csv"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"reference data {path} is absent (see ../shared/data/README.md)")
    return path


def _small_trace(order: str) -> Trace:
    # 977 rows (prime, so the modulo in resampling is exercised); output determined by prompt
    prompt = np.arange(1, 978)
    return Trace(prompt, 2 * prompt + 1, name="small", order=order)


WORKLOADS = {
    "constant": Independent(Constant(100), Constant(7)),
    "uniform_int": Independent(UniformInt(1, 50), UniformInt(20, 30)),
    "geometric": Independent(Geometric(0.5), Geometric(0.02)),
    "mixed": Independent(Constant(3), Geometric(0.1)),
    "geometric_p1": Independent(Geometric(1.0), Geometric(0.3, cap=5)),
    "bivariate_normal": BivariateNormal(),
    "burstgpt_like": BurstGPTLike(),
    "trace_resample": _small_trace("resample"),
    "trace_sequential": _small_trace("sequential"),
}


# ---------------------------------------------------------------------------------------------
# Every workload: integer lengths within the stated bounds
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_lengths_are_ints_within_bounds(name: str) -> None:
    wl = WORKLOADS[name]
    n = 977 if name == "trace_sequential" else N
    s, o = materialize(wl, 3, n)
    assert s.shape == (n,) and o.shape == (n,)
    assert s.dtype == np.int32 and o.dtype == np.int32
    assert s.min() >= 1 and o.min() >= 1
    assert s.max() <= wl.max_prompt and o.max() <= wl.max_output
    # bounds are what the overflow proofs use: they must be ints
    assert isinstance(wl.max_prompt, int) and isinstance(wl.max_output, int)


@pytest.mark.parametrize("name", [k for k in WORKLOADS if k != "trace_sequential"])
def test_materialize_is_deterministic_and_seed_dependent(name: str) -> None:
    wl = WORKLOADS[name]
    a = materialize(wl, 11, N)
    b = materialize(wl, 11, N)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(a, b))
    # request i depends only on (seed, i): asking for the ids in another order permutes the draws
    # (compiled, as the engine runs it: eager float32 transcendentals may round differently)
    perm = np.random.default_rng(0).permutation(N).astype(np.int32)
    c = [np.asarray(x) for x in jax.jit(wl.sample)(jnp.uint32(11), jnp.asarray(perm))]
    assert np.array_equal(c[0], a[0][perm]) and np.array_equal(c[1], a[1][perm])
    if name not in ("constant", "geometric_p1"):
        d = materialize(wl, 12, N)
        assert not (np.array_equal(a[0], d[0]) and np.array_equal(a[1], d[1]))


# ---------------------------------------------------------------------------------------------
# Independent marginals
# ---------------------------------------------------------------------------------------------
def test_constant() -> None:
    s, o = materialize(Independent(Constant(100), Constant(2**24)), 0, 1000)
    assert np.all(s == 100) and np.all(o == 2**24)


@pytest.mark.parametrize("low,high", [(1, 1), (1, 50), (20, 30), (100, 4096)])
def test_uniform_int_range_mean_and_frequencies(low: int, high: int) -> None:
    n = N
    s, o = materialize(Independent(UniformInt(low, high), UniformInt(low, high)), 5, n)
    m = high - low + 1
    for x in (s, o):
        assert x.min() == low and x.max() == high
        mean_sd = math.sqrt((m * m - 1) / 12 / n)
        assert abs(x.mean() - (low + high) / 2) <= Z * mean_sd
        if m > 1:
            counts = np.bincount(x - low, minlength=m)
            assert counts.size == m and counts.min() > 0
            expected = n / m
            chi2 = float(((counts - expected) ** 2 / expected).sum())
            assert abs(chi2 - (m - 1)) < Z * math.sqrt(2 * (m - 1)), chi2
    if m > 1:  # prompt and output use different streams
        assert abs(np.corrcoef(s, o)[0, 1]) < Z / math.sqrt(n)


@pytest.mark.parametrize("p", [0.5, 0.1, 0.01])
def test_geometric_mean_variance_and_pmf(p: float) -> None:
    n = N
    x, _ = materialize(Independent(Geometric(p), Geometric(p)), 9, n)
    assert x.min() == 1
    var = (1 - p) / p**2
    assert abs(x.mean() - 1 / p) <= Z * math.sqrt(var / n), x.mean()
    # sample variance: Var(X^2)-based bound is loose; use the fourth central moment of the geometric
    mu4 = (1 - p) * (p * p - 9 * p + 9) / p**4
    assert abs(x.var() - var) <= Z * math.sqrt((mu4 - var**2) / n), x.var()
    for k in (1, 2, 3):
        pk = (1 - p) ** (k - 1) * p
        assert abs(np.mean(x == k) - pk) <= Z * math.sqrt(pk * (1 - pk) / n)
    assert x.max() <= Geometric(p).upper


def test_geometric_p1_and_cap() -> None:
    s, o = materialize(Independent(Geometric(1.0), Geometric(0.01, cap=20)), 0, N)
    assert np.all(s == 1)
    assert o.max() == 20  # P(X >= 20) = 0.99^19 ~ 0.83: the cap is hit
    assert Geometric(0.01, cap=20).upper == 20


# ---------------------------------------------------------------------------------------------
# BivariateNormal
# ---------------------------------------------------------------------------------------------
def _truncated_bivariate_target(n: int = 2_000_000):
    """Means, stds and correlation of the rejected-and-rounded bivariate normal, by numpy MC."""
    r = np.random.default_rng(20240601)
    sp, so, c = 2600.0, 700.0, -0.1
    z = r.multivariate_normal([3200.0, 1200.0], [[sp * sp, c * sp * so], [c * sp * so, so * so]], size=n)
    z = z[(z >= 0).all(1)]
    z = np.maximum(np.round(z), 1)
    return z.mean(0), z.std(0), float(np.corrcoef(z.T)[0, 1]), len(z)


def test_bivariate_normal_truncated_moments() -> None:
    n = N
    s, o = materialize(BivariateNormal(), 1, n)
    mean, std, corr, n_mc = _truncated_bivariate_target()
    # the truncation raises the means from (3200, 1200) to about (3728, 1254)
    assert 3700 < mean[0] < 3760 and 1240 < mean[1] < 1270
    for x, m, sd in ((s, mean[0], std[0]), (o, mean[1], std[1])):
        se = sd * math.sqrt(1 / n + 1 / n_mc)  # sample and Monte Carlo target errors
        assert abs(x.mean() - m) < Z * se, (x.mean(), m)
        # std within 6 standard errors (sd of a sample std ~ sd * sqrt((kurt - 1) / 4n); kurt < 4 here)
        assert abs(x.std() - sd) < Z * sd * math.sqrt(3 / 4 * (1 / n + 1 / n_mc)), (x.std(), sd)
    r = float(np.corrcoef(s, o)[0, 1])
    assert abs(r - corr) < Z * math.sqrt(1 / n + 1 / n_mc), (r, corr)
    # no truncation artefacts: no mass piled up at the clip value 1
    assert np.mean(s == 1) < 1e-3 and np.mean(o == 1) < 1e-3


# ---------------------------------------------------------------------------------------------
# BurstGPTLike vs the statistics of ../shared/data/README.md
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def burstgpt_like_sample():
    return materialize(BurstGPTLike(), 0, N)


def test_burstgpt_like_prompt_statistics(burstgpt_like_sample) -> None:
    s, _ = burstgpt_like_sample
    assert abs(s.mean() / 362.9 - 1) < 0.05, s.mean()
    assert abs(np.median(s) / 217 - 1) < 0.03, np.median(s)
    assert s.max() <= 14117


def test_burstgpt_like_output_statistics(burstgpt_like_sample) -> None:
    _, o = burstgpt_like_sample
    assert abs(o.mean() / 57.0 - 1) < 0.07, o.mean()
    assert np.median(o) == 7
    assert o.max() <= 3206
    # the trace's mode: 45.7% of outputs are exactly 7 tokens (0.457 +- 6 se; plus the lognormal's own 7s)
    frac7 = float(np.mean(o == 7))
    assert 0.457 - Z * math.sqrt(0.25 / o.size) < frac7 < 0.48, frac7


def test_burstgpt_like_correlation(burstgpt_like_sample) -> None:
    s, o = burstgpt_like_sample
    r = float(np.corrcoef(s, o)[0, 1])
    assert abs(r - 0.367) < 0.05, r


# ---------------------------------------------------------------------------------------------
# Trace resample / sequential
# ---------------------------------------------------------------------------------------------
def test_trace_resample_rows_uniform_and_pairs_kept() -> None:
    tr = _small_trace("resample")
    n = N
    s, o = materialize(tr, 4, n)
    assert np.array_equal(o, 2 * s + 1), "a resampled request must be one row (prompt and output together)"
    counts = np.bincount(s - 1, minlength=977)
    assert counts.size == 977
    expected = n / 977
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert abs(chi2 - 976) < Z * math.sqrt(2 * 976), chi2
    assert abs(np.corrcoef(s[:-1], s[1:])[0, 1]) < Z / math.sqrt(n)
    # different seeds resample differently
    s2, _ = materialize(tr, 5, n)
    assert np.mean(s == s2) < 0.01
    assert tr.num_requests is None


def test_trace_sequential_is_file_order_for_every_seed() -> None:
    prompt = np.array([5, 3, 9, 1, 14117, 2])
    output = np.array([7, 1, 3206, 2, 8, 1])
    tr = Trace(prompt, output, order="sequential")
    assert tr.num_requests == 6
    for seed in (0, 1, 2**32 - 1):
        s, o = materialize(tr, seed, 6)
        assert np.array_equal(s, prompt) and np.array_equal(o, output)
    big = _small_trace("sequential")
    s, o = materialize(big, 8, 977)
    assert np.array_equal(s, np.arange(1, 978)) and np.array_equal(o, 2 * s + 1)


def test_trace_constructor_rejects_bad_arrays() -> None:
    with pytest.raises(ConfigError, match="equal-length"):
        Trace(np.array([1, 2]), np.array([1]))
    with pytest.raises(ConfigError, match="equal-length"):
        Trace(np.array([], np.int64), np.array([], np.int64))
    with pytest.raises(ConfigError, match=">= 1"):
        Trace(np.array([1, 0]), np.array([1, 1]))
    with pytest.raises(ConfigError, match="finite"):
        Trace(np.array([1.0, np.nan]), np.array([1, 1]))
    with pytest.raises(ConfigError, match="integers"):
        Trace(np.array([1.0, 2.5]), np.array([1, 1]))
    with pytest.raises(ConfigError, match="2\\^24"):
        Trace(np.array([1, 2**24 + 1]), np.array([1, 1]))
    with pytest.raises(ConfigError, match="order"):
        Trace(np.array([1]), np.array([1]), order="shuffled")


# ---------------------------------------------------------------------------------------------
# read_trace on the reference files
# ---------------------------------------------------------------------------------------------
def test_read_burstgpt_8000() -> None:
    tr = read_trace(_need(BURSTGPT))
    assert tr.prompt.size == 8000 and tr.output.size == 8000
    assert tr.prompt.dtype == np.int32 and tr.output.dtype == np.int32
    assert round(float(tr.prompt.mean()), 1) == 362.9
    assert round(float(tr.output.mean()), 2) == 57.05
    assert np.median(tr.prompt) == 217 and np.median(tr.output) == 7
    assert tr.max_prompt == 14117 and tr.max_output == 3206
    assert abs(np.corrcoef(tr.prompt, tr.output)[0, 1] - 0.367) < 5e-4
    assert tr.order == "resample" and tr.num_requests is None
    # first rows, in file order
    seq = read_trace(BURSTGPT, order="sequential")
    assert seq.num_requests == 8000
    assert (int(seq.prompt[0]), int(seq.output[0])) == (632, 34)
    assert (int(seq.prompt[1]), int(seq.output[1])) == (220, 7)


def test_read_azure_conv() -> None:
    import csv

    path = _need(AZURE)
    tr = read_trace(path)
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    # The README's table says 19365 rows, but the file has 19366 data rows: it has no trailing
    # newline, so `wc -l` (19366) minus the header undercounts by one.
    assert len(rows) == 19366
    assert tr.prompt.size == len(rows)
    assert np.array_equal(tr.prompt, [int(r["ContextTokens"]) for r in rows])
    assert np.array_equal(tr.output, [int(r["GeneratedTokens"]) for r in rows])
    assert tr.prompt.min() >= 1 and tr.output.min() >= 1


# ---------------------------------------------------------------------------------------------
# read_trace on small files: layouts
# ---------------------------------------------------------------------------------------------
def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_burstgpt_real_layout(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "45,ChatGPT,1087,3,1090,API log\n"
        "118,GPT-4,417,392,809,Conversation log\n",
    )
    tr = read_trace(p, order="sequential")
    assert tr.prompt.tolist() == [472, 1087, 417] and tr.output.tolist() == [18, 3, 392]
    assert tr.name == "t"


def test_read_azure_layout_with_crlf(tmp_path: Path) -> None:
    p = tmp_path / "az.csv"
    p.write_bytes(
        b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
        b"2023-11-16 18:15:46.6805900,374,44\r\n2023-11-16 18:15:50.9951690,396,109"
    )
    tr = read_trace(p, order="sequential")
    assert tr.prompt.tolist() == [374, 396] and tr.output.tolist() == [44, 109]


def test_read_plain_two_columns_with_header(tmp_path: Path) -> None:
    tr = read_trace(_write(tmp_path, "prompt,output\n10,2\n20,3\n30,4\n"), order="sequential")
    assert tr.prompt.tolist() == [10, 20, 30] and tr.output.tolist() == [2, 3, 4]
    tr = read_trace(_write(tmp_path, "input_tokens,output_tokens\n10,2\n", "b.csv"), order="sequential")
    assert tr.prompt.tolist() == [10] and tr.output.tolist() == [2]


def test_read_plain_two_columns_without_header(tmp_path: Path) -> None:
    # the first row is data, not a header; surrounding spaces and integral floats are accepted
    tr = read_trace(_write(tmp_path, "10,2\n 20 , 3\n30.0,4\n\n"), order="sequential")
    assert tr.prompt.tolist() == [10, 20, 30] and tr.output.tolist() == [2, 3, 4]


# ---------------------------------------------------------------------------------------------
# read_trace: bad files raise one ConfigError naming the problem
# ---------------------------------------------------------------------------------------------
HEADER = "input_tokens,output_tokens\n"
BAD_FILES = {
    # name: (file text, regexes the message must match)
    "empty": ("", [r"is empty"]),
    "blank_lines_only": ("\n  \n\n", [r"is empty"]),
    "header_only": (HEADER, [r"header but no data rows"]),
    "plain_header_only": ("prompt,output\n", [r"header but no data rows"]),
    "missing_columns": (
        "a,b,c\n1,2,3\n4,5,6\n",
        [r"missing columns", r"Request tokens", r"input_tokens", r"ContextTokens"],
    ),
    "non_numeric": (HEADER + "10,2\n20,abc\n", [r"line 3", r"output", r"'abc'"]),
    "nan": (HEADER + "10,2\nnan,3\n", [r"line 3", r"prompt", r"'nan'"]),
    "inf": (HEADER + "inf,2\n", [r"line 2", r"prompt", r"'inf'"]),
    "zero": (HEADER + "10,2\n20,0\n", [r"line 3", r"output", r"'0'", r"\[1, 2\^24\]"]),
    "negative": (HEADER + "-5,2\n", [r"line 2", r"prompt", r"'-5'", r"\[1, 2\^24\]"]),
    "non_integer": (HEADER + "10,2\n3.5,1\n", [r"line 3", r"prompt", r"'3.5'", r"integer"]),
    "too_long": (HEADER + f"{2**24 + 1},1\n", [r"line 2", r"prompt", r"2\^24"]),
    "missing_field": (HEADER + "10,2\n20\n30,4\n", [r"line 3", r"missing output column"]),
    "empty_field": (HEADER + "10,\n", [r"line 2", r"output", r"''"]),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_trace_files_raise_config_error(tmp_path: Path, case: str) -> None:
    text, patterns = BAD_FILES[case]
    p = _write(tmp_path, text, f"{case}.csv")
    with pytest.raises(ConfigError) as info:
        read_trace(p)
    msg = str(info.value)
    assert str(p) in msg, msg  # names the file
    for pat in patterns:
        assert re.search(pat, msg), (pat, msg)


def test_missing_trace_file_raises_config_error(tmp_path: Path) -> None:
    p = tmp_path / "nope.csv"
    with pytest.raises(ConfigError, match=r"does not exist") as info:
        read_trace(p)
    assert str(p) in str(info.value)
    with pytest.raises(ConfigError, match=r"does not exist"):
        read_trace(tmp_path)  # a directory is not a trace file


def test_bad_order_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"order"):
        read_trace(_write(tmp_path, HEADER + "1,2\n"), order="random")
