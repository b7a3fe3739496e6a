"""The package's version and the git revision of its source tree, without importing JAX.

`__version__` is the one place the version is written (pyproject.toml's `version` must equal it;
tests/core/test_citation.py checks both and CITATION.cff). `git_revision` names the commit of a
git checkout, `version_line` is what `jaxsched --version` prints. Results rows identify their
code by `jaxsched.results.code_sha` instead, a hash of the package's files, which needs no git
and also tells an edited checkout from the commit it started from.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.1.0"

# Seconds each git command may take: a slow file system or a locked repository must not hang
# `--version`; a lookup that runs out of time reads as an unknown revision.
GIT_TIMEOUT_S = 3.0

# The folder above the `jaxsched` package: the repository root of a checkout (an installed
# copy lives in site-packages instead, which is no checkout of its own).
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _git(root: Path, *args: str) -> str | None:
    """stdout of `git -C root ARGS` stripped, or None if git is missing, fails or times out."""
    try:
        # --no-optional-locks: a status must not refresh (write) the index of a checkout that
        # someone else may be using at the same moment.
        p = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(root), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


@functools.cache
def git_revision(root: str | Path = SOURCE_ROOT) -> str | None:
    """Short commit hash of the git checkout whose top folder is `root`, with `-dirty` when a
    tracked file differs from that commit (untracked files do not count); None when `root` is
    not the top of a checkout, git is unavailable, or a git command fails or times out.

    The top must be `root` itself: a package installed under some other project's repository
    (a virtual environment inside a checkout) would otherwise be given that project's commit.
    Computed once per process and root."""
    root = Path(root).resolve()
    out = _git(root, "rev-parse", "--show-toplevel", "--short", "HEAD")
    if out is None or len(out.splitlines()) != 2:
        return None
    top, sha = out.splitlines()
    if Path(top).resolve() != root:
        return None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if status is None:  # the commit is known but not whether the files match it
        return None
    return f"{sha}-dirty" if status else sha


def version_line() -> str:
    """`jaxsched VERSION (revision REV)`, REV the `git_revision` of the source tree or `unknown`."""
    return f"jaxsched {__version__} (revision {git_revision() or 'unknown'})"
