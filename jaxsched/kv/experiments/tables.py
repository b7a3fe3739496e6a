"""Markdown tables of the kv experiments' rows (`runner.run_experiment`, `scaling.run_scaling`)."""

from __future__ import annotations

import math
from typing import Sequence

from ...results import format_value, markdown_table


def _pm(m: float, half: float) -> str:
    """ "m ± half" (just m when the half-width is not finite, e.g. one seed)."""
    return format_value(m) if not math.isfinite(half) else f"{format_value(m)} ± {format_value(half)}"


def experiment_table(rows: Sequence[dict]) -> str:
    """Markdown table of run_experiment rows."""
    head = [
        "policy",
        "rho",
        "C rule",
        "B",
        "rate (req/s)",
        "throughput (tok/s)",
        "thr / fluid",
        "latency (s)",
        "latency p99 (s)",
        "TTFT (s)",
        "TTFT p99 (s)",
        "peak / mean mem / C (tok)",
        "preempt",
        "thresholds",
        "status",
    ]
    body = [
        [
            r["label"],
            format_value(r["load"]),
            str(r.get("capacity_rule", "-")),
            str(r.get("batch_limit", "none")),
            format_value(r["rate_total_req_s"]),
            _pm(r["throughput"], r["throughput_ci"]),
            f"{r['throughput_ratio']:.3f}",
            _pm(r["latency_mean"], r["latency_mean_ci"]),
            format_value(r["latency_p99"]),
            _pm(r["ttft_mean"], r["ttft_mean_ci"]),
            format_value(r["ttft_p99"]),
            _memory(r),
            format_value(r["preemptions"]),
            f"{r['thresholds']} ({r['rule']})" if r["thresholds"] != "-" else r["rule"],
            _validity(r),
        ]
        for r in rows
    ]
    return markdown_table(head, body)


def _memory(row: dict) -> str:
    """'peak / mean / C' KV tokens of a row."""
    return " / ".join(
        format_value(float(row.get(k, float("nan"))))
        for k in ("peak_memory_tokens", "mean_memory_tokens", "capacity_tokens")
    )


def _validity(row: dict) -> str:
    """'ok', 'infeasible', 'overloaded (...)', 'unsettled (...)' with the queue growth and any
    lost arrivals, or INVALID with the reasons (lost arrivals, unfinished seeds)."""
    status = row.get("status", "ok")
    if status == "invalid":
        return f"**INVALID**: {row.get('issues', '')}"
    lost = row.get("dropped_arrivals", 0)
    notes = []
    if status in ("overloaded", "unsettled"):
        notes.append(f"growth {row.get('queue_growth', float('nan')):+.0%}")
    if lost:
        notes.append(f"{lost:.0f} arrivals lost")
    return f"{status} ({', '.join(notes)})" if notes else status


def scaling_tables(rows: Sequence[dict], fits: Sequence[dict]) -> str:
    """Markdown tables of run_scaling rows and fits."""
    t1 = markdown_table(
        ["instance", "T (s)", "seeds", "gap (tok/s)", "latency (s)", "in system"],
        [
            [
                r["instance"],
                format_value(r["T"]),
                str(r["seeds"]),
                _pm(r["gap"], r["gap_ci"]),
                _pm(r["latency_mean"], r["latency_mean_ci"]),
                _pm(r["in_system"], r["in_system_ci"]),
            ]
            for r in rows
        ],
    )
    t2 = markdown_table(
        ["instance", "gap slope", "expected", "latency slope", "expected"],
        [
            [
                f["instance"],
                _pm(f["gap_slope"], f["gap_slope_ci"]),
                format_value(f["expected_slope"]),
                _pm(f["latency_slope"], f["latency_slope_ci"]),
                format_value(f["expected_latency_slope"]),
            ]
            for f in fits
        ],
    )
    return t1 + "\n\n" + t2
