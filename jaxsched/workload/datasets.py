"""Published request traces by name: where each is published, and the user's data folder.

`TRACES` lists the traces `jaxsched data list` shows and `jaxsched data get NAME` downloads
(docs/traces.md, "Getting the data"): each entry's public URL, licence, the layout
`read_trace` reads it as, and the file name it has in the data folder. The data folder is
`--dir` on the command line, else `$JAXSCHED_DATA`, else `$XDG_DATA_HOME/jaxsched`, else
`~/.local/share/jaxsched`. `resolve_trace(path_or_name)` is how every reader of a trace finds
it: an existing path is itself, a known name is its file in the data folder.

`download(name)` fetches an entry with urllib into a temporary file in the data folder (renamed
into place only when complete and verified), printing a progress line, and records the file's
SHA-256 in `manifest.json` beside it. A checksum is listed in `TRACES` only where it is known;
none is yet, so the first download records what it computed, and a listed checksum that the
download does not match is refused.
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from ..errors import ConfigError
from ..outputs import file_mode

DATA_ENV = "JAXSCHED_DATA"
MANIFEST = "manifest.json"
# Bytes read per chunk while downloading (and hashing).
CHUNK = 1 << 20
# Seconds a download waits for the server before giving up.
TIMEOUT_S = 60.0

AZURE_RAW = "https://github.com/Azure/AzurePublicDataset/raw/master/data"
AZURE_BLOB = "https://azurepublicdatasettraces.blob.core.windows.net/azurellminfererencetrace"
BURSTGPT_RELEASE = "https://github.com/HPMLL/BurstGPT/releases/download/v1.1"
MOONCAKE_RAW = "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/FAST25-release/traces"
AZURE_LICENCE = "CC-BY 4.0"
MOONCAKE_LICENCE = "Apache-2.0 (repository; see the source for the traces)"


@dataclass(frozen=True)
class Dataset:
    """One published trace.

    name: the name `jaxsched data get` and every `--trace` take. filename: its file in the data
    folder (the published name, so a file put there by hand is found). url: where it is
    published (https, or file:// for a local copy). format: the `read_trace` layout
    (`jaxsched.workload.formats`). licence, source: its licence and the page describing it.
    what: one line on its contents. size_bytes: the download's size, None if unknown.
    sha256: the download's SHA-256 (hex), None if unknown. gzip: the download is gzip-compressed
    and is stored decompressed (its checksum is the compressed download's).
    """

    name: str
    filename: str
    url: str
    format: str
    licence: str
    source: str
    what: str
    size_bytes: int | None = None
    sha256: str | None = None
    gzip: bool = False


def _azure(name: str, file: str, base: str, page: str, what: str, fmt: str = "azure", gz: bool = False) -> Dataset:
    """An entry of the Azure Public Dataset (its `page` describes it)."""
    source = f"https://github.com/Azure/AzurePublicDataset/blob/master/{page}"
    stored = file[: -len(".gz")] if gz else file
    return Dataset(name, stored, f"{base}/{file}", fmt, AZURE_LICENCE, source, what, gzip=gz)


def _burstgpt(k: int) -> Dataset:
    """BurstGPT's file k without failed requests (the files with fails hold zero-length
    responses, which `read_trace` refuses)."""
    file = f"BurstGPT_without_fails_{k}.csv"
    what = f"BurstGPT (Azure OpenAI GPT service), part {k}, failed requests removed"
    return Dataset(
        f"burstgpt_{k}",
        file,
        f"{BURSTGPT_RELEASE}/{file}",
        "burstgpt",
        "CC-BY 4.0",
        "https://github.com/HPMLL/BurstGPT",
        what,
    )


def _mooncake(kind: str) -> Dataset:
    """Mooncake's FAST'25 trace `kind` (JSON Lines with prompt block hashes)."""
    file = f"{kind}_trace.jsonl"
    source = "https://github.com/kvcache-ai/Mooncake/tree/main/FAST25-release"
    what = f"Mooncake (Kimi) FAST'25 {kind} trace, with prompt block hashes"
    return Dataset(f"mooncake_{kind}", file, f"{MOONCAKE_RAW}/{file}", "mooncake", MOONCAKE_LICENCE, source, what)


TRACES: dict[str, Dataset] = {
    d.name: d
    for d in (
        _burstgpt(1),
        _burstgpt(2),
        _azure(
            "azure_2023_code",
            "AzureLLMInferenceTrace_code.csv",
            AZURE_RAW,
            "AzureLLMInferenceDataset2023.md",
            "Azure LLM inference 2023 (Splitwise), code service, one hour",
        ),
        _azure(
            "azure_2023_conv",
            "AzureLLMInferenceTrace_conv.csv",
            AZURE_RAW,
            "AzureLLMInferenceDataset2023.md",
            "Azure LLM inference 2023 (Splitwise), conversation service, one hour",
        ),
        _azure(
            "azure_2024_code",
            "AzureLLMInferenceTrace_code_1week.csv",
            AZURE_BLOB,
            "AzureLLMInferenceDataset2024.md",
            "Azure LLM inference 2024 (DynamoLLM), code service, one week",
        ),
        _azure(
            "azure_2024_conv",
            "AzureLLMInferenceTrace_conv_1week.csv",
            AZURE_BLOB,
            "AzureLLMInferenceDataset2024.md",
            "Azure LLM inference 2024 (DynamoLLM), conversation service, one week",
        ),
        _azure(
            "azure_lmm_2025",
            "AzureLMMInferenceTrace_multimodal.csv.gz",
            AZURE_RAW,
            "AzureLMMInferenceDataset2025.md",
            "Azure LMM (multimodal) inference 2025 (ModServe), with images per request",
            fmt="azure_lmm",
            gz=True,
        ),
        _mooncake("conversation"),
        _mooncake("toolagent"),
        _mooncake("synthetic"),
    )
}


def dataset(name: str) -> Dataset:
    """The entry `name` of TRACES; one ConfigError naming the known names otherwise."""
    if not isinstance(name, str) or name not in TRACES:
        raise ConfigError(f"trace name (NAME) must be one of {', '.join(TRACES)} (`jaxsched data list`), got {name!r}")
    return TRACES[name]


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The data folder: `override` (the `--dir` option), else $JAXSCHED_DATA, else
    $XDG_DATA_HOME/jaxsched, else ~/.local/share/jaxsched. Empty variables count as unset."""
    if override is not None and str(override).strip():
        return Path(override).expanduser()
    if os.environ.get(DATA_ENV, "").strip():
        return Path(os.environ[DATA_ENV]).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "jaxsched"


def local_path(name: str, folder: str | os.PathLike | None = None) -> Path:
    """Where trace `name` lies (or would lie) in the data folder."""
    return data_dir(folder) / dataset(name).filename


def resolve_trace(path_or_name: str | os.PathLike) -> Path:
    """The file a trace argument names: an existing path is itself; otherwise a name of
    TRACES is its file in the data folder. Anything else is returned as a path (the reader
    then reports it missing). A known name whose file is absent raises one ConfigError
    saying `jaxsched data get NAME`."""
    path = Path(path_or_name)
    text = str(path_or_name)
    if path.exists() or text not in TRACES:
        return path
    found = local_path(text)
    if not found.is_file():
        raise ConfigError(
            f"trace {text!r} is a known trace but is not in the data folder {found.parent}: "
            f"run `jaxsched data get {text}` (or put {found.name} there by hand from {TRACES[text].url})"
        )
    return found


def read_manifest(folder: str | os.PathLike | None = None) -> dict[str, dict]:
    """The data folder's manifest: {name: {file, url, sha256, bytes, downloaded}}; {} if none."""
    path = data_dir(folder) / MANIFEST
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"the data manifest {path} cannot be read ({e}); remove it to start a new one") from None
    return data if isinstance(data, dict) else {}


def _write_manifest(folder: Path, entries: dict[str, dict]) -> Path:
    """Write the manifest atomically (a reader never sees half a file)."""
    path = folder / MANIFEST
    fd, tmp = tempfile.mkstemp(prefix=f".{MANIFEST}.", suffix=".part", dir=folder)
    with os.fdopen(fd, "w") as f:
        json.dump(entries, f, indent=2, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, file_mode())  # mkstemp's files are owner-only; give the umask's bits
    os.replace(tmp, path)
    return path


def _progress_printer(stream: IO[str], name: str) -> Callable[[int, int | None, bool], None]:
    """A function (bytes so far, total bytes or None, finished) printing one progress line:
    redrawn in place on a terminal, printed once at the end otherwise (a log should not fill
    with updates)."""
    tty = stream.isatty()

    def show(done_bytes: int, total: int | None, finished: bool) -> None:
        if not (tty or finished):
            return
        mb = done_bytes / 1e6
        of = f" of {total / 1e6:.1f} MB ({100 * done_bytes / total:.0f}%)" if total else " MB"
        start, end = ("\r" if tty else ""), ("\n" if finished else "")
        stream.write(f"{start}{name}: {mb:.1f}{of}{end}")
        stream.flush()

    return show


def _fetch(entry: Dataset, dest: IO[bytes], target: Path, show: Callable[[int, int | None, bool], None]) -> str:
    """Stream `entry.url` into `dest`; the hex SHA-256 of what was read. Network failures
    raise one ConfigError saying the machine looks offline and that the file goes at `target`
    by hand."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(entry.url, timeout=TIMEOUT_S) as r:
            length = r.headers.get("Content-Length")
            total = entry.size_bytes or (int(length) if length and length.isdigit() else None)
            n = 0
            while chunk := r.read(CHUNK):
                digest.update(chunk)
                dest.write(chunk)
                n += len(chunk)
                show(n, total, False)
            show(n, total, True)
    except urllib.error.HTTPError as e:
        raise ConfigError(f"cannot download {entry.name}: {entry.url} answered HTTP {e.code} ({e.reason})") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        how = "decompress it and put it" if entry.gzip else "put it"
        raise ConfigError(
            f"cannot download {entry.name}: this machine is offline or cannot reach {entry.url} ({reason}); "
            f"download it elsewhere and {how} at {target}"
        ) from None
    return digest.hexdigest()


def download(
    name: str,
    folder: str | os.PathLike | None = None,
    *,
    force: bool = False,
    sha256: str | None = None,
    progress: bool = True,
) -> tuple[Path, str]:
    """Download trace `name` into the data folder; (its path, the download's SHA-256).

    The file arrives in a temporary file beside its final place and is renamed there only when
    complete and verified, so an interrupted download leaves no partial trace. sha256: the
    expected checksum (default the entry's; None: unknown, so only recorded). A mismatch
    deletes the download and raises ConfigError. An existing file is kept unless `force`.
    progress: print a progress line to stderr."""
    entry = dataset(name)
    target = local_path(name, folder)
    expected = check_sha256(sha256) or entry.sha256
    if target.exists() and not force:
        raise ConfigError(f"{name} is already in the data folder at {target} (give --force to download it again)")
    target.parent.mkdir(parents=True, exist_ok=True)
    show = _progress_printer(sys.stderr, name) if progress else lambda n, t, f: None
    fd, tmp = tempfile.mkstemp(prefix=f".{entry.filename}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            got = _fetch(entry, f, target, show)
        if expected is not None and got != expected:
            raise ConfigError(
                f"{name}: the download's SHA-256 is {got}, but the expected checksum is {expected}; "
                f"the file was not kept (the source changed or the download is corrupt)"
            )
        if entry.gzip:
            _gunzip(Path(tmp), target)
        else:
            os.chmod(tmp, file_mode())  # mkstemp's files are owner-only; give the umask's bits
            os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    _record(target.parent, entry, target, got)
    return target, got


def check_sha256(sha256: str | None) -> str | None:
    """An expected checksum as lower-case hex; ConfigError unless 64 hexadecimal digits."""
    if sha256 is None:
        return None
    text = str(sha256).strip().lower()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ConfigError(f"sha256 (--sha256) must be 64 hexadecimal digits, got {sha256!r}")
    return text


def _gunzip(archive: Path, target: Path) -> None:
    """Decompress `archive` into `target` through a temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with gzip.open(archive, "rb") as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK)
        os.chmod(tmp, file_mode())
        os.replace(tmp, target)
    except (OSError, EOFError) as e:
        raise ConfigError(f"{target.name}: the download is not a valid gzip file ({e})") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def _record(folder: Path, entry: Dataset, target: Path, sha: str) -> Path:
    """Add the download to the folder's manifest."""
    entries = read_manifest(folder)
    entries[entry.name] = {
        "file": target.name,
        "url": entry.url,
        "sha256": sha,
        "bytes": target.stat().st_size,
        "downloaded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return _write_manifest(folder, entries)


__all__ = [
    "DATA_ENV",
    "MANIFEST",
    "TRACES",
    "Dataset",
    "data_dir",
    "dataset",
    "download",
    "local_path",
    "check_sha256",
    "read_manifest",
    "resolve_trace",
]
