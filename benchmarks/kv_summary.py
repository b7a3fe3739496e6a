"""Compact tables of the WAIT paper's experiments from their CSV files (the tables of docs/papers/001-wait.md).

    python -m benchmarks.kv_summary benchmarks/results/kv/e1.csv [more.csv ...]

`jaxsched kv experiment eN --out DIR` writes DIR/eN.csv with one row per (load, capacity rule,
batch limit B, policy). This prints, per CSV, capacity rule and batch limit, one markdown table
with a row per policy and, per load, the window throughput over the fluid throughput*, the
mean latency (s) and a status mark: nothing for ok, `o` overloaded, `u` unsettled, `!` invalid,
and "infeasible" for a policy with no thresholds meeting its memory condition within C.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

MARK = {"ok": "", "overloaded": " o", "unsettled": " u", "invalid": " !"}


def cell(row: dict) -> str:
    """'thr/fluid, latency s, mark' of one CSV row."""
    if row["status"] == "infeasible":
        return "infeasible"
    thr, lat = float(row["throughput_ratio"]), float(row["latency_mean"])
    if not (math.isfinite(thr) and math.isfinite(lat)):
        return "-"
    return f"{thr:.3f}, {lat:.3g} s{MARK.get(row['status'], ' ?')}"


def tables(path: Path) -> str:
    """Markdown tables of one experiment CSV, one per (capacity rule, batch limit)."""
    rows = list(csv.DictReader(path.open()))
    out = []
    groups = dict.fromkeys((r["capacity_rule"], r["batch_limit"], r.get("prefill_price", "eq1")) for r in rows)
    for rule, b, price in groups:
        sub = [
            r for r in rows if (r["capacity_rule"], r["batch_limit"], r.get("prefill_price", "eq1")) == (rule, b, price)
        ]
        loads = list(dict.fromkeys(r["load"] for r in sub))
        labels = list(dict.fromkeys(r["label"] for r in sub))
        price_note = "" if price == "eq1" else f", prefill at {price} d1"
        out.append(f"{path.stem.upper()}, C = {rule}, B = {b}{price_note}: thr / fluid, mean latency\n")
        out.append("| policy | " + " | ".join(f"rho {x}" for x in loads) + " |")
        out.append("|---" * (len(loads) + 1) + "|")
        for lab in labels:
            by = {r["load"]: r for r in sub if r["label"] == lab}
            out.append(f"| {lab} | " + " | ".join(cell(by[x]) if x in by else "-" for x in loads) + " |")
        caps = {r["load"]: r["capacity_tokens"] for r in sub}
        out.append("\nC (tokens): " + ", ".join(f"rho {x}: {c}" for x, c in caps.items()) + "\n")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kv_summary", description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="+", type=Path, help="CSV files of jaxsched kv experiment")
    a = p.parse_args()
    for path in a.csv:
        print(tables(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
