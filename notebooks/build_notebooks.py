"""Execute the walkthrough scripts in this folder and save them as notebooks with outputs.

Each `*.walk.py` file is split into cells at lines starting with `# %%` (markdown cells start
with `# %% [markdown]` and hold comment lines). Cells run in one namespace; printed output and
saved figures (shown with `show_png(path)`) become the cell outputs. Needs no Jupyter:
`python notebooks/build_notebooks.py` writes `<name>.ipynb` beside each script.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import sys
from pathlib import Path


def _cells(text: str) -> list[tuple[str, str]]:
    cells, kind, buf = [], None, []
    for line in text.splitlines():
        if line.startswith("# %%"):
            if kind is not None:
                cells.append((kind, "\n".join(buf).strip("\n")))
            kind, buf = ("markdown" if "[markdown]" in line else "code"), []
        elif kind is not None:
            buf.append(line[2:] if kind == "markdown" and line.startswith("# ") else
                       ("" if kind == "markdown" and line == "#" else line))
    if kind is not None:
        cells.append((kind, "\n".join(buf).strip("\n")))
    return cells


def build(script: Path) -> Path:
    ns: dict = {}
    images: list[str] = []
    ns["show_png"] = lambda p: images.append(base64.b64encode(Path(p).read_bytes()).decode())
    nb_cells = []
    for n, (kind, src) in enumerate(_cells(script.read_text())):
        if kind == "markdown":
            nb_cells.append({"cell_type": "markdown", "metadata": {}, "source": src})
            continue
        out = io.StringIO()
        images.clear()
        with contextlib.redirect_stdout(out):
            exec(compile(src, f"{script.name}[cell {n}]", "exec"), ns)
        outputs = []
        if out.getvalue():
            outputs.append({"output_type": "stream", "name": "stdout", "text": out.getvalue()})
        outputs += [{"output_type": "display_data", "metadata": {}, "data": {"image/png": im}} for im in images]
        nb_cells.append({"cell_type": "code", "metadata": {}, "execution_count": n, "source": src,
                         "outputs": outputs})
    nb = {"cells": nb_cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    dest = script.with_name(script.name.replace(".walk.py", ".ipynb"))
    dest.write_text(json.dumps(nb, indent=1))
    return dest


if __name__ == "__main__":
    here = Path(__file__).parent
    for s in sorted(here.glob("*.walk.py")) if len(sys.argv) < 2 else map(Path, sys.argv[1:]):
        print(build(s))
