"""Mutation testing: does the default test suite catch plausible one-line bugs?

Each mutant below is a single-line change of the kind a developer could make (a comparison off
by one, a dropped term, a wrong constant) in the engines, kernels, clock, workload reader, power
model, result keys or sweep runner. The script plants one mutant at a time, runs the tests that
cover that module (the default run, without `-m slow`), records whether they fail ("killed")
and restores the file exactly, whatever happens (also on Ctrl-C). It takes about an hour or two
on 2 cores; it is not part of CI, and is rerun when those modules change.

    python -m benchmarks.mutation                 # every mutant
    python -m benchmarks.mutation --list          # the mutants, numbered
    python -m benchmarks.mutation --only 1 5      # some of them
    python -m benchmarks.mutation --timeout 1800  # per-mutant limit (s); a timeout counts as killed

Writes `benchmarks/results/mutation.json` and `.md` (one row per mutant: killed or survived, the
tests run, seconds) and exits 1 if any mutant survived. Refuses to start when a mutated file has
uncommitted changes, so that restoring it can never lose work.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    path: str  # file, relative to the repository root
    old: str  # text that occurs exactly once in the file
    new: str  # its replacement
    what: str  # the bug, in words
    tests: tuple[str, ...]  # test paths that cover it


DP = ("tests/dp", "tests/core/test_behaviour.py")
KERNELS = ("tests/kernels", "tests/dp/test_engine.py")
KV = ("tests/kv",)
CORE = ("tests/core/test_clock.py", "tests/kv/test_properties.py", "tests/budget/test_properties.py")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "kernels/local_search.py",
        "(flat_q[best] < 0))",
        "(flat_q[best] <= 0))",
        "local search accepts moves of zero gain (never converges)",
        ("tests/kernels",),
    ),
    Mutant(
        "jaxsched/results.py",
        '"seeds": [int(s) for s in seeds]',
        '"seeds": [int(seeds[0]), int(seeds[-1]), len(seeds)]',
        "the resume key keeps only the first seed, last seed and count",
        ("tests/core/test_resume.py", "tests/core/test_sweep.py"),
    ),
    Mutant(
        "kernels/valley_fill.py",
        "jnp.where(used < free, loads * G + gid, _BIG)",
        "jnp.where(used <= free, loads * G + gid, _BIG)",
        "valley fill admits to a worker with no free slot left",
        KERNELS,
    ),
    Mutant(
        "kernels/valley_fill.py",
        "(thr,) = _materialize((jnp.minimum(jnp.maximum(top, target) - Lg, cap) + 1) << sh)",
        "(thr,) = _materialize((jnp.minimum(top - Lg, cap) + 1) << sh)",
        "valley fill ignores its target level (multi-start)",
        KERNELS,
    ),
    Mutant(
        "kernels/native/valley_fill.cc",
        "wkey[g] = used[g] < free[g] ? new_load * G + g : kBig;",
        "wkey[g] = used[g] <= free[g] ? new_load * G + g : kBig;",
        "the native valley fill admits to a worker with no free slot left",
        KERNELS,
    ),
    Mutant(
        "jaxsched/clock.py",
        "    e = e + (x.lo + y.lo)\n",
        "    e = e + x.lo\n",
        "double-float addition drops the second low word",
        CORE,
    ),
    Mutant(
        "jaxsched/clock.py",
        "return s, (a - (s - bb)) + (b - bb)",
        "return s, (a - (s - bb))",
        "two-sum loses part of its rounding error",
        CORE,
    ),
    Mutant(
        "jaxsched/dp/engine.py",
        "jnp.where(slots.finish >= k, slots.inv_out, 0.0)",
        "jnp.where(slots.finish > k, slots.inv_out, 0.0)",
        "a request finishing in a step is left out of that step's TPOT weight",
        DP,
    ),
    Mutant(
        "jaxsched/dp/engine.py",
        "hist = state.loads + n_active * delta",
        "hist = state.loads + n_active",
        "the growth ignores the drift",
        DP,
    ),
    Mutant(
        "jaxsched/dp/engine.py",
        "energy_j=window.energy_j.add(f(dt * ordered_sum(power)))",
        "energy_j=window.energy_j.add(f(ordered_sum(power)))",
        "energy sums power without the step's duration",
        DP,
    ),
    Mutant(
        "jaxsched/dp/energy.py",
        "return jnp.where(u > 0, busy, idle_w)",
        "return jnp.where(u >= 0, busy, idle_w)",
        "an idle worker draws the busy power at u = 0",
        DP,
    ),
    Mutant(
        "jaxsched/dp/config.py",
        "return (slots_per_worker * 0.6e-3 + 35e-3) / 16",
        "return (slots_per_worker * 0.6e-3 + 35e-3) / 8",
        "the barrier constant C is doubled",
        ("tests/core/test_constants.py", "tests/dp"),
    ),
    Mutant(
        "jaxsched/dp/policies.py",
        'g = jnp.searchsorted(ends, pos, side="right")',
        'g = jnp.searchsorted(ends, pos, side="left")',
        "FCFS fills the wrong worker at slot boundaries",
        DP,
    ),
    Mutant(
        "jaxsched/kv/policies.py",
        "return mask & (prefix_by_id(w, view.base) + w <= capacity)",
        "return mask & (prefix_by_id(w, view.base) + w < capacity)",
        "a batch that exactly fills the KV memory is refused",
        KV,
    ),
    Mutant(
        "jaxsched/workload/traces.py",
        "            body = rows  # headerless",
        "            body = rows[1:]  # headerless",
        "a headerless trace loses its first request",
        ("tests/core/test_workload.py",),
    ),
    Mutant(
        "jaxsched/sweep.py",
        "todo = [x for x in prepared if x[3] not in done]",
        "todo = list(prepared)",
        "a resumed sweep recomputes and duplicates finished points",
        ("tests/core/test_sweep.py", "tests/core/test_resume.py"),
    ),
)


def _dirty(paths: set[str]) -> list[str]:
    out = subprocess.run(
        ["git", "status", "--porcelain", "--", *sorted(paths)], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [line[3:] for line in out.splitlines()]


def run_mutant(m: Mutant, timeout_s: float) -> dict:
    """Plant `m`, run its tests, restore the file; the row for the results table."""
    path = ROOT / m.path
    original = path.read_text()
    if original.count(m.old) != 1:
        raise SystemExit(
            f"mutant {m.what!r}: the text to replace occurs {original.count(m.old)} "
            f"times in {m.path} (expected once); update the mutant"
        )
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *m.tests]
    t0 = time.perf_counter()
    try:
        path.write_text(original.replace(m.old, m.new))
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
            outcome = "survived" if proc.returncode == 0 else "killed"
            tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
        except subprocess.TimeoutExpired:
            outcome, tail = "killed (timeout)", []
    finally:
        path.write_text(original)
    return {
        **asdict(m),
        "outcome": outcome,
        "summary": tail[0] if tail else "",
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.mutation", description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--only", nargs="+", type=int, metavar="N", help="run only these (1-based)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per mutant")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "mutation.json")
    args = ap.parse_args(argv)
    if args.list:
        for i, m in enumerate(MUTANTS, 1):
            print(f"{i:2d}. {m.path}: {m.what}")
        return 0
    chosen = list(range(1, len(MUTANTS) + 1)) if not args.only else args.only
    if any(not 1 <= i <= len(MUTANTS) for i in chosen):
        ap.error(f"--only takes numbers in [1, {len(MUTANTS)}]")
    dirty = _dirty({MUTANTS[i - 1].path for i in chosen})
    if dirty:
        ap.error(f"uncommitted changes in {dirty}: commit or stash them first")
    rows = []
    for i in chosen:
        m = MUTANTS[i - 1]
        print(f"[mutation] {i}/{len(MUTANTS)} {m.path}: {m.what} ...", file=sys.stderr, flush=True)
        rows.append({"n": i, **run_mutant(m, args.timeout)})
        print(f"[mutation]   {rows[-1]['outcome']} in {rows[-1]['seconds']} s", file=sys.stderr, flush=True)
    killed = sum(r["outcome"] != "survived" for r in rows)
    md = "\n".join(
        [
            "# Mutation testing",
            "",
            f"{killed} of {len(rows)} mutants killed ({100 * killed / len(rows):.0f}%); "
            f"`python -m benchmarks.mutation{' --only ' + ' '.join(map(str, chosen)) if args.only else ''}`.",
            "",
            "| # | file | bug | outcome | tests | s |",
            "|---|---|---|---|---|---|",
            *[
                f"| {r['n']} | {r['path']} | {r['what']} | {r['outcome']} | {' '.join(r['tests'])} | "
                f"{r['seconds']:.0f} |"
                for r in rows
            ],
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"killed": killed, "total": len(rows), "rows": rows}, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0 if killed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
