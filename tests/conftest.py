"""Shared test fixtures: the read-only data folder beside the project."""
from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def burstgpt_path() -> Path:
    """../shared/data/burstgpt_8000.csv, or skip when the shared data folder is absent."""
    p = DATA / "burstgpt_8000.csv"
    if not p.is_file():
        pytest.skip(f"shared data not found at {p} (the BurstGPT sample lives beside the project)")
    return p
