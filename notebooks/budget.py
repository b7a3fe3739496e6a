# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Token budgets on the budget and network engines
#
# Paper 004 ("Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents") models
# one LLM engine whose batches carry at most b tokens: a batch of b' tokens lasts
# t(b') = c + a (b' - b0)^+ (eq. (2.3)), and requests arrive as Poisson streams with prefill
# and decode tokens. A policy is work-conserving when it fills every batch up to b whenever
# enough work waits; Theorem 1 says such policies are stable at every load
# rho = lambda (m_p + m_d) t_b / b below 1, while policies that leave batches partial may not
# be. Section 4 extends this to networks of engines ("agents"), where work conservation at
# each agent no longer suffices: the Rybko-Stolyar network of Fig. 8 grows without bound at
# load 0.9 per agent under one priority rule and stays bounded under its swap. This notebook
# runs, at reduced sizes:
#
# 1. **Fig. 1 and Theorem 1**: the growth of the tokens in system against the load for
#    Sarathi-Serve, Orca, vanilla vLLM and FasterTransformer (`jaxsched.budget`),
# 2. **Fig. 8**: the Rybko-Stolyar network under both priority rules (`jaxsched.network`).
#
# The full-size runs are `jaxsched check stability` (6 loads, 600 s, 8 seeds; about 15 minutes)
# and `jaxsched network experiment rybko_stolyar` (4,000 slots, 6 seeds; about 23 minutes);
# their numbers are on the docs page `docs/papers/004-budget.md`.
#
# The notebook runs in about 80 s on 2 CPU cores.

# %%
import tempfile
from pathlib import Path

import numpy as np
from IPython.display import Image, Markdown, display

from jaxsched import simulate, simulate_points
from jaxsched import budget, network
from jaxsched.budget import experiments as bx
from jaxsched.budget.config import enough_steps, keywords_read_by, mean_lengths, rates_for_load
from jaxsched.network import experiments as nx
from jaxsched.network.engine import KIND_ARRIVAL, KIND_BATCH, KIND_FLUSH
from jaxsched.plots import plot_offline
from jaxsched.results import Report, markdown_table

# Plot files go to a temporary folder, removed when the kernel exits.
OUT = tempfile.TemporaryDirectory(prefix="jaxsched-budget-")
out = Path(OUT.name)

# %% [markdown]
# ## Fig. 1 and Theorem 1: stability against the load
#
# Fig. 1's engine (`bx.FIG1`): b = 512 tokens per batch, at most M = 256 requests, c = 45.5 ms,
# b0 = 64 and a = 0.18 ms/token (assumed; the paper's 0.30 would put Fig. 1's 14.3 qps above
# capacity); every request has 129 prefill and 112 decode tokens. Fig. 1's 14.3 qps is
# rho = 0.85. For each policy one `simulate_points` call runs every load and seed in one
# compiled program; the growth is the least-squares slope of the tokens in system after the
# burn-in, and a run "grows" when the 95% CI of growth / offered tokens lies above 2%
# (`bx.verdict`), is "bounded" when it lies below, "unclear" otherwise. Here 3 loads, 4 seeds
# and 200 s per run (40 s burn-in). The request table holds 2,048 requests for the
# work-conserving policies and 4,096 for vLLM and FasterTransformer, whose backlogs grow; a run
# that fills it is flagged `overflowed` and counts as growing.

# %%
LOADS, SEEDS, HORIZON_S, BURN_IN_S = (0.7, 0.85, 1.1), range(4), 200.0, 40.0
timing = {k: bx.FIG1[k] for k in ("budget", "c_s", "a_s_per_token", "b0")}
rows, growth, fig1 = [], {}, {}
for policy in bx.STABILITY_POLICIES:
    table = 4096 if policy in ("vllm", "ft") else 2048
    base = budget.BudgetConfig(policy=policy, horizon_s=HORIZON_S, burn_in_s=BURN_IN_S, table_size=table)
    cfg = enough_steps(base, rates_for_load(base, max(LOADS), **timing), bx.FIG1["c_s"],
                       bx.FIG1["a_s_per_token"], bx.FIG1["b0"])
    work = float(mean_lengths(cfg).sum())  # tokens per request
    rates = [rates_for_load(cfg, rho, **timing) for rho in LOADS]
    params = [budget.make_params(cfg, rates=r, **keywords_read_by(policy, bx.FIG1)) for r in rates]
    results = simulate_points(cfg, params, SEEDS, record=True, warn=False)
    growth[policy] = ([], [], [])
    for rho, r, res in zip(LOADS, rates, results):
        m = res.metrics
        offered = float(r.sum()) * work
        v, mean, half = bx.verdict(m["token_growth_per_s"] / offered, m["overflowed"])
        rows.append([policy, f"{rho:.2f}", f"{r.sum():.2f}", f"{mean:.3f} ± {half:.3f}", v,
                     f"{int((m['overflowed'] > 0).sum())}/{len(SEEDS)}",
                     f"{m['throughput_tokens_per_s'].mean():.0f} / {offered:.0f}",
                     f"{m['mean_tokens_in_system'].mean():,.0f}",
                     f"{m['partial_batch_fraction'].mean():.2f}"])
        for column, value in zip(growth[policy], (rho, mean, half)):
            column.append(value)
        if rho == bx.FIG1_LOAD:  # Fig. 1: seed 0's tokens in system over time at 14.3 qps
            b = budget.batches(res, 0)
            fig1[policy] = (b["start_s"], b["tokens"].astype(float), np.zeros(len(b["tokens"])))
display(Markdown(markdown_table(
    ["policy", "rho", "qps", "growth / offered", "verdict", "overflowed", "served / offered (tokens/s)",
     "mean tokens in system", "partial batches"], rows)))

# %%
growth_title, fig1_title = "growth of tokens in system / offered (95% CI)", \
    f"tokens in system at rho = {bx.FIG1_LOAD} (14.3 qps), seed 0"
report = Report(
    "stability", f"Fig. 1 engine (b = 512, M = 256), 129 + 112 tokens per request: "
    f"{len(SEEDS)} seeds, {HORIZON_S:.0f} s per run, {BURN_IN_S:.0f} s burn-in", [], "", True,
    plot=dict(kind="curves", panels={growth_title: growth, fig1_title: fig1},
              axes={growth_title: ("load rho", "growth / offered tokens per s"),
                    fig1_title: ("time (s)", "unprocessed tokens")}))
display(Image(filename=str(plot_offline(report, out / "stability.png"))))

# %% [markdown]
# The paper's split shows at 14.3 qps: Sarathi and Orca, work-conserving, keep the backlog
# bounded and serve all the offered tokens, while vanilla vLLM, whose prefill-only batches of
# whole prompts stay partial (three 129-token prompts in a 512-token budget), falls behind, and
# FasterTransformer (request-level batching: a group of three requests decodes 112 batches of
# three tokens) serves a small fraction of the offered tokens at every load. Above capacity
# (rho = 1.1) every policy grows, as Theorem 1(b) says.
#
# ## Fig. 8: the Rybko-Stolyar network
#
# Two agents with b = 768 (and M = b); every batch lasts one slot (c = 1, a = 0). Type A visits
# agent 0 with a short task (Poisson 32 prefill + 32 decode tokens), then agent 1 with a long
# one (Poisson 512 + 32); type B the mirror. Both types arrive at the rate that puts each agent
# at load 0.9 (`nx.rs_rates`). Each agent gives strict priority by type (`policy="priority"`):
# in the first rule to its long, exiting class, in the second to its short, entering one
# (`nx.RS_ORDERS`). The full run (`jaxsched network experiment rybko_stolyar`) simulates 4,000
# slots over 6 seeds; here 800 slots (100 burn-in) over 4 seeds, with a table of 1,536 tasks.
# The verdict is on the requests in the network (their growth per slot as a fraction of the
# offered requests per slot).

# %%
RS_SEEDS, RS_HORIZON, RS_BURN_IN = range(4), 800.0, 100.0
rs_rows, rs_panels = [], {"requests in the network": {}, "tokens in the network": {}}
names = {"unstable": "priority to the long, exiting class", "stable": "priorities swapped"}
for name, orders in nx.RS_ORDERS.items():
    cfg = nx.rs_config(orders, RS_HORIZON, RS_BURN_IN, 1536)
    rates = nx.rs_rates(cfg)
    res = simulate(cfg, network.make_params(cfg, rates=rates, **nx.RS_AGENT), RS_SEEDS, record=True, warn=False)
    m = res.metrics
    v, mean, half = bx.verdict(m["request_growth_per_s"] / float(rates.sum()), m["overflowed"])
    rs_rows.append([names[name], str(orders), f"{m['request_growth_per_s'].mean():.3f}",
                    f"{mean:.3f} ± {half:.3f}", v, f"{int((m['overflowed'] > 0).sum())}/{len(RS_SEEDS)}",
                    f"{m['requests_end'].mean():.0f}",
                    f"{m['throughput_requests_per_s'].mean():.3f} / {rates.sum():.3f}"])
    traj = res.trajectories  # seed 0, at every arrival and batch end
    keep = np.flatnonzero(np.isin(traj["kind"][0], (KIND_ARRIVAL, KIND_BATCH, KIND_FLUSH)))
    t = traj["t_hi"][0][keep].astype(np.float64) + traj["t_lo"][0][keep]
    for key, title in (("requests", "requests in the network"), ("tokens", "tokens in the network")):
        rs_panels[title][names[name]] = (t, traj[key][0][keep].astype(float), np.zeros(keep.size))
display(Markdown(markdown_table(
    ["priority", "type orders (agent 0, agent 1)", "request growth / slot", "growth / offered",
     "verdict", "overflowed", "requests at end", "served / offered requests per slot"], rs_rows)))
report = Report(
    "rybko_stolyar", f"Rybko-Stolyar network (Fig. 8): b = 768, one slot per batch, load 0.9 per "
    f"agent; seed 0 of {len(RS_SEEDS)}, {RS_HORIZON:.0f} slots", [], "", True,
    plot=dict(kind="curves", panels=rs_panels,
              axes={title: ("time (slots)", title.split(" in ")[0]) for title in rs_panels}))
display(Image(filename=str(plot_offline(report, out / "rybko_stolyar.png"))))

# %% [markdown]
# Both rules are work-conserving at each agent and each agent's load is 0.9, yet under the
# first the requests in the network grow steadily: while one agent serves its long, exiting
# class, the other starves of the short tasks that would feed it, and the two alternate. With
# the priorities swapped, the network serves the offered requests and stays small. The tokens
# swing between the two long classes (a burst of short tasks finishing together moves hundreds
# of long tasks at once), so their slope is noisy and the verdict is taken on the requests.
