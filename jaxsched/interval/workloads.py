"""The job mixes of paper 003's checks and experiments, as workloads of `jaxsched.workload`.

- lmsys: section 6's LMSYS-Chat-1M sample (2,000 conversations: prompts 1-468 tokens, mean 41,
  median 11; outputs 1-883, mean 85, median 43). The data are not shipped; as for paper 002
  (`offline.workloads`, the same family), each marginal is a lognormal with the quoted median,
  rounded and clipped to the quoted range, whose sigma is refitted (`fit_lognormal_sigma`) so
  the clipped law keeps the quoted mean:

  | marginal | law | exact mean | median | variance (quoted) |
  |---|---|---|---|---|
  | prompt | LogNormal(median 11, sigma 1.75619) on [1, 468] | 41.00 | 11 | 6,771 (4,961) |
  | output | LogNormal(median 43, sigma 1.19668) on [1, 883] | 85.00 | 43 | 15,192 (9,702) |

  A lognormal with this median and mean is more dispersed than the sample: the variances are
  1.4x and 1.6x the quoted ones (documented, not fitted: the family has one free parameter).
  Every output lies in Experiment 1's interval [1, 1000] and Experiment 2's buckets.
- two_point(l, u, p_l, s): o in {l, u} with P(o = l) = p_l, every prompt s (section 5.1).
- geometric(p, u, s) and linear_geometric(p, u, s): G(p) and LG(p) on [1, u] (section 5.2).
"""

from __future__ import annotations

from ..errors import require_choice, require_int
from ..workload import Batch, Constant, Independent, LinearGeometric, RoundedLogNormal, TruncGeometric, TwoPoint

LMSYS = Independent(RoundedLogNormal(11.0, 1.75619, 1, 468), RoundedLogNormal(43.0, 1.19668, 1, 883), name="lmsys_003")
QUOTED = dict(
    prompt_mean=41.0,
    prompt_median=11.0,
    prompt_max=468,
    prompt_var=4961.0,
    output_mean=85.0,
    output_median=43.0,
    output_max=883,
    output_var=9702.0,
)
NAMES = ("lmsys",)


def two_point(low: int, high: int, p_low: float, s: int = 1) -> Independent:
    """Prompts of s tokens, outputs l with probability p_low, else u."""
    return Independent(Constant(s), TwoPoint(low, high, p_low), name=f"two_point{low}_{high}")


def geometric(p: float, high: int, s: int = 1) -> Independent:
    """Prompts of s tokens, outputs G(p) on [1, high]."""
    return Independent(Constant(s), TruncGeometric(p, high), name=f"geometric{p:g}")


def linear_geometric(p: float, high: int, s: int = 1) -> Independent:
    """Prompts of s tokens, outputs LG(p) on [1, high]."""
    return Independent(Constant(s), LinearGeometric(p, high), name=f"lg{p:g}")


def named(name: str, n: int | None = None) -> Batch:
    """The batch of n jobs (default 2,000, the paper's largest load) of the mix `name`."""
    require_choice(name, "workload", NAMES)
    n = 2000 if n is None else require_int(n, "num_requests (n)", lo=1, hi=1 << 16)
    return Batch(LMSYS, n)
