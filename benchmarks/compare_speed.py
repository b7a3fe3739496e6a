"""Compare the engine speed of two `bench_dp` runs (for example two versions of the code).

    python -m benchmarks.compare_speed BEFORE.json AFTER.json [BEFORE2.json AFTER2.json ...]

Each pair is two JSON files written by `python -m benchmarks.bench_dp --out FILE` on the same
machine, one after the other. Prints a markdown table: per (policy, G, B, seeds), the engine's
seed-steps/s in each file and the ratio after / before, one column per pair, and the geometric
mean of the ratios over the configurations. The engine must also give the same seed-0
imbalance in both files (the same numbers, only faster or slower); a mismatch exits 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _rows(path: Path) -> dict[tuple, dict]:
    data = json.loads(path.read_text())
    return {(r["policy"], r["G"], r["B"], r["seeds"]): r for r in data["engine"]}


def compare(pairs: list[tuple[Path, Path]]) -> tuple[str, bool]:
    """(markdown table, whether every seed-0 imbalance agrees)."""
    loaded = [(_rows(a), _rows(b)) for a, b in pairs]
    keys = [k for k in loaded[0][0] if all(k in a and k in b for a, b in loaded)]
    head = ["policy", "G", "B", "seeds"]
    for n in range(1, len(pairs) + 1):
        head += [f"before {n}", f"after {n}", f"after / before {n}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    same, logs = True, [[] for _ in pairs]
    for k in keys:
        cells = [str(x) for x in k]
        for n, (a, b) in enumerate(loaded):
            x, y = a[k]["seed_steps_per_s"], b[k]["seed_steps_per_s"]
            logs[n].append(math.log(y / x))
            cells += [f"{x / 1e3:.1f}k", f"{y / 1e3:.1f}k", f"{y / x:.2f}"]
            same &= a[k]["seed0_avg_imbalance_tokens"] == b[k]["seed0_avg_imbalance_tokens"]
        lines.append("| " + " | ".join(cells) + " |")
    geo = ["geometric mean", "", "", ""]
    for lg in logs:
        geo += ["", "", f"{math.exp(sum(lg) / len(lg)):.2f}"]
    lines.append("| " + " | ".join(geo) + " |")
    return "\n".join(lines), same


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compare_speed", description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, nargs="+", help="BEFORE.json AFTER.json, repeated")
    a = ap.parse_args()
    if len(a.files) % 2:
        ap.error("give the files in (before, after) pairs")
    pairs = list(zip(a.files[::2], a.files[1::2]))
    table, same = compare(pairs)
    print(table)
    print("\nseed-0 imbalance equal in every configuration: " + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
