"""Resumed sweeps of every engine with sweeps beyond dp (kv, offline, interval, budget,
network): after a SIGKILL and from a damaged results file.

Each engine sweeps a policy axis and a load or size axis (two policies, three values: six
points in two buckets of three). A sweep killed with SIGKILL once its first bucket's rows are
written resumes into the same file: the rows written before the kill stay byte for byte, every
point ends with exactly one row, and the recomputed rows equal those of an uninterrupted sweep
in every column but `wall_s` and `row_sha`. A file damaged after it was written (its last row
cut short or overrun by NUL bytes, a metric edited, NUL bytes after its last row) resumes with
one stderr line, the damaged text in `<out>.damaged`, only the damaged row's point computed
again, and otherwise the uninterrupted sweep's file. tests/core/test_sweep.py and
tests/core/test_results_safety.py hold the same checks for dp.
"""

from __future__ import annotations

import csv
import io
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from jaxsched.budget import BudgetConfig
from jaxsched.interval import IntervalConfig
from jaxsched.kv import KVConfig
from jaxsched.network import NetworkConfig
from jaxsched.offline import OfflineConfig
from jaxsched.results import ROW_SHA, code_sha, damaged_path, row_sha, scan_rows
from jaxsched.sweep import run_sweep
from tests.core.test_results_safety import _numbers, _records

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [0, 1]

# engine -> (base config, axes, params shared by every point). Two policies times three
# values of a load (rates) or size (num_requests, padded into one bucket) axis; the
# sizes keep each point well under a second once compiled.
CASES: dict[str, Callable[[], tuple]] = {
    "kv": lambda: (
        KVConfig(num_requests=120, table_size=256),
        {"policy": ["wait", "fcfs"], "rates": [(150.0, 150.0), (250.0, 250.0), (350.0, 350.0)]},
        {},
    ),
    "offline": lambda: (
        OfflineConfig("uniform", num_requests=60),
        {"policy": ["mcsf", "fcfs"], "num_requests": [60, 80, 100]},
        {},
    ),
    "interval": lambda: (
        IntervalConfig("lmsys", num_requests=60),
        {"policy": ["hsf", "amax"], "num_requests": [60, 80, 100]},
        {},
    ),
    "budget": lambda: (
        BudgetConfig(horizon_s=5.0, table_size=64),
        {"policy": ["sarathi", "vllm"], "rates": [(2.0,), (4.0,), (6.0,)]},
        {},
    ),
    "network": lambda: (
        NetworkConfig(horizon_s=5.0, table_size=64),
        {"policy": ["sarathi", "vllm"], "rates": [(1.0,), (2.0,), (3.0,)]},
        {},
    ),
}
ENGINES = list(CASES)
POINTS = 6


def sweep(engine: str, out: str | Path, **kw) -> Path:
    """Run (or resume) `engine`'s sweep of CASES into `out` (also the killed subprocess's job)."""
    base, axes, params = CASES[engine]()
    return run_sweep(base, axes, SEEDS, out, params=params, progress=False, **kw)


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Callable[[str], str]:
    """engine -> the text of its sweep's results file, run once, uninterrupted, undamaged."""
    done: dict[str, str] = {}

    def get(engine: str) -> str:
        if engine not in done:
            out = sweep(engine, tmp_path_factory.mktemp(f"pristine_{engine}") / "s.csv")
            done[engine] = out.read_bytes().decode()
            header, rows, damaged = scan_rows(done[engine])
            assert len(rows) == POINTS and damaged == [] and len({r["point"] for r in rows}) == POINTS
        return done[engine]

    return get


def _check_same_as(final: str, pristine: str) -> list[dict]:
    """Every point of the pristine file has exactly one row in `final`, equal but for wall_s
    and row_sha, with a valid checksum; returns final's rows."""
    rows, want = _rows(final), _rows(pristine)
    assert len(rows) == len(want) == POINTS
    assert sorted(r["point"] for r in rows) == sorted(r["point"] for r in want)
    assert _numbers(rows) == _numbers(want)
    assert all(r[ROW_SHA] == row_sha(r) for r in rows)
    return rows


# ------------------------------------------------------------------------------- SIGKILL


@pytest.mark.parametrize("engine", ENGINES)
def test_resume_after_sigkill(engine, pristine, tmp_path):
    want = pristine(engine)
    out, err = tmp_path / "k.csv", tmp_path / "err.txt"
    script = f"from tests.core.test_resume_engines import sweep\nsweep({engine!r}, {str(out)!r})\n"
    with err.open("wb") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=err_file, stderr=err_file)
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if out.exists() and scan_rows(out.read_bytes().decode())[1]:
                    break
                time.sleep(0.02)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    killed = out.read_bytes().decode() if out.exists() else ""
    n_killed = len(scan_rows(killed)[1])
    assert 1 <= n_killed < POINTS, (n_killed, proc.returncode, err.read_text()[-2000:])
    # Rows of other code never resume (their key differs): the test needs one revision throughout.
    assert {r["code"] for r in _rows(killed)} == {code_sha()}, "jaxsched's source changed while the test ran"

    ran: list[str] = []
    sweep(engine, out, on_point=lambda n, row: ran.append(row["point"]))
    final = out.read_bytes().decode()
    # The rows written before the kill are kept byte for byte, at the top.
    assert _records(final)[: len(_records(killed))] == _records(killed)
    rows = _check_same_as(final, want)
    assert len(ran) == POINTS - n_killed and set(ran) == {r["point"] for r in rows[n_killed:]}
    assert not damaged_path(out).exists()  # a kill never tears a row
    assert not list(tmp_path.glob(".k.csv.*"))  # no temporary file left behind


# --------------------------------------------------------------------------- damaged files


def _csv_line(cells: list[str]) -> str:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerow(cells)
    return buf.getvalue()


def _damage(kind: str, text: str) -> tuple[bytes, set[int], str, bytes]:
    """(damaged file, indexes of the damaged lines, the reason resume names, the damaged
    text as the side file holds it)."""
    lines = _records(text)
    if kind == "cut":  # the last row cut in half: no line end
        cut = lines[-1][: len(lines[-1]) // 2]
        return ("".join(lines[:-1]) + cut).encode(), {len(lines) - 1}, "cut short at the end of the file", cut.encode()
    if kind == "nul tail":  # the file's last block never written: the last row runs into NULs
        data = text.encode()[:-40] + b"\0" * 4096
        return data, {len(lines) - 1}, "NUL bytes", lines[-1][:-40].encode() + b"\0" * 4096
    if kind == "nul appended":  # NUL bytes after whole rows: nothing to compute again
        return text.encode() + b"\0" * 4096, set(), "NUL bytes", b"\0" * 4096
    assert kind == "edited"  # one metric cell of the first row changed
    header = next(csv.reader([lines[0]]))
    cells = next(csv.reader([lines[1]]))
    col = next(i for i, c in enumerate(header) if c.endswith("_mean") and float(cells[i]) == float(cells[i]))
    assert _csv_line(cells) == lines[1]  # the row reads and writes back as it was
    cells[col] = repr(2 * float(cells[col]) + 1)
    edited = _csv_line(cells)
    return (lines[0] + edited + "".join(lines[2:])).encode(), {1}, "checksum mismatch", edited.encode()


@pytest.mark.parametrize("kind", ["cut", "nul tail", "nul appended", "edited"])
@pytest.mark.parametrize("engine", ENGINES)
def test_damaged_file_resumes(engine, kind, pristine, tmp_path, capsys):
    want = pristine(engine)
    data, hit, reason, moved = _damage(kind, want)
    out = tmp_path / "s.csv"
    out.write_bytes(data)
    capsys.readouterr()
    ran: list[str] = []
    sweep(engine, out, on_point=lambda n, row: ran.append(row["point"]))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 damaged row(s)" in err[0] and reason in err[0], err
    assert str(damaged_path(out)) in err[0]
    assert moved.rstrip(b"\r\n") in damaged_path(out).read_bytes()
    final = out.read_bytes().decode()
    lines = _records(want)
    # Only the damaged row's point ran again; the whole rows stay byte for byte, in order,
    # and the recomputed row follows them.
    assert ran == [_rows(lines[0] + lines[i])[0]["point"] for i in sorted(hit)]
    kept = [line for i, line in enumerate(lines) if i not in hit]
    assert _records(final)[: len(kept)] == kept and len(_records(final)) == len(lines)
    _check_same_as(final, want)
    if not hit:
        assert final == want
    capsys.readouterr()
    sweep(engine, out, on_point=lambda n, row: pytest.fail("a whole file ran a point again"))
    assert capsys.readouterr().err == "" and out.read_bytes().decode() == final
