"""The command line: `jaxsched run | sweep | reproduce | check | kv | tune`.

One module per engine adds its commands (`dp`, `kv`); `sweep` works for every engine.
Every invalid input prints one `jaxsched: error: ...` line naming the field and exits with 2.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from . import dp, kv, sweep


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxsched",
                                description="Batched JAX simulators of LLM-serving schedulers.")
    sub = p.add_subparsers(dest="command", required=True)
    dp.add_parsers(sub)
    sweep.add_parsers(sub)
    kv.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"jaxsched: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
