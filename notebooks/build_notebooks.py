"""Build the notebooks in this folder from their sources, with fresh outputs.

A notebook's source is the percent-format script `<name>.py` beside it (cells start at `# %%`).
jupytext turns the script into a notebook and nbclient executes it top to bottom in a Jupyter
kernel (`python3`, this environment's ipykernel) with this folder as the working directory,
exactly as Jupyter runs the committed `<name>.ipynb`. Edit the script, then rebuild:

    python notebooks/build_notebooks.py              # every notebook
    python notebooks/build_notebooks.py wait bfio    # the named ones

tests/test_notebooks.py executes the committed notebooks and checks that their cells equal the
scripts'.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 900


def sources() -> dict[str, Path]:
    """{notebook name: its script}: every `*.py` in this folder except this builder."""
    return {p.stem: p for p in sorted(HERE.glob("*.py")) if p.name != Path(__file__).name}


def convert(script: Path) -> nbformat.NotebookNode:
    """The notebook of a percent-format script, without outputs."""
    nb = jupytext.read(script)
    # jupytext draws random cell ids; numbered ones keep a rebuild's diff to the outputs.
    for i, cell in enumerate(nb.cells):
        cell.id = f"{script.stem}-{i}"
    return nb


def execute(nb: nbformat.NotebookNode, *, timeout: int = CELL_TIMEOUT_S) -> nbformat.NotebookNode:
    """Run every cell in order in a fresh python3 kernel started in this folder (raises
    nbclient.exceptions.CellExecutionError on the first failing cell)."""
    # record_timing=False: per-cell timestamps would change every committed notebook on every
    # rebuild.
    NotebookClient(nb, kernel_name="python3", timeout=timeout, record_timing=False,
                   resources={"metadata": {"path": str(HERE)}}).execute()
    return nb


def build(name: str) -> tuple[Path, float]:
    """Convert and execute notebook `name`, write `<name>.ipynb`; returns (path, wall s)."""
    t0 = time.perf_counter()
    nb = execute(convert(sources()[name]))
    nbformat.validate(nb)
    dest = HERE / f"{name}.ipynb"
    nbformat.write(nb, dest)
    return dest, time.perf_counter() - t0


def main(argv: list[str]) -> int:
    names = argv or list(sources())
    unknown = sorted(set(names) - set(sources()))
    if unknown:
        print(f"unknown notebooks {unknown}; available: {list(sources())}", file=sys.stderr)
        return 2
    for name in names:
        dest, wall = build(name)
        print(f"{dest.relative_to(HERE.parent)}: executed in {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
