"""Every progress bar has a total (jaxsched.progress, module docstring): an experiment declares
its units before the first one, its helpers only advance, and at the end done == total.

- `Progress` itself: `set_total` before or after the bar is drawn, the ETA without the
  compiling phase, `Share` and the helpers that take None.
- Real experiments at tiny sizes (interval, offline, budget's fig9 on a 23-row trace, kv),
  each given a recording bar; the whole file runs in about half a minute on two cores.
- The simulation-bound experiments (budget stability and two_type, network routing and
  fork_join) with the runner replaced by a stand-in that drives the progress callback as the
  runner does and returns made-up metrics: their counting, not their numbers.
"""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from jaxsched import progress as progress_module
from jaxsched.progress import Progress, Share, declare, share, tick


class Recorder(Progress):
    """A silent Progress that records its total and done count at every call."""

    def __init__(self):
        super().__init__("test", enabled=False)
        self.events: list[tuple[str, float]] = []

    def set_total(self, total: float) -> None:
        self.events.append(("total", float(total)))
        super().set_total(total)

    def update(self, done: float, detail: str = "") -> None:
        self.events.append(("done", float(done)))
        super().update(done, detail)


def check_totals(bar: Recorder) -> None:
    """The rule: one total, declared before any unit, never going back, all of it done."""
    kinds = [k for k, _ in bar.events]
    assert kinds and kinds[0] == "total", bar.events[:3]
    assert kinds.count("total") == 1, [e for e in bar.events if e[0] == "total"]
    done = [v for k, v in bar.events if k == "done"]
    assert done == sorted(done), done
    assert bar.total > 0 and bar.done == pytest.approx(bar.total), (bar.done, bar.total)


# ------------------------------------------------------------------------------ Progress itself
def test_set_total_after_the_bar_is_drawn():
    out = io.StringIO()
    bar = Progress("late", stream=out)
    bar.update(0)
    assert "%" not in out.getvalue() and "ETA" not in out.getvalue()
    bar.set_total(4)
    bar.advance(1, "one")
    assert bar.total == 4.0 and "25%" in out.getvalue() and "1/4" in out.getvalue()
    assert "ETA" in out.getvalue()
    bar.close()


def test_eta_counts_work_only(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress_module.time, "time", lambda: now[0])
    bar = Progress("eta", enabled=False)
    bar.set_total(3)
    assert bar.eta_s() != bar.eta_s()  # nan before any work
    bar.phase("compiling")
    now[0] += 10.0
    bar.phase(None)
    now[0] += 2.0
    bar.advance(1)
    assert bar.work_s == pytest.approx(2.0)
    assert bar.eta_s() == pytest.approx(4.0)  # 2 s a unit, 2 units left


def test_runner_callback_and_share():
    bar = Progress("runner", enabled=False)
    bar(0, 8)  # a runner's first report
    assert bar.total == 8.0
    parent = Recorder()
    parent.set_total(5)
    parent.advance(2)
    part = share(parent, 2, 3, "part")
    assert isinstance(part, Share)
    for k in range(7):
        part(k + 1, 7)
    part.phase("compiling")
    part.phase(None)
    assert parent.total == 5.0 and parent.done == pytest.approx(5.0)
    check_totals(parent)


def test_helpers_take_no_bar():
    declare(None, 3)
    tick(None, "nothing")
    assert share(None, 0, 1) is None
    bar = Recorder()
    declare(bar, 2)
    tick(bar, "a")
    tick(bar, "b")
    check_totals(bar)


# ------------------------------------------------------------------------- real experiments
def test_interval_cor48():
    from jaxsched.interval import experiments as ix

    bar = Recorder()
    ix.cor48(quick=True, progress=bar)
    check_totals(bar)
    assert bar.total == 3  # u = 10, 100, 200 (quick)


def test_interval_examples():
    from jaxsched.interval import experiments as ix

    bar = Recorder()
    ix.examples(quick=True, progress=bar)
    check_totals(bar)


def test_offline_ec42_counts_evaluate_units():
    from jaxsched.offline import experiments as ox

    bar = Recorder()
    ox.ec42(seeds=2, distributions=("exponential",), algorithms=("sorted_f_swap", "mcsf"), progress=bar)
    check_totals(bar)
    assert bar.total == 2  # 1 distribution x 2 algorithms


def test_offline_lemma1():
    from jaxsched.offline import experiments as ox

    bar = Recorder()
    ox.lemma1(quick=True, seeds=8, progress=bar)
    check_totals(bar)


def test_offline_real():
    from jaxsched.offline import experiments as ox

    bar = Recorder()
    ox.real(seeds=2, ns=(60,), algorithms=("fcfs", "sorted_f_quantile"), mixes=("mix",), progress=bar)
    check_totals(bar)


def _small_trace(path: Path) -> Path:
    """23 rows over ~6 s (tests/budget/test_fig9.py's synthetic trace), seconds as times."""
    t = [
        0.0,
        0.05,
        0.05,
        0.05,
        0.4,
        0.9,
        1.0,
        1.0,
        1.3,
        2.2,
        2.25,
        2.3,
        3.0,
        3.05,
        3.1,
        3.1,
        3.1,
        4.0,
        4.7,
        5.0,
        5.5,
        5.9,
        6.1,
    ]
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"{x:.7f},{(i * 7) % 19 + 1},{(i * 3) % 5 + 1}" for i, x in enumerate(t)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_budget_fig9_shares_the_runner_blocks(tmp_path):
    from jaxsched.budget import experiments as bx

    bar = Recorder()
    bx.fig9(
        seeds=2,
        trace_path=_small_trace(tmp_path / "small.csv"),
        budgets=(8, 16),
        horizon_s=14.0,
        burn_in_s=1.0,
        table_size=64,
        progress=bar,
    )
    check_totals(bar)
    assert bar.total == 2  # one unit per budget
    assert bar.excluded_s > 0  # the runner's compiling phase


def test_kv_experiment():
    from jaxsched.kv import experiments as kx

    bar = Recorder()
    kx.run_experiment(
        "e1", quick=True, seeds=1, policies=["fcfs"], loads=(0.5,), num_requests=200, batch_limits=(None,), progress=bar
    )
    check_totals(bar)


# ------------------------------------------------- simulation-bound experiments, runner stubbed
def _fake_results(n_seeds: int):
    return SimpleNamespace(metrics=defaultdict(lambda: np.ones(n_seeds)))


def _fake_simulate_points(config, params_list, seeds, *, progress=None, **_):
    """The runner's progress protocol (0, the compiling phase, then every block) with made-up
    metrics for every point."""
    seeds, blocks = list(seeds), 4
    if progress:
        progress(0, blocks)
        phase = getattr(progress, "phase", None)
        if phase is not None:
            phase("compiling")
            phase(None)
        for k in range(blocks):
            progress(k + 1, blocks)
    return [_fake_results(len(seeds)) for _ in params_list]


@pytest.fixture
def stub_runner(monkeypatch):
    from jaxsched.budget import experiments as bx
    from jaxsched.network import experiments as nx

    for module in (bx, nx):
        monkeypatch.setattr(module, "simulate_points", _fake_simulate_points)
    monkeypatch.setattr(bx, "simulate", lambda *a, **k: None)
    monkeypatch.setattr(bx, "batches", lambda res, seed: dict(start_s=np.arange(8.0), tokens=np.arange(8)))
    return bx, nx


@pytest.mark.parametrize("name", ["stability", "two_type"])
def test_budget_counts_its_points(stub_runner, name):
    bx, _ = stub_runner
    bar = Recorder()
    bx.EXPERIMENTS[name](quick=True, progress=bar)
    check_totals(bar)


@pytest.mark.parametrize("name", ["routing", "fork_join"])
def test_network_counts_its_points(stub_runner, name):
    _, nx = stub_runner
    bar = Recorder()
    nx.EXPERIMENTS[name](quick=True, progress=bar)
    check_totals(bar)
