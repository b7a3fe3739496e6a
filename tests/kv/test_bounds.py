"""Runs of the kv engine padded in their bounds as well as their sizes
(`jaxsched.kv.engine.pad_run`): a run with its own num_requests N, horizon_s T (None or
finite) and max_steps inside a bucket config holding the largest (None: no bound) gives
bitwise the metrics and trajectories of the unpadded run; `pad_runs` groups runs so; and the
experiment runner, which batches its points through them, compiles fewer programs and writes
the rows of the points run one by one.

The arrival rates (100 requests/s) are chosen so that a horizon of a few tenths of a second
cuts a run while requests are still arriving and completing, a small max_steps cuts a run
before it ends (done = 0), and a table of 16 slots loses arrivals to its ring; at 4
requests/s a table empties between arrivals, so a run ends before its horizon when the next
arrival would come after it (the stream's end, which a padded run applies itself).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.errors import ConfigError
from jaxsched.kv import KVConfig, make_params
from jaxsched.kv import experiments as kx
from jaxsched.kv.engine import BOUND_FIELDS, ENGINE, SIZE_FIELDS, pad_run, pad_runs
from jaxsched.results import run_key
from jaxsched.run import simulate, simulate_points
from tests.sweep_checks import COMPILES, block_compiles

RATES = (60.0, 40.0)
SLOW = (2.0, 2.0)  # a table that empties between arrivals


def _params(c: KVConfig, rates=RATES, **kw):
    burn = 0 if c.num_requests is None else min(3, (c.num_requests - 1) // 2)
    return make_params(c, rates=rates, burn_in_requests=burn, **kw)


def _same_runs(configs: list[KVConfig], capacity: dict, seeds=(0, 1), rates=None, **params_kw) -> list:
    """Every config alone equals the same config padded into `capacity` by `pad_run`, all the
    padded runs in one simulate_points call: metrics (float64, NaN where both are) and recorded
    trajectories bitwise. rates: each config's (default RATES). Returns the unpadded results."""
    rates = rates or [RATES] * len(configs)
    alone = [simulate(c, _params(c, r, **params_kw), seeds, warn=False, record=True) for c, r in zip(configs, rates)]
    padded = [pad_run(c, _params(c, r, **params_kw), capacity) for c, r in zip(configs, rates)]
    bucket = padded[0][0]
    assert all(b == bucket for b, _ in padded)
    for f in SIZE_FIELDS + BOUND_FIELDS:
        assert getattr(bucket, f) == capacity.get(f, getattr(configs[0], f)), f
    together = simulate_points(bucket, [p for _, p in padded], seeds, warn=False, record=True)
    for c, a, b in zip(configs, alone, together):
        assert a.metrics.keys() == b.metrics.keys()
        for k in a.metrics:
            assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True), (c, k, a.metrics[k], b.metrics[k])
        for k, v in a.trajectories.items():
            # A run's rows after its end are zeros, as in the unpadded recording.
            w, n = b.trajectories[k], v.shape[1]
            assert np.array_equal(v, w[:, :n]) and not np.any(w[:, n:]), (c, k)
        assert ENGINE.check(c, a.metrics) == ENGINE.check(c, b.metrics)
    return alone


def _bounded_configs(policy: str) -> list[KVConfig]:
    base = KVConfig(policy=policy, table_size=64, arrivals_per_step=8, max_steps=2000)
    return [
        # N only, on a ring of 16 slots that loses arrivals, 3 candidates per epoch.
        dataclasses.replace(base, num_requests=70, table_size=16, arrivals_per_step=3),
        # N and a horizon that cuts the arrivals (50 arrive by about 0.5 s), inside a bucket
        # without a horizon: its T is traced, the bucket's is +inf.
        dataclasses.replace(base, num_requests=50, horizon_s=0.45),
        # Cut by its own max_steps, far below the bucket's.
        dataclasses.replace(base, num_requests=90, max_steps=60),
        # At 4 requests/s (SLOW) the table empties before the horizon: the run ends when the
        # next arrival would come after T, at a time before T.
        dataclasses.replace(base, num_requests=100, horizon_s=2.5),
    ]


@pytest.mark.parametrize(
    "policy",
    [pytest.param(p, marks=() if p == "wait" else pytest.mark.slow) for p in kx.POLICY_ORDER],
)
def test_bounds_padded_equal_unpadded(policy):
    configs = _bounded_configs(policy)
    cap = dict(table_size=80, arrivals_per_step=8, num_requests=120, horizon_s=None, max_steps=2200)
    alone = _same_runs(configs, cap, rates=[RATES, RATES, RATES, SLOW])
    m = [a.metrics for a in alone]
    assert m[0]["table_overflow"].min() > 0 and m[1]["table_overflow"].max() == 0
    # The horizon ends the run before its 50 requests have all arrived, after some completed.
    assert m[1]["num_arrived"].max() < 50 and m[1]["num_completed"].min() > 0
    assert m[1]["throughput_tokens_per_s"].min() > 0
    assert m[2]["done"].max() == 0 and m[2]["num_epochs"].max() == 60
    # No arrival after T; a batch that started before T may end after it (vllm, sarathi and fcfs
    # batch whatever is waiting, so one is often running at T).
    assert m[3]["end_time_s"].max() < 2.6 and m[3]["num_arrived"].max() < 100


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["wait", "sarathi"])
def test_bounds_without_n_padded_equal_unpadded(policy):
    # A bucket without N: a run's N is traced (the bucket's is none); a run without N has only
    # its horizon. With the options that change the epoch: force_clear, the prefill price.
    base = KVConfig(policy=policy, max_steps=2000, end_mode="force_clear", prefill_price=True)
    configs = [
        dataclasses.replace(base, num_requests=None, horizon_s=0.6, table_size=32, arrivals_per_step=4),
        dataclasses.replace(base, num_requests=40, horizon_s=0.3, table_size=64, arrivals_per_step=8),
    ]
    cap = dict(table_size=64, arrivals_per_step=8, num_requests=None, horizon_s=0.7, max_steps=2000)
    _same_runs(configs, cap, d1_prefill_s_per_token=3e-6, batch_limit=9)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["wait", "nested_wait", "fcfs"]),
    st.sampled_from(["n", "t", "both"]),
    st.integers(10, 80),
    st.floats(0.1, 0.8),
    st.integers(20, 1500),
    st.tuples(st.booleans(), st.booleans(), st.integers(0, 40), st.floats(0.0, 0.5), st.integers(0, 300)),
    st.tuples(st.integers(1, 48), st.integers(1, 8), st.integers(0, 40), st.integers(0, 6)),
    st.integers(0, 2**16),
)
def test_bounds_padded_equal_unpadded_random(policy, which, n, t, steps, bounds, sizes, seed):
    no_n, no_t, extra_n, extra_t, extra_steps = bounds
    Q, A, extra_q, extra_a = sizes
    A = min(A, Q)
    cfg = KVConfig(
        policy=policy,
        num_requests=None if which == "t" else n,
        horizon_s=None if which == "n" else t,
        table_size=Q,
        arrivals_per_step=A,
        max_steps=steps,
    )
    # The bucket's bounds: None (no bound) or above the run's own; None where the run has none,
    # and never both None.
    cap_n = None if cfg.num_requests is None or (no_n and cfg.horizon_s is not None) else n + extra_n
    cap_t = None if cfg.horizon_s is None or (no_t and cap_n is not None) else t + extra_t
    cap = dict(
        table_size=Q + extra_q,
        arrivals_per_step=min(A + extra_a, Q + extra_q),
        num_requests=cap_n,
        horizon_s=cap_t,
        max_steps=steps + extra_steps,
    )
    _same_runs([cfg], cap, seeds=(seed,))


def test_pad_run_refuses_bad_bounds():
    cfg = KVConfig(num_requests=20, horizon_s=1.5, table_size=16, arrivals_per_step=4, max_steps=500)
    par = make_params(cfg)
    for cap, field in [
        ({"num_requests": 19}, "capacity num_requests"),
        ({"num_requests": 2.5}, "capacity num_requests"),
        ({"horizon_s": 1.0}, "capacity horizon_s"),
        ({"horizon_s": math.nan}, "capacity horizon_s"),
        ({"max_steps": 499}, "capacity max_steps"),
        ({"max_steps": None}, "capacity max_steps"),
        ({"table_size": 8}, "capacity table_size"),
        ({"not_a_field": 3}, "size fields"),
        ({"num_requests": None, "horizon_s": None}, "not a valid bucket"),
        ([("num_requests", 40)], "capacity"),
    ]:
        with pytest.raises(ConfigError, match=field):
            pad_run(cfg, par, cap)
    # A run without a bound can only pad into a bucket without it.
    no_t = dataclasses.replace(cfg, horizon_s=None)
    with pytest.raises(ConfigError, match="capacity horizon_s"):
        pad_run(no_t, make_params(no_t), {"horizon_s": 2.0})
    no_n = dataclasses.replace(cfg, num_requests=None)
    with pytest.raises(ConfigError, match="capacity num_requests"):
        pad_run(no_n, make_params(no_n), {"num_requests": 40})
    with pytest.raises(ConfigError, match="padded"):
        pad_run(cfg, pad_run(cfg, par, {"num_requests": 40})[1], {"num_requests": 40})


def test_padded_params_carry_the_run_bounds():
    cfg = KVConfig(num_requests=20, horizon_s=1.3, table_size=16, max_steps=500)
    par = make_params(cfg)
    bucket, padded = pad_run(cfg, par, {"num_requests": 64, "horizon_s": None, "max_steps": 900, "table_size": 32})
    assert (bucket.num_requests, bucket.horizon_s, bucket.max_steps, bucket.table_size) == (64, None, 900, 32)
    s = padded.sizes
    assert (int(s.num_requests), int(s.max_steps), int(s.table_size)) == (20, 500, 16)
    # The double-float the clock compares with, and the float64 horizon itself, bit for bit.
    assert np.float32(s.horizon_hi) == np.float32(1.3)
    assert np.float64(s.horizon_hi) + np.float64(s.horizon_lo) == pytest.approx(1.3, rel=1e-13)
    from jaxsched.kv.engine import horizon_s

    assert horizon_s(s) == 1.3
    assert run_key("kv", cfg, par, [0]) == run_key("kv", cfg, padded, [0])
    # Without a horizon: +inf; without N: the int32 bound no count of arrivals passes.
    free = dataclasses.replace(cfg, num_requests=None)
    s = pad_run(free, make_params(free), {})[1].sizes
    assert int(s.num_requests) == 2**31 - 1
    s = pad_run(dataclasses.replace(cfg, horizon_s=None), par, {})[1].sizes
    assert np.isinf(np.float32(s.horizon_hi)) and float(s.horizon_lo) == 0.0 and np.isinf(horizon_s(s))


def test_pad_runs_share_one_bucket_per_group():
    base = KVConfig(num_requests=100, table_size=4096, arrivals_per_step=8)
    same = [
        dataclasses.replace(base, num_requests=n, horizon_s=h, max_steps=s)
        for n, h, s in [(100, 2.0, 5000), (300, 1.0, 9000), (200, None, 7000)]
    ]
    other = [
        dataclasses.replace(base, policy="fcfs"),  # another policy: its own bucket
        dataclasses.replace(base, num_requests=None, horizon_s=1.5),  # no N: apart from the runs with one
        dataclasses.replace(base, num_requests=None, horizon_s=2.5),
        # A quarter of the table: 3x less work than the bucket's, over the default waste.
        dataclasses.replace(base, num_requests=80, horizon_s=1.0, table_size=1024),
    ]
    runs = [(c, make_params(c, batch_limit=b)) for c in same + other for b in (None, 7)]
    out = pad_runs(runs, max_steps=8000)
    buckets = [c for c, _ in out]
    # The bucket's N is the largest a config takes and it has no horizon, whatever its runs:
    # the buckets of later calls are the same configs. Its max_steps is the largest of the
    # runs' and the caller's.
    want = dataclasses.replace(base, num_requests=2**30, horizon_s=None, max_steps=9000)
    assert buckets[:6] == [want] * 6 and all(p.sizes is not None for _, p in out)
    assert [int(p.sizes.num_requests) for _, p in out[:6]] == [100, 100, 300, 300, 200, 200]
    assert buckets[6] == dataclasses.replace(base, policy="fcfs", num_requests=2**30)
    # Without N, the bucket keeps the largest horizon.
    assert buckets[8:12] == [dataclasses.replace(base, num_requests=None, horizon_s=2.5)] * 4
    # The small table has a bucket of its own.
    assert buckets[12] == dataclasses.replace(want, table_size=1024, max_steps=200_000)
    assert int(out[12][1].sizes.table_size) == 1024 and len(set(buckets)) == 4
    # A run whose config is its bucket's runs unpadded.
    alone = pad_runs([runs[10]])[0]
    assert alone[0] is runs[10][0] and alone[1] is runs[10][1]
    # With no waste allowed the tables never pad; with more, the small one joins.
    assert [c for c, _ in pad_runs(runs, None, 8000)] == buckets
    wide = pad_runs(runs, 8.0, 8000)
    assert wide[12][0] == dataclasses.replace(want, max_steps=200_000) and int(wide[12][1].sizes.table_size) == 1024
    with pytest.raises(ConfigError, match="runs"):
        pad_runs([base])
    with pytest.raises(ConfigError, match="max_steps"):
        pad_runs(runs, max_steps=0)


def test_experiment_points_share_programs_and_keep_their_rows():
    # E2 at two loads whose fluid tables are both 512 slots: their runs differ in N and T only.
    # Both points double their burn-in (one of them twice), so the points run one by one
    # compile a program for each of their 5 runs. Batched, the first round (2 runs) is one
    # program, the second (2 runs, the same bucket config and shapes) reuses it and the third
    # (1 run: another vmapped shape) compiles the second.
    kw = dict(
        loads=(0.5, 0.55), policies=["fcfs"], seeds=1, num_requests=400, batch_limits=(None,), capacities=("mstar",)
    )
    n0 = len(COMPILES)
    rows = kx.run_experiment("e2", **kw)
    assert block_compiles(n0) == 2
    assert [r["table_size"] for r in rows] == [512, 512]
    assert [r["burn_in_requests"] for r in rows] == [4 * 167, 2 * 227]
    alone = [kx.run_point(kx.EXPERIMENTS["e2"], "fcfs", load, range(1), 400) for load in kw["loads"]]
    for r, a in zip(rows, alone):
        assert list(r) == list(a)
        for k in r:
            if k != "wall_s":
                assert repr(r[k]) == repr(a[k]), (r["load"], k, r[k], a[k])
