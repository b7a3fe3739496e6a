"""JAX's persistent compilation cache for the command line.

Every `jaxsched` command compiles its simulation steps anew in each process: seconds per
program, often more than a small run takes to simulate. JAX can keep compiled programs on disk
and load them in the next process that compiles the same program (same shapes, options, devices
and JAX version), so the command line turns that cache on, in `$XDG_CACHE_HOME/jaxsched/xla`
(else `~/.cache/jaxsched/xla`). It also caches programs that compile in under JAX's default of
one second, which are most of a small command's programs; only trivial ones (a type conversion,
one comparison: tens of milliseconds, about what loading them costs) still compile each time.

Like `devices`, this is an application's choice, made only here: the library never changes
global JAX settings, and a program importing jaxsched turns the cache on itself with
`jax.config.update("jax_compilation_cache_dir", ...)`. The settings are passed as the
environment variables JAX reads when it is imported (`JAX_COMPILATION_CACHE_DIR` and the two
thresholds), so nothing imports JAX before the command does. When JAX is already imported
(`main()` called from a test or a notebook) nothing is changed: that process's JAX settings are
its own, and a cache turned on from `main()` would stay on in it after the command returns.
(`main()` called before anything imported JAX acts as the command does, as `devices` does.)

`JAXSCHED_COMPILE_CACHE_DIR` names another folder; `JAXSCHED_COMPILE_CACHE=0` or
`jaxsched --no-compile-cache COMMAND` turns the cache off. A `JAX_COMPILATION_CACHE_DIR` (or
either threshold) set by the user is left as it is. A folder that cannot be created or written
gives one warning, and the command runs without a cache.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

from ..errors import ConfigError

ENV = "JAXSCHED_COMPILE_CACHE"
DIR_ENV = "JAXSCHED_COMPILE_CACHE_DIR"
JAX_DIR_ENV = "JAX_COMPILATION_CACHE_DIR"
# JAX's defaults keep only programs that took a second or more to compile and leave the size
# floor to the filesystem; a small command's simulation steps take a fraction of a second each.
THRESHOLDS = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.1",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",  # no size floor, not overridable
}


def user_cache_home(environ: MutableMapping[str, str]) -> Path:
    """jaxsched's user cache folder: $XDG_CACHE_HOME/jaxsched, else ~/.cache/jaxsched.

    The native kernel keeps its library there too (`kernels.native.cache_dir`), but that module
    imports JAX, which must not happen before the cache's settings are in the environment."""
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxsched"


def cache_wanted(environ: MutableMapping[str, str]) -> bool:
    """Whether $JAXSCHED_COMPILE_CACHE allows the cache: unset, empty or 1 yes, 0 no."""
    raw = environ.get(ENV, "")
    if raw.strip() not in ("", "0", "1"):
        raise ConfigError(f"{ENV} must be 0 (no compile cache), 1 or empty (cache), got {raw!r}")
    return raw.strip() != "0"


def cache_folder(environ: MutableMapping[str, str]) -> Path:
    """Where compiled programs are kept: $JAXSCHED_COMPILE_CACHE_DIR, else the user cache
    folder's `xla`. Absolute, so that a command changing directory keeps the same folder."""
    named = environ.get(DIR_ENV)
    folder = Path(named).expanduser() if named else user_cache_home(environ) / "xla"
    return folder.absolute()


def usable_folder(folder: Path) -> str | None:
    """None when `folder` exists (created here if needed) and this process may write to it,
    else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return e.strerror or str(e)
    if not os.access(folder, os.W_OK | os.X_OK):
        return "not writable"
    return None


def use_compile_cache(environ: MutableMapping[str, str] | None = None, enabled: bool = True) -> Path | None:
    """Puts JAX's persistent cache settings in the environment (folder from cache_folder) when
    the cache is wanted (`enabled`, the opposite of `--no-compile-cache`, and
    $JAXSCHED_COMPILE_CACHE), JAX is not imported yet and the user has not named a cache folder
    of their own. Returns the folder, or None when it left the environment alone."""
    environ = os.environ if environ is None else environ
    wanted = cache_wanted(environ)  # a bad value is an error even with the flag given
    if not (enabled and wanted) or "jax" in sys.modules or JAX_DIR_ENV in environ:
        return None
    folder = cache_folder(environ)
    problem = usable_folder(folder)
    if problem is not None:
        print(
            f"jaxsched: warning: compile cache folder {str(folder)!r} cannot be used "
            f"({problem}); running without a compile cache (set {DIR_ENV} to another folder, "
            f"or {ENV}=0)",
            file=sys.stderr,
        )
        return None
    environ[JAX_DIR_ENV] = str(folder)
    for name, value in THRESHOLDS.items():
        environ.setdefault(name, value)
    return folder
