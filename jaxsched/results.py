"""Results files: rows in CSV written atomically, read back, and rendered as markdown tables.

One format for every engine: a row per (configuration, seed) with the configuration's columns
first and each metric in the unit its name says. Files are written atomically (temporary file
and rename), so an interrupted run never leaves a half-written table.

Resumable files (`ResultsFile`) also carry `row_sha`, a checksum of each row's other cells, so
that a row damaged after it was written (cut short, NUL-filled, edited, pasted from a file with
other columns) is found on resume, moved to a side file and computed again (`scan_rows`).

A row's resume key (`run_key`) hashes every setting that changes its numbers, the package's
source among them (`code_sha`), and `key_columns` writes each of those settings into the row
in readable form, so that two rows with different keys also differ in a column a reader sees.
"""

from __future__ import annotations

import csv
import dataclasses
import errno
import functools
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import ConfigError
from .outputs import fallback_path, file_mode, special_kind


@dataclass
class Report:
    """What a paper's reproduction returns (`jaxsched offline | interval experiment NAME`):
    rows (CSV), markdown, ok (the claim, or the project's correction of it, held) and the data
    of its plot (`plots.plot_offline`)."""

    name: str
    title: str
    rows: list[dict]
    markdown: str
    ok: bool
    plot: dict[str, Any] = field(default_factory=dict)


def write_csv(path: str | Path, rows: Iterable[Mapping[str, object]], *, columns: Sequence[str] = ()) -> Path:
    """Write dict rows to CSV atomically; `columns` first (a header kept even without rows),
    then the rows' other columns in first-seen order."""
    rows = list(rows)
    path = Path(path)
    kind = special_kind(path)
    if kind is not None:  # the rename would replace a device node or a FIFO with this file
        raise OSError(errno.EEXIST, f"not a regular file but a {kind}", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(columns)
    for r in rows:
        columns += [c for c in r if c not in columns]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            for r in rows:
                w.writerow({k: _fmt(v) for k, v in r.items()})
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def read_rows(path: str | Path) -> list[dict]:
    """Rows of an existing CSV results file as dicts of strings ([] if absent)."""
    path = Path(path)
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


ROW_SHA = "row_sha"

# Line ends as the csv module reads them (str.splitlines would also split on \x85, \u2028, ...).
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def cell_text(value: object) -> str:
    """A value as its CSV cell reads back (what `write_csv` writes for it)."""
    return "" if value is None else str(_fmt(value))


def row_sha(row: Mapping[str, object]) -> str:
    """The checksum of a results row: the first 16 hex digits of the SHA-256 of its non-empty
    cells other than `row_sha`, as (column, text) pairs sorted by column. Empty cells are left
    out, so that a column another row adds later (empty in this one) keeps it valid; the
    column names are in, so that cells read under another header do not match."""
    pairs = sorted((str(k), t) for k, v in row.items() if k != ROW_SHA and (t := cell_text(v)))
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:16]


@dataclass
class Damage:
    """A record of a results file that cannot be trusted: its first line (1-based), why, and
    its text as it was in the file."""

    line: int
    reason: str
    text: str


def _record_problem(fields: list[str], raw: str, header: list[str], last: bool) -> str | None:
    """Why one record cannot be trusted (None: it can)."""
    if "\0" in raw:
        return "NUL bytes"
    if last and not raw.endswith(("\n", "\r")):
        return "cut short at the end of the file"
    if len(fields) != len(header):
        return f"{len(fields)} cells under a header of {len(header)}"
    if ROW_SHA in header:
        stored = fields[header.index(ROW_SHA)]
        if stored and stored != row_sha(dict(zip(header, fields))):
            return "checksum mismatch"
    return None


def _header_problem(fields: list[str], raw: str) -> str | None:
    """Why a header line cannot be a results header (None: it can)."""
    if "\0" in raw:
        return "NUL bytes in the header"
    if not raw.endswith(("\n", "\r")):
        return "header cut short"
    if not fields or "" in fields or len(set(fields)) != len(fields):
        return "empty or repeated column names in the header"
    return None


def scan_rows(text: str) -> tuple[list[str], list[dict], list[Damage]]:
    """(header, trusted rows, damaged records) of a results file's text.

    A row is trusted when it has exactly the header's cells, holds no NUL, ends with a line
    end (the file's last row included: rows are written whole) and, where its `row_sha` cell
    is filled, matches its checksum. Rows with an empty `row_sha` (files written before the
    column existed) are trusted on the structural checks alone. Blank lines are skipped. A
    header that cannot be one makes the whole text one damaged record."""
    lines = _LINES.findall(text)
    reader = csv.reader(iter(lines))
    header: list[str] = []
    rows: list[dict] = []
    damaged: list[Damage] = []
    seen = 0
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as e:  # the rest cannot be split into records
            damaged.append(Damage(seen + 1, f"unreadable ({e})", "".join(lines[seen:])))
            break
        raw, start, seen = "".join(lines[seen : reader.line_num]), seen + 1, reader.line_num
        if not header and not fields:  # blank lines before the header (a file with no columns)
            continue
        if not header:
            problem = _header_problem(fields, raw)
            if problem is not None:
                return [], [], [Damage(1, problem, text)]
            header = fields
            continue
        if not fields and raw.strip("\r\n") == "":
            continue
        problem = _record_problem(fields, raw, header, seen == len(lines))
        if problem is None:
            rows.append(dict(zip(header, fields)))
        else:
            damaged.append(Damage(start, problem, raw))
    return header, rows, damaged


def damaged_path(path: str | Path) -> Path:
    """The side file that damaged rows of the results file `path` are moved to."""
    path = Path(path)
    return path.with_name(path.name + ".damaged")


def _append_damage(side: Path, source: Path, header: list[str], damaged: list[Damage]) -> Path:
    """Append the damaged records to `side` (never truncating it) under a comment line that
    says where and when they came from; if it cannot be written, to a fallback file."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = f"# {stamp}: {len(damaged)} record(s) moved from {source.name}, header: {','.join(header)}\n"
    text += "".join(d.text if d.text.endswith(("\n", "\r")) else d.text + "\n" for d in damaged)
    data = text.encode("utf-8", "surrogateescape")  # the bytes as they were, even invalid UTF-8
    for target in (side, fallback_path(side)):
        if target.exists() and not target.is_file():  # never write into a FIFO or a device
            continue
        try:
            with open(target, "ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            return target
        except OSError:
            continue
    raise OSError(f"could not write the damaged rows of {source} anywhere")


def _damage_summary(damaged: list[Damage]) -> str:
    """'line 7: cut short ...; line 9: checksum mismatch' (the first three, then a count)."""
    parts = [f"line {d.line}: {d.reason}" for d in damaged[:3]]
    if len(damaged) > 3:
        parts.append(f"{len(damaged) - 3} more")
    return "; ".join(parts)


class ResultsFile:
    """A resumable results file: one row per finished unit of work, keyed by a column.

    Every driver that runs a list of jobs (sweep points, theorem runs) resumes the same way:
    rows already in the file are kept as they are, their keys are `done`, and each new row is
    appended by rewriting the whole file atomically, so a kill at any moment (even SIGKILL)
    leaves the old file or the new one, never a torn row. Temporaries of an interrupted write
    are removed when the file is opened. `writer=False` (other processes of a multi-host job)
    reads nothing and writes nothing.

    Each appended row gets a `row_sha` checksum. Rows that fail `scan_rows` when the file is
    opened are appended to the side file `damaged_path(path)`, named in one line on stderr, and
    dropped from the file, so their work runs again.
    """

    def __init__(self, path: str | Path, key: str, *, writer: bool = True):
        self.path, self.key, self.writer = Path(path), key, writer
        self.columns: list[str] = []
        self.rows: list[dict] = []
        if writer:
            for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
                stale.unlink()
            self._load()

    def _load(self) -> None:
        """Read the trusted rows; move damaged ones aside (side file first, then the file is
        rewritten without them, so a kill in between loses nothing)."""
        if not self.path.is_file():
            return
        text = self.path.read_bytes().decode("utf-8", "surrogateescape")
        self.columns, self.rows, damaged = scan_rows(text)
        if not damaged:
            return
        side = _append_damage(damaged_path(self.path), self.path, self.columns, damaged)
        try:
            write_csv(self.path, self.rows, columns=self.columns)
        except OSError:
            pass  # the first append rewrites it, or moves the results to a fallback file
        print(
            f"jaxsched: warning: {self.path}: {len(damaged)} damaged row(s) ({_damage_summary(damaged)}) "
            f"moved to {side}; their work runs again",
            file=sys.stderr,
        )

    @property
    def done(self) -> set[str]:
        """Keys of the rows already in the file (rows of an older format, without the key
        column, count as not done)."""
        return {r[self.key] for r in self.rows if r.get(self.key)}

    def append(self, row: Mapping[str, object]) -> None:
        """Add one row (it must carry the key column) and rewrite the file atomically.

        If the file cannot be written any more (disk full, folder removed), every row so far
        goes to a fallback file in the temporary folder, named on stderr, and later rows follow
        it there: finished work is never lost."""
        if self.key not in row:
            raise KeyError(f"results row lacks its key column {self.key!r}")
        row = {k: v for k, v in row.items() if k != ROW_SHA}
        self.rows.append({**row, ROW_SHA: row_sha(row)})
        if not self.writer:
            return
        try:
            write_csv(self.path, self.rows)
        except OSError as e:
            old, self.path = self.path, fallback_path(self.path)
            write_csv(self.path, self.rows)
            print(
                f"jaxsched: warning: could not write {str(old)!r} ({e.strerror or e}); the "
                f"results so far and the rest of the run go to {self.path}",
                file=sys.stderr,
            )


def seed_rows(res, config_columns: Mapping[str, object]) -> list[dict]:
    """One row per seed of a `Results`: the configuration's columns, the seed, then every
    metric of its engine (integers for count, step and flag metrics, whole numbers)."""
    from .engine import get_engine

    metrics = get_engine(res.engine).METRICS
    rows = []
    for i, seed in enumerate(res.seeds):
        row = {**config_columns, "seed": int(seed)}
        row.update({k: metric_value(res.metrics[k][i], m) for k, m in metrics.items()})
        rows.append(row)
    return rows


def metric_value(v: float, metric) -> int | float:
    """One run's value of `metric` (a jaxsched.engine.Metric) for a results file: an int for
    whole-number metrics (counts, steps, flags), a float otherwise. A value with a fraction
    stays a float whatever the metric says, so that no number is ever truncated."""
    whole = getattr(metric, "integer", False) and np.isfinite(v) and float(v).is_integer()
    return int(v) if whole else float(v)


def identity(value: Any) -> Any:
    """A JSON-able canonical form of a configuration value: dataclasses and equinox modules
    (Configs, Params, workloads) become their type name and fields, arrays (numpy or JAX) their
    dtype, shape and the SHA-256 of their bytes (so a trace is known by its content), tuples
    lists, mappings sorted dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A field marked metadata identity=False restates what other fields say (a padded
        # run's own sizes, which its unpadded config holds) and is left out.
        return {
            "type": type(value).__qualname__,
            **{
                f.name: identity(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.metadata.get("identity", True)
            },
        }
    if isinstance(value, Mapping):
        return {str(k): identity(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [identity(v) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return repr(float(value))  # exact, and NaN/inf stay JSON-able
    if isinstance(value, np.generic) or hasattr(value, "__array__"):
        a = np.ascontiguousarray(np.asarray(value))
        if a.ndim == 0:
            return identity(a.item())
        return {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    return repr(value)


def user_policy_code(engine: str, config: Any) -> dict[str, str]:
    """{policy name: SHA-256 of its source} for the policies of `config` (its `policy` and
    `policy_set`) that user code registered (`jaxsched.registry.register_policy`): the package
    version pins the built-in ones, but a user's function may change under the same name."""
    import inspect

    from .registry import ENGINES, policies

    if engine not in ENGINES:
        return {}
    try:
        registry = policies(engine)
    except ConfigError:  # an engine without a policy registry
        return {}
    names = [getattr(config, "policy", None), *getattr(config, "policy_set", ())]
    out = {}
    for name in names:
        entry = registry.get(name) if isinstance(name, str) else None
        if entry is None or entry.builtin:
            continue
        try:
            code = inspect.getsource(entry.fn)
        except (OSError, TypeError):
            code = identity(entry.fn)
        out[name] = hashlib.sha256(code.encode()).hexdigest()
    return out


def source_sha(root: str | Path) -> str:
    """The first 16 hex digits of the SHA-256 of every `*.py` file under `root`: its path
    relative to `root` and its bytes, in order of path (so neither the file system's listing
    order nor the checkout's location enters it)."""
    root = Path(root)
    h = hashlib.sha256()
    for rel, path in sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*.py")):
        data = path.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())  # lengths keep file boundaries unambiguous
        h.update(data)
    return h.hexdigest()[:16]


@functools.cache
def code_sha() -> str:
    """The package's code revision: `source_sha` of the `jaxsched` package beside this module.

    Computed once per process, from the files themselves, so it needs no git and names an
    installed wheel's code as well as a checkout's; a version number alone cannot tell an
    edited checkout from the release it started from."""
    return source_sha(Path(__file__).resolve().parent)


def run_key(engine: str, config: Any, params: Any, seeds: Sequence[int], **extra: Any) -> str:
    """The resume key of a results row: SHA-256 of everything that changes its numbers (the
    engine, every Config and Params field, the workload's content, the full seed list, the
    package version, the package's code revision (`code_sha`) and any `extra` settings). Two
    rows share a key only if rerunning one would reproduce the other bit for bit."""
    from . import __version__

    doc = {
        "engine": engine,
        "config": identity(config),
        "params": identity(params),
        "seeds": [int(s) for s in seeds],
        "version": __version__,
        "code": code_sha(),
        "extra": identity(dict(extra)),
    }
    user = user_policy_code(engine, config)
    if user:  # only then, so that the keys of built-in policies stay put
        doc["user_policies"] = user
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


# Arrays of at most this many elements are written out in a row's `config` and `params`
# cells; longer ones (a trace's lengths) by dtype, shape and a short hash of their bytes.
READABLE_ELEMENTS = 64


def readable(value: Any) -> Any:
    """A JSON-able form of a configuration value for a results cell: what `identity` hashes,
    but with numbers as JSON numbers (each float as its own dtype's shortest text: a float32
    0.03 reads 0.03) and short arrays as their values; non-finite floats are the strings
    'nan', 'inf', '-inf'."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f for f in dataclasses.fields(value) if f.metadata.get("identity", True)]
        return {"type": type(value).__qualname__, **{f.name: readable(getattr(value, f.name)) for f in fields}}
    if isinstance(value, Mapping):
        return {str(k): readable(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [readable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(str(value))  # str: the shortest text that reads back as the same float32
        return x if math.isfinite(x) else str(x)
    if isinstance(value, str) or value is None:
        return value
    if hasattr(value, "__array__"):
        a = np.asarray(value)
        if a.ndim == 0:
            return readable(a[()])
        if a.size <= READABLE_ELEMENTS:
            return [readable(x) for x in a]
        b = np.ascontiguousarray(a).tobytes()
        return {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": hashlib.sha256(b).hexdigest()[:16]}
    return identity(value)


def compact_json(value: Any) -> str:
    """`value` as one line of JSON without spaces (a results cell)."""
    return json.dumps(value, separators=(",", ":"))


def _traces(value: Any) -> Iterable[Any]:
    """Every `jaxsched.workload.Trace` inside a configuration value, in field order."""
    from .workload.traces import Trace

    if isinstance(value, Trace):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.metadata.get("identity", True):
                yield from _traces(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _traces(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _traces(v)


def trace_sha(*values: Any) -> str:
    """The content of the traces a run reads: the first 16 hex digits of the SHA-256 of the
    lengths (and arrival times) of every Trace inside `values`, '' when there is none. A
    trace's name is its file's stem, so a file rewritten under the same name changes this
    and nothing else that a reader sees."""
    found = [[identity(t.prompt), identity(t.output), identity(t.arrival_s)] for v in values for t in _traces(v)]
    if not found:
        return ""
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()[:16]


def seeds_sha(seeds: Sequence[int]) -> str:
    """The first 16 hex digits of the SHA-256 of a seed list (as a JSON list of integers):
    lists with the same ends and count still differ here."""
    return hashlib.sha256(json.dumps([int(x) for x in seeds]).encode()).hexdigest()[:16]


def key_columns(engine: str, config: Any, params: Any, seeds: Sequence[int], **extra: Any) -> dict[str, object]:
    """A results row's `key` (`run_key`) and the columns that show what it hashes: `version`,
    `code` (`code_sha`), `config` and `params` (compact JSON of `readable`: every field, not
    only the ones a table shows), `trace_sha` (`trace_sha`, empty without a trace), `num_seeds`
    and `seeds_sha`; `user_policies` ({name: short source hash}) and `extra` only where the key
    has them. Rows of different keys thus differ in a column too."""
    from . import __version__

    seed_list = [int(x) for x in seeds]
    cols: dict[str, object] = {
        "key": run_key(engine, config, params, seed_list, **extra),
        "version": __version__,
        "code": code_sha(),
        "config": compact_json(readable(config)),
        "params": compact_json(readable(params)),
        "trace_sha": trace_sha(config, params),
        "num_seeds": len(seed_list),
        "seeds_sha": seeds_sha(seed_list),
    }
    user = user_policy_code(engine, config)
    if user:
        cols["user_policies"] = compact_json({k: v[:16] for k, v in user.items()})
    if extra:
        cols["extra"] = compact_json(readable(dict(extra)))
    return cols


def _fmt(v: object) -> object:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


def format_value(x: float) -> str:
    """Four significant digits, scientific outside [1e-3, 1e6)."""
    if not math.isfinite(x):
        return "nan"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
        return f"{x:.3e}"
    return f"{x:.4g}"


def column_formatter(values: Sequence[float]):
    """One number format for a whole table column, chosen from its largest finite magnitude:
    fixed point with four significant digits on that value inside [1e-3, 1e6), scientific
    (three decimals) outside. Returns a function float -> str ('nan' for non-finite)."""
    mags = [abs(float(v)) for v in values if math.isfinite(v) and v != 0]
    top = max(mags, default=0.0)
    if top and (top < 1e-3 or top >= 1e6):
        spec = ".3e"
    else:
        spec = f".{max(0, 3 - math.floor(math.log10(top))) if top else 0}f"
    return lambda x: format(float(x), spec) if math.isfinite(x) else "nan"


def mean_ci_column(samples: Sequence[np.ndarray]) -> list[str]:
    """'mean ± half' cells (95% CI half-width over the samples) of one column, in one format;
    the '± half' part is left out where a sample has fewer than two values."""
    from .stats import mean_ci

    stats = [mean_ci(np.asarray(x, dtype=float)) for x in samples]
    fmt = column_formatter([s[0] for s in stats])
    return [fmt(m) + ("" if n < 2 else f" ± {fmt(h)}") for m, _, h, n in stats]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
