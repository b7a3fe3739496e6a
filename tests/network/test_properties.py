"""Differential tests: the network engine (jaxsched.network) against the plain-Python reference.

tests/reference/network.py follows docs/network-semantics.md literally, one event at a time,
with np.float32 double-float time and `tests.reference.budget.choose` as every agent's batch
rule. Both run the same requests (`jaxsched.network.request_stream` and `stage_lengths`, computed
at a fixed length by `reference.network.engine_inputs`; tests/network/test_reference_network.py
checks it against them), and these tests require, per seed:
- the same event sequence: every processed event's kind (flush, arrival, batch, wait, end),
  agent (the routed agent for an arrival) and time (bitwise double-float words), and the
  requests and tokens in the network before it;
- identical batches in the same order: agent, bitwise start time and duration, load, members
  with their (prefill, decode) tokens;
- the same rejections, departures in the window, end state (requests_end, tokens_end), batch
  counts, partial batches, stalls, steps and end time; snapshot means and growth slopes;
  latency mean within 1e-5 relative (compensated float32 sum against an exact one) and
  latency quantiles equal (identical float32 latencies, identical histograms); idle fractions
  within float32 rounding;
- and bitwise the same metrics from a run without a record, whose steps take several events
  each (`engine.step`; a recording step takes one).

Compilation dominates (one engine compile per static NetworkConfig and seed count, ~10 CPU s;
an example then costs ~0.1 s; ~20 s for fork_join's four agents), so a few static cases cover
the topologies (fork_join's ring and join rejections included), routers, K = 1..4, policies,
periodic rates and a request cap (see CASES), and hypothesis draws the traced
parameters (per-agent budgets, M, batch-time constants and prefill caps, rates, the period,
the RS priorities) and the seeds; every example runs SEEDS_PER_RUN seeds in one vmapped call.
`-m slow` draws more examples and adds static cases.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from jaxsched.network import NetworkConfig, batches, make_params, simulate
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from jaxsched.workload.arrivals import arrival_stream
from tests.reference import network as ref

HORIZON = 12.0
SEEDS_PER_RUN = 2
N_CANDIDATES = 512
MAX_STEPS = 6000

LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"), Independent(Constant(5), UniformInt(1, 4), name="b"))
# Rybko-Stolyar (notes/004.md §3, Fig. 8) scaled down: per agent a short and a long task.
SHORT = Independent(Poisson(2.0), Poisson(2.0), name="short")
LONG = Independent(Poisson(12.0), Poisson(2.0), name="long")
RS_WORKLOAD = ((SHORT, LONG), (SHORT, LONG))  # A: 0 then 1; B: 1 then 0
RS_ORDERS = ((1, 0), (0, 1))  # the exiting (long) class first: unstable
RS_SWAPPED = ((0, 1), (1, 0))  # the entering class first: stable
# fork_join (stage s at agent s): a short and a long branch, type 0 long at agent 2, type 1 at
# agent 1, so the branches reach the join at different times, in either order.
FJ_SHORT = Independent(UniformInt(1, 4), UniformInt(1, 2), name="fj-short")
FJ_LONG = Independent(UniformInt(2, 8), UniformInt(4, 10), name="fj-long")
FJ_WORKLOAD = ((LAWS[1], FJ_SHORT, FJ_LONG, LAWS[1]), (LAWS[0], FJ_LONG, FJ_SHORT, LAWS[0]))
FJ_WORKLOAD3 = FJ_WORKLOAD + ((FJ_SHORT, LAWS[0], LAWS[1], FJ_LONG),)

# name -> (NetworkConfig keywords, in the default run?). Each static case costs one engine
# compile (~10 CPU s, fork_join ~20), so the default run has four: the random and
# fewest_tokens routers (K = 3), the RS network, fork_join (K = 4), rejecting tables and four
# policies (sarathi, ft, priority, vllm); `-m slow` adds the fewest_requests router, K = 1, a
# self-loop route, a three-stage route over three agents, a larger fork_join, orca and wc.
CASES = {
    "parallel-random-K3-sarathi-Q4": (
        dict(topology="parallel", agents=3, workload=LAWS, router="random", policy="sarathi", table_size=4),
        True,
    ),
    "parallel-fewest_requests-K2-vllm-Q6": (
        dict(topology="parallel", agents=2, workload=LAWS, router="fewest_requests", policy="vllm", table_size=6),
        False,
    ),
    # Periodic rates (thinned candidates) and a request cap (runs that end early, empty).
    "parallel-fewest_tokens-K3-ft-Q8-periodic": (
        dict(
            topology="parallel",
            agents=3,
            workload=LAWS,
            router="fewest_tokens",
            policy="ft",
            table_size=8,
            num_requests=40,
        ),
        True,
    ),
    "routes-rs-K2-priority-Q8": (
        dict(
            topology="routes",
            agents=2,
            workload=RS_WORKLOAD,
            routes=((0, 1), (1, 0)),
            policy="priority",
            type_orders=RS_ORDERS,
            table_size=8,
            horizon_s=30.0,
        ),
        True,
    ),
    # fork_join with small rings and a small join table (J = Q = 4): ring rejections (at the
    # fork's targets too) and join rejections (slot held by another request, race in a flush,
    # branches stuck for ever behind a rejected sibling); test_fork_join_rejections_covered.
    "fork_join-vllm-Q4": (
        dict(topology="fork_join", agents=4, workload=FJ_WORKLOAD, policy="vllm", table_size=4),
        True,
    ),
    # Larger: three types, per-agent priorities, Q = J = 8, a longer horizon.
    "fork_join-priority-Q8": (
        dict(
            topology="fork_join",
            agents=4,
            workload=FJ_WORKLOAD3,
            policy="priority",
            type_orders=((0, 1, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)),
            table_size=8,
            horizon_s=30.0,
        ),
        False,
    ),
    # K = 1 with a self-loop (type 0 visits agent 0 twice): a flush re-enters its own agent.
    "routes-K1-selfloop-orca-Q4": (
        dict(
            topology="routes",
            agents=1,
            workload=((LAWS[0], LAWS[1]), (LAWS[1],)),
            routes=((0, 0), (0,)),
            policy="orca",
            table_size=4,
        ),
        False,
    ),
    # Three stages over three agents: a flush sends tasks to several agents, to itself, or out.
    # (Every agent serves three (type, stage) laws: make_params cannot stack unequal counts,
    # test_make_params_unequal_law_counts.)
    "routes-K3-sarathi-Q6": (
        dict(
            topology="routes",
            agents=3,
            workload=((LAWS[0], LAWS[1], LAWS[0]),) * 3,
            routes=((0, 1, 2), (2, 2, 1), (0, 1, 0)),
            policy="sarathi",
            table_size=6,
        ),
        False,
    ),
    "parallel-fewest_tokens-K1-vllm-Q8": (
        dict(topology="parallel", agents=1, workload=LAWS, router="fewest_tokens", policy="vllm", table_size=8),
        False,
    ),
    "parallel-random-K2-wc-srpt-Q8": (
        dict(
            topology="parallel",
            agents=2,
            workload=LAWS,
            router="random",
            policy="wc",
            phase_first="prefill",
            inner_order="srpt",
            table_size=8,
        ),
        False,
    ),
}
PERIODIC = {"parallel-fewest_tokens-K3-ft-Q8-periodic"}  # rates [2, m], period drawn
DEFAULT = [name for name, (_, default) in CASES.items() if default]


def _config(name: str) -> NetworkConfig:
    kw = dict(horizon_s=HORIZON, burn_in_s=2.0, max_steps=MAX_STEPS, snapshots=8, record_members=True)
    kw.update(CASES[name][0])
    return NetworkConfig(**kw)


def _rs(cfg: NetworkConfig) -> bool:
    return cfg.topology == "routes" and cfg.workload == RS_WORKLOAD


# Per-type rates are drawn in [0.2, 2] / s times K under `parallel` (the router splits them)
# and times FJ_RATE_SCALE under `fork_join` (every request visits all four agents): then
# about half of its examples reject nothing, most others reject at the rings and some
# (about one seed in eight) at the join too.
FJ_RATE_SCALE = 0.5


def _draw(draw, cfg: NetworkConfig, periodic: bool = False) -> tuple[dict, tuple]:
    """Traced parameters (make_params keywords, one value per agent) and the type orders."""
    K, m = cfg.K, cfg.m
    ints = lambda lo, hi: [draw(st.integers(lo, hi)) for _ in range(K)]
    if _rs(cfg):
        # Every batch lasts exactly 1 s; per-agent budgets; the priorities either way round.
        kw = dict(
            budget=ints(6, 40),
            max_requests=ints(1, 256),
            c_s=1.0,
            a_s_per_token=0.0,
            b0=0,
            rates=[draw(st.floats(0.1, 1.5)) for _ in range(m)],
        )
        orders = draw(st.sampled_from([RS_ORDERS, RS_SWAPPED]))
        return kw, orders
    kw = dict(
        budget=ints(1, 40),
        max_requests=ints(1, 10),
        c_s=[draw(st.sampled_from([0.05, 0.3, 1.0])) for _ in range(K)],
        a_s_per_token=[draw(st.sampled_from([0.0, 0.01, 0.0373])) for _ in range(K)],
        b0=ints(0, 10),
        rates=[
            draw(st.floats(0.2, 2.0)) * dict(parallel=K, fork_join=FJ_RATE_SCALE).get(cfg.topology, 1) for _ in range(m)
        ],
    )
    if periodic:
        kw["rates"] = [kw["rates"], [draw(st.floats(0.2, 6.0)) for _ in range(m)]]
        kw["period_s"] = draw(st.sampled_from([0.5, 1.0, 3.0]))
    if cfg.policy in ("vllm", "ft"):
        kw["prefill_cap"] = ints(12, 40)
    if cfg.policy == "wc":
        kw["K_p"] = ints(1, 6)
        kw["K_d"] = ints(1, 6)
    return kw, cfg.type_orders


def _agents(cfg: NetworkConfig, kw: dict) -> list[dict]:
    """The reference's per-agent constants, from the same keywords."""
    per = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * cfg.K
    names = dict(
        budget="budget",
        max_requests="max_requests",
        prefill_cap="prefill_cap",
        K_p="K_p",
        K_d="K_d",
        c="c_s",
        a="a_s_per_token",
        b0="b0",
    )
    return [{mine: per(kw.get(theirs))[k] for mine, theirs in names.items()} for k in range(cfg.K)]


def compare(cfg: NetworkConfig, kw: dict, orders: tuple, seeds: list[int], outs: list | None = None):
    """Run the engine on `seeds` and the reference on each; assert they agree (the
    reference's outputs are appended to `outs` when given).

    `orders` are the per-agent type priorities of the run: they enter the engine only through
    the traced NetworkParams.rank, so the params of the config with these orders drive the
    compiled engine of `cfg` (the RS case swaps them without a recompile). Returns the
    engine's Results."""
    params = make_params(dataclasses.replace(cfg, type_orders=orders), **kw)
    res = simulate(cfg, params, seeds, record=True, warn=False)
    tr = res.trajectories
    # Without a record a step takes several events (engine.step): bitwise the same metrics.
    several = simulate(cfg, params, seeds, warn=False).metrics
    for key, v in res.metrics.items():
        assert np.array_equal(several[key], v, equal_nan=True), (key, several[key], v)
    for s, seed in enumerate(seeds):
        reqs = ref.engine_inputs(cfg, params, seed, N_CANDIDATES)
        out = ref.simulate(
            reqs,
            topology=cfg.topology,
            K=cfg.K,
            agents=_agents(cfg, kw),
            policy=cfg.policy,
            routes=cfg.routes,
            router=cfg.router,
            router_weights=kw.get("router_weights"),
            type_orders=orders,
            phase_first=cfg.phase_first,
            inner_order=cfg.inner_order,
            horizon=cfg.horizon_s,
            burn_in=cfg.burn_in_s,
            table_size=cfg.table_size,
            snapshots=cfg.snapshots,
            hist_octave_bits=cfg.hist_octave_bits,
            thinned=_thinned(cfg, params, seed),
        )
        if outs is not None:
            outs.append(out)
        where = f"seed {seed}"
        # Every event: kind, agent, time and the pre-event requests and tokens. The thinned
        # candidates (periodic rates) are arrival events that change nothing; their agent (the
        # engine's unused router pick; None in the reference) is not compared.
        rows = np.flatnonzero(tr["kind"][s] != 0)
        ev = out["events"]
        assert len(rows) == len(ev), (where, len(rows), len(ev))
        for i, (kind, agent, t, req, tok) in zip(rows, ev):
            got = (int(tr["kind"][s][i]), int(tr["requests"][s][i]), int(tr["tokens"][s][i]))
            assert got == (kind, req, tok), (where, i, got, (kind, req, tok))
            got = (tr["t_hi"][s][i], tr["t_lo"][s][i])
            assert got == (t.hi, t.lo), (where, i, got, (t.hi, t.lo))
            assert agent is None or int(tr["agent"][s][i]) == agent, (where, i, agent)
        # Batches: agent, bitwise start and duration, load, members (id, dp, dd).
        eng = batches(res, s)
        rb = out["batches"]
        assert len(rb) == len(eng["load"]), (where, len(rb), len(eng["load"]))
        for k, b in enumerate(rb):
            assert eng["agent"][k] == b["agent"], (where, k)
            assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo), (where, k)
            assert (eng["tau_hi"][k], eng["tau_lo"][k]) == (b["tau"].hi, b["tau"].lo), (where, k)
            assert eng["load"][k] == b["load"], (where, k)
            on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
            got = {int(i): (int(p), int(d)) for i, p, d in zip(eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on])}
            assert got == b["members"], (where, k, got, b["members"])
        # Metrics.
        m = {key: v[s] for key, v in res.metrics.items()}
        rm = out["metrics"]
        assert m["num_steps"] == rm["num_steps"], where
        for key in (
            "num_rejected",
            "overflowed",
            "num_departed",
            "requests_end",
            "tokens_end",
            "num_batches",
            "stalled",
            "done",
            "end_time_s",
            "mean_requests_in_system",
            "mean_tokens_in_system",
            "latency_p50_s",
            "latency_p90_s",
            "latency_p99_s",
        ):
            assert m[key] == rm[key], (where, key, m[key], rm[key])
        assert m["num_rejected"] == len(out["rejections"])
        for key in ("partial_batch_fraction", "batch_share_max", "throughput_requests_per_s"):
            assert m[key] == pytest.approx(rm[key], rel=1e-12, abs=1e-12), (where, key)
        assert m["latency_mean_s"] == pytest.approx(rm["latency_mean_s"], rel=1e-5, abs=1e-9)
        for key in ("request_growth_per_s", "token_growth_per_s"):
            assert m[key] == pytest.approx(rm[key], rel=1e-9, abs=1e-9), (where, key)
        for key in ("idle_fraction_mean", "idle_fraction_min"):
            assert m[key] == pytest.approx(rm[key], abs=1e-5), (where, key)
        assert out["end"]["requests"] == rm["requests_end"]
    return res


def _thinned(cfg: NetworkConfig, params, seed: int) -> list:
    """The times (reference DF) of the thinned candidates of run `seed` (none with constant
    rates)."""
    if np.asarray(params.arrival.type_cdf).shape[0] == 1:
        return []
    a = arrival_stream(cfg, params.arrival, seed, N_CANDIDATES)
    off = ~a["accepted"] & ~a["exhausted"]
    return [ref.DF(hi, lo) for hi, lo in zip(a["t_hi"][off], a["t_lo"][off])]


def _rejection_kinds(out: dict) -> tuple[int, int]:
    """(ring rejections, join rejections) of a reference run."""
    join = sum(1 for _, _, k, _ in out["rejections"] if k == ref.JOIN)
    return len(out["rejections"]) - join, join


def _check(name: str, data) -> None:
    cfg = _config(name)
    kw, orders = _draw(data.draw, cfg, name in PERIODIC)
    # Distinct: the runner refuses a repeated seed (one run counted twice).
    seeds = data.draw(st.lists(st.integers(0, 2**31 - 1), min_size=SEEDS_PER_RUN, max_size=SEEDS_PER_RUN, unique=True))
    outs = []
    compare(cfg, kw, orders, seeds, outs)
    # What the examples exercised (pytest --hypothesis-show-statistics).
    for out in outs:
        ring, join = _rejection_kinds(out)
        if cfg.topology != "fork_join":
            event(f"ring rejections: {ring > 0}")
            continue
        event(f"ring rejections: {ring > 0}, join rejections: {join > 0}")
        for why in sorted({why for *_, why in out["join_rejections"]}):
            event(f"join rejection: {why}")


@pytest.mark.parametrize("name", DEFAULT)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference(name, data):
    _check(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference_many(name, data):
    _check(name, data)


def test_rs_priorities_change_the_batches():
    # The RS case's swapped priorities reach the compiled engine through params.rank alone.
    cfg = _config("routes-rs-K2-priority-Q8")
    kw = dict(budget=[20, 20], max_requests=256, c_s=1.0, a_s_per_token=0.0, b0=0, rates=[0.8, 0.8])
    loads = []
    for orders in (RS_ORDERS, RS_SWAPPED):
        res = compare(cfg, kw, orders, [5, 6])
        loads.append([tuple(batches(res, s)["load"]) for s in range(SEEDS_PER_RUN)])
    assert loads[0] != loads[1]


def test_fork_join_rejections_covered():
    # Fixed parameters of the default fork_join case under which both seeds reject tasks at
    # the rings and at the join, the latter for all three reasons of docs §3 (slot held by
    # another request; held before the flush by a request this flush completes; a race of two
    # tasks of one flush for a free slot), and still complete requests: the engine must agree
    # there (the same compiled engine as the hypothesis examples).
    cfg = _config("fork_join-vllm-Q4")
    kw = dict(
        budget=[23, 35, 29, 7],
        max_requests=[7, 8, 7, 9],
        c_s=[0.05, 0.3, 0.3, 0.3],
        prefill_cap=[34, 18, 23, 40],
        a_s_per_token=[0.0373, 0.0, 0.01, 0.0373],
        b0=[7, 3, 3, 9],
        rates=[0.76, 0.95],
    )
    outs = []
    res = compare(cfg, kw, cfg.type_orders, [1, 2], outs)
    for s, out in enumerate(outs):
        ring, join = _rejection_kinds(out)
        assert ring > 0 and join > 0, (s, ring, join)
        assert res.metrics["num_departed"][s] > 0
        # Branches stuck at the join behind a rejected sibling, counted in the network.
        assert out["end"]["join"] and res.metrics["requests_end"][s] >= len(out["end"]["join"])
    assert {why for out in outs for *_, why in out["join_rejections"]} == {"held", "freed", "race"}


def test_make_params_unequal_law_counts():
    # Agent 0 serves one (type, stage) law, agent 1 two: a valid routes network whose agents'
    # budget params must still stack, and which must match the reference.
    cfg = NetworkConfig(
        topology="routes",
        agents=2,
        workload=((LAWS[0], LAWS[1]), (LAWS[1],)),
        routes=((0, 1), (1,)),
        max_steps=MAX_STEPS,
        horizon_s=HORIZON,
    )
    params = make_params(cfg, rates=[0.5, 0.5], budget=20)
    assert params.agent.budget.shape == (2,)
