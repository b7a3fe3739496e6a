"""Ctrl-C that is never lost.

Python delivers Ctrl-C as a `KeyboardInterrupt` raised wherever the main thread happens to be.
When that is a garbage-collection callback (JAX registers one), a weakref callback or a
`__del__` method, Python cannot propagate it: it reports the exception through
`sys.unraisablehook` and carries on, so a long run would ignore the key and finish as if nothing
had happened. `ctrl_c_never_lost` installs a hook that catches exactly that case and delivers the
interrupt again a moment later, when the main thread is back in ordinary code. It is the command
line's (an application entry point's) to install; the library never touches the hook.
"""

from __future__ import annotations

import _thread
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator

REDELIVERY_DELAY_S = 0.02
"""Seconds between an ignored Ctrl-C and its second delivery: long enough for the collection
that swallowed it to finish, short enough to feel immediate."""


def _redeliver_ignored_interrupts(unraisable: object, *, fallback: Callable[[object], None]) -> None:
    if getattr(unraisable, "exc_type", None) is KeyboardInterrupt:
        # Not from this (main) thread: the signal would be handled right here, inside the hook,
        # and be ignored once more.
        timer = threading.Timer(REDELIVERY_DELAY_S, _thread.interrupt_main)
        timer.daemon = True
        timer.start()
        return
    fallback(unraisable)


@contextlib.contextmanager
def ctrl_c_never_lost() -> Iterator[None]:
    """Within the block, a Ctrl-C that Python had to ignore is raised again in the main thread.
    Any other unraisable exception goes to the hook that was installed before."""
    before = sys.unraisablehook

    def hook(unraisable: object) -> None:
        _redeliver_ignored_interrupts(unraisable, fallback=before)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = before
