"""The requests of a budget run as host arrays: what the engine's arrival stream and length
laws produce for one seed, computed by the same jitted functions (docs/budget-semantics.md §1).
A reference simulator takes this list as its input, so both simulate the same requests."""

from __future__ import annotations

import numpy as np

from ..workload.arrivals import arrival_stream, trace_row
from .config import BudgetConfig, BudgetParams
from .engine import request_lengths


def request_stream(config: BudgetConfig, params: BudgetParams, seed: int, n_candidates: int) -> dict[str, np.ndarray]:
    """The accepted requests among the first n_candidates arrival candidates of run `seed`,
    in arrival order. Keys: id, t_hi, t_lo (float32 words of A_i, s), type, vp, vd (tokens).
    Candidates after the stream ended (num_requests reached, or past the horizon) are left
    out. In trace mode (config.arrival_mode "trace") every candidate is a replayed trace row
    (accepted, type 0, its row's lengths); with `row` (int32) too."""
    import jax.numpy as jnp

    s = arrival_stream(config, params, seed, n_candidates)
    keep = s["accepted"] & ~s["exhausted"]
    types = s["type"][keep].astype(np.int32)
    ids = np.arange(int(keep.sum()), dtype=np.int32)
    vp, vd = request_lengths(config, jnp.uint32(seed), jnp.asarray(ids), jnp.asarray(types), params)
    out = dict(id=ids, t_hi=s["t_hi"][keep], t_lo=s["t_lo"][keep], type=types, vp=np.asarray(vp), vd=np.asarray(vd))
    if config.trace:
        out["row"] = np.asarray(trace_row(params, jnp.uint32(seed), jnp.asarray(ids)))
    return out
