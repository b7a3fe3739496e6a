"""Tune any engine: a batched search over Params fields by evolution strategies.

A tuning problem is an engine configuration (a Config, fixed for the whole search), the Params
fields to tune (`Field`: a real range, a log range, an integer range or a set of values; any
keyword of the engine's `make_params`), an `Objective` over the engine's metrics (minimise or
maximise one metric's mean over the seeds, subject to `Constraint`s on other metrics' means)
and two disjoint seed lists: the seeds the search sees and the held-out seeds the result is
reported on.

One generation is one `simulate_points` call: every candidate x every training seed in the
same vmapped chunks. Every candidate's Params have the same shapes, so the whole search runs
one compiled program (a candidate that `make_params` refuses is replaced by the baseline's
Params in the batch, keeping its shape, and its result is discarded). The searchers are
evosax's CMA-ES and Simple ES (`SEARCHERS`), working on the unit cube [0, 1]^d: a field maps
u to its value (`Field.value`: linear, log-linear, rounded to an integer, or the k-th of k
values), so integer and categorical fields are searched by rounding. evosax minimises; a
candidate's fitness is its objective (negated for "max") when feasible, and otherwise a value
above every feasible fitness that grows with the total relative violation (its reason is
recorded in the history): the searchers use only the ranks of the fitnesses, so feasible
candidates always rank first.

The search starts at the baseline where it lies in the fields' ranges, which is then the first
candidate of the first generation (a search that finds nothing better returns it). The best
feasible candidate of the search and the baseline (the `make_params` defaults, or
values given) then run on the held-out seeds, and `TuneResult.test` holds each one's mean
objective with a 95% confidence interval and their paired difference, seed by seed.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import ConfigError, as_one_grid, require, require_choice, require_int

SEARCHERS = ("cma_es", "simple_es")
# Fitness of an infeasible candidate: above any feasible objective a metric can give, growing
# with the violation (ranks are all the searchers use). INVALID: refused by make_params.
_INFEASIBLE = 1e20
_INVALID = 1e27


@dataclass(frozen=True)
class Field:
    """One tuned make_params keyword. kind "real": uniform in [low, high]; "log": uniform in
    log between low > 0 and high; "int": an integer in [low, high] (the unit interval's value
    rounded); "choice": one of `choices` (numbers or strings), low and high unused. size > 1:
    a tuple of that many such values (per-type thresholds, rates), each its own dimension."""

    name: str
    low: float = 0.0
    high: float = 1.0
    kind: str = "real"
    choices: tuple = ()
    size: int = 1

    def __post_init__(self):
        require(isinstance(self.name, str) and self.name.isidentifier(), "Field.name", "a keyword name", self.name)
        require_int(self.size, f"field {self.name}: size", lo=1, hi=4096)
        require_choice(self.kind, f"field {self.name}: kind", ("real", "log", "int", "choice"))
        if self.kind == "choice":
            require(
                isinstance(self.choices, tuple)
                and len(self.choices) >= 2
                and len(set(self.choices)) == len(self.choices),
                f"field {self.name}: choices",
                "at least two distinct values",
                self.choices,
            )
            return
        for end in ("low", "high"):
            v = getattr(self, end)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            require(ok, f"field {self.name}: {end}", "a finite number", v)
        require(self.low < self.high, f"field {self.name}: low", f"< high = {self.high}", self.low)
        if self.kind == "log":
            require(self.low > 0, f"field {self.name}: low", "> 0 on a log scale", self.low)
        if self.kind == "int":
            for end in ("low", "high"):
                v = getattr(self, end)
                require(float(v).is_integer(), f"field {self.name}: {end}", "an integer for an int field", v)

    def unit(self, v: Any) -> float | None:
        """The point of [0, 1] whose value is v (the inverse of `value`, the middle of a
        choice's bin); None when v is not a value of this field (outside the range, not a
        choice, not a number)."""
        if self.kind == "choice":
            k = len(self.choices)
            return (self.choices.index(v) + 0.5) / k if v in self.choices else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not self.low <= v <= self.high:
            return None
        if self.kind == "log":
            return (math.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (v - self.low) / (self.high - self.low)

    def value(self, u: float) -> Any:
        """The field's value at u in [0, 1] (clipped)."""
        u = min(max(float(u), 0.0), 1.0)
        if self.kind == "choice":
            return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]
        if self.kind == "log":
            return float(math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low))))
        x = self.low + u * (self.high - self.low)
        return int(round(x)) if self.kind == "int" else float(x)


def parse_field(text: str) -> Field:
    """'budget=64:4096:int', 'alpha=1e-6:1e-3:log', 'c_s=0.01:0.1' (real),
    'prefill_cap=256|512|1024' (choice) or 'thresholds[4]=1:64:int' (a tuple of 4) -> Field; one
    ConfigError naming the text otherwise."""
    name, sep, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    usage = "name=low:high[:real|log|int], name=v1|v2|... or name[size]=..."
    if not sep or not name or not spec:
        raise ConfigError(f"--field must look like {usage}, got {text!r}")
    size = 1
    if name.endswith("]") and "[" in name:
        name, _, count = name[:-1].partition("[")
        size = _number(count.strip())
        if not isinstance(size, int) or size < 1:
            raise ConfigError(f"--field {name}: the size in brackets must be an integer >= 1, got {text!r}")
        name = name.strip()
    return _parse_spec(name, spec, size, text, usage)


def _parse_spec(name: str, spec: str, size: int, text: str, usage: str) -> Field:
    if "|" in spec:
        values = tuple(_number(v.strip()) for v in spec.split("|"))
        if any(v == "" for v in values):
            raise ConfigError(f"--field {name}: a choice must not be empty, got {text!r}")
        return Field(name, kind="choice", choices=values, size=size)
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise ConfigError(f"--field must look like {usage}, got {text!r}")
    low, high = (_number(p.strip()) for p in parts[:2])
    if not all(isinstance(v, (int, float)) for v in (low, high)):
        raise ConfigError(f"--field {name}: low and high must be numbers, got {text!r}")
    return Field(name, float(low), float(high), parts[2].strip() if len(parts) == 3 else "real", size=size)


def encode(fields: Sequence[Field], values: Mapping[str, Any]) -> list[float] | None:
    """The point of the unit cube of `values` ({field name: value}, a tuple for a field of
    size k), or None when a value is missing or outside its field."""
    out = []
    for f in fields:
        v = values.get(f.name)
        vs = [v] if f.size == 1 else (list(v) if isinstance(v, (tuple, list)) and len(v) == f.size else [None])
        us = [f.unit(x) for x in vs]
        if any(u is None for u in us):
            return None
        out += us
    return out


def decode(fields: Sequence[Field], row: Sequence[float]) -> dict:
    """{field name: value} of one point of the unit cube (a field of size k takes k
    coordinates, in the order of `fields`)."""
    out, i = {}, 0
    for f in fields:
        u = row[i : i + f.size]
        out[f.name] = f.value(u[0]) if f.size == 1 else tuple(f.value(x) for x in u)
        i += f.size
    return out


def _number(text: str) -> Any:
    for t in (int, float):
        try:
            return t(text)
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class Constraint:
    """metric op bound on the metric's mean over the seeds (op '<=' or '>=')."""

    metric: str
    op: str
    bound: float

    def violation(self, value: float) -> float:
        """0 when met; else the shortfall relative to max(|bound|, 1e-9) (inf for NaN)."""
        if not math.isfinite(value):
            return math.inf
        over = value - self.bound if self.op == "<=" else self.bound - value
        return max(over, 0.0) / max(abs(self.bound), 1e-9)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


def parse_constraint(text: str) -> Constraint:
    """'ttft_p99_s<=2.5' or 'throughput_tokens_per_s >= 1e4' -> Constraint."""
    for op in ("<=", ">="):
        metric, sep, bound = text.partition(op)
        if sep:
            try:
                value = float(bound)
            except ValueError:
                value = math.nan
            if not metric.strip() or not math.isfinite(value):
                break
            return Constraint(metric.strip(), op, value)
    raise ConfigError(f"--constraint must look like metric<=number or metric>=number, got {text!r}")


@dataclass(frozen=True)
class Objective:
    """Minimise (goal "min") or maximise ("max") the mean over the seeds of `metric`, subject
    to every constraint. `metric` is one metric's name or a linear combination of them,
    'window_throughput_tokens_per_s - 36.5*latency_mean_s' (a price on one metric in the units
    of another), evaluated seed by seed."""

    metric: str
    goal: str = "min"
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self):
        require_choice(self.goal, "objective goal", ("min", "max"))
        self.terms()  # one ConfigError for a malformed combination

    def terms(self) -> list[tuple[float, str]]:
        """[(coefficient, metric name)] of `metric`."""
        return _linear_terms(self.metric)

    def per_seed(self, metrics: Mapping[str, np.ndarray]) -> np.ndarray:
        """float64[seeds]: the objective of each seed of a run's metrics."""
        return sum(c * np.asarray(metrics[m], np.float64) for c, m in self.terms())

    def metrics(self) -> list[str]:
        """Every metric the objective and its constraints read, once each, in order."""
        names = [m for _, m in self.terms()] + [c.metric for c in self.constraints]
        return list(dict.fromkeys(names))

    def __str__(self) -> str:
        text = f"{self.goal} {self.metric}"
        return text + (" subject to " + ", ".join(map(str, self.constraints)) if self.constraints else "")


_TERM = re.compile(r"([+-])?(?:((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\*)?([A-Za-z_]\w*)")


def _linear_terms(text: str) -> list[tuple[float, str]]:
    """'a - 2.5*b + c' -> [(1.0, 'a'), (-2.5, 'b'), (1.0, 'c')]; ConfigError unless the whole
    text is such terms (spaces ignored, a metric named once)."""
    if re.search(r"[\w.]\s+[\w.]", str(text)):  # 'a b': two names, not one
        raise ConfigError(f"objective metric must be a metric name or a sum like 'a - 2.5*b', got {text!r}")
    flat = "".join(str(text).split())
    terms, pos = [], 0
    while pos < len(flat):
        m = _TERM.match(flat, pos)
        if m is None or m.end() == pos or (terms and m.group(1) is None):
            raise ConfigError(f"objective metric must be a metric name or a sum like 'a - 2.5*b', got {text!r}")
        sign = -1.0 if m.group(1) == "-" else 1.0
        terms.append((sign * float(m.group(2) or 1.0), m.group(3)))
        pos = m.end()
    names = [n for _, n in terms]
    if not terms or len(set(names)) != len(names):
        raise ConfigError(f"objective metric must name each metric once, got {text!r}")
    return terms


def parse_objective(text: str, constraints: Sequence[str] = ()) -> Objective:
    """'min latency_mean_s', 'max throughput_tokens_per_s - 30*latency_mean_s' and constraint
    texts -> Objective."""
    goal, _, metric = text.strip().partition(" ")
    if goal not in ("min", "max") or not metric.strip():
        raise ConfigError(f"--objective must look like 'min METRIC' or 'max METRIC - 2*OTHER', got {text!r}")
    return Objective(metric.strip(), goal, tuple(parse_constraint(c) for c in constraints))


@dataclass
class TuneResult:
    """A finished search. history: one dict per evaluated candidate (generation, index, the
    field values, objective, fitness, feasible, reason); best: the field values of the best
    feasible candidate (None if none was feasible); test: the held-out comparison (see
    `held_out`); fields, objective, searcher, seeds as given; compile_s and wall_s: totals."""

    fields: tuple[Field, ...]
    objective: Objective
    searcher: str
    history: list[dict]
    best: dict | None
    best_train: float
    baseline: dict
    test: dict = field(default_factory=dict)
    train_seeds: tuple[int, ...] = ()
    test_seeds: tuple[int, ...] = ()
    wall_s: float = 0.0

    def summary(self) -> str:
        """A markdown summary: the tuned values against the baseline, and the held-out result."""
        from .results import format_value, markdown_table

        rows = [[f.name, _fmt(self.baseline.get(f.name)), _fmt((self.best or {}).get(f.name))] for f in self.fields]
        text = f"objective: {self.objective}\nsearcher: {self.searcher}, {len(self.history)} candidates\n\n"
        text += markdown_table(["field", "baseline", "tuned"], rows)
        t = self.test
        if t:
            cell = lambda m, h: f"{format_value(m)} ± {format_value(h)}"  # noqa: E731
            text += (
                f"\n\nheld-out seeds ({len(self.test_seeds)}), mean {self.objective.metric} ± 95% CI:\n\n"
                + markdown_table(
                    ["", self.objective.metric, "feasible"],
                    [
                        ["baseline", cell(*t["baseline"]), str(t["baseline_feasible"])],
                        ["tuned", cell(*t["tuned"]), str(t["tuned_feasible"])],
                        ["tuned - baseline (paired)", cell(*t["difference"]), ""],
                    ],
                )
            )
            if t["constraints"]:
                text += "\n\nconstrained metrics, held-out means:\n\n" + markdown_table(
                    ["metric", "baseline", "tuned"],
                    [[m, format_value(x), format_value(y)] for m, (x, y) in t["constraints"].items()],
                )
            text += f"\n\n{t['verdict']}"
        return text


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def tune(
    config: Any,
    fields: Sequence[Field],
    objective: Objective,
    *,
    fixed: Mapping[str, Any] | None = None,
    baseline: Mapping[str, Any] | None = None,
    train_seeds: Sequence[int] = tuple(range(8)),
    test_seeds: Sequence[int] = tuple(range(1000, 1032)),
    searcher: str = "cma_es",
    population: int = 16,
    generations: int = 20,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> TuneResult:
    """Search `fields` of the engine of `config` for `objective` (see the module docstring).

    fixed: make_params keywords held at given values for every candidate (e.g. the rates).
    baseline: values of the tuned fields to compare against (default: make_params' own
    defaults). train_seeds, test_seeds: disjoint seed lists. searcher: one of SEARCHERS.
    population: candidates per generation (>= 4); generations: >= 1. seed: the searcher's
    random stream (the simulations use the seeds). progress: called with (generation, total).
    Everything is checked before anything compiles."""
    import time

    from .engine import engine_of

    t0 = time.perf_counter()
    engine = engine_of(config)
    fields, fixed, baseline, train, test = check_problem(
        config, fields, objective, fixed, baseline, train_seeds, test_seeds
    )
    require_choice(searcher, "searcher", SEARCHERS)
    population = require_int(population, "population", lo=4, hi=65536)
    generations = require_int(generations, "generations", lo=1, hi=100_000)
    seed = require_int(seed, "seed", lo=0, hi=2**32 - 1)
    points = _Points.of(engine, config, fields, fixed, baseline)

    history: list[dict] = []
    # The search starts at the baseline where it lies in the fields' ranges (the setting to
    # beat is usually a good one), else at the centre of the cube.
    start = encode(fields, baseline)
    es, es_params, state, key = _searcher(searcher, sum(f.size for f in fields), population, seed, start)
    import jax

    for gen in range(generations):
        key, k_ask, k_tell = jax.random.split(key, 3)
        units, state = es.ask(k_ask, state, es_params)
        units = np.array(units, dtype=np.float64)
        if gen == 0 and start is not None:
            # The baseline is the first candidate: a search that finds nothing better returns
            # it, rather than its best sample, which may be worse.
            units[0] = start
        cands = [decode(fields, row) for row in units]
        rows = _evaluate(points, cands, train, objective)
        for i, r in enumerate(rows):
            history.append({"generation": gen, "index": i, **cands[i], **r})
        fitness = np.array([r["fitness"] for r in rows], dtype=np.float32)
        state, _ = es.tell(k_tell, units.astype(np.float32), fitness, state, es_params)
        if progress is not None:
            progress(gen + 1, generations)

    feasible = [h for h in history if h["feasible"]]
    best_row = min(feasible, key=lambda h: (h["fitness"], h["generation"], h["index"])) if feasible else None
    best = None if best_row is None else {f.name: best_row[f.name] for f in fields}
    result = TuneResult(
        tuple(fields),
        objective,
        searcher,
        history,
        best,
        math.nan if best_row is None else best_row["objective"],
        baseline,
        train_seeds=tuple(train),
        test_seeds=tuple(test),
    )
    if best is not None:
        result.test = held_out(engine, config, fixed, baseline, best, test, objective, fields, points=points)
    result.wall_s = time.perf_counter() - t0
    return result


def check_problem(config, fields, objective, fixed=None, baseline=None, train_seeds=(0, 1), test_seeds=(2, 3)):
    """Validated (fields, fixed, baseline, train, test) of a tuning problem on the engine of
    `config` (as `tune` takes them): one ConfigError before any work."""
    from .engine import engine_of

    engine = engine_of(config)
    keywords = [p.name for p in inspect.signature(engine.make_params).parameters.values() if p.kind == p.KEYWORD_ONLY]
    fields = list(fields)
    require(
        len(fields) >= 1 and all(isinstance(f, Field) for f in fields), "fields", "a non-empty list of Field", fields
    )
    names = [f.name for f in fields]
    tunable = config_fields(engine)
    for f in fields:
        if f.name not in keywords and f.name not in tunable:
            also = f"; or a Config field it pads: {', '.join(tunable)}" if tunable else ""
            raise ConfigError(
                f"field {f.name!r} must be a make_params keyword of engine {engine.name!r}: {', '.join(keywords)}{also}"
            )
        if f.name in engine.size_fields:
            ints = f.kind == "int" or (f.kind == "choice" and all(type(c) is int for c in f.choices))
            require(ints and f.size == 1, f"field {f.name}", "a single integer (kind int, or integer choices)", f)
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:
        raise ConfigError(f"field {dup!r} is given twice; tune each field once")
    fixed = dict(fixed or {})
    for n in fixed:
        if n not in keywords:
            raise ConfigError(
                f"fixed {n!r} must be a make_params keyword of engine {engine.name!r}: {', '.join(keywords)}"
            )
        if n in names:
            raise ConfigError(f"{n!r} is both tuned and fixed; give it once")
    baseline = dict(baseline or {})
    for n in baseline:
        if n not in names:
            raise ConfigError(f"baseline {n!r} must be a tuned field: {', '.join(names)}")
    # Unset baseline fields are make_params' defaults (a Config field: the config's value), named
    # so that reports show them.
    defaults = {p.name: p.default for p in inspect.signature(engine.make_params).parameters.values()}
    defaults.update({n: getattr(config, n) for n in tunable})
    baseline = {n: baseline.get(n, defaults[n]) for n in names}
    for c in objective.metrics():
        if c not in engine.METRICS:
            raise ConfigError(f"metric {c!r} must be a metric of engine {engine.name!r}: {', '.join(engine.METRICS)}")
    train, test = _seeds(train_seeds, "train_seeds"), _seeds(test_seeds, "test_seeds")
    both = sorted(set(train) & set(test))
    if both:
        raise ConfigError(f"train_seeds and test_seeds must be disjoint, both hold {both[:5]}")
    # The baseline, the fixed values and the bucket of the tuned sizes are valid (one error
    # here, not per candidate).
    points = _Points.of(engine, config, fields, fixed, baseline)
    # A field that the config never reads (prefill_cap under Sarathi) would have every candidate
    # refused: one error now instead. The corners of the search cube, built as one grid, name
    # such a field (`errors.as_one_grid`); a corner refused for its values says nothing here.
    with as_one_grid():
        for u in (0.0, 1.0):
            try:
                points.params(decode(fields, [u] * sum(f.size for f in fields)))
            except ConfigError:
                pass
    return fields, fixed, baseline, train, test


def config_fields(engine) -> tuple[str, ...]:
    """Config fields `tune` can search as values: an engine's size fields and value fields
    (`Engine.size_fields`, `value_fields`), which a run padded into one bucket carries in its
    params, so that every candidate still runs in one compiled program; () for an engine that
    does not pad."""
    return () if engine.pad_into is None else tuple(engine.size_fields) + tuple(engine.value_fields)


class _Points:
    """Candidates (dicts of tuned values, keyed like `baseline`) -> one run config and their
    Params. Tuned Config fields (`config_fields`) make each candidate's own config, padded
    (`Engine.pad`) into the bucket whose tuned sizes are `capacity` {size field: int}; its
    metrics are bitwise those of its own unpadded run. Without tuned Config fields every
    candidate runs `config` itself."""

    def __init__(self, engine, config, fixed, baseline, capacity: Mapping[str, int]):
        self.engine, self.fixed = engine, dict(fixed)
        self.of_config = [n for n in baseline if n in config_fields(engine)]
        self.config = self._own_config(config, baseline)
        self.capacity = {n: max(int(v), getattr(self.config, n)) for n, v in capacity.items()}
        self.run_config = self.config
        if self.of_config:
            try:
                self.run_config = engine.pad(self.config, self._params(self.config, baseline), self.capacity)[0]
            except ConfigError as e:
                raise ConfigError(f"the tuned sizes at their largest values {self.capacity} do not run: {e}") from None
        self.base = self.params(baseline)

    @classmethod
    def of(cls, engine, config, fields: Sequence[Field], fixed, baseline) -> "_Points":
        """The points of a search: the bucket holds every value of the tuned size fields."""
        top = lambda f: max(f.choices) if f.kind == "choice" else int(f.high)  # noqa: E731
        return cls(engine, config, fixed, baseline, {f.name: top(f) for f in fields if f.name in engine.size_fields})

    def _own_config(self, config, values):
        own = {n: values[n] for n in self.of_config if n in values}
        return dataclasses.replace(config, **own) if own else config

    def _params(self, config, values):
        return self.engine.make_params(
            config, **self.fixed, **{n: v for n, v in values.items() if n not in self.of_config}
        )

    def params(self, values: Mapping[str, Any]):
        """The Params that run `values` inside the bucket (ConfigError when refused)."""
        config = self._own_config(self.config, values)
        p = self._params(config, values)
        return self.engine.pad(config, p, self.capacity)[1] if self.of_config else p

    def batch(self, cands: Sequence[Mapping[str, Any]]) -> tuple[list, list[str]]:
        """(params, reasons): a refused candidate runs the baseline's params in its place, so
        the batch keeps its shape and the program its compilation; its reason says why."""
        plist, reasons = [], []
        for c in cands:
            try:
                plist.append(self.params(c))
                reasons.append("")
            except ConfigError as e:
                plist.append(self.base)
                reasons.append(f"refused: {e}")
        return plist, reasons


def _seeds(seeds, name: str) -> list[int]:
    seeds = list(seeds)
    require(len(seeds) >= 2, name, "at least two seeds (a confidence interval needs two)", seeds)
    out = [require_int(s, f"{name}[{i}]", lo=0, hi=2**32 - 1) for i, s in enumerate(seeds)]
    require(len(set(out)) == len(out), name, "distinct seeds", seeds)
    return out


def _searcher(name: str, dim: int, population: int, seed: int, start: Sequence[float] | None = None):
    """(algorithm, its params, initial state with its mean at `start` (None: the cube's
    centre), key). The algorithm's ask and tell are each one compiled program (`Jitted`):
    unjitted, their dozens of array operations each compile on first use, about as long as a
    small engine's whole program."""
    import jax
    import jax.numpy as jnp

    try:
        from evosax.algorithms import CMA_ES, SimpleES
    except ImportError:
        raise ConfigError(
            f"searcher {name!r} needs evosax, an optional dependency: pip install 'jaxsched[tune]'"
        ) from None

    algo = {"cma_es": CMA_ES, "simple_es": SimpleES}[name](population_size=population, solution=jnp.zeros(dim))
    # A quarter of the cube as the initial spread: wide enough to move, narrow enough that
    # few samples are clipped to its faces.
    params = algo.default_params.replace(std_init=0.25)
    key = jax.random.key(seed)
    key, k_init = jax.random.split(key)
    mean = jnp.full(dim, 0.5, jnp.float32) if start is None else jnp.asarray(start, jnp.float32)
    state = jax.jit(algo.init)(k_init, mean, params)
    return _Jitted(jax.jit(algo.ask), jax.jit(algo.tell)), params, state, key


@dataclass(frozen=True)
class _Jitted:
    """A searcher's ask and tell as compiled functions (evosax's own signatures)."""

    ask: Callable
    tell: Callable


def _evaluate(points: _Points, cands, seeds, objective) -> list[dict]:
    """{objective, fitness, feasible, reason, <metric means>} of each candidate on `seeds`, all
    candidates in one `simulate_points` call (`_Points.batch`)."""
    from .run import simulate_points

    plist, reasons = points.batch(cands)
    results = simulate_points(points.run_config, plist, seeds, engine=points.engine, progress=False, warn=False)
    return [_score(r.metrics, objective, why) for r, why in zip(results, reasons)]


def _score(metrics: Mapping[str, np.ndarray], objective: Objective, refused: str = "") -> dict:
    """One candidate's row from its per-seed metrics."""
    means = {m: float(np.mean(metrics[m])) for m in objective.metrics()}
    value = float(np.mean(objective.per_seed(metrics)))
    if refused:
        return {"objective": math.nan, "fitness": _INVALID, "feasible": False, "reason": refused, **means}
    sign = 1.0 if objective.goal == "min" else -1.0
    broken = [(c, c.violation(means[c.metric])) for c in objective.constraints]
    broken = [(c, v) for c, v in broken if v > 0]
    if not math.isfinite(value):
        broken.append((objective.metric, math.inf))
    if not broken:
        return {"objective": value, "fitness": sign * value, "feasible": True, "reason": "", **means}
    total = sum(min(v, 1e6) for _, v in broken)
    reason = "; ".join(
        f"{c} not met (mean {means[c.metric]:.6g})" if isinstance(c, Constraint) else f"{c} is not finite"
        for c, _ in broken
    )
    return {"objective": value, "fitness": _INFEASIBLE * (1.0 + total), "feasible": False, "reason": reason, **means}


def held_out(
    engine,
    config,
    fixed,
    baseline,
    best,
    seeds,
    objective,
    fields: Sequence[Field] = (),
    points: "_Points | None" = None,
) -> dict:
    """The baseline and the tuned values on the held-out seeds, in one `simulate_points` call
    (tuned Config fields padded into the bucket of `fields`' largest sizes, or else of the two):
    {baseline, tuned, difference: (mean, 95% CI half-width) of the objective metric (the
    difference seed by seed, tuned - baseline), baseline_feasible, tuned_feasible,
    constraints: {metric: (baseline mean, tuned mean)} of every constrained metric, verdict}.
    `points`: the search's own `_Points` (same engine, config, fields, fixed and baseline),
    reused rather than built again."""
    from .run import simulate_points
    from .stats import mean_ci

    if points is None and fields:
        points = _Points.of(engine, config, fields, fixed, baseline)
    elif points is None:
        top = {n: max(baseline[n], best[n]) for n in baseline if n in engine.size_fields}
        points = _Points(engine, config, fixed, baseline, top)
    plist = [points.params(baseline), points.params(best)]
    base, tuned = simulate_points(points.run_config, plist, seeds, engine=points.engine, progress=False, warn=False)
    a, b = objective.per_seed(base.metrics), objective.per_seed(tuned.metrics)
    ci = lambda x: tuple(float(v) for v in np.asarray(mean_ci(x))[[0, 2]])  # noqa: E731 (mean, half-width)
    diff = ci(b - a)
    better = diff[0] < 0 if objective.goal == "min" else diff[0] > 0
    significant = abs(diff[0]) > diff[1]
    feasible = lambda r: all(c.violation(float(np.mean(r.metrics[c.metric]))) == 0 for c in objective.constraints)  # noqa: E731
    if not feasible(tuned):
        verdict = "the tuned values break a constraint on the held-out seeds"
    elif significant and not better:
        verdict = "the baseline is better than the tuned values on the held-out seeds: keep it"
    elif better and significant:
        verdict = (
            "the tuned values are better than the baseline on the held-out seeds "
            "(the 95% CI of the paired difference excludes 0)"
        )
    else:
        verdict = "tuning found nothing significantly better than the baseline on the held-out seeds"
    bounds = {
        c.metric: tuple(float(np.mean(r.metrics[c.metric])) for r in (base, tuned)) for c in objective.constraints
    }
    return dict(
        baseline=ci(a),
        tuned=ci(b),
        difference=diff,
        baseline_feasible=feasible(base),
        tuned_feasible=feasible(tuned),
        constraints=bounds,
        verdict=verdict,
    )


def best_so_far(history: Sequence[dict]) -> list[float]:
    """Per generation, the best feasible objective found up to it (NaN before the first)."""
    out, best = [], math.nan
    gens = sorted({h["generation"] for h in history})
    for g in gens:
        for h in history:
            if h["generation"] == g and h["feasible"]:
                v = h["fitness"]
                best = v if math.isnan(best) or v < best else best
        out.append(best)
    return out


def plot_convergence(result: TuneResult, path: str | Path, *, setting: str = "", unit: str = "") -> Path:
    """Best feasible objective so far and each generation's median feasible objective, against
    the generation, with the baseline's held-out mean dashed. The title states the search: the
    fields, the objective and its constraints, `setting` (the configuration tuned: engine,
    policy, fixed values; empty to leave out), the searcher, candidates per generation x
    generations, and the training and held-out seeds. unit: the objective metric's unit, for
    the y axis."""
    from .plots import finish, subplots, wrap_title

    sign = 1.0 if result.objective.goal == "min" else -1.0
    best = [sign * v for v in best_so_far(result.history)]
    gens = sorted({h["generation"] for h in result.history})
    med = []
    for g in gens:
        vals = [h["objective"] for h in result.history if h["generation"] == g and h["feasible"]]
        med.append(float(np.median(vals)) if vals else math.nan)
    per_gen = max((sum(h["generation"] == g for h in result.history) for g in gens), default=0)
    fig, ax = subplots(figsize=(6.5, 3.8))
    ax.plot(gens, best, label="best so far")
    ax.plot(gens, med, ".", label="generation median (feasible)")
    t = result.test
    if t:
        ax.axhline(t["baseline"][0], color="grey", ls="--", label="baseline (held-out mean)")
    # The baseline's line is often the highest value: pad the range so it is not the frame.
    shown = np.array([*best, *med, *([t["baseline"][0]] if t else [])], float)
    shown = shown[np.isfinite(shown)]
    if shown.size and shown.max() > shown.min():
        pad = 0.06 * (shown.max() - shown.min())
        ax.set_ylim(shown.min() - pad, shown.max() + pad)
    ax.set_xlabel("generation")
    ax.set_ylabel(f"{result.objective.metric} ({unit})" if unit else result.objective.metric)
    title = (
        f"Tuning {', '.join(f.name for f in result.fields)}: {result.objective}"
        + (f"; {setting}" if setting else "")
        + f"; {result.searcher}, {per_gen} candidates x {len(gens)} generations, "
        f"{len(result.train_seeds)} training seeds per candidate"
        + (f"; baseline over {len(result.test_seeds)} held-out seeds" if t else "")
    )
    ax.set_title(wrap_title(title, 6.5), fontsize=9)
    return finish(fig, ax, Path(path))


def write(result: TuneResult, folder: str | Path, *, setting: str = "", unit: str = "") -> dict[str, Path]:
    """history.csv (one row per candidate), summary.md and convergence.png into `folder`
    (setting, unit: of `plot_convergence`)."""
    from .results import write_csv

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    hist = write_csv(folder / "history.csv", result.history)
    summary = folder / "summary.md"
    summary.write_text(result.summary() + "\n")
    return {
        "history": hist,
        "summary": summary,
        "plot": plot_convergence(result, folder / "convergence.png", setting=setting, unit=unit),
    }


__all__ = [
    "SEARCHERS",
    "Constraint",
    "Field",
    "Objective",
    "TuneResult",
    "best_so_far",
    "check_problem",
    "config_fields",
    "decode",
    "encode",
    "held_out",
    "parse_constraint",
    "parse_field",
    "parse_objective",
    "plot_convergence",
    "tune",
    "write",
]
