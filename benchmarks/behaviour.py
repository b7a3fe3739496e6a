"""Record the numbers of a fixed set of commands, and compare two recordings bit for bit.

    python -m benchmarks.behaviour record DIR      # run the commands, keep their CSV files
    python -m benchmarks.behaviour compare A B     # every numeric cell equal, or exit 1

The commands cover every engine and driver: `jaxsched reproduce table1` (skipped when the
BurstGPT sample is absent), a short `jaxsched run`, `jaxsched kv experiment e1 --quick`, a small
`jaxsched sweep` of each engine, and `jaxsched check theorems --quick`. (The kv sweep was added
with the engine-generic sweep, after the others were first recorded. `kv_e1` was re-recorded
when the experiments began to sweep one batch limit B for every policy: its rows at B = none
for WAIT, Nested WAIT and FCFS and at B = 128 for the vLLM-style and Sarathi-style policies
are bit for bit the rows recorded before, which ran exactly those configurations. It was
re-recorded again when the experiments moved to the paper's regime, C from the fluid memory and
steady-state windows: every kv_e1 number changed by design, while `sweep_kv`, which runs the
engine with its defaults, stayed bit for bit equal. Everything was re-recorded when per-run float sums became ordered
(`kernels.ordered_sum`): only float sums changed, by at most 3e-8 relative (energy, power,
idle fraction, TPOT, queueing delay, kv latency and TTFT, and their spreads); every count,
imbalance and theorem number stayed bit for bit equal. `run`, `sweep_dp` and `table1` were
re-recorded when the dp engine began to round each product of a queueing delay before adding
them (so that a run padded into a size bucket rounds as the unpadded run does; see
`jaxsched.dp.engine._admission_stats`): only the queueing-delay columns changed, in the eighth
significant digit. The `max_epochs` column of `sweep_kv` was renamed `max_steps` in the record
with the kv Config field, and the `horizon` column of `run`, `sweep_dp` and `table1`
`lookahead_steps` with the dp one; no number changed. `kv_e1`'s `relax_s` and
`fluid_memory_tokens` columns, the fluid model's closed-form values, were re-recorded when
their float evaluation order moved their last digit (0.64 recorded as 0.6399999999999999);
every simulated number stayed bit for bit equal. `theorems` was re-recorded when the theorem
check began to run its points in size buckets, which appends the same rows in another order.
`sweep_kv`, `sweep_dp`, `kv_e1` and `theorems` were re-recorded when 95% confidence intervals
took SciPy's Student-t quantile for every degree of freedom (the typed-in table stopped at 30 and
used 1.96 beyond): only the CI half-width columns changed, each by the ratio of the two
quantiles. `sweep_kv`'s `config` cells gained `"block_rules":"kv"` with that KVConfig field (its
default, the rules every recorded run used), and later `"grow_table":false` likewise (tables
grown on overflow; off, as in every recorded run); no number changed.) A refactoring that
changes no behaviour leaves every number equal to the bit (CSV cells are written with
`repr(float)`); columns that hold wall-clock times, paths, resume keys or the code revision are not
compared.
`benchmarks/results/behaviour/` holds the recording this repository is checked against
(`tests/core/test_behaviour.py` records the quick commands afresh and compares; the whole set
is marked slow).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "burstgpt_8000.csv"
# Columns that legitimately differ between two runs of the same numbers (`code` is the hash of
# the package's source, which every refactoring changes; the key hashes it too).
VOLATILE = ("wall_s", "cpu_s", "time_s", "point", "key", "version", "code", "trace", "row_sha")


def _jaxsched() -> list[str]:
    """The command line entry point of the interpreter running this script."""
    exe = Path(sys.executable).parent / "jaxsched"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "jaxsched.cli"]


def commands(out: Path) -> dict[str, list[str]]:
    """name -> argument list; each writes its CSV files under out/name."""
    cmds = {
        "run": [
            "run",
            "--seeds",
            "2",
            "--steps",
            "300",
            "--policies",
            "fcfs,jsq_count,bfio:0,bfio:8",
            "--plot",
            "none",
            "--out",
            str(out / "run" / "run.csv"),
            "--quiet",
        ],
        "kv_e1": ["kv", "experiment", "e1", "--quick", "--out", str(out / "kv_e1"), "--quiet"],
        "sweep_dp": [
            "sweep",
            "--axis",
            "policy=fcfs,bfio",
            "--axis",
            "num_workers=4,8",
            "--seeds",
            "4",
            "--steps",
            "200",
            "--out",
            str(out / "sweep_dp" / "sweep.csv"),
            "--quiet",
        ],
        "sweep_kv": [
            "sweep",
            "--engine",
            "kv",
            "--axis",
            "policy=wait,nested_wait,fcfs,vllm,sarathi",
            "--set",
            "num_requests=300",
            "--set",
            "table_size=256",
            "--seeds",
            "3",
            "--out",
            str(out / "sweep_kv" / "sweep.csv"),
            "--quiet",
        ],
        "theorems": ["check", "theorems", "--quick", "--out", str(out / "theorems"), "--quiet"],
    }
    if TRACE.is_file():
        cmds["table1"] = ["reproduce", "table1", "--trace", str(TRACE), "--out", str(out / "table1"), "--quiet"]
    return cmds


def record(out: Path, only: list[str] | None = None) -> None:
    """Run every command (or those named in `only`) and keep their files under `out`."""
    for name, args in commands(out).items():
        if only and name not in only:
            continue
        shutil.rmtree(out / name, ignore_errors=True)
        (out / name).mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        proc = subprocess.run(_jaxsched() + args, capture_output=True, text=True, cwd=ROOT)
        (out / name / "stdout.txt").write_text(proc.stdout)
        # The theorem check exits 1 when a check fails; its numbers are still the record.
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def compare(a: Path, b: Path) -> list[str]:
    """Differences between two recordings (empty when every compared cell is equal)."""
    diffs = []
    for fa in sorted(a.rglob("*.csv")):
        rel = fa.relative_to(a)
        fb = b / rel
        if not fb.is_file():
            if (b / rel.parts[0]).is_dir():
                diffs.append(f"{rel}: missing in {b}")
            continue
        ra, rb = _rows(fa), _rows(fb)
        if len(ra) != len(rb):
            diffs.append(f"{rel}: {len(ra)} rows against {len(rb)}")
            continue
        for i, (x, y) in enumerate(zip(ra, rb)):
            for col, v in x.items():
                if col in VOLATILE or col.endswith("_wall_s"):
                    continue
                if col not in y:
                    diffs.append(f"{rel} row {i}: column {col!r} missing")
                elif not _same(v, y[col]):
                    diffs.append(f"{rel} row {i} {col}: {v} != {y[col]}")
    return diffs


def _same(x: str, y: str) -> bool:
    """Equal cells: the same text, or the same number written two ways (a count recorded as
    '10459.0' and written now as '10459'); numbers must still be equal to the bit."""
    if x == y:
        return True
    try:
        return float(x) == float(y)
    except ValueError:
        return False


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.behaviour", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--only", default=None, help="comma-separated command names")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    a = p.parse_args()
    if a.cmd == "record":
        record(a.out, a.only.split(",") if a.only else None)
        return 0
    diffs = compare(a.a, a.b)
    for d in diffs[:50]:
        print(d)
    n = sum(1 for _ in a.a.rglob("*.csv"))
    print(f"{n} files compared, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
