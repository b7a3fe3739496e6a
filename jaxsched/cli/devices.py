"""One host CPU device per core for the command line.

XLA's CPU backend is one device by default, and one device runs a vmapped chunk of seeds on one
core. The runner shards each chunk over all local devices (`jaxsched.run`), so the command line
asks XLA for one CPU device per core before JAX starts. This is an application's choice, made
only here: the library never sets global flags, and a program importing jaxsched keeps JAX's
defaults. Results are bitwise the same for any device count (tests/core/test_sharding.py).

`JAXSCHED_CPU_DEVICES=N` sets the count (1 turns sharding off); an `XLA_FLAGS` that already
names `--xla_force_host_platform_device_count` is left as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

from ..errors import ConfigError

ENV = "JAXSCHED_CPU_DEVICES"
FLAG = "--xla_force_host_platform_device_count"
MAX_DEVICES = 1024


def requested_devices(environ: MutableMapping[str, str]) -> int:
    """The CPU device count: $JAXSCHED_CPU_DEVICES if set (an integer in [1, 1024]), else the
    number of cores this process may use."""
    raw = environ.get(ENV)
    if raw is None:
        cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        return max(1, min(MAX_DEVICES, len(cores) if cores else (os.cpu_count() or 1)))
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_DEVICES:
        raise ConfigError(f"{ENV} must be an integer in [1, {MAX_DEVICES}] (got {raw!r})")
    return n


def use_every_core(environ: MutableMapping[str, str] | None = None) -> int | None:
    """Adds `--xla_force_host_platform_device_count=N` to XLA_FLAGS (N from requested_devices)
    when JAX has not been imported yet and XLA_FLAGS does not set the count already. Returns N,
    or None when it left the environment alone (JAX already loaded, e.g. `main()` called from a
    test or a notebook, where the flag could no longer take effect)."""
    environ = os.environ if environ is None else environ
    n = requested_devices(environ)
    flags = environ.get("XLA_FLAGS", "")
    if "jax" in sys.modules or FLAG in flags:
        return None
    environ["XLA_FLAGS"] = f"{flags} {FLAG}={n}".strip()
    return n
