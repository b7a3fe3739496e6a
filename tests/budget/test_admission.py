"""`admission_cap`: what the request cap M of the budget engine caps (docs/budget-semantics.md §3).

"batch" caps the requests of one batch; "running" also caps the requests started (some prefill
loaded) and not finished, as Vidur's replica schedulers cap their allocation map. A hand-made
queue where the two give different batches, written out, in the engine and the reference; the
policies where the two provably coincide; the option's validation.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsched.budget import BudgetConfig, batches, make_params, simulate
from jaxsched.budget.config import BACKLOG_ID
from jaxsched.errors import ConfigError
from jaxsched.workload import Constant, Independent
from tests.reference import budget as ref

# Three requests of 2 prompt and 2 decode tokens present at t = 0 (entries 0, 1, 2), M = 2,
# b = 8, every batch 1 s (c = 1, a = 0): batch k runs over [k, k + 1) s.
LAW = Independent(Constant(2), Constant(2), name="2/2")
COMMON = dict(budget=8, max_requests=2, c=1.0, a=0.0, b0=0, horizon=50.0)
P, D = (2, 0), (0, 1)  # a whole prompt; one decode token
# M caps each batch only: request 2 starts in the second batch while 0 and 1 wait to decode.
# vllm runs it alone (a prefill-only batch); orca mixes in the oldest decode (M = 2 left room
# for one), since its prefill gate now sees every prompt loaded.
BATCH = {
    "vllm": [{0: P, 1: P}, {2: P}, {0: D, 1: D}, {0: D, 1: D}, {2: D}, {2: D}],
    "orca": [{0: P, 1: P}, {2: P, 0: D}, {0: D, 1: D}, {1: D, 2: D}, {2: D}],
}
# M caps the started requests: 0 and 1 hold both places until they finish, so request 2
# starts in the fourth batch (TTFT 4 s instead of 2 s); the same batches in all three.
RUNNING = [{0: P, 1: P}, {0: D, 1: D}, {0: D, 1: D}, {2: P}, {2: D}, {2: D}]


def _reference(policy: str, cap: str) -> list[dict]:
    out = ref.simulate([(0.0, 0, 2, 2)] * 3, policy, admission_cap=cap, **COMMON)
    return [b["members"] for b in out["batches"]]


def _engine(policy: str, cap: str) -> list[dict]:
    cfg = BudgetConfig(
        workload=(LAW,),
        policy=policy,
        horizon_s=COMMON["horizon"],
        table_size=8,
        record_members=True,
        initial_requests=(3,),
        max_steps=400,
        admission_cap=cap,
    )
    params = make_params(cfg, rates=[1e-6], budget=8, max_requests=2, c_s=1.0, a_s_per_token=0.0, b0=0)
    eng = batches(simulate(cfg, params, [0], record=True, warn=False), 0)
    assert eng["tau_s"].tolist() == [1.0] * len(eng["load"])
    rows = []
    for k in range(len(eng["load"])):
        on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
        ids, dp, dd = eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on]
        rows.append({int(i) - BACKLOG_ID: (int(p), int(d)) for i, p, d in zip(ids, dp, dd)})
    return rows


@pytest.mark.parametrize("policy", ["vllm", "orca"])
def test_running_cap_delays_the_third_request_reference(policy):
    assert _reference(policy, "batch") == BATCH[policy]
    assert _reference(policy, "running") == RUNNING
    # sarathi serves the decodes first, so M = 2 decodes keep request 2 out under either cap.
    assert _reference("sarathi", "batch") == _reference("sarathi", "running") == RUNNING


@pytest.mark.parametrize("policy, cap", [("vllm", "batch"), ("vllm", "running"), ("orca", "running")])
def test_running_cap_delays_the_third_request_engine(policy, cap):
    assert _engine(policy, cap) == (BATCH[policy] if cap == "batch" else RUNNING)


def _random_requests(seed: int, n: int = 30) -> list:
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rng.uniform(0.5, 6.0))
        out.append((t, rng.randrange(2), rng.randint(1, 12), rng.randint(1, 6)))
    return out


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    policy=st.sampled_from(["sarathi", "ft"]),
    budget=st.integers(1, 40),
    M=st.integers(1, 10),
)
def test_sarathi_and_ft_never_start_more_than_m(seed, policy, budget, M):
    # Under "batch" sarathi and ft already keep at most M requests started: every started
    # request is in each batch that admits a new one (sarathi: all decodes and the one partly
    # loaded prompt come first in FCFS; ft: prompts start only when nothing decodes), and a
    # batch holds <= M. So "running" changes none of their batches.
    kw = dict(budget=budget, max_requests=M, prefill_cap=40 if policy == "ft" else None, c=0.3, a=0.01, b0=2)
    reqs = _random_requests(seed)
    a = ref.simulate(reqs, policy, horizon=12.0, **kw)
    b = ref.simulate(reqs, policy, horizon=12.0, admission_cap="running", **kw)
    assert [x["members"] for x in a["batches"]] == [x["members"] for x in b["batches"]]


def test_admission_cap_is_validated_and_refused_where_ignored():
    with pytest.raises(ConfigError, match=r"admission_cap must be one of \('batch', 'running'\)"):
        BudgetConfig(admission_cap="admitted")
    with pytest.raises(ConfigError, match="admission_cap"):
        BudgetConfig(policy="priority", admission_cap="running")
    for policy in ("sarathi", "orca", "vllm", "ft", "wc"):
        assert BudgetConfig(policy=policy, admission_cap="running").admission_cap == "running"
    # The network's agents cap one batch's requests: their policies do not list the option.
    from jaxsched.network.registry import POLICIES as NETWORK_POLICIES

    assert all("admission_cap" not in e.options for e in NETWORK_POLICIES.values())
