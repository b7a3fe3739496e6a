"""Shared test fixtures (the read-only data folder beside the project), and which cases of the
largest parametrized tests run only under `-m slow`."""

from __future__ import annotations

from pathlib import Path

import pytest

# The default run takes a reduced set of the cases of the largest parametrized tests, so that
# the suite stays within CI's time on 2 cores (most of a case's time is compiling its own
# program); `-m slow` runs every case. Each entry: the test (path::function) -> the case ids
# kept in the default run, or an int n: one case in n, in collection order (the first kept).
REDUCED: dict[str, set[str] | int] = {
    "tests/dp/test_engine.py::test_engine_matches_reference": 3,
    "tests/dp/test_engine.py::test_engine_matches_reference_with_drift": 2,
    "tests/dp/test_buckets.py::test_padded_equals_unpadded": {
        "bfio-theory",
        "jsq_count-paper",
        "power_of_two-theory",
        "fcfs_alg2-paper",
        "round_robin-paper",
    },
    "tests/dp/test_buckets.py::test_padded_theorem_kernels_equal_unpadded": {"1-round_lpt", "2-window"},
    "tests/budget/test_properties.py::test_engine_matches_reference": 2,
    "tests/budget/test_buckets.py::test_padded_equals_unpadded": {"sarathi", "vllm"},
    "tests/network/test_properties.py::test_engine_matches_reference": {
        "fork_join-vllm-Q4",
        "routes-rs-K2-priority-Q8",
    },
    "tests/network/test_buckets.py::test_padded_equals_unpadded": {"routes-priority"},
    "tests/interval/test_engine.py::test_engine_equals_reference": {
        "hsf-options0",
        "amin-options3",
        "al-options5",
        "arandom-options6",
    },
    "tests/interval/test_start_fraction.py::test_engine_equals_reference_for_any_start_fraction": {"amin-options0"},
    # the runner's resume is one code path for every engine; kv and interval keep it in the default run
    "tests/core/test_resume_engines.py::test_resume_after_sigkill": {"kv", "interval"},
    "tests/core/test_resume_engines.py::test_damaged_file_resumes": 2,
    "tests/dp/test_reproducibility.py::test_seed_chunking_is_bitwise_identical": 2,
    "tests/kv/test_properties.py::test_engine_matches_reference": 2,
    "tests/kv/test_properties.py::test_baselines_match_reference": 2,
    "tests/kv/test_engine.py::test_conservation": 2,
    "tests/kv/test_engine.py::test_batch_limits_apply_to_every_policy": 2,
    "tests/kv/test_grow_table.py::test_no_loss_at_q_means_the_metrics_of_4q": {"wait"},
    "tests/network/test_grow_table.py::test_no_loss_at_q_means_the_metrics_of_4q": {"parallel"},
    "tests/offline/test_engine.py::test_policies_give_permutations_and_the_runner_agrees": 2,
    "tests/offline/test_buckets.py::test_padded_equals_unpadded": {"mcsf"},
    "tests/interval/test_events.py::test_events_equal_unit_steps": 2,
    "tests/interval/test_events.py::test_runner_events_equal_recorded_unit_steps": 2,
    "tests/interval/test_engine.py::test_engine_equals_reference_larger_batch": 2,
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the cases that `REDUCED` leaves out of the default run as slow."""
    seen: dict[str, list[str]] = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        key = f"{item.nodeid.split('::', 1)[0]}::{getattr(item, 'originalname', item.name)}"
        keep = REDUCED.get(key)
        if spec is None or keep is None:
            continue
        ids = seen.setdefault(key, [])
        ids.append(spec.id)
        if not ((len(ids) - 1) % keep == 0 if isinstance(keep, int) else spec.id in keep):
            item.add_marker(pytest.mark.slow)
    # A renamed case must not leave its test out of the default run unnoticed (checked when whole
    # files were collected, not single tests picked by node id).
    if any("::" in arg for arg in config.args):
        return
    for key, ids in seen.items():
        keep = REDUCED[key]
        if isinstance(keep, set) and not keep <= set(ids):
            raise pytest.UsageError(f"conftest REDUCED[{key!r}] names cases not collected: {sorted(keep - set(ids))}")


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
