"""Drivers of the BF-IO paper's experiments on the dp engine: several policies on one
configuration, Table 1, Fig. 4 and the prediction-noise study (used by the CLI and notebooks)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..buckets import simulate_buckets
from ..errors import ConfigError, as_one_grid
from ..progress import Progress
from ..results import markdown_table, mean_ci_column, metric_value
from ..run import simulate
from ..workload import Trace, read_trace
from .config import DPConfig, make_params
from .metrics import METRICS
from .registry import POLICIES

TABLE_METRICS = (
    "avg_imbalance_tokens",
    "throughput_tokens_per_s",
    "tpot_s",
    "energy_j",
    "avg_power_w",
    "idle_fraction",
    "queue_delay_mean_s",
    "queue_delay_p99_s",
)


@dataclass(frozen=True)
class PolicySpec:
    """A policy name with its BF-IO lookahead H (`DPConfig.lookahead_steps`); written `name` or
    `bfio:H`."""

    name: str
    lookahead_steps: int = 0

    @property
    def label(self) -> str:
        return f"bfio(H={self.lookahead_steps})" if self.name == "bfio" else self.name


def parse_policies(text: str) -> list[PolicySpec]:
    """Parse 'fcfs,jsq_tokens,bfio:0,bfio:20' into PolicySpecs (ConfigError on bad input)."""
    specs = []
    for item in [t.strip() for t in text.split(",") if t.strip()]:
        name, _, h = item.partition(":")
        if name not in POLICIES:
            raise ConfigError(
                f"policies: each entry must be one of {tuple(POLICIES)} (bfio may be written bfio:H), got {item!r}"
            )
        if h and name != "bfio":
            raise ConfigError(f"policies: only bfio takes a lookahead (bfio:H, H = lookahead_steps), got {item!r}")
        try:
            steps = int(h) if h else 0
        except ValueError:
            raise ConfigError(f"policies: the lookahead H in {item!r} must be an integer >= 0") from None
        if steps < 0:
            raise ConfigError(f"policies: the lookahead H in {item!r} must be an integer >= 0")
        specs.append(PolicySpec(name, steps))
    if not specs:
        raise ConfigError("policies must name at least one policy")
    return specs


def run_policies(
    base: DPConfig,
    specs: Sequence[PolicySpec],
    seeds: Sequence[int],
    *,
    params_kw: dict | None = None,
    progress: bool = True,
    block_steps: int | None = None,
    into: list | None = None,
) -> list[tuple[PolicySpec, DPConfig, dict]]:
    """Run every policy on the same workload and seeds; returns (spec, config, metrics).

    The policies' configs and params are built first, as one grid (`errors.as_one_grid`):
    `base`'s BF-IO options and `params_kw` (a predictor and its noise) are refused only if no
    policy of `specs` reads them.
    into: a list the (spec, config, metrics) of each policy is appended to as it finishes, so
    that a caller interrupted mid-run still holds the finished ones (default: a new list)."""
    out = [] if into is None else into
    with as_one_grid():
        configs = [dataclasses.replace(base, policy=s.name, lookahead_steps=s.lookahead_steps) for s in specs]
        all_params = [make_params(cfg, **(params_kw or {})) for cfg in configs]
    for n, (spec, cfg, params) in enumerate(zip(specs, configs, all_params), 1):
        bar = Progress(f"[{n}/{len(specs)}] {spec.label}", enabled=progress)
        res = simulate(cfg, params, seeds, progress=bar, block_steps=block_steps)
        out.append((spec, cfg, res.metrics))
    return out


def result_rows(results, seeds: Sequence[int], extra: dict | None = None) -> list[dict]:
    """One row per policy and seed, configuration columns first."""
    rows = []
    for spec, cfg, m in results:
        for i, seed in enumerate(seeds):
            row = dict(
                policy=spec.name,
                lookahead_steps=spec.lookahead_steps,
                label=spec.label,
                seed=int(seed),
                num_workers=cfg.num_workers,
                slots_per_worker=cfg.slots_per_worker,
                pool_size=cfg.pool_size,
                semantics=cfg.semantics,
                predictor=cfg.predictor,
                workload=cfg.workload.name,
                num_steps=cfg.num_steps,
            )
            row.update(extra or {})
            row.update({k: metric_value(m[k][i], METRICS[k]) for k in METRICS})
            rows.append(row)
    return rows


def summary_table(results, metrics: Sequence[str] = TABLE_METRICS) -> str:
    """Markdown table: policy by metric, mean ± 95% CI half-width over seeds, one number
    format per column, with a caption that says so."""
    columns = [mean_ci_column([m[k] for _, _, m in results]) for k in metrics]
    rows = [[spec.label, *(col[i] for col in columns)] for i, (spec, _, _) in enumerate(results)]
    n = len(next(iter(results[0][2].values()))) if results else 0
    caption = f"mean ± 95% CI half-width over {n} seeds (Student t)" if n > 1 else "one seed: no confidence interval"
    return caption + "\n\n" + markdown_table(["policy", *metrics], rows)


def table1_workload(trace_path: str, num_requests: int = 100_000, rng_seed: int = 42) -> Trace:
    """The BF-IO paper's Table 1 stream: N rows drawn with numpy default_rng(42).choice(8000)."""
    tr = read_trace(trace_path)
    idx = np.random.default_rng(rng_seed).choice(tr.prompt.size, size=num_requests, replace=True)
    return Trace(tr.prompt[idx], tr.output[idx], name=f"{tr.name}_table1", order="sequential")


# Table 1 of the BF-IO paper (G = 16, B = 72, R = 64): imbalance (1e4 tokens), throughput
# (1e4 tokens/s), TPOT (s), energy (kJ).
PAPER_TABLE1 = {
    "fcfs": (27.9, 8.00, 1.42e-2, 396.0),
    "jsq_tokens": (28.2, 7.99, 1.42e-2, 396.0),
    "bfio(H=0)": (2.92, 9.03, 1.26e-2, 386.0),
    "bfio(H=20)": (1.65, 9.13, 1.25e-2, 383.0),
}
TABLE1_POLICIES = [PolicySpec("fcfs"), PolicySpec("jsq_tokens"), PolicySpec("bfio", 0), PolicySpec("bfio", 20)]


def table1_rows(results) -> str:
    """Markdown table of a Table 1 run beside the paper's values."""
    rows = []
    for spec, _, m in results:
        ours = (
            m["avg_imbalance_tokens"][0] / 1e4,
            m["throughput_tokens_per_s"][0] / 1e4,
            m["tpot_s"][0],
            m["energy_j"][0] / 1e3,
        )
        paper = PAPER_TABLE1.get(spec.label, (float("nan"),) * 4)
        rows.append([spec.label] + [f"{o:.4g} ({p:.3g})" for o, p in zip(ours, paper)])
    return markdown_table(
        [
            "policy (paper in brackets)",
            "avg imbalance (1e4 tokens)",
            "throughput (1e4 tokens/s)",
            "TPOT (s)",
            "energy (kJ)",
        ],
        rows,
    )


# The BF-IO paper's Fig. 4 (notes/000.md, section 3.2): synthetic requests, N = 8000 per seed,
# G = 16, B = 72, C = (72 * 0.6 ms + 35 ms) / 8; metric: mean of G max - sum over the first 8000
# steps of the post-growth, pre-removal loads, ramp and drain included.
FIG4_LOOKAHEAD_STEPS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
FIG4_STEPS = 8000


def fig4_config(H: int, steps: int, decay: float, predictor: str = "oracle", num_requests: int = 8000) -> DPConfig:
    """BF-IO(H) on the Fig. 4 workload (G = 16, B = 72, a pool of 64)."""
    from ..workload import BivariateNormal, Finite

    return DPConfig(
        num_workers=16,
        slots_per_worker=72,
        pool_size=64,
        policy="bfio",
        lookahead_steps=H,
        num_steps=steps,
        workload=Finite(BivariateNormal(), num_requests),
        lookahead_decay=decay,
        predictor=predictor,
    )


# The Fig. 4 step time: (B * 0.6 ms + 35 ms) / 8, the paper's batch-time model scaled per step.
FIG4_STEP_CONST_S = (72 * 0.6e-3 + 35e-3) / 8


def _fig4_runs(runs: list[tuple[DPConfig, dict]], seeds, progress: bool, label: str) -> list:
    """Imbalance (tokens, float64[S]) of each (config, make_params keywords) run: the runs in
    size buckets (the lookahead H is a size: one program per bucket of lookaheads)."""
    pairs = [(cfg, make_params(cfg, step_const_s=FIG4_STEP_CONST_S, **kw)) for cfg, kw in runs]
    res = simulate_buckets(pairs, list(seeds), record=True, block_steps=2000, progress=progress, label=label)
    return [_hist_imbalance(r) for r in res]


def fig4_sweep(
    lookahead_steps=FIG4_LOOKAHEAD_STEPS,
    seeds=range(8),
    *,
    decay: float = 1.0,
    progress: bool = True,
    params_kw: dict | None = None,
    num_requests: int = 8000,
    steps: int = FIG4_STEPS,
) -> dict[int, np.ndarray]:
    """Average imbalance (tokens, float64[S]) of BF-IO(H) per lookahead H in
    `lookahead_steps` on the Fig. 4 workload.

    decay = 1 weighs every window row equally: the paper's program, whose objective is the
    plain sum over the window. The lookaheads run in size buckets (one program for H = 0, one
    per bucket of the others; bitwise the runs one at a time).
    """
    runs = [(fig4_config(H, steps, decay, num_requests=num_requests), dict(params_kw or {})) for H in lookahead_steps]
    return dict(zip(lookahead_steps, _fig4_runs(runs, seeds, progress, "Fig. 4, lookaheads")))


def noise_sweep(
    lookahead_steps=(16, 64),
    levels=(0.0, 0.1, 0.2, 0.3, 0.5),
    cls_rates=(0.0, 0.1, 0.2, 0.3),
    seeds=range(4),
    *,
    decay: float = 1.0,
    progress: bool = True,
    steps: int = FIG4_STEPS,
) -> dict[str, dict[float, np.ndarray]]:
    """BF-IO(H) on the Fig. 4 workload under prediction errors.

    Multiplicative noise: o_hat = o * U[1 - d, 1 + d] for d in `levels`; classifier: false-positive
    = false-negative rate in `cls_rates`. Returns {label: {level: imbalance float64[S]}}. The
    levels of one (H, predictor) are params of one program.
    """
    keys, runs = [], []
    for H in lookahead_steps:
        for d in levels:
            keys.append((f"noisy, H={H}", d))
            runs.append((fig4_config(H, steps, decay, "noisy"), dict(noise_lo=d, noise_hi=d)))
        for e in cls_rates:
            keys.append((f"classifier, H={H}", e))
            runs.append((fig4_config(H, steps, decay, "classifier"), dict(fp_rate=e, fn_rate=e)))
    out: dict[str, dict[float, np.ndarray]] = {}
    for (label, level), imb in zip(keys, _fig4_runs(runs, seeds, progress, "prediction noise")):
        out.setdefault(label, {})[level] = imb
    return out


def _hist_imbalance(res) -> np.ndarray:
    """Mean of G max - sum of the post-growth loads over each seed's live steps."""
    L = res.trajectories["hist_loads"].astype(np.int64)
    live = res.trajectories["live"]
    imb = L.shape[-1] * L.max(-1) - L.sum(-1)
    return np.array([imb[i][live[i]].mean() for i in range(imb.shape[0])])
