"""Experiment drivers on reduced sizes: the Fig. 4 and prediction-noise sweeps, finite streams."""

from __future__ import annotations

import numpy as np
import pytest

import jaxsched as js
from jaxsched.dp import simulate
from jaxsched.dp.experiments import fig4_sweep, noise_sweep
from jaxsched.errors import ConfigError
from jaxsched.workload import Finite


def test_finite_stream_drains_every_seed():
    wl = Finite(js.BurstGPTLike(), 200)
    cfg = js.dp.DPConfig(num_workers=4, slots_per_worker=8, pool_size=8, policy="bfio", num_steps=5000, workload=wl)
    m = simulate(cfg, js.dp.make_params(cfg), [0, 1, 2]).metrics
    np.testing.assert_array_equal(m["num_finished"], [200, 200, 200])
    np.testing.assert_array_equal(m["num_admitted"], [200, 200, 200])


def test_finite_needs_an_unbounded_base():
    trace = js.Trace(np.array([1, 2]), np.array([1, 1]), order="sequential")
    with pytest.raises(ConfigError, match="unbounded"):
        Finite(trace, 5)
    with pytest.raises(ConfigError, match="num_requests"):
        Finite(js.BurstGPTLike(), 0)


def test_fig4_sweep_reduced():
    res = fig4_sweep(lookahead_steps=(0, 3, 4), seeds=range(2), num_requests=150, steps=600, progress=False)
    assert sorted(res) == [0, 3, 4]
    for v in res.values():
        assert v.shape == (2,) and np.all(np.isfinite(v)) and np.all(v > 0)
    assert not np.array_equal(res[0], res[4])  # the lookahead changes the assignments
    # H = 3 ran padded into H = 4's program: bitwise its own run.
    from jaxsched.dp.config import make_params
    from jaxsched.dp.experiments import FIG4_STEP_CONST_S, _hist_imbalance, fig4_config
    from jaxsched.run import simulate

    cfg = fig4_config(3, 600, 1.0, num_requests=150)
    alone = simulate(cfg, make_params(cfg, step_const_s=FIG4_STEP_CONST_S), [0, 1], record=True, block_steps=2000)
    assert np.array_equal(_hist_imbalance(alone), res[3])


def test_noise_sweep_reduced():
    res = noise_sweep(
        lookahead_steps=(4,), levels=(0.0, 0.5), cls_rates=(0.0,), seeds=range(2), steps=300, progress=False
    )
    assert set(res) == {"noisy, H=4", "classifier, H=4"}
    assert set(res["noisy, H=4"]) == {0.0, 0.5}
    assert all(np.all(v > 0) for by in res.values() for v in by.values())
    # noise 0 is the oracle: the noisy predictor then makes the same choices as a perfect one
    assert not np.array_equal(res["noisy, H=4"][0.0], res["noisy, H=4"][0.5])


@pytest.mark.slow  # 55 s; test_fig4_sweep_reduced runs the same sweep small by default
def test_fig4_shape_minimum_at_an_intermediate_lookahead():
    # The paper's Fig. 4 setting (synthetic requests, N = 8000 per seed, C/8): the undiscounted
    # lookahead helps up to H ~ 64 and hurts beyond (projections ignore future admissions), so
    # H = 512 is worse than no lookahead at all. `jaxsched reproduce fig4` runs the full sweep.
    res = fig4_sweep(lookahead_steps=(0, 64, 512), seeds=range(2), progress=False)
    mean = {H: float(v.mean()) for H, v in res.items()}
    assert mean[64] < 0.8 * mean[0]
    assert mean[512] > mean[0]
