"""The project is citable and publishable: CITATION.cff parses and carries what CFF 1.2.0
requires, its version and licence are pyproject.toml's (and the package's), it cites the five
papers of the seeds, and LICENSE is the MIT licence that pyproject.toml names."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import jaxsched

ROOT = Path(__file__).resolve().parents[2]
yaml = pytest.importorskip("yaml", reason="PyYAML is needed to parse CITATION.cff: pip install pyyaml")


@pytest.fixture(scope="module")
def cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_citation_has_the_keys_cff_requires(cff):
    assert {"cff-version", "message", "title", "authors"} <= set(cff)
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert isinstance(cff["message"], str) and cff["message"].strip()
    assert cff["authors"] == [{"name": "The jaxsched authors"}]
    assert cff["keywords"] and all(isinstance(k, str) and k for k in cff["keywords"])


def test_citation_version_and_licence_are_the_projects(cff, project):
    # YAML would read an unquoted 1.0 as a float: the version must come back as the same text.
    assert str(cff["version"]) == project["version"] == jaxsched.__version__
    assert cff["license"] == project["license"] == "MIT"
    assert "LICENSE" in project["license-files"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "the jaxsched authors" in text


def test_citation_cites_the_five_papers(cff):
    refs = cff["references"]
    assert len(refs) == 5
    ids = [i["value"] for r in refs for i in r["identifiers"]]
    assert len(set(ids)) == 5 and all(i.startswith("arXiv:") for i in ids)
    for r in refs:
        # what CFF requires of a reference, and a year from the paper or its identifier
        assert r["type"] and r["title"] and isinstance(r["year"], int)
        assert r["authors"] and all(a["family-names"] and a["given-names"] for a in r["authors"])
    seeds = ROOT.parent / "shared" / "seeds"
    if seeds.is_dir():  # each title as printed at the top of its paper
        heads = [p.read_text()[:3000] for p in sorted(seeds.glob("0*.txt"))]
        assert len(heads) == 5
        for r in refs:
            assert sum(r["title"] in h for h in heads) == 1, r["title"]
