"""The weighted router of the parallel topology (docs/network-semantics.md §4).

- Its cuts and its pick against the reference's exact rational test (`weighted_pick`), at the
  cuts' edges; with K a power of two and equal weights it is the random router.
- Engine against reference (hypothesis): trajectories, batches and metrics bitwise, with
  drawn weights (zeros included), through `test_properties.compare`.
- Weights (1, 0) send every arrival to agent 0; the draws split as the weights say (a loose
  binomial bound over many request ids); a padded run (more agents, more slots) is bitwise
  the unpadded one; runs with different weights share one compiled program.
- router_weights is validated (one ConfigError naming it) and refused with another router or
  topology.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched import rng
from jaxsched.errors import ConfigError
from jaxsched.network import NetworkConfig, make_params
from jaxsched.network.config import weight_cuts
from jaxsched.network.engine import ENGINE, KIND_ARRIVAL
from jaxsched.network.routers import pick_by_cuts, weighted
from jaxsched.run import simulate, simulate_points
from tests.network.test_properties import LAWS, _draw, compare
from tests.reference import network as ref
from tests.sweep_checks import COMPILES, block_compiles

TWO24 = 2**24
# K = 3 behind the weighted router, small rings (the property tests' static case).
CFG3 = NetworkConfig(
    topology="parallel",
    agents=3,
    workload=LAWS,
    router="weighted",
    policy="sarathi",
    table_size=6,
    horizon_s=12.0,
    burn_in_s=2.0,
    max_steps=6000,
    snapshots=8,
    record_members=True,
)
# K = 2, one request type, no members recorded: the split and one-program tests.
CFG2 = dataclasses.replace(
    CFG3, agents=2, workload=LAWS[:1], table_size=16, horizon_s=40.0, max_steps=20_000, record_members=False
)
AGENT2 = dict(budget=16, max_requests=6, c_s=0.05, a_s_per_token=0.01, b0=4, rates=[4.0])

weights_st = st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0, 1e-3, 7.5]), min_size=3, max_size=3).filter(
    lambda w: sum(w) > 0
)


def _u(r: int) -> np.float32:
    """The draw whose 24 bits are r."""
    return np.float32(r) * np.float32(2.0**-24)


_pick = jax.jit(pick_by_cuts)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1e6)), min_size=1, max_size=6).filter(lambda w: sum(w) > 0),
    st.lists(st.integers(0, TWO24 - 1), min_size=1, max_size=8),
)
def test_pick_matches_the_reference_at_the_cuts(w, rs):
    cuts = weight_cuts(tuple(w))
    assert cuts[-1] == TWO24 and np.all(np.diff(cuts) >= 0)
    fr = [Fraction(x) for x in w]
    # Each cut is the exact floor of 2^24 S_k / S.
    for k, c in enumerate(cuts):
        assert c == math.floor(TWO24 * sum(fr[: k + 1]) / sum(fr))
    # Draws on both sides of every cut, and drawn ones.
    edges = {max(0, min(TWO24 - 1, int(c) + d)) for c in cuts for d in (-1, 0)}
    for r in sorted(edges | set(rs)):
        got = int(_pick(jnp.float32(_u(r)), jnp.asarray(cuts)))
        assert got == ref.weighted_pick(_u(r), fr), (w, r, cuts)
        assert w[got] > 0  # a zero weight is never picked


@pytest.mark.parametrize("K", [1, 2, 4])
def test_equal_weights_are_the_random_router_for_powers_of_two(K):
    # floor(u K) is exact for K a power of two, and so is the cut 2^24 (k + 1) / K.
    cuts = jnp.asarray(weight_cuts((1.0,) * K))
    near = np.arange(TWO24 // K - 3, TWO24 // K + 3)  # around the first cut
    rs = np.concatenate([np.arange(0, TWO24, TWO24 // (8 * K)), near[near < TWO24], [TWO24 - 1]])
    for r in rs:
        u = _u(int(r))
        assert int(_pick(jnp.float32(u), cuts)) == min(int(np.float32(u) * np.float32(K)), K - 1), r


def test_the_draws_split_as_the_weights_say():
    # 200 000 request ids of one seed through the router itself: every agent's count within 6
    # binomial standard deviations of n w_k / sum(w) (the bound fails about once in 5e8).
    n = 200_000
    ids = jnp.arange(n, dtype=jnp.int32)
    for w in [(1.0, 1.0), (1.0, 3.0), (0.2, 0.3, 0.5, 0.0)]:
        cfg = dataclasses.replace(CFG2, agents=len(w))
        params = make_params(cfg, router_weights=w, **AGENT2)
        pick = jax.jit(jax.vmap(lambda i: weighted(cfg, params, None, jnp.uint32(7), i, cfg.K)))
        counts = np.bincount(np.asarray(pick(ids)), minlength=len(w))
        p = np.asarray(w) / sum(w)
        sd = np.sqrt(n * p * (1 - p))
        assert np.all(np.abs(counts - n * p) <= 6 * sd + 1e-9), (w, counts, n * p)
    # And the draws are the random router's: the same u (STREAM_ROUTE) per request id.
    u = np.asarray(rng.uniform(jnp.uint32(7), ids[:5], rng.STREAM_ROUTE))
    assert all(int(x * TWO24) < TWO24 for x in u)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference(data):
    kw, orders = _draw(data.draw, CFG3)
    kw["router_weights"] = data.draw(weights_st)
    seeds = data.draw(st.lists(st.integers(0, 2**31 - 1), min_size=2, max_size=2, unique=True))
    compare(CFG3, kw, orders, seeds)


def test_engine_matches_reference_with_a_zero_weight():
    # Agent 1 never receives a request; agents 0 and 2 share 1 : 4.
    kw = dict(
        budget=[12, 20, 30],
        max_requests=[4, 6, 8],
        c_s=[0.05, 0.3, 0.05],
        a_s_per_token=[0.01, 0.0, 0.0373],
        b0=[2, 0, 5],
        rates=[2.0, 3.0],
        router_weights=(1.0, 0.0, 4.0),
    )
    outs = []
    res = compare(CFG3, kw, None, [0, 1], outs)
    for s, out in enumerate(outs):
        to = [a for kind, a, *_ in out["events"] if kind == ref.KIND_ARRIVAL]
        assert to.count(1) == 0 and to.count(0) > 0 and to.count(2) > to.count(0), to
        assert res.metrics["num_departed"][s] > 0


def _arrival_agents(res, s: int) -> np.ndarray:
    tr = res.trajectories
    return tr["agent"][s][tr["kind"][s] == KIND_ARRIVAL]


def test_weights_one_zero_send_everything_to_agent_0():
    seeds = [0, 1, 2]
    plist = [make_params(CFG2, router_weights=w, **AGENT2) for w in [(1, 0), (0, 2.5), (1, 1)]]
    first, second, even = simulate_points(CFG2, plist, seeds, record=True, warn=False)
    for s in range(len(seeds)):
        a, b, e = (_arrival_agents(r, s) for r in (first, second, even))
        assert len(a) > 100 and np.all(a == 0), np.bincount(a)
        assert len(b) > 100 and np.all(b == 1), np.bincount(b)
        # Equal weights: both agents get arrivals (loose: 5 sd of a fair binomial).
        n, ones = len(e), int(np.sum(e == 1))
        assert abs(ones - n / 2) <= 5 * math.sqrt(n) / 2, (n, ones)
    # The other agent never batches: the busy one has every batch of the window.
    assert np.all(first.metrics["batch_share_max"] == 1.0) and np.all(second.metrics["batch_share_max"] == 1.0)
    assert np.all(even.metrics["batch_share_max"] < 1.0)


def test_weights_are_traced_one_program_for_every_candidate():
    # Three weight vectors in one simulate_points call compile one block program, and each
    # run is bitwise the run of its weights alone (the way a tuning generation runs them).
    ws = [(1.0, 1.0), (3.0, 1.0), (0.1, 0.9)]
    before = len(COMPILES)
    together = simulate_points(CFG2, [make_params(CFG2, router_weights=w, **AGENT2) for w in ws], [5, 6], warn=False)
    assert block_compiles(before) <= 1
    alone = simulate(CFG2, make_params(CFG2, router_weights=ws[1], **AGENT2), [5, 6], warn=False)
    for k, v in alone.metrics.items():
        assert np.array_equal(v, together[1].metrics[k], equal_nan=True), k
    assert not np.array_equal(together[0].metrics["latency_mean_s"], together[1].metrics["latency_mean_s"])


def test_padded_run_is_the_unpadded_run():
    # Two agents weighted 3 : 1 padded into four agents and more slots: the extra agents (cut
    # 2^24) get nothing, and metrics and trajectories are bitwise the unpadded run's.
    params = make_params(CFG2, router_weights=(3.0, 1.0), **AGENT2)
    alone = simulate(CFG2, params, [0, 1], record=True, warn=False)
    bucket, padded = ENGINE.pad(CFG2, params, {"agents": 4, "table_size": 20})
    assert padded.route_cuts.tolist() == [3 * 2**22, TWO24, TWO24, TWO24]
    got = simulate(bucket, padded, [0, 1], record=True, warn=False)
    for k, v in alone.metrics.items():
        assert np.array_equal(v, got.metrics[k], equal_nan=True), k
    own = ENGINE.trim(CFG2, got.trajectories)
    for k, v in alone.trajectories.items():
        assert np.array_equal(v, own[k]), k


@pytest.mark.parametrize(
    "weights, message",
    [
        ((1.0, -1.0), r"^router_weights\[1\] must be a finite number >= 0"),
        ((0.0, 0.0), r"^router_weights must be a sequence of K = 2 .* with a positive sum, got \(0.0, 0.0\)"),
        ((1.0, 2.0, 3.0), r"^router_weights must be a sequence of K = 2 "),
        ((float("nan"), 1.0), r"^router_weights\[0\] must be a finite number >= 0"),
        ((1.0, float("inf")), r"^router_weights\[1\] must be a finite number"),
        (2.0, r"^router_weights must be a sequence of K = 2 "),
        (("a", 1.0), r"^router_weights\[0\] must be a finite number"),
    ],
)
def test_bad_weights_are_refused(weights, message):
    with pytest.raises(ConfigError, match=message):
        make_params(CFG2, router_weights=weights, **AGENT2)


def test_weights_are_refused_where_nothing_reads_them():
    other = dataclasses.replace(CFG2, router="fewest_tokens")
    with pytest.raises(ConfigError, match=r"^router_weights is read only by router weighted; router fewest_tokens"):
        make_params(other, router_weights=(1, 2), **AGENT2)
    routes = NetworkConfig(topology="routes", agents=2, workload=((LAWS[0], LAWS[1]),), routes=((0, 1),))
    with pytest.raises(ConfigError, match=r"^router_weights is read only by topology parallel; topology routes"):
        make_params(routes, router_weights=(1, 2))
    # The default (None) is never refused, and equal weights are the default's cuts.
    assert make_params(other, router_weights=None, **AGENT2).route_cuts.tolist() == [2**23, TWO24]
    assert make_params(CFG2, router_weights=[5, 5], **AGENT2).route_cuts.tolist() == [2**23, TWO24]


def test_tune_accepts_the_weights_as_a_field():
    # `jaxsched tune network --field 'router_weights[2]=0.01:1'`: checked without compiling.
    from jaxsched.tune import check_problem, parse_field, parse_objective

    field = parse_field("router_weights[2]=0.01:1")
    assert field.size == 2
    fields, fixed, baseline, _, _ = check_problem(
        CFG2,
        [field],
        parse_objective("min latency_mean_s", ["token_growth_per_s<=10"]),
        fixed=AGENT2,
        baseline={"router_weights": (1.0, 1.0)},
    )
    assert baseline == {"router_weights": (1.0, 1.0)}
