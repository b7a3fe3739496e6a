"""Paper 004's checks and experiments, one function each (`jaxsched budget experiment NAME`;
`jaxsched check stability` runs `stability`).

Each returns a `jaxsched.results.Report` (CSV rows, markdown, whether the claim held, plot
data). Reading guide: notes/004.md; the numbers are in docs/papers/004-budget.md.

- stability: Fig. 1 and Theorem 1. For each policy, the growth rate of the tokens in system
  over a sweep of the load rho = lambda (m_p + m_d) t_b / b, with 95% CIs over seeds: Sarathi
  and Orca (work-conserving) bounded below capacity, vanilla vLLM and FasterTransformer growing
  at Fig. 1's 14.3 qps, every policy growing above capacity.
- two_type: section 4.2 and Prop. 2(a). Two request types on one engine start from a backlog;
  the time until the unprocessed tokens fall to 2% of the backlog's, against the fluid drain
  time (1 - 0.02) f(0) / delta with the corrected workload f = (m_p + m_d) Z_p + m_d Z_d and
  delta = b / t_b - sum_j lambda_j (m_p^j + m_d^j); and the two-type load (4.2) at 0.9 kept
  bounded by the work-conserving policies.
- fig9: section 5, Fig. 9. Sarathi-Serve with token budgets 128, 512 and 1024 on the Azure
  LLM inference 2023 conversation trace, replayed at its timestamps (time-scaled) with each
  request's lengths from its row, the attention term (A.1) with the chunk-against-earlier-chunks
  extension on; TTFT and end-to-end latency quantiles per budget over seeds (each seed replays
  the trace from its own starting row), and whether the paper's three findings hold here.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import require, require_float, require_int
from ..progress import declare, share, tick
from ..results import Report, markdown_table, mean_ci_column
from ..run import simulate, simulate_points
from ..stats import mean_ci
from ..workload import Independent, Poisson, read_trace
from .config import (
    DEFAULT_A_S_PER_TOKEN,
    DEFAULT_B0,
    DEFAULT_C_S,
    BudgetConfig,
    capacity_tokens_per_s,
    enough_steps,
    keywords_read_by,
    make_params,
    mean_lengths,
    rates_for_load,
    trace_load,
    trace_token_rate,
)
from .engine import batches
from .fluid import budget_drain_time_s

# Fig. 1's engine (notes/004.md sections 5 and 6): b = 512, M = 256 (vLLM's max_num_seqs),
# prefill cap = b, c = 45.5 ms, b0 = 64, a = 0.18 ms/token (assumed; rho = 0.85 at 14.3 qps).
FIG1 = dict(
    budget=512, max_requests=256, prefill_cap=512, c_s=DEFAULT_C_S, a_s_per_token=DEFAULT_A_S_PER_TOKEN, b0=DEFAULT_B0
)
FIG1_LOAD = 0.85
STABILITY_POLICIES = ("sarathi", "orca", "vllm", "ft")
# A run "grows" when the tokens in system rise by more than this fraction of the offered token
# rate lambda (m_p + m_d) (assumed: a bounded queue's fitted slope is noise around 0, an
# unstable one keeps (offered - served) / offered, tens of percent).
GROWTH_THRESHOLD = 0.02


def verdict(
    fractions: np.ndarray, overflowed: np.ndarray, threshold: float = GROWTH_THRESHOLD
) -> tuple[str, float, float]:
    """("grows" | "bounded" | "unclear", mean, 95% CI half-width) of per-seed growth fractions:
    grows when the CI lies above `threshold` (or every seed overflowed its table), bounded when
    it lies below, unclear otherwise."""
    mean, _, half, n = mean_ci(fractions)
    half = 0.0 if n == 1 or not math.isfinite(half) else half
    if np.all(overflowed > 0) or mean - half > threshold:
        return "grows", mean, half
    if mean + half < threshold:
        return "bounded", mean, half
    return "unclear", mean, half


def _fig1_config(policy: str, horizon: float, burn_in: float, table_size: int, max_load: float) -> BudgetConfig:
    """Fig. 1's engine and requests (129 / 112 tokens) for `policy`, with enough scan steps for
    the largest load of the sweep."""
    base = BudgetConfig(policy=policy, horizon_s=horizon, burn_in_s=burn_in, table_size=table_size)
    rates = rates_for_load(base, max_load, **_time_kw())
    return enough_steps(base, rates, FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"])


def _time_kw() -> dict:
    return {k: FIG1[k] for k in ("budget", "c_s", "a_s_per_token", "b0")}


def stability(quick: bool = False, seeds: int | None = None, progress=None) -> Report:
    """Growth of the tokens in system against the load, per policy (module docstring)."""
    S = seeds or (4 if quick else 8)
    require_int(S, "--seeds (the growth CI needs at least 3 seeds)", lo=3, hi=4096)
    loads = (0.7, 0.85, 1.1) if quick else (0.5, 0.7, 0.85, 0.95, 1.05, 1.2)
    horizon, burn_in = (200.0, 40.0) if quick else (600.0, 100.0)
    Q = 8192 if quick else 16384
    rows, growth_panel, traj_panel, verdicts = [], {}, {}, {}
    # One unit per (policy, load) point. A policy's Fig. 1 trajectory run and its compilations
    # fall within its units: every policy compiles anew, so a rate that counts compilation
    # predicts the policies still to run.
    declare(progress, len(STABILITY_POLICIES) * len(loads))
    for policy in STABILITY_POLICIES:
        cfg = _fig1_config(policy, horizon, burn_in, Q, max(loads))
        work = float(mean_lengths(cfg).sum())
        rates = [rates_for_load(cfg, rho, **_time_kw()) for rho in loads]
        params = [make_params(cfg, rates=r, **keywords_read_by(policy, FIG1)) for r in rates]
        results = simulate_points(cfg, params, range(S), warn=False)
        series = ([], [], [])
        for rho, r, res in zip(loads, rates, results):
            m = res.metrics
            offered = float(r.sum()) * work
            frac = m["token_growth_per_s"] / offered
            v, mean, half = verdict(frac, m["overflowed"])
            verdicts[(policy, rho)] = v
            g_mean, _, g_half, _ = mean_ci(m["token_growth_per_s"])
            rows.append(
                dict(
                    policy=policy,
                    load=rho,
                    rate_qps=float(r.sum()),
                    seeds=S,
                    growth_tokens_per_s=g_mean,
                    growth_ci95=g_half,
                    growth_fraction=mean,
                    growth_fraction_ci95=half,
                    verdict=v,
                    overflowed_seeds=int(np.sum(m["overflowed"] > 0)),
                    throughput_tokens_per_s=float(m["throughput_tokens_per_s"].mean()),
                    offered_tokens_per_s=offered,
                    mean_tokens_in_system=float(m["mean_tokens_in_system"].mean()),
                    requests_end=float(m["requests_end"].mean()),
                    latency_mean_s=float(m["latency_mean_s"].mean()),
                    partial_batch_fraction=float(m["partial_batch_fraction"].mean()),
                )
            )
            for lst, val in zip(series, (rho, mean, half)):
                lst.append(val)
            tick(progress, f"{policy} rho={rho}")
        growth_panel[policy] = series
        # Fig. 1: tokens in system over time at 14.3 qps, one seed.
        p = make_params(cfg, rates=rates_for_load(cfg, FIG1_LOAD, **_time_kw()), **keywords_read_by(policy, FIG1))
        b = batches(simulate(cfg, p, [0], record=True, warn=False), 0)
        keep = np.unique(np.linspace(0, len(b["start_s"]) - 1, 1500).astype(int))
        traj_panel[policy] = (b["start_s"][keep], b["tokens"][keep].astype(float), np.zeros(keep.size))
    return _stability_report(rows, loads, verdicts, growth_panel, traj_panel, horizon, S)


def _stability_report(rows, loads, verdicts, growth_panel, traj_panel, horizon, S) -> Report:
    below = [rho for rho in loads if rho < 1]
    above = [rho for rho in loads if rho > 1]
    checks = [
        (
            "Sarathi and Orca bounded at every load below capacity",
            all(verdicts[(p, rho)] == "bounded" for p in ("sarathi", "orca") for rho in below),
        ),
        (
            f"vLLM and FasterTransformer grow at Fig. 1's load rho = {FIG1_LOAD} (14.3 qps)",
            all(verdicts[(p, FIG1_LOAD)] == "grows" for p in ("vllm", "ft")),
        ),
        (
            "every policy grows above capacity (Theorem 1(b))",
            all(verdicts[(p, rho)] == "grows" for p in STABILITY_POLICIES for rho in above),
        ),
    ]
    table = markdown_table(
        [
            "policy",
            "rho",
            "qps",
            "growth (tokens/s)",
            "growth / offered",
            "verdict",
            "overflowed",
            "throughput (tokens/s)",
            "mean tokens in system",
            "partial batches",
        ],
        [
            [
                r["policy"],
                f"{r['load']:.2f}",
                f"{r['rate_qps']:.2f}",
                f"{r['growth_tokens_per_s']:.1f} ± {r['growth_ci95']:.1f}",
                f"{r['growth_fraction']:.3f} ± {r['growth_fraction_ci95']:.3f}",
                r["verdict"],
                f"{r['overflowed_seeds']}/{S}",
                f"{r['throughput_tokens_per_s']:.0f}",
                f"{r['mean_tokens_in_system']:.0f}",
                f"{r['partial_batch_fraction']:.2f}",
            ]
            for r in rows
        ],
    )
    largest = {
        p: max([rho for rho in loads if verdicts[(p, rho)] == "bounded"], default=None) for p in STABILITY_POLICIES
    }
    md = (
        f"Fig. 1's engine: b = 512, M = 256, prefill cap 512, t(b') = 45.5 ms + 0.18 ms/token "
        f"x (b' - 64)^+ (a assumed), requests of 129 prefill + 112 decode tokens, Poisson "
        f"arrivals; {horizon:.0f} s per run, {S} seeds; growth = least-squares slope of the "
        f"tokens in system after the burn-in, 'grows' when its 95% CI lies above "
        f"{GROWTH_THRESHOLD:.0%} of the offered tokens/s.\n\n"
        + table
        + "\n\n"
        + "\n".join(f"- {'PASS' if ok else 'FAIL'}: {name}" for name, ok in checks)
        + "\n"
        + "- largest bounded load per policy: "
        + ", ".join(f"{p} {('none' if v is None else f'{v:.2f}')}" for p, v in largest.items())
    )
    plot = dict(
        kind="curves",
        panels={
            "growth of tokens in system / offered tokens (95% CI)": growth_panel,
            f"tokens in system at rho = {FIG1_LOAD} (14.3 qps), seed 0": traj_panel,
        },
        axes={
            "growth of tokens in system / offered tokens (95% CI)": (
                "load rho (offered / capacity b / t_b)",
                "growth / offered (tokens/s per tokens/s)",
            ),
            f"tokens in system at rho = {FIG1_LOAD} (14.3 qps), seed 0": ("time (s)", "unprocessed tokens in system"),
        },
    )
    return Report(
        "stability",
        "Paper 004, Fig. 1 and Theorem 1: stability against the load",
        rows,
        md,
        all(ok for _, ok in checks),
        plot,
    )


# Section 4.2's two types (assumed: the paper gives no numbers): chat-like 129 / 112 tokens and
# summarization-like 512 / 32 tokens, Poisson, equal rates; M = b so Orca is work-conserving.
TWO_TYPES = (
    Independent(Poisson(129.0), Poisson(112.0), name="chat"),
    Independent(Poisson(512.0), Poisson(32.0), name="summarize"),
)
TWO_TYPE_POLICIES = (("sarathi", {}), ("orca", {}), ("wc_srpt", dict(inner_order="srpt")), ("vllm", {}))
DRAIN_FRACTION = 0.02
# The work-conserving ones, checked at a steady two-type load (full runs only).
TWO_TYPE_STEADY = TWO_TYPE_POLICIES[:3]


def _policy_of(label: str) -> str:
    return "wc" if label.startswith("wc") else label


def two_type(quick: bool = False, seeds: int | None = None, progress=None) -> Report:
    """Drain time from a backlog against the fluid model, two types (module docstring)."""
    S = seeds or (3 if quick else 8)
    require_int(S, "--seeds (the drain CI needs at least 3 seeds)", lo=3, hi=4096)
    loads = (0.5,) if quick else (0.5, 0.8)
    n0, horizon = (250, 300.0) if quick else (500, 700.0)
    ml = None
    rows, ok = [], True
    cap = capacity_tokens_per_s(FIG1["budget"], FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"])
    # One unit per (policy, load) point, then (full runs) one per steady-state policy.
    declare(progress, len(TWO_TYPE_POLICIES) * len(loads) + (0 if quick else len(TWO_TYPE_STEADY)))
    for label, static in TWO_TYPE_POLICIES:
        policy = _policy_of(label)
        base = BudgetConfig(
            workload=TWO_TYPES,
            policy=policy,
            horizon_s=horizon,
            table_size=8192,
            initial_requests=(n0, n0),
            drain_fraction=DRAIN_FRACTION,
            **static,
        )
        ml = mean_lengths(base)
        rates = [rates_for_load(base, rho, **_time_kw()) for rho in loads]
        cfg = enough_steps(base, rates[-1], FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"])
        kw = keywords_read_by(policy, dict(FIG1, max_requests=FIG1["budget"], prefill_cap=1024))
        results = simulate_points(cfg, [make_params(cfg, rates=r, **kw) for r in rates], range(S), warn=False)
        for rho, r, res in zip(loads, rates, results):
            m = res.metrics
            fluid = np.array(
                [
                    budget_drain_time_s((1 - DRAIN_FRACTION) * x0, r, ml[:, 0], ml[:, 1], cap)
                    for x0 in m["backlog_tokens"]
                ]
            )
            ratio = m["drain_time_s"] / fluid
            drained = np.isfinite(ratio)
            mean, _, half, _ = mean_ci(ratio[drained]) if drained.sum() else (math.nan,) * 4
            wc = policy != "vllm"
            good = bool(drained.all()) and abs(mean - 1) <= 0.1 if wc else True
            ok &= good
            rows.append(
                dict(
                    policy=label,
                    load=rho,
                    seeds=S,
                    backlog_per_type=n0,
                    fluid_drain_s=float(fluid.mean()),
                    drain_s=float(np.nanmean(m["drain_time_s"])) if drained.any() else math.nan,
                    ratio=mean,
                    ratio_ci95=half,
                    drained_seeds=int(drained.sum()),
                    work_conserving=wc,
                    check="PASS" if good else "FAIL",
                )
            )
            tick(progress, f"{label} rho={rho}")
    steady = [] if quick else _two_type_steady(S, progress)
    ok &= all(r["verdict"] == "bounded" for r in steady)
    return _two_type_report(rows, steady, ml, ok, S)


def _two_type_steady(S: int, progress) -> list[dict]:
    """Load (4.2) = 0.9 with two types, no backlog: the growth verdict per work-conserving
    policy."""
    out = []
    for label, static in TWO_TYPE_STEADY:
        base = BudgetConfig(
            workload=TWO_TYPES, policy=_policy_of(label), horizon_s=600.0, burn_in_s=100.0, table_size=8192, **static
        )
        r = rates_for_load(base, 0.9, **_time_kw())
        cfg = enough_steps(base, r, FIG1["c_s"], FIG1["a_s_per_token"], FIG1["b0"])
        m = simulate(
            cfg,
            make_params(cfg, rates=r, **keywords_read_by(cfg.policy, dict(FIG1, max_requests=FIG1["budget"]))),
            range(S),
            warn=False,
        ).metrics
        offered = float(np.dot(r, mean_lengths(cfg).sum(axis=1)))
        v, mean, half = verdict(m["token_growth_per_s"] / offered, m["overflowed"])
        out.append(dict(policy=label, load=0.9, growth_fraction=mean, growth_fraction_ci95=half, verdict=v))
        tick(progress, f"{label} steady")
    return out


def _two_type_report(rows, steady, ml, ok, S) -> Report:
    table = markdown_table(
        ["policy", "rho", "fluid drain (s)", "simulated (s)", "simulated / fluid", "drained", "check"],
        [
            [
                r["policy"],
                f"{r['load']:.2f}",
                f"{r['fluid_drain_s']:.1f}",
                f"{r['drain_s']:.1f}",
                f"{r['ratio']:.3f} ± {r['ratio_ci95']:.3f}",
                f"{r['drained_seeds']}/{S}",
                r["check"],
            ]
            for r in rows
        ],
    )
    md = (
        f"Two types on Fig. 1's engine with M = b = 512: chat (m_p, m_d) = ({ml[0, 0]:.1f}, "
        f"{ml[0, 1]:.1f}) and summarize ({ml[1, 0]:.1f}, {ml[1, 1]:.1f}) tokens, Poisson, equal "
        f"rates. Each run starts with a backlog of {rows[0]['backlog_per_type']} requests per "
        f"type; simulated = first batch with unprocessed tokens <= {DRAIN_FRACTION:.0%} of the "
        f"backlog's; fluid = (1 - {DRAIN_FRACTION}) f(0) / delta per seed, f(0) its realized "
        "backlog tokens (the corrected workload (m_p + m_d) Z_p + m_d Z_d with every request in "
        "prefill). Work-conserving policies must be within 10% of the fluid time.\n\n" + table
    )
    if steady:
        md += "\n\nSteady state at two-type load (4.2) = 0.9, no backlog:\n\n" + markdown_table(
            ["policy", "growth / offered", "verdict"],
            [
                [r["policy"], f"{r['growth_fraction']:.3f} ± {r['growth_fraction_ci95']:.3f}", r["verdict"]]
                for r in steady
            ],
        )
    return Report(
        "two_type", "Paper 004, section 4.2 and Prop. 2: two types, fluid drain time", rows + steady, md, bool(ok)
    )


# ------------------------------------------------------------------------------------- Fig. 9
# The paper names the model (CodeLlama-34B) and the trace ("real production conversation
# traces", "high arrival rate") but gives no batch-time constants, attention coefficients or
# rate. Every number below is assumed; each is a parameter of `fig9`.
FIG9_BUDGETS = (128, 512, 1024)
# alpha: attention per (query, key) pair relative to the linear layers' per-token cost a. For
# CodeLlama-34B (48 layers, d_model 8192) a pair costs 4 d 48 = 1.6 MFLOP against 2 * 34e9 =
# 68 GFLOP per token, so alpha = a * 1.6e6 / 68e9 = 4e-9 s at a = 0.18 ms/token.
FIG9_ALPHA_S = 4e-9
# beta: decode attention is memory-bound: each context token's KV (2 x 48 layers x 8 KV heads
# x 128 x 2 bytes = 196 KB) read once per decode step at ~4 TB/s (two A100s) = 5e-8 s.
# At the trace's lengths (m_p = 1155, m_d = 211) the attention terms add ~0.023 s per request
# to the ~0.25 s of eq. (2.3): ~9%, a modest fraction of the batch time.
FIG9_BETA_S = 5e-8
# rate_scale: the trace offers 7554 tokens/s at its own rate (5.5 requests/s); 0.40 gives
# rho = 0.74 of b / t_b at b = 512 (c = 45.5 ms, a = 0.18 ms/token, b0 = 64), ~0.81 with the
# attention terms: high but below capacity on average, while the trace's bursts (a minute can
# bring 1.6x the mean) overload it for a while. b = 1024 has more capacity (rho = 0.64) and
# b = 128 less (rho = 1.35: overloaded, its queue grows through the run).
FIG9_RATE_SCALE = 0.40
# M = b: Sarathi takes one decode token per decoding request with no request cap (the paper's
# policy; vLLM's max_num_seqs would bind at b = 512 and 1024 only in bursts).
# A budget's median latency is "much worse" when it is at least this many times the best
# other budget's (assumed; the paper's red line is several times the others).
MUCH_WORSE = 2.0
# Sizes: (horizon s, burn-in s, seeds, table slots); the table holds every request a run can
# have in system at b = 128 without rejecting one at the default rate.
FIG9_FULL = (1200.0, 120.0, 12, 2048)
FIG9_QUICK = (400.0, 60.0, 3, 1024)
_FIG9_QUANTILES = ("p50", "p90", "p99")


def fig9_trace_path():
    """../shared/data/azure_llm_2023_conv.csv beside the checkout or the working directory
    (`jaxsched.offline.workloads.azure_default_path`)."""
    from ..offline.workloads import azure_default_path

    return azure_default_path()


def fig9(
    quick: bool = False,
    seeds: int | None = None,
    progress=None,
    *,
    trace_path=None,
    budgets=FIG9_BUDGETS,
    rate_scale: float = FIG9_RATE_SCALE,
    alpha: float = FIG9_ALPHA_S,
    beta: float = FIG9_BETA_S,
    c_s: float = DEFAULT_C_S,
    a_s_per_token: float = DEFAULT_A_S_PER_TOKEN,
    b0: int = DEFAULT_B0,
    horizon_s: float | None = None,
    burn_in_s: float | None = None,
    table_size: int | None = None,
) -> Report:
    """Sarathi's token budget against TTFT and end-to-end latency on the Azure conversation
    trace (module docstring; constants FIG9_*). One static config (the budgets are traced), so
    the budgets x seeds runs share one compilation (`simulate_points`). Seed s replays the
    trace from its own starting row (docs/budget-semantics.md §1); every budget sees the same
    requests per seed, so differences between budgets are paired."""
    H, burn, S0, Q = FIG9_QUICK if quick else FIG9_FULL
    H = H if horizon_s is None else horizon_s
    burn = burn if burn_in_s is None else burn_in_s
    Q = Q if table_size is None else table_size
    S = seeds or S0
    require_int(S, "--seeds (the latency CIs need at least 2 seeds)", lo=2, hi=4096)
    budgets = tuple(require_int(b, "budgets", lo=1) for b in budgets)
    require(
        len(budgets) >= 2 and len(set(budgets)) == len(budgets),
        "budgets",
        "at least two distinct token budgets",
        budgets,
    )
    rate_scale = require_float(rate_scale, "rate_scale", lo=0.0, lo_open=True)
    trace = read_trace(fig9_trace_path() if trace_path is None else trace_path, times=True)
    base = BudgetConfig(
        workload=(trace,),
        arrival_mode="trace",
        policy="sarathi",
        horizon_s=H,
        burn_in_s=burn,
        table_size=Q,
        attention=True,
        attention_prefix=True,
        hist_octave_bits=6,
    )
    cfg = enough_steps(base, None, c_s, a_s_per_token, b0, rate_scale=rate_scale)
    timing = dict(c_s=c_s, a_s_per_token=a_s_per_token, b0=b0)
    params = [
        make_params(cfg, rate_scale=rate_scale, budget=b, max_requests=b, alpha=alpha, beta=beta, **timing)
        for b in budgets
    ]
    # One unit per budget; the runner reports its blocks through a Share of them, so the bar
    # keeps its total, shows the compilation as a phase and its ETA counts the runs only.
    declare(progress, len(budgets))
    results = simulate_points(
        cfg, params, range(S), warn=False, progress=share(progress, 0, len(budgets), "budgets x seeds")
    )
    rows = []
    for b, res in zip(budgets, results):
        m = res.metrics
        row = dict(
            budget=b,
            seeds=S,
            rate_scale=rate_scale,
            load=trace_load(cfg, rate_scale, b, **timing),
            offered_tokens_per_s=trace_token_rate(cfg, rate_scale),
        )
        for name in ("ttft", "latency"):
            for tag in _FIG9_QUANTILES:
                mean, _, half, _ = mean_ci(m[f"{name}_{tag}_s"])
                row[f"{name}_{tag}_s"] = mean
                row[f"{name}_{tag}_ci95"] = half
        row.update(
            tbt_mean_s=float(m["tbt_mean_s"].mean()),
            throughput_tokens_per_s=float(m["throughput_tokens_per_s"].mean()),
            mean_requests_in_system=float(m["mean_requests_in_system"].mean()),
            requests_end=float(m["requests_end"].mean()),
            num_departed=float(m["num_departed"].mean()),
            overflowed_seeds=int(np.sum(m["overflowed"] > 0)),
            unfinished_seeds=int(np.sum(m["done"] == 0)),
        )
        rows.append(row)
    return _fig9_report(rows, results, budgets, cfg, trace, alpha, beta, timing, S)


def _paired(results, budgets, metric: str, b: int, other: int) -> tuple[float, float]:
    """Mean and 95% CI half-width over seeds of metric(other) - metric(b) (same requests)."""
    i, j = budgets.index(b), budgets.index(other)
    d = results[j].metrics[metric] - results[i].metrics[metric]
    mean, _, half, _ = mean_ci(d)
    return mean, half


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign-test p-value of `wins` against `losses` (ties left out): under no
    difference each untied pair is a fair coin."""
    n, k = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


# Significance level of the sign tests behind fig9's verdicts.
FIG9_LEVEL = 0.05


def _lowest(results, budgets, metric: str, b: int) -> tuple[str, str]:
    """("yes" | "no" | "unclear", detail): is budget b's `metric` the lowest? Paired over the
    seeds (every budget replays the same requests per seed), by a two-sided sign test at
    FIG9_LEVEL: "yes" when b is lower than every other budget significantly often, "no" when
    some other budget is lower than b significantly often, "unclear" otherwise. A sign test,
    not a t interval: a few seeds replaying a burst dominate the differences' variance."""
    means = {x: float(np.mean(r.metrics[metric])) for x, r in zip(budgets, results)}
    mine = results[budgets.index(b)].metrics[metric]
    parts, beats, beaten = [], [], []
    for o in budgets:
        if o == b:
            continue
        theirs = results[budgets.index(o)].metrics[metric]
        # The log-histogram quantiles resolve ~1%, so close runs often read the same: ties.
        w, l = int(np.sum(mine < theirs)), int(np.sum(mine > theirs))
        p = sign_test_p(w, l)
        beats.append(w > l and p < FIG9_LEVEL)
        beaten.append(l > w and p < FIG9_LEVEL)
        d, h = _paired(results, budgets, metric, b, o)
        parts.append(
            f"b = {o}: {means[o]:.3g} s, {d:+.3g} ± {h:.2g} s paired; b = {b} lower "
            f"in {w}, higher in {l}, equal in {mine.size - w - l} of {mine.size} "
            f"seeds, sign test p = {p:.2g}"
        )
    detail = f"b = {b}: {means[b]:.3g} s; " + "; ".join(parts)
    verdict = "yes" if all(beats) else ("no" if any(beaten) else "unclear")
    return verdict, detail


def _fig9_report(rows, results, budgets, cfg, trace, alpha, beta, timing, S) -> Report:
    cols = [f"{n}_{t}_s" for n in ("latency", "ttft") for t in _FIG9_QUANTILES]
    cells = {c: mean_ci_column([r.metrics[c] for r in results]) for c in cols}
    table = markdown_table(
        [
            "b",
            "rho",
            "E2E p50 (s)",
            "E2E p90 (s)",
            "E2E p99 (s)",
            "TTFT p50 (s)",
            "TTFT p90 (s)",
            "TTFT p99 (s)",
            "mean TBT (s)",
            "throughput (tokens/s)",
            "requests at end",
            "overflowed",
        ],
        [
            [
                str(r["budget"]),
                f"{r['load']:.2f}",
                *(cells[c][k] for c in cols),
                f"{r['tbt_mean_s']:.3f}",
                f"{r['throughput_tokens_per_s']:.0f}",
                f"{r['requests_end']:.0f}",
                f"{r['overflowed_seeds']}/{S}",
            ]
            for k, r in enumerate(rows)
        ],
    )
    findings = []  # (CSV column, finding, verdict, detail)
    if 512 in budgets:
        v, detail = _lowest(results, budgets, "latency_p50_s", 512)
        findings.append(
            ("moderate_lowest_e2e", "a moderate budget (512) gives the lowest median E2E latency", v, detail)
        )
    top = max(budgets)
    v, detail = _lowest(results, budgets, "ttft_p50_s", top)
    findings.append(("largest_lowest_ttft", f"the largest budget ({top}) gives the lowest median TTFT", v, detail))
    low = min(budgets)
    p50 = {b: float(np.mean(r.metrics["latency_p50_s"])) for b, r in zip(budgets, results)}
    best_other = min(v for b, v in p50.items() if b != low)
    ratio = p50[low] / best_other
    findings.append(
        (
            "smallest_much_worse",
            f"the smallest budget ({low}) is much worse (median E2E >= {MUCH_WORSE:g}x the best other budget's)",
            "yes" if ratio >= MUCH_WORSE else "no",
            f"{p50[low]:.3g} s = {ratio:.2f}x {best_other:.3g} s",
        )
    )
    c_ms, a_ms = timing["c_s"] * 1e3, timing["a_s_per_token"] * 1e3
    span = trace.arrival_s[-1] - trace.arrival_s[0]
    md = (
        f"Sarathi-Serve (decode first, chunked prefill, M = b) on `{trace.name}` "
        f"({trace.prompt.size} requests over {span:.0f} s; m_p = "
        f"{trace.prompt.mean():.0f}, m_d = {trace.output.mean():.0f} tokens), replayed at "
        f"rate_scale {rows[0]['rate_scale']:g} ({rows[0]['offered_tokens_per_s']:.0f} tokens/s "
        f"offered), each seed from its own starting row. t(b') = {c_ms:g} ms + {a_ms:g} "
        f"ms/token x (b' - {timing['b0']})^+ + alpha sum dp (dp + P) + beta sum_decode (P + D), "
        f"alpha = {alpha:g} s, beta = {beta:g} s (assumed). {cfg.horizon_s:.0f} s per run, "
        f"metrics after {cfg.burn_in_s:.0f} s, {S} seeds; quantiles are per seed "
        f"(log-histograms, 64 bins per octave), shown as mean ± 95% CI over seeds; rho = "
        f"offered tokens/s / (b / t_b) without the attention terms.\n\n"
        + table
        + "\n\nThe paper's findings (section 5), judged from these numbers: the budgets "
        f"compared seed by seed (same requests), two-sided sign test at {FIG9_LEVEL:g} "
        "(unclear: not significant either way); differences as mean ± 95% CI over seeds:\n\n"
        + "\n".join(f"- {v.upper()}: {name} ({detail})" for _, name, v, detail in findings)
    )
    over = [r["budget"] for r in rows if r["load"] >= 1]
    if over:
        md += (
            "\n\nb = " + ", ".join(map(str, over)) + " is above capacity at this rate "
            "(rho >= 1): its queue grows through the run, so its latencies grow with the "
            "horizon."
        )
    ok = all(r["overflowed_seeds"] == 0 and r["unfinished_seeds"] == 0 for r in rows)
    if not ok:
        md += (
            "\n\nSome runs overflowed their table or did not reach the horizon: raise "
            "table_size (the numbers above leave rejected requests out)."
        )
    x = list(budgets)
    panel = lambda name: {
        tag: (x, [r[f"{name}_{tag}_s"] for r in rows], [r[f"{name}_{tag}_ci95"] for r in rows])
        for tag in _FIG9_QUANTILES
    }
    ylabel = "seconds (mean over seeds, 95% CI)"
    plot = dict(
        kind="curves",
        panels={"end-to-end latency": panel("latency"), "time to first token": panel("ttft")},
        axes={
            "end-to-end latency": ("token budget b (tokens per batch)", ylabel),
            "time to first token": ("token budget b (tokens per batch)", ylabel),
        },
    )
    for r in rows:
        r.update({key: v for key, _, v, _ in findings})
    return Report(
        "fig9",
        "Paper 004, Fig. 9: Sarathi's token budget against latency (Azure conversation trace)",
        rows,
        md,
        ok,
        plot,
    )


EXPERIMENTS = {f.__name__: f for f in (stability, two_type, fig9)}
