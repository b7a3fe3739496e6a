"""`jaxsched data list | get NAME`: the published traces jaxsched knows, and fetching them.

`list` shows every trace of `jaxsched.workload.datasets.TRACES` with its layout, licence,
size (where known), public URL and whether it is in the data folder; `get NAME` downloads one
there (a progress line, a temporary file renamed when complete) and records its SHA-256 in the
folder's `manifest.json`. The data folder is `--dir`, else `$JAXSCHED_DATA`, else
`$XDG_DATA_HOME/jaxsched`, else `~/.local/share/jaxsched`; every `--trace` then takes the name
in place of a path. The parsers import nothing of the workload package (which imports JAX), so
`--help` answers at once.
"""

from __future__ import annotations

import sys

from .base import command

DIR_HELP = "the data folder (default: $JAXSCHED_DATA, else $XDG_DATA_HOME/jaxsched, else ~/.local/share/jaxsched)"


def _size(n: int | None) -> str:
    """A byte count as MB, or `?` when unknown."""
    return "?" if n is None else f"{n / 1e6:.1f} MB"


def render_list(folder: str | None) -> str:
    """The listing: one block per trace (name, present or not, layout, licence, size, what,
    URL), headed by the data folder."""
    from ..workload.datasets import TRACES, data_dir, read_manifest

    where = data_dir(folder)
    manifest = read_manifest(folder)
    width = max(len(n) for n in TRACES)
    out = [f"data folder: {where}", ""]
    for name, d in TRACES.items():
        path = where / d.filename
        present = "present" if path.is_file() else "absent"
        sha = manifest.get(name, {}).get("sha256") or d.sha256
        out.append(f"{name:<{width}}  {present:<7}  {d.format:<9}  {_size(d.size_bytes):>9}  {d.what}")
        out.append(f"{'':<{width}}  licence: {d.licence}; source: {d.source}")
        out.append(f"{'':<{width}}  url: {d.url}")
        if sha:
            out.append(f"{'':<{width}}  sha256: {sha}")
    out += ["", "`jaxsched data get NAME` downloads one; `--trace NAME` then reads it."]
    return "\n".join(out) + "\n"


def _list(a) -> int:
    sys.stdout.write(render_list(a.dir))
    return 0


def _get(a) -> int:
    from ..workload.datasets import check_sha256, dataset, download

    entry = dataset(a.name)
    check_sha256(a.sha256)  # before the download's first line
    print(f"{entry.name}: {entry.url} ({entry.licence})", file=sys.stderr)
    path, sha = download(a.name, a.dir, force=a.force, sha256=a.sha256, progress=not a.quiet)
    known = a.sha256 or entry.sha256
    print(f"{path}\nsha256: {sha} ({'verified' if known else 'recorded in the manifest; no published checksum'})")
    return 0


def add_parsers(sub) -> None:
    p = command(sub, "data", help="list the published traces jaxsched knows and download them by name", config=False)
    cmds = p.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    lst = command(
        cmds,
        "list",
        help="the known traces: layout, licence, size, public URL, and whether each is in the data folder",
        config=False,
    )
    lst.add_argument("--dir", help=DIR_HELP)
    lst.set_defaults(func=_list)
    get = command(
        cmds,
        "get",
        help="download a trace by name into the data folder, checking or recording its SHA-256",
        config=False,
    )
    get.add_argument("name", metavar="NAME", help="a name from `jaxsched data list` (e.g. azure_2023_conv)")
    get.add_argument("--dir", help=DIR_HELP)
    get.add_argument("--force", action="store_true", help="download again over a file already there")
    get.add_argument(
        "--sha256",
        metavar="HEX",
        help="the expected SHA-256 of the download; a mismatch is refused (default: the listed one, if any)",
    )
    get.add_argument("--quiet", action="store_true", help="no progress line")
    get.set_defaults(func=_get)
