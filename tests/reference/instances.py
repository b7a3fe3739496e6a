"""Small padded assignment instances shared by the kernel tests (hypothesis strategies).

Padding keeps one compilation per kernel: a padded worker has no free slot and a padded request
is invalid, so neither takes part in an assignment.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

G_PAD, R_PAD = 6, 14


def loads_after(loads: np.ndarray, worker: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Post-admission loads int64[G] of an assignment (worker -1: not admitted)."""
    L = loads.astype(np.int64).copy()
    np.add.at(L, worker[worker >= 0], sizes[worker >= 0].astype(np.int64))
    return L


@st.composite
def instances(draw, max_load=60, max_size=20, max_free=4):
    """Padded instances with many ties (small load and size ranges)."""
    g = draw(st.integers(1, G_PAD))
    r = draw(st.integers(0, R_PAD))
    loads = np.zeros(G_PAD, np.int32)
    free = np.zeros(G_PAD, np.int32)
    sizes = np.ones(R_PAD, np.int32)
    loads[:g] = draw(st.lists(st.integers(0, max_load), min_size=g, max_size=g))
    free[:g] = draw(st.lists(st.integers(0, max_free), min_size=g, max_size=g))
    sizes[:r] = draw(st.lists(st.integers(1, max_size), min_size=r, max_size=r))
    valid = np.zeros(R_PAD, bool)
    valid[:r] = draw(st.lists(st.booleans(), min_size=r, max_size=r))
    return loads, free, sizes, valid
