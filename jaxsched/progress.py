"""Progress reports for long runs: one line on stderr, rewritten in place, with an ETA.

Every driver reports through `Progress`, so runs, sweeps, theorem checks and experiments all
look alike. The ETA weighs finished work by `weight` (blocks, points, slot-steps, whatever the
caller counts), so unequal items give a sensible estimate. A disabled reporter is silent.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`Progress(label, total)`; call `update(done, detail="")` or `advance(weight)`; `close()`.

    Also usable as a runner callback: `progress(done, total)` updates both.
    """

    def __init__(self, label: str, total: float = 0.0, *, enabled: bool = True,
                 stream: TextIO | None = None):
        self.label, self.total, self.enabled = label, float(total), enabled
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0.0
        self.t0 = time.perf_counter()
        self._open = False

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.t0

    def eta_s(self) -> float:
        """Seconds left at the rate so far (nan before any work is done)."""
        if self.done <= 0:
            return float("nan")
        return self.elapsed_s / self.done * max(self.total - self.done, 0.0)

    def __call__(self, done: float, total: float) -> None:
        self.total = float(total)
        self.update(done)

    def advance(self, weight: float = 1.0, detail: str = "") -> None:
        """Add `weight` units of finished work."""
        self.update(self.done + weight, detail)

    def update(self, done: float, detail: str = "") -> None:
        """Set the finished work to `done` and redraw the line."""
        self.done = float(done)
        if not self.enabled:
            return
        total = f"/{self.total:g}" if self.total else ""
        eta = self.eta_s()
        eta_text = "  --  " if eta != eta else f"{eta:6.1f}"      # nan before any work is done
        line = (f"\r  {self.label}: {self.done:g}{total}, {self.elapsed_s:6.1f} s elapsed, "
                f"ETA {eta_text} s" + (f", {detail}" if detail else ""))
        self.stream.write(line + " " * 4)
        self.stream.flush()
        self._open = True

    def close(self, message: str | None = None) -> None:
        """End the line (with `message` in place of the counter, if given)."""
        if not self.enabled:
            return
        if message is not None:
            self.stream.write(f"\r  {self.label}: {message}" + " " * 30 + "\n")
        elif self._open:
            self.stream.write("\n")
        self.stream.flush()
        self._open = False
