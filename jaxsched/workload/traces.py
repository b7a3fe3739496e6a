"""Request traces: (prompt, output) length arrays read from trace files.

`Trace` holds the arrays; `order="resample"` draws request i of seed s uniformly with
replacement (index = hash(s, i) mod n), `order="sequential"` reveals the rows in file order (the
same for every seed) and has a finite number of requests. `read_trace` reads the layouts of
`jaxsched.workload.formats` (BurstGPT, Azure LLM 2023/2024 and LMM 2025, Vidur, splitwise-sim,
Mooncake's JSON Lines; docs/traces.md) or any two-column CSV; with `times=True` it also keeps
each row's arrival time (`Trace.arrival_s`), which the budget engine's trace-driven arrivals
replay (`jaxsched.workload.arrivals`, docs/budget-semantics.md §1).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from .. import rng
from ..errors import ConfigError
from .datasets import resolve_trace
from .formats import (
    FORMATS,
    GENERIC_TIME_COLUMNS,
    OUTPUT_NAMES,
    PLAIN,
    PROMPT_NAMES,
    TraceFormat,
    column_key,
    detect_csv,
    format_named,
    jsonl_format,
    looks_jsonl,
    nearest_csv,
)


@dataclass(frozen=True, eq=False)
class BlockHashes:
    """Per-row lists of integer block hashes (Mooncake's `hash_ids`), stored flat.

    values: int64[total], the rows' hashes one after another. offsets: int64[n + 1], row i's
    hashes are values[offsets[i]:offsets[i + 1]] (offsets[0] = 0, nondecreasing, offsets[-1]
    = total). Rows sharing a leading run of hashes share that prefix of their prompts.
    """

    values: np.ndarray
    offsets: np.ndarray

    def __post_init__(self):
        v = np.asarray(self.values)
        o = np.asarray(self.offsets)
        ok = v.ndim == 1 and o.ndim == 1 and o.size >= 1 and v.dtype.kind in "iu" and o.dtype.kind in "iu"
        ok = ok and int(o[0]) == 0 and int(o[-1]) == v.size and bool(np.all(np.diff(o) >= 0))
        if not ok:
            raise ConfigError(
                "BlockHashes must be an int array of values and int64[n + 1] offsets rising from 0 to "
                f"len(values), got shapes {v.shape} and {o.shape}"
            )
        object.__setattr__(self, "values", v.astype(np.int64))
        object.__setattr__(self, "offsets", o.astype(np.int64))

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def row(self, i: int) -> np.ndarray:
        """Row i's hashes, int64[k]."""
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def __eq__(self, other):
        return (
            isinstance(other, BlockHashes)
            and np.array_equal(self.values, other.values)
            and np.array_equal(self.offsets, other.offsets)
        )

    def __hash__(self):
        return hash((self.offsets.size, self.values.tobytes()[:4096]))


@dataclass(frozen=True, eq=False)
class Trace:
    """Request lengths from a trace: int arrays `prompt`, `output` (tokens, >= 1).

    order="resample": request i of seed s is row hash(s, i) mod n (i.i.d. with replacement;
    an unbounded stream). order="sequential": request i is row i for every seed, and the run
    has exactly n requests.

    arrival_s: optional float64[n] arrival time of each row (s, nondecreasing, the first row at
    0 when read from a file); None for a lengths-only trace. Length laws ignore it; the budget
    engine's `arrival_mode="trace"` replays it (rows in file order, lengths from the same row).

    num_images: optional int32[n] images per request (Azure LMM 2025's `NumImages`, >= 0), and
    hash_ids: optional `BlockHashes` of the rows (Mooncake's prompt block hashes), kept for
    analysis and later prefix-cache work. No engine reads them, so they are left out of the
    trace's equality and of a run's key and config columns (field metadata identity=False).
    """

    prompt: np.ndarray
    output: np.ndarray
    name: str = "trace"
    order: str = "resample"
    arrival_s: np.ndarray | None = None
    num_images: np.ndarray | None = field(default=None, metadata={"identity": False})
    hash_ids: BlockHashes | None = field(default=None, metadata={"identity": False})

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise ConfigError(f"Trace.name must be a string, got {self.name!r}")
        try:
            p = np.asarray(self.prompt)
            o = np.asarray(self.output)
        except (TypeError, ValueError):  # ragged nesting
            raise ConfigError(
                f"trace {self.name}: prompt and output must be equal-length "
                "non-empty 1-d arrays of integers, got ragged sequences"
            ) from None
        if p.ndim != 1 or o.shape != p.shape or p.size == 0:
            raise ConfigError(
                f"trace {self.name}: prompt and output must be equal-length non-empty "
                f"1-d arrays, got shapes {p.shape} and {o.shape}"
            )
        for what, a in (("prompt", p), ("output", o)):
            _check_lengths(a, f"trace {self.name} {what} lengths")
        if self.order not in ("resample", "sequential"):
            raise ConfigError(f"Trace.order must be 'resample' or 'sequential', got {self.order!r}")
        object.__setattr__(self, "prompt", p.astype(np.int32))
        object.__setattr__(self, "output", o.astype(np.int32))
        if self.arrival_s is not None:
            object.__setattr__(self, "arrival_s", _check_times(self.arrival_s, p.size, self.name))
        if self.num_images is not None:
            object.__setattr__(self, "num_images", _check_counts(self.num_images, p.size, self.name))
        if self.hash_ids is not None and not (isinstance(self.hash_ids, BlockHashes) and len(self.hash_ids) == p.size):
            raise ConfigError(
                f"trace {self.name}: hash_ids must be None or BlockHashes of {p.size} rows, got {self.hash_ids!r}"
            )

    @property
    def max_prompt(self) -> int:
        return int(self.prompt.max())

    @property
    def max_output(self) -> int:
        return int(self.output.max())

    @property
    def num_requests(self) -> int | None:
        return int(self.prompt.size) if self.order == "sequential" else None

    def sample(self, seed, ids):
        n = self.prompt.size
        if self.order == "sequential":
            row = jnp.clip(ids, 0, n - 1)
        else:
            row = (rng.hash3(seed, ids, rng.STREAM_INDEX) % np.uint32(n)).astype(jnp.int32)
        return jnp.asarray(self.prompt)[row], jnp.asarray(self.output)[row]

    def __hash__(self):
        return hash(
            (
                self.name,
                self.order,
                self.prompt.size,
                self.prompt.tobytes()[:4096],
                None if self.arrival_s is None else self.arrival_s.tobytes()[:4096],
            )
        )

    def __eq__(self, other):
        if not (
            isinstance(other, Trace)
            and self.order == other.order
            and np.array_equal(self.prompt, other.prompt)
            and np.array_equal(self.output, other.output)
        ):
            return False
        if self.arrival_s is None or other.arrival_s is None:
            return self.arrival_s is None and other.arrival_s is None
        return np.array_equal(self.arrival_s, other.arrival_s)


def _check_times(t, n: int, name: str) -> np.ndarray:
    """Arrival times as float64[n]: finite, nondecreasing (s); one ConfigError otherwise."""
    what = f"trace {name} arrival_s"
    try:
        a = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{what} must be a 1-d array of {n} finite times (s), one per row, got {type(t).__name__}"
        ) from None
    if a.shape != (n,):
        raise ConfigError(f"{what} must be a 1-d array of {n} times (s), one per row, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ConfigError(f"{what} must be finite; row {int(np.argmax(~np.isfinite(a)))} is {a[~np.isfinite(a)][0]}")
    back = np.diff(a) < 0
    if back.any():
        i = int(np.argmax(back)) + 1
        raise ConfigError(
            f"{what} must be nondecreasing (rows in arrival order); row {i} "
            f"({a[i]!r} s) is before row {i - 1} ({a[i - 1]!r} s)"
        )
    return a


def _check_counts(c, n: int, name: str) -> np.ndarray:
    """Per-row counts (images) as int32[n], integers >= 0; one ConfigError otherwise."""
    a = np.asarray(c)
    if a.shape != (n,) or a.dtype.kind not in "iu" or (a < 0).any() or (a > 2**31 - 1).any():
        raise ConfigError(f"trace {name} num_images must be None or {n} integers >= 0 (one per row), got {c!r}")
    return a.astype(np.int32)


def _check_lengths(a: np.ndarray, what: str) -> None:
    """Lengths must be finite positive integers below 2^24."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            raise ConfigError(f"{what} must be finite integers >= 1; row {int(np.argmax(bad))} is {a[bad][0]}")
        frac = a != np.round(a)
        if frac.any():
            i = int(np.argmax(frac))
            raise ConfigError(f"{what} must be integers >= 1; row {i} is {a[i]}")
    elif a.dtype.kind not in "iu":
        raise ConfigError(f"{what} must be integers >= 1, got dtype {a.dtype}")
    if (a < 1).any():
        i = int(np.argmax(a < 1))
        raise ConfigError(f"{what} must be integers >= 1 (zero and negative lengths are invalid); row {i} is {a[i]}")
    if (a > 2**24).any():
        i = int(np.argmax(a > 2**24))
        raise ConfigError(f"{what} must be <= 2^24 tokens; row {i} is {a[i]}")


# --------------------------------------------------------------------------- trace files


def _check_columns(columns) -> tuple[str, str] | None:
    """`read_trace`'s columns: None, or the header names of two distinct columns."""
    if columns is None:
        return None
    ok = (
        isinstance(columns, (tuple, list))
        and len(columns) == 2
        and all(isinstance(c, str) and c.strip() for c in columns)
        and columns[0].strip() != columns[1].strip()
    )
    if not ok:
        raise ConfigError(
            f"columns must be None or the names of two distinct columns (prompt, output), got {columns!r}"
        )
    return columns[0].strip(), columns[1].strip()


def _plain_columns(path: Path, header: list[str], line: int) -> None:
    """A plain two-column header must name its columns by known names (`PROMPT_NAMES`,
    `OUTPUT_NAMES`); one ConfigError naming the first unknown one."""
    for name, known, what in ((header[0], PROMPT_NAMES, "prompt"), (header[1], OUTPUT_NAMES, "output")):
        if column_key(name) not in known:
            raise ConfigError(
                f"trace file {str(path)!r} line {line}: column {name!r} is not a known {what} column name "
                f"(one of {', '.join(known)}){_near_hint(header)}; name the columns with columns=(PROMPT, OUTPUT) "
                "(--trace-columns on the command line)"
            )


def _near_hint(header: list[str]) -> str:
    """'; the vidur layout needs column ...' for the layout a header resembles, else ''."""
    near = nearest_csv(header)
    if near is None:
        return ""
    missing = [c for c in near.columns() if c not in header]
    return f"; the {near.name} layout needs column {missing[0]!r} (its columns: {', '.join(near.columns())})"


def read_trace(
    path: str | Path,
    order: str = "resample",
    times: bool = False,
    columns: tuple[str, str] | None = None,
    format: str | None = None,
) -> Trace:
    """Read a request trace file (CSV or JSON Lines) into a `Trace`.

    Recognized layouts (`jaxsched.workload.formats.FORMATS`, docs/traces.md): BurstGPT
    (`Request tokens`, `Response tokens`), the BurstGPT sample (`input_tokens,output_tokens`),
    Azure LLM inference 2023 and 2024 (`TIMESTAMP,ContextTokens,GeneratedTokens`), Azure LMM
    (multimodal) 2025 (those plus `NumImages`, kept as `Trace.num_images`), Vidur's processed
    traces (`arrived_at,num_prefill_tokens,num_decode_tokens`), splitwise-sim's traces
    (`arrival_timestamp`, `prompt_size`, `token_size`; other columns ignored), Mooncake's JSON
    Lines (`timestamp` in ms, `input_length`, `output_length`, `hash_ids`, the hashes kept as
    `Trace.hash_ids`), and a plain two-column CSV (prompt, output), with or without a header.
    Extra columns are ignored. Raises ConfigError naming the file, line and column of the
    first problem (missing file, empty file, missing columns, malformed or non-integer values,
    NaN, lengths < 1, negative or out-of-order times).

    format: None detects the layout (a CSV by its header, JSON Lines by a .jsonl/.ndjson name
    or a first character `{`); a name in `formats.FORMAT_NAMES` reads the file as that layout.
    times=True also reads each row's arrival time into `Trace.arrival_s` (float64 s since the
    first row, exact to the nanosecond for date-times): from the format's time column (Azure's
    `TIMESTAMP`, ISO date-times such as "2023-11-16 18:15:46.6805900" or
    "2024-05-10 00:00:00.009930+00:00", or numbers of seconds; BurstGPT's `Timestamp`, Vidur's
    `arrived_at` and splitwise-sim's `arrival_timestamp` in s; Mooncake's `timestamp` in ms),
    or for a plain file a `TIMESTAMP` or `Timestamp` column.
    columns: the header names of the (prompt, output) columns of a CSV layout not recognized
    (None: a recognized layout, or two columns with known names such as prompt, output).
    """
    if order not in ("resample", "sequential"):
        # Checked before the file is read, so a bad order is named even on a bad file.
        raise ConfigError(f"Trace.order must be 'resample' or 'sequential', got {order!r}")
    if not isinstance(times, (bool, np.bool_)):
        raise ConfigError(f"times must be True or False, got {times!r}")
    columns = _check_columns(columns)
    fmt = None if format is None else format_named(format)
    if columns is not None and format not in (None, PLAIN):
        raise ConfigError(f"columns must be None when format is {format!r} (that layout names its own columns)")
    path = _trace_path(path)
    text = _read_text(path)
    jsonl = fmt.kind == "jsonl" if fmt is not None else format is None and looks_jsonl(path, text)
    if jsonl:
        if columns is not None:
            raise ConfigError(f"trace file {str(path)!r}: columns must be None for a JSON Lines trace")
        return _read_jsonl(path, text, fmt or jsonl_format(), order, bool(times))
    return _read_csv(path, text, order, bool(times), columns, format)


def _read_csv(
    path: Path, text: str, order: str, times: bool, columns: tuple[str, str] | None, format: str | None
) -> Trace:
    """`read_trace` of a CSV file: `format` None detects the layout by its header."""
    numbered = _csv_lines(path, text)
    rows = [r for _, r in numbered]
    header = [c.strip() for c in rows[0]]
    fmt = _csv_layout(path, header, numbered[0][0], columns, format)
    if fmt is not None:
        cols = (header.index(fmt.prompt), header.index(fmt.output))
        body, labels = rows[1:], (f"column {fmt.prompt!r}", f"column {fmt.output!r}")
    else:
        cols = (0, 1)
        body, labels = _plain_layout(path, header, rows, numbered[0][0])
    if not body:
        raise ConfigError(f"trace file {str(path)!r} has a header but no data rows")
    lines = [n for n, _ in numbered][len(rows) - len(body) :]
    prompt = _csv_ints(path, body, lines, cols[0], labels[0], "prompt length", 1, 2**24)
    output = _csv_ints(path, body, lines, cols[1], labels[1], "output length", 1, 2**24)
    count = None
    if fmt is not None and fmt.count is not None:
        count = _csv_ints(path, body, lines, header.index(fmt.count), f"column {fmt.count!r}", "count", 0, 2**31 - 1)
    arrival = _read_times(path, (numbered[0][0], header), body, lines, fmt) if times else None
    return Trace(prompt, output, name=path.stem, order=order, arrival_s=arrival, num_images=count)


def _csv_lines(path: Path, text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of the file's non-blank lines, so errors name the file's own lines;
    at least one, else a ConfigError (empty file, malformed CSV)."""
    try:
        numbered = [
            (n, r)
            for n, r in enumerate(csv.reader(io.StringIO(text, newline="")), 1)
            if r and any(c.strip() for c in r)
        ]
    except csv.Error as e:
        raise ConfigError(
            f"trace {str(path)!r} must be a CSV file of (prompt, output) lengths, got malformed CSV ({e})"
        ) from None
    if not numbered:
        raise ConfigError(f"trace file {str(path)!r} is empty")
    return numbered


def _plain_layout(
    path: Path, header: list[str], rows: list[list[str]], line: int
) -> tuple[list[list[str]], tuple[str, str]]:
    """The data rows and column labels of a plain two-column file (prompt, output): without a
    header when its first field is a number, else with known column names (`_plain_columns`)."""
    if len(rows[0]) == 2:
        if _is_number(header[0]):
            body = rows  # headerless
            return body, ("column 1", "column 2")
        _plain_columns(path, header, line)
        return rows[1:], (f"column {header[0]!r}", f"column {header[1]!r}")
    known = "; ".join(", ".join(f.columns()) for f in FORMATS if f.kind == "csv")
    raise ConfigError(
        f"trace file {str(path)!r} line {line}: missing columns: expected one of [{known}] "
        f"or exactly two columns (prompt, output), got header {header}{_near_hint(header)}"
    )


def _csv_layout(
    path: Path, header: list[str], line: int, columns: tuple[str, str] | None, format: str | None
) -> TraceFormat | None:
    """The layout a CSV file is read as: `columns` (a layout of its own), the named `format`
    (whose columns the header must have), or the first format the header matches; None for a
    plain two-column file (format "plain", or no format matches)."""
    if columns is not None:
        if not all(c in header for c in columns):
            raise ConfigError(
                f"trace file {str(path)!r} line {line}: columns={columns!r} must name columns of its header {header}"
            )
        return TraceFormat("columns", columns[0], columns[1], None, "s")
    if format is None:
        return detect_csv(header)
    fmt = format_named(format)
    if fmt is None:
        return None
    missing = [c for c in fmt.columns() if c not in header]
    if missing:
        raise ConfigError(
            f"trace file {str(path)!r} line {line}: format {fmt.name!r} needs column {missing[0]!r} "
            f"(its columns: {', '.join(fmt.columns())}), got header {header}"
        )
    return fmt


def _csv_ints(
    path: Path, body: list[list[str]], lines: list[int], col: int, label: str, what: str, lo: int, hi: int
) -> np.ndarray:
    """int64 values of field `col` (`label`, e.g. "column 'prompt_size'") of the data rows,
    each an integer in [lo, hi]; one ConfigError naming the file, line and column otherwise."""
    out = np.empty(len(body), np.int64)
    kind = what.split()[0]
    for n, r in enumerate(body):
        if col >= len(r):
            raise ConfigError(f"trace file {str(path)!r} line {lines[n]}: missing {kind} {label}")
        out[n] = _parse_int(r[col], f"trace file {str(path)!r} line {lines[n]} {what} ({label})", lo, hi)
    return out


def _read_times(
    path: Path, head: tuple[int, list[str]], body: list[list[str]], lines: list[int], fmt: TraceFormat | None
) -> np.ndarray:
    """float64 arrival times (s since the first row) of the data rows, from the format's time
    column (a plain file: the first of GENERIC_TIME_COLUMNS in its header): all ISO date-times
    (to the nanosecond) or all numbers (in the format's unit, s or ms). head: the header's
    line number and fields."""
    where = f"trace file {str(path)!r}"
    head_line, header = head
    wanted = (fmt.time,) if fmt is not None and fmt.time is not None else GENERIC_TIME_COLUMNS
    col = next((header.index(c) for c in wanted if c in header), None)
    if col is None:
        names = repr(wanted[0]) if len(wanted) == 1 else f"one of {', '.join(wanted)}"
        raise ConfigError(
            f"{where} line {head_line}: times=True needs an arrival-time column ({names}), got header {header}"
        )
    name = header[col]
    cells = []
    for n, r in enumerate(body):
        if col >= len(r) or not r[col].strip():
            raise ConfigError(f"{where} line {lines[n]}: missing arrival time (column {name!r})")
        cells.append(r[col].strip())
    scale = 1e-3 if fmt is not None and fmt.time_unit == "ms" else 1.0
    if _is_number(cells[0]):
        values = [float(c) if _is_number(c) else math.nan for c in cells]
        return _relative_times(where, f"column {name!r}", values, cells, lines, scale)
    ns = np.empty(len(cells), np.int64)
    for n, c in enumerate(cells):
        ns[n] = _datetime_ns(c, f"{where} line {lines[n]}: arrival time", name)
    # Differences in integer nanoseconds are exact; one rounding to float64 seconds.
    t = (ns - ns[0]).astype(np.float64) / 1e9
    _check_order(where, f"column {name!r}", t, cells, lines)
    return t


def _relative_times(
    where: str, label: str, values: list[float], cells: list[str], lines: list[int], scale: float
) -> np.ndarray:
    """Numeric arrival times (in units of `scale` s) as float64 s since the first row: each
    finite and >= 0 (a time since the trace's start), in nondecreasing order."""
    out = np.empty(len(values), np.float64)
    for n, x in enumerate(values):
        if not math.isfinite(x) or x < 0:
            raise ConfigError(
                f"{where} line {lines[n]}: arrival time must be a finite number >= 0 like the "
                f"first row's ({label}), got {cells[n]!r}"
            )
        out[n] = x
    _check_order(where, label, out, cells, lines)
    return (out - out[0]) * scale


def _check_order(where: str, label: str, t: np.ndarray, cells: list[str], lines: list[int]) -> None:
    """Rows must be in arrival order; one ConfigError naming the first row out of it."""
    back = np.diff(t) < 0
    if back.any():
        i = int(np.argmax(back)) + 1
        raise ConfigError(
            f"{where} line {lines[i]}: arrival times must be nondecreasing (rows in arrival order); "
            f"{cells[i]!r} ({label}) is before the previous row's {cells[i - 1]!r}"
        )


# A trailing UTC offset ("Z", "+00:00", "-0800") after a time of day: numpy reads date-times
# without one, so it is split off and applied here.
_UTC_OFFSET = re.compile(r"^(.*\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|[+-]\d{2}:?\d{2})$")


def _datetime_ns(cell: str, what: str, column: str) -> int:
    """An ISO date-time as int64 ns since the epoch (UTC when it carries an offset)."""
    m = _UTC_OFFSET.match(cell)
    stamp, offset_min = cell, 0
    if m:
        stamp, zone = m.group(1), m.group(2)
        if zone != "Z":
            digits = zone[1:].replace(":", "")
            offset_min = (1 if zone[0] == "+" else -1) * (int(digits[:2]) * 60 + int(digits[2:]))
    try:
        v = np.datetime64(stamp.replace(" ", "T"), "ns")
        if np.isnat(v):  # "NaT" parses; it is no time
            raise ValueError(cell)
    except ValueError:
        raise ConfigError(
            f"{what} must be an ISO date-time like the first row's ('2023-11-16 18:15:46.68') "
            f"(column {column!r}), got {cell!r}"
        ) from None
    return int(v.astype(np.int64)) - offset_min * 60 * 10**9


# --------------------------------------------------------------------------- JSON Lines


def _read_jsonl(path: Path, text: str, fmt: TraceFormat, order: str, times: bool) -> Trace:
    """`read_trace` of a JSON Lines file in layout `fmt` (one object per non-blank line)."""
    where = f"trace file {str(path)!r}"
    # split on "\n" only: JSON strings may hold other line separators (U+2028) unescaped
    objs = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
    if not objs:
        raise ConfigError(f"{where} is empty")
    lines = [n for n, _ in objs]
    rows = [_json_object(where, n, line) for n, line in objs]
    prompt = _json_ints(where, rows, lines, fmt.prompt, "prompt length", 1, 2**24)
    output = _json_ints(where, rows, lines, fmt.output, "output length", 1, 2**24)
    hashes = _json_hashes(where, rows, lines, fmt.hashes) if fmt.hashes else None
    arrival = None
    if times:
        cells = [_json_value(where, r, n, fmt.time, "arrival time") for r, n in zip(rows, lines)]
        values = [_json_number(c) for c in cells]
        scale = 1e-3 if fmt.time_unit == "ms" else 1.0
        arrival = _relative_times(where, f"key {fmt.time!r}", values, [json.dumps(c) for c in cells], lines, scale)
    return Trace(prompt, output, name=path.stem, order=order, arrival_s=arrival, hash_ids=hashes)


def _json_object(where: str, n: int, line: str) -> dict:
    """Line n parsed as one JSON object."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where} line {n}: must be one JSON object, got malformed JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where} line {n}: must be one JSON object, got {type(obj).__name__}")
    return obj


def _json_value(where: str, obj: dict, n: int, key: str, what: str):
    """obj[key]; ConfigError naming line n and the key when it is absent."""
    if key not in obj:
        raise ConfigError(f"{where} line {n}: missing {what} (key {key!r})")
    return obj[key]


def _json_number(v) -> float:
    """A JSON number as a float; NaN for anything else (booleans, strings, null)."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    return float(v) if ok else math.nan


def _json_ints(where: str, rows: list[dict], lines: list[int], key: str, what: str, lo: int, hi: int) -> np.ndarray:
    """int64 values of `key` in every row, each an integer in [lo, hi] (integral floats too)."""
    out = np.empty(len(rows), np.int64)
    for i, (r, n) in enumerate(zip(rows, lines)):
        v = _json_value(where, r, n, key, what)
        x = _json_number(v)
        if not (math.isfinite(x) and x == math.floor(x) and lo <= x <= hi):
            raise ConfigError(
                f"{where} line {n} {what} (key {key!r}) must be an integer in [{lo}, {_bound(hi)}], got {v!r}"
            )
        out[i] = int(x)
    return out


def _json_hashes(where: str, rows: list[dict], lines: list[int], key: str) -> BlockHashes | None:
    """The per-row integer lists under `key` as flat BlockHashes; None when no row has the
    key (a lengths-and-times file), a ConfigError when only some rows do."""
    has = [key in r for r in rows]
    if not any(has):
        return None
    values: list[int] = []
    offsets = [0]
    for r, n, h in zip(rows, lines, has):
        v = r.get(key)
        ok = h and isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        if not ok or any(not -(2**63) <= x < 2**63 for x in v):
            got = "no such key (other rows have one)" if not h else repr(v)
            raise ConfigError(f"{where} line {n}: {key} (key {key!r}) must be a list of integers, got {got}")
        values.extend(v)
        offsets.append(len(values))
    return BlockHashes(np.asarray(values, np.int64), np.asarray(offsets, np.int64))


def _trace_path(path) -> Path:
    """The trace's path, checked to name an existing regular file. A path that does not exist
    but is a known trace name (`datasets.TRACES`) is that trace's file in the data folder."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ConfigError(f"trace must be the path of a trace file (CSV or JSON Lines), got {path!r}")
    path = resolve_trace(path)
    if path.is_dir():
        raise ConfigError(
            f"trace file {str(path)!r} does not exist as a file: it is a directory (give the path of a trace file)"
        )
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(f"trace file {str(path)!r} {what}")
    return path


def _read_text(path: Path) -> str:
    """The file's text, decoded as UTF-8 with an optional byte-order mark (which would otherwise
    glue itself to the first field: a header-less file would lose its first row as a "header",
    and a header would not be recognised). Binary and non-UTF-8 files get one ConfigError."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"trace file {str(path)!r} cannot be read: {e.strerror or e}") from None
    allowed = f"trace {str(path)!r} must be a UTF-8 text file (CSV or JSON Lines) of request lengths"
    # NUL bytes never occur in text; a UTF-8 decoder would accept them, and the csv module
    # would then read the binary data as a header.
    if b"\0" in data:
        raise ConfigError(f"{allowed}, got binary data")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(
            f"{allowed}, got a byte that is not UTF-8 (0x{data[e.start]:02x} on "
            f"line {line}: binary data or another encoding, e.g. Latin-1)"
        ) from None


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _parse_int(text: str, what: str, lo: int, hi: int) -> int:
    """A CSV cell holding an integer in [lo, hi] (integral floats such as '30.0' accepted)."""
    t = text.strip()
    try:
        x = float(t)
    except ValueError:
        raise ConfigError(f"{what} must be an integer in [{lo}, {_bound(hi)}], got {t!r}") from None
    if not math.isfinite(x) or x != math.floor(x) or x < lo or x > hi:
        raise ConfigError(f"{what} must be an integer in [{lo}, {_bound(hi)}], got {t!r}")
    return int(x)


def _bound(hi: int) -> str:
    """A length bound as the messages write it (2^24 for the longest request)."""
    return "2^24" if hi == 2**24 else str(hi)
