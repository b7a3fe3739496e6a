"""Hand-checked tests of the network reference simulator (tests/reference/network.py).

Every case uses c = 1.0, a = 0.0, so each batch lasts exactly 1 s and all times are small
binary fractions; the expected trajectories follow from docs/network-semantics.md by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference import network as ref
from tests.reference.kv import from_float64, to_float64

F32 = np.float32
UNIT = dict(c=1.0, a=0.0, b0=0)
KIND = {
    ref.KIND_FLUSH: "flush",
    ref.KIND_ARRIVAL: "arrival",
    ref.KIND_BATCH: "batch",
    ref.KIND_WAIT: "wait",
    ref.KIND_END: "end",
}


def req(i, t, z, *sizes, u=0.0):
    return ref.Request(i, from_float64(t), z, F32(u), tuple(sizes))


def agents(K, budget=10, **kw):
    return [dict(budget=budget, **UNIT, **kw) for _ in range(K)]


def events(out):
    """[(kind, agent, time s)] of the processed events (the end row left out)."""
    return [(KIND[k], a, to_float64(t)) for k, a, t, _, _ in out["events"] if k != ref.KIND_END]


def batch_list(out):
    return [(b["agent"], to_float64(b["t0"]), b["members"]) for b in out["batches"]]


def test_one_request_through_two_agents():
    # Type 0 visits agent 0 then agent 1; stage sizes (3, 2) then (4, 1); sarathi, b = 10.
    r = [req(0, 0.5, 0, (3, 2), (4, 1))]
    kw = dict(topology="routes", K=2, agents=agents(2), policy="sarathi", routes=((0, 1),), table_size=4, snapshots=10)
    out = ref.simulate(r, horizon=10.0, **kw)
    assert batch_list(out) == [
        (0, 0.5, {0: (3, 0)}),  # woken by the arrival at 0.5: the whole prompt
        (0, 1.5, {0: (0, 1)}),
        (0, 2.5, {0: (0, 1)}),  # last decode token: leaving, slot held until 3.5
        (1, 3.5, {0: (4, 0)}),  # the transfer at 3.5 wakes agent 1 at 3.5
        (1, 4.5, {0: (0, 1)}),
    ]
    assert events(out) == [
        ("arrival", 0, 0.5),
        ("batch", 0, 0.5),
        ("flush", 0, 1.5),
        ("batch", 0, 1.5),
        ("flush", 0, 2.5),
        ("batch", 0, 2.5),
        ("flush", 0, 3.5),
        ("wait", 0, 3.5),
        ("batch", 1, 3.5),
        ("flush", 1, 4.5),
        ("batch", 1, 4.5),
        ("flush", 1, 5.5),
        ("wait", 1, 5.5),
    ]
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(0, 5.5)]
    m = out["metrics"]
    assert m["num_departed"] == 1 and m["latency_mean_s"] == 5.0
    assert m["num_batches"] == 5 and m["num_rejected"] == 0 and m["done"] == 1
    assert m["num_steps"] == 14  # 13 events and the end
    assert m["end_time_s"] == 5.5
    # Waits: agent 0 over [0, 0.5) and [3.5, 10), agent 1 over [0, 3.5) and [5.5, 10).
    assert m["idle_fraction_min"] == pytest.approx(0.7)
    assert m["idle_fraction_mean"] == pytest.approx(0.75)
    # Snapshot g_j = j: the state before the first event at time >= j (the end state after
    # the last event at 5.5): tasks held (the leaving one included) and unprocessed tokens.
    assert out["snapshots"] == [(0, 0), (1, 2), (1, 1), (1, 0), (1, 1), (1, 0), (0, 0), (0, 0), (0, 0), (0, 0)]
    assert m["mean_requests_in_system"] == 0.5 and m["mean_tokens_in_system"] == 0.4

    # Horizon 4: the flush at 4.5 is the first event at or past it and ends the run; the task
    # at agent 1 (4 prefill tokens loaded, one decode token left) is in the end state.
    out = ref.simulate(r, horizon=4.0, **kw)
    assert len(out["batches"]) == 4
    kind, agent, t, n, x = out["events"][-1]
    assert (kind, agent, to_float64(t), n, x) == (ref.KIND_END, 1, 4.5, 1, 1)
    assert out["metrics"]["end_time_s"] == 3.5
    assert (out["metrics"]["requests_end"], out["metrics"]["tokens_end"]) == (1, 1)
    assert out["metrics"]["num_departed"] == 0


def test_equal_times_flushes_before_decisions():
    # Agent 1's batch ends at t = 2 and sends its task to agent 0; agent 0's own batch ends
    # at 2 too. Agent 0 flushes first (lower index) but decides only after every flush at 2,
    # so its batch at 2 holds the task agent 1 finished at 2.
    r = [
        req(0, 0.0, 0, (1, 1), (2, 1)),  # type 0: agent 1 then agent 0
        req(1, 0.0, 1, (1, 2)),
    ]  # type 1: agent 0 only
    out = ref.simulate(
        r, topology="routes", K=2, agents=agents(2), policy="sarathi", routes=((1, 0), (0,)), table_size=4, horizon=20.0
    )
    assert events(out)[:10] == [
        ("arrival", 1, 0.0),
        ("arrival", 0, 0.0),
        ("batch", 0, 0.0),
        ("batch", 1, 0.0),
        ("flush", 0, 1.0),
        ("flush", 1, 1.0),
        ("batch", 0, 1.0),
        ("batch", 1, 1.0),
        ("flush", 0, 2.0),
        ("flush", 1, 2.0),
    ]
    assert batch_list(out)[4:6] == [
        (0, 2.0, {1: (0, 1), 0: (2, 0)}),  # request 0's second stage joined at 2
        (0, 3.0, {0: (0, 1)}),
    ]
    assert events(out)[10:12] == [("batch", 0, 2.0), ("wait", 1, 2.0)]
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(1, 3.0), (0, 4.0)]


def test_rejected_transfer_and_later_tasks_of_the_insertion():
    # Q = 2. Agent 1 holds request 0 (entry 0, nine decode tokens) until t = 10; request 1
    # (entry 1) leaves at 2. At t = 3 requests 2 and 3 leave agent 0 together for agent 1:
    # entry 2 wants slot 0, still held by request 0, so request 2 is rejected and takes no
    # entry number; request 3 tries the same slot and is rejected too, although slot 1 is free.
    r = [req(0, 0.0, 1, (1, 9)), req(1, 0.0, 1, (1, 1)), req(2, 0.0, 0, (1, 2), (1, 1)), req(3, 0.0, 0, (1, 2), (1, 1))]
    out = ref.simulate(
        r, topology="routes", K=2, agents=agents(2), policy="sarathi", routes=((0, 1), (1,)), table_size=2, horizon=20.0
    )
    assert [(i, s, k, to_float64(t)) for i, s, k, t in out["rejections"]] == [(2, 1, 1, 3.0), (3, 1, 1, 3.0)]
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(1, 2.0), (0, 10.0)]
    m = out["metrics"]
    assert m["num_rejected"] == 2 and m["overflowed"] == 1
    assert m["requests_end"] == 0 and m["end_time_s"] == 10.0
    # Agent 0's batches: both prompts, then two decode rounds; nothing reaches agent 1.
    assert [b["members"] for b in out["batches"] if b["agent"] == 0] == [
        {2: (1, 0), 3: (1, 0)},
        {2: (0, 1), 3: (0, 1)},
        {2: (0, 1), 3: (0, 1)},
    ]
    assert all(set(b["members"]) <= {0, 1} for b in out["batches"] if b["agent"] == 1)


def test_leaving_task_keeps_its_slot_until_its_own_flush():
    # Q = 2. The receiving agent holds request 0 (entry 0, slot 0), leaving in the batch
    # [1, 2), and request 1 (entry 1). Request 2 finishes its first stage at the sending agent
    # at t = 2, and its transfer takes entry 2, slot 0.
    r = [req(0, 0.0, 1, (1, 1)), req(1, 0.0, 1, (1, 5)), req(2, 0.0, 0, (1, 1), (1, 1))]
    kw = dict(topology="routes", K=2, agents=agents(2), policy="sarathi", table_size=2, horizon=20.0)
    # Receiver = agent 1: the sender (agent 0) flushes first at t = 2, while slot 0 is still
    # held by the leaving request 0: the transfer is rejected.
    out = ref.simulate(r, routes=((0, 1), (1,)), **kw)
    assert [(i, s, k, to_float64(t)) for i, s, k, t in out["rejections"]] == [(2, 1, 1, 2.0)]
    # Receiver = agent 0: it flushes first, freeing slot 0, and the transfer (at agent 1's
    # flush, same time) takes it; agent 0's decision at 2 serves it.
    out = ref.simulate(r, routes=((1, 0), (0,)), **kw)
    assert out["rejections"] == []
    assert (0, 2.0, {1: (0, 1), 2: (1, 0)}) in batch_list(out)
    assert [i for i, _ in out["departures"]] == [0, 2, 1]


@pytest.mark.parametrize(
    "router,u,expect",
    [
        ("fewest_requests", 0.0, [0, 1, 0]),
        ("fewest_tokens", 0.0, [0, 1, 0]),
        ("random", 0.7, [1, 1, 1]),  # floor(0.7 * 2) = 1
        ("random", 0.2, [0, 0, 0]),
    ],
)
def test_routers_see_tasks_not_leaving(router, u, expect):
    # Request 0 at agent 0 is leaving during [1, 2) (last decode token in flight); request 1 at
    # agent 1 still has decode tokens. At t = 1.5 the router counts agent 0 as empty.
    r = [req(0, 0.0, 0, (1, 1), u=u), req(1, 0.0, 0, (1, 5), u=u), req(2, 1.5, 0, (2, 2), u=u)]
    out = ref.simulate(
        r, topology="parallel", K=2, agents=agents(2), policy="sarathi", router=router, table_size=4, horizon=20.0
    )
    assert [a for kind, a, _ in events(out) if kind == "arrival"] == expect
    # Joining a busy agent does not wake it: request 2 is first served at that agent's next
    # decision, after its batch in flight.
    assert min(to_float64(b["t0"]) for b in out["batches"] if 2 in b["members"]) == 2.0
    assert out["metrics"]["num_departed"] == 3


def test_engine_inputs_match_request_stream():
    # The harness's fixed-length inputs are request_stream's and stage_lengths' numbers.
    from jaxsched.network import NetworkConfig, make_params
    from jaxsched.workload import Independent, Poisson, UniformInt

    short = Independent(Poisson(2.0), UniformInt(1, 3))
    long = Independent(Poisson(12.0), Poisson(2.0))
    # (Both agents serve two laws: make_params cannot stack unequal counts yet.)
    cfg = NetworkConfig(
        topology="routes",
        agents=2,
        workload=((short, long), (long,), (short,)),
        routes=((0, 1), (1,), (0,)),
        policy="sarathi",
        horizon_s=20.0,
        table_size=8,
        max_steps=6000,
    )
    params = make_params(cfg, budget=[20, 30], c_s=1.0, a_s_per_token=0.0, b0=0, rates=[0.8, 0.5, 0.4])
    reqs = ref.engine_inputs_checked(cfg, params, 3, 256)
    assert len(reqs) > 10 and {r.type for r in reqs} == {0, 1, 2}
    assert {len(r.sizes) for r in reqs} == {1, 2}


# fork_join (docs §3): agent 0, then agents 1 and 2 (the fork), the join (J = table_size slots,
# request i at slot i mod J), agent 3. Sizes per request: stages 0, 1, 2, 3.
FJ = dict(topology="fork_join", K=4, agents=agents(4), policy="sarathi")


def test_fork_join_one_request():
    # Stage 0 (2, 1) at agent 0; branches (1, 1) at agent 1 and (3, 2) at agent 2; stage 3
    # (1, 1) at agent 3. Agent 1's branch reaches the join first (4.5) and waits; agent 2's
    # completes it at 5.5, and the request enters agent 3, leaving the network at 7.5.
    r = [req(0, 0.5, 0, (2, 1), (1, 1), (3, 2), (1, 1))]
    out = ref.simulate(r, horizon=10.0, table_size=4, snapshots=10, **FJ)
    assert batch_list(out) == [
        (0, 0.5, {0: (2, 0)}),
        (0, 1.5, {0: (0, 1)}),
        (1, 2.5, {0: (1, 0)}),
        (2, 2.5, {0: (3, 0)}),  # both branches enter at 2.5
        (1, 3.5, {0: (0, 1)}),
        (2, 3.5, {0: (0, 1)}),
        (2, 4.5, {0: (0, 1)}),
        (3, 5.5, {0: (1, 0)}),
        (3, 6.5, {0: (0, 1)}),
    ]
    assert events(out) == [
        ("arrival", 0, 0.5),
        ("batch", 0, 0.5),
        ("flush", 0, 1.5),
        ("batch", 0, 1.5),
        ("flush", 0, 2.5),
        ("wait", 0, 2.5),
        ("batch", 1, 2.5),
        ("batch", 2, 2.5),
        ("flush", 1, 3.5),
        ("flush", 2, 3.5),
        ("batch", 1, 3.5),
        ("batch", 2, 3.5),
        ("flush", 1, 4.5),
        ("flush", 2, 4.5),
        ("wait", 1, 4.5),
        ("batch", 2, 4.5),
        ("flush", 2, 5.5),
        ("wait", 2, 5.5),
        ("batch", 3, 5.5),
        ("flush", 3, 6.5),
        ("batch", 3, 6.5),
        ("flush", 3, 7.5),
        ("wait", 3, 7.5),
    ]
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(0, 7.5)]
    m = out["metrics"]
    assert m["latency_mean_s"] == 7.0 and m["num_departed"] == 1 and m["num_rejected"] == 0
    assert m["num_batches"] == 9 and m["num_steps"] == 24
    # Snapshot g_j = j: tasks (two during the fork; at 5 the branch waiting at the join, with
    # no tokens left, and agent 2's leaving one) and unprocessed tokens.
    assert out["snapshots"] == [(0, 0), (1, 1), (1, 0), (2, 3), (2, 1), (2, 0), (1, 1), (1, 0), (0, 0), (0, 0)]
    assert [n for kind, _, t, n, _ in out["events"] if to_float64(t) == 5.5][:1] == [2]
    assert out["end"]["join"] == {} and m["requests_end"] == 0
    # Branches swapped: agent 2's finishes first and waits; the same times.
    r = [req(0, 0.5, 0, (2, 1), (3, 2), (1, 1), (1, 1))]
    out = ref.simulate(r, horizon=10.0, table_size=4, snapshots=10, **FJ)
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(0, 7.5)]
    assert [(b["agent"], to_float64(b["t0"])) for b in out["batches"]][-2:] == [(3, 5.5), (3, 6.5)]


@pytest.mark.parametrize(
    "variant,s1_0,s1_2,s2_2,rejected",
    [
        # Request 0's agent-1 branch waits at slot 0 from t = 4; request 2's agent-1 branch
        # reaches the join at 6 and finds slot 0 held by request 0: rejected.
        ("held", (1, 1), (1, 1), (1, 3), (2, 1, 6.0)),
        # Requests 0 and 2 leave agent 1 in the same flush at 6 and both want the free slot 0:
        # request 0 (earlier entry) gets it, request 2 loses the race and is rejected.
        ("race", (1, 3), (1, 1), (1, 3), (2, 1, 6.0)),
        # Requests 0 and 2 leave agent 2 in the same flush at 7: request 0 completes its join and
        # frees slot 0, but the table is read once before the flush, so request 2 finds it held.
        ("freed-in-flush", (1, 1), (1, 3), (1, 2), (2, 2, 7.0)),
    ],
)
def test_fork_join_slot_collision(variant, s1_0, s1_2, s2_2, rejected):
    # Q = J = 2: requests 0 and 2 share join slot 0. Request 1's long stage 0 keeps it at
    # agent 0 until 13, so requests 0 and 2 are consecutive entries at agents 1 and 2 (no
    # ring rejection). Request 0: branches at agents 1 (s1_0) and 2 (decode until 7), join
    # completed at 7, agent 3 over [7, 9). Request 2 (arrives at 2 as request 0's slot at
    # agent 0 frees) forks at 4; one branch is rejected at the join, and its sibling, finding
    # slot 0 free later (at 8), waits there for ever. Request 1 forks at 13, joins at 15 (agent
    # 1's branch waits in slot 1, agent 2's completes it in the next flush at 15), leaves at 17.
    r = [
        req(0, 0.0, 0, (1, 1), s1_0, (1, 4), (1, 1)),
        req(1, 0.0, 0, (1, 12), (1, 1), (1, 1), (1, 1)),
        req(2, 2.0, 0, (1, 1), s1_2, s2_2, (1, 1)),
    ]
    out = ref.simulate(r, horizon=30.0, table_size=2, **FJ)
    assert [(i, s, k, to_float64(t)) for i, s, k, t in out["rejections"]] == [
        (rejected[0], rejected[1], ref.JOIN, rejected[2])
    ]
    assert [(i, s, to_float64(t), why) for i, s, t, why in out["join_rejections"]] == [
        rejected + ({"held": "held", "race": "race", "freed-in-flush": "freed"}[variant],)
    ]
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(0, 9.0), (1, 17.0)]
    assert out["end"]["join"] == {0: 2}
    m = out["metrics"]
    assert m["num_rejected"] == 1 and m["overflowed"] == 1
    assert (m["requests_end"], m["tokens_end"]) == (1, 0)  # the stuck branch
    # Agent 0: request 2 enters at 2 (after the flush that frees slot 0) and is served with
    # request 1's decodes.
    assert [(t, mem) for k, t, mem in batch_list(out) if k == 0][:4] == [
        (0.0, {0: (1, 0), 1: (1, 0)}),
        (1.0, {0: (0, 1), 1: (0, 1)}),
        (2.0, {1: (0, 1), 2: (1, 0)}),
        (3.0, {1: (0, 1), 2: (0, 1)}),
    ]
    assert [(t, mem) for k, t, mem in batch_list(out) if k == 3] == [
        (7.0, {0: (1, 0)}),
        (8.0, {0: (0, 1)}),
        (15.0, {1: (1, 0)}),
        (16.0, {1: (0, 1)}),
    ]


def test_fork_join_ring_rejection_of_one_branch():
    # Q = J = 1. Request 0 forks at 2; its agent-2 branch holds agent 2's only slot until 8.
    # Request 1 forks at 4.5: agent 1 takes its branch (slot freed at 4), agent 2 rejects its
    # other one (ring rule). Request 0 joins at 8 and leaves at 10; request 1's agent-1 branch
    # reaches the join at 8.5, finds slot 0 free and waits there for ever.
    r = [req(0, 0.0, 0, (1, 1), (1, 1), (1, 5), (1, 1)), req(1, 2.5, 0, (1, 1), (1, 3), (1, 1), (1, 1))]
    out = ref.simulate(r, horizon=20.0, table_size=1, **FJ)
    assert [(i, s, k, to_float64(t)) for i, s, k, t in out["rejections"]] == [(1, 2, 2, 4.5)]
    assert out["join_rejections"] == []
    assert [(i, to_float64(t)) for i, t in out["departures"]] == [(0, 10.0)]
    assert [b for b in batch_list(out) if b[0] == 1] == [
        (1, 2.0, {0: (1, 0)}),
        (1, 3.0, {0: (0, 1)}),
        (1, 4.5, {1: (1, 0)}),
        (1, 5.5, {1: (0, 1)}),
        (1, 6.5, {1: (0, 1)}),
        (1, 7.5, {1: (0, 1)}),
    ]
    assert all(set(mem) == {0} for k, _, mem in batch_list(out) if k in (2, 3))
    assert out["end"]["join"] == {0: 1}
    assert out["metrics"]["requests_end"] == 1 and out["metrics"]["num_rejected"] == 1
