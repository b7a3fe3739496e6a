"""`jaxsched tune ENGINE`: evolution strategies over any engine's Params (`jaxsched.tune`).

`jaxsched tune e3|e4` is the kv engine's gradient tuner (`jaxsched kv tune`); an engine name
instead runs `jaxsched.tune.tune` on that engine's configuration (`--set` Config fields and
fixed make_params keywords, as `jaxsched sweep` takes them), the `--field`s to tune, the
`--objective` and `--constraint`s, and writes history.csv, summary.md, convergence.png and the
options file into its --out folder.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import ConfigError, Reads, require_int
from ..registry import ENGINES
from .base import check_folder_outputs, check_options, config_path, fresh_folder, save_resolved

KV_TUNERS = ("e3", "e4")
# Options read only by the kv gradient tuner, and only by the engine tuner.
GRADIENT_ONLY = ("steps", "lam", "seed_start")
ENGINE_ONLY = (
    "field",
    "objective",
    "constraint",
    "set",
    "baseline",
    "searcher",
    "population",
    "generations",
    "train_seeds",
    "test_seed_start",
    "search_seed",
)
TUNE_READS = {
    **{d: (Reads("tuner", KV_TUNERS),) for d in GRADIENT_ONLY},
    **{d: (Reads("tuner", ("an engine name",)),) for d in ENGINE_ONLY},
    "trace": (Reads("engine", ("dp",)),),
}


def add_engine_options(t: argparse.ArgumentParser) -> None:
    """The options of `jaxsched tune ENGINE` (on the top-level `tune` parser)."""
    from ..tune import SEARCHERS

    t.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="NAME=LOW:HIGH[:KIND]",
        help="engine tuner: a make_params keyword, or a Config field the engine pads into one "
        "program (dp: lookahead_steps, lookahead_decay, ...), to tune: name=low:high with kind real "
        "(default), log or int, or name=v1|v2|... (repeat for several)",
    )
    t.add_argument(
        "--objective",
        default=None,
        metavar="'min|max METRIC'",
        help="engine tuner: what to optimise, the mean over the training seeds of one metric",
    )
    t.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="METRIC<=X",
        help="engine tuner: a bound on a metric's mean (METRIC<=X or METRIC>=X; repeat for several)",
    )
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="engine tuner: a Config field or a fixed make_params keyword, as `jaxsched sweep --set` takes it",
    )
    t.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="engine tuner: a tuned field's value to compare against (default: make_params' default, "
        "or the config's value of a Config field)",
    )
    t.add_argument("--trace", metavar="FILE", help="dp tuner: a trace whose lengths each seed resamples")
    t.add_argument("--searcher", default="cma_es", choices=SEARCHERS, help="engine tuner: evolution strategy")
    t.add_argument("--population", type=int, default=16, help="engine tuner: candidates per generation")
    t.add_argument("--generations", type=int, default=20, help="engine tuner: generations")
    t.add_argument("--train-seeds", type=int, default=8, help="engine tuner: seeds 0..N-1 the search sees")
    t.add_argument(
        "--test-seed-start", type=int, default=1000, help="engine tuner: first of the --seeds held-out seeds"
    )
    t.add_argument("--search-seed", type=int, default=0, help="engine tuner: the searcher's random seed")


def cmd_tune_engine(a: argparse.Namespace) -> int:
    """`jaxsched tune ENGINE ...` (see the module docstring)."""
    engine_name = a.experiment
    if engine_name not in ENGINES:
        raise ConfigError(
            f"tune: the first argument must be e3 or e4 (kv's gradient tuner) or an engine: {', '.join(ENGINES)}; "
            f"got {engine_name!r}"
        )
    check_options(a, TUNE_READS, {"tuner": "an engine name", "engine": engine_name})
    from ..sweep import parse_value
    from ..tune import parse_field, parse_objective
    from .sweep import _settings

    if not a.field:
        raise ConfigError("--field is required: give at least one, e.g. --field budget=64:2048:int")
    if a.objective is None:
        raise ConfigError("--objective is required, e.g. --objective 'min latency_mean_s'")
    fields = [parse_field(f) for f in a.field]
    objective = parse_objective(a.objective, a.constraint)
    cfg_kw, fixed = _settings(engine_name, a.set)
    if a.trace:
        from ..workload import read_trace

        if "workload" in cfg_kw:
            raise ConfigError("--trace and --set workload both set the dp workload; give one")
        cfg_kw["workload"] = read_trace(a.trace, order="resample")
    baseline = {}
    for text in a.baseline:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigError(f"--baseline must look like name=value, got {text!r}")
        baseline[name.strip()] = parse_value(value)
    n_train = require_int(a.train_seeds, "--train-seeds", lo=2, hi=1 << 16)
    n_test = require_int(a.seeds, "--seeds", lo=2, hi=1 << 16)
    start = require_int(a.test_seed_start, "--test-seed-start", lo=n_train, hi=2**32 - n_test)
    out = fresh_folder(a, a.out or f"results/tune_{engine_name}")
    check_folder_outputs(out, {"history": "history.csv", "summary": "summary.md", "plot": "convergence.png"})
    from ..engine import get_engine
    from ..progress import Progress
    from ..tune import check_problem, tune, write

    engine = get_engine(engine_name)
    config = engine.Config(**cfg_kw)
    train, test = range(n_train), range(start, start + n_test)
    check_problem(config, fields, objective, fixed, baseline, train, test)  # before the header line
    print(
        f"jaxsched tune {engine_name}: {objective}; fields {', '.join(f.name for f in fields)}; "
        f"{a.searcher}, {a.population} x {a.generations}, {n_train} training and {n_test} held-out seeds",
        file=sys.stderr,
    )
    bar = Progress(f"tune {engine_name}, generations", a.generations, enabled=not a.quiet)
    res = tune(
        config,
        fields,
        objective,
        fixed=fixed,
        baseline=baseline,
        train_seeds=train,
        test_seeds=test,
        searcher=a.searcher,
        population=a.population,
        generations=a.generations,
        seed=a.search_seed,
        progress=lambda done, total: bar.update(done),
    )
    bar.close()
    # The figure's title names the configuration tuned; its y axis, the objective's unit.
    setting = ", ".join([engine_name, *(a.set or ())] + ([f"trace {os.path.basename(a.trace)}"] if a.trace else []))
    unit = getattr(engine.METRICS.get(objective.metric), "unit", "")
    files = write(res, out, setting=setting, unit=unit)
    conf, ok = save_resolved(a, config_path(out, folder=True))
    print(res.summary())
    print(f"\nhistory: {files['history']}\nsummary: {files['summary']}\nplot: {files['plot']}\noptions: {conf}")
    if res.best is None:
        print("tune: no candidate met the constraints (their reasons are in history.csv)", file=sys.stderr)
        return 1
    return 0 if ok else 1
