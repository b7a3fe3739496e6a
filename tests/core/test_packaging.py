"""pyproject.toml ships every folder of the source tree: the explicit package list (needed since
kernels/ installs as `jaxsched.kernels`, which `packages.find` cannot map) names each folder
under jaxsched/ and kernels/, and nothing else."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_list_names_every_source_folder():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"] == {"jaxsched.kernels": "kernels"}
    folders = set()
    for top, name in (("jaxsched", "jaxsched"), ("kernels", "jaxsched.kernels")):
        for d in [ROOT / top, *(ROOT / top).rglob("*")]:
            if d.is_dir() and d.name != "__pycache__":
                folders.add(".".join([name, *d.relative_to(ROOT / top).parts]))
    assert set(tool["packages"]) == folders
