"""Definitions of the WAIT paper's experiments E1-E4 (Ao, Luo, Simchi-Levi, Wang 2025).

Reading guide: notes/001.md §4 (the table of E1-E6) and §7 (resolutions). Measured results:
docs/kv-experiments.md. This module holds what an experiment is: the hardware constants, the
request types and rate ratios of E1-E4, the load grid, and the threshold rules of WAIT and
Nested WAIT. Running them: `runner`.

What the paper leaves out, and the choices made here (all fit-free, stated once):

- Iteration time (notes §7 item 1): `HARDWARE`, an order-of-magnitude Llama-2-7B on one
  A100-80GB: d0 = 10 ms (one forward pass reads ~13.5 GB of fp16 weights at ~1.5 TB/s, about
  9 ms, rounded up for launch overheads), d1 = 1 us per KV token (a decode context token costs
  ~0.35 us to read, 0.5 MiB at ~1.5 TB/s; a prefill token ~45 us of compute, 14 GFLOP at
  ~300 TFLOP/s; at E1-E4's prefill shares the mix is of the order of 1 us). Its
  capacity_tokens, 110,000 (80 GB minus 13.5 GB of weights, minus a 10% margin, at 0.5 MiB per
  token), is the "hardware" capacity rule only.
- Arrival rates (notes §7 item 10): the paper's rates (10^3-10^4 requests/s) are ratios. A sweep
  point is a load rho = d1 * A (A = sum_j lambda_j (l'_j + 1)(l_j + l'_j / 2) tokens/s, the KV
  tokens batched per second in the fluid equilibrium); the rates are the ratios scaled so that
  d1 * A = rho. rho < 1 is the stability region (Prop. 1).
- Capacity (`capacity_for`): C relative to the fluid memory so that memory binds, by one of
  `CAPACITY_RULES`: 1.2 M* ("mstar", M* = A dT*) or M^pi of the featured policy's thresholds
  ("mpi").
- Thresholds (notes §7 items 5-6): WAIT uses the fluid form n_j = ceil(c lambda_j) with
  c = (1 + slack) dT*, capped at C / A so that M^pi <= C (strict (9) when the cap does not bind);
  Nested WAIT uses n_i = ceil(c Lambda_i (1 + margin)^(i-1)), the tail-rate ratios of the paper
  (15:14:12:8 in E3, 66:43:...:1 in E4) made strict by `margin`, with c = (1 + slack) c_min.
  Where no integer thresholds meet the condition within C the rules say so (None). Other
  policies get `make_params`' defaults (thresholds None).
- Run length (`steady_plan`): burn-in, window and cool-down in units of the relaxation time
  (fluid lifetime / (1 - rho)).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ...errors import require, require_float, require_int
from ..config import DEFAULT_CAPACITY_TOKENS, DEFAULT_D0_S, DEFAULT_D1_S_PER_TOKEN, INT_LIMIT
from ..fluid import FluidTypes, equilibrium, nested_check, nested_segments, nested_thresholds, stage_work, wait_check
from ..registry import CAPACITY_RULES as CAPACITY_RULE_REGISTRY

# Known policies first, in this order; policies registered later (e.g. "vllm", "sarathi")
# join automatically, after these.
POLICY_ORDER = ("wait", "nested_wait", "vllm", "sarathi", "fcfs")
POLICY_LABELS = {
    "wait": "WAIT",
    "nested_wait": "Nested WAIT",
    "vllm": "vLLM-style",
    "sarathi": "Sarathi-style",
    "fcfs": "FCFS",
}


@dataclass(frozen=True)
class Hardware:
    """Eq. (1) constants and KV capacity: d0_s (s), d1_s_per_token (s/token), capacity_tokens
    (default: the paper's hardware, the defaults of `jaxsched.kv.make_params`)."""

    d0_s: float = DEFAULT_D0_S
    d1_s_per_token: float = DEFAULT_D1_S_PER_TOKEN
    capacity_tokens: int = DEFAULT_CAPACITY_TOKENS

    def __post_init__(self):
        # d1 > 0: the experiments set their rates by load = d1 * A.
        require_float(self.d0_s, "Hardware.d0_s", lo=0.0, lo_open=True)
        require_float(self.d1_s_per_token, "Hardware.d1_s_per_token", lo=0.0, lo_open=True)
        require_int(self.capacity_tokens, "Hardware.capacity_tokens", lo=1, hi=INT_LIMIT)


HARDWARE = Hardware()


@dataclass(frozen=True)
class KVExperiment:
    """One experiment of notes §4: request types, rate ratios, the load sweep and run sizes.

    prefill, decode: (m,) tokens per type; rate_ratio: (m,) relative Poisson rates.
    loads / quick_loads: rho = d1 A of each sweep point. num_requests / quick_requests: the
    least measured window per seed (requests; `steady_plan`). wait_slack: WAIT c = (1 + slack) dT*.
    nested_slack, nested_margin: Nested WAIT c and
    strictness margin (see the module docstring). claim: the paper's reported outcome.
    batch_limits / quick_batch_limits: the batch limits B (requests per batch, None: uncapped)
    swept for every policy alike, as the paper applies one limit to all.
    featured: the policy the experiment is about ("wait" or "nested_wait"); capacities /
    quick_capacities: the rules for C swept (`CAPACITY_RULES`); capacity_factor: the f of the
    "mstar" rule C = f M*.
    burn_in_relax, window_relax: the burn-in (and cool-down) and the measured window in units
    of the relaxation time (`steady_plan`); num_requests is the window's least size.
    """

    name: str
    title: str
    figure: str
    prefill: tuple[int, ...]
    decode: tuple[int, ...]
    rate_ratio: tuple[float, ...]
    claim: str
    loads: tuple[float, ...] = (0.5, 0.7, 0.9)
    quick_loads: tuple[float, ...] = (0.5, 0.8)
    num_requests: int = 10_000
    quick_requests: int = 1_000
    wait_slack: float = 0.1
    nested_slack: float = 0.1
    nested_margin: float = 0.02
    seeds: int = 3
    quick_seeds: int = 2
    batch_limits: tuple[int | None, ...] = (None, 512, 128)
    quick_batch_limits: tuple[int | None, ...] = (None, 128)
    featured: str = "wait"
    capacities: tuple[str, ...] = ("mstar", "mpi")
    quick_capacities: tuple[str, ...] = ("mstar",)
    capacity_factor: float = 1.2
    burn_in_relax: float = 1.0
    window_relax: float = 4.0

    def work_per_unit(self) -> float:
        """sum_j ratio_j (l'_j + 1)(l_j + l'_j / 2): A per unit of rate scale, tokens."""
        return float(np.dot(self.rate_ratio, stage_work(self.prefill, self.decode)))

    def rates(self, load: float, hw: Hardware = HARDWARE) -> np.ndarray:
        """(m,) requests/s with d1 * A = load."""
        load = require_float(load, "load (rho)", lo=0.0, lo_open=True)
        require(load < 1.0, "load (rho)", "< 1 (the stable region, Prop. 1)", load)
        scale = load / (hw.d1_s_per_token * self.work_per_unit())
        return scale * np.asarray(self.rate_ratio, np.float64)

    def types(self, load: float, hw: Hardware = HARDWARE) -> FluidTypes:
        """The fluid model's request types at `load` (rates of `rates`, constants of `hw`)."""
        return FluidTypes(
            prefill=np.asarray(self.prefill, float),
            decode=np.asarray(self.decode),
            rates=self.rates(load, hw),
            d0=hw.d0_s,
            d1=hw.d1_s_per_token,
            capacity=float(hw.capacity_tokens),
        )


EXPERIMENTS: dict[str, KVExperiment] = {
    "e1": KVExperiment(
        "e1",
        "WAIT, low demand",
        "Fig. 7",
        prefill=(10, 10),
        decode=(10, 20),
        rate_ratio=(1.0, 1.0),
        claim="WAIT throughput > vLLM, Sarathi at all rates; latency within acceptable limits",
        num_requests=10_000,
        quick_requests=2_000,
        capacities=("mstar",),
        # Thousands of requests/s of 11-21 stages: the fluid batch holds ~550 requests at
        # rho = 0.5 and ~4,900 at 0.9, so the limits that bind without overloading are larger.
        batch_limits=(None, 4096, 1024),
        quick_batch_limits=(None, 1024),
    ),
    "e2": KVExperiment(
        "e2",
        "WAIT, high demand",
        "Fig. 8",
        prefill=(20, 20, 20),
        decode=(100, 200, 300),
        rate_ratio=(6.0, 4.0, 2.0),
        claim="WAIT throughput > vLLM, Sarathi at all rates; latency within acceptable limits",
        num_requests=5_000,
        quick_requests=400,
    ),
    "e3": KVExperiment(
        "e3",
        "Nested WAIT, synthetic",
        "Fig. 11",
        prefill=(10, 10, 10, 10),
        decode=(20, 40, 80, 160),
        rate_ratio=(20.0, 40.0, 80.0, 160.0),
        claim="Nested WAIT: better throughput AND latency than vLLM, Sarathi",
        num_requests=10_000,
        quick_requests=1_000,
        featured="nested_wait",
    ),
    "e4": KVExperiment(
        "e4",
        "Nested WAIT, clustered real lengths",
        "Figs. 12-13",
        prefill=(60,) * 10,
        decode=tuple(range(50, 501, 50)),
        rate_ratio=(23.0, 11.0, 8.0, 7.0, 6.0, 4.0, 3.0, 2.0, 1.0, 1.0),
        claim="Nested WAIT beats the baselines in throughput and latency",
        num_requests=5_000,
        quick_requests=500,
        featured="nested_wait",
        capacities=("mstar",),
    ),
}


# --------------------------------------------------------------------------- capacity

# {rule: description}, from the kv registry (where `--help` reads the names without JAX).
CAPACITY_RULES = {name: entry.doc for name, entry in CAPACITY_RULE_REGISTRY.items()}


def capacity_for(exp: KVExperiment, load: float, rule: str, hw: Hardware = HARDWARE) -> tuple[int, str]:
    """(C in tokens, its description) at `load` under `rule` (a key of CAPACITY_RULES), at
    least one request's footprint. "mpi" falls back to nothing: when the featured policy has
    no thresholds meeting its memory condition at any C, it raises ConfigError."""
    require(rule in CAPACITY_RULES, "capacity rule", f"one of {tuple(CAPACITY_RULES)}", rule)
    if rule == "hardware":
        return hw.capacity_tokens, "hardware"
    types = exp.types(load, hw)
    # "No bound on C": far above anything the threshold rules reach (they start at ~1.1 M*).
    unbounded = dataclasses.replace(types, capacity=1e3 * equilibrium(types).memory)
    if rule == "mstar":
        c, what = exp.capacity_factor * equilibrium(unbounded).memory, f"{exp.capacity_factor:g} M*"
    else:
        th, verdict = thresholds_for(exp, exp.featured, unbounded)
        require(
            th is not None,
            "capacity rule",
            f"a rule other than 'mpi' ({exp.featured} has no thresholds here: {verdict})",
            rule,
        )
        c, what = fluid_memory(exp, exp.featured, unbounded, th), f"M^pi({exp.featured})"
    footprint = max(p + d for p, d in zip(exp.prefill, exp.decode))
    return max(int(math.ceil(c * (1 - 1e-12))), footprint), what


def fluid_memory(exp: KVExperiment, policy: str, types: FluidTypes, thresholds) -> float:
    """M^pi (tokens) of WAIT or Nested WAIT thresholds: the most KV the policy holds."""
    if policy == "wait":
        return wait_check(types, thresholds).memory
    return nested_check(nested_segments(types), thresholds).memory


# --------------------------------------------------------------------------- steady state


@dataclass(frozen=True)
class SteadyPlan:
    """How long a steady-state row runs: relax_s (s), the relaxation time; burn_in K requests
    left out at each end; window requests measured; num_requests N = window + 2 K."""

    relax_s: float
    burn_in: int
    window: int

    @property
    def num_requests(self) -> int:
        return self.window + 2 * self.burn_in


def steady_plan(
    exp: KVExperiment,
    load: float,
    min_window: int,
    hw: Hardware = HARDWARE,
    burn_in_relax: float | None = None,
    window_relax: float | None = None,
) -> SteadyPlan:
    """Run length of a steady-state row at `load`, derived from the load (assumed constants:
    exp.burn_in_relax, exp.window_relax). The relaxation time is the fluid lifetime of a
    request (the arrival-weighted l'_j + 1 iterations of dT*) over 1 - rho: the time a queue
    perturbed by one lifetime's arrivals takes to drain at the spare capacity 1 - rho. The
    burn-in (and the cool-down) lasts burn_in_relax of it, the window window_relax of it and
    at least min_window requests."""
    types = exp.types(load, hw)
    eq = equilibrium(types)
    lifetime = float(np.dot(types.rates, types.decode + 1)) / types.total_rate * eq.iteration_time
    relax = lifetime / (1.0 - load)
    b = exp.burn_in_relax if burn_in_relax is None else burn_in_relax
    w = exp.window_relax if window_relax is None else window_relax
    burn = int(math.ceil(b * relax * types.total_rate))
    window = max(int(min_window), int(math.ceil(w * relax * types.total_rate)))
    return SteadyPlan(relax, burn, window)


# --------------------------------------------------------------------------- thresholds


def _scales(lo: float, hi: float, n: int = 200) -> np.ndarray:
    """Candidate scales c (s) from lo to hi, geometric; just lo when hi <= lo."""
    return np.array([lo]) if hi <= lo else np.geomspace(lo, hi, n)


def wait_rule(types: FluidTypes, slack: float) -> tuple[np.ndarray | None, str]:
    """WAIT thresholds n_j = ceil(c lambda_j) for the smallest c >= (1 + slack) dT* whose
    rounded thresholds meet (9) strictly within C (M^pi <= C); failing that, the smallest c
    meeting (9) with equality. None ("infeasible") when no such c exists: even n_j = 1
    overflows C (WAIT has no memory check), or the rounding to integers >= 1 makes (9) fail at
    these rates. Returns ((m,) int64 or None, verdict)."""
    eq = equilibrium(types)
    c_hi = types.capacity / types.work
    cands = []
    for c in _scales((1.0 + slack) * eq.iteration_time, max(c_hi, (1.0 + slack) * eq.iteration_time)):
        n = np.maximum(np.ceil(c * types.rates * (1 - 1e-12)), 1).astype(np.int64)
        chk = wait_check(types, n)
        if chk.fits:
            cands.append((n, chk))
    ones = np.ones(types.m, np.int64)
    if not cands and wait_check(types, ones).fits:
        cands = [(ones, wait_check(types, ones))]
    if not cands:
        return None, f"infeasible: M^pi(n = 1) = {wait_check(types, ones).memory:.0f} > C"
    for test, verdict in ((lambda k: k.strict.all(), "strict"), (lambda k: k.holds.all(), "equality")):
        for n, chk in cands:
            if test(chk):
                return n, verdict
    return None, "infeasible: (9) fails for every integer thresholds within C"


def nested_rule(types: FluidTypes, slack: float, margin: float) -> tuple[np.ndarray | None, str]:
    """Nested WAIT thresholds ceil(c Lambda_i (1 + margin)^(i-1)), one segment per type, for
    the smallest c >= (1 + slack) c_min whose rounded thresholds keep (10) strict (first line
    and ratios n_{i+1} / n_i > p_i) with M^pi <= C. None ("infeasible", with what fails at
    c = (1 + slack) c_min) when no such c exists. Returns ((L,) int64 or None, verdict)."""
    seg = nested_segments(types)
    base = nested_thresholds(seg, margin=margin)  # c_min * shape
    first = None
    for f in _scales(1.0 + slack, 100.0):
        n = np.maximum(np.ceil(base * f * (1 - 1e-12)), 1).astype(np.int64)
        chk = nested_check(seg, n)
        first = (n, chk) if first is None else first
        if not chk.fits:
            break
        if chk.first_strict and chk.ratios.all():
            return n, "(10) strict"
    n, chk = first
    fails = [
        what
        for what, ok in (
            ("M^pi > C", chk.fits),
            ("first line", chk.first_strict),
            ("ratios not strict", chk.ratios.all()),
        )
        if not ok
    ]
    return None, "infeasible: (10) fails within C (" + ", ".join(fails or ["not strict"]) + ")"


def thresholds_for(exp: KVExperiment, policy: str, types: FluidTypes) -> tuple[tuple[int, ...] | None, str]:
    """(thresholds or None, description of the rule / verdict) for one policy."""
    if policy == "wait":
        n, v = wait_rule(types, exp.wait_slack)
        return (None if n is None else tuple(int(x) for x in n)), v if n is None else f"(9) {v}"
    if policy == "nested_wait":
        n, v = nested_rule(types, exp.nested_slack, exp.nested_margin)
        return (None if n is None else tuple(int(x) for x in n)), v
    return None, "-"
