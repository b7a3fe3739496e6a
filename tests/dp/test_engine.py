"""Differential tests: the vectorized dp engine (jaxsched.dp) against the plain-Python reference.

tests/reference/dp.py follows docs/dp-semantics.md literally (Python ints, float64 times). These
tests run both on the same requests and require
- identical integer trajectories at every step: hist_loads, loads (the measurement point),
  post_admission_loads, live and num_admitted; the imbalance (G max L - sum L) and gap
  (max L - min L) computed from the engine's loads equal the reference's;
- dt per live step within 1e-6 relative (the engine computes it in float32);
- every summary metric within 1e-5 relative, counts (num_admitted, num_finished, cut_step,
  num_steps_measured) exactly, and the p99 queueing delay within 5% (the engine reads it from a
  log-grid histogram, see jaxsched/dp/metrics.py histogram_quantile) or both exactly 0.

Compilation dominates the cost: every distinct static config (policy, lookahead_steps, predictor,
semantics, shapes, num_steps, burn-in, workload) compiles the engine anew, 1.5-3 s each on CPU. A
`Trace` keeps its arrays in the static config, so drawing a Trace per hypothesis example would
recompile per example. The property tests therefore use `DrawnLengths`: a workload whose `sample`
fetches, through a host callback, the rows that the test registered for the run's seed. One
compiled engine then serves every example of a case, and hypothesis draws (and shrinks) the
request lengths themselves. A real sequential `Trace` is exercised by
`test_sequential_trace_drains`, and the BurstGPT-like workload by the long-horizon test.

Default run: every policy (fcfs, fcfs_alg2, jsq_tokens, jsq_count, round_robin, bfio H=0) and
bfio H in {1, 2, 3} with every predictor, each under both semantics, on one small shape per case
(the shapes vary across cases). `-m slow` adds the same matrix with shapes, lengths and lookaheads
drawn per example, and longer horizons for the long-run check.

Two edge cases have tests of their own at the end of the file: steps that are not live record
zero duration, and theory semantics counts the step-0 placements in the delay quantile.

Common drift (theory semantics, `DPConfig.drift`): section 4 runs the same comparison, plus the
per-step drift trajectory, for every policy with drifts (0, 0), (0, 2), (1, 4) and (1, 1), and
checks the drift draw itself against the reference's stdlib copy of the counter hash.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxsched as js
from jaxsched import rng
from jaxsched.dp import simulate
from jaxsched.dp.engine import _reveal, step_drift
from tests.reference.dp import drift_uniform, noisy_ohat
from tests.reference.dp import simulate as reference_simulate
from tests.reference.dp import step_drift as reference_step_drift

POLICY_VARIANTS: list[tuple[str, int, str]] = [(p, 0, "oracle") for p in js.dp.POLICIES] + [
    ("bfio", h, pred) for h in (1, 2, 3) for pred in ("oracle", "noisy", "classifier")
]

FLOAT_METRICS = (
    "avg_imbalance_tokens",
    "avg_gap_tokens",
    "throughput_tokens_per_s",
    "tpot_s",
    "energy_j",
    "avg_power_w",
    "idle_fraction",
    "makespan_s",
    "queue_delay_mean_s",
)
COUNT_METRICS = ("num_admitted", "num_finished", "cut_step", "num_steps_measured")
PARAM_FIELDS = ("step_const_s", "per_token_s", "fp_rate", "fn_rate", "idle_power_w", "max_power_w", "power_exponent")


# ---------------------------------------------------------------------------------------------
# A workload whose lengths hypothesis draws
# ---------------------------------------------------------------------------------------------
_REGISTERED: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _lookup(seeds: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host side of DrawnLengths.sample: row `id` of the arrays registered for `seed` (1 outside)."""
    seeds, ids = np.asarray(seeds), np.asarray(ids)
    prompt = np.ones(ids.shape, np.int32)
    output = np.ones(ids.shape, np.int32)
    for seed in np.unique(seeds):
        p, o = _REGISTERED[int(seed)]
        sel = (seeds == seed) & (ids >= 0) & (ids < len(p))
        prompt[sel] = p[ids[sel]]
        output[sel] = o[ids[sel]]
    return prompt, output


@dataclass(frozen=True)
class DrawnLengths:
    """Request i of run `seed` has the lengths registered by `register(seed, prompt, output)`.

    The bounds are promises to DPConfig's overflow checks; num_requests=None is an unbounded
    stream (the test registers as many rows as the run can reveal), an integer N a finite one.
    Instances with equal fields are equal, so one compiled engine serves every example.
    """

    max_prompt: int = 20
    max_output: int = 8
    num_requests: int | None = None
    name: str = "drawn"

    def sample(self, seed, ids):
        ids = jnp.asarray(ids, jnp.int32)
        seeds = jnp.broadcast_to(jnp.asarray(seed, jnp.uint32), ids.shape)
        out = jax.ShapeDtypeStruct(ids.shape, jnp.int32)
        return jax.pure_callback(_lookup, (out, out), seeds, ids, vmap_method="broadcast_all")

    def register(self, seed: int, prompt, output) -> None:
        p, o = np.asarray(prompt, np.int32), np.asarray(output, np.int32)
        assert p.shape == o.shape and p.min() >= 1 and o.min() >= 1
        assert p.max() <= self.max_prompt and o.max() <= self.max_output
        _REGISTERED[int(seed)] = (p, o)


# ---------------------------------------------------------------------------------------------
# Running the reference on what the engine saw, and comparing
# ---------------------------------------------------------------------------------------------
# Under jit, as inside the engine: eager evaluation of a workload's float32 math can round a
# length differently (BurstGPTLike: 3 of the first 200000 output lengths of seed 7 differ).
_reveal_jit = jax.jit(_reveal, static_argnums=0)


def _f32(x) -> float:
    """The float32 value the engine holds, as a Python float (what the reference must use)."""
    return float(np.float32(x))


def num_ids(cfg: js.dp.DPConfig) -> int:
    """Requests a run can reveal: N, or G*B + R*(K+1) for an unbounded stream."""
    if cfg.num_requests is not None:
        return cfg.num_requests
    return cfg.num_workers * cfg.slots_per_worker + cfg.pool_size * (cfg.num_steps + 1)


def check_noisy_predictions(params: js.dp.DPParams, seed: int, output: np.ndarray, pred_out: np.ndarray) -> None:
    """ohat = max(1, round_half_even(o * x)), x = 1 - d_lo + (d_lo + d_hi) u', u' the run's draw.

    The engine computes x in float32: where o * x lies within float32 rounding of a half-integer
    the two roundings may differ, and such requests are not checked.
    """
    ids = jnp.arange(len(output), dtype=jnp.int32)
    u = np.asarray(rng.uniform(jnp.uint32(seed), ids, rng.STREAM_PRED), np.float64)
    lo, hi = _f32(params.noise_lo), _f32(params.noise_hi)
    expected = np.array([noisy_ohat(int(o), float(v), lo, hi) for o, v in zip(output, u)])
    y = output * (1.0 - lo + (lo + hi) * u)
    ambiguous = np.abs(y - np.floor(y) - 0.5) < 1e-5 * np.maximum(y, 1.0)
    bad = np.nonzero((pred_out != expected) & ~ambiguous)[0]
    assert bad.size == 0, (
        f"noisy predictions of seed {seed} differ from the spec at ids {bad[:5].tolist()}: "
        f"o={output[bad[:5]].tolist()} engine={pred_out[bad[:5]].tolist()} "
        f"spec={expected[bad[:5]].tolist()}"
    )


def run_reference(cfg: js.dp.DPConfig, params: js.dp.DPParams, seed: int) -> dict[str, Any]:
    """The reference on the lengths and predictions of run `seed`, as the engine reveals them."""
    n = num_ids(cfg)
    prompt, output, pred_out, pred_u = (
        np.asarray(a) for a in _reveal_jit(cfg, params, jnp.uint32(seed), jnp.arange(n, dtype=jnp.int32))
    )
    if isinstance(cfg.workload, DrawnLengths):  # the callback must deliver what was registered
        p, o = _REGISTERED[seed]
        np.testing.assert_array_equal(prompt, p[:n])
        np.testing.assert_array_equal(output, o[:n])
    if cfg.predictor == "noisy":  # the predictions follow the spec's formula
        check_noisy_predictions(params, seed, output, pred_out)
    return reference_simulate(
        num_workers=cfg.num_workers,
        slots_per_worker=cfg.slots_per_worker,
        pool_size=cfg.pool_size,
        policy=cfg.policy,
        prompt=prompt.tolist(),
        output=output.tolist(),
        pred_output=(pred_out if cfg.predictor == "noisy" else output).tolist(),
        pred_u=pred_u.astype(np.float64).tolist(),
        num_steps=cfg.num_steps,
        semantics=cfg.semantics,
        lookahead_steps=cfg.lookahead_steps,
        burn_in_steps=cfg.burn_in_steps,
        num_requests=cfg.num_requests,
        predictor=cfg.predictor,
        lookahead_decay=cfg.lookahead_decay,
        drift=cfg.drift,
        seed=seed,
        bfio_kernel=cfg.bfio_kernel if cfg.lookahead_steps == 0 else "vf",
        **{k: _f32(getattr(params, k)) for k in PARAM_FIELDS},
    )


def _rel_ok(a: float, b: float, rel: float, abs_: float = 0.0) -> bool:
    return abs(a - b) <= rel * abs(b) + abs_


def mismatches(
    cfg: js.dp.DPConfig,
    res,
    j: int,
    ref: dict[str, Any],
    *,
    metric_rel: float = 1e-5,
    metric_rel_overrides: dict[str, float] | None = None,
) -> list[str]:
    """Differences between seed j of engine result `res` and the reference run `ref`."""
    out: list[str] = []
    K, G = cfg.num_steps, cfg.num_workers
    tr = {k: np.asarray(v[j]) for k, v in res.trajectories.items()}
    steps = tr["live"].shape[0]  # < K when run.simulate stopped early after a drain
    r_live = np.asarray(ref["live"], bool)
    if steps > K or (steps < K and r_live[steps:].any()):
        out.append(
            f"trajectories hold {steps} of {K} steps, but the reference is live at steps "
            f"{(np.nonzero(r_live)[0] + 1).tolist()}"
        )
        steps = min(steps, K)
    for key in ("hist_loads", "loads", "post_admission_loads", "live", "num_admitted"):
        e, r = tr[key][:steps], np.asarray(ref[key])[:steps]
        if e.shape != r.shape or not np.array_equal(e, r):
            bad = np.argwhere(e != r) if e.shape == r.shape else np.zeros((1, 1), int)
            k0 = int(bad[0][0])
            out.append(f"{key} differs first at step {k0 + 1}: engine {e[k0].tolist()} vs reference {r[k0].tolist()}")
    # The per-step drift is recorded only for a non-default drift (default outputs are unchanged).
    if cfg.drift == (1, 1):
        if "drift" in tr:
            out.append("a drift trajectory was recorded for the default drift (1, 1)")
    elif "drift" not in tr:
        out.append(f"no drift trajectory recorded for drift {cfg.drift}")
    elif not np.array_equal(tr["drift"][:steps], np.asarray(ref["drift"])[:steps]):
        k0 = int(np.argwhere(tr["drift"][:steps] != np.asarray(ref["drift"])[:steps])[0][0])
        out.append(
            f"drift differs first at step {k0 + 1}: engine {tr['drift'][:steps].tolist()} vs "
            f"reference {ref['drift'][:steps]}"
        )
    loads = tr["loads"][:steps].astype(np.int64)
    if loads.shape == (steps, G):
        for key, value in (("imbalance", G * loads.max(1) - loads.sum(1)), ("gap", loads.max(1) - loads.min(1))):
            if not np.array_equal(value, np.asarray(ref[key])[:steps]):
                out.append(f"{key} from the engine's loads {value.tolist()} vs {ref[key][:steps]}")
    e_dt, r_dt = tr["dt"][:steps].astype(np.float64), np.asarray(ref["dt"])[:steps]
    if not np.allclose(e_dt, r_dt, rtol=1e-6, atol=0.0):
        out.append(f"dt: engine {e_dt.tolist()} vs reference {r_dt.tolist()}")

    m, rm = {k: float(v[j]) for k, v in res.metrics.items()}, ref["metrics"]
    rel = dict.fromkeys(FLOAT_METRICS, metric_rel) | (metric_rel_overrides or {})
    for key in FLOAT_METRICS:
        # idle_fraction: u = L / max L is float32, so 1 - u carries an absolute error ~6e-8.
        slack = 1e-7 if key == "idle_fraction" else 1e-12
        if not _rel_ok(m[key], rm[key], rel[key], slack):
            out.append(f"{key}: engine {m[key]!r} vs reference {rm[key]!r}")
    for key in COUNT_METRICS:
        if m[key] != rm[key]:
            out.append(f"{key}: engine {m[key]!r} vs reference {rm[key]!r}")
    p99_ref = rm["queue_delay_p99_s"]
    p99 = m["queue_delay_p99_s"]
    if not ((p99 == 0.0 and p99_ref == 0.0) or _rel_ok(p99, p99_ref, 0.05)):
        out.append(f"queue_delay_p99_s: engine {p99!r} vs reference {p99_ref!r}")
    return out


def describe(cfg: js.dp.DPConfig, params: js.dp.DPParams, seed: int) -> str:
    """A reproducer: the static config, the params and the lengths of run `seed`."""
    wl = cfg.workload
    lengths = ""
    if isinstance(wl, DrawnLengths):
        p, o = _REGISTERED[seed]
        lengths = f"\n  prompt={p.tolist()}\n  output={o.tolist()}"
    fields = {
        k: getattr(cfg, k)
        for k in (
            "num_workers",
            "slots_per_worker",
            "pool_size",
            "policy",
            "lookahead_steps",
            "semantics",
            "predictor",
            "num_steps",
            "burn_in_steps",
            "lookahead_decay",
            "drift",
        )
    }
    prm = {k: _f32(getattr(params, k)) for k in PARAM_FIELDS + ("noise_lo", "noise_hi")}
    return f"{fields} workload={wl.name}(num_requests={cfg.num_requests}) seed={seed}\n  params={prm}{lengths}"


def check_against_reference(cfg: js.dp.DPConfig, params: js.dp.DPParams, seeds: list[int], **kwargs):
    """Simulate `seeds` in one batch and require each to match the reference.

    Returns (engine result, reference runs in seed order)."""
    res = simulate(cfg, params, seeds, record=True)
    refs, report = [], []
    for j, seed in enumerate(seeds):
        ref = run_reference(cfg, params, seed)
        refs.append(ref)
        bad = mismatches(cfg, res, j, ref, **kwargs)
        if bad:
            report.append(describe(cfg, params, seed) + "\n  " + "\n  ".join(bad))
    assert not report, "engine and reference differ:\n" + "\n".join(report)
    return res, refs


# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------
def draw_params(data: st.DataObject, cfg: js.dp.DPConfig) -> js.dp.DPParams:
    """Timing and power constants always; noise and classifier rates when the config reads them."""
    kw: dict[str, float] = dict(
        step_const_s=data.draw(st.floats(1e-3, 1.0), label="step_const_s"),
        per_token_s=data.draw(st.one_of(st.just(0.0), st.floats(1e-7, 0.25)), label="per_token_s"),
        idle_power_w=data.draw(st.floats(0.0, 200.0), label="idle_power_w"),
        power_exponent=data.draw(st.floats(0.1, 2.0), label="power_exponent"),
    )
    kw["max_power_w"] = kw["idle_power_w"] + data.draw(st.floats(0.0, 400.0), label="power_span_w")
    if cfg.policy == "bfio" and cfg.lookahead_steps > 0 and cfg.predictor == "noisy":
        kw["noise_lo"] = data.draw(st.floats(0.0, 1.0), label="noise_lo")
        kw["noise_hi"] = data.draw(st.floats(0.0, 2.0), label="noise_hi")
    if cfg.policy == "bfio" and cfg.lookahead_steps > 0 and cfg.predictor == "classifier":
        kw["fp_rate"] = data.draw(st.floats(0.0, 1.0), label="fp_rate")
        kw["fn_rate"] = data.draw(st.floats(0.0, 1.0), label="fn_rate")
    return js.dp.make_params(cfg, **kw)


def draw_seeds_and_lengths(data: st.DataObject, cfg: js.dp.DPConfig, num_seeds: int = 2) -> list[int]:
    """Distinct seeds, each with its own drawn lengths registered for the DrawnLengths workload.

    Lengths come from a narrow or the full range (narrow ranges make ties and same-step
    completions common, which exercises the tie rules).
    """
    wl = cfg.workload
    assert isinstance(wl, DrawnLengths)
    first = data.draw(st.integers(0, 2**32 - num_seeds), label="seed")
    seeds = list(range(first, first + num_seeds))
    n = num_ids(cfg)
    for seed in seeds:
        smax = data.draw(st.sampled_from([3, wl.max_prompt]), label="prompt range")
        omax = data.draw(st.sampled_from([2, wl.max_output]), label="output range")
        prompt = data.draw(st.lists(st.integers(1, smax), min_size=n, max_size=n), label=f"prompt {seed}")
        output = data.draw(st.lists(st.integers(1, omax), min_size=n, max_size=n), label=f"output {seed}")
        wl.register(seed, prompt, output)
    return seeds


# ---------------------------------------------------------------------------------------------
# 1. Trajectories and metrics, every policy under both semantics
# ---------------------------------------------------------------------------------------------
FINITE_N = 12  # requests of the finite paper cases; K = 8 N + 1 steps drain any of them (o <= 8)


@dataclass(frozen=True)
class Case:
    policy: str
    lookahead_steps: int
    predictor: str
    semantics: str
    G: int
    B: int
    R: int
    K: int
    burn_in: int = 0
    num_requests: int | None = None
    drift: tuple[int, int] = (1, 1)

    def config(self, workload=None) -> js.dp.DPConfig:
        wl = workload or DrawnLengths(num_requests=self.num_requests)
        return js.dp.DPConfig(
            num_workers=self.G,
            slots_per_worker=self.B,
            pool_size=self.R,
            policy=self.policy,
            lookahead_steps=self.lookahead_steps,
            predictor=self.predictor,
            semantics=self.semantics,
            num_steps=self.K,
            burn_in_steps=self.burn_in,
            workload=wl,
            drift=self.drift,
        )

    @property
    def id(self) -> str:
        pol = self.policy if self.policy != "bfio" else f"bfio_h{self.lookahead_steps}"
        pred = f"-{self.predictor}" if self.lookahead_steps > 0 else ""
        n = f"N{self.num_requests}" if self.num_requests else "inf"
        drift = "" if self.drift == (1, 1) else f"-drift{self.drift[0]}_{self.drift[1]}"
        return f"{pol}{pred}-{self.semantics}-G{self.G}B{self.B}R{self.R}K{self.K}-{n}{drift}"


# (G, B, R, K) of each default case; K = None: a finite stream of FINITE_N requests run until it
# drains (K = 8 N + 1 steps), else an unbounded stream. Degenerate shapes (G = 1, R = 1) go to the
# simple policies; the BF-IO cases keep G >= 2 and R >= 2 so that both the worker and the request
# choice matter, and every predictor sees G = 2 and G = 3 under each semantics.
SHAPES: dict[tuple[str, int, str, str], tuple[int, int, int, int | None]] = {
    ("fcfs", 0, "oracle", "paper"): (2, 1, 2, None),
    ("fcfs", 0, "oracle", "theory"): (3, 1, 4, 12),
    ("fcfs_alg2", 0, "oracle", "paper"): (1, 1, 1, None),
    ("fcfs_alg2", 0, "oracle", "theory"): (2, 2, 2, 6),
    ("jsq_tokens", 0, "oracle", "paper"): (3, 2, 4, 12),
    ("jsq_tokens", 0, "oracle", "theory"): (1, 2, 1, 12),
    ("jsq_count", 0, "oracle", "paper"): (2, 3, 2, None),
    ("jsq_count", 0, "oracle", "theory"): (3, 3, 4, 6),
    ("round_robin", 0, "oracle", "paper"): (3, 1, 2, 12),
    ("round_robin", 0, "oracle", "theory"): (2, 1, 4, 12),
    ("power_of_two", 0, "oracle", "paper"): (3, 2, 4, None),
    ("power_of_two", 0, "oracle", "theory"): (4, 2, 4, 12),
    ("bfio", 0, "oracle", "paper"): (2, 2, 4, None),
    ("bfio", 0, "oracle", "theory"): (3, 2, 2, 6),
    ("bfio", 1, "oracle", "paper"): (2, 2, 4, None),
    ("bfio", 1, "oracle", "theory"): (3, 2, 2, 12),
    ("bfio", 1, "noisy", "paper"): (3, 1, 4, 6),
    ("bfio", 1, "noisy", "theory"): (2, 3, 4, 6),
    ("bfio", 1, "classifier", "paper"): (2, 3, 2, 12),
    ("bfio", 1, "classifier", "theory"): (3, 1, 4, 12),
    ("bfio", 2, "oracle", "paper"): (3, 1, 2, 6),
    ("bfio", 2, "oracle", "theory"): (2, 2, 4, 6),
    ("bfio", 2, "noisy", "paper"): (2, 2, 4, None),
    ("bfio", 2, "noisy", "theory"): (3, 2, 2, 12),
    ("bfio", 2, "classifier", "paper"): (3, 2, 2, 6),
    ("bfio", 2, "classifier", "theory"): (2, 3, 2, 6),
    ("bfio", 3, "oracle", "paper"): (2, 3, 4, 12),
    ("bfio", 3, "oracle", "theory"): (3, 3, 2, 12),
    ("bfio", 3, "noisy", "paper"): (3, 3, 2, 6),
    ("bfio", 3, "noisy", "theory"): (2, 1, 4, 6),
    ("bfio", 3, "classifier", "paper"): (3, 1, 4, None),
    ("bfio", 3, "classifier", "theory"): (2, 1, 2, 12),
}


def _default_cases() -> list[Case]:
    """Every policy variant under both semantics, shaped by SHAPES; theory burn-in 0, 1 or 2."""
    cases = []
    for i, (key, (G, B, R, K)) in enumerate(SHAPES.items()):
        semantics = key[3]
        cases.append(
            Case(
                *key,
                G,
                B,
                R,
                K=8 * FINITE_N + 1 if K is None else K,
                burn_in=(i // 2) % 3 if semantics == "theory" else 0,
                num_requests=FINITE_N if K is None else None,
            )
        )
    return cases


DEFAULT_CASES = _default_cases()
FINITE_CASES = [c for c in DEFAULT_CASES if c.num_requests is not None]


def test_default_cases_cover_the_matrix() -> None:
    assert {(c.policy, c.lookahead_steps, c.predictor, c.semantics) for c in DEFAULT_CASES} == {
        (*v, s) for v in POLICY_VARIANTS for s in ("paper", "theory")
    }
    assert {c.G for c in DEFAULT_CASES} == {1, 2, 3, 4} and {c.B for c in DEFAULT_CASES} == {1, 2, 3}
    assert {c.R for c in DEFAULT_CASES} == {1, 2, 4}
    assert {c.burn_in for c in DEFAULT_CASES if c.semantics == "theory"} == {0, 1, 2}
    for semantics in ("paper", "theory"):
        assert {c.K for c in DEFAULT_CASES if c.semantics == semantics and not c.num_requests} == {6, 12}
    finite = {(c.policy, c.lookahead_steps, c.predictor) for c in FINITE_CASES}
    assert {p for p, _, _ in finite} == {"fcfs", "fcfs_alg2", "jsq_count", "bfio", "power_of_two"}
    assert {h for _, h, _ in finite} == {0, 1, 2, 3} and {p for _, _, p in finite} == {"oracle", "noisy", "classifier"}
    for c in DEFAULT_CASES:
        if c.policy == "bfio":
            assert c.G >= 2 and c.R >= 2


@pytest.mark.parametrize("case", DEFAULT_CASES, ids=lambda c: c.id)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference(case: Case, data: st.DataObject) -> None:
    cfg = case.config()
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg)
    check_against_reference(cfg, params, seeds)


@pytest.mark.parametrize("kernel", ["vf_ls", "vf_ls_chain"])
@pytest.mark.parametrize("semantics,G,B,R,K", [("paper", 3, 2, 4, 12), ("theory", 2, 3, 4, 12)])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_local_search_kernels_match_the_reference(kernel, semantics, G, B, R, K, data) -> None:
    # BF-IO H = 0 with valley fill then local search inside the engine, against the reference
    # running valley fill then the plain local search (tests/reference/local_search.py) on the
    # same pool: the same per-step loads and metrics.
    cfg = dataclasses.replace(Case("bfio", 0, "oracle", semantics, G, B, R, K).config(), bfio_kernel=kernel)
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg)
    check_against_reference(cfg, params, seeds)


# ---------------------------------------------------------------------------------------------
# 2. Finite streams that drain: TPOT telescopes to the per-request mean, everything finishes
# ---------------------------------------------------------------------------------------------
def _check_drained(cfg: js.dp.DPConfig, res, j: int, ref: dict[str, Any]) -> None:
    N = cfg.num_requests
    m = {k: float(v[j]) for k, v in res.metrics.items()}
    assert not ref["live"][-1], "the reference did not drain: the test needs more steps"
    assert m["num_finished"] == m["num_admitted"] == N
    assert not res.trajectories["live"][j][-1]
    # sum_k dt_k A_k / sum_k A_k = mean over requests of (finish - start) / o once all finished.
    assert m["tpot_s"] == pytest.approx(ref["metrics"]["tpot_exact_s"], rel=1e-5)
    assert ref["metrics"]["tpot_s"] == pytest.approx(ref["metrics"]["tpot_exact_s"], rel=1e-9)


@pytest.mark.parametrize("case", FINITE_CASES, ids=lambda c: c.id)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_drained_run_tpot_is_per_request_mean(case: Case, data: st.DataObject) -> None:
    cfg = case.config()  # the same static configs as test_engine_matches_reference: no recompiles
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg)
    res, refs = check_against_reference(cfg, params, seeds)
    for j, ref in enumerate(refs):
        _check_drained(cfg, res, j, ref)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sequential_trace_drains(data: st.DataObject) -> None:
    # A real js.Trace(order="sequential"): N rows revealed in file order (every example compiles).
    # block_steps=7 splits the run (K = 8 N + 1 >= 9 steps), and run.simulate stops after the
    # block in which every request has finished, possibly with fewer than K recorded steps; the
    # reference must be idle in the steps not recorded.
    policy, lookahead_steps, predictor = data.draw(st.sampled_from(POLICY_VARIANTS), label="policy")
    G, B, R = (data.draw(st.sampled_from(v)) for v in ((1, 2, 3), (1, 2, 3), (1, 2, 4)))
    N = data.draw(st.integers(1, 15), label="N")
    prompt = data.draw(st.lists(st.integers(1, 20), min_size=N, max_size=N), label="prompt")
    output = data.draw(st.lists(st.integers(1, 8), min_size=N, max_size=N), label="output")
    cfg = js.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        lookahead_steps=lookahead_steps,
        predictor=predictor,
        num_steps=8 * N + 1,
        workload=js.Trace(np.array(prompt), np.array(output), order="sequential"),
    )
    params = draw_params(data, cfg)
    res = simulate(cfg, params, [3], block_steps=7, record=True)
    ref = run_reference(cfg, params, 3)
    bad = mismatches(cfg, res, 0, ref)
    assert not bad, describe(cfg, params, 3) + f" prompt={prompt} output={output}\n  " + "\n  ".join(bad)
    _check_drained(cfg, res, 0, ref)


# ---------------------------------------------------------------------------------------------
# 3. Long horizon: exact clocks and compensated sums, no float32 drift
# ---------------------------------------------------------------------------------------------
# Tolerances of the long runs. The engine keeps the clock and the integer window sums exactly
# (WideInt), so makespan, throughput and the mean imbalance must match float64 to rounding; tpot
# and energy are compensated float32 sums (Kahan), good to ~1e-7.
LONG_TOLERANCES = dict(
    makespan_s=1e-9, throughput_tokens_per_s=1e-9, avg_imbalance_tokens=1e-9, tpot_s=1e-6, energy_j=1e-6
)


def _long_run(policy: str, lookahead_steps: int, predictor: str, semantics: str, num_steps: int, seed: int) -> None:
    cfg = js.dp.DPConfig(
        num_workers=4,
        slots_per_worker=8,
        pool_size=8,
        policy=policy,
        lookahead_steps=lookahead_steps,
        predictor=predictor,
        semantics=semantics,
        num_steps=num_steps,
        burn_in_steps=num_steps // 10 if semantics == "theory" else 0,
        workload=js.BurstGPTLike(),
    )
    # The predictor's error rates, where it draws them (make_params refuses ignored options).
    errors = {"noisy": dict(noise_lo=0.3, noise_hi=0.5), "classifier": dict(fp_rate=0.1, fn_rate=0.2)}
    params = js.dp.make_params(cfg, **errors.get(predictor, {}))
    res = simulate(cfg, params, [seed], record=True)
    ref = run_reference(cfg, params, seed)
    # Integer trajectories exactly, the long sums as above, the rest as in the short tests.
    bad = mismatches(cfg, res, 0, ref, metric_rel_overrides=LONG_TOLERANCES)
    assert not bad, describe(cfg, params, seed) + "\n  " + "\n  ".join(bad)
    m = res.metrics
    assert m["num_steps_measured"][0] > 0.8 * num_steps and m["num_finished"][0] > num_steps / 4
    # The check has teeth: a float32 running clock (sum of the recorded float32 dt) is off by more
    # than the makespan tolerance.
    clock32 = np.cumsum(np.asarray(res.trajectories["dt"][0], np.float32), dtype=np.float32)[-1]
    makespan = ref["metrics"]["makespan_s"]
    assert abs(float(clock32) - makespan) > 10 * LONG_TOLERANCES["makespan_s"] * makespan


def test_long_horizon_fcfs_burstgpt() -> None:
    # G=4, B=8, R=8, 20000 steps (the reference takes ~3 s): about 11000 requests.
    _long_run("fcfs", 0, "oracle", "paper", 20_000, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy,lookahead_steps,predictor,semantics",
    [
        ("fcfs", 0, "oracle", "paper"),
        ("bfio", 0, "oracle", "paper"),
        ("jsq_tokens", 0, "oracle", "theory"),
        ("bfio", 2, "noisy", "paper"),
        ("bfio", 3, "classifier", "theory"),
    ],
)
def test_long_horizon_slow(policy: str, lookahead_steps: int, predictor: str, semantics: str) -> None:
    _long_run(policy, lookahead_steps, predictor, semantics, 100_000, seed=11)


# ---------------------------------------------------------------------------------------------
# Slow: the matrix with shapes, lengths, lookahead decay and burn-in drawn per example
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("variant", POLICY_VARIANTS, ids=lambda v: f"{v[0]}_h{v[1]}_{v[2]}")
@pytest.mark.parametrize("semantics", ["paper", "theory"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference_drawn_shapes(variant, semantics: str, data: st.DataObject) -> None:
    policy, lookahead_steps, predictor = variant
    G = data.draw(st.integers(1, 4), label="G")
    B = data.draw(st.integers(1, 6), label="B")
    R = data.draw(st.sampled_from([1, 2, 3, 8]), label="R")
    K = data.draw(st.sampled_from([12, 40]), label="K")
    finite = semantics == "paper" and data.draw(st.booleans(), label="finite stream")
    N = data.draw(st.integers(1, 40), label="N") if finite else None
    wl = DrawnLengths(
        max_prompt=data.draw(st.sampled_from([20, 300]), label="max prompt"),
        max_output=data.draw(st.sampled_from([8, 30]), label="max output"),
        num_requests=N,
    )
    decay = data.draw(st.sampled_from([0.7, 0.5, 1.0]), label="decay") if lookahead_steps else 0.7
    burn = data.draw(st.integers(0, K - 1), label="burn-in") if semantics == "theory" else 0
    cfg = js.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        lookahead_steps=lookahead_steps,
        predictor=predictor,
        semantics=semantics,
        num_steps=K,
        burn_in_steps=burn,
        workload=wl,
        lookahead_decay=decay,
    )
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg, num_seeds=3)
    check_against_reference(cfg, params, seeds)


# ---------------------------------------------------------------------------------------------
# 4. Common drift (theory semantics)
# ---------------------------------------------------------------------------------------------
DRIFTS: tuple[tuple[int, int], ...] = ((0, 0), (0, 2), (1, 4), (1, 1))
# Default run: every policy variant of POLICY_VARIANTS' first column with one drift each (cycled),
# plus the lookahead with each predictor under every non-default drift (its projection adds
# floor(mean drift) = 0, 1 or 2 tokens per future step). Shapes and burn-in vary across cases.
_DRIFT_VARIANTS: list[tuple[str, int, str, tuple[int, int]]] = [
    (p, 0, "oracle", DRIFTS[i % 4]) for i, p in enumerate(js.dp.POLICIES)
] + [
    ("bfio", 1, "oracle", (0, 0)),
    ("bfio", 2, "oracle", (1, 4)),
    ("bfio", 1, "noisy", (0, 2)),
    ("bfio", 3, "classifier", (1, 4)),
    ("bfio", 2, "classifier", (0, 0)),
]
_DRIFT_SHAPES = ((2, 2, 2, 12), (3, 1, 4, 12), (2, 3, 2, 8), (3, 2, 4, 8))
DRIFT_CASES = [
    Case(p, h, pred, "theory", *_DRIFT_SHAPES[i % len(_DRIFT_SHAPES)], burn_in=i % 3, drift=d)
    for i, (p, h, pred, d) in enumerate(_DRIFT_VARIANTS)
]


def test_drift_cases_cover_policies_and_drifts() -> None:
    assert {c.policy for c in DRIFT_CASES} == set(js.dp.POLICIES)
    assert {c.drift for c in DRIFT_CASES} == set(DRIFTS)
    lookahead = {(c.predictor, c.drift) for c in DRIFT_CASES if c.lookahead_steps > 0}
    assert {d for _, d in lookahead} == set(DRIFTS) - {(1, 1)}
    assert {p for p, _ in lookahead} == {"oracle", "noisy", "classifier"}


@pytest.mark.parametrize("case", DRIFT_CASES, ids=lambda c: c.id)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference_with_drift(case: Case, data: st.DataObject) -> None:
    cfg = case.config()
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg)
    res, refs = check_against_reference(cfg, params, seeds)
    lo, hi = case.drift
    for j, ref in enumerate(refs):
        drift = np.asarray(res.trajectories["drift"][j]) if case.drift != (1, 1) else np.ones(case.K)
        assert ((drift >= lo) & (drift <= hi)).all()
        if case.drift == (0, 0):
            # No growth: a worker's load changes only by completions and admissions, so the
            # post-growth loads of step k are the post-admission loads of step k - 1.
            np.testing.assert_array_equal(
                res.trajectories["hist_loads"][j][1:], res.trajectories["post_admission_loads"][j][:-1]
            )
            assert ref["hist_loads"][1:] == ref["post_admission_loads"][:-1]


@pytest.mark.slow
@pytest.mark.parametrize("variant", POLICY_VARIANTS, ids=lambda v: f"{v[0]}_h{v[1]}_{v[2]}")
@pytest.mark.parametrize("drift", DRIFTS, ids=lambda d: f"drift{d[0]}_{d[1]}")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_matches_reference_with_drift_drawn_shapes(variant, drift, data: st.DataObject) -> None:
    policy, lookahead_steps, predictor = variant
    G = data.draw(st.integers(1, 4), label="G")
    B = data.draw(st.integers(1, 6), label="B")
    R = data.draw(st.sampled_from([1, 2, 3, 8]), label="R")
    K = data.draw(st.sampled_from([12, 40]), label="K")
    wl = DrawnLengths(
        max_prompt=data.draw(st.sampled_from([20, 300]), label="max prompt"),
        max_output=data.draw(st.sampled_from([8, 30]), label="max output"),
    )
    cfg = js.dp.DPConfig(
        num_workers=G,
        slots_per_worker=B,
        pool_size=R,
        policy=policy,
        lookahead_steps=lookahead_steps,
        predictor=predictor,
        semantics="theory",
        num_steps=K,
        burn_in_steps=data.draw(st.integers(0, K - 1), label="burn-in"),
        workload=wl,
        drift=drift,
    )
    params = draw_params(data, cfg)
    seeds = draw_seeds_and_lengths(data, cfg, num_seeds=3)
    check_against_reference(cfg, params, seeds)


def test_drift_draw_matches_the_counter_rng() -> None:
    # The reference's stdlib hash is jaxsched.rng.uniform(seed, k, STREAM_DRIFT) bit for bit, and
    # the engine's integer floor equals the reference's float floor, for every drift range shape.
    seeds = np.array([0, 1, 7, 2**31 - 1, 2**32 - 1, 123456789], np.uint32)
    ks = np.arange(1, 3001, dtype=np.int32)
    u = np.asarray(rng.uniform(jnp.asarray(seeds)[:, None], jnp.asarray(ks)[None, :], rng.STREAM_DRIFT))
    for i, seed in enumerate(seeds.tolist()):
        expected = [drift_uniform(seed, k) for k in ks[:500].tolist()]
        np.testing.assert_array_equal(u[i, :500].astype(np.float64), expected)
    draw = jax.jit(step_drift, static_argnums=0)
    for drift in ((0, 2), (1, 4), (3, 3), (0, 64), (63, 64), (1, 1)):
        cfg = js.dp.DPConfig(
            num_workers=1, slots_per_worker=1, pool_size=1, semantics="theory", drift=drift, workload=js.BurstGPTLike()
        )
        for seed in seeds.tolist()[:3]:
            got = np.asarray(jax.vmap(lambda k: draw(cfg, jnp.uint32(seed), k))(jnp.asarray(ks)))
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, [reference_step_drift(seed, k, drift) for k in ks.tolist()])


def test_default_drift_records_no_drift_and_matches_constant_one() -> None:
    # (1, 1) draws nothing and adds no output; a theory run's loads grow by exactly one token per
    # active request per step, which the reference and the fixed-value tests pin. (0, 0) with the
    # same lengths keeps every load constant between completions and admissions.
    wl = js.Independent(js.Constant(4), js.Constant(3))
    base = dict(
        num_workers=2, slots_per_worker=2, pool_size=2, policy="fcfs", semantics="theory", num_steps=6, workload=wl
    )
    plain = simulate(js.dp.DPConfig(**base), js.dp.make_params(js.dp.DPConfig(**base)), [5], record=True)
    assert "drift" not in plain.trajectories
    # Every request (4, 3): step 0 loads (8, 8); steps 1, 2 grow to 10, 12; step 3 completes all
    # four (hist 14) and admits the two pooled ones on worker 0 (fcfs): (8, 0).
    np.testing.assert_array_equal(plain.trajectories["hist_loads"][0][:3], [[10, 10], [12, 12], [14, 14]])
    np.testing.assert_array_equal(plain.trajectories["post_admission_loads"][0][:3], [[10, 10], [12, 12], [8, 0]])
    still = simulate(js.dp.DPConfig(**base, drift=(0, 0)), js.dp.make_params(js.dp.DPConfig(**base)), [5], record=True)
    np.testing.assert_array_equal(still.trajectories["drift"][0], np.zeros(6))
    np.testing.assert_array_equal(still.trajectories["hist_loads"][0][:3], [[8, 8]] * 3)
    np.testing.assert_array_equal(still.trajectories["post_admission_loads"][0][:3], [[8, 8], [8, 8], [8, 0]])
    # Completions count decode steps, not tokens: the same requests finish in the same steps
    # (four at step 3, the two admitted then at step 6).
    assert still.metrics["num_finished"][0] == plain.metrics["num_finished"][0] == 6


# ---------------------------------------------------------------------------------------------
# Edge cases of the spec
# ---------------------------------------------------------------------------------------------
def test_non_live_steps_record_zero_duration() -> None:
    # fcfs, G=1, B=1, R=1, one request (s, o) = (2, 1): live at step 1 only. The spec: a step
    # that is not live changes nothing; the reference records dt = 0 for it, and the clock and
    # makespan (1 + 0.5 * 2 = 2 s) agree that no time passes.
    cfg = js.dp.DPConfig(
        num_workers=1,
        slots_per_worker=1,
        pool_size=1,
        policy="fcfs",
        num_steps=3,
        workload=js.Trace(np.array([2]), np.array([1]), order="sequential"),
    )
    params = js.dp.make_params(cfg, step_const_s=1.0, per_token_s=0.5)
    res = simulate(cfg, params, [0], record=True)
    ref = run_reference(cfg, params, 0)
    assert ref["live"] == [True, False, False] and ref["dt"] == [2.0, 0.0, 0.0]
    assert res.metrics["makespan_s"][0] == 2.0
    np.testing.assert_array_equal(res.trajectories["live"][0], [True, False, False])
    np.testing.assert_array_equal(res.trajectories["dt"][0], [2.0, 0.0, 0.0])


def test_theory_p99_includes_step0_admissions() -> None:
    # Theory, fcfs, G=1, B=100, R=1, every request (s, o) = (1, 1), one step, C = 1, t_l = 0.5.
    # Step 0 places r0..r99 (delay 0) and pools r100 (revealed at 0). Step 1 (dt = 1 + 0.5 * 100
    # = 51 s) admits r100 with delay 51. Admitted: 101 delays, 100 of them 0; the p99 is the
    # value at index ceil(0.99 * 101) - 1 = 99 of the sorted delays: 0. (The mean, 51 / 101,
    # already counts all 101.) Leaving the step-0 placements out of the histogram gives ~51 s.
    cfg = js.dp.DPConfig(
        num_workers=1,
        slots_per_worker=100,
        pool_size=1,
        policy="fcfs",
        semantics="theory",
        num_steps=1,
        workload=js.Independent(js.Constant(1), js.Constant(1)),
    )
    params = js.dp.make_params(cfg, step_const_s=1.0, per_token_s=0.5)
    m = simulate(cfg, params, [0], record=True).metrics
    ref = run_reference(cfg, params, 0)["metrics"]
    assert ref["num_admitted"] == m["num_admitted"][0] == 101
    assert ref["queue_delay_mean_s"] == pytest.approx(m["queue_delay_mean_s"][0]) == 51 / 101
    assert ref["queue_delay_p99_s"] == 0.0
    assert m["queue_delay_p99_s"][0] == 0.0
