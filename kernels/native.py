"""The valley fill's native CPU kernel: `native/valley_fill.cc`, an XLA FFI handler.

It is compiled with the system C++ compiler on first use (about 10 s, once per source, jaxlib
version, compiler and CPU: the library is cached under `$JAXSCHED_NATIVE_CACHE`, else
`$XDG_CACHE_HOME/jaxsched`, else `~/.cache/jaxsched`) and registered as an XLA custom call
for the CPU platform. Where it cannot be built (no compiler), `available()` is False, one
warning says so, and `kernels.valley_fill` runs its XLA form, which gives the same results.
`JAXSCHED_NATIVE=0` turns the native kernel off for the whole process.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import subprocess
import tempfile
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp

SOURCE = Path(__file__).parent / "native" / "valley_fill.cc"
TARGET = "jaxsched_valley_fill"
_SYMBOL = "JaxschedValleyFill"
# The pool scan vectorizes only where the CPU has packed 32-bit max (SSE4.1 and later): built
# for this machine's CPU first (the cache key names it), else for the baseline ISA.
_FLAGS = ("-O3", "-shared", "-fPIC", "-std=c++17")
_TUNINGS = (("-march=native",), ())
_LIBS: list[ctypes.CDLL] = []  # loaded libraries stay referenced while XLA may call them


def cache_dir() -> Path:
    """Where built libraries are kept: $JAXSCHED_NATIVE_CACHE, else $XDG_CACHE_HOME/jaxsched,
    else ~/.cache/jaxsched."""
    if os.environ.get("JAXSCHED_NATIVE_CACHE"):
        return Path(os.environ["JAXSCHED_NATIVE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxsched"


def _command(compiler: str, tuning: tuple[str, ...], out: Path) -> list[str]:
    return [compiler, *_FLAGS, *tuning, "-I", jax.ffi.include_dir(), str(SOURCE), "-o", str(out)]


def _cpu() -> bytes:
    """What identifies this CPU's instruction set (a library built with -march=native must not
    be loaded on another CPU that shares the cache directory)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            return next((line for line in f if line.startswith((b"flags", b"Features"))), b"")
    except OSError:
        return platform.processor().encode()


def build(directory: Path | None = None) -> Path:
    """Compile the kernel (unless a library for this source, jaxlib, compiler and CPU exists
    already) and return the library's path. The library is written under a temporary name and
    renamed, so that processes building at once (test workers) never load a partial file.
    Raises OSError or subprocess.CalledProcessError when it cannot be built."""
    compiler = os.environ.get("CXX", "c++")
    directory = cache_dir() if directory is None else directory
    import jaxlib

    key = hashlib.sha256(
        b"\0".join(
            [
                SOURCE.read_bytes(),
                jaxlib.__version__.encode(),
                _cpu(),
                " ".join(_command(compiler, (), Path("o"))).encode(),
            ]
        )
    )
    lib = directory / f"valley_fill-{key.hexdigest()[:16]}.so"
    if lib.exists():
        return lib
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        for n, tuning in enumerate(_TUNINGS):
            try:
                subprocess.run(_command(compiler, tuning, Path(tmp)), check=True, capture_output=True, text=True)
                break
            except subprocess.CalledProcessError:
                if n == len(_TUNINGS) - 1:
                    raise
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return lib


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether the native kernel is built and registered for the CPU platform (built on the
    first call; False when JAXSCHED_NATIVE=0 or when it cannot be built)."""
    if os.environ.get("JAXSCHED_NATIVE", "1") == "0":
        return False
    try:
        lib = ctypes.cdll.LoadLibrary(str(build()))
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", None) or err
        warnings.warn(
            f"jaxsched: the native valley-fill kernel could not be built ({detail}); "
            "using its XLA form (the same results, slower on a CPU)",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    _LIBS.append(lib)
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(getattr(lib, _SYMBOL)), platform="cpu")
    return True


def default_on() -> bool:
    """Whether `kernels.valley_fill` uses the native kernel by default: where the CPU is JAX's
    default backend (elsewhere it would not run, so it is not built) and it is available."""
    return jax.default_backend() == "cpu" and available()


def valley_fill_native(
    loads: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray, valid: jnp.ndarray, target: jnp.ndarray
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Valley fill on N instances by the native kernel (CPU only; call `available()` first):
    loads, free int32[N, G]; sizes int32[N, R]; valid bool[N, R]; target int32[N]. Returns
    (worker, rank) int32[N, R], as `kernels.valley_fill`. Extra leading batch axes (a vmap
    around it) are flattened into N by the kernel."""
    out = jax.ShapeDtypeStruct(sizes.shape, jnp.int32)
    call = jax.ffi.ffi_call(TARGET, (out, out), vmap_method="broadcast_all")
    return call(
        loads.astype(jnp.int32),
        free.astype(jnp.int32),
        sizes.astype(jnp.int32),
        valid.astype(jnp.bool_),
        target.astype(jnp.int32),
    )
