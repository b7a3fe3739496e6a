"""The docs site and the README: every page of docs/ is reachable from the nav of mkdocs.yml,
the README stays short and its relative links resolve, the tables docs/hooks.py writes from the
code are the code's, and `mkdocs build --strict` passes (no broken link, no page outside the
nav, no docstring the reference cannot render)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# Pages of docs/ that are deliberately not in the nav (none today: names.md, the output of
# `jaxsched list --markdown`, is in the nav under Engines).
NOT_IN_NAV: set[str] = set()


def nav_pages() -> list[str]:
    """The .md paths the nav of mkdocs.yml lists, read without a YAML parser (mkdocs.yml's nav
    is one path per line)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+-\s+(?:[^\n]*:\s+)?([\w./-]+\.md)\s*$", nav, re.M)


def test_every_docs_page_is_in_the_nav():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    listed = nav_pages()
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"
    assert not set(listed) - pages, f"the nav lists pages that do not exist: {sorted(set(listed) - pages)}"
    missing = pages - set(listed) - NOT_IN_NAV
    assert not missing, f"pages of docs/ missing from mkdocs.yml's nav: {sorted(missing)}"


def test_the_nav_reader_sees_the_sections():
    # The reader above is a regex: it must find pages at every depth of the nav, or the check
    # before it would pass on a nav it cannot read.
    listed = nav_pages()
    for page in ("index.md", "guide/cli.md", "engines/dp.md", "dp-semantics.md", "papers/000-bfio.md", "api/run.md"):
        assert page in listed


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 220, f"README.md has {len(lines)} lines; the details belong in docs/"


def readme_links() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code blocks are not links
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_relative_links_point_at_files():
    links = [t for t in readme_links() if "://" not in t and not t.startswith(("#", "mailto:"))]
    assert len(links) >= 10, "the README links into docs/"
    broken = [t for t in links if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not broken, f"README.md links to files that do not exist: {broken}"


def test_readme_keeps_the_test_command_of_ci():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python -m pytest -q -n 2" in ci
    assert "python -m pytest -q -n 2" in readme


def test_readme_links_every_paper_and_every_engine_page():
    links = readme_links()
    for arxiv in ("2601.17855", "2504.11320", "2508.06133", "2508.14544", "2504.07347"):
        assert f"https://arxiv.org/abs/{arxiv}" in links
    for page in ("000-bfio", "001-wait", "002-offline", "003-interval", "004-budget"):
        assert f"docs/papers/{page}.md" in links


@pytest.fixture(scope="module")
def hooks():
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')")
    import importlib.util

    spec = importlib.util.spec_from_file_location("jaxsched_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_tables_are_the_registries_and_metrics(hooks):
    from jaxsched.cli.names import registries
    from jaxsched.dp import METRICS
    from jaxsched.registry import ENGINES

    for engine in ENGINES:
        table = hooks.render_marker("registry", f"{engine} policies")
        for name in registries(engine)["POLICIES"].names():
            assert f"| `{name}` |" in table
    metrics = hooks.render_marker("metrics", "dp")
    assert metrics.count("\n") == len(METRICS) + 1
    for name, m in METRICS.items():
        assert f"| `{name}` | {m.unit} |" in metrics
    assert hooks.render_marker("columns", "dp").startswith("`policy`, `lookahead_steps`")
    commands = hooks.render_marker("commands", "")
    for cmd in ("jaxsched run", "jaxsched sweep", "jaxsched kv experiment", "jaxsched network run", "jaxsched list"):
        assert f"| `{cmd}` |" in commands
    with pytest.raises(ValueError, match="has no registry"):
        hooks.render_marker("registry", "dp nonsense")
    with pytest.raises(ValueError, match="bad marker"):
        hooks.render_marker("metrics", "")


def test_hook_points_result_figures_at_the_site_copy(hooks):
    assert hooks.figure_uri("papers/000-bfio.md", "../../benchmarks/results/fig4.png") == "../figures/fig4.png"
    assert hooks.figure_uri("tuning.md", "../benchmarks/results/kv/e3.png") == "figures/kv/e3.png"
    assert hooks.figure_uri("tuning.md", "../benchmarks/results/kv/e3.md") is None  # not an image
    assert hooks.figure_uri("tuning.md", "design.md") is None
    assert hooks.figure_uri("tuning.md", "https://example.org/x.png") is None


# .ci/run builds the site with --strict before the tests; the default run need not build it twice.
@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").exists()
    # the hook published the recorded figures, and a generated table reached its page
    assert (tmp_path / "site" / "figures" / "fig4.png").exists()
    assert "avg_imbalance_tokens" in (tmp_path / "site" / "engines" / "dp" / "index.html").read_text(encoding="utf-8")
    print(f"mkdocs build --strict: {time.monotonic() - start:.1f} s")
