"""Hand-worked checks of the plain-Python reference simulator (tests/reference/dp.py) on its own.

Every expected value below is derived by hand in the comments from docs/dp-semantics.md, so these
tests pin the oracle before it is used to check the vectorized engine.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.reference.dp import POLICIES, empirical_quantile, noisy_ohat, simulate, step_drift

# Round numbers keep the hand arithmetic exact: dt = 1 + 0.5 * max load.
CLOCK = {"step_const_s": 1.0, "per_token_s": 0.5}


def run(
    prompt: list[int],
    output: list[int],
    *,
    pred_output: list[int] | None = None,
    pred_u: list[float] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """simulate() on a finite stream; pred_output defaults to the truth, pred_u to 0.5."""
    n = len(prompt)
    kwargs.setdefault("num_requests", n)
    for key, value in CLOCK.items():
        kwargs.setdefault(key, value)
    return simulate(
        prompt=prompt,
        output=output,
        pred_output=list(output) if pred_output is None else pred_output,
        pred_u=[0.5] * n if pred_u is None else pred_u,
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------
# Full trajectories
# ---------------------------------------------------------------------------------------------
def test_paper_fcfs_trajectory_g2_b1_r2() -> None:
    # G=2, B=1, R=2; (s, o) = (3,1) (5,2) (2,1) (4,1).
    # Step 0: pool [0,1]; fcfs: r0 -> w0, r1 -> w1; loads (3,5).
    # Step 1: dt = 1 + .5*5 = 3.5 (clock 3.5). Growth -> hist (4,6). r0 finishes -> (0,6):
    #   imbalance 2*6-6 = 6, gap 6, tokens 2. Pool topped up to [2,3] (revealed at 3.5); one free
    #   slot: r2 -> w0 slot 0; post-admission (2,6).
    # Step 2: dt = 1 + .5*6 = 4 (clock 7.5). hist (3,7); r2 and r1 finish -> (0,0): imbalance 0.
    #   r3 -> w0 (queue delay 7.5 - 3.5 = 4); post-admission (4,0).
    # Step 3: dt = 1 + .5*4 = 3 (clock 10.5). hist (5,0); r3 finishes; nothing left to admit.
    # Step 4: nothing active -> not live, dt 0.
    res = run([3, 5, 2, 4], [1, 2, 1, 1], num_workers=2, slots_per_worker=1, pool_size=2, policy="fcfs", num_steps=4)
    assert res["initial_assignments"] == [(0, 0, 0), (1, 1, 0)]
    assert res["live"] == [True, True, True, False]
    assert res["hist_loads"] == [[4, 6], [3, 7], [5, 0], [0, 0]]
    assert res["loads"] == [[0, 6], [0, 0], [0, 0], [0, 0]]
    assert res["post_admission_loads"] == [[2, 6], [4, 0], [0, 0], [0, 0]]
    assert res["imbalance"] == [6, 0, 0, 0]
    assert res["gap"] == [6, 0, 0, 0]
    assert res["tokens"] == [2, 2, 1, 0]
    assert res["dt"] == [3.5, 4.0, 3.0, 0.0]
    assert res["num_admitted"] == [1, 1, 0, 0]
    assert res["assignments"] == [[(2, 0, 0)], [(3, 0, 0)], [], []]

    m = res["metrics"]
    # cut = 2 (last step with an admission): means over steps 1..2.
    assert m["cut_step"] == 2.0 and m["num_steps_measured"] == 2.0
    assert m["avg_imbalance_tokens"] == 3.0  # (6 + 0) / 2
    assert m["avg_gap_tokens"] == 3.0
    assert m["throughput_tokens_per_s"] == pytest.approx(4 / 7.5)  # (2 + 2) / (3.5 + 4)
    # Step 1: u = (0, 1) -> P = (100, 400); step 2: u = (0, 0) -> P = (100, 100).
    assert m["energy_j"] == pytest.approx(3.5 * 500 + 4.0 * 200)
    assert m["avg_power_w"] == pytest.approx((250 + 100) / 2)
    assert m["idle_fraction"] == pytest.approx((0.5 + 1.0) / 2)
    assert m["makespan_s"] == 10.5
    # Delays: r0, r1, r2 start when revealed; r3 waits one step (4 s).
    assert m["queue_delay_mean_s"] == pytest.approx(1.0)
    assert m["queue_delay_p99_s"] == 4.0
    # TPOT per request: r0 3.5/1, r1 7.5/2, r2 4/1, r3 3/1 -> mean 14.25 / 4.
    # Step form: A = (1 + 1/2, 1/2 + 1, 1) -> (3.5*1.5 + 4*1.5 + 3*1) / 4 = 14.25 / 4.
    assert m["tpot_exact_s"] == pytest.approx(3.5625)
    assert m["tpot_s"] == pytest.approx(3.5625)
    assert m["num_admitted"] == 4.0 and m["num_finished"] == 4.0


def test_theory_fcfs_trajectory_with_burn_in() -> None:
    # Same stream, G=2, B=1, R=1, theory semantics, burn-in 1.
    # Step 0: slots filled directly (r0 -> w0, r1 -> w1); pool [r2] revealed at 0; loads (3,5).
    # Step 1: dt 3.5; hist (4,6); r0 finishes; r2 -> w0 (delay 3.5); measured post-admission
    #   (2,6): imbalance 2*6 - 8 = 4, gap 4 (not in the means: burn-in).
    # Step 2: dt 4; hist (3,7); r2, r1 finish; pool topped up with r3 (revealed at 7.5) and
    #   admitted at once; loads (4,0): imbalance 4, gap 4.
    # Step 3: dt 3; hist (5,0); r3 finishes; loads (0,0): imbalance 0. Step 4 is not live.
    res = run(
        [3, 5, 2, 4],
        [1, 2, 1, 1],
        num_workers=2,
        slots_per_worker=1,
        pool_size=1,
        policy="fcfs",
        num_steps=4,
        semantics="theory",
        burn_in_steps=1,
    )
    assert res["initial_assignments"] == [(0, 0, 0), (1, 1, 0)]
    assert res["initial_loads"] == [3, 5]
    assert res["hist_loads"] == [[4, 6], [3, 7], [5, 0], [0, 0]]
    assert res["loads"] == res["post_admission_loads"] == [[2, 6], [4, 0], [0, 0], [0, 0]]
    assert res["imbalance"] == [4, 4, 0, 0]
    assert res["gap"] == [4, 4, 0, 0]
    assert res["assignments"] == [[(2, 0, 0)], [(3, 0, 0)], [], []]

    m = res["metrics"]
    assert m["num_steps_measured"] == 2.0  # steps 2 and 3
    assert m["cut_step"] == 3.0  # the last live step
    assert m["avg_imbalance_tokens"] == 2.0  # (4 + 0) / 2
    assert m["avg_gap_tokens"] == 2.0
    assert m["throughput_tokens_per_s"] == pytest.approx(3 / 7.0)  # (2 + 1) / (4 + 3)
    assert m["energy_j"] == pytest.approx(4.0 * 500 + 3.0 * 200)  # u = (1,0) then (0,0)
    assert m["queue_delay_mean_s"] == pytest.approx(3.5 / 4)  # only r2 waited
    assert m["tpot_s"] == pytest.approx(m["tpot_exact_s"])
    assert m["makespan_s"] == 10.5


@pytest.mark.parametrize("drift", [(0, 0), (3, 3)])
def test_theory_constant_drift_trajectory(drift: tuple[int, int]) -> None:
    # The stream of test_theory_fcfs_trajectory_with_burn_in with every request growing by d
    # tokens per step (d = 0 or 3); completions still come after o steps.
    # Step 0: r0 -> w0, r1 -> w1; pool [r2]; loads (3, 5).
    # Step 1: dt 1 + .5*5 = 3.5; hist (3+d, 5+d); r0 finishes; r2 -> w0: (2, 5+d).
    # Step 2: dt 1 + .5*(5+d); hist (2+d, 5+2d); r2 and r1 finish; r3 -> w0: (4, 0).
    # Step 3: dt 3; hist (4+d, 0); r3 finishes: (0, 0). Step 4 is not live.
    d = drift[0]
    res = run(
        [3, 5, 2, 4],
        [1, 2, 1, 1],
        num_workers=2,
        slots_per_worker=1,
        pool_size=1,
        policy="fcfs",
        num_steps=4,
        semantics="theory",
        drift=drift,
    )
    assert res["drift"] == [d] * 4
    assert res["live"] == [True, True, True, False]
    assert res["hist_loads"] == [[3 + d, 5 + d], [2 + d, 5 + 2 * d], [4 + d, 0], [0, 0]]
    assert res["loads"] == [[2, 5 + d], [4, 0], [0, 0], [0, 0]]
    assert res["assignments"] == [[(2, 0, 0)], [(3, 0, 0)], [], []]
    assert res["dt"] == [3.5, 1 + 0.5 * (5 + d), 3.0, 0.0]
    # Tokens count one decode step per active request, whatever the drift.
    assert res["tokens"] == [2, 2, 1, 0]
    assert res["metrics"]["throughput_tokens_per_s"] == pytest.approx(5 / sum(res["dt"]))
    if d == 0:  # no drift: a load changes only by completions and admissions
        assert res["hist_loads"][1:3] == res["post_admission_loads"][0:2]


def test_default_drift_is_plain_growth() -> None:
    kwargs: dict[str, Any] = dict(
        num_workers=2, slots_per_worker=1, pool_size=1, policy="jsq_tokens", num_steps=4, semantics="theory"
    )
    plain = run([3, 5, 2, 4], [1, 2, 1, 1], **kwargs)
    assert plain["drift"] == [1, 1, 1, 1]
    one = run([3, 5, 2, 4], [1, 2, 1, 1], drift=(1, 1), seed=123, **kwargs)
    assert one == plain


def test_drift_needs_theory_and_an_ordered_pair() -> None:
    with pytest.raises(ValueError, match="theory"):
        run([1], [1], num_workers=1, slots_per_worker=1, pool_size=1, policy="fcfs", num_steps=1, drift=(0, 2))
    with pytest.raises(ValueError, match="lo <= hi"):
        run(
            [1],
            [1],
            num_workers=1,
            slots_per_worker=1,
            pool_size=1,
            policy="fcfs",
            num_steps=1,
            semantics="theory",
            drift=(2, 1),
        )


@pytest.mark.parametrize("drift", [(0, 2), (1, 4), (0, 64)])
def test_random_drift_is_uniform(drift: tuple[int, int]) -> None:
    # 20000 draws of one seed: every value of {lo..hi} occurs, each with frequency 1/n within
    # 5 standard errors (a floor(u * n) off by one at either end would empty or double a value).
    lo, hi = drift
    n = hi - lo + 1
    draws = [step_drift(11, k, drift) for k in range(1, 20_001)]
    assert min(draws) == lo and max(draws) == hi
    p = 1 / n
    tol = 5 * (p * (1 - p) / len(draws)) ** 0.5
    for v in range(lo, hi + 1):
        assert abs(draws.count(v) / len(draws) - p) < tol, v
    # Draws depend on the seed and the step only.
    assert [step_drift(12, k, drift) for k in range(1, 200)] != draws[:199]
    assert [step_drift(11, k, drift) for k in range(1, 200)] == draws[:199]


# ---------------------------------------------------------------------------------------------
# Policies and placement
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "policy, expected",
    [
        # G=2, B=2, R=3, prompts (5, 3, 1), loads 0, four free slots, U = 3.
        # fcfs: worker 0's slots first.
        ("fcfs", [(0, 0, 0), (1, 0, 1), (2, 1, 0)]),
        # fcfs_alg2: most free slots: (2,2) -> w0; (1,2) -> w1; (1,1) -> w0.
        ("fcfs_alg2", [(0, 0, 0), (1, 1, 0), (2, 0, 1)]),
        # jsq_tokens: (0,0) -> w0 (5,0); -> w1 (5,3); 3 < 5 -> w1 again.
        ("jsq_tokens", [(0, 0, 0), (1, 1, 0), (2, 1, 1)]),
        # jsq_count: counts (0,0) -> w0; (1,0) -> w1; (1,1) -> w0.
        ("jsq_count", [(0, 0, 0), (1, 1, 0), (2, 0, 1)]),
        # round_robin from pointer 0: w0, w1, w0.
        ("round_robin", [(0, 0, 0), (1, 1, 0), (2, 0, 1)]),
        # bfio H=0: w0 (M=0, nothing fits) takes the smallest, r2 -> (1,0); w1 (M=1, nothing fits)
        # takes the smallest left, r1 -> (1,3); w0 (M=3, 5 > 2) takes r0. w0 received r2 before r0,
        # but placement is in queue order, so r0 gets slot 0 and r2 slot 1.
        ("bfio", [(0, 0, 0), (1, 1, 0), (2, 0, 1)]),
    ],
)
def test_step0_policy_choices_and_placement(policy: str, expected: list[tuple[int, int, int]]) -> None:
    res = run([5, 3, 1], [1, 1, 1], num_workers=2, slots_per_worker=2, pool_size=3, policy=policy, num_steps=0)
    assert res["initial_assignments"] == expected


def test_round_robin_pointer_persists_across_steps() -> None:
    # G=3, B=1, R=2; r0 finishes after one step, the others are long.
    # Step 0: r0 -> w0, r1 -> w1; pointer p = 2.
    # Step 1: r0 leaves w0; free workers w0, w2; pool [r2, r3].
    #   r2: scan from p=2 -> w2, p = 0; r3: scan from 0 -> w0, p = 1.
    # A pointer reset to 0 each step would give r2 -> w0 and r3 -> w2 (what fcfs does).
    kwargs: dict[str, Any] = dict(num_workers=3, slots_per_worker=1, pool_size=2, num_steps=1)
    rr = run([1, 1, 1, 1], [1, 5, 5, 5], policy="round_robin", **kwargs)
    assert rr["initial_assignments"] == [(0, 0, 0), (1, 1, 0)]
    assert rr["assignments"][0] == [(2, 2, 0), (3, 0, 0)]
    fcfs = run([1, 1, 1, 1], [1, 5, 5, 5], policy="fcfs", **kwargs)
    assert fcfs["assignments"][0] == [(2, 0, 0), (3, 2, 0)]


def test_bfio_h0_valley_fill_ties_and_placement() -> None:
    # G=2, B=2, R=3; (s, o): r0 (10,5), r1 (1,1), r2 (1,1), r3 (4,3), r4 (6,3), r5 (6,3).
    # Step 0: w0 (M=0, none fits) takes the smallest, earliest: r1 -> (1,0); w1 (M=1) fits s<=1:
    #   r2 -> (1,1); tie at load 1 -> w0 (M=1, none fits) takes r0 -> (11,1).
    #   Placement: w0 = [r0, r1], w1 = [r2].
    # Step 1: hist (13, 2); r1, r2 finish -> loads (11, 0); pool [r3, r4, r5], free (1, 2), U = 3.
    #   w1 (0): M=11, largest s <= 11 is 6; r4 and r5 tie -> earliest r4 -> (11, 6).
    #   w1 (6): fits s <= 5 -> r3 (4) -> (11, 10). w1 is now full.
    #   w0 (11): fits s <= 0: none -> smallest, r5 -> (17, 10).
    #   Placement: w1 took r4 then r3, but r3 comes first in the queue, so r3 slot 0, r4 slot 1;
    #   r5 takes w0's free slot 1.
    res = run(
        [10, 1, 1, 4, 6, 6],
        [5, 1, 1, 3, 3, 3],
        num_workers=2,
        slots_per_worker=2,
        pool_size=3,
        policy="bfio",
        num_steps=1,
    )
    assert res["initial_assignments"] == [(0, 0, 0), (1, 0, 1), (2, 1, 0)]
    assert res["hist_loads"][0] == [13, 2]
    assert res["loads"][0] == [11, 0]
    assert res["imbalance"][0] == 11
    assert res["assignments"][0] == [(3, 1, 0), (4, 1, 1), (5, 0, 1)]
    assert res["post_admission_loads"][0] == [17, 10]


def test_bfio_h0_takes_a_fitting_prompt_over_a_bigger_one() -> None:
    # G=2, B=1, R=2; (s, o): r0 (1,1), r1 (9,5), r2 (11,5), r3 (1,5).
    # Step 0: w0 (M=0, none fits) takes the smallest, r0 -> (1,0); w1 (M=1) cannot fit 9 -> r1.
    # Step 1: hist (2, 10); r0 finishes -> (0, 10); pool [r2, r3]; one free slot (w0).
    #   Valley fill: M = 10, the largest s <= 10 is r3 (1). (Scoring with the one-row marginal
    #   F(s) = s - G*(s - m)_+ instead would prefer r2: F(11) = 9 > F(1) = 1.)
    res = run([1, 9, 11, 1], [1, 5, 5, 5], num_workers=2, slots_per_worker=1, pool_size=2, policy="bfio", num_steps=1)
    assert res["initial_assignments"] == [(0, 0, 0), (1, 1, 0)]
    assert res["loads"][0] == [0, 10]
    assert res["assignments"][0] == [(3, 0, 0)]


def test_bfio_lookahead_counts_growth_and_breaks_ties_by_queue_order() -> None:
    # Theory semantics, G=2, B=2, R=3, H=1, oracle; weights w = (128, round(89.6) = 90), beta = 2,
    # so F(s) = 128 * min(s, 2 m0 - s) + 90 * min(s, 2 m1 - s)  (s - 2 (s - m)_+ = min(s, 2m - s)).
    # (s, o): r0 (5,10), r1 (1,1), r2 (4,10), r3 (4,10), r4 (3,10), r5 (5,10), r6 (5,10).
    # Step 0: w0 <- r0, r1 (load 6); w1 <- r2, r3 (load 8); pool [r4, r5, r6].
    # Step 1: hist (8, 10); r1 finishes -> (6, 10); only w0 has a free slot (slot 1); U = 1.
    #   P[w0] = (6, 7) (r0: 5 + 1 + h, r = 9); P[w1] = (10, 12) (two requests grow by 2).
    #   g = w0; M = (10, 12); m = (4, 5).
    #   F(3) = 128*3 + 90*3 = 654; F(5) = 128*3 + 90*5 = 834 for both r5 and r6 -> the earliest,
    #   r5 -> (w0, slot 1). Post-admission (11, 10).
    # Without the growth term (+h) m would be (4, 4) and F(3) = F(5) = 654: the earliest, r4.
    # H=0 valley fill: M = 10, the largest s <= 4 is r4's 3.
    kwargs: dict[str, Any] = dict(
        num_workers=2, slots_per_worker=2, pool_size=3, policy="bfio", num_steps=1, semantics="theory"
    )
    prompt, output = [5, 1, 4, 4, 3, 5, 5], [10, 1, 10, 10, 10, 10, 10]
    h1 = run(prompt, output, lookahead_steps=1, **kwargs)
    assert h1["initial_assignments"] == [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]
    assert h1["hist_loads"][0] == [8, 10]
    assert h1["assignments"][0] == [(5, 0, 1)]
    assert h1["loads"][0] == [11, 10] and h1["imbalance"][0] == 2 * 11 - 21
    h0 = run(prompt, output, lookahead_steps=0, **kwargs)
    assert h0["assignments"][0] == [(4, 0, 1)]


def test_bfio_lookahead_projects_the_drift() -> None:
    # Theory, G=2, B=2, R=2, H=1, oracle, constant drift 4 (projected 4 per future step);
    # weights (128, 90), beta = 2: F(s) = 128 min(s, 2 m0 - s) + 90 min(s, 2 m1 - s).
    # (s, o): r0 (5,10), r1 (1,1), r2 (4,10), r3 (4,10), r4 (5,10), r5 (10,10).
    # Step 0: w0 <- r0, r1 (6); w1 <- r2, r3 (8); pool [r4, r5].
    # Step 1: hist (6 + 8, 8 + 8) = (14, 16); r1 finishes -> (9, 16); only w0 has a free slot.
    #   P[w0] = (9, 13), P[w1] = (16, 24); m = (7, 11).
    #   F(5) = 640 + 450 = 1090; F(10) = 128*4 + 90*10 = 1412 -> r5 -> (w0, slot 1): (19, 16).
    # Projecting +1 per future step instead: P = (9, 10), (16, 18), m = (7, 8):
    #   F(10) = 512 + 540 = 1052 < 1090 -> r4. H=0 valley fill: 9 + s <= 16 -> r4 as well.
    # Plain +1 drift: hist (8, 10) -> (6, 10); P = (6, 7), (10, 12); m = (4, 5):
    #   F(5) = 384 + 450 = 834, F(10) = -256 + 0 -> r4.
    kwargs: dict[str, Any] = dict(
        num_workers=2, slots_per_worker=2, pool_size=2, policy="bfio", num_steps=1, semantics="theory"
    )
    prompt, output = [5, 1, 4, 4, 5, 10], [10, 1, 10, 10, 10, 10]
    h1 = run(prompt, output, lookahead_steps=1, drift=(4, 4), **kwargs)
    assert h1["hist_loads"][0] == [14, 16]
    assert h1["assignments"][0] == [(5, 0, 1)]
    assert h1["loads"][0] == [19, 16]
    assert run(prompt, output, lookahead_steps=0, drift=(4, 4), **kwargs)["assignments"][0] == [(4, 0, 1)]
    assert run(prompt, output, lookahead_steps=1, **kwargs)["assignments"][0] == [(4, 0, 1)]
    # (3, 5) draws its drift at random but projects floor(8 / 2) = 4, like (4, 4).
    mixed = run(prompt, output, lookahead_steps=1, drift=(3, 5), seed=5, **kwargs)
    d = mixed["drift"][0]
    assert mixed["hist_loads"][0] == [6 + 2 * d, 8 + 2 * d]
    # After r1 leaves: loads (5 + d, 8 + 2d), P[., 1] = (9 + d, 16 + 2d), m = (3 + d, 7 + d).
    # F(5) = 1090 for every d; F(10) = 256 + 900 (d = 3), 1412 (d = 4), 768 + 900 (d = 5): r5.
    assert mixed["assignments"][0] == [(5, 0, 1)]


def test_classifier_flagged_request_counts_for_half_window() -> None:
    # Theory semantics, G=2, B=2, R=3, H=2; weights w = (128, 90, 63) (128 * 0.49 = 62.72), beta = 2.
    # (s, o): r0 (2,10), r1 (1,1), r2 (5,3), r3 (5,10), r4 (3,10), r5 (9,10), r6 (10,10).
    # Step 0: w0 <- r0, r1; w1 <- r2, r3; pool [r4, r5, r6].
    # Step 1: r1 finishes; loads (3, 12); only w0 (slot 1) is free; U = 1.
    #   r0 and r3: o - gen = 9 > H -> not flagged -> r = H + 1 = 3.
    #   r2: o - gen = 2 <= H -> flagged (fn = 0) -> r = (H + 2) // 2 = 2: rows 0 and 1 only.
    #   P[w0] = (3, 4, 5); P[w1] = r2 (6, 7, 0) + r3 (6, 7, 8) = (12, 14, 8).
    #   g = w0; M = (12, 14, 8); m = (9, 10, 3).
    #   F(3) = 384 + 270 + 189 = 843; F(9) = 1152 + 810 - 189 = 1773; F(10) = 1024 + 900 - 252 = 1672
    #   -> r5 (s = 9).
    # The oracle sees r2's true remaining r = 3 - 1 = 2: the same table, r5.
    # fn_rate = 1 misses r2 (u = 0.5 < 1) -> r = 3 -> P[w1] = (12, 14, 16), m = (9, 10, 11):
    #   F(3) = 843, F(9) = 2529, F(10) = 1024 + 900 + 630 = 2554 -> r6 (s = 10).
    # A noisy prediction ohat = 2 for r2 gives r = max(1, 2 - 1) = 1 -> P[w1] = (12, 7, 8),
    #   m = (9, 3, 3): F(3) = 843, F(9) = 1152 - 270 - 189 = 693, F(10) = 1024 - 360 - 252 = 412
    #   -> r4 (s = 3). So r = 2 differs from both r = 1 and r = 3.
    kwargs: dict[str, Any] = dict(
        prompt=[2, 1, 5, 5, 3, 9, 10],
        output=[10, 1, 3, 10, 10, 10, 10],
        num_workers=2,
        slots_per_worker=2,
        pool_size=3,
        policy="bfio",
        num_steps=1,
        semantics="theory",
        lookahead_steps=2,
    )
    flagged = run(predictor="classifier", **kwargs)
    assert flagged["initial_assignments"] == [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]
    assert flagged["loads"][0] == [12, 12]  # post-admission (theory): 3 + 9, 12
    assert flagged["assignments"][0] == [(5, 0, 1)]
    assert run(predictor="oracle", **kwargs)["assignments"][0] == [(5, 0, 1)]
    assert run(predictor="classifier", fn_rate=1.0, **kwargs)["assignments"][0] == [(6, 0, 1)]
    short = run(predictor="noisy", pred_output=[10, 1, 2, 10, 10, 10, 10], **kwargs)
    assert short["assignments"][0] == [(4, 0, 1)]


def test_bfio_lookahead_window_weights() -> None:
    # Theory semantics, G=2, B=2, R=2, H=1, oracle, beta = 2.
    # (s, o): r0 (3,2), r1 (1,1), r2 (3,10), r3 (3,10), r4 (10,10), r5 (3,10).
    # Step 0: w0 <- r0, r1; w1 <- r2, r3; pool [r4, r5].
    # Step 1: hist (6, 8); r1 finishes -> (4, 8); only w0 (slot 1) is free; U = 1.
    #   P[w0] = (4, 0) (r0: r = 2 - 1 = 1); P[w1] = (8, 10); g = w0; m = (4, 10).
    #   Decay 0.7, w = (128, 90): F(10) = 128*(10 - 12) + 90*10 = 644 < F(3) = 128*3 + 90*3 = 654
    #   -> r5. Unit weights would give F(10) = -2 + 10 = 8 > F(3) = 6 -> r4; so would decay 0.75,
    #   w = (128, 96): F(10) = -256 + 960 = 704 > F(3) = 384 + 288 = 672.
    kwargs: dict[str, Any] = dict(
        num_workers=2,
        slots_per_worker=2,
        pool_size=2,
        policy="bfio",
        num_steps=1,
        semantics="theory",
        lookahead_steps=1,
    )
    prompt, output = [3, 1, 3, 3, 10, 3], [2, 1, 10, 10, 10, 10]
    res = run(prompt, output, **kwargs)
    assert res["hist_loads"][0] == [6, 8]
    assert res["assignments"][0] == [(5, 0, 1)]
    assert run(prompt, output, lookahead_decay=0.75, **kwargs)["assignments"][0] == [(4, 0, 1)]


def test_bfio_lookahead_picks_worker_by_current_load() -> None:
    # Paper semantics, G=2, B=2, R=2, H=1, oracle; (s, o): r0 (3,2), r1 (2,10), r2 (5,3), r3 (1,3).
    # Step 0: all projected loads 0; g = w0, m = (0, 0), F(s) = -218 s -> the smallest, r1 -> w0;
    #   then r0 -> w1.
    # Step 1: loads (3, 4); pool [r2, r3]; one free slot each, U = 2.
    #   P[w0] = (3, 4) (r1: r = 9); P[w1] = (4, 0) (r0: r = 1, it finishes next step).
    #   g = the least CURRENT load P[g, 0] = w0 (3 < 4), although its window sum 7 exceeds w1's 4.
    #   M = (4, 4), m = (1, 0): F(5) = 128*(-3) + 90*(-5) = -834, F(1) = 128 - 90 = 38 -> r3 -> w0;
    #   r2 -> w1.
    # (The least window sum would pick w1: m = (0, 4), F(5) = -640 + 270 = -370 < F(1) = -38,
    #   r3 -> w1 and r2 -> w0.)
    res = run(
        [3, 2, 5, 1],
        [2, 10, 3, 3],
        num_workers=2,
        slots_per_worker=2,
        pool_size=2,
        policy="bfio",
        num_steps=1,
        lookahead_steps=1,
    )
    assert res["initial_assignments"] == [(0, 1, 0), (1, 0, 0)]
    assert res["loads"][0] == [3, 4]
    assert res["assignments"][0] == [(2, 1, 1), (3, 0, 1)]


# Lookahead stream: G=2, B=2, R=2, paper semantics; (s, o): r0 (12,10), r1 (2,10), r2 (1,3),
# r3 (12,3). With H=1, weights (128, 90) and beta = 2: F(s) = 128 min(s, 2 m0 - s) + 90 min(s, 2 m1 - s).
# Step 0 (all projected loads 0): w0 with m = (0, 0) scores F(s) = -218 s, so it takes the smallest,
# r1; w1 gets r0. Initial placement: r1 -> (w0,0), r0 -> (w1,0). (Valley fill does the same.)
# Step 1: loads (3, 13) after growth (gen = 1, nobody finishes); pool [r2, r3]; U = 2; g = w0
# (current load 3 < 13) for every predictor, then w1 takes the other request.
LOOKAHEAD = dict(
    prompt=[12, 2, 1, 12],
    output=[10, 10, 3, 3],
    num_workers=2,
    slots_per_worker=2,
    pool_size=2,
    policy="bfio",
    num_steps=1,
)
# Oracle H=1: r1 and r0 both have r = 9 -> P[w0] = (3, 4), P[w1] = (13, 14); m = (10, 10).
#   F(1) = 218, F(12) = 218 * min(12, 8) = 1744 -> r3 (overshooting the max by 2) -> w0.
OVERSHOOT_CHOICE = [(2, 1, 1), (3, 0, 1)]
# If w1's request drops out of row 1: P[w1] = (13, 0), M = (13, 4), m = (10, 0):
#   F(1) = 128 - 90 = 38, F(12) = 128*8 - 90*12 = -56 -> r2 -> w0 (what valley fill does too).
FIT_CHOICE = [(2, 0, 1), (3, 1, 1)]


def test_bfio_lookahead_oracle_differs_from_h0() -> None:
    h1 = run(lookahead_steps=1, **LOOKAHEAD)  # type: ignore[arg-type]
    assert h1["initial_assignments"] == [(0, 1, 0), (1, 0, 0)]
    assert h1["loads"][0] == [3, 13]
    assert h1["assignments"][0] == OVERSHOOT_CHOICE
    assert h1["post_admission_loads"][0] == [15, 14]
    # H=0 valley fill: g = w0 (3), M = 13, so s <= 10 fits: r2 -> w0; r3 -> w1.
    h0 = run(lookahead_steps=0, **LOOKAHEAD)  # type: ignore[arg-type]
    assert h0["initial_assignments"] == [(0, 1, 0), (1, 0, 0)]
    assert h0["assignments"][0] == FIT_CHOICE
    assert h0["post_admission_loads"][0] == [4, 25]


def test_bfio_lookahead_predictors() -> None:
    wrong = [1, 10, 3, 3]  # r0 predicted to need 1 token instead of 10
    # The oracle ignores pred_output.
    assert run(lookahead_steps=1, pred_output=wrong, **LOOKAHEAD)["assignments"][0] == OVERSHOOT_CHOICE  # type: ignore[arg-type]
    # Noisy: r0 has ohat - gen = 0, but a request known to be active lasts at least this step:
    #   r = max(1, 0) = 1 -> r0 counts in row 0 only -> P[w1] = (13, 0) -> FIT_CHOICE.
    #   (With r = 0, r0 would vanish from row 0 too: P[w1] = (0, 0), g = w1 would take r2 and r3
    #   would go to w0, the OVERSHOOT_CHOICE layout.)
    noisy = run(lookahead_steps=1, predictor="noisy", pred_output=wrong, **LOOKAHEAD)  # type: ignore[arg-type]
    assert noisy["assignments"][0] == FIT_CHOICE
    # Noisy with an over-prediction (r0: ohat 20, r = 19) keeps row 1 as the oracle's.
    over = run(lookahead_steps=1, predictor="noisy", pred_output=[20, 10, 3, 3], **LOOKAHEAD)  # type: ignore[arg-type]
    assert over["assignments"][0] == OVERSHOOT_CHOICE
    # Classifier, perfect (fp = fn = 0, u = 0.5): o - gen = 9 > H for r0 and r1 -> not flagged ->
    #   r = H + 1 = 2: the oracle's table.
    perfect = run(lookahead_steps=1, predictor="classifier", **LOOKAHEAD)  # type: ignore[arg-type]
    assert perfect["assignments"][0] == OVERSHOOT_CHOICE
    # fp_rate = 1: both flagged (u < 1) -> r = (H + 2) // 2 = 1 -> row 1 is (0, 0), m = (10, 0).
    flagged = run(lookahead_steps=1, predictor="classifier", fp_rate=1.0, **LOOKAHEAD)  # type: ignore[arg-type]
    assert flagged["assignments"][0] == FIT_CHOICE
    # fp_rate = 0.5 flags only requests with u < 0.5. Only r0 (on w1) flagged: P[w1] = (13, 0) ->
    #   FIT_CHOICE. Only r1 (on w0) flagged: P[w0] = (3, 0), m = (10, 14), F(12) = 1024 + 1080 =
    #   2104 > F(1) = 218 -> OVERSHOOT_CHOICE.
    u_r0 = run(lookahead_steps=1, predictor="classifier", fp_rate=0.5, pred_u=[0.1, 0.9, 0.5, 0.5], **LOOKAHEAD)  # type: ignore[arg-type]
    assert u_r0["assignments"][0] == FIT_CHOICE
    u_r1 = run(lookahead_steps=1, predictor="classifier", fp_rate=0.5, pred_u=[0.9, 0.1, 0.5, 0.5], **LOOKAHEAD)  # type: ignore[arg-type]
    assert u_r1["assignments"][0] == OVERSHOOT_CHOICE
    # r0 with o = 2 really finishes next step (o - gen = 1 <= H): the oracle (r = 1) and the perfect
    #   classifier (flagged, r = 1) drop it from row 1 -> FIT_CHOICE; fn_rate = 1 misses it
    #   (u = 0.5 < 1) -> r = 2 -> OVERSHOOT_CHOICE.
    short = dict(LOOKAHEAD, output=[2, 10, 3, 3])
    assert run(lookahead_steps=1, **short)["assignments"][0] == FIT_CHOICE  # type: ignore[arg-type]
    assert run(lookahead_steps=1, predictor="classifier", **short)["assignments"][0] == FIT_CHOICE  # type: ignore[arg-type]
    missed = run(lookahead_steps=1, predictor="classifier", fn_rate=1.0, **short)  # type: ignore[arg-type]
    assert missed["assignments"][0] == OVERSHOOT_CHOICE


# ---------------------------------------------------------------------------------------------
# Metrics and stream handling
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("semantics", ["paper", "theory"])
@pytest.mark.parametrize("policy", POLICIES)
def test_tpot_step_form_equals_per_request_mean(policy: str, semantics: str) -> None:
    # With a finite stream run to completion, sum_k dt_k A_k / sum_k A_k telescopes into the mean
    # of (finish - start) / o over requests, because sum_k A_k = number of requests.
    rng = random.Random(7)
    n = 40
    prompt = [rng.randint(1, 30) for _ in range(n)]
    output = [rng.randint(1, 12) for _ in range(n)]
    res = simulate(
        num_workers=3,
        slots_per_worker=2,
        pool_size=5,
        policy=policy,
        prompt=prompt,
        output=output,
        pred_output=output,
        pred_u=[rng.random() for _ in range(n)],
        num_steps=400,
        semantics=semantics,
        lookahead_steps=2 if policy == "bfio" else 0,
        num_requests=n,
    )
    m = res["metrics"]
    assert m["num_admitted"] == m["num_finished"] == n
    assert res["live"][-1] is False  # the run drained
    assert m["tpot_s"] == pytest.approx(m["tpot_exact_s"], rel=1e-12)
    # Every request was placed exactly once.
    placed = [a[0] for a in res["initial_assignments"]] + [a[0] for step in res["assignments"] for a in step]
    assert sorted(placed) == list(range(n))


def test_paper_cut_is_zero_when_only_step0_admits() -> None:
    # Two requests, both admitted at step 0 and nothing else ever arrives: cut = 0, means are 0.
    res = run([2, 3], [2, 2], num_workers=2, slots_per_worker=1, pool_size=2, policy="fcfs", num_steps=3)
    m = res["metrics"]
    assert res["live"] == [True, True, False]
    assert m["cut_step"] == 0.0 and m["num_steps_measured"] == 0.0
    assert m["avg_imbalance_tokens"] == 0.0 and m["energy_j"] == 0.0
    # Makespan and TPOT still cover the drain: dt = 1 + .5*3 = 2.5, then 1 + .5*4 = 3.
    assert m["makespan_s"] == 5.5
    assert m["tpot_s"] == pytest.approx(5.5 / 2)


def test_unbounded_stream_too_short_raises() -> None:
    # G=2, B=1, R=2, every o = 1: step 0 reveals r0, r1; step 1 frees both slots and the top-up
    # needs r2 and r3, but only three requests were given.
    kwargs: dict[str, Any] = dict(
        num_workers=2,
        slots_per_worker=1,
        pool_size=2,
        policy="fcfs",
        prompt=[1, 1, 1],
        output=[1, 1, 1],
        pred_output=[1, 1, 1],
        pred_u=[0.0, 0.0, 0.0],
    )
    assert simulate(num_steps=0, **kwargs)["initial_assignments"] == [(0, 0, 0), (1, 1, 0)]
    with pytest.raises(IndexError, match="request 3"):
        simulate(num_steps=1, **kwargs)


def test_empirical_quantile_and_noisy_ohat() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert empirical_quantile(values, 0.99) == 99.0  # index ceil(99) - 1 = 98 of 1..100
    assert empirical_quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0  # smallest v with >= half <= v
    assert empirical_quantile([], 0.99) == 0.0
    # x = 1 - .5 + 1.0 * 0 = 0.5: 5 * .5 = 2.5 -> 2 and 7 * .5 = 3.5 -> 4 (half to even).
    assert noisy_ohat(5, 0.0, 0.5, 0.5) == 2
    assert noisy_ohat(7, 0.0, 0.5, 0.5) == 4
    assert noisy_ohat(1, 0.0, 0.9, 0.0) == 1  # 0.1 rounds to 0, clamped to 1
