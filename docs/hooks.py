"""MkDocs hooks of the jaxsched site (registered by `hooks:` in mkdocs.yml).

Tables that the code already knows are written from the code at build time, so the site cannot
disagree with it. A page asks for one with an HTML comment (on a line of its own, or in a table cell):

- `<!-- registry: ENGINE TITLE -->`: one registry of ENGINE as a table (name, what, reads), the
  rows of `jaxsched list ENGINE` (jaxsched/cli/names.py); TITLE is the registry's heading there
  (`policies`, `experiments`, `kernels`, `capacity rules`, ...).
- `<!-- registries: ENGINE -->`: every registry of ENGINE except its policies, one `###`
  heading and table each.
- `<!-- metrics: ENGINE -->`: the engine's `METRICS` table (name, unit, definition).
- `<!-- columns: ENGINE -->`: the configuration columns a sweep row of ENGINE carries
  (`ENGINE.describe`, read on the engine's `example()` config), in file order.
- `<!-- commands -->`: every command of `jaxsched` with its one-line help, from the parser.

An unknown marker fails the build. Figures: a page may link an image under benchmarks/results/
by its path in the repository (`../benchmarks/results/fig4.png` from docs/, which also works
when the markdown is read on GitHub); the hook publishes every image there under `figures/`
in the site and points such links at it, so figures are never copied into docs/ by hand.

Docstrings are prose, not Markdown written for the site: `workload[z][s]` in a docstring reads
to Markdown as a reference link `[z][s]`, which mkdocs-autorefs cannot resolve and reports as a
warning, failing `--strict`. Such reports about text that comes from a source file (`from
PATH.py:LINE:`) are lowered to INFO here; an unresolved reference in a page of docs/ still fails
the build.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RESULTS = "benchmarks/results"
IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif")
MARKER = re.compile(r"<!-- (registry|registries|metrics|columns|commands):?\s*(.*?)\s*-->")
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


class _DocstringRefs(logging.Filter):
    """Lower autorefs' "Could not find cross-reference target" warnings about docstrings to INFO."""

    PATTERN = re.compile(r"from \S+\.py:\d+: .*Could not find cross-reference target")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and self.PATTERN.search(record.getMessage()):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logging.getLogger("mkdocs.plugins.mkdocs_autorefs._internal.plugin").addFilter(_DocstringRefs())


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def _registry_rows(reg) -> list[str]:
    rows = ["| name | what | reads |", "|---|---|---|"]
    rows += [f"| `{e.name}` | {_cell(e.doc)} | {', '.join(f'`{o}`' for o in e.options)} |" for e in reg.values()]
    return rows


def _registries(engine: str) -> dict:
    from jaxsched.cli.names import _title, registries
    from jaxsched.registry import ENGINES

    ENGINES.require(engine, "engine")
    return {_title(attr, reg): reg for attr, reg in registries(engine).items()}


def registry_table(engine: str, title: str) -> str:
    regs = _registries(engine)
    if title not in regs:
        raise ValueError(f"engine {engine} has no registry {title!r}; it has {sorted(regs)}")
    return "\n".join(_registry_rows(regs[title]))


def other_registries(engine: str) -> str:
    out = []
    for title, reg in _registries(engine).items():
        if title != "policies":
            out += [f"### {engine} {_plural(reg.kind)}", "", *_registry_rows(reg), ""]
    return "\n".join(out).rstrip()


def metrics_table(engine: str) -> str:
    metrics = importlib.import_module(f"jaxsched.{engine}").METRICS
    rows = ["| metric | unit | definition |", "|---|---|---|"]
    rows += [f"| `{name}` | {_cell(m.unit)} | {_cell(m.doc)} |" for name, m in metrics.items()]
    return "\n".join(rows)


def sweep_columns(engine: str) -> str:
    eng = importlib.import_module(f"jaxsched.{engine}").ENGINE
    return ", ".join(f"`{c}`" for c in eng.describe(eng.example()))


def commands_table() -> str:
    from jaxsched.cli import build_parser

    rows = ["| command | what it does | names it takes |", "|---|---|---|"]

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                choices = [
                    ", ".join(f"`{c}`" for c in a.choices)
                    for a in sub._actions
                    if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
                ]
                rows.append(f"| `{prefix} {name}` | {_cell(helps.get(name) or '')} | {'; '.join(choices)} |")
                walk(sub, f"{prefix} {name}")

    walk(build_parser(), "jaxsched")
    return "\n".join(rows)


def render_marker(kind: str, arg: str) -> str:
    words = arg.split(None, 1)
    if kind == "registry" and len(words) == 2:
        return registry_table(*words)
    if kind == "registries" and len(words) == 1:
        return other_registries(words[0])
    if kind == "metrics" and len(words) == 1:
        return metrics_table(words[0])
    if kind == "columns" and len(words) == 1:
        return sweep_columns(words[0])
    if kind == "commands" and not words:
        return commands_table()
    raise ValueError(f"bad marker <!-- {kind}: {arg} -->")


def figure_uri(page_uri: str, target: str) -> str | None:
    """The site's `figures/...` URL (relative to the page) of a link to an image under
    benchmarks/results/, or None for any other link."""
    if "://" in target or target.startswith(("#", "/", "mailto:")):
        return None
    path = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_uri), target))
    if not path.startswith(RESULTS + "/") or not path.lower().endswith(IMAGE_SUFFIXES):
        return None
    return posixpath.relpath("figures/" + path[len(RESULTS) + 1 :], posixpath.dirname(page_uri) or ".")


def on_files(files: Files, config) -> Files:
    for path in sorted((ROOT / RESULTS).rglob("*")):
        if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
            uri = "figures/" + path.relative_to(ROOT / RESULTS).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = MARKER.sub(lambda m: render_marker(m.group(1), m.group(2)), markdown)

    def link(m: re.Match) -> str:
        uri = figure_uri(page.file.src_uri, m.group(2))
        return m.group(0) if uri is None else f"{m.group(1)}{uri}{m.group(3)}"

    return LINK.sub(link, markdown)
