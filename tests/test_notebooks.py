"""The notebooks in notebooks/: every committed .ipynb runs top to bottom in a Jupyter kernel,
and its cells are those of its percent-format source `<name>.py` beside it (from which
notebooks/build_notebooks.py builds it), so neither can be edited without the other."""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
BUILDER = "build_notebooks.py"
# Generous: the slowest cell takes under a minute on 2 shared CPU cores.
CELL_TIMEOUT_S = 900
REBUILD = "rebuild with `python notebooks/build_notebooks.py {}`"


def _scripts() -> set[str]:
    return {p.stem for p in NOTEBOOKS.glob("*.py") if p.name != BUILDER}


def _notebooks() -> set[str]:
    return {p.stem for p in NOTEBOOKS.glob("*.ipynb")}


NAMES = sorted(_scripts() | _notebooks())


def _execute(nb: nbformat.NotebookNode) -> None:
    """Run every cell in a fresh python3 kernel in notebooks/, as Jupyter opens it there; a
    failing cell raises CellExecutionError with its traceback."""
    NotebookClient(
        nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()


def test_every_notebook_has_its_source_and_back():
    assert NAMES, f"no notebooks found in {NOTEBOOKS}"
    assert _notebooks() == _scripts(), (
        f"notebooks without a source script: {sorted(_notebooks() - _scripts())}; "
        f"scripts without a notebook: {sorted(_scripts() - _notebooks())} "
        "(build them with `python notebooks/build_notebooks.py`)"
    )


@pytest.mark.parametrize("name", NAMES)
def test_notebook_cells_equal_its_source(name):
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    source = jupytext.read(NOTEBOOKS / f"{name}.py")
    got = [(c.cell_type, c.source) for c in committed.cells]
    want = [(c.cell_type, c.source) for c in source.cells]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"{name}.ipynb cell {i} differs from {name}.py: {g!r} != {w!r}; " + REBUILD.format(name)
    assert len(got) == len(want), f"{name}.ipynb has {len(got)} cells, {name}.py {len(want)}; " + REBUILD.format(name)
    # Built, not merely converted: every code cell was executed (its outputs are committed).
    unrun = [i for i, c in enumerate(committed.cells) if c.cell_type == "code" and c.execution_count is None]
    assert not unrun, f"{name}.ipynb cells {unrun} were never executed; " + REBUILD.format(name)


# The default run executes the quickest notebook (about a minute); the others take 1-3 minutes
# each on two cores (docs/guide/install.md) and run with -m slow. Every notebook's cells are
# checked against its source and as executed (above) in the default run.
DEFAULT_EXECUTED = {"interval"}


@pytest.mark.parametrize(
    "name", [n if n in DEFAULT_EXECUTED else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]
)
def test_notebook_executes(name):
    _execute(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4))


def test_kernel_is_this_environment():
    """kernel_name="python3" resolves to this environment's ipykernel, so the notebooks run
    against the jaxsched installed here."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys; print(sys.prefix)")])
    _execute(nb)
    assert nb.cells[0].outputs[0]["text"].strip() == sys.prefix
