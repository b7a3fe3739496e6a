"""Progress of long runs: one tqdm bar on stderr per task, with elapsed time, rate and ETA.

Every driver reports through `Progress`, so runs, sweeps, theorem checks and experiments all
look alike. The ETA weighs finished work by `weight` (blocks, points, slot-steps, whatever the
caller counts), so unequal items give a sensible estimate. A disabled reporter is silent.
tqdm draws the bar (it handles terminals, pipes and notebooks), so this module only adapts
the runner's callbacks to it.

Compilation is a phase of its own: the runner calls `phase("compiling")` before it compiles and
`phase(None)` after, the bar says "compiling" meanwhile, and the seconds spent there are left
out of the rate, so the ETA counts simulation only (a first ETA that included a minute of
compilation would promise an hour for a run of seconds). `Share` hands a sub-task (one bucket
of a sweep) a slice of a parent bar.

Every bar has a total, so that it shows a percentage and an ETA. The rule: a driver that knows
its work up front (an experiment over its grid, a sweep over its points) declares it with
`set_total` before the first unit, counted from the same loops that will run, units its
helpers advance included; helpers that only advance the bar (`offline.compare.evaluate`, one
unit per algorithm) never change the total. A runner given the bar itself as its callback sets
the total to its blocks, so a driver hands the runner a `Share` of its units instead. At the
end the done count equals the total. `declare`, `tick` and `share` are the same calls for a
driver whose bar may be None (no reporting).
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

from tqdm import tqdm


class Progress:
    """`Progress(label, total)`; call `update(done, detail="")` or `advance(weight)`; `close()`.
    A bar made before its work is known gets its total from `set_total(total)`.

    Also usable as a runner callback: `progress(done, total)` updates both. `write(line)`
    prints a line above the bar. The bar appears at the first report, so a command that fails
    its checks after making one prints only its error.
    """

    def __init__(self, label: str, total: float = 0.0, *, enabled: bool = True, stream: TextIO | None = None):
        self.label, self.enabled = label, enabled
        self.total = float(total) if math.isfinite(float(total)) else 0.0  # as in set_total
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.time()
        self.done = 0.0
        self._bar = None
        self._phase: str | None = None
        self._phase_t0 = 0.0
        self.excluded_s = 0.0  # seconds in phases that are not work (compilation)

    @staticmethod
    def _format(total: float) -> str:
        """tqdm's bar format: a bar, done/total, elapsed time, then the postfix, which holds
        the phase or the ETA (`eta_s`, computed here since tqdm's own rate would count the
        compilation) and the caller's detail."""
        if total:
            return "  {desc}: {percentage:3.0f}%|{bar:20}| {n:g}/{total:g} [{elapsed} elapsed{postfix}]"
        return "  {desc}: {n:g} [{elapsed} elapsed{postfix}]"

    @property
    def bar(self) -> tqdm:
        """The tqdm bar, made at the first report; its clock starts with this Progress."""
        if self._bar is None:
            self._bar = tqdm(
                total=self._tqdm_total(),
                desc=self.label,
                file=self.stream,
                leave=True,
                dynamic_ncols=True,
                mininterval=0.2,
                smoothing=0.3,
                bar_format=self._format(self.total),
                delay=0,
            )
            self._bar.start_t = self._bar.last_print_t = self.t0
        return self._bar

    def _tqdm_total(self) -> float | None:
        """The total handed to tqdm: ours, but never below the count. tqdm drops a total that
        the count passes by half a unit (or an infinite one) and then formats `{total:g}` from
        None, a TypeError; a driver that counts past its total (a resumed sweep whose file
        holds rows of other settings) grows the bar instead."""
        if not self.total or not math.isfinite(self.total):
            return None
        return max(self.total, self.done)

    def set_total(self, total: float) -> None:
        """Declare the work: `total` units (0: unknown, no percentage or ETA). A driver calls
        it once, before its first unit (module docstring); the bar, if drawn, follows."""
        total = float(total)
        self.total = total if math.isfinite(total) else 0.0  # an infinite total is no total
        if self._bar is not None:
            self._bar.total = self._tqdm_total()
            self._bar.bar_format = self._format(self.total)

    @property
    def elapsed_s(self) -> float:
        return time.time() - self.t0

    @property
    def work_s(self) -> float:
        """Seconds of work so far: elapsed time less the phases that are not work."""
        now = time.time()
        current = now - self._phase_t0 if self._phase is not None else 0.0
        return max(0.0, now - self.t0 - self.excluded_s - current)

    def eta_s(self) -> float:
        """Seconds of work left at the mean rate of the work so far (nan before any work is
        done; compilation and other excluded phases count neither in the rate nor in it)."""
        if self.done <= 0:
            return float("nan")
        return self.work_s / self.done * max(self.total - self.done, 0.0)

    def phase(self, name: str | None) -> None:
        """Enter a phase that is not work (`name`, e.g. "compiling"; shown instead of the ETA)
        or leave it (None); its seconds are excluded from the rate."""
        now = time.time()
        if self._phase is not None:
            self.excluded_s += now - self._phase_t0
        self._phase, self._phase_t0 = name, now
        self.update(self.done, self._detail)

    def __call__(self, done: float, total: float) -> None:
        if float(total) != self.total:
            self.set_total(total)
        self.update(done)

    def advance(self, weight: float = 1.0, detail: str = "") -> None:
        """Add `weight` units of finished work."""
        self.update(self.done + weight, detail)

    _detail = ""

    def _postfix(self, detail: str) -> str:
        if self._phase is not None:
            state = self._phase
        elif not self.total:
            state = ""
        else:
            eta = self.eta_s()
            state = "ETA ?" if eta != eta else f"ETA {tqdm.format_interval(eta)}"
        return ", ".join(x for x in (state, detail) if x)

    def update(self, done: float, detail: str = "") -> None:
        """Set the finished work to `done` and redraw the bar."""
        self.done = float(done)
        self._detail = detail
        if not self.enabled:
            return
        bar = self.bar
        bar.total = self._tqdm_total()
        bar.n = self.done
        post = self._postfix(detail)
        bar.postfix = post
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
            self._bar.postfix = message
        self._bar.refresh()
        self._bar.close()


def declare(progress: Progress | None, total: float) -> None:
    """`progress.set_total(total)`, where a driver's bar may be None (no reporting)."""
    if progress is not None:
        progress.set_total(total)


def tick(progress: Progress | None, detail: str = "", weight: float = 1.0) -> None:
    """`progress.advance(weight, detail)`: a unit of a driver's work done (None: silent)."""
    if progress is not None:
        progress.advance(weight, detail)


def share(progress: Progress | None, start: float, weight: float, detail: str = "") -> Share | None:
    """A runner callback for `weight` units of `progress` from `start` (None: none)."""
    return None if progress is None else Share(progress, start, weight, detail)


class Share:
    """A runner progress callback that advances a slice of a parent `Progress`: a sub-task of
    `weight` units of the parent's work that starts at `start` (one bucket of a sweep, counted
    in points). Its `phase` is the parent's, so the parent's bar shows the compilation too."""

    def __init__(self, parent: Progress, start: float, weight: float, detail: str = ""):
        self.parent, self.start, self.weight, self.detail = parent, start, weight, detail

    def __call__(self, done: float, total: float) -> None:
        frac = done / total if total else 0.0
        self.parent.update(self.start + self.weight * frac, self.detail)

    def phase(self, name: str | None) -> None:
        self.parent.phase(name)
