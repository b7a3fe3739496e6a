"""Plain-Python reference simulator of the dp engine (test oracle).

This module follows `docs/dp-semantics.md` literally, one request at a time, with Python ints for
every load and Python floats (float64) for every time. It is written for clarity, not speed: the
vectorized engine in `jaxsched/dp/` is checked against its integer trajectories and metrics.

Only the standard library is used, so a bug in the array code cannot leak into the oracle.

Entry point: `simulate(...)`. Small helpers (`noisy_ohat`, `empirical_quantile`, `drift_uniform`,
`step_drift`) are public because the tests and trace builders use them too. The common drift of the
theory semantics is drawn here from a stdlib re-implementation of jaxsched.rng's counter hash
(`drift_uniform`); tests/dp/test_reference.py checks it against jaxsched.rng bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from tests.reference.rng import hash3, uniform

__all__ = [
    "simulate",
    "noisy_ohat",
    "empirical_quantile",
    "drift_uniform",
    "step_drift",
    "POLICIES",
    "PREDICTORS",
    "SEMANTICS",
    "STREAM_DRIFT",
]

POLICIES: tuple[str, ...] = ("fcfs", "fcfs_alg2", "jsq_tokens", "jsq_count", "round_robin", "bfio", "power_of_two")
PREDICTORS: tuple[str, ...] = ("oracle", "noisy", "classifier")
SEMANTICS: tuple[str, ...] = ("paper", "theory")
# Stream tag of the per-step drift draw (jaxsched.rng.STREAM_DRIFT; index = step number k).
STREAM_DRIFT = 7
# Stream tag of randomized policies (jaxsched.rng.STREAM_POLICY): step k's stream is
# hash3(seed, k, tag), its draw i hash3(that, i, tag).
STREAM_POLICY = 16


# --------------------------------------------------------------------------------------------
# Small public helpers
# --------------------------------------------------------------------------------------------
def noisy_ohat(o: int, u: float, d_lo: float, d_hi: float) -> int:
    """Noisy predicted output length: max(1, round_half_even(o * x)), x = 1 - d_lo + (d_lo + d_hi) * u.

    Python's built-in `round` on floats rounds half to even, as the spec requires.
    """
    x = 1.0 - d_lo + (d_lo + d_hi) * u
    return max(1, round(o * x))


def empirical_quantile(values: Sequence[float], q: float) -> float:
    """Exact empirical q-quantile: the value at index ceil(q * n) - 1 of the sorted values.

    This is the smallest value v with at least a fraction q of the values <= v. Returns 0.0 for
    an empty sequence.
    """
    n = len(values)
    if n == 0:
        return 0.0
    ordered = sorted(values)
    index = min(max(math.ceil(q * n) - 1, 0), n - 1)
    return float(ordered[index])


def drift_uniform(seed: int, k: int) -> float:
    """u_k in [0, 1): the 24-bit uniform of jaxsched.rng.uniform(seed, k, STREAM_DRIFT)."""
    return uniform(seed, k, STREAM_DRIFT)


def step_drift(seed: int, k: int, drift: tuple[int, int]) -> int:
    """delta_k = lo + floor(u_k * (hi - lo + 1)), uniform on {lo..hi}; a constant drift draws nothing.

    u_k is a multiple of 2^-24 and hi - lo + 1 <= 65, so the float64 product is exact.
    """
    lo, hi = drift
    if lo == hi:
        return lo
    return lo + math.floor(drift_uniform(seed, k) * (hi - lo + 1))


# --------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------
@dataclass
class _Request:
    """One request and everything that happens to it."""

    rid: int
    prompt: int  # s
    output: int  # o (true output length)
    ohat: int  # predicted output length used by the oracle / noisy predictors
    u: float  # classifier draw
    reveal_time: float
    gen: int = 0  # decode steps done so far (after this step's growth); finishes at gen == o
    grown: int = 0  # tokens grown so far: the sum of the drifts of those steps (= gen without drift)
    admit_step: int | None = None
    start_time: float | None = None
    worker: int | None = None
    slot: int | None = None
    finish_step: int | None = None
    finish_time: float | None = None

    @property
    def load(self) -> int:
        """Current token load s + grown."""
        return self.prompt + self.grown


class _Stream:
    """Reveals requests in id order; bounded by `num_requests` or unbounded."""

    def __init__(
        self,
        prompt: Sequence[int],
        output: Sequence[int],
        pred_output: Sequence[int],
        pred_u: Sequence[float],
        num_requests: int | None,
        predictor: str,
    ) -> None:
        self.prompt = prompt
        self.output = output
        self.pred_output = pred_output
        self.pred_u = pred_u
        self.num_requests = num_requests
        self.predictor = predictor
        self.next_id = 0

    def exhausted(self) -> bool:
        """True when a finite stream has revealed all its requests."""
        return self.num_requests is not None and self.next_id >= self.num_requests

    def reveal(self, time: float) -> _Request | None:
        """Reveal the next request at `time`, or return None when the stream is exhausted."""
        if self.exhausted():
            return None
        i = self.next_id
        lengths = {
            "prompt": len(self.prompt),
            "output": len(self.output),
            "pred_output": len(self.pred_output),
            "pred_u": len(self.pred_u),
        }
        short = [name for name, n in lengths.items() if i >= n]
        if short:
            raise IndexError(
                f"request {i} must be revealed but the input sequence(s) {', '.join(short)} only "
                f"hold {min(lengths[name] for name in short)} requests; pass longer sequences or "
                f"a finite num_requests"
            )
        s, o, oh, u = int(self.prompt[i]), int(self.output[i]), int(self.pred_output[i]), float(self.pred_u[i])
        if s < 1 or o < 1 or oh < 1:
            raise ValueError(f"request {i}: prompt, output and pred_output must be >= 1, got {s}, {o}, {oh}")
        if not 0.0 <= u < 1.0:
            raise ValueError(f"request {i}: pred_u must lie in [0, 1), got {u}")
        # "oracle" predicts the true length; "noisy" uses the supplied prediction. The classifier
        # never reads ohat (it uses o and u), so the true length is stored for it.
        ohat = oh if self.predictor == "noisy" else o
        self.next_id += 1
        return _Request(rid=i, prompt=s, output=o, ohat=ohat, u=u, reveal_time=time)


@dataclass
class _AdmissionInput:
    """What a policy sees: post-removal loads, free slots, active requests and the pool."""

    loads: list[int]
    free: list[int]
    active: list[list[_Request]]  # per worker, its active requests
    pool: list[_Request]  # queue order (ascending id)
    num_admit: int  # U = min(len(pool), sum(free))
    seed: int = 0  # the run's seed and this admission's step: the random stream of
    step: int = 0  # randomized policies


@dataclass
class _PolicyConfig:
    """Policy parameters that do not change during a run."""

    name: str
    lookahead_steps: int
    predictor: str
    fp_rate: float
    fn_rate: float
    lookahead_decay: float = 0.7
    projection_drift: int = 1  # growth per future step in the projection: floor(mean drift)
    bfio_kernel: str = "vf"  # H = 0: "vf", or valley fill then local search ("vf_ls", "vf_ls_chain")


# --------------------------------------------------------------------------------------------
# Policies: each returns (request, worker) decisions in the order they were made.
# Ties always go to the lowest worker index (strict comparisons while scanning upward) and then
# to the earliest request in queue order.
# --------------------------------------------------------------------------------------------
Decisions = list[tuple[_Request, int]]


def _first_worker_min(keys: Sequence[int], free: Sequence[int]) -> int:
    """Lowest-index worker with a free slot minimizing `keys`."""
    best = -1
    for g, key in enumerate(keys):
        if free[g] > 0 and (best < 0 or key < keys[best]):
            best = g
    return best


def _policy_fcfs(inp: _AdmissionInput) -> Decisions:
    """First U pool requests fill worker 0's free slots first, then worker 1's, and so on."""
    free = list(inp.free)
    out: Decisions = []
    g = 0
    for req in inp.pool[: inp.num_admit]:
        while free[g] == 0:
            g += 1
        out.append((req, g))
        free[g] -= 1
    return out


def _policy_fcfs_alg2(inp: _AdmissionInput) -> Decisions:
    """First U requests, each to the worker with the most free slots (remaining this step)."""
    free = list(inp.free)
    out: Decisions = []
    for req in inp.pool[: inp.num_admit]:
        g = _first_worker_min([-f for f in free], free)
        out.append((req, g))
        free[g] -= 1
    return out


def _policy_jsq_tokens(inp: _AdmissionInput) -> Decisions:
    """First U requests, each to the least-loaded worker with a free slot (this step's s counted)."""
    free = list(inp.free)
    loads = list(inp.loads)
    out: Decisions = []
    for req in inp.pool[: inp.num_admit]:
        g = _first_worker_min(loads, free)
        out.append((req, g))
        free[g] -= 1
        loads[g] += req.prompt
    return out


def _policy_jsq_count(inp: _AdmissionInput) -> Decisions:
    """First U requests, each to the worker with a free slot and the fewest active requests."""
    free = list(inp.free)
    counts = [len(a) for a in inp.active]
    out: Decisions = []
    for req in inp.pool[: inp.num_admit]:
        g = _first_worker_min(counts, free)
        out.append((req, g))
        free[g] -= 1
        counts[g] += 1
    return out


def _policy_round_robin(inp: _AdmissionInput, pointer: int) -> tuple[Decisions, int]:
    """First U requests; each goes to the first worker with a free slot from the pointer on."""
    free = list(inp.free)
    num_workers = len(free)
    out: Decisions = []
    for req in inp.pool[: inp.num_admit]:
        g = next((pointer + j) % num_workers for j in range(num_workers) if free[(pointer + j) % num_workers] > 0)
        out.append((req, g))
        free[g] -= 1
        pointer = (g + 1) % num_workers
    return out, pointer


def _uniform_worker(h: int, free: Sequence[int]) -> int:
    """The k-th worker with a free slot, k = ((h >> 16) * n) >> 16 for n such workers."""
    open_workers = [g for g, f in enumerate(free) if f > 0]
    return open_workers[((h >> 16) * len(open_workers)) >> 16]


def _policy_power_of_two(inp: _AdmissionInput) -> Decisions:
    """First U requests; request p draws two workers with a free slot (draws 2p and 2p + 1 of
    the step's stream) and goes to the one with the smaller load (ties: the lower index)."""
    free = list(inp.free)
    loads = list(inp.loads)
    h0 = hash3(inp.seed, inp.step, STREAM_POLICY)
    out: Decisions = []
    for p, req in enumerate(inp.pool[: inp.num_admit]):
        g1 = _uniform_worker(hash3(h0, 2 * p, STREAM_POLICY), free)
        g2 = _uniform_worker(hash3(h0, 2 * p + 1, STREAM_POLICY), free)
        g = g2 if (loads[g2], g2) < (loads[g1], g1) else g1
        out.append((req, g))
        free[g] -= 1
        loads[g] += req.prompt
    return out


def _policy_bfio_h0(inp: _AdmissionInput) -> Decisions:
    """Valley fill: lightest worker with a free slot takes the largest prompt fitting under the max.

    If no waiting prompt fits (L_g + s <= M), the smallest prompt is taken instead.
    """
    free = list(inp.free)
    loads = list(inp.loads)
    waiting = list(inp.pool)
    out: Decisions = []
    for _ in range(inp.num_admit):
        g = _first_worker_min(loads, free)
        top = max(loads)
        best: _Request | None = None
        for req in waiting:  # largest fitting s, earliest on ties
            if loads[g] + req.prompt <= top and (best is None or req.prompt > best.prompt):
                best = req
        if best is None:
            for req in waiting:  # smallest s, earliest on ties
                if best is None or req.prompt < best.prompt:
                    best = req
        assert best is not None
        waiting.remove(best)
        out.append((best, g))
        free[g] -= 1
        loads[g] += best.prompt
    return out


def _local_search(inp: _AdmissionInput, decisions: Decisions, chain: bool) -> Decisions:
    """The valley-fill decisions improved by the plain local search (tests/reference/
    local_search.py: best improvement, at most 8 iterations), on the pool in queue order."""
    from tests.reference.local_search import local_search

    pos = {req.rid: i for i, req in enumerate(inp.pool)}
    worker = [-1] * len(inp.pool)
    for req, g in decisions:
        worker[pos[req.rid]] = g
    sizes = [req.prompt for req in inp.pool]
    w, _, _ = local_search(inp.loads, inp.free, sizes, [True] * len(sizes), worker, max_iters=8, chain=chain)
    return [(inp.pool[i], g) for i, g in enumerate(w) if g >= 0]


def _predicted_remaining(req: _Request, cfg: _PolicyConfig) -> int:
    """Predicted remaining decode steps r of an active request for the lookahead projection."""
    if cfg.predictor == "classifier":
        H = cfg.lookahead_steps
        truth = req.output - req.gen <= H
        predicted = (truth and req.u >= cfg.fn_rate) or (not truth and req.u < cfg.fp_rate)
        return (H + 2) // 2 if predicted else H + 1  # ceil((H+1)/2) or H+1
    # Oracle and noisy: a request known to be active lasts at least this step, even when a noisy
    # prediction has already run out.
    return max(1, req.ohat - req.gen)


def _projected_loads(active: list[list[_Request]], cfg: _PolicyConfig) -> list[list[int]]:
    """P[g][h], h = 0..H: sum over g's active requests with r > h of (s + grown + h * d_proj)."""
    table: list[list[int]] = []
    for reqs in active:
        row = [0] * (cfg.lookahead_steps + 1)
        for req in reqs:
            r = _predicted_remaining(req, cfg)
            for h in range(cfg.lookahead_steps + 1):
                if r > h:
                    row[h] += req.load + h * cfg.projection_drift
        table.append(row)
    return table


def _policy_bfio_lookahead(inp: _AdmissionInput, cfg: _PolicyConfig) -> Decisions:
    """Lookahead valley fill (H >= 1): lightest current worker, decayed window score."""
    free = list(inp.free)
    proj = _projected_loads(inp.active, cfg)
    num_workers = len(free)
    beta = num_workers
    rows = range(cfg.lookahead_steps + 1)
    weights = [round(128 * cfg.lookahead_decay**h) for h in rows]  # round() is half-even
    waiting = list(inp.pool)
    out: Decisions = []
    for _ in range(inp.num_admit):
        g = _first_worker_min([row[0] for row in proj], free)
        margins = [max(proj[w][h] for w in range(num_workers)) - proj[g][h] for h in rows]
        best: _Request | None = None
        best_score = 0
        for req in waiting:  # strict > keeps the earliest request on ties
            s = req.prompt
            score = sum(w * (s - beta * max(0, s - m)) for w, m in zip(weights, margins))
            if best is None or score > best_score:
                best, best_score = req, score
        assert best is not None
        waiting.remove(best)
        out.append((best, g))
        free[g] -= 1
        for h in rows:
            proj[g][h] += best.prompt
    return out


# --------------------------------------------------------------------------------------------
# Simulator
# --------------------------------------------------------------------------------------------
class _Engine:
    """Mutable simulation state plus the step-level operations of the spec."""

    def __init__(
        self,
        num_workers: int,
        slots_per_worker: int,
        pool_size: int,
        stream: _Stream,
        policy: _PolicyConfig,
        seed: int = 0,
    ) -> None:
        self.seed = seed
        self.G = num_workers
        self.B = slots_per_worker
        self.R = pool_size
        self.stream = stream
        self.policy = policy
        self.slots: list[list[_Request | None]] = [[None] * slots_per_worker for _ in range(num_workers)]
        self.pool: list[_Request] = []
        self.rr_pointer = 0  # round-robin pointer, persists across steps
        self.admitted: list[_Request] = []
        self.finished: list[_Request] = []

    # ---- views ---------------------------------------------------------------------------
    def active(self) -> list[list[_Request]]:
        """Active requests per worker, in slot order."""
        return [[r for r in row if r is not None] for row in self.slots]

    def all_active(self) -> list[_Request]:
        return [r for row in self.active() for r in row]

    def loads(self) -> list[int]:
        """L_g = sum over g's active requests of (s + grown)."""
        return [sum(r.load for r in row) for row in self.active()]

    def free(self) -> list[int]:
        return [sum(1 for r in row if r is None) for row in self.slots]

    # ---- operations ----------------------------------------------------------------------
    def top_up(self, time: float) -> None:
        """Reveal requests until the pool holds R (or the stream is exhausted)."""
        while len(self.pool) < self.R:
            req = self.stream.reveal(time)
            if req is None:
                return
            self.pool.append(req)

    def place(self, req: _Request, g: int, b: int, step: int, clock: float) -> None:
        req.worker, req.slot, req.admit_step, req.start_time = g, b, step, clock
        self.slots[g][b] = req
        self.admitted.append(req)

    def fill_directly(self) -> list[tuple[int, int, int]]:
        """Theory step 0: worker g, slot b <- request g*B + b; then the pool holds the next R."""
        out: list[tuple[int, int, int]] = []
        for g in range(self.G):
            for b in range(self.B):
                req = self.stream.reveal(0.0)
                if req is None:  # a stream shorter than G*B leaves the remaining slots empty
                    continue
                self.place(req, g, b, 0, 0.0)
                out.append((req.rid, g, b))
        self.top_up(0.0)
        return out

    def admit(self, step: int, clock: float) -> list[tuple[int, int, int]]:
        """Top the pool up, run the policy, place its choices; returns (id, worker, slot) by id."""
        self.top_up(clock)
        free = self.free()
        inp = _AdmissionInput(
            loads=self.loads(),
            free=free,
            active=self.active(),
            pool=list(self.pool),
            num_admit=min(len(self.pool), sum(free)),
            seed=self.seed,
            step=step,
        )
        decisions = self._decide(inp)
        assert len(decisions) == inp.num_admit
        # Placement: a worker's requests, in queue order, take its free slots in slot order.
        # Request ids are queue order, so sorting decisions by id gives each worker's order.
        out: list[tuple[int, int, int]] = []
        for req, g in sorted(decisions, key=lambda d: d[0].rid):
            b = next(i for i, r in enumerate(self.slots[g]) if r is None)
            self.place(req, g, b, step, clock)
            out.append((req.rid, g, b))
        chosen = {req.rid for req, _ in decisions}
        self.pool = [r for r in self.pool if r.rid not in chosen]  # compaction keeps order
        return out

    def _decide(self, inp: _AdmissionInput) -> Decisions:
        name = self.policy.name
        if name == "fcfs":
            return _policy_fcfs(inp)
        if name == "fcfs_alg2":
            return _policy_fcfs_alg2(inp)
        if name == "jsq_tokens":
            return _policy_jsq_tokens(inp)
        if name == "jsq_count":
            return _policy_jsq_count(inp)
        if name == "power_of_two":
            return _policy_power_of_two(inp)
        if name == "round_robin":
            decisions, self.rr_pointer = _policy_round_robin(inp, self.rr_pointer)
            return decisions
        if self.policy.lookahead_steps == 0:
            decisions = _policy_bfio_h0(inp)
            if self.policy.bfio_kernel in ("vf_ls", "vf_ls_chain"):
                decisions = _local_search(inp, decisions, self.policy.bfio_kernel == "vf_ls_chain")
            return decisions
        return _policy_bfio_lookahead(inp, self.policy)

    def grow(self, delta: int) -> None:
        """One decode step for every active request; each grows by the common `delta` tokens."""
        for req in self.all_active():
            req.gen += 1
            req.grown += delta

    def remove_finished(self, step: int, clock: float) -> None:
        """Requests with gen == o finish now; their slots are free for this step's admission."""
        for g in range(self.G):
            for b in range(self.B):
                req = self.slots[g][b]
                if req is not None and req.gen == req.output:
                    req.finish_step, req.finish_time = step, clock
                    self.slots[g][b] = None
                    self.finished.append(req)


@dataclass
class _Measure:
    """Per-step quantities taken at the measurement point."""

    imbalance: int
    gap: int
    energy_j: float
    power_w: float
    idle: float


def _measure(loads: list[int], dt: float, idle_power_w: float, max_power_w: float, power_exponent: float) -> _Measure:
    """Imbalance, gap and the utilization power model on one vector of loads."""
    num_workers = len(loads)
    top = max(loads)
    utils = [load / top if top > 0 else 0.0 for load in loads]
    powers = [idle_power_w + (max_power_w - idle_power_w) * u**power_exponent if u > 0 else idle_power_w for u in utils]
    return _Measure(
        imbalance=num_workers * top - sum(loads),
        gap=top - min(loads),
        energy_j=dt * sum(powers),
        power_w=sum(powers) / num_workers,
        idle=sum(1.0 - u for u in utils) / num_workers,
    )


def _mean(values: Sequence[float]) -> float:
    return float(sum(values)) / len(values) if values else 0.0


def simulate(
    *,
    num_workers: int,
    slots_per_worker: int,
    pool_size: int,
    policy: str,
    prompt: Sequence[int],
    output: Sequence[int],
    pred_output: Sequence[int],
    pred_u: Sequence[float],
    num_steps: int,
    semantics: str = "paper",
    lookahead_steps: int = 0,
    burn_in_steps: int = 0,
    num_requests: int | None = None,
    step_const_s: float = 4.8875e-3,
    per_token_s: float = 1.00525e-7,
    fp_rate: float = 0.0,
    fn_rate: float = 0.0,
    predictor: str = "oracle",
    idle_power_w: float = 100.0,
    max_power_w: float = 400.0,
    power_exponent: float = 0.7,
    delay_quantile: float = 0.99,
    lookahead_decay: float = 0.7,
    drift: tuple[int, int] = (1, 1),
    seed: int = 0,
    bfio_kernel: str = "vf",
) -> dict[str, Any]:
    """Run the dp engine for steps 1..num_steps, one request at a time.

    Request i has prompt[i] (s), output[i] (o), pred_output[i] (ohat, read by the "noisy"
    predictor) and pred_u[i] (the classifier's uniform draw). With num_requests=None the stream is
    unbounded and IndexError is raised if the sequences are too short for what the run reveals.

    `semantics` is "paper" (grow, remove, measure, admit; summaries over steps 1..cut) or "theory"
    (slots filled directly at step 0; grow, remove, admit, measure; steps <= burn_in_steps are not
    measured). `lookahead_steps` is the bfio lookahead H in decode steps (0 = plain valley fill;
    with `bfio_kernel` "vf_ls" or "vf_ls_chain", valley fill followed by the plain local search).

    `drift` = (lo, hi), theory semantics only: in step k every active request grows by the common
    delta_k = step_drift(seed, k, drift) tokens instead of 1 (completions still count steps); the
    lookahead projects (lo + hi) // 2 tokens per future step. `seed` is the run's seed (it only
    matters when lo < hi).

    Returns a dict of per-step lists (index k-1 holds step k): live, hist_loads, loads,
    post_admission_loads, imbalance, gap, tokens, dt, clock, num_admitted, assignments, drift
    (delta_k, drawn for every step, live or not); plus
    initial_assignments, initial_loads (after step 0), requests (per-request records) and metrics
    (a dict of floats).
    """
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics must be one of {SEMANTICS}, got {semantics!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if predictor not in PREDICTORS:
        raise ValueError(f"predictor must be one of {PREDICTORS}, got {predictor!r}")
    if num_workers < 1 or slots_per_worker < 1 or pool_size < 0 or num_steps < 0 or lookahead_steps < 0:
        raise ValueError(
            "need num_workers >= 1, slots_per_worker >= 1, pool_size >= 0, num_steps >= 0 and lookahead_steps >= 0"
        )
    if num_requests is not None and num_requests < 0:
        raise ValueError(f"num_requests must be >= 0 or None, got {num_requests}")
    lo, hi = drift
    if not 0 <= lo <= hi:
        raise ValueError(f"drift must be (lo, hi) with 0 <= lo <= hi, got {drift!r}")
    if (lo, hi) != (1, 1) and semantics != "theory":
        raise ValueError(f"a drift other than (1, 1) needs semantics 'theory', got {drift!r}")

    stream = _Stream(prompt, output, pred_output, pred_u, num_requests, predictor)
    cfg = _PolicyConfig(
        name=policy,
        lookahead_steps=lookahead_steps,
        predictor=predictor,
        fp_rate=fp_rate,
        fn_rate=fn_rate,
        lookahead_decay=lookahead_decay,
        projection_drift=(lo + hi) // 2,
        bfio_kernel=bfio_kernel,
    )
    eng = _Engine(num_workers, slots_per_worker, pool_size, stream, cfg, seed)
    theory = semantics == "theory"

    # ---- step 0 ----------------------------------------------------------------------------
    initial_assignments = eng.fill_directly() if theory else eng.admit(0, 0.0)
    initial_loads = eng.loads()

    steps: dict[str, list[Any]] = {
        key: []
        for key in (
            "live",
            "hist_loads",
            "loads",
            "post_admission_loads",
            "imbalance",
            "gap",
            "tokens",
            "dt",
            "clock",
            "num_admitted",
            "assignments",
            "drift",
        )
    }
    measures: list[_Measure | None] = []  # None for non-live steps
    inv_o_active: list[float] = []  # A_k = sum of 1/o over requests active at the start of step k
    clock = 0.0

    for k in range(1, num_steps + 1):
        delta = step_drift(seed, k, (lo, hi))
        steps["drift"].append(delta)
        active = eng.all_active()
        if not active:
            # Not live: nothing changes. Record the (all-zero) state with dt = 0.
            loads = eng.loads()
            m = _measure(loads, 0.0, idle_power_w, max_power_w, power_exponent)
            for key, value in (
                ("live", False),
                ("hist_loads", loads),
                ("loads", loads),
                ("post_admission_loads", loads),
                ("imbalance", m.imbalance),
                ("gap", m.gap),
                ("tokens", 0),
                ("dt", 0.0),
                ("clock", clock),
                ("num_admitted", 0),
                ("assignments", []),
            ):
                steps[key].append(value)
            measures.append(None)
            inv_o_active.append(0.0)
            continue

        # 1. Step duration from the start-of-step loads.
        tokens = len(active)
        inv_o_active.append(sum(1.0 / r.output for r in active))
        dt = step_const_s + per_token_s * max(eng.loads())
        clock += dt
        # 2. Growth by the step's common drift; hist loads are post-growth, pre-removal.
        eng.grow(delta)
        hist_loads = eng.loads()
        # 3. Completions.
        eng.remove_finished(k, clock)
        post_removal = eng.loads()
        # 4./5. Paper measures before admission, theory after it.
        assignments = eng.admit(k, clock)
        post_admission = eng.loads()
        point = post_admission if theory else post_removal
        m = _measure(point, dt, idle_power_w, max_power_w, power_exponent)

        for key, value in (
            ("live", True),
            ("hist_loads", hist_loads),
            ("loads", point),
            ("post_admission_loads", post_admission),
            ("imbalance", m.imbalance),
            ("gap", m.gap),
            ("tokens", tokens),
            ("dt", dt),
            ("clock", clock),
            ("num_admitted", len(assignments)),
            ("assignments", assignments),
        ):
            steps[key].append(value)
        measures.append(m)

    # ---- summaries ---------------------------------------------------------------------------
    live_steps = [k for k in range(1, num_steps + 1) if steps["live"][k - 1]]
    last_live = live_steps[-1] if live_steps else 0
    if theory:
        cut = last_live
        measured = [k for k in live_steps if k > burn_in_steps]
    else:
        cut = max((k for k in range(1, num_steps + 1) if steps["num_admitted"][k - 1] > 0), default=0)
        measured = list(range(1, cut + 1))  # live steps form a prefix, and cut is live
    meas = [m for m in (measures[k - 1] for k in measured) if m is not None]
    assert len(meas) == len(measured)  # measured steps are always live
    sum_dt = sum(steps["dt"][k - 1] for k in measured)
    sum_tokens = sum(steps["tokens"][k - 1] for k in measured)

    # TPOT over all live steps (not cut): sum_k dt_k A_k / sum_k A_k.
    tpot_num = sum(steps["dt"][k - 1] * inv_o_active[k - 1] for k in live_steps)
    tpot_den = sum(inv_o_active[k - 1] for k in live_steps)
    tpot_exact = _mean([(r.finish_time - r.start_time) / r.output for r in eng.finished])  # type: ignore[operator]

    delays = [r.start_time - r.reveal_time for r in eng.admitted]  # type: ignore[operator]

    metrics: dict[str, float] = {
        "avg_imbalance_tokens": _mean([m.imbalance for m in meas]),
        "avg_gap_tokens": _mean([m.gap for m in meas]),
        "throughput_tokens_per_s": sum_tokens / sum_dt if sum_dt > 0 else 0.0,
        "tpot_s": tpot_num / tpot_den if tpot_den > 0 else 0.0,
        "tpot_exact_s": tpot_exact,
        "energy_j": float(sum(m.energy_j for m in meas)),
        "avg_power_w": _mean([m.power_w for m in meas]),
        "idle_fraction": _mean([m.idle for m in meas]),
        "makespan_s": steps["clock"][last_live - 1] if last_live else 0.0,
        "queue_delay_mean_s": _mean(delays),
        "queue_delay_p99_s": empirical_quantile(delays, delay_quantile),
        "num_admitted": float(len(eng.admitted)),
        "num_finished": float(len(eng.finished)),
        "num_steps_measured": float(len(measured)),
        "cut_step": float(cut),
    }

    requests = {
        r.rid: {
            "reveal_time": r.reveal_time,
            "admit_step": r.admit_step,
            "start_time": r.start_time,
            "worker": r.worker,
            "slot": r.slot,
            "finish_step": r.finish_step,
            "finish_time": r.finish_time,
        }
        for r in sorted(eng.admitted + eng.pool, key=lambda r: r.rid)
    }

    result: dict[str, Any] = dict(steps)
    result.update(
        initial_assignments=initial_assignments, initial_loads=initial_loads, requests=requests, metrics=metrics
    )
    return result
