"""Request rings sized to the run, grown when a run outgrows them (`grow_table`).

The kv, budget and network engines keep requests in a ring of Q slots: request id i lives in
slot i mod Q, and an arrival whose slot still holds an older request is lost (counted; in the
network engine also a transfer into an agent's ring and a task at the fork-join's table). Q is a
simulation bound, not part of the papers' models, and every O(Q) pass of a step costs in
proportion to it, so a table sized far above the occupancy wastes most of each step. With
`grow_table=True` a config's `table_size` is the starting size: the runner repeats every run
that lost an arrival with twice the slots (`Engine.regrow`), until none loses one or the
engine's largest table is reached (then the loss is reported as before).

Why this changes no result: when Q is a power of two and no arrival is lost, the requests in
the ring at any time have ids within a window of fewer than Q, so no two of them share a slot
at any larger power of two either; integer sums are exact, and the pairwise float sums
(`jaxsched.kernels.ordered_sum`) first fold the 2Q-slot ring onto Q slots by adding exact zeros
(slots i and i + Q never both hold a request), so every later level adds the same numbers in
the same order as the Q-slot ring. A run that loses nothing at Q therefore has bitwise the
metrics it has at 2Q, 4Q, ... (tests/kv, tests/budget and tests/network, test_grow_table.py,
check it on random cases), which is why growing tables must be powers of two: at other sizes
the pairwise sums regroup, and their last bits may differ.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from .errors import require


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def check_growable(table_size: int, grow_table: object) -> None:
    """The `grow_table` field: a bool, and with it a power-of-two `table_size` (see the module
    docstring). Raises ConfigError naming the field."""
    require(isinstance(grow_table, bool), "grow_table", "a bool", grow_table)
    if grow_table:
        require(
            is_power_of_two(table_size),
            "table_size (Q)",
            "a power of two when grow_table is set (1, 2, 4, ..., 2^20)",
            table_size,
        )


def largest_table(limit: int) -> int:
    """The largest power of two <= limit (limit >= 1): the most slots a table may grow to."""
    return 1 << (int(limit).bit_length() - 1)


def overflow_advice(config: Any) -> str:
    """What a warning about arrivals lost to a full table advises: where `grow_table` stopped
    (it was set), else to raise table_size or set it."""
    if config.grow_table:
        return f"grow_table stopped at the largest table, {config.max_table_size()} slots"
    return "raise table_size, or set grow_table"


def grow_ring(config: Any, params: Any, lost: np.ndarray, limit: int) -> tuple[Any, Any, np.ndarray] | None:
    """`Engine.regrow` for a ring of `config.table_size` slots: (config and params with twice
    the slots, the runs to repeat) or None.

    lost: bool[S], the runs that lost an arrival to a full ring. limit: the engine's largest
    table (a power of two). None when `config.grow_table` is off, no run lost an arrival, or the
    table is already at `limit`. A padded run's own ring size (`params.sizes.table_size`, a
    traced int32, stacked over points in `simulate_points`) doubles with the bucket's."""
    again = np.asarray(lost, bool)
    Q = config.table_size
    if not config.grow_table or not again.any() or Q >= limit:
        return None
    bigger = min(2 * Q, limit)
    sizes = getattr(params, "sizes", None)
    if sizes is not None:
        own = jnp.minimum(2 * jnp.asarray(sizes.table_size), bigger).astype(jnp.int32)
        params = dataclasses.replace(params, sizes=dataclasses.replace(sizes, table_size=own))
    return dataclasses.replace(config, table_size=bigger), params, again
