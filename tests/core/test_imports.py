"""The package's joints: which names one part of jaxsched may import from another.

A package's private names (a leading underscore) are free to change with it; another package
that imports them breaks when they do. So every name one engine or shared package takes from
another must be public: the shared models live in public modules (`jaxsched.budget.core`,
`jaxsched.offline.model`). The modules of one package must also import each other without a
cycle at import time, so that each can be read and imported on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("jaxsched", "kernels")


def _modules() -> dict[str, Path]:
    """{dotted module name: path} of every module of the scanned packages."""
    out = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()
PACKAGE_NAMES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


def owner(module: str) -> str:
    """The package a module belongs to for these rules: its engine or subpackage (jaxsched.X
    when jaxsched/X is a package: every module under jaxsched/X/...), else its top package
    (jaxsched's own top-level modules share one owner, and so do kernels')."""
    parts = module.split(".")
    if len(parts) >= 2 and ".".join(parts[:2]) in PACKAGE_NAMES:
        return ".".join(parts[:2])
    return parts[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom reads from (resolving its dots against `module`)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]  # a module's level 1 is its package
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level(tree: ast.Module):
    """The import statements run when the module is imported: the module body, including
    under if/try, but not inside functions, classes or `if TYPE_CHECKING:`."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" not in test:
                todo += node.body
            todo += node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            for h in node.handlers:
                todo += h.body


def _imports(module: str, nodes) -> list[tuple[str, str | None, int]]:
    """(source module, imported name or None for the module itself, line) per import; a
    `from package import submodule` names the submodule as the source."""
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(module, node)
            for a in node.names:
                sub = f"{src}.{a.name}"
                out.append((sub, None, node.lineno) if sub in MODULES else (src, a.name, node.lineno))
    return out


def _parse(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(), str(MODULES[module]))


def _private_uses(module: str) -> list[str]:
    tree = _parse(module)
    here = owner(module)
    bad = []
    aliases = {}  # local name -> a module of another package
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for src, name, line in _imports(module, [node]):
            if src.split(".")[0] not in PACKAGES or owner(src) == here:
                continue
            path = src.split(".")[1:] + ([name] if name else [])
            if any(_private(p) for p in path):
                bad.append(f"{module}:{line} imports {src}{'.' + name if name else ''}")
            if name is None:
                # The local name of an imported module (`import a.b` without `as` binds `a`).
                alias = next(a for a in node.names if src in (a.name, f"{_absolute(module, node)}.{a.name}"))
                if isinstance(node, ast.ImportFrom) or alias.asname:
                    aliases[alias.asname or alias.name] = src
    # module.attribute reads of a private attribute of another package's module
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            bad.append(f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    return bad


def test_no_module_imports_another_packages_private_names():
    bad = [b for m in MODULES for b in _private_uses(m)]
    assert not bad, (
        "private names imported across packages (make them public in a shared "
        "module of the owning package):\n" + "\n".join(bad)
    )


def _graph(deep: bool) -> dict[str, set[str]]:
    """{module: modules of its own package it imports} (package __init__s left out: a package
    importing its submodules is how Python packages work). deep: imports inside functions
    too, else only those run at import time."""
    g = {}
    for m in MODULES:
        if m in PACKAGE_NAMES:
            continue
        tree = _parse(m)
        nodes = (
            [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
            if deep
            else list(_top_level(tree))
        )
        g[m] = {
            src
            for src, _, _ in _imports(m, nodes)
            if src in MODULES and src not in PACKAGE_NAMES and src != m and owner(src) == owner(m)
        }
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return comps


def test_no_import_cycle_within_a_package():
    cycles = _cycles(_graph(deep=False))
    assert not cycles, "modules of one package importing each other at import time:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_offline_config_and_workloads_do_not_import_each_other():
    # Not even lazily, inside a function (which the import-time check above cannot see): the
    # named request mixes build on the batch model (`jaxsched.batchmodel`), and the config
    # resolves a mix's name with them.
    g = _graph(deep=True)
    for pkg in ("offline", "interval"):
        cfg, wl = f"jaxsched.{pkg}.config", f"jaxsched.{pkg}.workloads"
        assert not (wl in g[cfg] and cfg in g[wl]), f"{cfg} and {wl} import each other"


# The registries: the names `--help`, validation, sweeps and the docs read, with their docs and
# "module:attribute" targets; importing one must not import what the targets name.
REGISTRIES = sorted(m for m in MODULES if m == "jaxsched.registry" or m.endswith(".registry"))


def test_registry_modules_import_no_jax():
    import subprocess
    import sys

    assert {f"jaxsched.{e}.registry" for e in ("dp", "kv", "offline", "interval", "budget", "network")} <= set(
        REGISTRIES
    )
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in REGISTRIES)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib'))\n"
        "assert not bad, bad\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr


def test_registry_modules_import_only_registries():
    # At import time a registry reads other registries (and jaxsched.registry its errors),
    # nothing else of jaxsched: a module that imports no JAX today may tomorrow.
    allowed = {*REGISTRIES, "jaxsched", "jaxsched.errors"}
    bad = []
    for m in REGISTRIES:
        for src, _, line in _imports(m, _top_level(_parse(m))):
            if src.split(".")[0] in PACKAGES and src not in allowed:
                bad.append(f"{m}:{line} imports {src}")
    assert not bad, "registry modules importing more than registries:\n" + "\n".join(bad)
