"""Results that cannot be damaged or misread.

- Resume finds damaged rows: every row of a resumable file carries `row_sha`, a checksum of its
  other cells; a row cut short (the last one or one before it), NUL-filled, edited or written
  under another header is named in one stderr line, appended to `<file>.damaged` and computed
  again, never counted as finished. Rows of files from before the checksum are trusted only
  when they are whole.
- A sweep resumed into a file that holds rows of other settings draws its progress bar to the
  end (a count past the bar's total used to crash tqdm's formatting).
- Outputs are regular files or new paths, and no two outputs are one file: device nodes,
  FIFOs, directories and a path given twice are one ConfigError line before any work.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from pathlib import Path

import pytest

from jaxsched.cli import main
from jaxsched.dp import DPConfig
from jaxsched.errors import ConfigError
from jaxsched.outputs import check_output_paths
from jaxsched.progress import Progress
from jaxsched.results import ROW_SHA, ResultsFile, damaged_path, row_sha, scan_rows, write_csv
from jaxsched.sweep import run_sweep

BASE = DPConfig(num_workers=2, slots_per_worker=4, pool_size=4, num_steps=30, policy="fcfs")
AXES = {"num_workers": [2, 3, 4]}
SEEDS = [0, 1]
METRIC = "avg_imbalance_tokens_mean"


def _sweep(out: Path) -> Path:
    return run_sweep(BASE, AXES, SEEDS, out, progress=False)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> str:
    """The text of an undamaged three-point results file."""
    out = tmp_path_factory.mktemp("pristine") / "s.csv"
    _sweep(out)
    return out.read_bytes().decode()


def _records(text: str) -> list[str]:
    """The file's lines, each with its line end (the csv module ends rows with CRLF)."""
    return text.splitlines(keepends=True)


def _numbers(rows: list[dict]) -> dict[str, dict]:
    """{key: row without the cells that differ between two computations of one point}."""
    return {r["key"]: {k: v for k, v in r.items() if k not in ("wall_s", ROW_SHA)} for r in rows}


def _resume(out: Path, capsys) -> tuple[list[dict], list[str]]:
    """Resume the sweep into `out`; (its rows, the stderr lines)."""
    capsys.readouterr()
    _sweep(out)
    rows = list(csv.DictReader(out.open(newline="")))
    return rows, capsys.readouterr().err.strip().splitlines()


def _check_recovered(out: Path, pristine: str, damaged: list[str], capsys) -> list[dict]:
    """Resume the damaged `out`: one stderr line, the damaged text in the side file, and every
    point back with the numbers of the undamaged file and a valid checksum."""
    rows, err = _resume(out, capsys)
    assert len(err) == 1 and "damaged row(s)" in err[0] and str(damaged_path(out)) in err[0], err
    side = damaged_path(out).read_bytes().decode()
    for text in damaged:
        assert text.rstrip("\r\n") in side
    want = list(csv.DictReader(io.StringIO(pristine, newline="")))
    assert _numbers(rows) == _numbers(want) and len(rows) == len(want)
    assert all(r[ROW_SHA] == row_sha(r) for r in rows)
    _, err = _resume(out, capsys)  # now whole: nothing to report, nothing to run
    assert err == []
    return rows


# ------------------------------------------------------------------------------ damage on resume


def test_rows_carry_a_checksum_of_their_other_cells(pristine):
    header, rows, damaged = scan_rows(pristine)
    assert header[0] == "key" and ROW_SHA in header and len(rows) == 3 and damaged == []
    assert all(len(r[ROW_SHA]) == 16 and r[ROW_SHA] == row_sha(r) for r in rows)


def test_last_row_cut_in_half(pristine, tmp_path, capsys):
    lines = _records(pristine)
    cut = lines[-1][: len(lines[-1]) // 2]
    out = tmp_path / "s.csv"
    out.write_text("".join(lines[:-1]) + cut, newline="")
    _check_recovered(out, pristine, [cut], capsys)


def test_second_to_last_row_cut(pristine, tmp_path, capsys):
    lines = _records(pristine)
    cut = lines[-2][: len(lines[-2]) // 2] + "\r\n"
    out = tmp_path / "s.csv"
    out.write_text("".join(lines[:-2]) + cut + lines[-1], newline="")
    rows = _check_recovered(out, pristine, [cut], capsys)
    # Only the cut row ran again: the whole last row was kept where it was.
    assert rows[1]["key"] == list(csv.DictReader(io.StringIO(pristine, newline="")))[2]["key"]


@pytest.mark.parametrize("how", ["tail overwritten", "tail appended", "whole file"])
def test_nul_bytes(how, pristine, tmp_path, capsys):
    data = pristine.encode()
    if how == "tail overwritten":  # a crash left the file's last blocks unwritten
        data = data[:-64] + b"\0" * 64
    elif how == "tail appended":
        data += b"\0" * 4096
    else:
        data = b"\0" * len(data)
    out = tmp_path / "s.csv"
    out.write_bytes(data)
    rows, err = _resume(out, capsys)
    assert len(err) == 1 and "NUL bytes" in err[0], err
    assert b"\0" * 64 in damaged_path(out).read_bytes()
    want = list(csv.DictReader(io.StringIO(pristine, newline="")))
    assert _numbers(rows) == _numbers(want) and b"\0" not in out.read_bytes()


def test_row_from_a_different_header(pristine, tmp_path, capsys):
    """The last row as another file would hold it: two columns in the other order, with a
    checksum valid under that file's header; under this header its cells are misread."""
    header, rows, _ = scan_rows(pristine)
    other = list(header)
    i, j = other.index(METRIC), other.index("avg_imbalance_tokens_std")
    other[i], other[j] = other[j], other[i]
    row = dict(rows[-1])
    row[ROW_SHA] = row_sha({k: row[k] for k in other})
    foreign = io.StringIO(newline="")
    csv.writer(foreign).writerow([row[k] for k in other])
    lines = _records(pristine)
    out = tmp_path / "s.csv"
    out.write_text("".join(lines[:-1]) + foreign.getvalue(), newline="")
    _check_recovered(out, pristine, [foreign.getvalue()], capsys)


def test_row_from_a_file_with_other_columns(pristine, tmp_path, capsys):
    lines = _records(pristine)
    pasted = "k1,fcfs,2,0.5,0.25\r\n"
    out = tmp_path / "s.csv"
    out.write_text("".join(lines[:2]) + pasted + "".join(lines[2:]), newline="")
    rows, err = _resume(out, capsys)
    assert len(err) == 1 and "5 cells under a header of" in err[0], err
    assert len(rows) == 3 and pasted.strip() in damaged_path(out).read_text()


def test_row_with_an_edited_metric(pristine, tmp_path, capsys):
    header, rows, _ = scan_rows(pristine)
    lines = _records(pristine)
    old = rows[1][METRIC]
    assert lines[2].count(old) == 1
    edited = lines[2].replace(old, "1.0")
    out = tmp_path / "s.csv"
    out.write_text(lines[0] + lines[1] + edited + lines[3], newline="")
    rows_after = _check_recovered(out, pristine, [edited], capsys)
    assert {r[METRIC] for r in rows_after} == {r[METRIC] for r in rows}


def test_the_side_file_is_appended_never_overwritten(pristine, tmp_path, capsys):
    out = tmp_path / "s.csv"
    lines = _records(pristine)
    first = lines[-1][:20]
    out.write_text("".join(lines[:-1]) + first, newline="")
    _resume(out, capsys)
    second = out.read_bytes().decode()[:-30]  # the recomputed last row, cut
    out.write_text(second, newline="")
    _resume(out, capsys)
    side = damaged_path(out).read_text()
    assert first in side and _records(second)[-1] in side and side.count("# ") == 2


def test_files_without_the_checksum_column(pristine, tmp_path, capsys):
    """Rows written before `row_sha` existed are trusted when whole: every cell of the
    header, a line end, no NUL. A cut one is damaged like any other."""
    rows = list(csv.DictReader(io.StringIO(pristine, newline="")))
    out = tmp_path / "old.csv"
    write_csv(out, [{k: v for k, v in r.items() if k != ROW_SHA} for r in rows])
    text = out.read_bytes().decode()
    after, err = _resume(out, capsys)
    assert err == [] and len(after) == 3 and not damaged_path(out).exists()
    assert ROW_SHA not in after[0]  # nothing ran, so the file is as it was
    lines = _records(text)
    out.write_text("".join(lines[:-1]) + lines[-1][:40], newline="")
    after, err = _resume(out, capsys)
    assert len(err) == 1 and "cut short" in err[0] and len(after) == 3
    # The recomputed row has its checksum; the old rows stay unverified, never blessed.
    assert [r[ROW_SHA] != "" for r in after] == [False, False, True]


def test_results_file_unit(tmp_path, capsys):
    path = tmp_path / "r.csv"
    f = ResultsFile(path, "key")
    f.append({"key": "a", "x": 1.5, ROW_SHA: "stale"})  # a caller's checksum is recomputed
    f.append({"key": "b", "x": None, "y": "z"})
    path.write_bytes(path.read_bytes().replace(b"1.5", b"2.5"))
    again = ResultsFile(path, "key")
    assert again.done == {"b"} and "1 damaged row(s)" in capsys.readouterr().err
    again.append({"key": "a", "x": 1.5})
    assert [r["key"] for r in scan_rows(path.read_text())[1]] == ["b", "a"]


# ------------------------------------------------------------------ resumed sweep, progress bar


def test_a_progress_count_past_its_total_draws_instead_of_crashing():
    out = io.StringIO()
    bar = Progress("points", 1, stream=out)
    bar.update(0)
    bar.update(2, "more than declared")
    bar.close()
    assert "2/2" in out.getvalue() and "100%" in out.getvalue()
    bar = Progress("points", float("inf"), stream=out)
    bar.update(1)
    bar.close()


SWEEP = ["sweep", "--axis", "policy=fcfs", "--set", "slots_per_worker=4", "--set", "pool_size=4", "--seeds", "2"]


def test_sweep_resumed_into_a_file_of_other_settings_draws_its_bar(tmp_path, capsys):
    """Progress on (no --quiet): rows of another --steps in the file, then some points of
    this grid done and some not, then all done."""
    out = tmp_path / "s.csv"
    for workers, steps in (("2", "30"), ("2,3", "80"), ("2,3,4", "80"), ("2,3,4", "80")):
        assert main([*SWEEP, "--axis", f"num_workers={workers}", "--steps", steps, "--out", str(out)]) == 0
    assert "sweep, points" in capsys.readouterr().err
    rows = list(csv.DictReader(out.open(newline="")))
    assert [(r["num_workers"], r["num_steps"]) for r in rows] == [("2", "30"), ("2", "80"), ("3", "80"), ("4", "80")]
    assert len({r["key"] for r in rows}) == 4


# -------------------------------------------------------------------------------- output paths


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command gets as far as running anything."""
    import jaxsched.dp.experiments as ex
    import jaxsched.sweep as sw

    monkeypatch.setattr(sw, "run_sweep", lambda *a, **k: pytest.fail("ran before the check"))
    monkeypatch.setattr(ex, "run_policies", lambda *a, **k: pytest.fail("ran before the check"))


RUN = ["run", "--G", "2", "--B", "4", "--R", "4", "--steps", "40", "--seeds", "2", "--quiet", "--policies", "fcfs"]


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxsched: error: "), err
    return err[0]


def test_a_fifo_is_refused(tmp_path, capsys, no_work):
    fifo = tmp_path / "s.csv"
    os.mkfifo(fifo)
    assert main([*SWEEP, "--out", str(fifo)]) == 2
    assert "--out must be a regular file or a new path, got the FIFO" in _one_error(capsys)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it was
    assert not (tmp_path / "s.config.toml").exists()


def test_a_fifo_plot_is_refused(tmp_path, capsys, no_work):
    fifo = tmp_path / "loads.png"
    os.mkfifo(fifo)
    assert main([*RUN, "--out", str(tmp_path / "r.csv"), "--plot", str(fifo)]) == 2
    assert "--plot must be a regular file or a new path, got the FIFO" in _one_error(capsys)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_directory_is_refused(tmp_path, capsys, no_work):
    assert main([*SWEEP, "--out", str(tmp_path)]) == 2
    assert "--out must be a file path, got the directory" in _one_error(capsys)
    (tmp_path / "s.config.toml").mkdir()  # where the options would go
    assert main([*SWEEP, "--out", str(tmp_path / "s.csv")]) == 2
    assert "--out's options file must be a file path, got the directory" in _one_error(capsys)
    (tmp_path / "d" / "fig4.csv").mkdir(parents=True)  # inside an --out folder
    assert main(["reproduce", "fig4", "--out", str(tmp_path / "d"), "--quiet"]) == 2
    assert "--out's CSV must be a file path, got the directory" in _one_error(capsys)


def test_dev_null_is_refused(capsys, no_work):
    assert main([*SWEEP, "--out", "/dev/null"]) == 2
    assert "--out must be a regular file or a new path, got the character device '/dev/null'" in _one_error(capsys)
    assert main([*RUN, "--out", "/dev/null", "--plot", "none"]) == 2
    assert "character device" in _one_error(capsys)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(ConfigError, match="out must be a regular file or a new path"):
        run_sweep(BASE, AXES, SEEDS, "/dev/null", progress=False)


def test_the_same_path_twice_is_refused(tmp_path, capsys, no_work):
    png = tmp_path / "x.png"
    assert main([*RUN, "--out", str(png), "--plot", str(png)]) == 2
    assert f"--out and --plot must be different files, got {str(png)!r} for both" in _one_error(capsys)
    assert not png.exists() and not (tmp_path / "x.config.toml").exists()
    link = tmp_path / "link.png"
    link.symlink_to(png)
    png.write_bytes(b"")
    assert main([*RUN, "--out", str(png), "--plot", str(link)]) == 2
    assert "one file" in _one_error(capsys)


def test_check_output_paths(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x")
    assert check_output_paths({"--out": a, "--plot": None, "--other": b}) == {"--out": a, "--other": b}
    os.link(a, b)  # a hard link is the same file
    with pytest.raises(ConfigError, match="--out and --other must be different files"):
        check_output_paths({"--out": a, "--other": b})
    with pytest.raises(ConfigError, match="--x must be a regular file or a new path, got the character device"):
        check_output_paths({"--x": "/dev/zero"})


def test_write_csv_never_replaces_a_special_file(tmp_path):
    fifo = tmp_path / "r.csv"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file but a FIFO"):
        write_csv(fifo, [{"a": 1}])
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
