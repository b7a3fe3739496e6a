"""The conformance kit (`jaxsched.testing`) over every registered engine."""
from __future__ import annotations

import pytest

from jaxsched import testing
from jaxsched.engine import get_engine
from jaxsched.registry import ENGINES


@pytest.mark.parametrize("name", list(ENGINES))
def test_engine_conforms(name):
    testing.check_engine(get_engine(name))
