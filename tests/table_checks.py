"""Checks shared by the grown-table tests of kv, budget and network (`grow_table`,
`jaxsched.tables`): two runs' metrics bitwise equal, and the field's validation."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.errors import ConfigError


def assert_same(a: dict, b: dict) -> None:
    """The same metric names and every metric bitwise equal (NaN where NaN)."""
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def check_grow_table_field(Config: type, record_members: bool) -> None:
    """grow_table is a bool, needs a power-of-two table_size (any table_size without it) and,
    where the engine records per-slot rows, is refused with record_members."""
    with pytest.raises(ConfigError, match="grow_table"):
        Config(grow_table=1)
    with pytest.raises(ConfigError, match=r"table_size \(Q\).*power of two"):
        Config(table_size=1000, grow_table=True)
    if record_members:
        with pytest.raises(ConfigError, match="grow_table.*record_members"):
            Config(table_size=1024, grow_table=True, record_members=True)
    assert Config(table_size=1000).table_size == 1000  # any Q without growth
