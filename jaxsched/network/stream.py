"""The external arrivals of a network run as host arrays, and the random router's draws,
computed by the engine's own jitted functions (docs/network-semantics.md §1, §4): a reference
simulator takes them as input, so both simulate the same requests."""

from __future__ import annotations

import numpy as np

from .. import rng
from ..workload.arrivals import arrival_stream
from .config import NetworkConfig, NetworkParams


def request_stream(config: NetworkConfig, params: NetworkParams, seed: int, n_candidates: int) -> dict[str, np.ndarray]:
    """The accepted requests among the first n_candidates arrival candidates of run `seed`,
    in arrival order. Keys: id, t_hi, t_lo (float32 words of A_i, s), type, route_u (the
    random router's uniform draw). Sizes per stage: `jaxsched.network.stage_lengths`."""
    import jax.numpy as jnp

    s = arrival_stream(config, params.arrival, seed, n_candidates)
    keep = s["accepted"] & ~s["exhausted"]
    ids = np.arange(int(keep.sum()), dtype=np.int32)
    u = rng.uniform(jnp.uint32(seed), jnp.asarray(ids), rng.STREAM_ROUTE)
    return dict(
        id=ids, t_hi=s["t_hi"][keep], t_lo=s["t_lo"][keep], type=s["type"][keep].astype(np.int32), route_u=np.asarray(u)
    )
