"""Trajectories of the two one-seed NumPy baselines (benchmarks/numpy_dp.py, vectorized, and
benchmarks/numpy_dp_loops.py, loop-style).

The hand-checked cases run on both simulators; each is small enough to follow step by step from
docs/dp-semantics.md, with the derivation in the comments. Notation: "rJ" is request J, "(s, o)"
its prompt and output lengths, loads are per worker [w0, w1]. hist = post-growth pre-removal
loads, L = post-removal loads. The tests at the end run the loop-style simulator against the
vectorized one and against the engine on BurstGPT-like lengths, for every policy they share.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import numpy_dp, numpy_dp_loops

simulate_numpy = numpy_dp.simulate_numpy
simulate_loops = numpy_dp_loops.simulate_loops
SIMULATORS = {"vectorized": simulate_numpy, "loops": simulate_loops}


@pytest.fixture(params=list(SIMULATORS))
def simulator(request):
    """Each hand-checked case runs on both baselines."""
    return SIMULATORS[request.param]


# Round timing constants so that dt, throughput and energy are exact by hand.
C, TL = 1.0, 0.5


def run(simulator, G, B, R, policy, prompt, output, steps):
    return simulator(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        prompt=np.array(prompt),
        output=np.array(output),
        num_steps=steps,
        step_const_s=C,
        per_token_s=TL,
    )


# fcfs, G=2, B=1, R=2.
FCFS_S = [3, 5, 2, 4, 6, 1, 9]
FCFS_O = [2, 1, 3, 1, 2, 1, 1]


def test_fcfs_trajectory_and_metrics(simulator):
    # Step 0: pool {r0 (3,2), r1 (5,1)}; r0 -> w0, r1 -> w1. L = [3, 5].
    # Step 1: dt = 1 + 0.5*5 = 3.5. hist [4, 6]; r1 done. L = [4, 0], imb 8-4 = 4.
    #   Pool {r2 (2,3), r3 (4,1)}; one free slot (w1): r2 -> w1. L = [4, 2].
    # Step 2: dt = 1 + 0.5*4 = 3. hist [5, 3]; r0 done (gen 2). L = [0, 3], imb 3.
    #   Pool {r3, r4 (6,2)}; r3 -> w0. L = [4, 3].
    # Step 3: dt = 3. hist [5, 4]; r3 done. L = [0, 4], imb 4. Pool {r4, r5 (1,1)}; r4 -> w0.
    # Step 4: dt = 1 + 0.5*6 = 4. hist [7, 5]; r2 done (gen 3). L = [7, 0], imb 7.
    #   Pool {r5, r6}; r5 -> w1, so cut = 4.
    res = run(simulator, 2, 1, 2, "fcfs", FCFS_S, FCFS_O, 4)
    np.testing.assert_array_equal(res["hist_loads"], [[4, 6], [5, 3], [5, 4], [7, 5]])
    np.testing.assert_array_equal(res["imbalance"], [4, 3, 4, 7])
    assert res["hist_loads"].dtype == np.int64 and res["imbalance"].dtype == np.int64
    np.testing.assert_array_equal(res["dt"], [3.5, 3.0, 3.0, 4.0])
    assert res["cut"] == 4
    m = res["metrics"]
    assert m["avg_imbalance_tokens"] == pytest.approx(18 / 4)
    # Two requests active at the start of every step: 8 tokens in 13.5 s.
    assert m["throughput_tokens_per_s"] == pytest.approx(8 / 13.5)
    # Every post-removal L has one worker at the max (u=1, 400 W) and one at 0 (100 W).
    assert m["energy_j"] == pytest.approx(500 * 13.5)


def test_running_out_of_requests_raises(simulator):
    # The 4-step run above reveals r6 at step 4 (pool top-up); with only r0..r5 it must stop
    # with an error there, while 3 steps (last reveal r5) still run.
    res = run(simulator, 2, 1, 2, "fcfs", FCFS_S[:6], FCFS_O[:6], 3)
    np.testing.assert_array_equal(res["hist_loads"], [[4, 6], [5, 3], [5, 4]])
    with pytest.raises(numpy_dp.RequestsExhausted, match="request id 6"):
        run(simulator, 2, 1, 2, "fcfs", FCFS_S[:6], FCFS_O[:6], 4)


def test_bfio_valley_fill_picks_largest_fitting_request(simulator):
    # G=2, B=2, R=3; (s, o): r0 (5,2) r1 (2,1) r2 (8,3) r3 (3,5) r4 (1,4) r5 (4,1) r6 (6,1)
    # r7 (7,3) r8 (2,1).
    # Step 0: pool {r0, r1, r2}, U = 3.
    #   w0 (tie, lowest), M=0, cap 0: nothing fits -> smallest r1 (2). L = [2, 0].
    #   w1, M=2, cap 2: nothing fits -> smallest r0 (5). L = [2, 5].
    #   w0, M=5, cap 3: r2 (8) does not fit -> r2. L = [10, 5].
    # Step 1: hist [3+9, 6] = [12, 6]; r1 done. L = [9, 6], imb 18-15 = 3.
    #   Pool {r3 (3), r4 (1), r5 (4)}, free [1, 1], U = 2.
    #   w1 (6), M=9, cap 3: largest fit r3 (3). L = [9, 9]; w1 full.
    #   w0 (9), M=9, cap 0: smallest r4 (1). L = [10, 9].
    # Step 2: hist w0 r4 2 + r2 10, w1 r0 7 + r3 4 = [12, 11]; r0 done. L = [12, 4], imb 8.
    #   Pool {r5 (4), r6 (6), r7 (7)}; w1 (4), M=12, cap 8: largest fit r7 (7) (fcfs would
    #   take r5). L = [12, 11].
    # Step 3: hist w0 r4 3 + r2 11, w1 r3 5 + r7 8 = [14, 13]; r2 done. L = [3, 13], imb 10.
    res = run(simulator, 2, 2, 3, "bfio", [5, 2, 8, 3, 1, 4, 6, 7, 2], [2, 1, 3, 5, 4, 1, 1, 3, 1], 3)
    np.testing.assert_array_equal(res["hist_loads"], [[12, 6], [12, 11], [14, 13]])
    np.testing.assert_array_equal(res["imbalance"], [3, 8, 10])


BFIO_TIE_S = [4, 4, 4, 4, 2, 2, 5, 6, 7]
BFIO_TIE_O = [1, 3, 2, 1, 1, 2, 1, 1, 1]


def test_bfio_ties_go_to_earliest_request_and_lowest_worker(simulator):
    # G=2, B=1, R=3. Equal lengths differ in o, so a wrong tie-break changes the trajectory.
    # Step 0: pool {r0, r1, r2} all s=4. w0, cap 0: smallest, earliest -> r0 (o 1). L = [4, 0].
    #   w1, M=4, cap 4: largest fit 4, earliest -> r1 (o 3). L = [4, 4].
    # Step 1: hist [5, 5]; r0 done. L = [0, 5], imb 5. Pool {r2, r3, r4 (2)}.
    #   w0, cap 5: largest fit 4, earliest -> r2 (o 2), not r3 (o 1). L = [4, 5].
    # Step 2: hist [5, 6]; nothing done. L = [5, 6], imb 1. No free slot: no admission.
    # Step 3: hist [6, 7]; r2 (gen 2) and r1 (gen 3) done. L = [0, 0], imb 0.
    #   Pool {r3 (4), r4 (2), r5 (2)}, U = 2. w0 (tie), cap 0: smallest 2, earliest -> r4
    #   (o 1). L = [2, 0]. w1, M=2, cap 2: r5. L = [2, 2].
    # Step 4: hist [3, 3]; r4 done. L = [0, 3], imb 3. Pool {r3 (4), r6 (5), r7 (6)}.
    #   w0, cap 3: nothing fits -> smallest r3 (4). L = [4, 3].
    # Step 5: hist [5, 4]; r3 and r5 done. L = [0, 0], imb 0; r6 and r7 admitted, cut = 5.
    #   (Had r5 gone to w0 at step 3, step 4 would give L = [3, 0] and step 5 hist [4, 5].)
    res = run(simulator, 2, 1, 3, "bfio", BFIO_TIE_S, BFIO_TIE_O, 5)
    np.testing.assert_array_equal(res["hist_loads"], [[5, 5], [5, 6], [6, 7], [3, 3], [5, 4]])
    np.testing.assert_array_equal(res["imbalance"], [5, 1, 0, 3, 0])
    assert res["cut"] == 5
    assert res["metrics"]["avg_imbalance_tokens"] == pytest.approx(9 / 5)


def test_summaries_stop_at_last_admission(simulator):
    # The same run for 2 steps: step 2 admits nothing (no free slot), so cut = 1 and the
    # summaries cover step 1 only: imb 5; 2 tokens in dt_1 = 1 + 0.5*4 = 3 s; L = [0, 5]
    # gives 100 + 400 W for 3 s.
    res = run(simulator, 2, 1, 3, "bfio", BFIO_TIE_S, BFIO_TIE_O, 2)
    np.testing.assert_array_equal(res["imbalance"], [5, 1])
    assert res["cut"] == 1
    m = res["metrics"]
    assert m["avg_imbalance_tokens"] == 5.0
    assert m["throughput_tokens_per_s"] == pytest.approx(2 / 3)
    assert m["energy_j"] == pytest.approx(1500.0)


def test_jsq_tokens_trajectory_and_fractional_power(simulator):
    # G=2, B=2, R=2; (s, o): r0 (5,2) r1 (3,1) r2 (2,3) r3 (4,1) r4 (1,1) r5 (6,2) r6, r7 (1,1).
    # Step 0: r0 -> w0 (tie, lowest); r1 -> w1 (0 < 5). L = [5, 3] (fcfs would fill w0).
    # Step 1: dt 3.5. hist [6, 4]; r1 done. L = [6, 0], imb 6. Pool {r2, r3}:
    #   r2 -> w1 (0), r3 -> w1 (2 < 6). L = [6, 6].
    # Step 2: dt 4. hist [7, 3+5] = [7, 8]; r0, r3 done. L = [0, 3], imb 3. Pool {r4, r5}:
    #   r4 -> w0 (0), r5 -> w0 (1 < 3). L = [7, 3].
    # Step 3: dt 4.5. hist [2+7, 4] = [9, 4]; r4 done. L = [7, 4], imb 3. r6 -> w0; cut = 3.
    res = run(simulator, 2, 2, 2, "jsq_tokens", [5, 3, 2, 4, 1, 6, 1, 1], [2, 1, 3, 1, 1, 2, 1, 1], 3)
    np.testing.assert_array_equal(res["hist_loads"], [[6, 4], [7, 8], [9, 4]])
    np.testing.assert_array_equal(res["imbalance"], [6, 3, 3])
    np.testing.assert_array_equal(res["dt"], [3.5, 4.0, 4.5])
    m = res["metrics"]
    # Tokens: 2 + 3 + 3 active at the starts of steps 1..3.
    assert m["throughput_tokens_per_s"] == pytest.approx(8 / 12)
    # Steps 1, 2: one worker at 400 W, one at 100 W. Step 3: u = [1, 4/7].
    step3_w = 400 + 100 + 300 * (4 / 7) ** 0.7
    assert m["energy_j"] == pytest.approx(500 * 3.5 + 500 * 4.0 + step3_w * 4.5)


# --------------------------------------------------------------------------- loop-style baseline
# The loop-style simulator against the vectorized one and the engine on BurstGPT-like lengths:
# integer trajectories exactly, float summaries to rounding (the two sum in different orders).


def _lengths(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n BurstGPT-like (prompt, output) pairs from numpy_dp's generator (tokens, int64 [n])."""
    return numpy_dp.draw_lengths(np.random.default_rng(seed), n)


def _assert_same_run(a: dict, b: dict) -> None:
    """Equal integer trajectories, dt and cut; metrics equal to float rounding."""
    for key in ("hist_loads", "imbalance", "dt"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert a["cut"] == b["cut"]
    assert a["metrics"]["avg_imbalance_tokens"] == b["metrics"]["avg_imbalance_tokens"]
    for key in ("throughput_tokens_per_s", "energy_j", "tpot_s"):
        assert a["metrics"][key] == pytest.approx(b["metrics"][key], rel=1e-12), key


@pytest.mark.parametrize("policy", numpy_dp.POLICIES)
@pytest.mark.parametrize("G,B,R,steps", [(16, 72, 64, 300), (3, 2, 4, 200)])
def test_loops_match_vectorized(policy: str, G: int, B: int, R: int, steps: int) -> None:
    # The benchmarked shape (slots mostly full, a few admissions per step) and a tiny one
    # (frequent empty pools of free slots, many ties in small loads), three seeds each.
    for seed in range(3):
        prompt, output = _lengths(seed, R * (steps + 2))
        kw = dict(
            num_workers=G, slots_per_worker=B, pool_size=R, policy=policy, prompt=prompt, output=output, num_steps=steps
        )
        loops, vectorized = simulate_loops(**kw), simulate_numpy(**kw)
        assert loops["cut"] > steps // 2  # the run is admitting through most of its steps
        _assert_same_run(loops, vectorized)


@pytest.mark.parametrize("policy", numpy_dp.POLICIES)
def test_loops_match_engine(policy: str) -> None:
    # The engine (recorded) on seed 3 of the BurstGPT-like workload, and the loop-style
    # simulator on the same lengths (materialized as the engine samples them) and constants.
    import jaxsched as js
    from jaxsched.dp import simulate

    G, B, R, K, seed = 4, 8, 8, 150, 3
    config = js.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        lookahead_steps=0,
        semantics="paper",
        num_steps=K,
        workload=js.BurstGPTLike(),
    )
    params = js.dp.make_params(config)
    res = simulate(config, params, [seed], record=True)
    prompt, output = js.workload.materialize(config.workload, seed, R * (K + 2))
    loops = simulate_loops(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        prompt=prompt,
        output=output,
        num_steps=K,
        step_const_s=float(params.step_const_s),
        per_token_s=float(params.per_token_s),
    )
    np.testing.assert_array_equal(loops["hist_loads"], res.trajectories["hist_loads"][0])
    loads = res.trajectories["loads"][0].astype(np.int64)
    np.testing.assert_array_equal(loops["imbalance"], G * loads.max(1) - loads.sum(1))
    assert loops["cut"] == res.metrics["cut_step"][0] > K // 2
    assert loops["metrics"]["avg_imbalance_tokens"] == res.metrics["avg_imbalance_tokens"][0]
    # The engine keeps dt, powers and 1 / o in float32 (sums compensated): energy and TPOT
    # agree to float32 rounding, far inside any planted error in the power model or weights.
    np.testing.assert_allclose(loops["dt"], res.trajectories["dt"][0], rtol=1e-6)
    for key in ("energy_j", "tpot_s"):
        assert res.metrics[key][0] == pytest.approx(loops["metrics"][key], rel=2e-6), key
