"""Several events per scan step (`jaxsched.network.engine.step_events`): a step without a record
takes up to `arrivals` arrivals, then a batch end, then its agent's decision, each only when it
is the next event. The events, and so every metric, are those of one event per step (a
recording run, which test_properties.py checks against the reference), bitwise, for any count
of arrivals: with rings small enough that arrivals of one step meet held slots (two may want
one slot of a ring of 2), with flushes that move tasks between agents, and under `-m slow`
every topology, a flush that moves tasks into its own agent included. And the steps are
fewer: about one per batch.

`max_steps` bounds the events, not the scan steps: a run cut there processes the same events
whatever the block of steps the runner scans and whether it records.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsched.errors import ConfigError
from jaxsched.network import NetworkConfig, engine, make_params
from jaxsched.network.metrics import finalize
from jaxsched.run import simulate
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from tests.table_checks import assert_same

LAWS = (Independent(UniformInt(1, 12), Poisson(3.0), name="a"), Independent(Constant(5), UniformInt(1, 4), name="b"))
SEEDS = (0, 1, 2, 3)
AGENT = dict(budget=12, max_requests=4, c_s=0.3, a_s_per_token=0.01, b0=4)
BASE = dict(workload=LAWS, horizon_s=15.0, max_steps=3000, snapshots=8)
CASES = {
    # Rings of 2 behind the fewest-tokens router at 6 requests/s: arrivals rejected at held slots.
    "parallel-Q2": dict(topology="parallel", agents=2, router="fewest_tokens", policy="sarathi", table_size=2),
    "parallel-Q64": dict(topology="parallel", agents=2, router="random", policy="vllm", table_size=64),
    "routes-Q4": dict(topology="routes", agents=2, routes=((0, 1), (1, 0)), policy="orca", table_size=4),
    # Type 0 visits agent 0 twice: a flush moves tasks into its own agent's ring.
    "selfloop-Q8": dict(topology="routes", agents=1, routes=((0, 0), (0,)), policy="sarathi", table_size=8),
    "fork_join-Q4": dict(topology="fork_join", agents=4, policy="vllm", table_size=4),
}
# Each case compiles four programs (30-70 s on two cores): the default run takes the held
# slots and the moves between agents; `-m slow` the others.
DEFAULT = ("parallel-Q2", "routes-Q4")


def _case(name: str):
    kw = CASES[name]
    workload = ((LAWS[0], LAWS[1]), (LAWS[1],)) if name.startswith("selfloop") else LAWS
    if kw["topology"] == "fork_join":
        workload = tuple((law,) * 4 for law in LAWS)
    elif kw["topology"] == "routes" and not name.startswith("selfloop"):
        workload = ((LAWS[0], LAWS[1]), (LAWS[1], LAWS[0]))
    cfg = NetworkConfig(**{**BASE, **kw, "workload": workload})
    rates = [3.0, 3.0] if cfg.topology == "parallel" else [0.6, 0.6]
    return cfg, make_params(cfg, rates=rates, **AGENT)


def _run(cfg: NetworkConfig, params, arrivals: int):
    """(metrics, scan steps) of SEEDS, each step `step_events` with `arrivals`."""
    stepped = jax.vmap(lambda s: engine.step_events(cfg, params, s, arrivals)[0])

    def run(state):
        cond = lambda c: ~jnp.all(c[1].done) & (c[0] < cfg.max_steps)
        return jax.lax.while_loop(cond, lambda c: (c[0] + 1, stepped(c[1])), (jnp.int32(0), state))

    state = jax.vmap(lambda s: engine.init(cfg, params, s))(jnp.asarray(SEEDS, jnp.uint32))
    n, state = jax.jit(run)(state)
    return finalize(cfg, params, state), int(n)


@pytest.mark.parametrize(
    "name", [name if name in DEFAULT else pytest.param(name, marks=pytest.mark.slow) for name in CASES]
)
def test_several_events_per_step_change_no_metric(name):
    cfg, params = _case(name)
    one = simulate(cfg, params, SEEDS, record=True, warn=False)
    assert np.all(one.metrics["done"] == 1) and one.metrics["num_batches"].min() > 20
    if name == "parallel-Q2":
        assert one.metrics["num_rejected"].min() > 0  # held slots met, by arrivals
    events = int(one.metrics["num_steps"].max())
    # 2 (ARRIVALS_PER_STEP): `simulate` below; one a step too in the cases under `-m slow`
    for arrivals in (3,) if name in DEFAULT else (1, 3):
        m, steps = _run(cfg, params, arrivals)
        assert_same(m, one.metrics)
        # One scan step per event would take `events` steps.
        assert steps < 0.8 * events, (arrivals, steps, events)
    assert_same(simulate(cfg, params, SEEDS, warn=False).metrics, one.metrics)


def test_arrivals_is_a_positive_count_and_one_with_a_record():
    cfg, params = _case("parallel-Q64")
    state = engine.init(cfg, params, 0)
    for arrivals, record in ((0, False), (2, True), (1.5, False)):
        with pytest.raises(ConfigError, match="max_arrivals"):
            engine.step_events(cfg, params, state, arrivals, record)


def test_max_steps_bounds_the_events_whatever_the_block():
    cfg, params = _case("parallel-Q64")
    cfg = NetworkConfig(**{**BASE, **CASES["parallel-Q64"], "max_steps": 100})
    ref = simulate(cfg, params, SEEDS, record=True, warn=False).metrics
    assert np.all(ref["num_steps"] == 100) and np.all(ref["done"] == 0)
    for record in (False, True):  # 100 events: 15 blocks of 7 would take 105
        got = simulate(cfg, params, SEEDS, record=record, block_steps=7, warn=False).metrics
        assert_same(got, ref)


def test_float_sums_do_not_depend_on_how_the_events_are_stepped():
    # A compensated (Kahan) sum that adds a zero folds its compensation into its total: the same
    # value, other bits. A step whose flush phase took no event used to add a zero to the latency
    # sum, so its bits depended on the number of steps: on this seed latency_mean_s differed in
    # its 8th digit from the recording run's. The sums now change only at their events.
    cfg = NetworkConfig(
        **{**BASE, "horizon_s": 12.0, "burn_in_s": 2.0},
        topology="parallel",
        agents=1,
        policy="vllm",
        table_size=8,
    )
    params = make_params(
        cfg, budget=8, max_requests=8, c_s=0.3, a_s_per_token=0.01, b0=3, rates=[1.75, 1.75], prefill_cap=12
    )
    one = simulate(cfg, params, [2935], record=True, warn=False).metrics
    assert_same(simulate(cfg, params, [2935], warn=False).metrics, one)
