"""The budget engine's fluid model (paper 004, Li, Dai and Peng): the workload f of the
requests in the system and the time a work-conserving engine takes to drain it.

Host-side float64 NumPy math on per-type vectors; nothing here is traced by JAX. Units: lengths
in tokens, rates in requests/s, capacity in tokens/s, times in seconds.
"""

from __future__ import annotations

import math

import numpy as np


def budget_workload(mean_prefill, mean_decode, in_prefill, in_decode) -> float:
    """Paper 004's fluid workload f = sum_j (m_p^j + m_d^j) Z_p^j + m_d^j Z_d^j (tokens):
    requests in prefill still carry their prefill and decode tokens, requests in decode their
    decode tokens. This is the corrected form (notes/004.md section 4: the paper's (C.19), its
    section 4.2 and C.5 swap the coefficients, under which f(t) = f(0) + lambda (m_p + m_d) t -
    (B_p + B_d) does not hold). Arguments are per-type vectors (tokens, requests)."""
    mp, md, zp, zd = (np.asarray(x, np.float64) for x in (mean_prefill, mean_decode, in_prefill, in_decode))
    return float(np.sum((mp + md) * zp + md * zd))


def budget_drain_time_s(
    workload_tokens: float, rates, mean_prefill, mean_decode, capacity_tokens_per_s: float
) -> float:
    """Time (s) for a work-conserving engine to drain the fluid workload f(0) while arrivals
    continue: f(0) / delta with delta = b / t_b - sum_j lambda_j (m_p^j + m_d^j) (Prop. 2(a) and
    section 4.2); inf when delta <= 0 (no drain: Theorem 1(b))."""
    load = float(
        np.dot(
            np.asarray(rates, np.float64), np.asarray(mean_prefill, np.float64) + np.asarray(mean_decode, np.float64)
        )
    )
    delta = float(capacity_tokens_per_s) - load
    return float(workload_tokens) / delta if delta > 0 else math.inf
