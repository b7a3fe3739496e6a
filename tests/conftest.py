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


@pytest.fixture(autouse=True, scope="module")
def _fresh_jax_caches():
    """Drop compiled executables after each test module.

    One pytest process compiles hundreds of programs (the largest kernels take tens of seconds
    each); keeping them all alive for the whole session grows the process past 4 GB, and an XLA
    CPU compilation late in the run was seen to crash with a segmentation fault in that state.
    Few compiled programs are shared across modules, so clearing between them costs little.
    """
    yield
    import jax

    jax.clear_caches()
