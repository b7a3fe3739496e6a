"""Output paths: checked before any work starts, written with the user's umask, and never lost.

A long run must not fail at its last line because `--out` names a directory or a folder that
cannot be written: every command checks its output paths with `check_file` / `check_dir`
before anything compiles, and all the files it will write with `check_output_paths` (each a
regular file or a new path, no two the same file): an atomic write renames over whatever is
there, so a device node, a FIFO or the results file given again as the plot would be replaced.
If a write still fails after the work is done (the disk filled up, a folder was removed
meanwhile), `save` writes the results to a fallback file in the temporary folder and says
where, so finished work survives.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping

from .errors import ConfigError

# Formats matplotlib writes with its default backends (Agg, PDF, SVG, PS, Pillow).
IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def file_mode() -> int:
    """Permission bits of a new file under the process umask (0o666 & ~umask).

    Atomic writes go through `tempfile.mkstemp`, which creates files owner-only; results files
    get these bits instead, as `open()` would give them."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _writable_dir(folder: Path, field: str, path: Path) -> None:
    """Create `folder` (and its parents) and prove it writable with a probe file."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".jaxsched-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(
            f"{field} must be a path in a folder that can be created and written, got {str(path)!r} ({e.strerror or e})"
        ) from None


_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
)


def special_kind(path: str | Path) -> str | None:
    """What is at `path` when it is not a regular file ('directory', 'FIFO', 'character
    device', ...), following symbolic links; None for a regular file or a new path."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # nothing there (a dangling link included): a new path
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _refuse_special(path: Path, field: str) -> None:
    """ConfigError unless `path` is a regular file or a new path."""
    kind = special_kind(path)
    if kind == "directory" or (kind is None and str(path).endswith(os.sep)):
        raise ConfigError(f"{field} must be a file path, got the directory {str(path)!r}")
    if kind is not None:
        raise ConfigError(f"{field} must be a regular file or a new path, got the {kind} {str(path)!r}")


def _same_file_key(path: Path) -> tuple:
    """What makes two paths one file: device and inode where it exists (hard and symbolic
    links), else the absolute path with links resolved."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", os.path.realpath(path))


def check_output_paths(paths: Mapping[str, str | Path | None]) -> dict[str, Path]:
    """{option: path} of every file a command will write (None: not written), checked before
    any work: each must be a regular file or a new path (never a directory, device, FIFO or
    socket) and no two may be the same file. One ConfigError names the option otherwise.
    Returns the paths as Paths (None entries left out)."""
    seen: dict[tuple, tuple[str, Path]] = {}
    out = {}
    for option, path in paths.items():
        if path is None:
            continue
        path = Path(path)
        _refuse_special(path, option)
        key = _same_file_key(path)
        if key in seen:
            other, first = seen[key]
            where = (
                f"{str(path)!r} for both" if str(first) == str(path) else f"{str(first)!r} and {str(path)!r}, one file"
            )
            raise ConfigError(f"{other} and {option} must be different files, got {where}")
        seen[key] = (option, path)
        out[option] = path
    return out


def check_file(path: str | Path, field: str, *, image: bool = False) -> Path:
    """`path` as a Path once it is known to be writable: a regular file or a new path (not a
    directory, device, FIFO or socket), its folder created and writable; with image=True its
    suffix must be one of IMAGE_SUFFIXES."""
    path = Path(path)
    _refuse_special(path, field)
    if image and path.suffix.lower() not in IMAGE_SUFFIXES:
        raise ConfigError(
            f"{field} must be an image path ending in one of {', '.join(IMAGE_SUFFIXES)}, got {str(path)!r}"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{field} must be a writable file, got read-only {str(path)!r}")
    _writable_dir(path.parent, field, path)
    return path


def check_dir(path: str | Path, field: str) -> Path:
    """`path` as a Path once it is a folder that exists (created if needed) and is writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{field} must be a folder, got the file {str(path)!r}")
    _writable_dir(path, field, path)
    return path


def fallback_path(path: str | Path) -> Path:
    """Where results go when `path` cannot be written: the temporary folder, a unique name."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"jaxsched-{path.stem}-{stamp}-{os.getpid()}{path.suffix}"


def save(write: Callable[[Path], Path], path: str | Path, field: str) -> tuple[Path, bool]:
    """Call write(path); if it fails with an OSError, write(fallback) and warn on stderr.

    Returns (the path written, whether it is the requested one)."""
    try:
        return write(Path(path)), True
    except OSError as e:
        alt = fallback_path(path)
        written = write(alt)
        print(
            f"jaxsched: warning: could not write {field} {str(path)!r} ({e.strerror or e}); "
            f"the results are saved in {written}",
            file=sys.stderr,
        )
        return written, False
