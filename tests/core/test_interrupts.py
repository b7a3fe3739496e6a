"""A Ctrl-C that lands where Python must ignore it (a garbage-collection callback) is raised
again by the command line's hook, so a long command still stops (jaxsched.cli.interrupts)."""

from __future__ import annotations

import gc
import signal
import sys
import time

import pytest

from jaxsched.cli.interrupts import ctrl_c_never_lost


def _interrupt_inside_a_gc_callback() -> None:
    """Raise KeyboardInterrupt from a gc callback, as a SIGINT arriving there would."""
    fired = []

    def callback(phase: str, info: dict) -> None:
        if not fired:
            fired.append(phase)
            raise KeyboardInterrupt

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert fired  # the callback ran, and its exception did not propagate from gc.collect


def _wait(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.005)


@pytest.fixture
def python_handles_sigint():
    """Python's own SIGINT handler for the test: a test process started in the background by a
    shell without job control inherits SIGINT ignored, and then no Ctrl-C can be delivered."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_swallowed_by_a_gc_callback_is_raised_again(python_handles_sigint):
    with ctrl_c_never_lost(), pytest.raises(KeyboardInterrupt):
        _interrupt_inside_a_gc_callback()
        _wait(5.0)  # the interrupt arrives within REDELIVERY_DELAY_S, far inside this


def test_without_the_hook_python_ignores_it():
    # The failure the hook exists for: the same interrupt is reported and dropped.
    seen = []
    before, sys.unraisablehook = sys.unraisablehook, lambda u: seen.append(u.exc_type)
    try:
        _interrupt_inside_a_gc_callback()
        _wait(0.2)
    finally:
        sys.unraisablehook = before
    assert seen == [KeyboardInterrupt]


def test_other_unraisable_exceptions_reach_the_previous_hook_and_the_hook_is_restored():
    seen = []

    class Noisy:
        def __del__(self) -> None:
            raise ValueError("from __del__")

    def previous(u: object) -> None:
        seen.append(u.exc_type)

    before, sys.unraisablehook = sys.unraisablehook, previous
    try:
        with ctrl_c_never_lost():
            assert sys.unraisablehook is not previous
            Noisy()  # dropped at once: its __del__ raises
            _wait(0.1)
        assert sys.unraisablehook is previous
    finally:
        sys.unraisablehook = before
    assert seen == [ValueError]
