"""How fast the command line answers `--help` and `--version`, against importing an engine.

    python -m benchmarks.bench_cli [--repeats 5]

The parsers import no engine, so help costs a Python start-up; before that, every `--help`
imported JAX through the engines. The reference in the same run is `import jaxsched.dp` (what a
help that imports the engines pays on top of start-up). Median wall seconds over the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "jaxsched --version": ["-m", "jaxsched.cli", "--version"],
    "jaxsched --help": ["-m", "jaxsched.cli", "--help"],
    "jaxsched run --help": ["-m", "jaxsched.cli", "run", "--help"],
    "jaxsched sweep --help": ["-m", "jaxsched.cli", "sweep", "--help"],
    "jaxsched kv experiment --help": ["-m", "jaxsched.cli", "kv", "experiment", "--help"],
    "python -c pass (start-up)": ["-c", "pass"],
    "python -c 'import jaxsched.dp'": ["-c", "import jaxsched.dp"],
}


def _median_s(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_cli", description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    _median_s(CASES["python -c 'import jaxsched.dp'"], 1)  # warm the file cache
    rows = {name: _median_s(args, a.repeats) for name, args in CASES.items()}
    ref = rows["python -c 'import jaxsched.dp'"]
    print("| command | median wall s | / import jaxsched.dp |\n|---|---|---|")
    for name, s in rows.items():
        print(f"| `{name}` | {s:.3f} | {s / ref:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
