"""Runner of the WAIT paper's experiments E1-E4 on the kv engine (docs/kv-semantics.md).

Every experiment (`setups.EXPERIMENTS`) runs for each registered policy (`jaxsched.kv.POLICIES`,
in `POLICY_ORDER` first, then any other) at each load, capacity rule and batch limit, and
returns tidy rows: one per (load, C, B, policy) with the mean and 95% CI half-width over seeds
of each metric. Measured results: docs/kv-experiments.md.

Steady-state rows (the default): N = K + window + K requests per seed ("drain" end mode,
notes/001.md §7 item 7) with K and the window from `setups.steady_plan`; the engine's
measurement window (`make_params(burn_in_requests=K)`, docs §8) gives the throughput over the
window (no warm-up, no drain) and the latency of the window's requests; `settling` checks that
the queue stopped growing. `throughput_ratio` reports thr / throughput* (8): about 1 for a
policy that keeps up with the load, below 1 for one that does not.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from typing import Callable, Sequence

import numpy as np

from ...buckets import simulate_buckets
from ...errors import require, require_bool, require_float, require_int
from ...stats import mean_ci
from ..config import INT_LIMIT, KVConfig, make_params
from ..engine import pad_runs
from ..fluid import FluidTypes, equilibrium
from ..metrics import settling, stability_issues
from ..registry import POLICIES
from .setups import (
    CAPACITY_RULES,
    EXPERIMENTS,
    HARDWARE,
    POLICY_LABELS,
    POLICY_ORDER,
    Hardware,
    KVExperiment,
    SteadyPlan,
    capacity_for,
    steady_plan,
    thresholds_for,
)


def registered_policies(requested: Sequence[str] | None = None) -> list[str]:
    """Policies to run: `requested` (each must be registered) or every registered one, in
    POLICY_ORDER first. Raises ConfigError naming an unknown policy."""
    names = [p for p in POLICY_ORDER if p in POLICIES] + sorted(set(POLICIES) - set(POLICY_ORDER))
    if requested is None:
        return names
    requested = _sequence(requested, "policies", f"names among {tuple(names)}")
    for p in requested:
        require(isinstance(p, str) and p in POLICIES, "policies", f"names among {tuple(names)}", p)
    return list(requested)


def _sequence(value, field: str, allowed: str) -> tuple:
    """A non-empty list or tuple (a string is one value, not a sequence of characters: an empty
    grid or a string would otherwise run nothing or iterate over letters)."""
    require(
        isinstance(value, (list, tuple, range, np.ndarray)) and len(value) >= 1,
        field,
        f"a non-empty sequence of {allowed}",
        value,
    )
    return tuple(value)


def _sizes(exp: KVExperiment, types: FluidTypes, n_req: int, horizon_s: float, hw: Hardware) -> dict:
    """Initial table size Q and max_steps for a run of n_req requests ending by horizon_s
    (the table then grows while arrivals are lost, `_run_growing_table`)."""
    eq = equilibrium(types)
    in_flight = float(eq.active.sum())
    q = 1 << int(math.ceil(math.log2(max(256.0, 4.0 * in_flight + 64))))
    q = min(q, 1 << 14)
    while q * max(l + d for l, d in zip(exp.prefill, exp.decode)) > 2**30:
        q //= 2
    # Every batch lasts at least d0; an epoch without a batch inserts at least one arrival.
    epochs = int(2 * horizon_s / hw.d0_s) + n_req + 4096
    return dict(table_size=q, max_steps=min(epochs, 2**30 - 1), arrivals_per_step=64)


def mean_half_width(values: np.ndarray) -> tuple[float, float]:
    """(mean, half-width of its 95% CI) of per-seed values [S] (`jaxsched.stats.mean_ci`)."""
    m, _, half, _ = mean_ci(values)
    return m, half


# Largest request table the runner grows to (slots); beyond it a lossy row is marked invalid.
TABLE_LIMIT = 1 << 16
# A run stops at the mean time of its last arrival plus this many relaxation times (assumed):
# a stable system has drained long before, a queue that keeps growing is cut off here.
DRAIN_RELAX = 2.0
# Times a row's burn-in (and cool-down) doubles while its queue grew over the window's first
# half only (the policy settles more slowly than the fluid relaxation time says).
BURN_IN_DOUBLINGS = 2

_METRIC_KEYS = tuple(
    k + suf for k in ("throughput", "latency_mean", "latency_p99", "ttft_mean", "ttft_p99") for suf in ("", "_ci")
)


def overload(policy: str, types: FluidTypes, batch_limit: int | None) -> str:
    """Why a per-iteration limit cannot carry the load ("" when none is short). Every iteration
    lasts at least d0 and a stable run spends d1 A = rho of each second on KV work, so at most
    (1 - rho) / d0 iterations run per second; a limit of X units per iteration against a
    demand of D units/s then needs d0 D / X + rho < 1. Limits: the batch limit B (units:
    request-stages, D = sum_j lambda_j (l'_j + 1)); sarathi's chunk budget (prefill tokens,
    D = sum_j lambda_j l_j); vllm's max_tokens_in_batch (admissions times the longest prompt,
    D = Lambda max_j l_j). Necessary conditions only: a policy may be unstable for other
    reasons (`settling` reports those)."""
    defaults = inspect.signature(make_params).parameters
    limits = []
    if batch_limit is not None:
        limits.append(
            ("the batch limit B", batch_limit, float(np.dot(types.rates, types.decode + 1)), "request-stages")
        )
    if policy == "sarathi":
        limits.append(
            (
                "the chunk budget",
                defaults["chunk_size"].default,
                float(np.dot(types.rates, types.prefill)),
                "prefill tokens",
            )
        )
    if policy == "vllm":
        limits.append(
            (
                "max_tokens_in_batch",
                defaults["max_tokens_in_batch"].default,
                types.total_rate * float(types.prefill.max()),
                "prompt tokens",
            )
        )
    for what, per_iter, demand, unit in limits:
        busy = types.d0 * demand / per_iter + types.d1 * types.work
        if busy >= 1.0:
            return (
                f"overloaded by {what}: d0 D / X + rho = {busy:.2f} >= 1 (X = {per_iter} "
                f"{unit} per iteration, D = {demand:.4g} {unit}/s)"
            )
    return ""


def run_point(
    exp: KVExperiment,
    policy: str,
    load: float,
    seeds: Sequence[int],
    n_req: int,
    hw: Hardware = HARDWARE,
    table_limit: int = TABLE_LIMIT,
    batch_limit: int | None = None,
    prefill_price: float | None = None,
    capacity: str = "mstar",
    steady: bool = True,
) -> dict:
    """One (policy, load, B, C) point over `seeds`: a tidy row (means and 95% CI half-widths).

    capacity: the rule for C (`setups.CAPACITY_RULES`). steady: a steady-state row
    (`setups.steady_plan`: K requests of burn-in and of cool-down around a window of at least
    n_req measured requests, throughput over the window, latency over the measured requests,
    a horizon of the last arrival plus DRAIN_RELAX relaxation times); False: n_req requests,
    all measured, run to the end (throughput over the whole run, drain included).
    batch_limit: requests per batch for every policy (None: uncapped); the Vidur policies' own
    request cap `batch_size_cap` follows it, so the limit is the same for all.
    prefill_price: a prefill token (first prefills and restarts) costs this many times d1
    (KVConfig.prefill_price); None: eq. (1), every token at d1.

    `status`: "ok"; "infeasible" (the policy has no thresholds meeting its memory condition
    within C: not run); "overloaded" (`overload`: a per-iteration limit cannot carry the load;
    run on the short plan `overloaded_plan`); "unsettled" (`jaxsched.kv.metrics.settling`: the
    queue was still growing, or measured requests did not complete; rerun on the short plan
    when its table lost arrivals); "invalid" (arrivals lost to the table beyond `table_limit`
    slots, or seeds not finished). `issues` says why; `dropped_arrivals` counts the losses.
    `wall_s`: the point's share of the wall time of the batched calls that ran it
    (`run_experiment` runs its points together, `_run_points`).
    """
    return _run_points(
        exp, [(policy, load, batch_limit, capacity)], seeds, n_req, hw, table_limit, prefill_price, steady
    )[0]


@dataclasses.dataclass
class _Point:
    """One point in flight (`_run_points`): its row so far, the fluid types, thresholds, plan
    and latest run. stage: "doubling" (the burn-in may double, `doublings` times so far),
    "fallback" (the short plan may replace it), "done"."""

    row: dict
    policy: str
    types: FluidTypes
    th: tuple | None
    plan: SteadyPlan
    short: bool
    over: str
    lifetime: float
    batch_limit: int | None
    hw: Hardware
    stage: str = "doubling"
    doublings: int = 0
    cfg: KVConfig | None = None
    met: dict | None = None
    horizon: float | None = None
    wall_s: float = 0.0


def _setup_point(
    exp, policy, load, batch_limit, capacity, seeds, n_req, hw, table_limit, prefill_price, steady
) -> _Point | dict:
    """A point's row before it runs and its first plan (a `_Point`), or the finished row of a
    point that does not run (infeasible)."""
    C, c_rule = capacity_for(exp, load, capacity, hw)
    hw = dataclasses.replace(hw, capacity_tokens=C)
    types = exp.types(load, hw)
    eq = equilibrium(types)
    th, rule = thresholds_for(exp, policy, types)
    plan = steady_plan(exp, load, n_req, hw) if steady else SteadyPlan(float("nan"), 0, n_req)
    over = overload(policy, types, batch_limit)
    row = dict(
        experiment=exp.name,
        policy=policy,
        label=POLICY_LABELS.get(policy, policy),
        load=load,
        rate_total_req_s=float(types.total_rate),
        batch_limit="none" if batch_limit is None else batch_limit,
        capacity_rule=c_rule,
        capacity_tokens=C,
        prefill_price="eq1" if prefill_price is None else prefill_price,
        seeds=len(seeds),
        num_requests=plan.num_requests,
        burn_in_requests=plan.burn_in,
        window_requests=plan.window,
        relax_s=plan.relax_s,
        thresholds=" ".join(map(str, th)) if th else "-",
        rule=rule,
        fluid_throughput=eq.throughput,
        fluid_memory_tokens=eq.memory,
    )
    if th is None and "thresholds" in POLICIES[policy].options:
        # Not runnable here (e.g. WAIT's M^pi > C for every integer threshold): a row of nans.
        nan = math.nan
        row.update(
            {k: nan for k in _METRIC_KEYS},
            throughput_ratio=nan,
            peak_memory_tokens=nan,
            mean_memory_tokens=nan,
            preemptions=nan,
            overflows=nan,
            queue_growth=nan,
            queue_growth_ci=nan,
            queue_growth_first_half=nan,
            horizon_s=nan,
            table_size=0,
            dropped_arrivals=0.0,
            status="infeasible",
            issues=rule,
            wall_s=0.0,
        )
        return row
    lifetime = plan.relax_s * (1.0 - load) * types.total_rate  # arrivals per fluid lifetime
    short = steady and bool(over)
    if short:
        plan = overloaded_plan(plan, lifetime, n_req, table_limit)
    return _Point(row, policy, types, th, plan, short, over, lifetime, batch_limit, hw)


def _advance(p: _Point, steady: bool, n_req: int, table_limit: int) -> bool:
    """After a run of `p`: whether it runs again, with its plan changed for that run."""
    if p.stage == "doubling":
        if p.doublings < BURN_IN_DOUBLINGS and steady and not p.short and _settled_late(p.met, p.plan.window):
            # The queue settled within the window, not before it: a longer burn-in (and cool-down).
            p.doublings += 1
            p.plan = dataclasses.replace(p.plan, burn_in=2 * p.plan.burn_in)
            return True
        p.stage = "fallback"
    if p.stage == "fallback":
        p.stage = "done"
        met, cfg = p.met, p.cfg
        if (
            steady
            and not p.short
            and met["table_overflow"].any()
            and _keeps_growing(met, p.plan.window, cfg.table_size)
        ):
            # A queue that keeps growing fills any table: rerun on the short plan, whose table
            # holds every arrival, instead of reporting losses.
            p.plan, p.short = overloaded_plan(p.plan, p.lifetime, n_req, table_limit), True
            return True
    return False


def _finish_point(p: _Point, steady: bool) -> dict:
    """The row of a point whose last run is done."""
    row, plan, met, cfg, horizon, over = p.row, p.plan, p.met, p.cfg, p.horizon, p.over
    row["wall_s"] = p.wall_s
    row.update(
        num_requests=plan.num_requests,
        burn_in_requests=plan.burn_in,
        window_requests=plan.window,
        horizon_s=horizon or math.nan,
        table_size=cfg.table_size,
        dropped_arrivals=float(met["table_overflow"].sum()),
    )
    _fill_metrics(row, met, row["fluid_throughput"], steady)
    growth, growth_ci, first, unsettled = settling(met, plan.window)
    row.update(queue_growth=growth, queue_growth_ci=growth_ci, queue_growth_first_half=first)
    invalid = stability_issues(met, None if steady else plan.num_requests)
    if steady:  # the horizon cuts what a growing queue leaves: `settling` reports it
        invalid = [i for i in invalid if "not completed" not in i]
    if over:
        row["status"], issues = "overloaded", [over] + unsettled + invalid
    elif unsettled:
        row["status"], issues = "unsettled", unsettled + invalid
    else:
        row["status"], issues = ("invalid" if invalid else "ok"), invalid
    row["issues"] = "; ".join(issues)
    return row


def _run_points(
    exp: KVExperiment,
    specs: Sequence[tuple],
    seeds: Sequence[int],
    n_req: int,
    hw: Hardware,
    table_limit: int,
    prefill_price: float | None,
    steady: bool,
    report: Callable[[dict], None] | None = None,
) -> list[dict]:
    """The rows of `specs`, (policy, load, batch_limit, capacity) points, as `run_point` makes
    each, with every round of runs batched: all points run their first plan together, then the
    points whose rule asks for another run (a doubled burn-in, the short plan) run it together,
    and so on; each round goes through `_run_growing_tables`, which shares compiled programs
    among points (`jaxsched.kv.engine.pad_runs`). A run's metrics do not depend on the runs it
    shares a program with, so the rows are those of the points run one by one. report: called
    with each finished row (infeasible rows first)."""
    rows: list = [None] * len(specs)
    live: list[tuple[int, _Point]] = []
    for i, (policy, load, batch_limit, capacity) in enumerate(specs):
        p = _setup_point(exp, policy, load, batch_limit, capacity, seeds, n_req, hw, table_limit, prefill_price, steady)
        if isinstance(p, dict):
            rows[i] = p
            if report is not None:
                report(p)
        else:
            live.append((i, p))
    seeds = list(seeds)
    # The buckets' max_steps is the largest of every run these points may make (their plans
    # ahead, `_ahead`), so that a round meets the bucket configs of the rounds before and reuses
    # their compiled programs where the shapes agree. A run still stops at its own max_steps.
    max_steps = max(
        (
            _plan_config(exp, p, plan, short, prefill_price)[0].max_steps
            for _, p in live
            for plan, short in _ahead(p, steady, n_req, table_limit)
        ),
        default=None,
    )
    while live:
        _run_plans(exp, [p for _, p in live], seeds, prefill_price, table_limit, max_steps)
        again = []
        for i, p in live:
            if _advance(p, steady, n_req, table_limit):
                again.append((i, p))
            else:
                rows[i] = _finish_point(p, steady)
                if report is not None:
                    report(rows[i])
        live = again
    return rows


def _settled_late(met: dict, window: int) -> bool:
    """The queue grew over the window's first half only (`settling`)."""
    return any("first half" in i for i in settling(met, window)[3])


def _keeps_growing(met: dict, window: int, table_size: int) -> bool:
    """The run did not keep up (`settling` over its window of `window` requests), or its table
    was nearly full when the window closed (a full table flattens the measured growth)."""
    return bool(settling(met, window)[3]) or bool(np.mean(met["in_system_close"]) >= 0.9 * table_size)


def overloaded_plan(plan: SteadyPlan, lifetime_requests: float, n_req: int, limit: int) -> SteadyPlan:
    """The plan of a row whose queue grows without bound, run on a table that holds every
    arrival (`_run_plans`). No steady state to wait for: a burn-in of two fluid request lifetimes
    of arrivals (lifetime_requests each; the start-up transient), a window of four lifetimes
    and at least n_req requests, so the window throughput is the policy's service rate and not
    a start-up transient; cut to fit `limit` slots (burn-in at most limit / 4)."""
    burn = int(math.ceil(2 * lifetime_requests))
    window = max(int(n_req), int(math.ceil(4 * lifetime_requests)))
    if 2 * burn + window > limit:
        burn = min(burn, limit // 4)
        window = limit - 2 * burn
    return SteadyPlan(plan.relax_s, burn, window)


def _run_plans(
    exp: KVExperiment,
    points: list[_Point],
    seeds: list[int],
    prefill_price: float | None,
    table_limit: int,
    max_steps: int | None = None,
) -> None:
    """Run every point's plan, all in one `_run_growing_tables` call (buckets of at least
    `max_steps` epochs); sets each point's config run, per-seed metrics and horizon (s, or
    None) and adds its share of the wall time.

    Steady plans (relax_s finite) stop at the mean time of the last arrival plus DRAIN_RELAX
    relaxation times, a short plan (`overloaded_plan`) at the last arrival, with a table of at
    least N slots (no arrival can be lost); the others grow their table while arrivals are lost
    (`_run_growing_table`). Plans without relax_s run to the end (finite N, drained)."""
    jobs, horizons = [], []
    for p in points:
        cfg, params, horizon = _plan_run(exp, p, p.plan, p.short, prefill_price)
        steady = math.isfinite(p.plan.relax_s)
        jobs.append((cfg, params, cfg.table_size if p.short else table_limit, p.plan.window if steady else 0))
        horizons.append(horizon)
    for p, horizon, (cfg, met, wall) in zip(points, horizons, _run_growing_tables(jobs, seeds, max_steps)):
        p.cfg, p.met, p.horizon = cfg, met, horizon
        p.wall_s += wall


def _plan_run(exp: KVExperiment, p: _Point, plan: SteadyPlan, short: bool, prefill_price: float | None):
    """(config, params, horizon in s or None) of the run of `plan` at point `p` (see
    `_run_plans`)."""
    cfg, horizon = _plan_config(exp, p, plan, short, prefill_price)
    return cfg, _plan_params(p, cfg, plan, prefill_price), horizon


def _plan_config(exp: KVExperiment, p: _Point, plan: SteadyPlan, short: bool, prefill_price: float | None):
    """(config, horizon in s or None) of the run of `plan` at point `p` (see `_run_plans`)."""
    types = p.types
    eq = equilibrium(types)
    arrivals_s = plan.num_requests / types.total_rate
    steady = math.isfinite(plan.relax_s)
    horizon = (arrivals_s if short else arrivals_s + DRAIN_RELAX * plan.relax_s) if steady else None
    sizes = _sizes(
        exp,
        types,
        plan.num_requests,
        horizon or 5 * arrivals_s + 20.0 * (max(exp.decode) + 1) * eq.iteration_time,
        p.hw,
    )
    if short:
        sizes["table_size"] = 1 << max(
            int(math.ceil(math.log2(plan.num_requests))), int(math.log2(sizes["table_size"]))
        )
    cfg = KVConfig(
        prefill_tokens=exp.prefill,
        decode_tokens=exp.decode,
        policy=p.policy,
        num_requests=plan.num_requests,
        horizon_s=horizon,
        prefill_price=prefill_price is not None,
        **sizes,
    )
    return cfg, horizon


def _ahead(p: _Point, steady: bool, n_req: int, table_limit: int) -> list[tuple[SteadyPlan, bool]]:
    """Every (plan, short) that `p` may run (`_advance`): its first plan, its doubled burn-ins
    and the short plan."""
    plans = [(p.plan, p.short)]
    if steady and not p.short:
        plans += [
            (dataclasses.replace(p.plan, burn_in=p.plan.burn_in << k), False) for k in range(1, BURN_IN_DOUBLINGS + 1)
        ]
        plans.append((overloaded_plan(p.plan, p.lifetime, n_req, table_limit), True))
    return plans


def _plan_params(p: _Point, cfg: KVConfig, plan: SteadyPlan, prefill_price: float | None):
    """The params of `cfg`, the run of `plan` at point `p`."""
    types, hw, policy, batch_limit = p.types, p.hw, p.policy, p.batch_limit
    caps = dict(batch_limit=batch_limit)
    if prefill_price is not None:
        caps["d1_prefill_s_per_token"] = require_float(prefill_price, "prefill_price", lo=0.0) * hw.d1_s_per_token
    if "batch_size_cap" in POLICIES[policy].options:
        caps["batch_size_cap"] = INT_LIMIT if batch_limit is None else batch_limit
    return make_params(
        cfg,
        rates=types.rates,
        d0_s=hw.d0_s,
        d1_s_per_token=hw.d1_s_per_token,
        capacity_tokens=hw.capacity_tokens,
        thresholds=p.th,
        burn_in_requests=plan.burn_in,
        **caps,
    )


def _fill_metrics(row: dict, met: dict, fluid_throughput: float, steady: bool) -> None:
    """Means and CI half-widths of a run's per-seed metrics into `row`."""
    thr = "window_throughput_tokens_per_s" if steady else "throughput_tokens_per_s"
    for key, col in (
        ("throughput", thr),
        ("latency_mean", "latency_mean_s"),
        ("latency_p99", "latency_p99_s"),
        ("ttft_mean", "ttft_mean_s"),
        ("ttft_p99", "ttft_p99_s"),
    ):
        row[key], row[key + "_ci"] = mean_half_width(met[col])
    row["throughput_ratio"] = row["throughput"] / fluid_throughput
    row["peak_memory_tokens"] = float(met["peak_memory_tokens"].max())
    row["mean_memory_tokens"] = float(met["mean_memory_tokens"].mean())
    row["preemptions"] = float(met["preemption_count"].mean())
    row["overflows"] = float(met["overflow_count"].mean())


def _run_growing_table(cfg: KVConfig, params, seeds: list[int], table_limit: int, window: int = 0):
    """Run, and while arrivals find the request table full, double the table and run again (up
    to `table_limit` slots and the int32 bound on Q * max footprint): the table is sized from
    the policy's real occupancy, not the fluid estimate. Returns (config run, metrics); a run
    that still loses arrivals at the limit, or whose queue keeps growing (`settling` over a
    measured window of `window` requests; 0: not checked), is returned as it is."""
    cfg, met, _ = _run_growing_tables([(cfg, params, table_limit, window)], seeds)[0]
    return cfg, met


# Size buckets of the experiments' runs (`jaxsched.kv.engine.pad_runs`): runs of one table size
# share programs across their N, horizon and max_steps, and tables never pad (None; a number X:
# a run joins a bucket of a larger table doing at most X times its per-epoch work). A larger
# table costs its work on every epoch of the runs it takes in, and the experiments' tables
# differ by 2x and more, so it saves compilations and costs simulation: on two busy CPU cores
# (one run each) X = 2 took the quick E1 from 14 to 10 programs at 99 against 103 CPU s, and
# the quick E2 from 9 to 7 programs at 57 against 52 CPU s.
BUCKET_WASTE: float | None = None


def _run_growing_tables(
    jobs: list[tuple], seeds: list[int], max_steps: int | None = None
) -> list[tuple[KVConfig, dict, float]]:
    """`_run_growing_table` of every job, (config, params, table_limit, window), in rounds: each
    round runs the jobs still growing through size buckets (`_simulate`, buckets of at least
    `max_steps` epochs), the first round all of them, the next ones those that lost arrivals,
    on their doubled tables. Returns (config run, metrics, share of the wall time in s) per
    job."""
    cfgs = [j[0] for j in jobs]
    out: list = [None] * len(jobs)
    wall = [0.0] * len(jobs)
    todo = list(range(len(jobs)))
    while todo:
        results = _simulate([(cfgs[i], jobs[i][1]) for i in todo], seeds, max_steps)
        grow = []
        for i, res in zip(todo, results):
            cfg, met, (_, _, table_limit, window) = cfgs[i], res.metrics, jobs[i]
            wall[i] += res.wall_s
            bigger = 2 * cfg.table_size
            # A queue that keeps growing fills any table: its losses are not chased (the caller
            # reruns such a row on a table that holds every arrival).
            growing = window > 0 and _keeps_growing(met, window, cfg.table_size)
            if not met["table_overflow"].any() or bigger > table_limit or growing or bigger * cfg.max_len > 2**30:
                out[i] = (cfg, met, wall[i])
            else:
                cfgs[i] = dataclasses.replace(cfg, table_size=bigger)
                grow.append(i)
        todo = grow
    return out


def _simulate(runs: list[tuple], seeds: list[int], max_steps: int | None = None) -> list:
    """`jaxsched.run.simulate` of every (config, params) of `runs` over `seeds`, the runs that
    differ only in their N, horizon or max_steps (and their table, as BUCKET_WASTE allows)
    sharing compiled programs (`pad_runs` with buckets of at least `max_steps` epochs, one
    `simulate_buckets` call): bitwise each run's own results."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # reported in the row instead
        return simulate_buckets(pad_runs(runs, BUCKET_WASTE, max_steps), seeds, max_waste=None)


def run_experiment(
    name: str,
    *,
    quick: bool = False,
    seeds: int | None = None,
    policies: Sequence[str] | None = None,
    hw: Hardware = HARDWARE,
    loads: Sequence[float] | None = None,
    num_requests: int | None = None,
    batch_limits: Sequence[int | None] | None = None,
    capacities: Sequence[str] | None = None,
    prefill_price: float | None = None,
    steady: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[dict]:
    """Rows of experiment `name` ("e1".."e4"), one per (load, C rule, B, policy), policies as
    `registered_policies(policies)`, at every batch limit of `batch_limits` and capacity rule
    of `capacities` (defaults: the experiment's). quick: the reduced loads, batch limits, C
    rules, window and seeds. num_requests: the least measured window (requests). steady,
    prefill_price: see `run_point`. progress: a `jaxsched.progress.Progress` bar, or a
    callable given one line per finished point."""
    require(isinstance(name, str) and name in EXPERIMENTS, "experiment", f"one of {tuple(EXPERIMENTS)}", name)
    require_bool(quick, "quick")
    require_bool(steady, "steady")
    require(isinstance(hw, Hardware), "hw", "a Hardware(d0_s, d1_s_per_token, capacity_tokens)", hw)
    require(progress is None or callable(progress), "progress", "None or a callable", progress)
    exp = EXPERIMENTS[name]
    pols = registered_policies(policies)
    n_seeds = require_int(
        seeds if seeds is not None else (exp.quick_seeds if quick else exp.seeds), "seeds", lo=1, hi=4096
    )
    n_req = require_int(
        num_requests if num_requests is not None else (exp.quick_requests if quick else exp.num_requests),
        "num_requests",
        lo=1,
    )
    grid = (
        _sequence(loads, "loads", "loads rho in (0, 1)")
        if loads is not None
        else (exp.quick_loads if quick else exp.loads)
    )
    for load in grid:
        exp.rates(load, hw)  # validates the load before anything runs
    if prefill_price is not None:
        require_float(prefill_price, "prefill_price", lo=0.0)
    limits = (
        _sequence(batch_limits, "batch_limits", "integers >= 1 or None (uncapped)")
        if batch_limits is not None
        else (exp.quick_batch_limits if quick else exp.batch_limits)
    )
    for b in limits:
        if b is not None:
            require_int(b, "batch_limits", lo=1)
    rules = (
        _sequence(capacities, "capacities", f"rules among {tuple(CAPACITY_RULES)}")
        if capacities is not None
        else (exp.quick_capacities if quick else exp.capacities)
    )
    for c in rules:
        require(isinstance(c, str) and c in CAPACITY_RULES, "capacities", f"rules among {tuple(CAPACITY_RULES)}", c)
    report = report_to(progress, len(grid) * len(rules) * len(limits) * len(pols))
    specs = [(pol, load, b, c) for load in grid for c in rules for b in limits for pol in pols]
    return _run_points(
        exp,
        specs,
        range(n_seeds),
        n_req,
        hw,
        TABLE_LIMIT,
        prefill_price,
        steady,
        lambda row: report(_progress_line(name, row)),
    )


def report_to(progress, total: int) -> Callable[[str], None]:
    """A per-point reporter: a `Progress` bar (its total set to `total`, each line written
    above it), a plain callable of one line, or nothing. Called once per experiment before its
    first point, `total` counted from the experiment's own grid."""
    from ...progress import Progress

    if isinstance(progress, Progress):
        progress.set_total(total)
        progress.update(0)  # the bar appears before the first point compiles

        def report(line: str) -> None:
            progress.write(line)
            progress.advance(1)

        return report
    return progress if progress is not None else (lambda line: None)


def _progress_line(name: str, r: dict) -> str:
    return (
        f"{name} {r['policy']} rho={r['load']} C={r['capacity_tokens']} "
        f"B={r['batch_limit']}: thr {r['throughput']:.4g} tok/s, latency "
        f"{r['latency_mean']:.4g} s, {r['status']} ({r['wall_s']:.1f} s)"
    )
