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
# # jaxsched quickstart
#
# jaxsched runs thousands of independent simulations of an LLM-serving scheduler in lockstep:
# one `lax.scan` over steps, `vmap`ped over seeds. Every engine runs through one runner,
# `jaxsched.simulate(config, params, seeds)`, which returns per-seed metrics (and, with
# `record=True`, per-step trajectories).
#
# This notebook shows the **dp** engine of the BF-IO paper (G workers with B sticky slots each,
# decoding behind a per-step barrier) and, at the end, the **kv** engine of the WAIT paper (one
# engine whose KV cache holds at most C tokens). `bfio.ipynb` and `wait.ipynb` go through the
# two papers' experiments.
#
# The notebook runs in about 65 s on 2 CPU cores.

# %%
import tempfile
from pathlib import Path

import numpy as np
from IPython.display import Image, Markdown, display

import jaxsched as js
from jaxsched.dp.plots import load_trajectories
from jaxsched.stats import mean_ci

import matplotlib.pyplot as plt
# %matplotlib inline

# Plot files go to a temporary folder, removed when the kernel exits.
OUT = tempfile.TemporaryDirectory(prefix="jaxsched-quickstart-")
out = Path(OUT.name)

# %% [markdown]
# ## Policies compared over seeds
#
# Every decode step lasts C + t_l * max_g L_g seconds, where L_g is the token load of worker g:
# the step waits for the most loaded worker, so imbalance is wasted time. The metric
# `avg_imbalance_tokens` is the mean over steps of sum_g (max L - L_g). Below, FCFS, JSQ by token
# load and BF-IO (valley fill for H = 0, a lookahead over H = 20 steps) run on the BurstGPT-like
# workload at the Table 1 shape (G = 16, B = 72, pool R = 64), 32 seeds each, in one vmapped
# call per policy. Each cell gives the mean ± the 95% confidence half-width over seeds.

# %%
seeds = np.arange(32)
rows = []
for policy, H in [("fcfs", 0), ("jsq_tokens", 0), ("bfio", 0), ("bfio", 20)]:
    cfg = js.dp.DPConfig(num_workers=16, slots_per_worker=72, pool_size=64, policy=policy,
                         lookahead_steps=H, num_steps=1500, workload=js.BurstGPTLike())
    res = js.simulate(cfg, js.dp.make_params(cfg), seeds)
    imb, _, imb_ci, n = mean_ci(res.metrics["avg_imbalance_tokens"])
    thr, _, thr_ci, _ = mean_ci(res.metrics["throughput_tokens_per_s"])
    label = f"bfio(H={H})" if policy == "bfio" else policy
    rows.append(f"| {label} | {imb:,.0f} ± {imb_ci:,.0f} | {thr:,.0f} ± {thr_ci:,.0f} | "
                f"{res.wall_s:.1f} |")
display(Markdown(f"{len(seeds)} seeds, 1500 decode steps each\n\n"
                 "| policy | avg imbalance (tokens) | throughput (tokens/s) | wall (s) |\n"
                 "|---|---|---|---|\n" + "\n".join(rows)))

# %% [markdown]
# The metric names and units of each engine are listed in `js.dp.METRICS` and `js.kv.METRICS`.
#
# ## Load trajectories
#
# With `record=True` the runner also returns per-step trajectories. `hist_loads` holds every
# worker's load at every step (post-growth, pre-removal), drawn here as in the paper's Fig. 6:
# under FCFS the workers drift apart by tens of thousands of tokens, BF-IO keeps them together.

# %%
loads = {}
for policy in ["fcfs", "bfio"]:
    cfg = js.dp.DPConfig(policy=policy, num_steps=1500)
    res = js.simulate(cfg, js.dp.make_params(cfg), [0], record=True)
    loads[policy] = res.trajectories["hist_loads"][0]        # int[steps, G], tokens
png = load_trajectories(loads, out / "loads.png",
                        title="Per-worker load, G = 16, B = 72, R = 64, BurstGPT-like workload: "
                              "seed 0, first 1500 steps")
display(Image(filename=str(png)))

# %% [markdown]
# ## Bad input
#
# Every invalid value raises one `js.ConfigError` that names the field and the allowed range,
# when the config or the params are built, before anything compiles:

# %%
for bad in (lambda: js.dp.DPConfig(num_workers=0),
            lambda: js.dp.DPConfig(policy="bfio", lookahead_steps=-1),
            lambda: js.kv.make_params(js.kv.KVConfig(), rates=(1e5, 1e5))):
    try:
        bad()
    except js.ConfigError as err:
        print(f"ConfigError: {err}\n")

# %% [markdown]
# ## The kv engine
#
# The kv engine simulates one inference engine with a KV cache of C tokens: requests of m types
# (prefill l_j and decode l'_j tokens) arrive as Poisson streams, each iteration lasts
# d0 + d1 * (tokens in the batch) seconds (the WAIT paper's eq. (1)), and a policy forms each
# batch. Here Nested WAIT (the paper's Algorithm 2, thresholds from the fluid rule) and FCFS
# with a memory check run on four types over 16 seeds.

# %%
kv_res = {}
for policy in ("nested_wait", "fcfs"):
    cfg = js.kv.KVConfig(prefill_tokens=(10, 10, 10, 10), decode_tokens=(20, 40, 80, 160),
                         policy=policy, num_requests=2000)
    params = js.kv.make_params(cfg, rates=(2.0, 4.0, 8.0, 16.0), d0_s=0.01, d1_s_per_token=1e-6,
                               capacity_tokens=110_000)
    kv_res[policy] = res = js.simulate(cfg, params, seeds=range(16), record=True)
    m = res.metrics
    print(f"{policy:12s} thresholds {np.asarray(params.thresholds).tolist()}: "
          f"latency {m['latency_mean_s'].mean():.2f} s (p99 {m['latency_p99_s'].mean():.2f} s), "
          f"throughput {m['throughput_tokens_per_s'].mean():,.0f} tokens/s, "
          f"peak KV {m['peak_memory_tokens'].mean():,.0f} tokens")

# %% [markdown]
# `js.kv.batches(res, s)` reads seed s's recorded batches (start time, duration, tokens, KV
# memory). Nested WAIT holds requests back until a segment's threshold is met, so it runs
# fewer, fuller batches than FCFS; at this light load the waiting costs latency (the means
# above). `wait.ipynb` goes to operating points where memory binds.

# %%
fig, ax = plt.subplots(figsize=(9, 3))
for policy, res in kv_res.items():
    b = js.kv.batches(res, 0)
    ax.plot(b["start_s"], b["memory_tokens"] / 1e3, lw=0.6, label=f"{policy} ({len(b['start_s'])} batches)")
ax.set(xlabel="time (s)", ylabel="KV memory of the batch (k tokens)")
ax.set_title("kv engine, 4 types (prefill 10, decode 20/40/80/160), C = 110,000 tokens, "
             "2,000 requests: seed 0 of 16", fontsize=10)
ax.legend(fontsize=8, loc="center right")
plt.show()
