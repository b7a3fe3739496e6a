"""Threshold tuning of Nested WAIT on the E3 / E4 operating points (`jaxsched tune e3|e4`).

The experiment driver around the relaxation (`jaxsched.kv.relaxed`) and the tuner
(`jaxsched.kv.tune`): `tune_setup` builds an operating point (`_POINTS`), `tune_experiment` tunes
its thresholds on the relaxation, rounds them, and compares them with the fluid-derived
thresholds (`fluid_baselines`) in the exact engine on held-out seeds (`exact_comparison`).

A held-out comparison in the exact engine is only meaningful between stable systems, so
`exact_comparison` checks every arm (`stability_issues`: no dropped arrivals, no arrivals lost
to a full request table, every request completed, every seed finished) and marks the comparison
invalid otherwise (the CLI then exits with status 2). The operating points and the measured
results: docs/kv-experiments.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import require, require_float, require_int
from ..results import format_value, markdown_table, write_csv
from ..rng import check_seeds
from ..stats import mean_ci
from .config import KVConfig, KVParams, _segment_work, default_thresholds, make_params
from .fluid import (
    FluidTypes,
    Segments,
    equilibrium,
    nested_segments,
    nested_thresholds,
    nested_thresholds_practical,
    stage_work,
)
from .metrics import settling, stability_issues
from .relaxed import RelaxedConfig, RelaxedSystem, objective, relaxed_system


@dataclass(frozen=True)
class TuneSetup:
    """An operating point of Nested WAIT for threshold tuning (static; see `tune_setup`).

    config: the exact engine's KVConfig (policy nested_wait, finite N, drain).
    rates: (m,) req/s; d0_s (s), d1_s_per_token (s/token), capacity_tokens C.
    lam: tokens/s per s of mean latency in the objective throughput - lam * latency.
    memory_weight: tokens/s per unit of relative overflow (relaxation only).
    throughput_star: fluid throughput (8), tokens/s; latency_fluid: fluid latency
    dT* sum_j (lambda_j / Lambda)(l'_j + 1), s (every stage one fluid iteration).
    relaxed: the relaxation's RelaxedConfig. learning_rate: Adam's, on log-thresholds.
    burn_in: K, the requests at each end of an exact run left out of its measurement (docs
    kv-semantics §8): the exact objective is the steady-state window's.
    """

    name: str
    config: KVConfig
    rates: tuple[float, ...]
    d0_s: float
    d1_s_per_token: float
    capacity_tokens: int
    lam: float
    memory_weight: float
    throughput_star: float
    latency_fluid: float
    relaxed: RelaxedConfig
    learning_rate: float = 0.03
    burn_in: int = 0

    def exact_params(self, thresholds) -> KVParams:
        """KVParams of the exact engine with integer thresholds [L] (None = the fluid default)."""
        return make_params(
            self.config,
            rates=self.rates,
            d0_s=self.d0_s,
            d1_s_per_token=self.d1_s_per_token,
            capacity_tokens=self.capacity_tokens,
            thresholds=thresholds,
            burn_in_requests=self.burn_in,
        )

    def segments(self) -> Segments:
        """The fluid module's Segments of this setup (one segment per type)."""
        types = FluidTypes(
            prefill=np.asarray(self.config.prefill_tokens, float),
            decode=np.asarray(self.config.decode_tokens),
            rates=np.asarray(self.rates),
            d0=self.d0_s,
            d1=self.d1_s_per_token,
            capacity=float(self.capacity_tokens),
        )
        return nested_segments(types)

    def system(self) -> RelaxedSystem:
        """The relaxation of this setup."""
        return relaxed_system(
            self.config,
            rates=self.rates,
            d0_s=self.d0_s,
            d1_s_per_token=self.d1_s_per_token,
            capacity_tokens=float(self.capacity_tokens),
        )


# Workloads of notes/001.md §4: (prefill, decode lengths, rate ratios).
_WORKLOADS = {
    "e3": (10, (20, 40, 80, 160), (20, 40, 80, 160)),
    "e4": (60, tuple(range(50, 501, 50)), (23, 11, 8, 7, 6, 4, 3, 2, 1, 1)),
}
# Operating points: total rate Lambda (req/s), load rho = d1 A, fluid entry threshold
# n_1* = Lambda dT* (sets d0 = (n_1* / Lambda)(1 - rho)), requests N, table size Q, relaxation
# steps / burn-in, Adam learning rate (on log-thresholds; smaller for E4, whose objective
# falls off a cliff once n_1 < n_1*, a cliff the damped gradients do not climb back).
# n_1* is kept small for fast exact runs. E3: n_1* = 6 is an integer, so the fluid n_1 = 6 sits
# on the first line of (10) (arrivals per iteration = n_1: a critical stage-0 queue), and the
# later fluid values (5.6, 4.8, 3.2) are rounded up (the authors' code, make_params' default),
# above their inflow; the tail-rate practical rule gives the same integers. This is the room:
# notes §3.2, the paper's thresholds sit on the boundary of (10). E4: n_1* = 32.5 (rounded
# thresholds 33:22:16:12:9:6:4:2:1:1, all above the fluid values, half the paper's
# 66:43:32:24:17:11:7:4:2:1); its last segments receive fewer than one request per stage and
# iteration. The table size Q matters for E4: the engine's request table is a ring (request id
# in slot id mod Q), so Q must exceed the arrivals during the longest stay, about
# Lambda (l'_max + 1) dT* = 50 * 501 * 0.65 = 16.3k requests (every stage one fluid iteration);
# Q = 32768 is 2x that bound (`tune_setup` checks Q >= _TABLE_MARGIN x it). Why this matters,
# measured: docs/kv-experiments.md.
_POINTS = {
    "e3": dict(total_rate=20.0, rho=0.6, n1=6.0, num_requests=12_000, table_size=4096, steps=1500, burn=500, lr=0.03),
    "e4": dict(
        total_rate=50.0, rho=0.6, n1=32.5, num_requests=15_000, table_size=32_768, steps=2500, burn=1000, lr=0.01
    ),
}
# Margin of Q over the arrivals during the longest fluid stay, Lambda (l'_max + 1) dT*.
_TABLE_MARGIN = 1.5
TUNE_SETUPS = tuple(_POINTS)


def tune_setup(
    name: str,
    *,
    num_requests: int | None = None,
    lam: float | None = None,
    lam_factor: float = 0.1,
    capacity_factor: float = 1.0,
    burn_in_fraction: float = 1 / 6,
    samples: int = 8,
) -> TuneSetup:
    """The E3 / E4 operating point `name` (documented in `_POINTS`).

    C = capacity_factor * M^pi of the rounded fluid thresholds (default 1: C = M^pi, memory
    binds, as the experiments' "mpi" rule). burn_in_fraction: K = that fraction of N at each
    end of an exact run is left out of its measurement (the middle two thirds by default).
    lam default: lam_factor * throughput* / latency_fluid: with lam_factor = 1 a 1% change of
    throughput and a 1% change of latency (relative to the fluid values) move the objective
    equally; the default 0.1 prices 1% of throughput like 10% of latency.
    """
    require(isinstance(name, str) and name in _POINTS, "name", f"one of {TUNE_SETUPS}", name)
    lam_factor = require_float(lam_factor, "lam_factor", lo=0.0)
    capacity_factor = require_float(capacity_factor, "capacity_factor", lo=0.0, lo_open=True)
    # K requests at each end are left out: 2 K < N keeps a window to measure.
    burn_in_fraction = require_float(burn_in_fraction, "burn_in_fraction", lo=0.0)
    require(burn_in_fraction < 0.5, "burn_in_fraction", "a finite number >= 0 and < 0.5 (2 K < N)", burn_in_fraction)
    require_int(samples, "samples", lo=1)
    pre, dec, ratio = _WORKLOADS[name]
    pt = _POINTS[name]
    ratio = np.asarray(ratio, np.float64)
    rates = pt["total_rate"] * ratio / ratio.sum()
    dec_a = np.asarray(dec)
    work = float(np.dot(rates, stage_work(pre, dec_a)))
    d1 = pt["rho"] / work
    d0 = pt["n1"] / pt["total_rate"] * (1 - pt["rho"])
    N = pt["num_requests"] if num_requests is None else require_int(num_requests, "num_requests", lo=1)
    config = KVConfig(
        prefill_tokens=(pre,) * len(dec),
        decode_tokens=dec,
        policy="nested_wait",
        num_requests=N,
        table_size=pt["table_size"],
        max_steps=400_000,
    )
    # The ring table must outlast the longest stay (see _POINTS), else arrivals are lost:
    # Lambda (l'_max + 1) dT* = (l'_max + 1) n_1* arrivals.
    stay = float((dec_a.max() + 1) * pt["n1"])
    require(
        pt["table_size"] >= _TABLE_MARGIN * stay,
        "table_size",
        f">= {_TABLE_MARGIN} x the arrivals during the longest fluid stay ({stay:.0f})",
        pt["table_size"],
    )
    n_fluid = default_thresholds(config, rates, d0, d1, 1e12)
    C = int(np.ceil(capacity_factor * float(np.dot(n_fluid, _segment_work(config)))))
    eq = equilibrium(
        FluidTypes(prefill=np.full(len(dec), float(pre)), decode=dec_a, rates=rates, d0=d0, d1=d1, capacity=float(C))
    )
    lat = eq.iteration_time * float(np.dot(rates / rates.sum(), dec_a + 1))
    lam = lam_factor * eq.throughput / lat if lam is None else require_float(lam, "lam", lo=0.0)
    return TuneSetup(
        name=name,
        config=config,
        rates=tuple(rates.tolist()),
        d0_s=d0,
        d1_s_per_token=d1,
        capacity_tokens=C,
        lam=lam,
        memory_weight=10.0 * eq.throughput,
        throughput_star=eq.throughput,
        latency_fluid=lat,
        relaxed=RelaxedConfig(steps=pt["steps"], burn_steps=pt["burn"], samples=samples),
        learning_rate=pt["lr"],
        burn_in=int(N * burn_in_fraction),
    )


def fluid_baselines(setup: TuneSetup) -> dict[str, np.ndarray]:
    """Fluid-derived integer thresholds: "fluid" = ceil(c_min Lambda_i) (make_params' default),
    "practical" = the tail-rate rule of Sec. 6.2 with the batch limit B = sum_i s_i c_min
    Lambda_i (the fluid batch; rounded up as the authors' code does). Values: (L,) int64."""
    seg = setup.segments()
    fluid = default_thresholds(
        setup.config, np.asarray(setup.rates), setup.d0_s, setup.d1_s_per_token, float(setup.capacity_tokens)
    )
    B = int(round(float(np.dot(seg.stages, nested_thresholds(seg)))))
    return {
        "fluid": np.asarray(fluid, np.int64),
        "practical": np.asarray(nested_thresholds_practical(seg, B), np.int64),
    }


def relaxed_objective(setup: TuneSetup) -> Callable[[jnp.ndarray, jax.Array, float], jnp.ndarray]:
    """objective(thresholds, key, temperature) of the relaxation for jaxsched.kv.tune.tune, in
    units of throughput* (so its gradients are O(1)): (thr - lam lat - w overflow) / thr*.
    thresholds: float[L]; returns a float32 scalar."""
    sys = setup.system()
    scale = 1.0 / setup.throughput_star

    def fn(thresholds, key, temp):
        return scale * objective(
            sys, setup.relaxed, thresholds, temp, key, lam=setup.lam, memory_weight=setup.memory_weight
        )

    return fn


def exact_objective(setup: TuneSetup, thresholds, seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """Run the exact engine with integer thresholds [L] on `seeds`; per-seed metrics [S] plus
    "objective" = window_throughput_tokens_per_s - lam * latency_mean_s (tokens/s), both over
    the measurement window (setup.burn_in)."""
    from ..run import simulate

    res = simulate(setup.config, setup.exact_params(thresholds), seeds)
    out = dict(res.metrics)
    out["objective"] = out["window_throughput_tokens_per_s"] - setup.lam * out["latency_mean_s"]
    out["wall_s"] = np.full(len(seeds), res.wall_s)
    return out


def exact_comparison(
    setup: TuneSetup, candidates: dict[str, np.ndarray], seeds: list[int], *, log: Callable[[str], None] | None = None
) -> dict:
    """Exact runs of every candidate (label -> int thresholds [L]; "tuned" first) on the same
    seeds, paired differences tuned - baseline of the objective, and the stability guard.

    Returns {"exact": label -> per-seed metrics, "diffs": baseline -> mean_ci tuple,
    "issues": label -> stability_issues, "valid": True only when every arm is stable,
    "table": markdown of the arms, "diff_table": markdown of the differences, "wall_s"}.
    A difference between arms of which one is unstable is reported but marked invalid.
    log: called with one line of text per arm (None: silent).
    """
    say = log or (lambda msg: None)
    exact, done, t1 = {}, {}, time.perf_counter()
    for label, th in candidates.items():
        k = tuple(np.asarray(th).tolist())
        if k not in done:  # equal thresholds give equal runs: simulate once
            done[k] = exact_objective(setup, th, seeds)
        exact[label] = done[k]
        say(f"exact {label} {np.asarray(th).tolist()}: objective {exact[label]['objective'].mean():.1f}")
    wall = time.perf_counter() - t1
    N = setup.config.num_requests
    window = N - 2 * setup.burn_in
    # With a burn-in the window must be the steady state (`settling`); without one it holds
    # the start-up transient by construction.
    issues = {
        label: stability_issues(m, N) + (settling(m, window)[3] if setup.burn_in else []) for label, m in exact.items()
    }
    diffs = {b: mean_ci(exact["tuned"]["objective"] - exact[b]["objective"]) for b in candidates if b != "tuned"}
    rows = []
    for label, th in candidates.items():
        m = exact[label]
        mo, _, ho, _ = mean_ci(m["objective"])
        rows.append(
            [
                label,
                str(np.asarray(th).tolist()),
                f"{format_value(mo)} ± {format_value(ho)}",
                format_value(m["window_throughput_tokens_per_s"].mean()),
                format_value(m["latency_mean_s"].mean()),
                format_value(m["preemption_count"].mean()),
                format_value(m["num_dropped"].sum() + m["table_overflow"].sum()),
                format_value(m["num_completed"].mean()),
                "yes" if not issues[label] else "NO: " + "; ".join(issues[label]),
            ]
        )
    table = markdown_table(
        [
            "thresholds",
            "n",
            "objective (tokens/s) ± 95% CI",
            "throughput (tokens/s)",
            "latency (s)",
            "preemptions",
            "dropped + table overflow",
            "completed per seed",
            "stable",
        ],
        rows,
    )
    dl = []
    for b, d in diffs.items():
        ok = not issues["tuned"] and not issues[b]
        dl.append(
            [
                f"tuned - {b}",
                format_value(d[0]),
                f"[{format_value(d[0] - d[2])}, {format_value(d[0] + d[2])}]",
                "yes" if abs(d[0]) > d[2] else "no",
                "yes" if ok else "NO (an arm is unstable)",
            ]
        )
    diff_table = markdown_table(["difference", "mean", "95% CI", "excludes 0", "valid"], dl)
    return {
        "exact": exact,
        "diffs": diffs,
        "issues": issues,
        "valid": not any(issues.values()),
        "table": table,
        "diff_table": diff_table,
        "wall_s": wall,
    }


def search_start(thresholds, n1_min: int) -> np.ndarray:
    """(L,) float64: tuned thresholds with n_1 raised to n1_min: the integer search moves by
    +-1 and scores n_1 < n1_min as -inf, so it must start inside the bound."""
    start = np.asarray(thresholds, np.float64).copy()
    start[0] = max(start[0], n1_min)
    return start


def _report_step(bar, say: Callable[[str], None], i: int, steps: int, value: float) -> None:
    """After optimizer step i (0-based): advance the bar; a text line every 25 steps."""
    if bar is not None:
        bar(i + 1, steps)
    if i % 25 == 0:
        say(f"step {i}: objective {value:.4f}")


def tune_experiment(
    name: str,
    *,
    steps: int = 200,
    lam: float | None = None,
    seeds: Sequence[int] = range(1000, 1032),
    out_dir: str | Path | None = None,
    key: int = 0,
    log: Callable[[str], None] | None = None,
) -> dict:
    """`jaxsched tune e3|e4`: tune the Nested WAIT thresholds of `name` on the relaxation, round
    them, and compare them with the fluid-derived thresholds in the exact engine on `seeds`
    (held out: the relaxation only ever sees jax PRNG keys derived from `key`).

    Steps: (1) jaxsched.kv.tune.tune from the real fluid thresholds c_min Lambda_i; (2) rounding by
    jaxsched.kv.tune.integer_search around the tuned values on the relaxation at temperature 0.05
    (16 samples, one fixed key), among integers with n_1 >= ceil(Lambda dT*) (stage 0 keeps up); (3)
    `exact_comparison`: exact runs of tuned, "fluid" and
    "practical" thresholds on the same seeds (common random numbers), per-seed objective
    throughput - lam * latency, the 95% CI of the paired differences tuned - baseline
    (jaxsched.results.mean_ci), and the stability guard (valid = no arm drops arrivals, loses
    them to a full table or leaves requests unfinished).
    out_dir: writes thresholds.json, history.csv, tuning.png, heldout.csv, comparison.md.
    log: a `jaxsched.progress.Progress` bar (advanced per optimizer step, lines written above
    it), or a callable given one line of text per progress report (None: silent).
    Returns {"setup", "result", "tuned", "baselines", "exact", "diffs", "issues", "valid",
    "markdown", wall times}.
    """
    # Every argument is checked before the minutes of tuning start.
    require(isinstance(name, str) and name in _POINTS, "name", f"one of {TUNE_SETUPS}", name)
    steps = require_int(steps, "steps", lo=1)
    if lam is not None:
        require_float(lam, "lam", lo=0.0)
    # The comparison is paired over seeds: its CI needs two of them.
    seeds = check_seeds(seeds)
    require(len(seeds) >= 2, "seeds", "at least two held-out seeds (a paired 95% CI)", seeds.tolist())
    key = require_int(key, "key", lo=0, hi=2**31 - 2)
    require(out_dir is None or isinstance(out_dir, (str, os.PathLike)), "out_dir", "None or a folder path", out_dir)
    if out_dir is not None:
        require(
            not Path(out_dir).exists() or Path(out_dir).is_dir(),
            "out_dir",
            "a folder (it exists and is not one)",
            str(out_dir),
        )
    require(log is None or callable(log), "log", "None or a callable log(line)", log)
    # Deferred: the optimizer stack is needed only when tuning runs.
    import optax

    from ..progress import Progress
    from .tune import integer_search, tune

    bar = log if isinstance(log, Progress) else None
    say = bar.write if bar is not None else (log or (lambda msg: None))
    setup = tune_setup(name, lam=lam)
    seeds = [int(s) for s in seeds]
    init = nested_thresholds(setup.segments())
    t0 = time.perf_counter()
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(setup.learning_rate))
    res = tune(
        relaxed_objective(setup),
        init,
        steps=steps,
        key=jax.random.PRNGKey(key),
        optimizer=opt,
        progress=lambda i, v: _report_step(bar, say, i, steps, v),
    )
    fine = dataclasses.replace(setup, relaxed=dataclasses.replace(setup.relaxed, samples=16))
    fn = jax.jit(relaxed_objective(fine))
    score_key = jax.random.PRNGKey(key + 1)
    n1_min = int(np.ceil(init[0] * (1 - 1e-9)))

    def score(x) -> float:
        # Only n_1 >= Lambda dT* (the fluid entry threshold, rounded up): fewer entries per
        # iteration than arrive per fluid iteration and the stage-0 queue grows without bound,
        # which the relaxation's finite horizon can miss when C binds and small batches look
        # cheap.
        if x[0] < n1_min:
            return -np.inf
        return float(fn(jnp.asarray(x, jnp.float32), score_key, 0.05))

    tuned, _ = integer_search(score, search_start(res.thresholds, n1_min))
    tune_wall = time.perf_counter() - t0
    say(f"tuned {np.round(res.thresholds, 3).tolist()} -> {tuned.tolist()} ({tune_wall:.1f} s)")
    candidates = {"tuned": tuned, **fluid_baselines(setup)}
    cmp = exact_comparison(setup, candidates, seeds, log=say)
    verdict = (
        "All arms stable: the comparison is valid."
        if cmp["valid"]
        else "**INVALID comparison**: at least one arm dropped arrivals, lost them to a full "
        "request table or left requests unfinished (column stable); its throughput and "
        "latency describe a truncated run."
    )
    md = (
        f"# jaxsched tune {name}\n\nOperating point: rates {np.round(setup.rates, 4).tolist()} "
        f"req/s, d0 = {setup.d0_s:.6g} s, d1 = {setup.d1_s_per_token:.6g} s/token, "
        f"C = {setup.capacity_tokens} tokens, N = {setup.config.num_requests} requests, "
        f"Q = {setup.config.table_size}, segments {list(setup.config.segment_bounds)}; "
        f"lam = {setup.lam:.6g} (tokens/s)/s; {len(seeds)} held-out seeds "
        f"{seeds[0]}..{seeds[-1]}.\n\n{cmp['table']}\n\n{verdict}\n\nPaired differences "
        f"of the objective (same seeds):\n\n{cmp['diff_table']}\n\nWall: tuning + rounding "
        f"{tune_wall:.1f} s, exact runs {cmp['wall_s']:.1f} s.\n"
    )
    out = {
        "setup": setup,
        "result": res,
        "tuned": tuned,
        "baselines": candidates,
        "exact": cmp["exact"],
        "diffs": cmp["diffs"],
        "issues": cmp["issues"],
        "valid": cmp["valid"],
        "markdown": md,
        "tune_wall_s": tune_wall,
        "exact_wall_s": cmp["wall_s"],
    }
    if out_dir is not None:
        _write_experiment(Path(out_dir), out, seeds)
    return out


def _write_experiment(out: Path, run: dict, seeds: list[int]) -> None:
    """The files of `tune_experiment` (see there)."""
    from .plots import plot_tuning  # deferred: matplotlib

    out.mkdir(parents=True, exist_ok=True)
    setup, res = run["setup"], run["result"]
    doc = {
        "experiment": setup.name,
        "lam": setup.lam,
        "rates": list(setup.rates),
        "d0_s": setup.d0_s,
        "d1_s_per_token": setup.d1_s_per_token,
        "capacity_tokens": setup.capacity_tokens,
        "num_requests": setup.config.num_requests,
        "tuned_real": res.thresholds.tolist(),
        **{k: np.asarray(v).tolist() for k, v in run["baselines"].items()},
        "diffs": {k: {"mean": d[0], "half_width_95": d[2], "n": d[3]} for k, d in run["diffs"].items()},
        "valid": run["valid"],
        "issues": run["issues"],
        "tune_wall_s": run["tune_wall_s"],
        "exact_wall_s": run["exact_wall_s"],
    }
    (out / "thresholds.json").write_text(json.dumps(doc, indent=2))
    h = res.history
    write_csv(
        out / "history.csv",
        (
            {
                "step": int(h["step"][i]),
                "objective": h["objective"][i],
                "temperature": h["temperature"][i],
                **{f"n{j + 1}": h["thresholds"][i, j] for j in range(h["thresholds"].shape[1])},
            }
            for i in range(len(h["step"]))
        ),
    )
    plot_tuning(
        h,
        out / "tuning.png",
        title=(
            f"{setup.name.upper()}, Nested WAIT thresholds on the relaxation: {len(h['step'])} Adam steps, "
            f"{setup.relaxed.samples} arrival samples per step, Lambda = {sum(setup.rates):g} req/s, "
            f"C = {setup.capacity_tokens:,} tokens, N = {setup.config.num_requests:,} requests "
            f"(exact comparison: {len(seeds)} held-out seeds)"
        ),
    )
    write_csv(
        out / "heldout.csv",
        (
            {
                "thresholds": label,
                "seed": s,
                **{
                    k: m[k][i]
                    for k in (
                        "objective",
                        "window_throughput_tokens_per_s",
                        "latency_mean_s",
                        "preemption_count",
                        "num_completed",
                        "num_dropped",
                        "table_overflow",
                    )
                },
            }
            for label, m in run["exact"].items()
            for i, s in enumerate(seeds)
        ),
    )
    (out / "comparison.md").write_text(run["markdown"])


def es_experiment(
    name: str,
    *,
    population: int = 12,
    generations: int = 8,
    train_seeds: Sequence[int] = range(8),
    seeds: Sequence[int] = range(1000, 1032),
    searcher: str = "cma_es",
    key: int = 0,
    others: dict[str, Sequence[int]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The thresholds of `name` searched by an evolution strategy on the exact engine
    (`jaxsched.tune`), with the gradient tuner's objective: the window throughput - lam * the
    window's mean latency (`exact_objective`), infeasible where a run drops arrivals or loses
    them to a full table, each integer threshold in [1, 3 max(fluid)], the fluid thresholds as
    the baseline; then `exact_comparison` of the ES thresholds ("tuned")
    against the fluid and practical ones and `others` (label -> thresholds, e.g. the gradient
    tuner's) on the held-out `seeds`. Returns {"search": the TuneResult, "tuned", plus
    exact_comparison's entries}."""
    from ..tune import Constraint, Field, Objective, tune

    require(isinstance(name, str) and name in _POINTS, "name", f"one of {TUNE_SETUPS}", name)
    setup = tune_setup(name)
    base = fluid_baselines(setup)
    fluid = [int(x) for x in base["fluid"]]
    fixed = dict(
        rates=setup.rates,
        d0_s=setup.d0_s,
        d1_s_per_token=setup.d1_s_per_token,
        capacity_tokens=setup.capacity_tokens,
        burn_in_requests=setup.burn_in,
    )
    # A run that drops arrivals or loses them to a full table measures fewer requests than
    # arrived: infeasible, as the comparison's stability guard would mark it.
    lost = (Constraint("num_dropped", "<=", 0.0), Constraint("table_overflow", "<=", 0.0))
    objective = Objective(f"window_throughput_tokens_per_s - {setup.lam!r}*latency_mean_s", "max", lost)
    res = tune(
        setup.config,
        [Field("thresholds", 1, 3 * max(fluid), "int", size=len(fluid))],
        objective,
        fixed=fixed,
        baseline={"thresholds": tuple(fluid)},
        train_seeds=train_seeds,
        test_seeds=seeds,
        searcher=searcher,
        population=population,
        generations=generations,
        seed=key,
        progress=progress,
    )
    if res.best is None:
        return {"search": res, "tuned": None}
    tuned = np.asarray(res.best["thresholds"], np.int64)
    candidates = {"tuned": tuned, **base, **{k: np.asarray(v, np.int64) for k, v in (others or {}).items()}}
    cmp = exact_comparison(setup, candidates, [int(s) for s in seeds])
    return {"search": res, "tuned": tuned, "setup": setup, **cmp}
