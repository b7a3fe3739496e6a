"""`jaxsched --version`: the version and the git revision of the source tree, answered without
importing JAX, from the `jaxsched` command, `python -m jaxsched` and `python -m jaxsched.cli`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import jaxsched
from jaxsched import version

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"jaxsched (\S+) \(revision ([0-9a-f]{4,40}(-dirty)?|unknown)\)")
NO_JAX = (
    "import sys\nfrom jaxsched.cli import main\n"
    "try:\n    main(['--version'])\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
    "assert 'jax' not in sys.modules, '--version imported jax'\n"
)


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def fresh_line() -> str:
    """`version_line()` with the revision looked up now, not the one cached by an earlier test."""
    return f"jaxsched {jaxsched.__version__} (revision {version.git_revision.__wrapped__() or 'unknown'})"


def test_version_is_pyprojects():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert jaxsched.__version__ == version.__version__ == project["version"]


def test_version_line_names_the_version_and_the_revision():
    line = version.version_line()
    m = LINE.fullmatch(line)
    assert m, line
    assert m.group(1) == jaxsched.__version__
    assert m.group(2) == (version.git_revision() or "unknown")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_revision_of_a_checkout_and_of_other_folders(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-C", str(tmp_path)]
    assert version.git_revision(tmp_path) is None  # not a checkout
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("1\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    sha = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert version.git_revision.__wrapped__(tmp_path) == sha
    (tmp_path / "new.txt").write_text("untracked files do not count\n")
    assert version.git_revision.__wrapped__(tmp_path) == sha
    (tmp_path / "a.txt").write_text("2\n")  # a tracked file edited
    assert version.git_revision.__wrapped__(tmp_path) == f"{sha}-dirty"
    # a folder inside a checkout is not its top: a package installed there is not that commit
    (tmp_path / "sub").mkdir()
    assert version.git_revision.__wrapped__(tmp_path / "sub") is None


@pytest.mark.parametrize("module", ["jaxsched", "jaxsched.cli"])
def test_python_m_version_prints_the_line(module):
    p = _run("-m", module, "--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == fresh_line()


def test_version_outside_the_source_folder(tmp_path):
    # The revision is the source tree's, not that of the folder the command runs in.
    p = _run("-m", "jaxsched", "--version", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == fresh_line()


def test_version_does_not_import_jax():
    p = _run("-c", NO_JAX)
    assert p.returncode == 0, p.stderr
    assert LINE.fullmatch(p.stdout.strip()), p.stdout


def test_python_m_jaxsched_help_exits_0():
    p = _run("-m", "jaxsched", "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: jaxsched") and "--version" in p.stdout
