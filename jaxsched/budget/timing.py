"""Batch-time models of the budget engine (paper 004, docs/budget-semantics.md §2 step 5).

budget_batch_time_s: a batch of token load b' lasts c + a * max(0, b' - b0) seconds (eq.
(2.3)): flat until the GPU is compute-bound at b0 tokens, linear after (the exact products of
jaxsched.timing.iteration_time_s). budget_linear_time_s is the fitted alternative, c + a_p
prefill + a_d decode + a_c context (config batch_time="linear"). budget_attention_s adds the
long-context term (A.1), kv_excess_tokens (exact int32) and budget_memory_overhead_s the
KV-memory overhead (A.2). The times are double-floats (jaxsched.clock) summed in a fixed
order from exact or fenced float32 terms, so a NumPy float32 reference reproduces them
bitwise.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import clock
from ..clock import DF
from ..timing import iteration_time_s


def budget_batch_time_s(token_load: jnp.ndarray, c_s, a_hi, a_lo, b0) -> DF:
    """Duration (s, double-float) of a batch of `token_load` tokens (int32 >= 0) under paper
    004's eq. (2.3): c + a * max(0, b' - b0), with a = a_hi + a_lo split in 12-bit halves
    (`jaxsched.clock.split12`) as in `iteration_time_s`, whose exact products it reuses."""
    excess = jnp.maximum(jnp.asarray(token_load, jnp.int32) - jnp.asarray(b0, jnp.int32), 0)
    return iteration_time_s(excess, c_s, a_hi, a_lo)


def budget_linear_time_s(
    prefill: jnp.ndarray, decode: jnp.ndarray, context: jnp.ndarray, c_s, coefs: tuple, fence_word
) -> DF:
    """Duration (s, double-float) of a batch under the linear model (docs/budget-semantics.md
    §2 step 5): c + a_p * prefill + a_d * decode + a_c * context.

    prefill, decode: int32 prefill and decode tokens of the batch; context: int32 sum over its
    members of the tokens already in their KV cache (P_i + D_i before the batch). coefs:
    float32 (a_p, a_d, a_c) in s/token. Each product is rounded to float32 on its own
    (`clock.fence`, no FMA) and added to (c, 0) with `clock.add_f32` in the order prefill,
    decode, context, so a NumPy float32 reference reproduces the result bitwise (int32 ->
    float32 rounds to nearest even, as NumPy does).
    """
    zero = jnp.zeros(jnp.shape(prefill), jnp.float32)
    tau = DF(jnp.asarray(c_s, jnp.float32) + zero, zero)
    for coef, total in zip(coefs, (prefill, decode, context)):
        term = jnp.asarray(coef, jnp.float32) * jnp.asarray(total, jnp.int32).astype(jnp.float32)
        tau = clock.add_f32(tau, clock.fence(term, fence_word))
    return tau


def budget_attention_s(
    tau: DF, sq_prefill: jnp.ndarray, context_decode: jnp.ndarray, prefix_prefill: jnp.ndarray, alpha, beta, fence_word
) -> DF:
    """tau + the long-context attention term of paper 004's (A.1) (s, double-float):
    alpha * sum_i dp_i^2 + beta * sum_i (P_i + D_i) dd_i, plus alpha * sum_i dp_i P_i (the
    chunk-against-earlier-chunks term, notes/004.md section 4; pass 0 to leave it out).

    The sums are int32 (sq_prefill = sum dp^2, context_decode = sum (P + D) dd, prefix_prefill =
    sum dp P, with P, D the prompt and decode tokens loaded before the batch); each product is
    rounded to float32 on its own (`clock.fence`, no FMA) and added in that order, so a NumPy
    float32 reference reproduces the result bitwise.
    """
    for coef, total in ((alpha, sq_prefill), (beta, context_decode), (alpha, prefix_prefill)):
        term = jnp.asarray(coef, jnp.float32) * jnp.asarray(total, jnp.int32).astype(jnp.float32)
        tau = clock.add_f32(tau, clock.fence(term, fence_word))
    return tau


def kv_excess_tokens(kv: jnp.ndarray, older: jnp.ndarray, limit) -> jnp.ndarray:
    """int32[Q] x_i: the KV tokens of each batch member beyond the memory limit (A.2).

    kv: int32[Q] KV tokens each member holds after the batch (P_i + D_i + its batch tokens; 0
    for non-members). older: int32[Q] sum of kv over the members that entered before it (an
    FCFS exclusive prefix sum). limit: int32 L (tokens). The excess E = max(0, sum kv - L) is
    charged to the newest members first (reverse FCFS: the requests a scheduler would swap out
    or preempt first), x_i = clip(E - newer_i, 0, kv_i), newer_i = the kv of later members;
    so sum x_i = E and at most one member is charged in part. All int32 (sum kv <= 2^30 is the
    caller's bound).
    """
    kv = jnp.asarray(kv, jnp.int32)
    total = jnp.sum(kv, dtype=jnp.int32)
    newer = total - jnp.asarray(older, jnp.int32) - kv
    excess = jnp.maximum(total - jnp.asarray(limit, jnp.int32), 0)
    return jnp.clip(excess - newer, 0, kv)


def budget_memory_overhead_s(tau: DF, x: jnp.ndarray, quadratic: bool, c1, c2, fence_word) -> DF:
    """tau + sum over the requests with x_i > 0 of o(x_i) (s, double-float), paper 004's (A.3):
    o(x) = c1 x + c2 (swapping: a1, a2) or, with `quadratic`, c1 x^2 + c2 (recomputation: b1,
    b2). x: int32[Q] excess KV tokens (`kv_excess_tokens`; x_i^2 < 2^31 for quadratic).

    Exact int32 sums, then one float32 product each, fenced (no FMA) and added to tau in this
    order, so a NumPy float32 reference reproduces the result bitwise: linear, c1 * X then
    c2 * N (X = sum x_i <= 2^30, N = #{x_i > 0}); quadratic, (c1 2^16) * S_hi, c1 * S_lo,
    c2 * N, with S_hi = sum (x_i^2 >> 16) and S_lo = sum (x_i^2 & 0xFFFF) (sum x_i^2 = S_hi
    2^16 + S_lo; each half stays below 2^31 for at most 2^15 members). int32 -> float32 rounds
    to nearest even, as NumPy does.
    """
    x = jnp.asarray(x, jnp.int32)
    n = jnp.sum(x > 0, dtype=jnp.int32)
    c1 = jnp.asarray(c1, jnp.float32)
    if quadratic:
        sq = x * x
        s_hi = jnp.sum(sq >> 16, dtype=jnp.int32)
        s_lo = jnp.sum(sq & 0xFFFF, dtype=jnp.int32)
        terms = ((c1 * np.float32(65536.0), s_hi), (c1, s_lo), (c2, n))
    else:
        terms = ((c1, jnp.sum(x, dtype=jnp.int32)), (c2, n))
    for coef, total in terms:
        term = jnp.asarray(coef, jnp.float32) * total.astype(jnp.float32)
        tau = clock.add_f32(tau, clock.fence(term, fence_word))
    return tau
