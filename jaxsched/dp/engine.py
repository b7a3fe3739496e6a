"""The dp engine: G data-parallel decode workers with B sticky slots each, behind a barrier.

Pure functions in the gymnax style: `init(config, params, seed) -> state` and
`step(config, params, state) -> (state, out)`; a run is `lax.scan(step)`; seeds are `vmap`ped
(see jaxsched.run). The exact semantics (step order, measurement points, ties) are in
docs/dp-semantics.md; tests/reference/dp.py is the plain-Python oracle for them.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from .. import rng
from ..accumulate import Kahan, WideInt
from ..engine import Engine
from ..errors import ConfigError, require
from ..histogram import log_bins
from ..kernels import count_bits, fused_sums, ordered_mean, ordered_sum, select_bit, window_weights
from .config import DELAY_MAX_S, DELAY_MIN_S, DPConfig, DPParams, DPSizes, make_params
from .energy import utilization, utilization_power_w
from .metrics import METRICS, finalize
from .policies import Observation
from .registry import POLICIES
from .state import Clock, DPState, Pool, Slots, Totals, Window
from .timing import barrier_step_time_s


def uses_predictions(config: DPConfig) -> bool:
    """Whether slots carry predicted lengths (only the BF-IO lookahead reads them)."""
    return "bfio" in config.policies and config.lookahead_steps > 0


def _choose(config: DPConfig, params: DPParams, obs: Observation):
    """The policy's (worker, rank, rr_pointer): config.policy, or the policy_set entry that
    params.policy_index names (every entry is computed under vmap; a select keeps one)."""
    if not config.policy_set:
        return POLICIES[config.policy].fn(config, params, obs)
    branches = [
        lambda o, p=p: POLICIES[p].fn(replace(config, policy=p, policy_set=()), params, o) for p in config.policy_set
    ]
    return jax.lax.switch(params.policy_index, branches, obs)


# --------------------------------------------------------------------------- size buckets
# A run padded into a larger config (`DPEngine.pad`) carries its own sizes in `params.sizes`;
# the arrays have the config's shapes. Its extra workers, slots and pool entries are never free
# and never filled, and every metric reads only the run's own part, in the unpadded order of
# its float sums, so the metrics are bitwise those of the unpadded run.


def run_sizes(config: DPConfig, params: DPParams):
    """(G, B, R) of the run: the config's shapes (Python ints), or the traced int32 sizes of a
    run padded into a bucket."""
    if params.sizes is None:
        return config.num_workers, config.slots_per_worker, config.pool_size
    s = params.sizes
    return s.num_workers, s.slots_per_worker, s.pool_size


def _slot_mask(config: DPConfig, params: DPParams) -> jnp.ndarray | None:
    """bool[G, B]: the slots that belong to the run (None when it is not padded)."""
    if params.sizes is None:
        return None
    G, B, _ = run_sizes(config, params)
    g = jnp.arange(config.num_workers, dtype=jnp.int32)[:, None]
    b = jnp.arange(config.slots_per_worker, dtype=jnp.int32)[None, :]
    return (g < G) & (b < B)


def _worker_mask(config: DPConfig, params: DPParams) -> jnp.ndarray | None:
    """bool[G]: the workers that belong to the run (None when it is not padded)."""
    if params.sizes is None:
        return None
    return jnp.arange(config.num_workers, dtype=jnp.int32) < params.sizes.num_workers


# --------------------------------------------------------------------------- requests


def _reveal(config: DPConfig, params: DPParams, seed, ids):
    """Lengths and predictions of requests `ids` (int32[n]) of run `seed`."""
    prompt, output = config.workload.sample(seed, ids)
    pred_u = rng.uniform(seed, ids, rng.STREAM_CLASSIFIER)
    if config.predictor == "noisy":
        x = 1.0 - params.noise_lo + (params.noise_lo + params.noise_hi) * rng.uniform(seed, ids, rng.STREAM_PRED)
        pred_out = jnp.maximum(1, jnp.round(output.astype(jnp.float32) * x)).astype(jnp.int32)
    else:
        pred_out = output
    return prompt, output, pred_out, pred_u


def _fill_pool(config, params, seed, pool: Pool, keep_count, reveal_steps, reveal_load) -> Pool:
    """Top the (compacted) pool up to R with the next requests in id order."""
    R = config.pool_size
    pos = jnp.arange(R, dtype=jnp.int32)
    ids = pool.next_id + pos - keep_count
    new = pos >= keep_count
    if params.sizes is not None:  # a padded run's pool holds R entries
        new = new & (pos < params.sizes.pool_size)
    if config.num_requests is not None:
        new = new & (ids < config.num_requests)
    prompt, output, pred_out, pred_u = _reveal(config, params, seed, ids)
    n_new = jnp.sum(new, dtype=jnp.int32)
    w = lambda a, b: jnp.where(new, a, b)
    return Pool(
        prompt=w(prompt, pool.prompt),
        output=w(output, pool.output),
        pred_out=w(pred_out, pool.pred_out),
        pred_u=w(pred_u, pool.pred_u),
        reveal_steps=w(reveal_steps, pool.reveal_steps),
        reveal_load=WideInt(w(reveal_load.hi, pool.reveal_load.hi), w(reveal_load.lo, pool.reveal_load.lo)),
        count=keep_count + n_new,
        next_id=pool.next_id + n_new,
    )


def _empty_pool(config: DPConfig, first_id) -> Pool:
    R = config.pool_size
    z = jnp.zeros((R,), jnp.int32)
    return Pool(z, z, z, jnp.zeros((R,), jnp.float32), z, WideInt(z, z), jnp.int32(0), jnp.asarray(first_id, jnp.int32))


def _compact(pool: Pool, admitted: jnp.ndarray) -> tuple[Pool, jnp.ndarray]:
    """Drop admitted entries, keeping the others in queue order at the front."""
    R = pool.prompt.shape[0]
    pos = jnp.arange(R, dtype=jnp.int32)
    keep = (pos < pool.count) & ~admitted
    dest = jnp.where(keep, jnp.cumsum(keep) - 1, R)  # R <= a few hundred: cumsum is cheap
    n_keep = jnp.sum(keep, dtype=jnp.int32)
    # One scatter of positions, then a gather per field, instead of one scatter per field:
    # XLA's CPU scatter pays a data-dependent branch per entry, and BF-IO keeps an irregular
    # subset (measured 1.036x for BF-IO, 1.012x for FCFS; the same values land).
    src = jnp.zeros((R,), jnp.int32).at[dest].set(pos, mode="drop")
    move = lambda a: jnp.where(pos < n_keep, a[src], jnp.zeros_like(a))
    moved = Pool(
        move(pool.prompt),
        move(pool.output),
        move(pool.pred_out),
        move(pool.pred_u),
        move(pool.reveal_steps),
        WideInt(move(pool.reveal_load.hi), move(pool.reveal_load.lo)),
        n_keep,
        pool.next_id,
    )
    return moved, n_keep


# --------------------------------------------------------------------------- predictions


def run_lookahead(config: DPConfig, params: DPParams):
    """The run's lookahead H: the config's (an int), or the traced one of a padded run."""
    return config.lookahead_steps if params.sizes is None else params.sizes.lookahead_steps


def _remaining_prediction(config: DPConfig, params: DPParams, slots: Slots, k) -> jnp.ndarray:
    """Predicted remaining steps r >= 1 of each slot's request, int32[G, B]."""
    H = run_lookahead(config, params)
    if config.predictor == "classifier":
        truth = slots.finish - k <= H
        says = jnp.where(truth, slots.pred_u >= params.fn_rate, slots.pred_u < params.fp_rate)
        return jnp.where(says, (H + 2) // 2, H + 1).astype(jnp.int32)
    return jnp.maximum(1, slots.pred_finish - k)


def projected_loads(config: DPConfig, params: DPParams, slots: Slots, k, cum_drift=None) -> jnp.ndarray:
    """Predicted loads P[g, h] (int32[G, H+1]) of steps k + h from requests active after step k.

    cum_drift: D_k (int32 scalar; None means k, which is exact only for the default drift).
    Row 0 is the exact current load base + D_k; row h adds h steps of growth at
    `config.projection_drift` tokens each (the future drifts are unknown: the mean drift,
    rounded down, stands in for them; it is 1 without drift). A padded run's rows beyond its
    own lookahead H are 0.
    """
    H = config.lookahead_steps
    active = slots.finish > k
    load = slots.base + (k if cum_drift is None else cum_drift)
    r = _remaining_prediction(config, params, slots, k)
    h = jnp.arange(H + 1, dtype=jnp.int32)
    keep = r[..., None] > h
    if params.sizes is not None:
        keep = keep & (h <= params.sizes.lookahead_steps)
    rows = jnp.where(active[..., None] & keep, load[..., None] + h * config.projection_drift, 0)
    return jnp.sum(rows, axis=1)


# --------------------------------------------------------------------------- drift


def step_drift(config: DPConfig, seed, k) -> jnp.ndarray:
    """Common growth delta_k (int32 scalar, tokens) of every active request in step k >= 1.

    delta_k = lo + floor(u_k * (hi - lo + 1)) with u_k = rng.uniform(seed, k, STREAM_DRIFT):
    one draw per step, shared by every slot of every worker (BF-IO Theorem 3). u_k is a 24-bit
    fraction, so the floor is exact in integers: (bits * n) >> 24 with bits = u_k * 2^24
    (n <= DRIFT_MAX + 1 = 65 keeps the product below 2^31). A constant drift (lo == hi, the
    default (1, 1) included) draws nothing.
    """
    lo, hi = config.drift
    if lo == hi:
        return jnp.int32(lo)
    u = rng.uniform(seed, k, rng.STREAM_DRIFT)
    bits = (u * np.float32(2**24)).astype(jnp.int32)  # exact: u = bits * 2^-24
    return (lo + ((bits * (hi - lo + 1)) >> 24)).astype(jnp.int32)


# --------------------------------------------------------------------------- slot pass


def _slot_pass(slots: Slots, k, D, mask: jnp.ndarray | None = None):
    """Everything step k needs from the slots, in one read of them (`kernels.fused_sums`).

    Returns int32[G] each: n_start (active at the start of step k: finish >= k), n_done
    (finishing in step k: finish == k), loads (tokens after step k's growth, of the requests
    still active: the sum of base + D over finish > k); and words uint32[G, ceil(B / 32)], the
    free slots after step k (finish <= k) packed as in `kernels.pack_bits`. mask bool[G, B]:
    the slots of a padded run (`_slot_mask`); the others are never free.
    """
    B = slots.finish.shape[-1]
    b = np.arange(B)
    bit = np.uint32(1) << (b % 32).astype(np.uint32)
    f = slots.finish
    free = f <= k if mask is None else (f <= k) & mask
    word_parts = [jnp.where(free & (b // 32 == w), bit, np.uint32(0)) for w in range(-(-B // 32))]
    n_start, n_done, loads, *words = fused_sums(
        [(f >= k).astype(jnp.int32), (f == k).astype(jnp.int32), jnp.where(f > k, slots.base + D, 0)] + word_parts
    )
    return n_start, n_done, loads, jnp.stack(words, axis=-1)


def active_inv_out(slots: Slots, k, sizes: DPSizes | None = None) -> jnp.ndarray:
    """sum of 1 / o over the requests active at the start of step k (finish >= k), float32:
    the TPOT weight of step k, as an ordered (batch-shape independent) sum.

    The step reads it from the state, where the previous step put it after its admission
    (`DPState.next_inv_out`): summing the slots before admission, in the step that then writes
    into them, made XLA copy two slot arrays twice per step to keep the old values readable.
    sizes: a padded run's sizes; its G x B slots are gathered into their unpadded row-major
    order, zeros after them, so that the ordered sum rounds as the unpadded run's does (the
    zeros only add exact zero rows to its tree).
    """
    x = jnp.where(slots.finish >= k, slots.inv_out, 0.0)
    if sizes is None:
        return ordered_sum(x.reshape(-1))
    Gm, Bm = x.shape
    i = jnp.arange(Gm * Bm, dtype=jnp.int32)
    G, B = sizes.num_workers, sizes.slots_per_worker
    g, b = i // B, i % B
    return ordered_sum(jnp.where(i < G * B, x[jnp.minimum(g, Gm - 1), b], 0.0))


# --------------------------------------------------------------------------- admission


def _admit(config: DPConfig, params: DPParams, state: DPState, loads, k, words, allow=True):
    """Run the policy on the post-removal `loads` at step k and place its choices.

    Placement writes only the (at most R) admitted requests: the free slots are packed into bit
    words per worker, and an admission with rank r on worker g takes g's r-th free slot, found by
    a popcount search in one word; the slot fields are then scattered. Gathering a pool entry for
    every slot instead costs a [G, B] gather per field per step under vmap.
    words: the free slots after step k, packed (`_slot_pass`).
    `allow` = False admits nothing (a step that is not live), without touching the slots.
    Returns (slots, post-admission loads int32[G], rr_pointer, admitted bool[R]).
    """
    G, R = config.num_workers, config.pool_size
    G_run, B_run, _ = run_sizes(config, params)
    slots, pool, D = state.slots, state.pool, state.cum_drift
    free = count_bits(words)
    valid = jnp.arange(R) < pool.count
    obs = Observation(
        loads=loads,
        free=free,
        active=B_run - free,
        pool_size_tokens=pool.prompt,
        pool_valid=valid,
        projected=projected_loads(config, params, slots, k, D) if uses_predictions(config) else None,
        rr_pointer=state.rr_pointer,
        num_workers=G_run,
        lookahead_steps=run_lookahead(config, params),
        seed=state.seed,
        step=jnp.asarray(k, jnp.int32),
        lookahead_weights=None if params.sizes is None else params.sizes.lookahead_weights,
    )
    worker, rank, rr = _choose(config, params, obs)
    admitted = (worker >= 0) & allow
    row = jnp.where(admitted, worker, G)  # row G: dropped by the scatter
    col = select_bit(words[jnp.minimum(row, G - 1)], rank)
    put = lambda a, v: a.at[row, col].set(v, mode="drop")
    new_slots = Slots(
        base=put(slots.base, pool.prompt - D),  # load s + D_now - D
        finish=put(slots.finish, k + pool.output),
        inv_out=put(slots.inv_out, 1.0 / pool.output.astype(jnp.float32)),
        pred_finish=None if slots.pred_finish is None else put(slots.pred_finish, k + pool.pred_out),
        pred_u=None if slots.pred_u is None else put(slots.pred_u, pool.pred_u),
    )
    post = loads + jnp.zeros((G,), jnp.int32).at[row].add(pool.prompt, mode="drop")
    return new_slots, post, rr, admitted


def _admission_stats(config, params, pool: Pool, admitted, clock: Clock, totals: Totals) -> Totals:
    """Queueing delays of the admitted entries: clock now minus reveal time."""
    waited = clock.steps - pool.reveal_steps
    # Each product is rounded before the sum: XLA's CPU backend contracts a * b + c into a fused
    # multiply-add in some fusions and not in others, depending on the shapes around it, so the
    # plain expression could round differently in a run padded into a size bucket. A select
    # between the products and the sum is not contracted.
    delay = jnp.where(admitted, waited.astype(jnp.float32) * params.step_const_s, 0.0) + jnp.where(
        admitted, params.per_token_s * clock.load.minus(pool.reveal_load), 0.0
    )
    bins = jnp.where(
        admitted, log_bins(delay, waited == 0, config.delay_bins, DELAY_MIN_S, DELAY_MAX_S), config.delay_bins
    )
    return replace(
        totals,
        delay_s=totals.delay_s.add(ordered_sum(delay)),
        delay_hist=totals.delay_hist.at[bins].add(1, mode="drop"),
        admitted=totals.admitted.add(jnp.sum(admitted, dtype=jnp.int32)),
    )


def _admit_and_refill(config, params, state: DPState, loads, k, words, clock: Clock, totals: Totals, allow=True):
    """Admission at step k followed by the pool top-up for step k + 1."""
    slots, post, rr, admitted = _admit(config, params, state, loads, k, words, allow)
    totals = _admission_stats(config, params, state.pool, admitted, clock, totals)
    pool, n_keep = _compact(state.pool, admitted)
    # Requests revealed now become visible at the start of step k + 1, at clock_{k+1}.
    next_steps = clock.steps + 1
    next_load = clock.load.add(jnp.max(post))
    pool = _fill_pool(config, params, state.seed, pool, n_keep, next_steps, next_load)
    n_admitted = jnp.sum(admitted, dtype=jnp.int32)
    return slots, post, pool, rr, totals, n_admitted


# --------------------------------------------------------------------------- init / step


def _zero_totals(config: DPConfig) -> Totals:
    return Totals(
        Kahan.zeros(),
        Kahan.zeros(),
        Kahan.zeros(),
        jnp.zeros((config.delay_bins,), jnp.int32),
        WideInt.zeros(),
        WideInt.zeros(),
        jnp.int32(0),
        Clock(jnp.int32(0), WideInt.zeros()),
    )


def init(config: DPConfig, params: DPParams, seed) -> DPState:
    """State after step 0 (the initial admission) of run `seed` (uint32 scalar)."""
    G, B = config.num_workers, config.slots_per_worker
    seed = jnp.asarray(seed, jnp.uint32)
    preds = uses_predictions(config)
    clock = Clock(jnp.int32(0), WideInt.zeros())
    totals = _zero_totals(config)
    if config.semantics == "theory":
        G_run, B_run, _ = run_sizes(config, params)
        mask = _slot_mask(config, params)
        if mask is None:
            ids = jnp.arange(G * B, dtype=jnp.int32).reshape(G, B)
        else:  # a padded run numbers its own G_run x B_run slots row-major
            ids = jnp.arange(G, dtype=jnp.int32)[:, None] * B_run + jnp.arange(B, dtype=jnp.int32)
        prompt, output, pred_out, pred_u = _reveal(config, params, seed, ids)
        inv_out = 1.0 / output.astype(jnp.float32)
        if mask is not None:  # slots outside the run hold nothing (finish -1: inactive)
            prompt, output = jnp.where(mask, prompt, 0), jnp.where(mask, output, -1)
            inv_out = jnp.where(mask, inv_out, 0.0)
        slots = Slots(prompt, output, inv_out, pred_out if preds else None, pred_u if preds else None)
        loads = jnp.sum(prompt, axis=1, dtype=jnp.int32)
        n0 = G_run * B_run
        pool = _fill_pool(config, params, seed, _empty_pool(config, n0), jnp.int32(0), jnp.int32(0), WideInt.zeros())
        # The G*B requests placed directly at step 0 are admitted with zero queueing delay.
        totals = replace(
            totals, delay_hist=totals.delay_hist.at[0].add(n0), admitted=totals.admitted.add(jnp.asarray(n0, jnp.int32))
        )
        return DPState(
            jnp.int32(0),
            jnp.int32(0),
            seed,
            slots,
            pool,
            loads,
            jnp.int32(0),
            clock,
            Window.zeros(),
            Window.zeros(),
            totals,
            active_inv_out(slots, 1, params.sizes),
        )
    z = jnp.zeros((G, B), jnp.int32)
    slots = Slots(
        z,
        z - 1,
        jnp.zeros((G, B), jnp.float32),
        z if preds else None,
        jnp.zeros((G, B), jnp.float32) if preds else None,
    )
    pool = _fill_pool(config, params, seed, _empty_pool(config, 0), jnp.int32(0), jnp.int32(0), WideInt.zeros())
    state = DPState(
        jnp.int32(0),
        jnp.int32(0),
        seed,
        slots,
        pool,
        jnp.zeros((G,), jnp.int32),
        jnp.int32(0),
        clock,
        Window.zeros(),
        Window.zeros(),
        totals,
        jnp.float32(0),
    )  # no slot active yet
    words = _slot_pass(slots, jnp.int32(0), jnp.int32(0), _slot_mask(config, params))[3]
    slots, post, pool, rr, totals, _ = _admit_and_refill(
        config, params, state, jnp.zeros((G,), jnp.int32), jnp.int32(0), words, clock, totals
    )
    return DPState(
        jnp.int32(0),
        jnp.int32(0),
        seed,
        slots,
        pool,
        post,
        rr,
        clock,
        Window.zeros(),
        Window.zeros(),
        totals,
        active_inv_out(slots, 1, params.sizes),
    )


def _measure(
    window: Window, loads, dt, tokens, max_load_start, params, on, workers: jnp.ndarray | None = None
) -> Window:
    """Add one step's metrics on `loads` (int32[G]) to the window when `on`. workers bool[G]:
    a padded run's own workers (`_worker_mask`); the others enter no metric."""
    top, total = jnp.max(loads), jnp.sum(loads)  # other workers' loads are 0
    u = utilization(loads)
    power = utilization_power_w(u, params.idle_power_w, params.max_power_w, params.power_exponent)
    idle = 1.0 - u
    if workers is None:
        G, low = loads.shape[0], jnp.min(loads)
        mean = ordered_mean
    else:
        G = params.sizes.num_workers
        low = jnp.min(jnp.where(workers, loads, jnp.iinfo(jnp.int32).max))
        power, idle = jnp.where(workers, power, 0.0), jnp.where(workers, idle, 0.0)
        # XLA rewrites the unpadded run's division by the constant G into a product with the
        # float32 reciprocal 1 / G; the padded run forms the same product.
        mean = lambda x: ordered_sum(x) * (np.float32(1) / G.astype(jnp.float32))
    on_i = on.astype(jnp.int32)
    f = lambda x: jnp.where(on, x, 0.0)
    return Window(
        steps=window.steps + on_i,
        imbalance=window.imbalance.add(on_i * (G * top - total)),
        gap=window.gap.add(on_i * (top - low)),
        tokens=window.tokens.add(on_i * tokens),
        max_load=window.max_load.add(on_i * max_load_start),
        energy_j=window.energy_j.add(f(dt * ordered_sum(power))),
        power_w=window.power_w.add(f(mean(power))),
        idle=window.idle.add(f(mean(idle))),
    )


def step(config: DPConfig, params: DPParams, state: DPState, record: bool = False):
    """One decode step. Returns (state, out); out (when `record`) is the step's trajectory row:
    hist_loads, loads, post_admission_loads int32[G] (tokens), live, dt (s), num_admitted, and
    drift when the config has one (docs/dp-semantics.md)."""
    k = state.step + 1
    slots = state.slots
    # Growth of step k: delta_k tokens per active request (1 without drift), D_k in total.
    delta = step_drift(config, state.seed, k)
    D = state.cum_drift + delta
    n_active, n_done, loads, words = _slot_pass(slots, k, D, _slot_mask(config, params))  # [G], [G, nw]
    live = jnp.any(n_active > 0) & (k <= config.num_steps)
    tokens = jnp.sum(n_active)  # one decode step per active request, whatever the drift
    hist = state.loads + n_active * delta  # post-growth loads
    max_start = jnp.max(state.loads)
    dt = barrier_step_time_s(max_start, params.step_const_s, params.per_token_s)
    live_i = live.astype(jnp.int32)
    clock = Clock(state.clock.steps + live_i, state.clock.load.add(live_i * max_start))
    inv = state.next_inv_out  # active_inv_out(slots, k)
    t = state.totals
    totals = replace(
        t,
        tpot_num=t.tpot_num.add(jnp.where(live, dt * inv, 0.0)),
        tpot_den=t.tpot_den.add(jnp.where(live, inv, 0.0)),
        finished=t.finished.add(live_i * jnp.sum(n_done)),
        last_live=jax.tree_util.tree_map(lambda a, b: jnp.where(live, a, b), clock, t.last_live),
    )

    paper = config.semantics == "paper"
    measure = live if paper else live & (k > config.burn_in_steps)
    window = state.window
    workers = _worker_mask(config, params)
    if paper:
        window = _measure(window, loads, dt, tokens, max_start, params, measure, workers)
    stepped = replace(state, step=k, cum_drift=D, loads=loads, clock=clock, window=window, totals=totals)
    new_slots, post, pool, rr, totals, n_adm = _admit_and_refill(
        config, params, stepped, loads, k, words, clock, totals, allow=live
    )
    if not paper:
        window = _measure(window, post, dt, tokens, max_start, params, measure, workers)
    # A step that is not live leaves everything as it was (the run has ended). Its admission was
    # already disabled, so the slots are untouched; the small arrays are restored by a select
    # (a select over the slot arrays would cost a full pass over them every step).
    keep = lambda new, old: jax.tree_util.tree_map(lambda a, b: jnp.where(live, a, b), new, old)
    post, pool, rr = keep((post, pool, rr), (state.loads, state.pool, state.rr_pointer))
    admitted_now = live & (n_adm > 0)
    at_cut = jax.tree_util.tree_map(lambda a, b: jnp.where(admitted_now, a, b), window, state.at_cut)
    totals = replace(totals, cut_step=jnp.where(admitted_now, k, totals.cut_step))
    # The step counter stops at num_steps, so blocks that overrun the run change nothing.
    k_next = jnp.where(k <= config.num_steps, k, state.step)
    D_next = jnp.where(k <= config.num_steps, D, state.cum_drift)
    new = DPState(
        k_next,
        D_next,
        state.seed,
        new_slots,
        pool,
        post,
        rr,
        clock,
        window,
        at_cut,
        totals,
        active_inv_out(new_slots, k_next + 1, params.sizes),
    )
    out = None
    if record:
        out = dict(
            hist_loads=hist,
            loads=loads if paper else post,
            post_admission_loads=post,
            live=live,
            dt=jnp.where(live, dt, 0.0),
            num_admitted=jnp.where(live, n_adm, 0),
        )
        if config.drift != (1, 1):  # the drift of each step (absent by default: outputs unchanged)
            out["drift"] = jnp.broadcast_to(delta, ())
    return new, out


def done(config: DPConfig, state: DPState) -> jnp.ndarray:
    """bool (batch shape): every step is taken, or a finite request stream has drained (no
    active request, nothing waiting). Evaluated by the runner between blocks only."""
    ended = state.step >= config.num_steps
    if config.num_requests is None:
        return ended
    active = jnp.any(state.slots.finish > state.step[..., None, None], axis=(-2, -1))
    return ended | (~active & (state.pool.count == 0))


# BF-IO H = 0 kernels that run padded into a size bucket: valley fill (padded workers are never
# free), round LPT and window fill (they take the run's number of workers as a traced value).
PADDED_KERNELS = ("vf", "round_lpt", "window")


# --------------------------------------------------------------------------- runner hints


def example() -> DPConfig:
    return DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=40)


def max_steps(config: DPConfig) -> int:
    return config.num_steps


SIZE_FIELDS = ("num_workers", "slots_per_worker", "pool_size", "lookahead_steps")
# Config fields a padded run carries in its params (its window weights, `DPSizes`): runs that
# differ in them share a bucket.
VALUE_FIELDS = ("lookahead_decay",)


def pad_check(config: DPConfig) -> None:
    """Raise unless `config` runs padded: the local-search and multi-start H = 0 kernels read
    the number of workers from their shapes and run unpadded; valley fill, round LPT and window
    fill take the run's G."""
    if "bfio" in config.policies and config.lookahead_steps == 0 and config.bfio_kernel not in PADDED_KERNELS:
        raise ConfigError(
            f"bfio_kernel {config.bfio_kernel!r} does not run padded into a "
            f"size bucket (only {PADDED_KERNELS} and the lookahead do)"
        )


def pad_group(config: DPConfig) -> tuple[bool, ...]:
    # A size of 1 is never padded: XLA simplifies an axis of one element (the utilization
    # L / max L of a single worker is an exact division there, a product with the
    # reciprocal of max L on a longer axis), so its float metrics would differ in the
    # last bit. H = 0 (valley fill) and H >= 1 (the lookahead) are different kernels.
    G, B, R, H = (getattr(config, f) for f in SIZE_FIELDS)
    return G == 1, B == 1, R == 1, H == 0


def pad_into(config: DPConfig, params: DPParams, capacity) -> tuple[DPConfig, DPParams]:
    """(bucket config, params) running `config` inside the validated `capacity`
    (`Engine.pad`); the params carry the run's own sizes (`DPSizes`)."""
    for f in SIZE_FIELDS[:3]:
        require(
            getattr(config, f) > 1 or capacity[f] == 1,
            f"capacity {f}",
            "1 for a config whose size is 1 (a size of 1 is never padded: `pad_group`)",
            capacity[f],
        )
    require(
        (config.lookahead_steps == 0) == (capacity["lookahead_steps"] == 0),
        "capacity lookahead_steps",
        "0 for a config with lookahead_steps 0 and >= 1 otherwise (different kernels)",
        capacity["lookahead_steps"],
    )
    bucket = replace(config, **capacity)
    weights = np.zeros(bucket.window, np.int32)
    weights[: config.window] = window_weights(config.window, config.lookahead_decay)
    sizes = DPSizes(*(jnp.int32(getattr(config, f)) for f in SIZE_FIELDS), lookahead_weights=jnp.asarray(weights))
    return bucket, replace(params, sizes=sizes)


def trim(config: DPConfig, trajectories) -> dict:
    # Per-worker rows [S, K, G] keep the run's own workers (the padded ones record zeros).
    return {k: v[..., : config.num_workers] if v.ndim == 3 else v for k, v in trajectories.items()}


def working_set_bytes(config: DPConfig) -> int:
    # Every step reads the three slot fields (12 bytes per slot: the slot pass and the TPOT
    # weight) and about 32 bytes per pool entry; admission writes only the admitted slots.
    # The lookahead also projects every slot over its H + 1 rows (4 bytes each).
    G, B = config.num_workers, config.slots_per_worker
    window = 4 * G * B * config.window if config.lookahead_steps > 0 else 0
    return 12 * G * B + 32 * config.pool_size + window


def peak_bytes(config: DPConfig, record: bool) -> int:
    # Slot arrays (12 bytes per slot, 20 with predictions) times 4 for the step's
    # temporaries, the lookahead window, the pool and the delay histogram; errs large.
    G, B, R, W = config.num_workers, config.slots_per_worker, config.pool_size, config.window
    per_slot = 20 if config.lookahead_steps > 0 else 12
    per_seed = (
        4 * G * B * per_slot + 4 * G * B * 4 * (W if config.lookahead_steps > 0 else 1) + 64 * R + 4 * config.delay_bins
    )
    if record:
        per_seed += config.num_steps * (3 * G + 3) * 4
    return per_seed


def can_switch(config: DPConfig) -> bool:
    return not config.policy_set


def switch(config: DPConfig, params: DPParams, policy_set: tuple[str, ...]) -> tuple[DPConfig, DPParams]:
    """(config, params) that run `config.policy` as one entry of `policy_set`: every config
    switched into the same set (and otherwise equal) shares one compiled program, and each
    run's metrics are bitwise those of the plain config. The program computes every entry's
    choice in every run (tests/dp/test_buckets.py; the cost is measured by
    benchmarks/bench_sweep.py)."""
    require(
        not config.policy_set and params.policy_index is None,
        "config",
        "a config and params not switched yet",
        config.policy_set,
    )
    policy_set = tuple(policy_set)
    require(config.policy in policy_set, "policy_set", f"a set holding {config.policy!r}", policy_set)
    out = replace(config, policy=policy_set[0], policy_set=policy_set)
    return out, replace(params, policy_index=jnp.int32(policy_set.index(config.policy)))


def describe(config: DPConfig) -> dict:
    return dict(
        policy=config.policy,
        lookahead_steps=config.lookahead_steps,
        num_workers=config.num_workers,
        slots_per_worker=config.slots_per_worker,
        pool_size=config.pool_size,
        semantics=config.semantics,
        workload=config.workload.name,
        num_steps=config.num_steps,
    )


# Data-parallel decode workers behind a barrier (the BF-IO paper); see the module docstring.
ENGINE: Engine[DPConfig, DPParams, DPState] = Engine(
    name="dp",
    Config=DPConfig,
    Params=DPParams,
    METRICS=METRICS,
    POLICIES=POLICIES,
    make_params=make_params,
    init=init,
    step=step,
    done=done,
    finalize=finalize,
    max_steps=max_steps,
    working_set_bytes=working_set_bytes,
    peak_bytes=peak_bytes,
    example=example,
    describe=describe,
    # policy_set is how a sweep runs several policies in one program (`switch`), not a
    # setting of its own: sweep the policy instead.
    sweep_hidden=("policy_set",),
    size_fields=SIZE_FIELDS,
    value_fields=VALUE_FIELDS,
    pad_check=pad_check,
    pad_into=pad_into,
    pad_group=pad_group,
    trim=trim,
    switch=switch,
    can_switch=can_switch,
)
