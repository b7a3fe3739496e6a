"""Lanes that refill (`jaxsched.run._run_lanes`): a lane whose run has ended takes the next
waiting run, and every run's metrics are bitwise those of the chunked runner."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from jaxsched.engine import get_engine
from jaxsched.run import simulate, simulate_points

SKIPPING = ("kv", "offline", "interval", "budget", "network")


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("name", SKIPPING)
def test_lanes_equal_chunks_bitwise(name, monkeypatch):
    from jaxsched import run

    ran = []
    real = run._run_lanes
    monkeypatch.setattr(run, "_run_lanes", lambda *a, **k: ran.append(1) or real(*a, **k))
    eng = get_engine(name)
    cfg = eng.example()
    seeds = [5, 0, 3, 9, 1, 4, 2]
    calls = []
    lanes = simulate(
        cfg,
        seeds=seeds,
        engine=eng,
        seed_chunk=2,
        lanes=True,
        warn=False,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert ran == [1]  # the lanes ran
    chunks = simulate(cfg, seeds=seeds, engine=eng, seed_chunk=2, lanes=False, warn=False)
    assert ran == [1]
    _same(lanes.metrics, chunks.metrics)
    simulate(cfg, seeds=seeds, engine=eng, seed_chunk=2, warn=False)
    assert ran == [1]  # off by default
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1]  # the bar reaches its total
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:]))


def test_lanes_cut_runs_as_chunks_do():
    # Runs cut at max_steps (not done) leave their lanes after the blocks a chunk gives them,
    # with the same state: the same metrics and the same warning.
    eng = get_engine("offline")
    cfg = dataclasses.replace(eng.example(), max_steps=30)
    kw = dict(seeds=range(6), engine=eng, seed_chunk=2, block_steps=8)
    with pytest.warns(RuntimeWarning, match="did not finish within max_steps"):
        lanes = simulate(cfg, lanes=True, **kw)
    with pytest.warns(RuntimeWarning, match="did not finish within max_steps"):
        chunks = simulate(cfg, lanes=False, **kw)
    assert (lanes.metrics["done"] == 0).any()
    _same(lanes.metrics, chunks.metrics)


def test_lanes_with_parameter_points():
    eng = get_engine("budget")
    cfg = eng.example()
    points = [eng.make_params(cfg, budget=b) for b in (256, 512, 1024)]
    lanes = simulate_points(cfg, points, seeds=range(3), engine=eng, seed_chunk=2, lanes=True)
    for p, r in zip(points, lanes):
        _same(r.metrics, simulate(cfg, p, seeds=range(3), engine=eng, lanes=False).metrics)


def test_lanes_for_an_engine_that_does_not_skip():
    # dp runs end together; lanes=True still gives its results (and is not its default).
    eng = get_engine("dp")
    cfg = eng.example()
    _same(
        simulate(cfg, seeds=range(5), seed_chunk=2, lanes=True).metrics,
        simulate(cfg, seeds=range(5), seed_chunk=2).metrics,
    )


def test_recorded_runs_use_chunks():
    eng = get_engine("kv")
    cfg = eng.example()
    r = simulate(cfg, seeds=range(3), engine=eng, seed_chunk=1, record=True, lanes=True)
    assert r.trajectories and all(len(v) == 3 for v in r.trajectories.values())


def test_many_lanes_ending_together_take_the_right_runs():
    # Lanes ending in the same block are refilled from one or two batches of initialized runs:
    # each must take its own run (here 3 lanes, 14 runs of similar lengths, short blocks).
    eng = get_engine("offline")
    cfg = eng.example()
    kw = dict(seeds=range(14), engine=eng, seed_chunk=3, block_steps=4, warn=False)
    _same(simulate(cfg, lanes=True, **kw).metrics, simulate(cfg, lanes=False, **kw).metrics)


def test_lanes_cut_runs_at_the_chunks_step_bound_with_shorter_blocks():
    # Lanes run blocks of 128 steps inside the chunks' 256: a run cut at the step bound (the
    # last seed here, whose uncut makespan is 517 steps) ends at max_steps either way, since
    # the engine's step cuts it there itself.
    from jaxsched.interval import IntervalConfig
    from jaxsched.workload import Batch, Independent, UniformInt

    cfg = IntervalConfig(Batch(Independent(UniformInt(1, 200), UniformInt(1, 400)), 100), max_steps=450)
    kw = dict(seeds=range(5), seed_chunk=2, block_steps=256, warn=False)
    lanes, chunks = simulate(cfg, lanes=True, **kw), simulate(cfg, lanes=False, **kw)
    assert lanes.metrics["done"].tolist() == [1, 1, 1, 1, 0] and lanes.metrics["makespan_steps"][4] == 450
    _same(lanes.metrics, chunks.metrics)
