"""`jaxsched list [ENGINE...] [--markdown]`: every name a user can type, from the registries.

Each engine's registry module (`jaxsched/<engine>/registry.py`, no JAX) declares its policies,
experiments, workloads, kernels and other named choices as `Registry` values; this command lists
them with their one-line docs and the Config / Params fields each reads, for the engines
registered in `jaxsched.registry.ENGINES` (an engine added from user code lists its policies).
`--markdown` writes the tables of `docs/names.md` (tests/core/test_cli_surface.py checks that
the file is the command's output).
"""

from __future__ import annotations

import importlib
import sys

from ..registry import ENGINES, Registry, policies
from ..results import markdown_table
from .base import command


def registries(engine: str) -> dict[str, Registry]:
    """{attribute name: Registry} of `engine`'s registry module, in declaration order (its
    policies only, for an engine from user code whose package has none)."""
    try:
        mod = importlib.import_module(f"jaxsched.{engine}.registry")
    except ModuleNotFoundError:
        return {"POLICIES": policies(engine)}
    return {k: v for k, v in vars(mod).items() if isinstance(v, Registry) and v.owner == engine}


def _title(attr: str, reg: Registry) -> str:
    return f"{reg.kind}s" if attr != "POLICIES" else "policies"


def render(engines: list[str], markdown: bool) -> str:
    """The listing of `engines`: plain text, or markdown tables (one per registry)."""
    out = []
    if markdown:
        out += [
            "# Names",
            "",
            "Every name a configuration, a sweep or a command accepts, with its one-line doc "
            "and the Config / Params fields it reads. Generated from the registries "
            "(`jaxsched/<engine>/registry.py`) by `jaxsched list --markdown`; do not edit.",
            "",
        ]
    for engine in engines:
        doc = ENGINES[engine].doc
        out += [f"## {engine}", "", doc, ""] if markdown else [f"{engine}: {doc}"]
        for attr, reg in registries(engine).items():
            title = _title(attr, reg)
            if markdown:
                rows = [[f"`{e.name}`", e.doc, ", ".join(f"`{o}`" for o in e.options)] for e in reg.values()]
                out += [f"### {engine} {title}", "", markdown_table(["name", "what", "reads"], rows), ""]
            else:
                out.append(f"  {title}:")
                width = max(len(n) for n in reg) if reg else 0
                for e in reg.values():
                    reads = f"  [reads {', '.join(e.options)}]" if e.options else ""
                    out.append(f"    {e.name:<{width}}  {e.doc}{reads}")
        if not markdown:
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _run(a) -> int:
    engines = a.engines or list(ENGINES)
    for e in engines:
        ENGINES.require(e, "engine")
    sys.stdout.write(render(engines, a.markdown))
    return 0


def add_parsers(sub) -> None:
    p = command(
        sub,
        "list",
        help="list the engines' policies, experiments, workloads and other names, with their docs",
        config=False,
    )
    p.add_argument(
        "engines", nargs="*", metavar="ENGINE", help=f"engines to list (default: all of {', '.join(ENGINES)})"
    )
    p.add_argument("--markdown", action="store_true", help="markdown tables (docs/names.md)")
    p.set_defaults(func=_run)
