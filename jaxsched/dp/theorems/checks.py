"""The pass/fail checks of `jaxsched check theorems`, computed from the rows of results.csv.

Each check is a PASS/FAIL line of the report (the command exits 1 if one fails):
1. FCFS imbalance within FCFS_TOLERANCE (15%) of G * sigma * sqrt(B) * e_G for B >= FCFS_MIN_B
   (64), where e_G = E[max of G iid N(0, 1)] and sigma is the per-slot snapshot standard
   deviation derived analytically per theorem (`snapshot_sigma`), not measured.
2. BF-IO: average gap <= s_max / p and average imbalance <= (G - 1) s_max / p (Theorem 1:
   s_max and (G - 1) s_max), "above" meaning above by more than the 95% CI half-width. The
   bounds are asymptotic in B: a point above them fails only where one admission can absorb one
   step's removal spread (`admission_margin` kappa/phi >= 1); below that it is reported (INFO).
3. Theorem 1, BF-IO: max - min <= s_max after every round's admission, in every round and seed.
4. Sanity: the pool refilled every freed slot (all G B slots occupied at the end of each run).
Reported beside them (INFO, not pass/fail: the theorems are asymptotic, their side conditions
need B >~ 1e9): log-log slopes of the improvement ratio FCFS / BF-IO against B and against
log G, jointly fitted by least squares, with 95% confidence intervals, beside the theorem's 1/2.

Rows are dicts of CSV strings (or the numbers `run_point` returns); loads are in tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ...results import format_value
from .predictions import expected_max_normal, ratio_slopes, snapshot_var

FCFS_TOLERANCE = 0.15  # relative error allowed on the FCFS prediction
FCFS_MIN_B = 64  # the prediction is checked for B >= 64 (Berry-Esseen regime)


@dataclass(frozen=True)
class Check:
    """One line of the report: name, status (PASS, FAIL or INFO) and the numbers behind it."""

    name: str
    status: str
    detail: str


def num(row: dict, key: str) -> float:
    """A row's numeric field as a float; nan where it is empty or missing."""
    v = row.get(key, "")
    return math.nan if v in ("", None) else float(v)


def _nan0(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def by_policy(rows: Sequence[dict], policy: str) -> list[dict]:
    """The rows of one policy ("fcfs" or "bfio"), in order."""
    return [r for r in rows if r["policy"] == policy]


def fcfs_check(rows: Sequence[dict]) -> tuple[Check, list[list[str]]]:
    """Check 1: FCFS imbalance against G sigma sqrt(B) e_G, within FCFS_TOLERANCE for B >= 64."""
    table, worst, bad = [], 0.0, 0
    for r in by_policy(rows, "fcfs"):
        rel = num(r, "imb_mean") / num(r, "prediction") - 1.0
        checked = int(r["B"]) >= FCFS_MIN_B
        if checked:
            worst = max(worst, abs(rel))
            bad += abs(rel) > FCFS_TOLERANCE
        table.append(
            [
                r["group"],
                r["G"],
                r["B"],
                format_value(num(r, "sigma")),
                f"{format_value(num(r, 'imb_mean'))} ± {format_value(num(r, 'imb_ci95'))}",
                format_value(num(r, "prediction")),
                f"{100 * rel:+.1f}%",
                ("FAIL" if abs(rel) > FCFS_TOLERANCE else "ok") if checked else "(B < 64)",
            ]
        )
    n = sum(int(r["B"]) >= FCFS_MIN_B for r in by_policy(rows, "fcfs"))
    status = "PASS" if n and not bad else "FAIL"
    detail = (
        f"{n - bad}/{n} points with B >= {FCFS_MIN_B} within {100 * FCFS_TOLERANCE:.0f}% of "
        f"G sigma sqrt(B) e_G; largest |error| {100 * worst:.1f}%"
    )
    return Check("FCFS imbalance = G sigma sqrt(B) e_G", status, detail), table


def admission_margin(row: dict) -> float:
    """kappa / phi: how far one admission can absorb one step's removal spread (inf for Theorem 1).

    kappa = B p (s_max - 1): the most that one admission (about B p new requests per worker) can
    shift between the heaviest and the lightest worker. phi = 2 e_G sqrt(B p E[U^2]): the typical
    spread that one step's completions add (a worker loses about B p requests of snapshot size U,
    E[U^2] = mu_U^2 + sigma^2, mu_U = (s_max + 1) / 2 + mean drift * (1 - p) / p). The bounds
    s_max / p are asymptotic in B; the proof's recursion D(k) <= s_max + (1 - p) D(k - 1) (Lemma 4,
    on its condition (C8)) needs an admission that undoes what the completions add, kappa >~ phi.
    Where kappa < phi the BF-IO gap can exceed s_max / p for every per-step max-min assignment
    (the measured lower bounds are in docs/theorems.md).
    """
    if int(row["theorem"]) == 1:
        return math.inf
    G, B, s_max, p = int(row["G"]), int(row["B"]), int(row["s_max"]), float(row["p"])
    mu_drift = (int(row["drift_lo"]) + int(row["drift_hi"])) / 2
    mu_u = (s_max + 1) / 2 + mu_drift * (1 - p) / p
    e_u2 = mu_u**2 + snapshot_var(s_max, p, (int(row["drift_lo"]), int(row["drift_hi"])))
    return B * p * (s_max - 1) / (2 * expected_max_normal(G) * math.sqrt(B * p * e_u2))


def bfio_check(rows: Sequence[dict]) -> tuple[Check, Check, list[list[str]]]:
    """Check 2: BF-IO average gap <= s_max / p and average imbalance <= (G - 1) s_max / p.

    A point significantly above a bound fails where one admission can absorb a step's removal
    spread (`admission_margin` >= 1); below that margin (the bounds are asymptotic in B) it is
    reported in the second Check (INFO), not failed."""
    table, bad, excused, worst_gap, worst_imb = [], 0, [], 0.0, 0.0
    rs = by_policy(rows, "bfio")
    for r in rs:
        g, gb = num(r, "gap_mean"), num(r, "gap_bound")
        i, ib = num(r, "imb_mean"), num(r, "imbalance_bound")
        margin = admission_margin(r)
        # A point is above a bound when its mean is above it by more than its 95% CI half-width
        # (significantly above); a mean above but within its CI is flagged, not failed.
        sig = g - _nan0(num(r, "gap_ci95")) > gb or i - _nan0(num(r, "imb_ci95")) > ib
        ok = g <= gb and i <= ib
        if sig and margin < 1:
            excused.append((r, margin))
            verdict = "above (finite B)"
        else:
            bad += sig
            worst_gap, worst_imb = max(worst_gap, g / gb), max(worst_imb, i / ib)
            verdict = "ok" if ok else ("FAIL" if sig else "above (n.s.)")
        table.append(
            [
                r["group"],
                r["G"],
                r["B"],
                r.get("kernel", ""),
                "inf" if math.isinf(margin) else f"{margin:.2f}",
                f"{format_value(g)} ± {format_value(num(r, 'gap_ci95'))}",
                format_value(gb),
                f"{format_value(i)} ± {format_value(num(r, 'imb_ci95'))}",
                format_value(ib),
                verdict,
            ]
        )
    n = len(rs) - len(excused)
    status = "PASS" if n and not bad else "FAIL"
    detail = (
        f"{n - bad}/{n} points not significantly above either bound (mean - 95% CI <= bound), "
        f"{len(excused)} more above with admission margin kappa/phi < 1 (reported below); "
        f"largest gap / bound {worst_gap:.3f}, largest imbalance / bound {worst_imb:.3f} "
        f"(over the {n})"
    )
    detail2 = (
        "; ".join(
            f"{r['group']} G={r['G']} B={r['B']}: gap {num(r, 'gap_mean') / num(r, 'gap_bound'):.2f}"
            f" x bound, imbalance {num(r, 'imb_mean') / num(r, 'imbalance_bound'):.2f} x bound, "
            f"kappa/phi {m:.2f}"
            for r, m in excused
        )
        or "none"
    )
    return (
        Check("BF-IO gap <= s_max/p, imbalance <= (G-1) s_max/p", status, detail),
        Check("BF-IO above the bounds at finite B (kappa/phi < 1, reported)", "INFO", detail2),
        table,
    )


def rounds_check(rows: Sequence[dict]) -> Check:
    """Check 3: Theorem 1, BF-IO: max - min <= s_max after every round's admission."""
    rs = [r for r in by_policy(rows, "bfio") if int(r["theorem"]) == 1]
    worst = [(num(r, "round_gap_max"), int(r["s_max"]), r) for r in rs]
    bad = [w for w in worst if not w[0] <= w[1]]
    status = "PASS" if rs and not bad else "FAIL"
    top = max((w[0] - w[1] for w in worst), default=math.nan)
    detail = (
        f"{len(rs) - len(bad)}/{len(rs)} Theorem 1 points with max - min <= s_max in every "
        f"round and seed; largest (max - min) - s_max = {format_value(top)} tokens"
    )
    return Check("T1 rounds: max - min <= s_max", status, detail)


def overload_check(rows: Sequence[dict]) -> Check:
    """Sanity: the pool refilled every freed slot (all G B slots occupied at the end of a run)."""
    bad = [r for r in rows if str(r["full_at_end"]) != "True"]
    return Check(
        "overloaded pool (all slots full at the end)",
        "PASS" if not bad else "FAIL",
        f"{len(rows) - len(bad)}/{len(rows)} runs",
    )


def ratio_rows(rows: Sequence[dict]) -> dict[str, list[tuple[int, int, float]]]:
    """{group: [(G, B, FCFS / BF-IO average imbalance)]} over points that ran both policies."""
    bf = {(r["group"], r["G"], r["B"]): num(r, "imb_mean") for r in by_policy(rows, "bfio")}
    out: dict[str, list] = {}
    for r in by_policy(rows, "fcfs"):
        k = (r["group"], r["G"], r["B"])
        if k in bf and bf[k] > 0:
            out.setdefault(r["group"], []).append((int(r["G"]), int(r["B"]), num(r, "imb_mean") / bf[k]))
    return out


def growth_report(rows: Sequence[dict]) -> tuple[Check, list[list[str]]]:
    """Fitted slopes of log(FCFS / BF-IO) against log B and log log G per group (reported)."""
    table = []
    for group, pts in ratio_rows(rows).items():
        G, B, r = zip(*pts)
        s = ratio_slopes(G, B, r)
        cell = lambda v: (
            "n/a"
            if not math.isfinite(v[0])
            else (f"{v[0]:.3f}" + ("" if not math.isfinite(v[1]) else f" ± {v[1]:.3f}"))
        )
        table.append([group, str(len(pts)), f"{min(r):.2f} .. {max(r):.2f}", cell(s["B"]), cell(s["logG"]), "0.5"])
    detail = (
        "joint least-squares fit of log(ratio) on log B and log log G per group, 95% CI; "
        "the theorems give ratio = Omega(sqrt(B log G)) only asymptotically, so reported, "
        "not asserted"
    )
    return Check("improvement ratio growth (slopes vs 1/2)", "INFO", detail), table


def all_checks(rows: Sequence[dict]) -> tuple[list[Check], dict[str, list[list[str]]]]:
    """Every check and its detail table ({"fcfs", "bfio", "growth"}: rows of table cells)."""
    c1, t1 = fcfs_check(rows)
    c2, c2b, t2 = bfio_check(rows)
    c3 = rounds_check(rows)
    c4 = overload_check(rows)
    c5, t5 = growth_report(rows)
    return [c1, c2, c3, c4, c5, c2b], {"fcfs": t1, "bfio": t2, "growth": t5}


def throughput(rows: Sequence[dict]) -> tuple[float, float, float, float]:
    """(wall s, process CPU s, seed-steps, seed-steps per wall second) summed over the rows."""
    wall = sum(num(r, "wall_s") for r in rows)
    cpu = sum(_nan0(num(r, "cpu_s")) for r in rows)
    steps = sum(num(r, "seed_steps") for r in rows)
    return wall, cpu, steps, steps / wall if wall > 0 else math.nan
