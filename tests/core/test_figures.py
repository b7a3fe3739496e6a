"""benchmarks/figures.py: the docs' paper figures. One figure runs at its tiny size (the full
sizes take minutes and are not part of the test run); the figure files named by the script
are the ones the paper pages embed; the titles of the library's figures state their
configuration."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import figures

ROOT = Path(__file__).resolve().parents[2]


def _drawn_titles(monkeypatch, module) -> list[str]:
    """Every title `module` passes through `wrap_title` (each figure's title is drawn through
    it), recorded while the real function still runs."""
    seen = []
    real = module.wrap_title

    def record(title, width_in):
        seen.append(title)
        return real(title, width_in)

    monkeypatch.setattr(module, "wrap_title", record)
    return seen


def test_smallest_figure_is_drawn_with_its_configuration(tmp_path, monkeypatch):
    from matplotlib.image import imread

    import jaxsched.dp.plots as dp_plots

    drawn = _drawn_titles(monkeypatch, dp_plots)
    (made,) = figures.make(["bfio_loads"], tmp_path, tiny=True, log=lambda _: None)
    assert made.path == tmp_path / "000-bfio-loads.png"
    assert made.path.stat().st_size > 20_000  # lines, labels and a colour bar, not an empty canvas
    img = imread(made.path)
    assert img.shape[0] > 250 and img.shape[1] > 800  # one 10-inch panel at 110 dpi
    assert img[..., :3].std() > 0.05  # not one flat colour
    # The title drawn is the one returned, and it says policies, predictor, noise, seeds, steps.
    assert drawn == [made.title]
    steps = figures.LOADS_TINY["steps"]
    for part in ("FCFS", "no output predictions", "1 seed", f"steps 1-{steps}"):
        assert part in made.title


def test_only_refuses_unknown_names(capsys):
    with pytest.raises(SystemExit, match="bfio_loads"):
        figures.main(["--only", "bfio_loads,nope", "--out", "unused"])
    assert figures.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in figures.FIGURES)


def test_every_figure_is_embedded_in_its_paper_page():
    # Whitespace as Markdown reads it: a line break inside a paragraph is a space.
    pages = {
        p.name[:3]: " ".join(p.read_text().split()) for p in (ROOT / "docs" / "papers").glob("[0-9][0-9][0-9]-*.md")
    }
    for fig in figures.FIGURES.values():
        png = ROOT / "docs" / "figures" / fig.file
        assert png.is_file(), f"{png} missing: run python -m benchmarks.figures --only {fig.name}"
        assert 20_000 < png.stat().st_size < 250_000, f"{fig.file}: {png.stat().st_size} bytes"
        # The site publishes benchmarks/results/ images under figures/ too (docs/hooks.py).
        assert not (ROOT / "benchmarks" / "results" / fig.file).exists(), f"{fig.file} would collide in the site"
        page = pages[fig.paper]
        assert f"](../figures/{fig.file})" in page, f"{fig.file} is not embedded in paper {fig.paper}'s page"
        assert f"python -m benchmarks.figures --only {fig.name}" in page
    # and no page embeds a docs figure the script does not make
    files = {f.file for f in figures.FIGURES.values()}
    for text in pages.values():
        assert set(re.findall(r"\]\(\.\./figures/([^)]+\.png)\)", text)) <= files


def test_theorem_plot_titles_state_the_runs(tmp_path, monkeypatch):
    import jaxsched.dp.plots as dp_plots
    from jaxsched.dp.theorems.report import grid_setting, make_plots

    rows = []
    for G, B in ((8, 16), (8, 64)):
        for policy in ("fcfs", "bfio"):
            rows.append(
                dict(
                    group="T2 s_max=20 p=0.1",
                    G=G,
                    B=B,
                    policy=policy,
                    kernel="window" if policy == "bfio" else "",
                    n=4,
                    num_steps=200 + B,
                    burn_in_steps=50,
                    prediction=100.0 * B**0.5,
                    imb_mean=(100.0 if policy == "fcfs" else 10.0) * B**0.5,
                    imb_ci95=5.0,
                    gap_mean=3.0,
                    gap_ci95=0.5,
                    gap_bound=200.0,
                )
            )
    assert grid_setting(rows) == (
        "theory semantics (overloaded pool), 4 runs, 4 seeds each, 216-264 steps per run (50 burn-in); "
        "BF-IO H = 0, kernel window"
    )
    drawn = _drawn_titles(monkeypatch, dp_plots)
    pngs = make_plots(rows, tmp_path)
    assert all(p.stat().st_size > 10_000 for p in pngs)
    assert len(drawn) == 3 and all("4 seeds each" in t and "216-264 steps" in t for t in drawn)
    assert "FCFS (no predictions)" in drawn[1] and "kernel" not in drawn[1]


def test_kv_scaling_title_defaults_to_seeds_and_horizons(tmp_path, monkeypatch):
    import jaxsched.kv.plots as kv_plots

    rows = [
        dict(instance=name, T=T, seeds=16, gap=g / T, gap_ci=0.1 * g / T, latency_mean=3.0, latency_mean_ci=0.1)
        for name, g in (("equality", 20.0), ("strict", 5.0))
        for T in (100.0, 400.0)
    ]
    fits = [dict(instance="equality", gap_slope=-1.0, latency_slope=0.0)]
    drawn = _drawn_titles(monkeypatch, kv_plots)
    kv_plots.plot_kv_scaling(rows, fits, tmp_path / "s.png")
    assert drawn and "16 seeds per point" in drawn[0] and "T = 100-400 s" in drawn[0]


def test_lookahead_title_gets_the_seed_count(tmp_path, monkeypatch):
    import jaxsched.dp.plots as dp_plots

    drawn = _drawn_titles(monkeypatch, dp_plots)
    curves = {"BF-IO(H)": {0: np.array([3.0, 4.0, 5.0]), 16: np.array([2.0, 2.5, 3.0])}}
    dp_plots.lookahead_curve(curves, tmp_path / "a.png", title="Imbalance (G = 16)")
    dp_plots.lookahead_curve(curves, tmp_path / "b.png", title="Imbalance, 3 seeds")
    assert drawn == ["Imbalance (G = 16); 3 seeds per point", "Imbalance, 3 seeds"]


def test_kv_rates_title_gets_seeds_and_requests(tmp_path, monkeypatch, kv_rates_rows):
    import jaxsched.kv.plots as kv_plots

    rows = kv_rates_rows(
        ("wait", "fcfs"), per_rate=(dict(seeds=3, num_requests=10_000), dict(seeds=3, num_requests=12_000))
    )
    drawn = _drawn_titles(monkeypatch, kv_plots)
    kv_plots.plot_kv_rates(rows, tmp_path / "a.png", title="E1: WAIT")
    kv_plots.plot_kv_rates(rows, tmp_path / "b.png", title="E1: WAIT, 3 seeds")
    assert drawn == ["E1: WAIT; 3 seeds per point, 10,000-12,000 requests per run", "E1: WAIT, 3 seeds"]
