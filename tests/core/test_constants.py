"""The default timing and power constants, pinned where they are defined.

The BF-IO paper's timing model (notes/000.md): a decode step lasts C + t_l * max_g L_g with
C = (B * 0.6 ms + 35 ms) / 16 and t_l = 1.5 * 2 * 576 * 61 us / 2^20 per token; the power model
of its simulator draws 100 W idle and 400 W at full utilization with exponent 0.7. These
numbers drive every dp time, throughput and energy figure, so they are pinned here as literals,
independently of the shared data the Table 1 test needs.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.dp import DPConfig, make_params
from jaxsched.dp.config import DEFAULT_PER_TOKEN_S, default_step_const_s
from jaxsched.dp.energy import utilization, utilization_power_w
from jaxsched.dp.timing import barrier_step_time_s


def test_step_constant_and_per_token_time():
    assert default_step_const_s(72) == pytest.approx(4.8875e-3, rel=1e-12)
    assert default_step_const_s(1) == pytest.approx(2.225e-3, rel=1e-12)
    assert default_step_const_s(128) == pytest.approx(6.9875e-3, rel=1e-12)
    assert DEFAULT_PER_TOKEN_S == pytest.approx(1.0052490234375e-07, rel=1e-12)


def test_make_params_defaults():
    p = make_params(DPConfig(num_workers=4, slots_per_worker=72, pool_size=8))
    assert float(p.step_const_s) == pytest.approx(4.8875e-3, rel=1e-7)
    assert float(p.per_token_s) == pytest.approx(1.0052490234375e-07, rel=1e-7)
    assert (float(p.idle_power_w), float(p.max_power_w), float(p.power_exponent)) == (100.0, 400.0, pytest.approx(0.7))
    # C follows B unless given.
    q = make_params(DPConfig(num_workers=4, slots_per_worker=8, pool_size=8))
    assert float(q.step_const_s) == pytest.approx((8 * 0.6e-3 + 35e-3) / 16, rel=1e-7)


def test_step_time_of_a_loaded_barrier():
    # 30,000 tokens on the most loaded worker at B = 72: 4.8875 ms + 3.0157 ms.
    dt = float(barrier_step_time_s(np.int32(30_000), np.float32(4.8875e-3), np.float32(1.0052490234375e-07)))
    assert dt == pytest.approx(7.903247e-3, rel=1e-6)


def test_power_model_values():
    u = utilization(np.array([0, 5, 10], np.int32))
    np.testing.assert_allclose(np.asarray(u), [0.0, 0.5, 1.0])
    w = np.asarray(utilization_power_w(u, 100.0, 400.0, 0.7))
    np.testing.assert_allclose(w, [100.0, 284.67166200173745, 400.0], rtol=1e-6)
    # Every worker idle: every one draws the idle power.
    idle = np.asarray(utilization_power_w(utilization(np.zeros(3, np.int32)), 100.0, 400.0, 0.7))
    np.testing.assert_allclose(idle, [100.0] * 3)
