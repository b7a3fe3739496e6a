"""jaxsched's batched evolution strategy against Optuna one candidate at a time, on the same
tuning problem, the same evaluation budget and the same held-out seeds.

    python -m benchmarks.tune_optuna sarathi [--quick] [--repeats 2] [--out STEM] [--overwrite]
    python -m benchmarks.tune_optuna bfio [--quick] ...

Problems (`PROBLEMS`):
- sarathi: `examples/tune/sarathi_ttft.toml`: Sarathi's token budget b in [64, 2048] and batch
  cap M in [16, 512] (integers) for the p99 time to first token at Fig. 1's load (14.3
  requests/s, 300 s after a 60 s burn-in), subject to token_growth_per_s <= 69; baseline Fig. 1's
  b = 512, M = 256. 16 candidates x 12 generations x 8 training seeds, 32 held-out seeds.
- bfio: the dp engine on the BurstGPT trace (`../shared/data/burstgpt_8000.csv`, resampled per
  seed; G = 16, B = 72, R = 64, 1000 decode steps), BF-IO's lookahead H in 1..8 and its window
  decay in [0.3, 1], minimising the mean imbalance avg_imbalance_tokens (the BF-IO paper's
  headline metric, Table 1's first column); baseline Table 1's setting, H = 20 with the paper's
  undiscounted window (decay 1). 8 candidates x 6 generations x 4 training seeds, 16 held-out
  seeds. Both fields are Config fields: jaxsched.tune runs every candidate padded into one size
  bucket (H = 20 here: the largest of the field's range and the baseline); Optuna's trials are
  padded into the same bucket (`one_run`), so that every trial reuses one compiled program and
  does the ES's per-run work.

Methods, interleaved in one process (Optuna, ES, Optuna, ES, ... for --repeats rounds; the
round r searchers both take seed r), each started cold (`jax.clear_caches()` before it, so each
pays its compilation as a fresh process would):
- optuna: Optuna's default sampler (TPE, `optuna.samplers.TPESampler(seed=r)`) asking for one
  candidate per trial, which runs alone: make_params (and, for Config fields, the padded
  config) for that candidate, then one `jaxsched.run.simulate_points` call with that one point
  over the training seeds: the way the BF-IO authors' `scripts/optimize.py` drives their
  simulator. Integer fields are `suggest_int`, real ones `suggest_float` (log for a log field),
  choices `suggest_categorical`. Constraints: a trial returns the penalised fitness of
  jaxsched.tune (`fitness` below: the objective, negated for "max", when every constraint
  holds; else 1e20 x (1 + the total relative violation); 1e27 for a candidate make_params
  refuses), not Optuna's constraints_func, so both searchers rank the same numbers. When the
  baseline lies in the fields' ranges it is the first trial (`enqueue_trial`), as it is the
  ES's first candidate.
- es: `jaxsched.tune.tune` with CMA-ES, the population x the training seeds in one
  simulate_points call per generation.
Both see population x generations candidates x the training seeds (the evaluation budget,
`evaluations` in the JSON). Wall times count from the searcher's start to its last evaluation
(held-out runs excluded); compile_s sums JAX's tracing, lowering and backend-compile durations
during the search (`jax.monitoring`), compiles counts the backend compilations (block_compiles
those of the engine's block program), first_call_s is the first trial's or generation's time.

Speed ratio (per round). Each method's best-so-far training fitness is a step function of wall
time (Optuna: after each trial; ES: after each generation). The target is the worse of the two
methods' final best training fitnesses, which both reach by construction; t_m is the first wall
time at which method m's best-so-far fitness is at least as good as the target, and
speed_ratio = t_optuna / t_es. The held-out check then runs the two candidates that were best
at t_optuna and t_es on the held-out seeds (`jaxsched.tune.held_out`, one paired comparison):
their held-out mean objectives, and their paired difference (es - optuna) with its 95% CI.
total_ratio = Optuna's wall / the ES's wall for the whole budget. Each method's final best also
runs on the held-out seeds against the baseline (the ES's own `TuneResult.test`, the same
`held_out` for Optuna).

Writes STEM.json, STEM.md and STEM.png (best so far against wall time, log time axis), STEM
defaulting to benchmarks/results/tune_optuna_<problem> (with _quick for --quick); refuses to
replace existing files without --overwrite. The load averages before and after go into the
JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from jaxsched.tune import Field, Objective, encode, held_out, parse_objective

_ROOT = Path(__file__).resolve().parents[1]
TRACE = _ROOT.parent / "shared" / "data" / "burstgpt_8000.csv"
# jaxsched.tune's fitness of an infeasible candidate and of one make_params refuses (module
# docstring): ranks above every feasible objective.
INFEASIBLE = 1e20
INVALID = 1e27
# JAX's compile-time events: tracing to a jaxpr, lowering to MLIR, and the backend compile.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
BACKEND_EVENT = COMPILE_EVENTS[2]


@dataclass(frozen=True)
class Problem:
    """One tuning problem: the engine config, the tuned fields (make_params keywords or Config
    fields), the objective, fixed make_params keywords, the baseline, the seeds and the
    evaluation budget (population x generations candidates x len(train_seeds) runs)."""

    name: str
    config: Any
    fields: tuple[Field, ...]
    objective: Objective
    fixed: dict
    baseline: dict
    train_seeds: tuple[int, ...]
    test_seeds: tuple[int, ...]
    population: int
    generations: int

    @property
    def candidates(self) -> int:
        """Candidates each method evaluates."""
        return self.population * self.generations


def sarathi_problem(quick: bool) -> Problem:
    """examples/tune/sarathi_ttft.toml's problem (module docstring); quick: 40 s runs, 4 x 3
    candidates x 2 seeds, and a growth bound of 10% of the offered tokens (short runs' growth
    estimates are noisy; the bound still rules out the unstable budgets, which grow by 500+)."""
    from jaxsched.budget import BudgetConfig

    horizon, burn_in = (40.0, 10.0) if quick else (300.0, 60.0)
    bound = 345 if quick else 69
    return Problem(
        "sarathi",
        BudgetConfig(policy="sarathi", horizon_s=horizon, burn_in_s=burn_in, table_size=1024),
        (Field("budget", 64, 2048, "int"), Field("max_requests", 16, 512, "int")),
        parse_objective("min ttft_p99_s", [f"token_growth_per_s<={bound}"]),
        {"rates": [14.3]},
        {"budget": 512, "max_requests": 256},
        tuple(range(2 if quick else 8)),
        tuple(range(1000, 1002 if quick else 1032)),
        4 if quick else 16,
        3 if quick else 12,
    )


def bfio_problem(quick: bool) -> Problem:
    """BF-IO's lookahead and decay on the BurstGPT trace (module docstring); quick: 100 steps,
    4 x 3 candidates x 2 seeds, 2 held-out seeds."""
    from jaxsched.dp import DPConfig
    from jaxsched.workload import read_trace

    config = DPConfig(
        num_workers=16,
        slots_per_worker=72,
        pool_size=64,
        policy="bfio",
        lookahead_steps=1,
        workload=read_trace(str(TRACE)),
        num_steps=100 if quick else 1000,
    )
    return Problem(
        "bfio",
        config,
        (Field("lookahead_steps", 1, 8, "int"), Field("lookahead_decay", 0.3, 1.0)),
        parse_objective("min avg_imbalance_tokens"),
        {},
        {"lookahead_steps": 20, "lookahead_decay": 1.0},
        tuple(range(2 if quick else 4)),
        tuple(range(1000, 1002 if quick else 1016)),
        4 if quick else 8,
        3 if quick else 6,
    )


PROBLEMS: dict[str, Callable[[bool], Problem]] = {"sarathi": sarathi_problem, "bfio": bfio_problem}


class CompileLog:
    """Every JAX compile-time event of the process as (perf_counter at its end, event, seconds);
    one listener, registered on first use."""

    events: list[tuple[float, str, float]] = []
    _listening = False

    @classmethod
    def start(cls) -> None:
        """Register the listener once."""
        if not cls._listening:
            import jax

            jax.monitoring.register_event_duration_secs_listener(cls._listen)
            cls._listening = True

    @classmethod
    def _listen(cls, event: str, duration: float, **kw: Any) -> None:
        if event in COMPILE_EVENTS:
            name = str(kw.get("fun_name", "")) if event == BACKEND_EVENT else ""
            cls.events.append((time.perf_counter(), event + ("|" + name if name else ""), float(duration)))

    @classmethod
    def between(cls, t0: float, t1: float) -> dict:
        """{compile_s, compiles, block_compiles} of the events that ended in [t0, t1]."""
        ev = [(e, d) for t, e, d in cls.events if t0 <= t <= t1]
        backend = [e for e, _ in ev if e.startswith(BACKEND_EVENT)]
        return {
            "compile_s": float(sum(d for _, d in ev)),
            "compiles": len(backend),
            "block_compiles": sum("run_block" in e for e in backend),
        }


def fitness(metrics: dict, objective: Objective) -> dict:
    """{objective, fitness, feasible} of one candidate from its per-seed metrics ({name:
    float64[seeds]}), ranked as jaxsched.tune ranks its candidates (module docstring)."""
    value = float(np.mean(objective.per_seed(metrics)))
    sign = 1.0 if objective.goal == "min" else -1.0
    over = [c.violation(float(np.mean(metrics[c.metric]))) for c in objective.constraints]
    over = [v for v in over if v > 0] + ([] if math.isfinite(value) else [math.inf])
    if not over:
        return {"objective": value, "fitness": sign * value, "feasible": True}
    return {"objective": value, "fitness": INFEASIBLE * (1.0 + sum(min(v, 1e6) for v in over)), "feasible": False}


def config_fields(problem: Problem) -> set[str]:
    """The tuned fields that are Config fields (the others are make_params keywords)."""
    names = {f.name for f in dataclasses.fields(problem.config)}
    return {f.name for f in problem.fields if f.name in names}


def one_run(problem: Problem, engine: Any, candidate: dict) -> tuple[Any, Any]:
    """(config, params) of one candidate run alone. Config fields: the candidate's config padded
    into the bucket jaxsched.tune runs its candidates in (each tuned size at the largest of its
    field's high end, the baseline's and the config's value), its value fields (read from the
    params when padded) set to the baseline's, so that every candidate runs one compiled
    program, and the same per-run work as in the ES's batches."""
    cfg_names = config_fields(problem)
    cfg = dataclasses.replace(problem.config, **{k: v for k, v in candidate.items() if k in cfg_names})
    kw = {k: v for k, v in candidate.items() if k not in cfg_names}
    params = engine.make_params(cfg, **problem.fixed, **kw)
    if not cfg_names or not engine.can_pad(cfg):
        return cfg, params
    sizes = {
        f.name: max(int(f.high), int(problem.baseline.get(f.name, 0)), getattr(problem.config, f.name))
        for f in problem.fields
        if f.name in engine.size_fields
    }
    bucket, padded = engine.pad(cfg, params, sizes)
    same = {v: problem.baseline.get(v, getattr(problem.config, v)) for v in engine.value_fields}
    return dataclasses.replace(bucket, **same), padded


def evaluate_one(problem: Problem, engine: Any, candidate: dict) -> dict:
    """{objective, fitness, feasible} of one candidate on the training seeds: one
    simulate_points call with that one point (a candidate refused by make_params or its Config
    ranks INVALID without running)."""
    from jaxsched.errors import ConfigError
    from jaxsched.run import simulate_points

    try:
        cfg, params = one_run(problem, engine, candidate)
    except ConfigError:
        return {"objective": math.nan, "fitness": INVALID, "feasible": False}
    (res,) = simulate_points(cfg, [params], list(problem.train_seeds), engine=engine, progress=False, warn=False)
    return fitness(res.metrics, problem.objective)


def suggest(trial: Any, fields: Sequence[Field]) -> dict:
    """{field name: value} of one Optuna trial over `fields` (a field of size k: k parameters
    name[i], returned as a tuple)."""

    def one(f: Field, name: str) -> Any:
        if f.kind == "choice":
            return trial.suggest_categorical(name, list(f.choices))
        if f.kind == "int":
            return trial.suggest_int(name, int(f.low), int(f.high))
        return trial.suggest_float(name, float(f.low), float(f.high), log=f.kind == "log")

    return {
        f.name: one(f, f.name) if f.size == 1 else tuple(one(f, f"{f.name}[{i}]") for i in range(f.size))
        for f in fields
    }


def optuna_params(fields: Sequence[Field], values: dict) -> dict:
    """Optuna's parameter dict of field values (the inverse of `suggest`)."""
    out = {}
    for f in fields:
        if f.size == 1:
            out[f.name] = values[f.name]
        else:
            out.update({f"{f.name}[{i}]": v for i, v in enumerate(values[f.name])})
    return out


def run_optuna(problem: Problem, seed: int) -> dict:
    """Optuna's TPE, one candidate per trial (module docstring): {trace, best, wall_s, ...}."""
    import jax
    import optuna

    from jaxsched.engine import engine_of

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    jax.clear_caches()
    t0 = time.perf_counter()
    engine = engine_of(problem.config)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    if encode(problem.fields, problem.baseline) is not None:
        study.enqueue_trial(optuna_params(problem.fields, problem.baseline))
    rows = []
    for i in range(problem.candidates):
        trial = study.ask()
        cand = suggest(trial, problem.fields)
        row = evaluate_one(problem, engine, cand)
        study.tell(trial, row["fitness"])
        rows.append({"t": time.perf_counter() - t0, "candidate": cand, **row})
    t1 = time.perf_counter()
    return finish("optuna", problem, seed, rows, t0, t1)


def run_es(problem: Problem, seed: int) -> dict:
    """jaxsched.tune's CMA-ES (module docstring): {trace, best, wall_s, ..., test}."""
    import jax

    from jaxsched.tune import tune

    jax.clear_caches()
    ends: list[float] = []
    t0 = time.perf_counter()
    res = tune(
        problem.config,
        problem.fields,
        problem.objective,
        fixed=problem.fixed,
        baseline=problem.baseline,
        train_seeds=problem.train_seeds,
        test_seeds=problem.test_seeds,
        searcher="cma_es",
        population=problem.population,
        generations=problem.generations,
        seed=seed,
        progress=lambda done, total: ends.append(time.perf_counter() - t0),
    )
    names = [f.name for f in problem.fields]
    rows = [
        {
            "t": ends[h["generation"]],
            "candidate": {n: h[n] for n in names},
            "objective": h["objective"],
            "fitness": h["fitness"],
            "feasible": h["feasible"],
        }
        for h in res.history
    ]
    out = finish("es", problem, seed, rows, t0, t0 + ends[-1])
    if res.test:
        out["held_out"] = held_out_summary(res.test)
    return out


def finish(method: str, problem: Problem, seed: int, rows: list[dict], t0: float, t1: float) -> dict:
    """A method's record: its rows (t in s from its start, candidate, objective, fitness,
    feasible), the best-so-far trace, its final best, times and compile counts."""
    trace, best = [], None
    for r in rows:
        if r["feasible"] and (best is None or r["fitness"] < best["fitness"]):
            best = r
        trace.append([r["t"], None if best is None else best["fitness"]])
    return {
        "method": method,
        "seed": seed,
        "candidates": len(rows),
        "evaluations": len(rows) * len(problem.train_seeds),
        "wall_s": t1 - t0,
        "first_call_s": rows[0]["t"],
        **CompileLog.between(t0, t1),
        "rows": [{**r, "candidate": jsonable(r["candidate"])} for r in rows],
        "trace": trace,
        "best": None if best is None else jsonable(best["candidate"]),
        "best_fitness": None if best is None else best["fitness"],
        "best_objective": None if best is None else best["objective"],
    }


def jsonable(values: dict) -> dict:
    """Candidate values as JSON types (tuples as lists, NumPy scalars as Python numbers)."""
    conv = lambda v: list(map(conv, v)) if isinstance(v, (tuple, list)) else getattr(v, "item", lambda: v)()  # noqa: E731
    return {k: conv(v) for k, v in values.items()}


def candidate(problem: Problem, values: dict) -> dict:
    """JSON candidate values back as field values (lists as tuples)."""
    return {f.name: tuple(values[f.name]) if f.size > 1 else values[f.name] for f in problem.fields}


def compare_held_out(problem: Problem, first: dict, second: dict) -> dict:
    """`jaxsched.tune.held_out` of `second` against `first` (candidates) on the held-out seeds:
    means, CIs and the paired difference second - first."""
    from jaxsched.engine import engine_of

    return held_out(
        engine_of(problem.config),
        problem.config,
        problem.fixed,
        candidate(problem, first),
        candidate(problem, second),
        list(problem.test_seeds),
        problem.objective,
    )


def held_out_summary(test: dict) -> dict:
    """The final best against the baseline on the held-out seeds, from `held_out`'s dict."""
    return {
        "baseline": list(test["baseline"]),
        "tuned": list(test["tuned"]),
        "difference": list(test["difference"]),
        "tuned_feasible": bool(test["tuned_feasible"]),
        "verdict": test["verdict"],
    }


def first_time(run: dict, target: float) -> tuple[float, dict]:
    """(wall time, best candidate then) at which the run's best-so-far fitness first is <=
    target (+ 1e-12 relative, for equal floats)."""
    tol = 1e-12 * max(1.0, abs(target))
    best = None
    for r in run["rows"]:
        if r["feasible"] and (best is None or r["fitness"] < best["fitness"]):
            best = r
        if best is not None and best["fitness"] <= target + tol:
            return r["t"], best["candidate"]
    raise ValueError(f"{run['method']} never reached {target}")


def compare_round(problem: Problem, opt: dict, es: dict) -> dict:
    """The speed ratio of one round and its held-out check (module docstring)."""
    if opt["best_fitness"] is None or es["best_fitness"] is None:
        return {"target_fitness": None, "speed_ratio": None, "total_ratio": opt["wall_s"] / es["wall_s"]}
    target = max(opt["best_fitness"], es["best_fitness"])
    t_opt, c_opt = first_time(opt, target)
    t_es, c_es = first_time(es, target)
    check = compare_held_out(problem, c_opt, c_es)
    return {
        "target_fitness": target,
        "t_optuna_s": t_opt,
        "t_es_s": t_es,
        "speed_ratio": t_opt / t_es,
        "total_ratio": opt["wall_s"] / es["wall_s"],
        "optuna_candidate": c_opt,
        "es_candidate": c_es,
        "held_out_optuna": list(check["baseline"]),
        "held_out_es": list(check["tuned"]),
        "held_out_es_minus_optuna": list(check["difference"]),
    }


def optuna_held_out(problem: Problem, run: dict) -> None:
    """Optuna's final best against the baseline on the held-out seeds (as tune's own test)."""
    if run["best"] is not None:
        run["held_out"] = held_out_summary(compare_held_out(problem, problem.baseline, run["best"]))


def uptime() -> tuple[str, list[float]]:
    """(`uptime`'s line, the 1, 5 and 15 minute load averages)."""
    text = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(text, flush=True)
    return text, [round(x, 2) for x in os.getloadavg()]


def run_all(problem: Problem, repeats: int, log: Callable[[str], None]) -> dict:
    """Optuna then ES for each round; per round, the comparison; everything as one dict."""
    CompileLog.start()
    runs, rounds = [], []
    for r in range(repeats):
        opt = run_optuna(problem, r)
        log(f"round {r}: optuna {opt['wall_s']:.1f} s, best {opt['best_objective']}")
        optuna_held_out(problem, opt)
        es = run_es(problem, r)
        log(f"round {r}: es {es['wall_s']:.1f} s, best {es['best_objective']}")
        runs += [{"round": r, **opt}, {"round": r, **es}]
        rounds.append({"round": r, **compare_round(problem, opt, es)})
    return {"runs": runs, "rounds": rounds}


def settings(problem: Problem, repeats: int, quick: bool) -> dict:
    """The problem as JSON."""
    return {
        "problem": problem.name,
        "quick": quick,
        "engine_config": repr(problem.config)[:2000],
        "fields": [dataclasses.asdict(f) for f in problem.fields],
        "objective": str(problem.objective),
        "fixed": problem.fixed,
        "baseline": problem.baseline,
        "train_seeds": list(problem.train_seeds),
        "test_seeds": list(problem.test_seeds),
        "population": problem.population,
        "generations": problem.generations,
        "repeats": repeats,
        "constraint_handling": "penalised fitness (jaxsched.tune's), returned as Optuna's objective",
    }


def medians(rounds: list[dict]) -> dict:
    """Median speed and total ratios over the rounds (None when no round has one)."""
    pick = lambda k: [r[k] for r in rounds if r.get(k) is not None]  # noqa: E731
    return {k: (float(np.median(pick(k))) if pick(k) else None) for k in ("speed_ratio", "total_ratio")}


def markdown(report: dict) -> str:
    """The report's tables: per run, then per round."""
    from jaxsched.results import format_value, markdown_table

    s = report["settings"]
    fv = lambda x: "-" if x is None else format_value(x)  # noqa: E731
    ci = lambda p: "-" if p is None else f"{fv(p[0])} ± {fv(p[1])}"  # noqa: E731
    head = (
        f"# {s['problem']}: Optuna (TPE, one candidate per trial) against jaxsched.tune (CMA-ES, "
        f"batched)\n\n{s['objective']}; {s['population']} x {s['generations']} candidates x "
        f"{len(s['train_seeds'])} training seeds per method, {len(s['test_seeds'])} held-out seeds; "
        f"load average {report['load']['before']} before, {report['load']['after']} after"
        f"{' (quick size)' if s['quick'] else ''}.\n\n"
    )
    runs = markdown_table(
        ["round", "method", "evaluations", "wall (s)", "compile (s)", "compiles", "first call (s)", "best",
         "train objective", "held-out (final best)"],
        [
            [str(r["round"]), r["method"], str(r["evaluations"]), f"{r['wall_s']:.1f}", f"{r['compile_s']:.1f}",
             str(r["compiles"]), f"{r['first_call_s']:.1f}", json.dumps(r["best"]),
             fv(r["best_objective"]), ci((r.get("held_out") or {}).get("tuned"))]
            for r in report["runs"]
        ],
    )  # fmt: skip
    rounds = markdown_table(
        ["round", "target fitness", "t optuna (s)", "t es (s)", "speed ratio", "total ratio",
         "held-out optuna", "held-out es", "es - optuna (paired)"],
        [
            [str(r["round"]), fv(r["target_fitness"]), fv(r.get("t_optuna_s")),
             fv(r.get("t_es_s")), fv(r["speed_ratio"]), fv(r["total_ratio"]),
             ci(r.get("held_out_optuna")), ci(r.get("held_out_es")), ci(r.get("held_out_es_minus_optuna"))]
            for r in report["rounds"]
        ],
    )  # fmt: skip
    m = report["summary"]
    tail = (
        f"\n\nMedian over rounds: speed ratio {fv(m['speed_ratio'])} (Optuna's time / the ES's "
        f"to the worse final best training fitness), total ratio {fv(m['total_ratio'])} "
        "(whole budget). Held-out: mean ± 95% CI half-width.\n"
    )
    return head + runs + "\n\n" + rounds + tail


def plot(report: dict, path: Path) -> Path:
    """Best-so-far training objective against wall time (log axis), every run; the speed
    ratio's target (dotted) with the times each method reached it (ticks)."""
    from matplotlib.figure import Figure

    sign = 1.0 if report["settings"]["objective"].startswith("min") else -1.0
    fig = Figure(figsize=(6.4, 3.8))
    ax = fig.subplots()
    colours = {"optuna": "tab:blue", "es": "tab:orange"}
    for r in report["runs"]:
        pts = [(t, sign * f) for t, f in r["trace"] if f is not None and f < INFEASIBLE]
        if pts:
            t, y = zip(*pts)
            ax.step(t, y, where="post", color=colours[r["method"]], ls="-" if r["round"] == 0 else "--",
                    label=f"{r['method']} (round {r['round']})")  # fmt: skip
    for rnd in report["rounds"]:
        if rnd.get("target_fitness") is not None:
            # The speed ratio's target, and when each method reached it.
            ax.axhline(sign * rnd["target_fitness"], color="grey", ls=":", lw=0.8)
            ax.plot([rnd["t_optuna_s"], rnd["t_es_s"]], [sign * rnd["target_fitness"]] * 2, "k|", ms=10)
    ax.set_xscale("log")
    from matplotlib.ticker import FormatStrFormatter

    for which in ("major", "minor"):
        # Plain seconds on every labelled tick, small enough not to overlap.
        getattr(ax.xaxis, f"set_{which}_formatter")(FormatStrFormatter("%g"))
    ax.tick_params(axis="x", which="both", labelsize=7)
    ax.set_xlabel("wall time (s, from the searcher's start)")
    ax.set_ylabel("best so far, training mean")
    ax.set_title(f"{report['settings']['problem']}: {report['settings']['objective']}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def outputs(stem: Path, overwrite: bool) -> dict[str, Path]:
    """{json, md, png} paths of `stem`; SystemExit when one exists and not overwrite."""
    paths = {k: stem.with_name(stem.name + "." + k) for k in ("json", "md", "png")}
    there = [str(p) for p in paths.values() if p.exists()]
    if there and not overwrite:
        raise SystemExit(f"tune_optuna: {', '.join(there)} exist; pass --overwrite or another --out")
    return paths


def main(argv: Sequence[str] | None = None) -> dict:
    """Command line (module docstring); returns the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", choices=sorted(PROBLEMS))
    ap.add_argument("--quick", action="store_true", help="smoke-test size")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of Optuna then ES")
    ap.add_argument("--out", default=None, help="output stem (default benchmarks/results/tune_optuna_<problem>)")
    ap.add_argument("--overwrite", action="store_true", help="replace existing output files")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {a.repeats}")
    default = _ROOT / "benchmarks" / "results" / f"tune_optuna_{a.problem}{'_quick' if a.quick else ''}"
    paths = outputs(Path(a.out) if a.out else default, a.overwrite)
    problem = PROBLEMS[a.problem](a.quick)
    log = lambda msg: print(f"[tune_optuna {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    text0, load0 = uptime()
    result = run_all(problem, a.repeats, log)
    text1, load1 = uptime()
    report = {
        "settings": settings(problem, a.repeats, a.quick),
        "load": {"before": load0, "after": load1, "uptime_before": text0, "uptime_after": text1},
        **result,
        "summary": medians(result["rounds"]),
    }
    md, text = markdown(report), json.dumps(report, indent=1, default=float) + "\n"
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    plot(report, paths["png"])
    paths["md"].write_text(md)
    paths["json"].write_text(text)
    print(md)
    return json.loads(text)


if __name__ == "__main__":
    main()
