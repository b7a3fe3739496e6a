"""Names a package exports but imports on first use (PEP 562), so that importing the package
(and its JAX-free parts: registries, the command line's `--help`) does not import JAX."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(`__getattr__`, `__dir__`) for package `package`: name -> `"module"` or
    `"module:attribute"` (relative module names are taken from `package`). A looked-up value is
    stored in the package, so later lookups skip `__getattr__`."""

    def __getattr__(name: str) -> Any:
        try:
            target = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attr = target.partition(":")
        value = importlib.import_module(module, package)
        value = getattr(value, attr) if attr else value
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
