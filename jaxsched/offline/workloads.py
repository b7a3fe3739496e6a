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
"""
from __future__ import annotations

from ..workload import (Batch, Binomial, Independent, Mixture, RoundedExponential,
                        RoundedLogNormal, RoundedNormal, UniformInt)

SYNTHETIC_CAPACITY_TOKENS = 100
_EXP5 = RoundedExponential(5.0, 1, 50)
_MIXED_S = Mixture((RoundedExponential(10.0, 1, 10**6), RoundedLogNormal(40.0, 0.25, 1, 10**6)),
                   (0.8, 0.2), cap=50, redraw=UniformInt(40, 50))
SYNTHETIC = {
    "uniform": (Independent(UniformInt(1, 50), UniformInt(1, 50), name="ec42_uniform"), 100),
    "normal": (Independent(RoundedNormal(25, 8.33, 1, 50), RoundedNormal(25, 8.33, 1, 50),
                           name="ec42_normal"), 100),
    "binomial": (Independent(Binomial(49, 0.5, 1), Binomial(49, 0.5, 1), name="ec42_binomial"), 100),
    "exponential": (Independent(_EXP5, _EXP5, name="ec42_exponential"), 100),
    "mixed": (Independent(_MIXED_S, _EXP5, name="ec42_mixed"), 200),
}


def synthetic(name: str) -> Batch:
    """The EC.4.2 batch `name` (a key of SYNTHETIC): n requests at t = 0."""
    from ..errors import require_choice
    law, n = SYNTHETIC[require_choice(name, "name", tuple(SYNTHETIC))]
    return Batch(law, n)
