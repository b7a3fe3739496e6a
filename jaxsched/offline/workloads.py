"""The request mixes of paper 002's experiments, as workloads of `jaxsched.workload`.

SYNTHETIC: section EC.4.2, M = 100 tokens, s and o independent, each in [1, 50] (notes/002.md
§4; continuous laws rounded to the nearest integer, then clipped, as notes §6 resolves):
- uniform: U{1, ..., 50};
- normal: Normal(25, 8.33);
- binomial: 1 + Binomial(49, 0.5);
- exponential: Exponential(scale 5);
- mixed: s is 80% Exponential(scale 10) and 20% LogNormal(median 40, sigma 0.25), values
  above 50 redrawn from U{40, ..., 50}; o is Exponential(scale 5).
n = 100 requests per instance (200 for mixed).

REAL: section 7's real-data mixes, M = 16,492 tokens (LLaMA2-70B on 2 x A100). The datasets are
not shipped, so each is a parametric law whose rounded, clipped marginals reproduce the mean AND
median the paper quotes (notes/002.md §4; `QUOTED`). `law_stats` computes the exact mean and
median of these integer laws from their probability mass functions:

| law | marginal | family (rounded, clipped) | exact mean | exact median |
|---|---|---|---|---|
| lmsys | prompt | LogNormal(median 12, sigma 1.58132) on [1, 8246] | 41.840 | 12 |
| lmsys | output | LogNormal(median 43, sigma 1.17104) on [1, 8246] | 85.350 | 43 |
| arxiv | prompt | Normal(2667.5, 1541.09) on [1, 4096] | 2546.39 | 2667.5 |
| arxiv | output | LogNormal(median 161, sigma 1.10436) on [1, 12396] | 296.08 | 161 |
| mix | both | 80% lmsys, 20% arxiv per request (`JointMixture`) | 542.75, 127.50 | 19, 55 |

- A lognormal with median m and mean mu has sigma^2 = 2 ln(mu / m); sigma is then refitted
  (`fit_lognormal_sigma`) so that the ROUNDED, CLIPPED law keeps the quoted mean (a shift of
  the fourth decimal). Its median is unchanged by rounding and clipping.
- arXiv prompts have mean < median, which no lognormal allows. A normal with mean 2667.5 (the
  median), clipped at 4096, has that left skew: the cap cuts its upper tail (17.7% of requests
  sit at 4096), and `fit_normal_std` finds the std at which the clipped mean is 2546.39. Any cap
  below 2 x 2667.5 would do; 4096 is LLaMA-2's context window, the paper's emulated model, and
  a plausible truncation of long articles. The lower clip puts 4.2% of requests at 1 token.
- Clipping, not dropping: the caps keep every request within M (LMSYS: s, o <= M / 2;
  arXiv: s <= 4096, o <= M - 4096), so the engine never drops one (the paper does not say what
  it did with s + o > M). The caps move under 1e-4 of each lognormal's mass.
- Mix: each request is arXiv-like with probability 0.2 (the paper takes 1600 short and 400
  long requests and subsamples them; a per-request draw keeps every request a pure function of
  (seed, index)). The quoted mixed means are the weighted dataset means; its quoted prompt
  median (18) is a statistic of the real data, which these laws put at 19.

`azure_conversation` loads the Azure LLM inference 2023 conversation trace (a CSV beside the
project) as a batch of n requests.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..batchmodel import PAPER_CAPACITY_TOKENS
from ..errors import ConfigError, require, require_choice, require_float, require_int
from ..workload import (
    Batch,
    Binomial,
    Constant,
    Independent,
    Mixture,
    RoundedExponential,
    RoundedLogNormal,
    RoundedNormal,
    Trace,
    UniformInt,
    read_trace,
)
from ..workload.lengths import JointMixture

SYNTHETIC_CAPACITY_TOKENS = 100
_EXP5 = RoundedExponential(5.0, 1, 50)
_MIXED_S = Mixture(
    (RoundedExponential(10.0, 1, 10**6), RoundedLogNormal(40.0, 0.25, 1, 10**6)),
    (0.8, 0.2),
    cap=50,
    redraw=UniformInt(40, 50),
)
SYNTHETIC = {
    "uniform": (Independent(UniformInt(1, 50), UniformInt(1, 50), name="ec42_uniform"), 100),
    "normal": (Independent(RoundedNormal(25, 8.33, 1, 50), RoundedNormal(25, 8.33, 1, 50), name="ec42_normal"), 100),
    "binomial": (Independent(Binomial(49, 0.5, 1), Binomial(49, 0.5, 1), name="ec42_binomial"), 100),
    "exponential": (Independent(_EXP5, _EXP5, name="ec42_exponential"), 100),
    "mixed": (Independent(_MIXED_S, _EXP5, name="ec42_mixed"), 200),
}


def synthetic(name: str) -> Batch:
    """The EC.4.2 batch `name` (a key of SYNTHETIC): n requests at t = 0."""
    from ..errors import require_choice

    law, n = SYNTHETIC[require_choice(name, "name", tuple(SYNTHETIC))]
    return Batch(law, n)


# --------------------------------------------------------------------------- §7 real data

# The statistics paper 002 quotes for its datasets (§7; notes/002.md §4), tokens.
QUOTED = {
    "lmsys": dict(prompt_mean=41.84, prompt_median=12.0, output_mean=85.35, output_median=43.0),
    "arxiv": dict(prompt_mean=2546.39, prompt_median=2667.5, output_mean=296.08, output_median=161.0),
    # Weighted (0.8, 0.2) dataset means; the median is a statistic of the paper's sample.
    "mix": dict(prompt_mean=542.75, prompt_median=18.0, output_mean=127.50),
}
MIX_WEIGHTS = (0.8, 0.2)  # (LMSYS-like, arXiv-like) per request
REAL_CAPACITY_TOKENS = PAPER_CAPACITY_TOKENS  # M = 16,492 tokens
# Caps (tokens) chosen so that every request fits alone in M: s + o <= M, never dropped.
LMSYS_CAP = REAL_CAPACITY_TOKENS // 2  # 8246, for both s and o
ARXIV_PROMPT_CAP = 4096  # LLaMA-2's context window
ARXIV_OUTPUT_CAP = REAL_CAPACITY_TOKENS - ARXIV_PROMPT_CAP  # 12396

# sigma / std fitted by `fit_lognormal_sigma` / `fit_normal_std` to QUOTED at these caps
# (tests/offline/test_workloads_002.py refits them).
LMSYS = Independent(
    RoundedLogNormal(12.0, 1.58132, 1, LMSYS_CAP), RoundedLogNormal(43.0, 1.17104, 1, LMSYS_CAP), name="lmsys_like"
)
ARXIV = Independent(
    RoundedNormal(2667.5, 1541.09, 1, ARXIV_PROMPT_CAP),
    RoundedLogNormal(161.0, 1.10436, 1, ARXIV_OUTPUT_CAP),
    name="arxiv_like",
)
REAL = {
    "lmsys": LMSYS,
    "arxiv": ARXIV,
    "mix": JointMixture((LMSYS, ARXIV), MIX_WEIGHTS, name="lmsys_arxiv_mix"),
}


def real(name: str, n: int) -> Batch:
    """n requests at t = 0 from the §7 law `name` (a key of REAL: "lmsys", "arxiv", "mix";
    the paper uses the mix with n = 200, 400, ..., 2000), for M = REAL_CAPACITY_TOKENS."""
    law = REAL[require_choice(name, "name", tuple(REAL))]
    return Batch(law, require_int(n, "n", lo=1))


def azure_conversation(
    path: str | Path | Trace,
    n: int,
    *,
    order: str = "resample",
    capacity_tokens: int = PAPER_CAPACITY_TOKENS,
    format: str | None = None,
) -> Batch | Trace:
    """n requests at t = 0 from the Azure LLM inference 2023 conversation trace, or from the
    lengths of any other trace.

    path: the trace file (the Azure CSV `TIMESTAMP,ContextTokens,GeneratedTokens`, whose
    project copy is ../shared/data/azure_llm_2023_conv.csv, or any layout of docs/traces.md;
    a name of `jaxsched.workload.datasets.TRACES` is its file in the data folder), read by
    `jaxsched.workload.read_trace` as the layout `format` (None: detected); or a `Trace`
    already read (then `format` must be None). Only the lengths are used: every request is
    present at t = 0.
    Rows with s + o > capacity_tokens (M, tokens) are dropped first: they could never start,
    and the offline engine would only count them as dropped (the shipped file has none at the
    paper's M = 16,492: its largest s + o is about 14k).
    order="resample": a `Batch` whose run `seed` draws its n requests uniformly, with
    replacement, from the kept rows (row hash(seed, i) mod rows, as `Trace` resamples);
    order="first": the first n kept rows in file (arrival) order, the same instance for every
    seed (a sequential `Trace`, which OfflineConfig accepts as a fixed instance).
    Raises ConfigError for a bad file (read_trace's messages), no row fitting M, or
    order="first" with n above the number of kept rows.
    """
    require_choice(order, "order", ("resample", "first"))
    require_int(n, "n", lo=1)
    M = require_int(capacity_tokens, "capacity_tokens (M)", lo=2)
    if isinstance(path, Trace):
        require(format is None, "format", "None when the trace is given as a Trace (it is read already)", format)
        trace, where = path, path.name
    else:
        trace, where = read_trace(path, format=format), str(path)
    s, o = np.asarray(trace.prompt, np.int64), np.asarray(trace.output, np.int64)
    keep = s + o <= M
    if not keep.any():
        raise ConfigError(f"trace {where!r}: no request has s + o <= M = {M} tokens")
    s, o = s[keep], o[keep]
    if order == "resample":
        return Batch(Trace(s, o, name="azure_conv", order="resample"), n)
    require(n <= s.size, "n", f"<= {s.size} (the rows with s + o <= {M}) for order='first'", n)
    return Trace(s[:n], o[:n], name=f"azure_conv_first{n}", order="sequential")


# --------------------------------------------------------------------------- exact laws


def _phi(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF in float64 (math.erf; numpy has none and SciPy is optional)."""
    return 0.5 * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(np.asarray(z) / math.sqrt(2.0)))


def marginal_pmf(m) -> tuple[np.ndarray, np.ndarray]:
    """The exact law of a length marginal: (k int64[K], p float64[K]), k = low..high tokens.

    Rounded continuous marginals put P(k - 1/2 <= X < k + 1/2) on k (the samplers round halves
    up), and the clipped tails on low and high. Supports Constant, UniformInt, RoundedNormal,
    RoundedExponential and RoundedLogNormal; raises ConfigError for any other marginal.
    """
    if isinstance(m, Constant):
        return np.array([m.value], np.int64), np.ones(1)
    if isinstance(m, UniformInt):
        k = np.arange(m.low, m.high + 1, dtype=np.int64)
        return k, np.full(k.size, 1.0 / k.size)
    k = np.arange(m.low, m.high + 1, dtype=np.int64)
    edges = np.concatenate([k - 0.5, [m.high + 0.5]]).astype(np.float64)
    if isinstance(m, RoundedNormal):
        F = _phi((edges - m.mean) / m.std) if m.std > 0 else (edges > m.mean).astype(np.float64)
    elif isinstance(m, RoundedLogNormal):
        F = (
            _phi((np.log(edges) - math.log(m.median)) / m.sigma)
            if m.sigma > 0
            else (edges > m.median).astype(np.float64)
        )
    elif isinstance(m, RoundedExponential):
        F = -np.expm1(-np.maximum(edges, 0.0) / m.scale)
    else:
        raise ConfigError(
            f"marginal_pmf supports Constant, UniformInt, RoundedNormal, "
            f"RoundedExponential and RoundedLogNormal, got {type(m).__name__}"
        )
    F[0], F[-1] = 0.0, 1.0  # the clips: everything below low + 1/2 is low, etc.
    return k, np.diff(F)


def _mix_pmf(parts: list[tuple[float, tuple[np.ndarray, np.ndarray]]]) -> tuple[np.ndarray, np.ndarray]:
    """sum_k w_k pmf_k on the union of the supports."""
    lo = min(int(k[0]) for _, (k, _) in parts)
    hi = max(int(k[-1]) for _, (k, _) in parts)
    out = np.zeros(hi - lo + 1)
    for w, (k, p) in parts:
        out[k - lo] += w * p
    return np.arange(lo, hi + 1, dtype=np.int64), out


def pmf_mean_median(k: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """(mean, median) of an integer law (k int[K] ascending, p float64[K]): the median is the
    smallest k with P(X <= k) >= 1/2, or the midpoint of k and the next value when P(X <= k)
    is 1/2 to within 1e-12 (as a sample median averages the two middle values)."""
    cdf = np.cumsum(p)
    j = int(np.searchsorted(cdf, 0.5 - 1e-12))
    med = float(k[j])
    if abs(cdf[j] - 0.5) <= 1e-12 and j + 1 < k.size:
        med = 0.5 * float(k[j] + k[j + 1])
    return float(np.dot(k, p)), med


def law_stats(law) -> dict[str, float]:
    """Exact prompt_mean, prompt_median, output_mean, output_median (tokens) of an Independent
    law or a JointMixture of them, from `marginal_pmf` (the laws of REAL, for instance)."""

    def pmfs(w):
        if isinstance(w, Independent):
            return {"prompt": [(1.0, _marginal(w.prompt))], "output": [(1.0, _marginal(w.output))]}
        if isinstance(w, JointMixture):
            out = {"prompt": [], "output": []}
            for weight, c in zip(w.weights, w.components):
                for key, parts in pmfs(c).items():
                    out[key] += [(weight * a, pk) for a, pk in parts]
            return out
        raise ConfigError(f"law_stats supports Independent and JointMixture laws, got {type(w).__name__}")

    stats = {}
    for key, parts in pmfs(law).items():
        stats[f"{key}_mean"], stats[f"{key}_median"] = pmf_mean_median(*_mix_pmf(parts))
    return stats


def _marginal(m) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(m, Mixture) and m.cap is None:
        return _mix_pmf([(w, marginal_pmf(c)) for w, c in zip(m.weights, m.components)])
    return marginal_pmf(m)


def _bisect(f, lo: float, hi: float, iters: int = 80) -> float:
    """The root of an increasing f on [lo, hi] (f(lo) < 0 < f(hi)) by bisection."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fit_lognormal_sigma(mean: float, median: float, low: int, high: int) -> float:
    """sigma such that RoundedLogNormal(median, sigma, low, high) has exact mean `mean`.

    Starts from the unclipped answer sqrt(2 ln(mean / median)) and solves on [0, 2 x that +
    1] (the clipped mean increases with sigma there, for caps far above the median).
    Raises ConfigError unless mean > median > 0.
    """
    require_float(median, "median", lo=0.0, lo_open=True)
    require_float(mean, "mean", lo=median, lo_open=True)
    guess = math.sqrt(2.0 * math.log(mean / median))

    def excess(sigma: float) -> float:
        return pmf_mean_median(*marginal_pmf(RoundedLogNormal(median, sigma, low, high)))[0] - mean

    require(excess(2.0 * guess + 1.0) > 0, "mean", f"reachable below the cap {high}", mean)
    return _bisect(excess, 1e-6, 2.0 * guess + 1.0)


def fit_normal_std(mean: float, median: float, low: int, high: int) -> float:
    """std such that RoundedNormal(median, std, low, high) has exact mean `mean` < median: the
    cap (high < 2 median - low) cuts more of the upper tail than the lower clip adds.
    Raises ConfigError when the cap cannot produce that skew."""
    require_float(mean, "mean", lo=float(low), lo_open=True)
    require_float(median, "median", lo=mean, lo_open=True)
    require(
        high < 2 * median - low,
        "high",
        f"< 2 median - low = {2 * median - low} (else the clipped mean is never below the median)",
        high,
    )

    def deficit(std: float) -> float:
        return mean - pmf_mean_median(*marginal_pmf(RoundedNormal(median, std, low, high)))[0]

    top = 10.0 * (high - low)
    require(deficit(top) > 0, "mean", f"reachable with the cap {high}", mean)
    return _bisect(deficit, 1e-6, top)


# --------------------------------------------------------------------------- by name

# Where the Azure conversation trace lives beside a checkout (../shared/data, next to the
# source tree or to the working directory); the command line takes --trace for elsewhere.
AZURE_FILE = Path("shared") / "data" / "azure_llm_2023_conv.csv"


def azure_default_path() -> Path:
    """The first existing of ../shared/data/azure_llm_2023_conv.csv beside the source tree and
    beside the working directory (the former if neither exists)."""
    places = [Path(__file__).resolve().parents[3] / AZURE_FILE, Path.cwd().parent / AZURE_FILE]
    return next((p for p in places if p.is_file()), places[0])


NAMES = (*SYNTHETIC, *REAL, "azure")


def named(
    name: str, n: int | None = None, *, trace: str | Path | Trace | None = None, format: str | None = None
) -> tuple[Batch, int]:
    """(workload, default M in tokens) of a request mix by name: an EC.4.2 law (n defaults to
    the paper's 100 or 200, M = 100), a section-7 law ("lmsys", "arxiv", "mix"; n defaults to
    1000, M = 16,492) or "azure" (the lengths of the trace `trace`: a path or a known trace
    name, read as the layout `format` (None: detected), or a `Trace`; default
    `azure_default_path()`, the Azure 2023 conversation trace; resampled per seed; n defaults
    to 1000, M = 16,492).
    Raises ConfigError for an unknown name, n < 1, or `trace`/`format` with another mix (they
    would be ignored), FileNotFoundError for a missing default trace."""
    require_choice(name, "workload", NAMES)
    if name != "azure" and (trace is not None or format is not None):
        raise ConfigError(f"trace and format are read only by workload azure; workload {name} ignores them")
    if n is not None:
        require_int(n, "n (requests)", lo=1, hi=65_536)
    if name in SYNTHETIC:
        law, default_n = SYNTHETIC[name]
        return Batch(law, n or default_n), SYNTHETIC_CAPACITY_TOKENS
    if name in REAL:
        return real(name, n or 1000), REAL_CAPACITY_TOKENS
    if trace is not None:  # a path, a known name or a Trace; read_trace names a missing or bad file
        return azure_conversation(trace, n or 1000, format=format), REAL_CAPACITY_TOKENS
    path = azure_default_path()
    if not path.is_file():
        raise FileNotFoundError(f"the Azure conversation trace is not at {path} (give its path with --trace)")
    return azure_conversation(path, n or 1000, format=format), REAL_CAPACITY_TOKENS
