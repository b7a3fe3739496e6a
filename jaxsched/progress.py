"""Progress of long runs: one tqdm bar on stderr per task, with elapsed time, rate and ETA.

Every driver reports through `Progress`, so runs, sweeps, theorem checks and experiments all
look alike. The ETA weighs finished work by `weight` (blocks, points, slot-steps, whatever the
caller counts), so unequal items give a sensible estimate. A disabled reporter is silent.
tqdm draws the bar (it handles terminals, pipes and notebooks), so this module only adapts
the runner's callbacks to it.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


class Progress:
    """`Progress(label, total)`; call `update(done, detail="")` or `advance(weight)`; `close()`.

    Also usable as a runner callback: `progress(done, total)` updates both. `write(line)`
    prints a line above the bar. The bar appears at the first report, so a command that fails
    its checks after making one prints only its error.
    """

    def __init__(self, label: str, total: float = 0.0, *, enabled: bool = True,
                 stream: TextIO | None = None):
        self.label, self.enabled, self.total = label, enabled, float(total)
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.time()
        self.done = 0.0
        self._bar = None

    @staticmethod
    def _format(total: float) -> str:
        """tqdm's bar format: a bar, done/total and the ETA when the total is known."""
        if total:
            return ("  {desc}: {percentage:3.0f}%|{bar:20}| {n:g}/{total:g} "
                    "[{elapsed} elapsed, ETA {remaining}{postfix}]")
        return "  {desc}: {n:g} [{elapsed} elapsed{postfix}]"

    @property
    def bar(self) -> tqdm:
        """The tqdm bar, made at the first report; its clock starts with this Progress."""
        if self._bar is None:
            self._bar = tqdm(total=self.total or None, desc=self.label, file=self.stream,
                             leave=True, dynamic_ncols=True, mininterval=0.2, smoothing=0.3,
                             bar_format=self._format(self.total), delay=0)
            self._bar.start_t = self._bar.last_print_t = self.t0
        return self._bar

    def _set_total(self, total: float) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.total = total or None
            self._bar.bar_format = self._format(total)

    @property
    def elapsed_s(self) -> float:
        return time.time() - self.t0

    def eta_s(self) -> float:
        """Seconds left at the mean rate so far (nan before any work is done)."""
        if self.done <= 0:
            return float("nan")
        return self.elapsed_s / self.done * max(self.total - self.done, 0.0)

    def __call__(self, done: float, total: float) -> None:
        if float(total) != self.total:
            self._set_total(float(total))
        self.update(done)

    def advance(self, weight: float = 1.0, detail: str = "") -> None:
        """Add `weight` units of finished work."""
        self.update(self.done + weight, detail)

    def update(self, done: float, detail: str = "") -> None:
        """Set the finished work to `done` and redraw the bar."""
        self.done = float(done)
        if not self.enabled:
            return
        bar = self.bar
        bar.n = self.done
        bar.set_postfix_str(detail, refresh=False)
        bar.refresh()

    def write(self, line: str) -> None:
        """Print `line` above the bar (the bar is redrawn below it)."""
        if self.enabled:
            self.bar.write(line, file=self.stream)

    def close(self, message: str | None = None) -> None:
        """End the bar (with `message` after it, if given)."""
        if not self.enabled or self._bar is None:
            return
        if message is not None:
            self._bar.set_postfix_str(message, refresh=False)
        self._bar.refresh()
        self._bar.close()
