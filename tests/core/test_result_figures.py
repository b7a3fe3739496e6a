"""The figures the commands draw into benchmarks/results/ (the docs embed them): `reproduce fig4`
and `noise` titles state the run and plot thousands of tokens while the CSV keeps tokens; the
kv experiments' titles state the request types, loads and capacity rules, and their legend lies
below the panels; a tuning run's convergence plot states the search; `save_compact` keeps the
picture and shrinks the file. No simulation runs here: the sweeps are replaced by fixed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jaxsched.dp.experiments as dp_experiments
import jaxsched.dp.plots as dp_plots
import jaxsched.kv.plots as kv_plots
import jaxsched.plots as plots


def _record(monkeypatch, module, name):
    """Every call of `module.name` recorded (args, kwargs) while the real function still runs."""
    seen = []
    real = getattr(module, name)

    def record(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, record)
    return seen


def test_reproduce_fig4_title_states_the_run_and_the_csv_keeps_tokens(tmp_path, monkeypatch):
    from jaxsched.cli.dp import _reproduce_fig4

    fake = {0: np.array([150_000.0, 152_000.0]), 64: np.array([89_000.0, 90_000.0])}
    monkeypatch.setattr(dp_experiments, "fig4_sweep", lambda **kw: fake)
    titles = _record(monkeypatch, dp_plots, "wrap_title")
    curves = _record(monkeypatch, dp_plots, "lookahead_curve")
    rows, text, png = _reproduce_fig4(2, tmp_path / "fig4.png", True)
    assert png.stat().st_size > 10_000
    title = titles[0][0][0]
    for part in ("BF-IO(H)", "oracle predictions (no noise)", "G = 16, B = 72, R = 64", "2 seeds", "8,000 steps"):
        assert part in title, (part, title)
    # the plot in thousands of tokens, with the unit in its label; the rows in tokens
    ((args, kwargs),) = curves
    assert args[0]["BF-IO(H), oracle"][64][0] == pytest.approx(89.0)
    assert "k tokens" in kwargs["ylabel"]
    assert rows[0]["avg_imbalance_tokens"] == 150_000.0 and "| 0 | 151000 ± " in text


def test_reproduce_noise_title_states_the_predictors_and_seeds(tmp_path, monkeypatch):
    from jaxsched.cli.dp import _reproduce_noise

    fake = {"noisy, H=16": {0.0: np.array([120_000.0, 121_000.0]), 0.5: np.array([300_000.0, 305_000.0])}}
    monkeypatch.setattr(dp_experiments, "noise_sweep", lambda **kw: fake)
    titles = _record(monkeypatch, dp_plots, "wrap_title")
    rows, _, png = _reproduce_noise(2, tmp_path / "noise.png", True)
    assert png.stat().st_size > 10_000
    title = titles[0][0][0]
    for part in ("prediction errors", "noisy predictor", "classifier", "2 seeds", "8,000 steps"):
        assert part in title, (part, title)
    assert {r["avg_imbalance_tokens"] for r in rows} >= {120_000.0, 305_000.0}


def test_kv_experiment_title_states_types_loads_and_capacity():
    from jaxsched.cli.kv import experiment_title
    from jaxsched.kv.experiments import EXPERIMENTS

    one = [dict(load=x, capacity_rule="1.2 M*") for x in (0.9, 0.5)]
    t = experiment_title(EXPERIMENTS["e4"], one)
    for part in ("E4", "Figs. 12-13", "10 request types", "prefill 60 x 10", "decode 50 to 500 in steps of 50"):
        assert part in t, (part, t)
    assert "load rho = 0.5, 0.9" in t and "C = 1.2 M*;" in t
    two = one + [dict(load=0.5, capacity_rule="M^pi(nested_wait)")]
    t = experiment_title(EXPERIMENTS["e3"], two)
    assert "decode 20, 40, 80, 160 tokens" in t and "C = 1.2 M* (solid) or M^pi(nested_wait) (dashed)" in t


def test_kv_rates_legend_lies_below_every_panel(tmp_path, monkeypatch, kv_rates_rows):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rows = kv_rates_rows(("WAIT", "FCFS"), batch_limits=("none", "128"), capacity_rules=("1.2 M*", "M^pi(wait)"))
    saved = _record(monkeypatch, kv_plots, "save_compact")
    kv_plots.plot_kv_rates(rows, tmp_path / "r.png", title="E2")
    (fig, _), _ = saved[0]
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["WAIT", "FCFS", "C = 1.2 M*", "C = M^pi(wait)"]
    box = legend.get_window_extent(renderer)
    assert box.y1 <= min(ax.get_tightbbox(renderer).y0 for ax in fig.axes)


def test_save_compact_keeps_the_picture_in_fewer_bytes(tmp_path):
    from PIL import Image

    fig, ax = plots.subplots(figsize=(6, 4))
    x = np.linspace(0, 10, 200)
    for k in range(6):
        ax.errorbar(x[::10], np.sin(x[::10] + k), yerr=0.1, label=f"curve {k}")
        ax.plot(x, np.cos(x * (k + 1) / 3), lw=0.8)
    ax.legend()
    plain = fig.savefig(tmp_path / "plain.png", dpi=110, bbox_inches="tight") or tmp_path / "plain.png"
    small = plots.save_compact(fig, tmp_path / "small.png", dpi=110)
    a = np.asarray(Image.open(plain).convert("RGB"), float)
    with Image.open(small) as im:
        assert im.mode == "P"
        b = np.asarray(im.convert("RGB"), float)
    assert a.shape == b.shape and np.abs(a - b).mean() < 1.0  # of 255
    assert small.stat().st_size < 0.7 * plain.stat().st_size


def test_convergence_title_states_the_search_and_the_axis_its_unit(tmp_path, monkeypatch):
    import jaxsched.tune as T

    fields = (T.parse_field("budget=64:2048:int"),)
    objective = T.parse_objective("min ttft_p99_s", ["token_growth_per_s<=69"])
    history = [
        dict(generation=g, index=i, budget=100 + i, objective=v, fitness=v, feasible=True, reason="")
        for g in range(3)
        for i, v in enumerate((0.40 - 0.02 * g, 0.45, 0.5))
    ]
    res = T.TuneResult(
        fields=fields,
        objective=objective,
        searcher="cma_es",
        history=history,
        best=None,
        best_train=math.nan,
        baseline={},
        test={"baseline": (0.9, 0.01)},
        train_seeds=tuple(range(8)),
        test_seeds=tuple(range(32)),
    )
    titles = _record(monkeypatch, plots, "wrap_title")
    finished = _record(monkeypatch, plots, "finish")
    T.plot_convergence(res, tmp_path / "c.png", setting="budget, policy=sarathi, horizon_s=300", unit="s")
    title = titles[0][0][0]
    for part in (
        "Tuning budget",
        "min ttft_p99_s subject to token_growth_per_s <= 69",
        "policy=sarathi, horizon_s=300",
        "cma_es, 3 candidates x 3 generations",
        "8 training seeds",
        "32 held-out seeds",
    ):
        assert part in title, (part, title)
    (fig, ax, _), _ = finished[0]
    assert ax.get_ylabel() == "ttft_p99_s (s)"
    lo, hi = ax.get_ylim()
    assert lo < 0.36 and hi > 0.9  # the baseline's line is inside the frame, not on it
