"""The command line: `jaxsched run | sweep | reproduce | check | kv | tune | offline | interval |
budget | network | list | data`.

One module per engine adds its commands (`dp`, `kv`, `offline`, `interval`, `budget`,
`network`); `sweep` works for every engine; `base`
holds what they share (one-line errors, defaults in help, `--config FILE.toml`). Parsers import
no engine (and so no JAX): `--help` and `--version` answer at once, and a command imports
what it runs when it runs; before it does, `devices` asks XLA for one CPU device per core, so
seeds shard over every core, and `compile_cache` turns on JAX's persistent compilation cache, so
a program compiled by one command loads in the next (`--no-compile-cache` turns it off). Every
invalid input prints one `jaxsched: error: ...` line naming the field and exits with 2; Ctrl-C
prints one `jaxsched: interrupted: ...` line saying what finished and where it was kept, and
exits with 130 (`interrupts` makes sure a Ctrl-C that arrives inside a garbage-collection
callback is not ignored).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from ..version import version_line
from . import budget, data, dp, interval, kv, names, network, offline, sweep
from .base import HelpFormatter, Interrupted, Parser, resolve
from .compile_cache import use_compile_cache
from .devices import use_every_core
from .interrupts import ctrl_c_never_lost


class VersionAction(argparse.Action):
    """`--version`: print `version_line()` and exit 0. Its git lookup runs only when the flag is
    given, not each time a parser is built (argparse's own action takes the text up front)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="jaxsched",
        formatter_class=HelpFormatter,
        description="Batched JAX simulators of LLM-serving schedulers. "
        "`jaxsched COMMAND --help` lists a command's options and defaults.",
    )
    p.add_argument(
        "--version",
        action=VersionAction,
        help="print the version and the git revision of the source tree (`unknown` outside a checkout) and exit",
    )
    p.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="compile every program anew instead of loading it from JAX's persistent "
        "compilation cache ($JAXSCHED_COMPILE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/jaxsched/xla or ~/.cache/jaxsched/xla); "
        "JAXSCHED_COMPILE_CACHE=0 does the same",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dp.add_parsers(sub)
    sweep.add_parsers(sub)
    kv.add_parsers(sub)
    offline.add_parsers(sub)
    interval.add_parsers(sub)
    budget.add_parsers(sub)
    network.add_parsers(sub)
    names.add_parsers(sub)
    data.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = resolve(build_parser(), argv)
        # The flag is the process's, not the run's: dropped before the command writes its
        # options file (`--config` reads that file back with the subcommand's options only).
        no_cache = vars(args).pop("no_compile_cache")
        use_every_core()  # before the command imports JAX; see jaxsched.cli.devices
        use_compile_cache(enabled=not no_cache)  # likewise; see jaxsched.cli.compile_cache
        with ctrl_c_never_lost():  # see jaxsched.cli.interrupts
            return args.func(args)
    except ConfigError as e:
        print(f"jaxsched: error: {e}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        # Ctrl-C: one line (on a line of its own below a progress bar), what finished and where
        # it is; the command saved it before raising Interrupted. 130 = 128 + SIGINT.
        what = str(e) if isinstance(e, Interrupted) else "nothing had finished; nothing was written"
        print(f"{chr(10) if sys.stderr.isatty() else ''}jaxsched: interrupted: {what}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
