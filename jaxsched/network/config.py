"""Validated configuration of the network engine: static `NetworkConfig`, traced `NetworkParams`.

A network is K budget engines ("agents", docs/budget-semantics.md) that requests visit
(docs/network-semantics.md): `parallel` sends each arrival to one agent chosen by a router
(paper 004 §4.1), `routes` sends type z through the agents routes[z] in turn (§4.3, the
Rybko-Stolyar network), `fork_join` is §4.3's four-agent fork-join network (Conjecture 1).
The per-agent constants are the budget engine's params, built and validated by
`jaxsched.budget.make_params` (one per agent, stacked on a leading [K] axis), so every range
check and error message is the budget engine's, prefixed with the agent.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..budget.config import (
    DEFAULT_A_S_PER_TOKEN,
    DEFAULT_B0,
    DEFAULT_BUDGET,
    DEFAULT_C_S,
    DEFAULT_LOAD,
    DEFAULT_MAX_REQUESTS,
    FIG1_WORKLOAD,
    INNER_ORDERS,
    INT_LIMIT,
    PHASES,
    BudgetConfig,
    BudgetParams,
    batch_time_s,
    length_laws,
    mean_lengths,
    min_batch_s,
)
from ..budget.config import make_params as budget_params
from ..budget.core import BatchOptions
from ..errors import (
    ConfigError,
    Reads,
    changed_fields,
    changed_keywords,
    merge_reads,
    reads_from,
    refuse_ignored,
    require,
    require_choice,
    require_float,
    require_int,
)
from ..histogram import bit_num_bins
from ..tables import check_growable, largest_table
from ..workload.arrivals import check_rates
from .registry import POLICIES, ROUTERS, TOPOLOGY_OPTIONS

TOPOLOGIES = ("parallel", "routes", "fork_join")
# The fork-join network of paper 004 §4.3 (Conjecture 1): agent 0, then agents 1 and 2 in
# parallel (a fork), then agent 3 once both are done (a join); stage s is served by agent s.
FORK_JOIN_AGENTS = 4
MAX_AGENTS = 64
MAX_STAGES = 16
# The weighted router compares the 24 bits of its uniform draw with integer cuts out of 2^24.
ROUTE_BITS = 24


def option_reads() -> dict[str, tuple[Reads, ...]]:
    """What reads each option that not every network run reads: the topology first (only
    `parallel` has a router), then the routers' registry options (`weighted` reads
    router_weights), then the policies'."""
    topology = {o: (Reads("topology", tops),) for o, tops in TOPOLOGY_OPTIONS.items()}
    return merge_reads(topology, reads_from(ROUTERS, "router"), reads_from(POLICIES, "policy"))


def _cfg(laws: tuple, **kw) -> BudgetConfig:
    """A one-slot budget config over `laws`: what budget's validation and means need."""
    return BudgetConfig(workload=laws, table_size=1, arrivals_per_step=1, max_steps=INT_LIMIT, **kw)


def _stages(workload) -> tuple:
    """Per type, the tuple of per-stage length laws (a single law: one stage)."""
    types = workload if isinstance(workload, tuple) else (workload,)
    require(len(types) >= 1, "workload", "a non-empty tuple with one entry per request type", workload)
    out = []
    for z, w in enumerate(types):
        stages = w if isinstance(w, tuple) else (w,)
        require(
            1 <= len(stages) <= MAX_STAGES,
            f"workload[{z}]",
            f"a length law or a tuple of 1..{MAX_STAGES} of them (one per stage)",
            w,
        )
        out.append(length_laws(stages))
    return tuple(out)


@dataclass(frozen=True)
class NetworkConfig:
    """Static configuration of a network run (docs/network-semantics.md).

    topology: "parallel" (a router picks one agent per arrival), "routes" (type z visits
    routes[z]) or "fork_join" (agent 0, then 1 and 2 in parallel, then 3; stage s at agent
    s). agents: K (4 for fork_join). workload: per type, a length law or a tuple of them, one
    per stage (stage s of type z draws (v_p, v_d) from workload[z][s]); `parallel` has one.
    routes: `routes` only, per type the agents visited (one per stage). router: `parallel`
    only, one of ROUTERS. policy: a budget policy (every agent). type_orders: `priority`
    only, per agent the types from highest to lowest priority (None: 0, 1, ... everywhere).
    phase_first, inner_order: `wc` only. horizon_s, burn_in_s (s): the run and its metric
    window. num_requests: optional cap on the arrivals. table_size Q: ring slots per agent.
    max_steps: bound on the events processed. hist_octave_bits, snapshots: as the budget
    engine's. record_members: recorded steps also hold the deciding agent's batch (tests).
    grow_table: table_size (a power of two) is the starting size: a run that rejects a task
    at a held slot (an agent's ring or the join's, both of table_size slots) runs again with
    twice the slots, until none is rejected or Q reaches `max_table_size()`; its metrics are
    bitwise those of any larger table (`jaxsched.tables`). Not with record_members (its
    per-slot rows have the table's width). False (default): the table is the config's, and
    a held slot rejects the task (counted in num_rejected, warned).
    """

    topology: str = "parallel"
    agents: int = 2
    workload: tuple = (FIG1_WORKLOAD,)
    routes: tuple | None = None
    router: str = "fewest_tokens"
    policy: str = "sarathi"
    type_orders: tuple | None = None
    phase_first: str = "decode"
    inner_order: str = "fcfs"
    horizon_s: float = 600.0
    burn_in_s: float = 0.0
    num_requests: int | None = None
    table_size: int = 4096
    max_steps: int = 400_000
    hist_octave_bits: int = 4
    snapshots: int = 32
    record_members: bool = False
    grow_table: bool = False

    def __post_init__(self):
        require_choice(self.topology, "topology", TOPOLOGIES)
        K = require_int(self.agents, "agents (K)", lo=1, hi=MAX_AGENTS)
        object.__setattr__(self, "workload", _stages(self.workload))
        require_choice(self.router, "router", ROUTERS)
        require_choice(self.policy, "policy", POLICIES)
        require_choice(self.phase_first, "phase_first", PHASES)
        require_choice(self.inner_order, "inner_order", INNER_ORDERS)
        self._check_routes(K)
        self._check_type_orders(K)
        self._check_ignored()
        h = require_float(self.horizon_s, "horizon_s", lo=0.0, hi=1e7, lo_open=True)
        object.__setattr__(self, "horizon_s", h)
        burn = require_float(self.burn_in_s, "burn_in_s", lo=0.0)
        require(burn < h, "burn_in_s", f"in [0, horizon_s = {h:g}) s", self.burn_in_s)
        object.__setattr__(self, "burn_in_s", burn)
        if self.num_requests is not None:
            require_int(self.num_requests, "num_requests", lo=1, hi=INT_LIMIT)
        Q = require_int(self.table_size, "table_size (Q)", lo=1, hi=2**20)
        require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)
        require_int(self.hist_octave_bits, "hist_octave_bits", lo=0, hi=8)
        require_int(self.snapshots, "snapshots", lo=2, hi=4096)
        require(isinstance(self.record_members, bool), "record_members", "True or False", self.record_members)
        if K * Q * self.max_len > INT_LIMIT:
            raise ConfigError(
                f"agents * table_size * max (prefill + decode) = {K} * {Q} * "
                f"{self.max_len} could overflow int32 token sums; it must be <= "
                f"{INT_LIMIT}"
            )
        check_growable(Q, self.grow_table)
        # A rerun's recorded per-slot rows would be wider than the other runs' (Q columns).
        require(
            not (self.grow_table and self.record_members),
            "grow_table",
            "False when record_members is set (recorded per-slot rows have the table's width)",
            self.grow_table,
        )

    def _check_routes(self, K: int) -> None:
        if self.topology == "parallel":
            require(self.routes is None, "routes", "None for topology 'parallel'", self.routes)
            for z, st in enumerate(self.workload):
                require(len(st) == 1, f"workload[{z}]", "one law (one stage) for topology 'parallel'", st)
            return
        if self.topology == "fork_join":
            require(self.routes is None, "routes", "None for topology 'fork_join'", self.routes)
            require(K == FORK_JOIN_AGENTS, "agents (K)", f"{FORK_JOIN_AGENTS} for topology 'fork_join'", K)
            for z, st in enumerate(self.workload):
                require(
                    len(st) == FORK_JOIN_AGENTS,
                    f"workload[{z}]",
                    f"{FORK_JOIN_AGENTS} laws (stage s served by agent s) for topology 'fork_join'",
                    st,
                )
            return
        r = self.routes
        require(
            isinstance(r, (tuple, list)) and len(r) == self.m,
            "routes",
            f"a tuple of m = {self.m} routes (one per type) for topology 'routes'",
            r,
        )
        routes = []
        for z, route in enumerate(r):
            ok = (
                isinstance(route, (tuple, list))
                and len(route) == len(self.workload[z])
                and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 0 <= k < K for k in route)
            )
            require(
                ok,
                f"routes[{z}]",
                f"a tuple of {len(self.workload[z])} agent indices in [0, {K}) (one per stage of workload[{z}])",
                route,
            )
            routes.append(tuple(int(k) for k in route))
        object.__setattr__(self, "routes", tuple(routes))
        unused = sorted(set(range(K)) - {k for route in routes for k in route})
        require(not unused, "agents", f"visited by some route (agents {unused} are not)", K)

    def _check_ignored(self) -> None:
        """Refuse an option at a non-default value that the policy or the topology ignores
        (POLICIES' and TOPOLOGY_OPTIONS' readers); identity orders are type_orders' default."""
        options = changed_fields(self, ("router", "phase_first", "inner_order"))
        identity = tuple(range(self.m))
        options += ["type_orders"] if any(o != identity for o in self.type_orders or ()) else []
        refuse_ignored(options, self.settings(), option_reads())

    def settings(self) -> dict[str, str]:
        """{setting: its value}: what `option_reads`' conditions are judged on."""
        return {"topology": self.topology, "router": self.router, "policy": self.policy}

    def _check_type_orders(self, K: int) -> None:
        m = self.m
        orders = self.type_orders
        if orders is None:
            # Kept None (not K copies of the default): a config's other fields then do not
            # depend on K, so configs of different agents can share a size bucket.
            return
        require(
            isinstance(orders, (tuple, list)) and len(orders) == K,
            "type_orders",
            f"None or a tuple of K = {K} permutations of the types 0..{m - 1}",
            orders,
        )
        checked = []
        for k, o in enumerate(orders):
            allowed = f"a permutation of the types 0..{m - 1}"
            require(isinstance(o, (tuple, list)), f"type_orders[{k}]", allowed, o)
            # Integers only: 1.0 or True would pass the permutation test and be cut to an int.
            ints = tuple(require_int(j, f"type_orders[{k}][{i}]") for i, j in enumerate(o))
            require(sorted(ints) == list(range(m)), f"type_orders[{k}]", allowed, o)
            checked.append(ints)
        object.__setattr__(self, "type_orders", tuple(checked))

    def max_table_size(self) -> int:
        """The most slots per agent `grow_table` grows Q to: the largest power of two within
        table_size's bound (2^20) and the int32 headroom (agents * Q * max_len <= INT_LIMIT)."""
        return largest_table(min(2**20, INT_LIMIT // (self.K * self.max_len)))

    @property
    def m(self) -> int:
        """Number of request types."""
        return len(self.workload)

    @property
    def K(self) -> int:
        return self.agents

    @property
    def orders(self) -> tuple[tuple[int, ...], ...]:
        """Per agent, the types from highest to lowest priority: type_orders, or 0, 1, ...
        at every agent when it is None."""
        if self.type_orders is None:
            return (tuple(range(self.m)),) * self.K
        return self.type_orders

    @property
    def num_stages(self) -> int:
        """Largest number of stages of any type."""
        return max(len(s) for s in self.workload)

    @property
    def max_len(self) -> int:
        """Largest v_p + v_d of any stage's law (tokens)."""
        return max(law.max_prompt + law.max_output for st in self.workload for law in st)

    @property
    def hist_bins(self) -> int:
        return bit_num_bins(self.hist_octave_bits)

    def laws_at(self, k: int) -> tuple:
        """The length laws of the tasks agent k can receive."""
        if self.topology == "parallel":
            return tuple(st[0] for st in self.workload)
        if self.topology == "fork_join":
            return tuple(st[k] for st in self.workload)
        return tuple(law for z, st in enumerate(self.workload) for s, law in enumerate(st) if self.routes[z][s] == k)

    def snapshot_times(self) -> np.ndarray:
        """float64[G]: the snapshot grid g_j = burn_in + j (horizon - burn_in) / G (s)."""
        G = self.snapshots
        return self.burn_in_s + np.arange(G) * (self.horizon_s - self.burn_in_s) / G

    def batch_options(self) -> BatchOptions:
        """The static options every agent's policy and batch time read (`budget.core`): the
        policy and its `wc` options; the per-agent type priorities enter as ranks
        (`NetworkParams.rank`, the `View.type` the agents' policies see), so `priority` serves
        ranks 0, 1, ... in turn; agents have no attention or memory-overhead term."""
        return BatchOptions(
            policy=self.policy,
            phase_first=self.phase_first,
            inner_order=self.inner_order,
            type_order=tuple(range(self.m)),
        )


class NetworkSizes(eqx.Module):
    """The sizes of one run padded into a larger config (a size bucket), as traced int32
    scalars: table_size Q <= config.table_size (ring slots per agent), agents K <= config.K
    (`parallel` only). Slots q >= Q of every agent and agents k >= K exist in the arrays but
    never hold a task or take an event, and enter no metric, so the run's metrics are bitwise
    those of the unpadded run (`NetworkEngine.pad`, tests/network/test_buckets.py)."""

    table_size: jnp.ndarray
    agents: jnp.ndarray


class NetworkParams(eqx.Module):
    """Traced parameters of a network run (build with `make_params`).

    agent: BudgetParams whose leaves have a leading [K] axis (agent k's budget, caps and batch
    time constants). arrival: the arrival stream's fields (a BudgetParams: rate_max,
    inv_rate_max, type_cdf, period_s, inv_period_s, fence). rank: int32 [K, m], rank[k, z] the
    priority of type z at agent k (0 highest; `priority`). route_cuts: int32 [K], the
    weighted router's cumulative cuts out of 2^24 (`weight_cuts`; equal weights unless
    router_weights is given; read by router `weighted` only).
    sizes: the run's sizes inside a size bucket (`NetworkSizes`), or None.
    """

    agent: BudgetParams
    arrival: BudgetParams
    rank: jnp.ndarray
    route_cuts: jnp.ndarray
    # The run's own sizes when it runs padded inside a size bucket (`NetworkEngine.pad`); None:
    # the config's shapes are the run's sizes. Not part of a results key: the point's config is.
    sizes: NetworkSizes | None = eqx.field(default=None, metadata={"identity": False})


def _per_agent(value, name: str, K: int) -> list:
    """K values from a scalar or a length-K sequence."""
    if isinstance(value, (list, tuple, np.ndarray)):
        v = list(np.asarray(value).tolist())
        require(len(v) == K, name, f"a number or a sequence of K = {K} numbers (one per agent)", value)
        return v
    return [value] * K


def check_weights(weights, K: int) -> tuple[float, ...]:
    """K router weights as floats: None -> K ones; otherwise a sequence of K finite numbers
    >= 0 with a positive sum (one ConfigError naming router_weights)."""
    if weights is None:
        return (1.0,) * K
    allowed = f"a sequence of K = {K} finite numbers >= 0 (one per agent) with a positive sum"
    ok = isinstance(weights, (list, tuple, np.ndarray)) and np.ndim(weights) == 1 and len(weights) == K
    require(ok, "router_weights", allowed, weights)
    w = tuple(require_float(x, f"router_weights[{k}]", lo=0.0) for k, x in enumerate(weights))
    require(sum(w) > 0, "router_weights", allowed, weights)
    return w


def weight_cuts(weights: tuple[float, ...]) -> np.ndarray:
    """int32 [K]: c_k = floor(2^24 (w_0 + ... + w_k) / sum(w)), in exact rational arithmetic
    on the float64 weights (so c_{K-1} = 2^24 and a zero weight repeats the previous cut); the
    weighted router picks the first k with r < c_k for its 24-bit draw r."""
    total = sum(Fraction(x) for x in weights)
    cuts, acc = [], Fraction(0)
    for x in weights:
        acc += Fraction(x)
        cuts.append(math.floor(acc * 2**ROUTE_BITS / total))
    return np.asarray(cuts, np.int32)


def capacities(config: NetworkConfig, params: NetworkParams) -> np.ndarray:
    """float64[K]: each agent's token capacity b_k / t_b,k (tokens/s)."""
    a = params.agent
    b = np.asarray(a.budget, np.float64)
    c = np.asarray(a.c_s, np.float64)
    slope = np.asarray(a.a_hi, np.float64) + np.asarray(a.a_lo, np.float64)
    b0 = np.asarray(a.b0, np.float64)
    return b / (c + slope * np.maximum(0.0, b - b0))


def stage_work(config: NetworkConfig) -> np.ndarray:
    """float64[m, K]: mean tokens (m_p + m_d) type z brings to agent k per request (`parallel`:
    a request's whole work at every agent; the router splits it)."""
    W = np.zeros((config.m, config.K))
    for z, st in enumerate(config.workload):
        for s, law in enumerate(st):
            mean = mean_lengths(_cfg((law,))).sum()
            if config.topology == "parallel":
                W[z, :] += mean
            elif config.topology == "fork_join":
                W[z, s] += mean
            else:
                W[z, config.routes[z][s]] += mean
    return W


def agent_loads(config: NetworkConfig, rates, caps) -> np.ndarray:
    """float64[K]: offered load per agent, sum_z lambda_z work[z, k] / capacity_k (`routes`,
    `fork_join`),
    or the total work over the total capacity K b / t_b at every agent (`parallel`, eq. (4.1)),
    at the time-averaged rates ([m] or [P, m] requests/s)."""
    r = np.atleast_2d(np.asarray(rates, float)).mean(axis=0)
    work = r @ stage_work(config)
    caps = np.asarray(caps, float)
    if config.topology == "parallel":
        return np.full(config.K, work[0] / caps.sum())
    return work / caps


def rates_for_load(config: NetworkConfig, load: float, caps, weights=None) -> np.ndarray:
    """(m,) requests/s, split over the types by `weights` (default equal), at which the most
    loaded agent has offered load `load`."""
    w = np.full(config.m, 1.0 / config.m) if weights is None else np.asarray(weights, float)
    return w * load / agent_loads(config, w, caps).max()


def steps_needed(config: NetworkConfig, mean_rate: float, min_batch: np.ndarray) -> int:
    """Events a run may need to reach its horizon: two per batch (decision, flush) at the
    shortest batch of each agent, and per arrival a candidate, a wake-up and its stages' flush
    and decision, +10%."""
    arrivals = mean_rate * config.horizon_s
    if config.num_requests is not None:
        arrivals = min(arrivals, config.num_requests)
    batches = float(np.sum(config.horizon_s / np.asarray(min_batch)))
    return int(math.ceil(1.1 * (2 * batches + (2 + config.num_stages) * arrivals) + 16))


def make_params(
    config: NetworkConfig,
    *,
    rates=None,
    budget=DEFAULT_BUDGET,
    max_requests=DEFAULT_MAX_REQUESTS,
    prefill_cap=None,
    K_p=None,
    K_d=None,
    c_s=DEFAULT_C_S,
    a_s_per_token=DEFAULT_A_S_PER_TOKEN,
    b0=DEFAULT_B0,
    period_s: float = 1.0,
    router_weights=None,
) -> NetworkParams:
    """Validated NetworkParams. Per-agent keywords (budget, max_requests, prefill_cap, K_p, K_d,
    c_s, a_s_per_token, b0) take one value for every agent or a sequence of K; their meaning
    and ranges are the budget engine's (`jaxsched.budget.make_params`). rates: [m] or [P, m]
    requests/s; None: equal rates at which the most loaded agent has load DEFAULT_LOAD = 0.85.
    router_weights: router `weighted` only (refused with any other router or topology), K
    weights >= 0 with a positive sum, scale-free (None: equal); traced, so candidates with
    different weights share one compiled program.
    """
    require(
        isinstance(config, NetworkConfig),
        "config",
        "a NetworkConfig (network.make_params builds the network engine's params)",
        type(config).__name__,
    )
    K = config.K
    given = changed_keywords(make_params, dict(router_weights=router_weights))
    refuse_ignored(given, config.settings(), option_reads())
    cuts = jnp.asarray(weight_cuts(check_weights(router_weights, K)))
    keys = dict(
        budget=budget,
        max_requests=max_requests,
        prefill_cap=prefill_cap,
        K_p=K_p,
        K_d=K_d,
        c_s=c_s,
        a_s_per_token=a_s_per_token,
        b0=b0,
    )
    per = {name: _per_agent(v, name, K) for name, v in keys.items()}
    agents, t1 = [], []
    for k in range(K):
        # Validated by the budget engine on the laws agent k serves; its stream and step
        # bound are the network's, so they are given neutral values here.
        cfg = _cfg(config.laws_at(k), policy=config.policy, horizon_s=config.horizon_s)
        kw = {name: per[name][k] for name in keys}
        try:
            pk = budget_params(cfg, rates=[1.0] * cfg.m, **kw)
        except ConfigError as e:
            raise ConfigError(f"agent {k}: {e}") from None
        # The per-agent stream fields are unused (the network has one stream, `arrival`); a
        # fixed shape lets agents serving different numbers of laws stack.
        agents.append(eqx.tree_at(lambda p: p.type_cdf, pk, jnp.ones((1, 1), jnp.float32)))
        t1.append(min_batch_s(float(kw["c_s"]), float(kw["a_s_per_token"]), int(kw["b0"])))
    agent = jax.tree.map(lambda *xs: jnp.stack(xs), *agents)
    if rates is None:
        bare = NetworkParams(agent, agent, jnp.zeros((K, config.m), jnp.int32), cuts)
        rates = rates_for_load(config, DEFAULT_LOAD, capacities(config, bare))
    r = check_rates(rates, config.m)
    stream_cfg = _cfg(
        tuple(st[0] for st in config.workload), horizon_s=config.horizon_s, num_requests=config.num_requests
    )
    arrival = budget_params(stream_cfg, rates=r, period_s=period_s)
    need = steps_needed(config, float(r.sum(axis=1).mean()), np.asarray(t1))
    require(
        config.max_steps >= need,
        "max_steps",
        f">= {need} (two events per batch at each agent's shortest batch and per arrival "
        "a candidate, a wake-up and its stages, +10%), or the run cannot reach its horizon",
        config.max_steps,
    )
    rank = np.zeros((K, config.m), np.int32)
    for k, order in enumerate(config.orders):
        rank[k, list(order)] = np.arange(config.m)
    return NetworkParams(agent=agent, arrival=arrival, rank=jnp.asarray(rank), route_cuts=cuts)


def enough_steps(config: NetworkConfig, rates, **agent_kw) -> NetworkConfig:
    """`config` with max_steps = `steps_needed` for `rates` and the per-agent batch-time
    keywords (c_s, a_s_per_token, b0) of make_params."""
    r = check_rates(rates, config.m)
    K = config.K
    c = _per_agent(agent_kw.get("c_s", DEFAULT_C_S), "c_s", K)
    a = _per_agent(agent_kw.get("a_s_per_token", DEFAULT_A_S_PER_TOKEN), "a_s_per_token", K)
    b0 = _per_agent(agent_kw.get("b0", DEFAULT_B0), "b0", K)
    t1 = np.asarray([min_batch_s(float(c[k]), float(a[k]), int(b0[k])) for k in range(K)])
    need = steps_needed(config, float(r.sum(axis=1).mean()), t1)
    return dataclasses.replace(config, max_steps=need)


__all__ = [
    "NetworkConfig",
    "NetworkParams",
    "make_params",
    "enough_steps",
    "agent_loads",
    "rates_for_load",
    "capacities",
    "check_weights",
    "weight_cuts",
    "option_reads",
    "stage_work",
    "batch_time_s",
    "TOPOLOGIES",
    "ROUTERS",
]
