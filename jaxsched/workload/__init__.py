"""Where requests come from, for every engine: one generator interface.

A generator is a pure function of (seed, request id), so a run never holds an N-length array
and results never depend on how seeds are chunked:

    sample(seed, ids) -> (prompt int32[n], output int32[n])     lengths, tokens
    num_requests: int | None                                    None: an unbounded stream
    max_prompt, max_output: int                                 hard bounds (int32 proofs)
    name: str

and the arrival times come from one of three processes:
- on demand (dp): request i is revealed when the waiting pool has room (`lengths.py`,
  `traces.py`: distributions and traces);
- Poisson with thinning and request types (kv, and the token-budget engines): `arrivals.py`,
  candidate i's gap and type draw are pure functions of (seed, i);
- all at time 0 (offline batches, papers 002 and 003): `Batch` in `batch.py`, whose
  `arrival_s(seed, ids)` is 0.
"""

from .batch import Batch
from .lengths import (
    INT32_MAX,
    Binomial,
    BivariateNormal,
    BurstGPTLike,
    Constant,
    Finite,
    Geometric,
    Independent,
    LinearGeometric,
    Mixture,
    Poisson,
    RoundedExponential,
    RoundedLogNormal,
    RoundedNormal,
    TruncGeometric,
    TwoPoint,
    UniformInt,
    materialize,
)
from .traces import Trace, read_trace

Workload = Independent | BivariateNormal | BurstGPTLike | Trace | Finite | Batch
"""The length laws an engine config accepts."""

__all__ = [
    "Batch",
    "Binomial",
    "BivariateNormal",
    "BurstGPTLike",
    "Constant",
    "Finite",
    "Geometric",
    "Independent",
    "INT32_MAX",
    "LinearGeometric",
    "TruncGeometric",
    "TwoPoint",
    "Mixture",
    "Poisson",
    "RoundedExponential",
    "RoundedLogNormal",
    "RoundedNormal",
    "Trace",
    "UniformInt",
    "Workload",
    "materialize",
    "read_trace",
]
