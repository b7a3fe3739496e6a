"""What every command shares: one-line errors, help with every default, `--config FILE.toml`.

- `Parser` reports a usage error as one `jaxsched: error: ...` line and exit status 2, like a
  ConfigError raised by a command, instead of argparse's usage block.
- `command(sub, name, ...)` adds a subcommand whose help shows each option's default and which
  takes `--config FILE.toml`: the file's keys are the command's option names (`plot_steps` or
  `plot-steps`), its values replace the defaults, and flags on the command line still win.
- `write_resolved(args, path)` writes the options a command ran with as TOML beside its
  results, so `--config` repeats the run.
- `check_options(args, reads, chosen, exclusive)` refuses an option the chosen settings ignore
  (`--epsilon` with a policy that reads no epsilon) or two that exclude each other (`--rate`
  and `--load`): every command declares what reads its options and calls it once.
- `split_list(text, flag)` reads a comma-separated option, refusing empty and repeated entries.
- `fresh_names(args, groups)` keeps a run from replacing an earlier run's files: a path left at
  its default that is taken moves to the next free numbered name, a taken path the user named is
  refused, and `--overwrite` (`add_overwrite`) replaces. Commands that resume (`sweep`,
  `check theorems`) continue the file they find instead.
- `Interrupted` is how a command ends on Ctrl-C after saving what was finished: `main` prints
  its message as one line and exits with 130.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tomllib
from itertools import count
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ConfigError, Reads, refuse_ignored, require_int
from ..outputs import check_dir, check_output_paths, save

# Namespace entries that are plumbing, not options of a run; `quiet` may be set from a file
# but is not written back (it changes no result).
_INTERNAL = {"func", "command", "config", "_parser", "_given", "help", "version"}
_NOT_WRITTEN = _INTERNAL | {"quiet", "overwrite"}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line naming the option, exit status 2."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        print(f"jaxsched: error: {self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that ends every option with its default (unless the help already says it or the
    default is 'unset')."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "%(default)" in text
            or "default" in text
            or action.default is None
            or action.default is False
            or action.default is argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


def command(sub, name: str, *, help: str, description: str | None = None, config: bool = True) -> Parser:
    """A subcommand parser with the shared formatter and, unless config=False, `--config`."""
    p = sub.add_parser(name, help=help, description=description or help, formatter_class=HelpFormatter)
    if config:
        p.add_argument(
            "--config",
            metavar="FILE.toml",
            help="read options from a TOML file (keys are option names, e.g. "
            "steps = 5000); flags given on the command line win",
        )
    p.set_defaults(_parser=p)
    return p


def experiment_options(
    p: argparse.ArgumentParser,
    out: str,
    *,
    quick: str = "reduced sizes and seeds",
    seeds: str = "seeds (default per experiment)",
) -> None:
    """The options every engine's experiment command takes: --quick, --seeds, --out (a folder
    for the CSV, MD, PNG and options files, default `out`), --quiet."""
    p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--seeds", type=int, default=None, help=seeds)
    p.add_argument("--out", default=out, help="folder for the CSV, MD, PNG and options files")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    add_overwrite(p)


def load_config(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The options in the TOML file `path`, checked against `parser`'s options."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"--config must name an existing TOML file, got {path!r}") from None
    except IsADirectoryError:
        raise ConfigError(f"--config must name a TOML file, got the directory {path!r}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"--config {path!r} is not valid TOML: {e}") from None
    actions = {a.dest: a for a in parser._actions if a.dest not in _INTERNAL and not a.dest.endswith("_command")}
    # Every long name of an option is a key too (`num_workers` for `--G`, `--num-workers`).
    names = {s[2:].replace("-", "_"): a.dest for a in actions.values() for s in a.option_strings if s.startswith("--")}
    out = {}
    for key, value in data.items():
        dest = names.get(key.replace("-", "_"), key.replace("-", "_"))
        if dest not in actions:
            raise ConfigError(
                f"--config {path!r}: unknown option {key!r} for `{parser.prog}`; allowed: {', '.join(sorted(actions))}"
            )
        if dest in out:
            raise ConfigError(
                f"--config {path!r}: {key!r} sets the option {dest!r} a second time (one name per option)"
            )
        out[dest] = _config_value(actions[dest], value, key, path)
    return out


def _config_value(action: argparse.Action, value: Any, key: str, path: str) -> Any:
    """A TOML value as the option would have parsed it (type, choices, lists for repeatables)."""
    where = f"--config {path!r}: {key}"
    if isinstance(action, argparse._AppendAction):
        # A repeatable option is a list of its values, one per flag: a lone string would be
        # read as one entry although it looks like the whole list.
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list of values, one per {action.option_strings[0]}, got {value!r}")
        return [_typed(action, v, where) for v in value]
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(value, (dict, list)):
        raise ConfigError(f"{where} must be a single value, got {value!r}")
    return _typed(action, value, where)


def _typed(action: argparse.Action, value: Any, where: str) -> Any:
    """A TOML value of one option, of the option's own type: an integer option takes only a
    TOML integer (512.5 would be cut to 512), a number option a finite number (TOML's inf
    and nan are not), and no number is given as a string."""
    if isinstance(value, bool):
        raise ConfigError(f"{where} must be a {getattr(action.type, '__name__', 'string')}, got {value!r}")
    if action.type in (int, float) and isinstance(value, str):
        raise ConfigError(f"{where} must be a {action.type.__name__}, got {value!r} (a string: write the number bare)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    if action.type is int and isinstance(value, float):
        raise ConfigError(f"{where} must be an integer, got {value!r}")
    try:
        value = action.type(value) if action.type is not None else str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be a {action.type.__name__}, got {value!r}") from None
    if action.choices is not None and value not in action.choices:
        raise ConfigError(f"{where} must be one of {', '.join(map(str, action.choices))}, got {value!r}")
    return value


def resolve(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse `argv`; with `--config FILE`, parse again with the file's values as defaults.

    `args._given` is the set of options the user set: those on the command line, and those of
    the file whose values are not the defaults (a written options file lists every option, the
    ignored ones at their defaults, and must repeat its run)."""
    args = parser.parse_args(argv)
    sub = getattr(args, "_parser", None)
    if sub is None:
        return args
    given = _given_on_command_line(parser, sub, argv)
    path = getattr(args, "config", None)
    if path:
        defaults = {a.dest: a.default for a in sub._actions}
        file = load_config(path, sub)
        sub.set_defaults(**file)
        args = parser.parse_args(argv)
        given |= {k for k, v in file.items() if v != defaults.get(k)}
    args._given = frozenset(given - _INTERNAL)
    return args


class _Unset(list):
    """The default every option gets while `_given_on_command_line` parses: a list, so that an
    appending option copies it (to a new object) instead of failing."""


def _given_on_command_line(parser: argparse.ArgumentParser, sub: argparse.ArgumentParser, argv) -> set[str]:
    """The dests of `sub`'s options that `argv` sets: parsed once more with every default
    replaced by a marker, which only the options not given keep."""
    unset = _Unset()
    saved = [(a, a.default) for a in sub._actions]
    try:
        for a, _ in saved:
            a.default = unset
        ns = parser.parse_args(argv)
    finally:
        for a, default in saved:
            a.default = default
    return {a.dest for a, _ in saved if getattr(ns, a.dest, unset) is not unset}


def option_flag(args: argparse.Namespace, dest: str) -> str:
    """The flag that sets `dest` in the command of `args` (its first long name, e.g. `--num-steps`
    for num_steps), or `dest` itself."""
    for a in getattr(args, "_parser", argparse.ArgumentParser())._actions:
        if a.dest == dest:
            longs = [s for s in a.option_strings if s.startswith("--")]
            return longs[0] if longs else dest
    return dest


def check_options(
    args: argparse.Namespace,
    reads: dict[str, tuple[Reads, ...]],
    chosen: dict[str, Any],
    exclusive: tuple[tuple[str, str, str], ...] = (),
    also: tuple[str, ...] | list[str] = (),
) -> None:
    """Refuse, with one line naming the flag, an option given to the command of `args` that the
    chosen settings ignore, or two options that exclude each other (`errors.refuse_ignored`).
    reads: {dest: conditions}; chosen: {setting: value(s)}; exclusive: (dest, dest, why).
    also: settings given otherwise, named as they are (`--set num_steps`, for a sweep whose
    --set may set what a flag sets too)."""
    given = [a.dest for a in args._parser._actions if a.dest in getattr(args, "_given", ())]
    refuse_ignored(given + list(also), chosen, reads, exclusive, label=lambda d: option_flag(args, d))


# `read_trace`'s layouts (`jaxsched.workload.formats.FORMAT_NAMES`), written here because the
# parsers import no JAX and the workload package does; a test checks the two agree.
TRACE_FORMATS = ("azure_lmm", "azure", "burstgpt", "burstgpt_sample", "vidur", "splitwise", "mooncake", "plain")


def add_trace_format(p: argparse.ArgumentParser, note: str = "") -> None:
    """The `--trace-format NAME` option of a command that takes `--trace` (read only with it):
    `read_trace`'s format=, None to detect the layout from the file. `note` ends the help."""
    p.add_argument(
        "--trace-format",
        metavar="NAME",
        default=None,
        help=f"--trace: read the file as this layout ({', '.join(TRACE_FORMATS)}; default: detected "
        f"from its header or content; docs/traces.md){note}",
    )


def read_trace_option(path: str, fmt: str | None, **kw):
    """`read_trace(path, format=fmt, **kw)` for a command's `--trace` and `--trace-format`: a
    format name outside TRACE_FORMATS is one ConfigError naming --trace-format, and the
    reader's errors (a missing file, a known trace not downloaded, a missing column, a bad
    value with its line) are one line starting `--trace:`."""
    if fmt is not None and fmt not in TRACE_FORMATS:
        raise ConfigError(
            f"--trace-format must be one of {', '.join(TRACE_FORMATS)} (or left out: the layout is "
            f"detected from the file), got {fmt!r}"
        )
    from ..workload import read_trace

    try:
        return read_trace(path, format=fmt, **kw)
    except ConfigError as e:
        raise ConfigError(f"--trace: {e}") from None


def split_list(text: str, flag: str, *, unique: bool = True) -> list[str]:
    """The entries of a comma-separated option ('fcfs,bfio'), stripped; one ConfigError for an
    empty entry ('fcfs,,bfio', a trailing comma) and, with unique, for a repeated one."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise ConfigError(f"{flag} must be a comma-separated list without empty entries, got {text!r}")
    if unique:
        seen = set()
        for x in items:
            if x in seen:
                raise ConfigError(f"{flag} must not repeat an entry, got {x!r} twice in {text!r}")
            seen.add(x)
    return items


def resolved_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of a parsed command, without plumbing (including every group's
    `<group>_command` subcommand name) and unset (None) values."""
    return {
        k: v
        for k, v in sorted(vars(args).items())
        if k not in _NOT_WRITTEN
        and not k.endswith("_command")
        and v is not None
        and not (isinstance(v, list) and not v)
    }


def write_resolved(args: argparse.Namespace, path: str | Path) -> Path:
    """Write the command's options as TOML to `path` (readable back with `--config`)."""
    import tomli_w

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    group = next((v for k, v in vars(args).items() if k.endswith("_command") and v), None)
    name = f"jaxsched {args.command}{' ' + group if group else ''}"
    # Commands that resume their results (sweep, check theorems) take no --overwrite.
    replace = "; add --overwrite to replace this run's files" if hasattr(args, "overwrite") else ""
    text = (
        f"# Options of `{name}` as run in {os.getcwd()}; to rerun it from that folder:\n"
        f"#   {name} --config {_as_typed(path)}\n"
        f"# (relative paths below are relative to that folder{replace})\n" + tomli_w.dumps(resolved_options(args))
    )
    path.write_text(text)
    return path


def _as_typed(path: Path) -> str:
    """`path` as the user would type it from the current folder: relative when it lies below
    it, absolute otherwise."""
    rel = os.path.relpath(path.absolute())
    return str(path.absolute()) if rel.startswith("..") else rel


def config_path(out: Path, folder: bool = False) -> Path:
    """Where a command writes its resolved options: in its results folder, or beside its
    results file (results/run.csv -> results/run.config.toml)."""
    return out / "config.toml" if folder else out.with_name(out.stem + ".config.toml")


def check_file_outputs(out: Path | None, plot: Path | None = None) -> None:
    """`check_output_paths` for a command whose --out is one file (None: no file): the results,
    the plot and the options file written beside the results."""
    conf = None if out is None else config_path(out)
    check_output_paths({"--out": out, "--plot": plot, "--out's options file": conf})


def check_folder_outputs(out: Path, files: dict[str, str | None]) -> None:
    """`check_output_paths` for the files a command writes into its --out folder: {what: file
    name} (e.g. {"CSV": "fig4.csv"}), each named "--out's <what>" in an error."""
    check_output_paths({f"--out's {what}": None if name is None else out / name for what, name in files.items()})


def file_outputs(
    args: argparse.Namespace, out: Path | None, plot: Path | None = None
) -> tuple[Path | None, Path | None, Path | None]:
    """(results, plot, options file) of a command whose --out is one file (None: not
    written): checked (`check_file_outputs`), then moved to fresh names where an earlier run's
    files are (`fresh_names`)."""
    check_file_outputs(out, plot)
    if out is None and plot is None and "overwrite" in getattr(args, "_given", ()):
        raise ConfigError("--overwrite is read only with --out (it replaces the files there); this run writes none")
    conf = None if out is None else config_path(out)
    sfx = fresh_names(args, {"--out": ("out", [out, conf]), "--plot": ("plot", [plot])})
    out, conf, plot = numbered(out, sfx["--out"]), numbered(conf, sfx["--out"]), numbered(plot, sfx["--plot"])
    check_file_outputs(out, plot)
    return out, plot, conf


def fresh_folder(args: argparse.Namespace, out: str | Path) -> Path:
    """--out for a command that writes fixed names into a folder of its own (`tune`): a
    non-empty folder of an earlier run is never written into (`fresh_names`: the next free
    numbered folder where --out is the default, an error where it was named); checked with
    `check_dir`."""
    out = Path(out)
    earlier = out if out.is_dir() and any(out.iterdir()) else None
    return check_dir(numbered(out, fresh_names(args, {"--out": ("out", [earlier])})["--out"]), "--out")


def folder_outputs(args: argparse.Namespace, out: Path, files: dict[str, str | None]) -> dict[str, Path | None]:
    """{what: path} of the files a command writes into its --out folder ({what: file name},
    None: not written): checked (`check_folder_outputs`), then numbered together where an
    earlier run's files are (`fresh_names`: fig4.csv and fig4.png become fig4-2.csv and
    fig4-2.png)."""
    check_folder_outputs(out, files)
    paths = {what: None if name is None else out / name for what, name in files.items()}
    sfx = fresh_names(args, {"--out": ("out", list(paths.values()))})["--out"]
    paths = {what: numbered(p, sfx) for what, p in paths.items()}
    check_output_paths({f"--out's {what}": p for what, p in paths.items()})
    return paths


def require_what(value: str | None, what: str, choices) -> str:
    """A positional argument that a --config file may also give: present and one of choices."""
    if value is None:
        raise ConfigError(f"{what} is required: one of {', '.join(choices)}")
    if value.lower() not in choices:
        raise ConfigError(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value.lower()


def save_seed_rows(args: argparse.Namespace, res, columns: dict, out: Path, conf: Path) -> int:
    """Write one CSV row per seed of `res` (the run's `columns` first) to `out` and then the
    options to `conf`, print where they went; the exit status (1 if a file had to go
    elsewhere)."""
    from ..results import seed_rows, write_csv

    written, ok = save(lambda p: write_csv(p, seed_rows(res, columns)), out, "--out")
    conf, conf_ok = save_resolved(args, conf)
    print(f"\nresults: {written}\noptions: {conf}")
    return 0 if ok and conf_ok else 1


def save_resolved(args: argparse.Namespace, path: Path) -> tuple[Path, bool]:
    """`write_resolved` through `outputs.save`: written once the results are, so that an options
    file always has its results beside it; (path written, whether it is `path`)."""
    return save(lambda p: write_resolved(args, p), path, "--out's options file")


def print_metrics(res, n_seeds: int) -> None:
    """Each metric of a run's Results as mean and 95% CI half-width over its seeds, in a
    markdown table on stdout."""
    from ..results import format_value, markdown_table
    from ..stats import mean_ci

    rows = []
    for k, v in res.metrics.items():
        m, _, half, _ = mean_ci(v)
        rows.append([k, format_value(m), format_value(half)])
    print(f"mean and 95% CI half-width over {n_seeds} seeds ({res.wall_s:.1f} s)\n")
    print(markdown_table(["metric", "mean", "95% CI"], rows))


def run_experiment(a: argparse.Namespace, group: str, experiments, what: str | None = None) -> int:
    """`jaxsched GROUP experiment NAME`: run the entry NAME of `experiments` (the engine's
    `registry.EXPERIMENTS`; its function returns a `results.Report`), print its markdown, write
    CSV, markdown, options and (where it has one) a PNG to the folder --out. Exits 1 if the
    report's check failed."""
    import time

    what = what or require_what(a.what, f"{group} experiment: the experiment", experiments.names())
    seeds = None if a.seeds is None else require_int(a.seeds, "--seeds", lo=1, hi=100_000)
    out = check_dir(a.out, "--out")
    names = {"CSV": ".csv", "markdown": ".md", "plot": ".png", "options file": ".config.toml"}
    files = folder_outputs(a, out, {k: what + suffix for k, suffix in names.items()})
    from ..plots import plot_offline
    from ..progress import Progress
    from ..results import write_csv

    # No total here: the experiment counts its own units and declares them before the first.
    bar = Progress(f"{group} {what}", enabled=not a.quiet)
    t0 = time.perf_counter()
    rep = experiments[what].fn(quick=a.quick, seeds=seeds, progress=bar)
    bar.close()
    print(f"{rep.title}\n\n{rep.markdown}\n")
    csv, ok = save(lambda p: write_csv(p, rep.rows), files["CSV"], "--out")
    save(lambda p: _write_text(p, f"# {rep.title}\n\n{rep.markdown}\n"), files["markdown"], "--out")
    png = plot_offline(rep, files["plot"]) if rep.plot else None
    conf, _ = save_resolved(a, files["options file"])
    print(
        f"results: {csv}" + (f"\nplot: {png}" if png else "") + f"\noptions: {conf}\n"
        f"wall time: {time.perf_counter() - t0:.1f} s"
    )
    if not rep.ok:
        print(f"{group} experiment {what}: the check FAILED (see the table)", file=sys.stderr)
        return 1
    return 0 if ok else 1


class Interrupted(Exception):
    """Ctrl-C, after the command saved what had finished; the message says what and where."""


def add_overwrite(p: argparse.ArgumentParser) -> None:
    """The `--overwrite` flag of a command that writes results it does not resume."""
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the files of an earlier run at the same paths; without it, a default path "
        "that is taken moves to the next free name (results/run-2.csv, ...) and a path you named "
        "that is taken is refused",
    )


def numbered(path: Path | None, suffix: str) -> Path | None:
    """`path` with `suffix` before the first dot of its name: results/run.config.toml with '-2'
    -> results/run-2.config.toml (a results file and its options file stay a pair)."""
    if path is None or not suffix:
        return path
    head, dot, tail = path.name.partition(".")
    return path.with_name(head + suffix + dot + tail)


def _taken(path: Path | None) -> bool:
    return path is not None and (path.exists() or path.is_symlink())


def fresh_names(args: argparse.Namespace, groups: Mapping[str, tuple[str, Sequence[Path | None]]]) -> dict[str, str]:
    """The suffix each group of output paths takes so that no run replaces another's files
    silently. groups: {flag: (the dest of the option that sets the paths, the paths)}, e.g.
    {"--out": ("out", [csv, options file]), "--plot": ("plot", [png])}. Returns {flag: suffix}:

    - '' for every group when none of the paths exists, or with `--overwrite`;
    - a taken path of a group whose option the user set (`args._given`): one ConfigError naming
      the flag and the path, with the two ways on (--overwrite, another path);
    - the groups left at their defaults share the first '-k' (k = 2, 3, ...) under which none of
      their paths exists (the command prints where its files went)."""
    if getattr(args, "overwrite", False):
        return {flag: "" for flag in groups}
    given = getattr(args, "_given", frozenset())
    for flag, (dest, paths) in groups.items():
        if dest in given:
            taken = next((p for p in paths if _taken(p)), None)
            if taken is not None:
                raise ConfigError(
                    f"{flag} would replace {str(taken)!r} of an earlier run: "
                    "pass --overwrite to replace it, or name another path"
                )
    free = [paths for dest, paths in groups.values() if dest not in given]
    suffix = ""
    if any(_taken(p) for paths in free for p in paths):
        suffix = next(f"-{k}" for k in count(2) if not any(_taken(numbered(p, f"-{k}")) for ps in free for p in ps))
    return {flag: "" if dest in given else suffix for flag, (dest, _) in groups.items()}


def _write_text(path, text: str):
    path.write_text(text)
    return path
