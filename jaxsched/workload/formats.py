"""The request-trace file formats `read_trace` knows: their columns, units and detection.

Each `TraceFormat` names the header (or JSON key) of its prompt-length, output-length and
arrival-time fields, the time's unit, an optional per-row count kept on the trace
(`NumImages`) and where the trace is published; docs/traces.md lists them. Detection is by
the CSV header (the first format in `FORMATS` whose columns the header has: the most
specific first, so Azure's multimodal layout wins over the text layout it extends) or, for
JSON Lines, by the file's extension or its first character. `read_trace(..., format=NAME)`
skips detection. This module only describes the formats; `traces.py` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

# Units of an arrival-time field: seconds, milliseconds, or ISO date-times (numbers in a
# date-time column are read as seconds).
TIME_UNITS = ("s", "ms", "datetime")
# File kinds: comma-separated values with a header, or one JSON object per line.
KINDS = ("csv", "jsonl")


@dataclass(frozen=True)
class TraceFormat:
    """One trace layout.

    name: the `format=` name. prompt, output: the header names (JSON keys) of the prompt and
    output lengths (tokens, integers >= 1). time: the arrival-time field (None: a lengths-only
    layout), in `time_unit` ("s", "ms" or "datetime"). count: a per-row count kept on the
    trace (Azure's `NumImages`, integers >= 0), None if none. hashes: a JSON key holding a list
    of integer block hashes per row (Mooncake's `hash_ids`), None if none. kind: "csv" or
    "jsonl". source: where the trace is published.
    """

    name: str
    prompt: str
    output: str
    time: str | None
    time_unit: str
    kind: str = "csv"
    count: str | None = None
    hashes: str | None = None
    source: str = ""

    def columns(self) -> tuple[str, ...]:
        """The header names detection requires: the lengths and any count (not the time,
        which only `times=True` needs, nor the hashes, which are optional)."""
        return (self.prompt, self.output) + ((self.count,) if self.count else ())


AZURE = "https://github.com/Azure/AzurePublicDataset"
# Detection order: a layout whose columns contain another's comes first.
FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat(
        "azure_lmm", "ContextTokens", "GeneratedTokens", "TIMESTAMP", "datetime", count="NumImages", source=AZURE
    ),
    TraceFormat("azure", "ContextTokens", "GeneratedTokens", "TIMESTAMP", "datetime", source=AZURE),
    TraceFormat(
        "burstgpt", "Request tokens", "Response tokens", "Timestamp", "s", source="https://github.com/HPMLL/BurstGPT"
    ),
    TraceFormat(
        "burstgpt_sample", "input_tokens", "output_tokens", None, "s", source="https://github.com/HPMLL/BurstGPT"
    ),
    TraceFormat(
        "vidur",
        "num_prefill_tokens",
        "num_decode_tokens",
        "arrived_at",
        "s",
        source="https://github.com/microsoft/vidur",
    ),
    TraceFormat(
        "splitwise",
        "prompt_size",
        "token_size",
        "arrival_timestamp",
        "s",
        source="https://github.com/Mutinifni/splitwise-sim",
    ),
    TraceFormat(
        "mooncake",
        "input_length",
        "output_length",
        "timestamp",
        "ms",
        kind="jsonl",
        hashes="hash_ids",
        source="https://github.com/kvcache-ai/Mooncake",
    ),
)
# A headerless or plainly headed two-column CSV (prompt, output): no format of its own.
PLAIN = "plain"
FORMAT_NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS) + (PLAIN,)
# Arrival-time columns looked for in a plain file or one read with `columns=` (Azure's
# TIMESTAMP, BurstGPT's Timestamp).
GENERIC_TIME_COLUMNS = ("TIMESTAMP", "Timestamp")
JSONL_SUFFIXES = (".jsonl", ".ndjson")

# The header names a plain two-column file may give its (prompt, output) columns, compared by
# `column_key`. Any other name is an error unless `columns` names it: a file headed
# `input_tokens,foo` must not have `foo` read as output lengths.
PROMPT_NAMES = (
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
OUTPUT_NAMES = (
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


def column_key(name: str) -> str:
    """A header name compared case-insensitively, spaces and hyphens read as underscores."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def format_named(name: str) -> TraceFormat | None:
    """The format called `name` (None for "plain"); ConfigError naming `format` otherwise."""
    if not isinstance(name, str) or name not in FORMAT_NAMES:
        raise ConfigError(
            f"format (--trace-format on the command line) must be None (detect) or one of {FORMAT_NAMES}, got {name!r}"
        )
    return next((f for f in FORMATS if f.name == name), None)


def detect_csv(header: list[str]) -> TraceFormat | None:
    """The first CSV format whose columns `header` has (None: none; a plain file or an error)."""
    return next((f for f in FORMATS if f.kind == "csv" and all(c in header for c in f.columns())), None)


def nearest_csv(header: list[str]) -> TraceFormat | None:
    """The CSV format sharing the most fields (time included) with a header that matches none,
    for an error's hint (ties: the smaller layout); None when it shares none."""
    scored = [
        (sum(c in header for c in (*f.columns(), f.time) if c), -len(f.columns()), i)
        for i, f in enumerate(FORMATS)
        if f.kind == "csv"
    ]
    best = max(scored)
    return FORMATS[best[2]] if best[0] > 0 else None


def looks_jsonl(path: Path, text: str) -> bool:
    """Whether a file is JSON Lines: a .jsonl/.ndjson name, or a first non-blank character `{`
    (which never starts a CSV trace's header or data)."""
    return path.suffix.lower() in JSONL_SUFFIXES or text.lstrip().startswith("{")


def jsonl_format() -> TraceFormat:
    """The one JSON Lines format (Mooncake's)."""
    return next(f for f in FORMATS if f.kind == "jsonl")
