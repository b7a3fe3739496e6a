"""Request-length traces: (prompt, output) arrays read from CSV files.

`Trace` holds the arrays; `order="resample"` draws request i of seed s uniformly with
replacement (index = hash(s, i) mod n), `order="sequential"` reveals the rows in file order (the
same for every seed) and has a finite number of requests. `read_trace` reads BurstGPT, the
BurstGPT sample, Azure LLM inference 2023 or any two-column file; with `times=True` it also
keeps each row's arrival time (`Trace.arrival_s`), which the budget engine's trace-driven
arrivals replay (`jaxsched.workload.arrivals`, docs/budget-semantics.md §1).
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from .. import rng
from ..errors import ConfigError


@dataclass(frozen=True, eq=False)
class Trace:
    """Request lengths from a trace: int arrays `prompt`, `output` (tokens, >= 1).

    order="resample": request i of seed s is row hash(s, i) mod n (i.i.d. with replacement;
    an unbounded stream). order="sequential": request i is row i for every seed, and the run
    has exactly n requests.

    arrival_s: optional float64[n] arrival time of each row (s, nondecreasing, the first row at
    0 when read from a file); None for a lengths-only trace. Length laws ignore it; the budget
    engine's `arrival_mode="trace"` replays it (rows in file order, lengths from the same row).
    """

    prompt: np.ndarray
    output: np.ndarray
    name: str = "trace"
    order: str = "resample"
    arrival_s: np.ndarray | None = None

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

_COLUMN_SETS = (
    ("burstgpt", "Request tokens", "Response tokens"),
    ("burstgpt_sample", "input_tokens", "output_tokens"),
    ("azure", "ContextTokens", "GeneratedTokens"),
)
# Arrival-time columns (read with times=True): Azure's TIMESTAMP (date-times), BurstGPT's
# Timestamp (seconds).
_TIME_COLUMNS = ("TIMESTAMP", "Timestamp")
# The header names a plain two-column file may give its (prompt, output) columns, compared by
# `_column_key`. Any other name is an error unless `columns` names it: a file headed
# `input_tokens,foo` must not have `foo` read as output lengths.
_PROMPT_NAMES = (
    "prompt",
    "prompt_tokens",
    "prompt_length",
    "prompt_len",
    "input",
    "input_tokens",
    "input_length",
    "input_len",
    "request_tokens",
    "context_tokens",
    "contexttokens",
    "prefill",
    "prefill_tokens",
)
_OUTPUT_NAMES = (
    "output",
    "output_tokens",
    "output_length",
    "output_len",
    "response_tokens",
    "response_length",
    "generated_tokens",
    "generatedtokens",
    "completion_tokens",
    "decode",
    "decode_tokens",
)


def _column_key(name: str) -> str:
    """A header name compared case-insensitively, spaces and hyphens read as underscores."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


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


def _plain_columns(path: Path, header: list[str]) -> None:
    """A plain two-column header must name its columns by known names (`_PROMPT_NAMES`,
    `_OUTPUT_NAMES`); one ConfigError naming the first unknown one."""
    for name, known, what in ((header[0], _PROMPT_NAMES, "prompt"), (header[1], _OUTPUT_NAMES, "output")):
        if _column_key(name) not in known:
            raise ConfigError(
                f"trace file {str(path)!r}: column {name!r} is not a known {what} column name "
                f"(one of {', '.join(known)}); name the columns with columns=(PROMPT, OUTPUT) "
                "(--trace-columns on the command line)"
            )


def read_trace(
    path: str | Path, order: str = "resample", times: bool = False, columns: tuple[str, str] | None = None
) -> Trace:
    """Read a request-length trace from CSV.

    Recognized layouts: BurstGPT (`Request tokens`, `Response tokens` columns), the BurstGPT
    sample (`input_tokens,output_tokens`), Azure LLM inference 2023
    (`TIMESTAMP,ContextTokens,GeneratedTokens`), and a plain two-column file (prompt, output),
    with or without a header. Raises ConfigError naming the file, row and column of the first
    problem (missing file, empty file, missing columns, malformed or non-integer values, NaN,
    lengths < 1).

    times=True also reads each row's arrival time into `Trace.arrival_s` (float64 s since the
    first row, exact to the nanosecond for date-times): from a `TIMESTAMP` or `Timestamp`
    column holding ISO date-times ("2023-11-16 18:15:46.6805900") or numbers (seconds). A
    file without such a column, an unparsable time, or rows out of time order raise one
    ConfigError naming the file and line.

    columns: the header names of the (prompt, output) columns, for a layout not recognized
    (None: a recognized layout, or two columns with known names such as prompt, output).
    """
    if order not in ("resample", "sequential"):
        # Checked before the file is read, so a bad order is named even on a bad file.
        raise ConfigError(f"Trace.order must be 'resample' or 'sequential', got {order!r}")
    if not isinstance(times, (bool, np.bool_)):
        raise ConfigError(f"times must be True or False, got {times!r}")
    columns = _check_columns(columns)
    path = _trace_path(path)
    text = _read_text(path)
    # (line number, fields) of the non-blank lines, so errors name the file's own lines.
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
    rows = [r for _, r in numbered]
    if not rows:
        raise ConfigError(f"trace file {str(path)!r} is empty")
    header = [c.strip() for c in rows[0]]
    pi = oi = None
    named = () if columns is None else (("columns", *columns),)
    for _, pc, oc in named or _COLUMN_SETS:
        if pc in header and oc in header:
            pi, oi = header.index(pc), header.index(oc)
            body = rows[1:]
            break
    else:
        if columns is not None:
            raise ConfigError(f"trace file {str(path)!r}: columns={columns!r} must name columns of its header {header}")
        if _is_number(header[0]) if header else False:
            body = rows  # headerless
        else:
            body = rows[1:]
        ncol = len(rows[0])
        if ncol != 2:
            known = "; ".join(f"{a}, {b}" for _, a, b in _COLUMN_SETS)
            raise ConfigError(
                f"trace file {str(path)!r}: missing columns: expected one of [{known}] "
                f"or exactly two columns (prompt, output), got header {header}"
            )
        if body is not rows:
            _plain_columns(path, header)
        pi, oi = 0, 1
    if not body:
        raise ConfigError(f"trace file {str(path)!r} has a header but no data rows")
    prompt = np.empty(len(body), np.int64)
    output = np.empty(len(body), np.int64)
    lines = [n for n, _ in numbered][len(rows) - len(body) :]
    for n, r in enumerate(body):
        for col, dst, what in ((pi, prompt, "prompt"), (oi, output, "output")):
            line = lines[n]
            if col >= len(r):
                raise ConfigError(f"trace file {str(path)!r} line {line}: missing {what} column")
            dst[n] = _parse_length(r[col], f"trace file {str(path)!r} line {line} {what} length")
    arrival = _read_times(path, header, body, lines) if times else None
    return Trace(prompt, output, name=path.stem, order=order, arrival_s=arrival)


def _read_times(path: Path, header: list[str], body: list[list[str]], lines: list[int]) -> np.ndarray:
    """float64 arrival times (s since the first row) of the data rows, from the first column of
    _TIME_COLUMNS in the header: all ISO date-times (to the nanosecond) or all numbers (s)."""
    where = f"trace file {str(path)!r}"
    col = next((header.index(c) for c in _TIME_COLUMNS if c in header), None)
    if col is None:
        raise ConfigError(
            f"{where}: times=True needs an arrival-time column (one of {', '.join(_TIME_COLUMNS)}), got header {header}"
        )
    cells = []
    for n, r in enumerate(body):
        if col >= len(r) or not r[col].strip():
            raise ConfigError(f"{where} line {lines[n]}: missing arrival time")
        cells.append(r[col].strip())
    if _is_number(cells[0]):
        out = np.empty(len(cells), np.float64)
        for n, c in enumerate(cells):
            x = float(c) if _is_number(c) else math.nan
            if not math.isfinite(x):
                raise ConfigError(
                    f"{where} line {lines[n]}: arrival time must be a finite number "
                    f"of seconds like the first row's, got {c!r}"
                )
            out[n] = x
        t = out - out[0]
    else:
        ns = np.empty(len(cells), np.int64)
        for n, c in enumerate(cells):
            try:
                v = np.datetime64(c.replace(" ", "T"), "ns")
                if np.isnat(v):  # "NaT" parses; it is no time
                    raise ValueError(c)
                ns[n] = v.astype(np.int64)
            except ValueError:
                raise ConfigError(
                    f"{where} line {lines[n]}: arrival time must be an ISO "
                    f"date-time like the first row's ('2023-11-16 18:15:46.68'), "
                    f"got {c!r}"
                ) from None
        # Differences in integer nanoseconds are exact; one rounding to float64 seconds.
        t = (ns - ns[0]).astype(np.float64) / 1e9
    back = np.diff(t) < 0
    if back.any():
        i = int(np.argmax(back)) + 1
        raise ConfigError(
            f"{where} line {lines[i]}: arrival times must be nondecreasing (rows "
            f"in arrival order); {cells[i]!r} is before the previous row's "
            f"{cells[i - 1]!r}"
        )
    return t


def _trace_path(path) -> Path:
    """The trace's path, checked to name an existing regular file."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ConfigError(f"trace must be the path of a CSV file, got {path!r}")
    path = Path(path)
    if path.is_dir():
        raise ConfigError(
            f"trace file {str(path)!r} does not exist as a file: it is a directory (give the path of a CSV file)"
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
    allowed = f"trace {str(path)!r} must be a UTF-8 CSV file of (prompt, output) lengths"
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


def _parse_length(text: str, what: str) -> int:
    t = text.strip()
    try:
        x = float(t)
    except ValueError:
        raise ConfigError(f"{what} must be an integer >= 1, got {t!r}") from None
    if not math.isfinite(x) or x != math.floor(x) or x < 1 or x > 2**24:
        raise ConfigError(f"{what} must be an integer in [1, 2^24], got {t!r}")
    return int(x)
