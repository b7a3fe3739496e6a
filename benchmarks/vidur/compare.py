"""jaxsched's budget engine side by side with Vidur (microsoft/vidur) on the same requests.

    python -m benchmarks.vidur.compare [--quick] [--out DIR] [--tolerance 0.05]
        [--requests N] [--max-requests M] [--kv-blocks K] [--admission-cap batch|running]
        [--name STEM] [--trace PATH]

Workloads: (a) the first N requests of the Azure 2023 conversation trace, arrival times scaled
to a chosen load, replayed by jaxsched (`arrival_mode="trace"`, a seed whose replay starts at
row 0); (b) a Poisson stream of Poisson-length requests (jaxsched's own arrival stream).
Each workload runs through jaxsched's `sarathi`, `vllm` and `orca` policies, recorded with
`record_members`; the requests of the run (`request_stream`: the same float64 arrival times,
prompts, and v_d + 1 decode tokens, Vidur's count) go to Vidur's replica scheduler of the same
name, one replica, as a processed trace, with jaxsched's batch time installed as Vidur's
execution-time predictor (`vidur_predictor`). Both use eq. (2.3) (and, in the full run, the
linear model too) with the same constants, the same request cap M, the same chunk/budget, and
memory made non-binding in Vidur (jaxsched's budget engine has no KV limit). With
--admission-cap running, jaxsched's M caps the requests started and unfinished, as Vidur's
batch_size_cap caps its allocation map (BudgetConfig.admission_cap; default "batch": M caps
the requests of one batch).

Per scheduler and workload: TTFT, end-to-end latency and time per output token (mean, p50,
p90, p99 over requests), restarts, and the request-by-request differences, in
OUT/agreement.md and OUT/agreement.json (OUT/agreement_quick.* with --quick). When Vidur is
not set up (VIDUR_VENV, VIDUR_SRC; defaults /work/vidur-venv, /work/vidur-src) it prints
harness.SKIP_MESSAGE and exits 0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import harness
from .harness import SCHEDULERS, VidurPaths

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "vidur"
TOLERANCE = 0.05

# Paper 004's eq. (2.3) constants, jaxsched's defaults (c = 45.5 ms, a = 0.18 ms/token, b0 = 64).
PAPER = dict(c_s=0.0455, a_s_per_token=0.00018, b0=64)
# The linear model c + a_p prefill + a_d decode + a_c context: assumed coefficients (no
# measured ones exist here): the paper's c, its a per prefill and decode token without the
# b0 knee, and 5e-8 s per context token (decode attention reading a ~200 KB KV per token at
# ~4 TB/s, jaxsched's Fig. 9 beta).
LINEAR = dict(c_s=0.0455, prefill_s_per_token=0.00018, decode_s_per_token=0.00018, context_s_per_token=5e-8)
BUDGET = 512  # Sarathi's chunk = jaxsched's token budget b
MAX_REQUESTS = 256  # jaxsched's M = Vidur's batch_size_cap (Orca: <= the planner's 275 slots)
ORCA_BUDGET = 2**15  # Vidur's Orca has no token budget: jaxsched's largest b
VLLM_PREFILL_CAP = 2**30  # Vidur's vLLM cap (max_tokens_in_batch) is made non-binding too
MAX_TOKENS = 8192  # Vidur's max_tokens: >= every request's v_p + v_d + 1, so none is trimmed
BLOCK_SIZE = 16
# KV blocks: 4x what M requests of MAX_TOKENS need (Orca reserves MAX_TOKENS per request).
NUM_BLOCKS = 4 * MAX_REQUESTS * MAX_TOKENS // BLOCK_SIZE
TRACE_LOAD = 0.6  # offered tokens / (b / t_b) at b = 512 under eq. (2.3)
POISSON_LENGTHS = (512, 128)  # Poisson means of v_p and v_d (tokens)
POISSON_LOAD = 0.6
FULL = dict(requests=2000, models=("paper", "linear"))
QUICK = dict(requests=200, models=("paper",))


@dataclass(frozen=True)
class Caps:
    """The request cap M (jaxsched's max_requests = Vidur's batch_size_cap), Vidur's KV
    blocks, and what M caps in jaxsched (BudgetConfig.admission_cap: "batch", one batch's
    requests, or "running", the requests started and unfinished, Vidur's). The defaults make
    neither cap bind; smaller values (--max-requests, --kv-blocks) show what happens when they
    do."""

    max_requests: int = MAX_REQUESTS
    num_blocks: int = NUM_BLOCKS
    admission_cap: str = "batch"


@dataclass
class Workload:
    """One request set: kind "trace" (the Azure prefix CSV at rate_scale) or "poisson"
    (rate requests/s of Poisson(means) lengths); n requests."""

    name: str
    kind: str
    n: int
    trace: object = None
    rate_scale: float = 1.0
    rate: float = 0.0
    seed: int = 0
    info: dict = field(default_factory=dict)


def trace_start_seed(n_rows: int, limit: int = 1 << 22) -> int:
    """The smallest seed whose trace replay starts at row 0 (docs/budget-semantics.md §1:
    start = hash3(seed, 0, STREAM_TRACE_START) mod n), so the replay is the file in order."""
    import jax.numpy as jnp

    from jaxsched import rng

    step = 1 << 16
    for lo in range(0, limit, step):
        seeds = jnp.arange(lo, lo + step, dtype=jnp.uint32)
        start = np.asarray(rng.hash3(seeds, jnp.uint32(0), rng.STREAM_TRACE_START)) % np.uint32(n_rows)
        hit = np.flatnonzero(start == 0)
        if hit.size:
            return lo + int(hit[0])
    raise RuntimeError(f"no seed below {limit} starts a {n_rows}-row replay at row 0")


def make_workloads(n: int, work: Path, azure_path: Path) -> list[Workload]:
    """The prefix of the Azure 2023 conversation trace at `azure_path` (n rows at TRACE_LOAD)
    and the Poisson stream (n requests at POISSON_LOAD), both loads of eq. (2.3) at b = BUDGET."""
    from jaxsched.budget import BudgetConfig, capacity_tokens_per_s, trace_load
    from jaxsched.workload import read_trace

    csv_path = harness.trace_prefix_csv(azure_path, n, work / f"azure_conv_first{n}.csv")
    trace = read_trace(csv_path, times=True)
    probe = BudgetConfig(workload=(trace,), arrival_mode="trace", horizon_s=1.0)
    scale = TRACE_LOAD / trace_load(probe, 1.0, BUDGET, **PAPER)
    azure = Workload("azure_conv", "trace", n, trace=trace, rate_scale=scale, seed=trace_start_seed(n))
    azure.info = dict(file=str(azure_path), rows=n, rate_scale=scale, load=TRACE_LOAD, seed=azure.seed)
    mp, md = POISSON_LENGTHS
    rate = POISSON_LOAD * capacity_tokens_per_s(BUDGET, **PAPER) / (mp + md)
    poisson = Workload("poisson", "poisson", n, rate=rate, seed=0)
    poisson.info = dict(prefill_mean=mp, decode_mean=md, rate_per_s=rate, load=POISSON_LOAD, seed=0)
    return [azure, poisson]


def policy_params(scheduler: str, caps: Caps) -> dict:
    """make_params keywords of each policy, matched to Vidur's scheduler (module docstring)."""
    m = caps.max_requests
    if scheduler == "sarathi":
        return dict(budget=BUDGET, max_requests=m)
    if scheduler == "vllm":
        return dict(budget=BUDGET, max_requests=m, prefill_cap=VLLM_PREFILL_CAP)
    return dict(budget=ORCA_BUDGET, max_requests=m)


def timing_params(model: str) -> dict:
    """make_params keywords of the batch-time model ("paper": eq. (2.3); "linear")."""
    return dict(PAPER) if model == "paper" else dict(LINEAR)


def build_run(w: Workload, scheduler: str, model: str, horizon_s: float, table_size: int, caps: Caps):
    """(config, params) of one recorded jaxsched run."""
    from jaxsched.budget import BudgetConfig, make_params
    from jaxsched.budget.config import enough_steps
    from jaxsched.workload import Independent, Poisson

    common = dict(
        policy=scheduler,
        horizon_s=horizon_s,
        num_requests=w.n,
        table_size=table_size,
        record_members=True,
        hist_octave_bits=8,
        batch_time=model,
        admission_cap=caps.admission_cap,
    )
    timing = timing_params(model)
    steps_timing = {k: timing[k] for k in timing if k != "context_s_per_token"}
    if w.kind == "trace":
        cfg = BudgetConfig(workload=(w.trace,), arrival_mode="trace", **common)
        cfg = enough_steps(cfg, None, rate_scale=w.rate_scale, **steps_timing)
        arrivals = dict(rate_scale=w.rate_scale)
    else:
        law = Independent(Poisson(POISSON_LENGTHS[0]), Poisson(POISSON_LENGTHS[1]), name="poisson")
        cfg = BudgetConfig(workload=(law,), **common)
        cfg = enough_steps(cfg, [w.rate], **steps_timing)
        arrivals = dict(rates=[w.rate])
    return cfg, make_params(cfg, **arrivals, **policy_params(scheduler, caps), **timing)


def run_jaxsched(w: Workload, scheduler: str, model: str, caps: Caps) -> dict:
    """One recorded jaxsched run: its requests (`request_stream`), per-request times
    (`harness.per_request_from_batches`), its own histogram metrics, and wall/compile time."""
    from jaxsched.budget import batches, request_stream, simulate

    span = (w.trace.arrival_s[-1] / w.rate_scale) if w.kind == "trace" else w.n / w.rate
    # Long enough for the last request to finish at these loads (checked: none unfinished).
    horizon = 1.25 * span + 120.0
    cfg, params = build_run(w, scheduler, model, horizon, 512, caps)
    t0 = time.perf_counter()
    res = simulate(cfg, params, [w.seed], record=True, warn=False)
    wall = time.perf_counter() - t0
    stream = request_stream(cfg, params, w.seed, w.n + 64)
    b = batches(res, 0)
    per = harness.per_request_from_batches(b, stream)
    m = {k: float(v[0]) for k, v in res.metrics.items()}
    load = np.asarray(b["load"])
    return dict(
        stream=stream,
        per_request=per,
        metrics=m,
        wall_s=wall,
        compile_s=res.compile_s,
        num_batches=int(load.size),
        budget_bound_batches=int(np.sum(load >= params.budget)),
        max_batch_requests=int(np.max(np.sum((np.asarray(b["dp"]) > 0) | (np.asarray(b["dd"]) > 0), axis=1))),
    )


def scheduler_args(scheduler: str, csv_path: Path, out_dir: Path, caps: Caps) -> list[str]:
    """Vidur's arguments (`harness.vidur_args`) for `scheduler` replaying `csv_path` with the
    settings matched to jaxsched's: M and the KV blocks of `caps`, Sarathi's chunk = b, no
    request trimmed (compare.py and speed.py)."""
    return harness.vidur_args(
        scheduler,
        csv_path,
        out_dir,
        max_requests=caps.max_requests,
        chunk_size=BUDGET,
        max_tokens=MAX_TOKENS,
        num_blocks=caps.num_blocks,
        block_size=BLOCK_SIZE,
    )


def run_vidur(paths: VidurPaths, scheduler: str, model: str, csv_path: Path, out_dir: Path, caps: Caps) -> dict:
    """One Vidur process (`python -m vidur_predictor` = the predictor installed, then
    `vidur.main`) from Vidur's source root; its request metrics and wall time."""
    spec = dict(model=model, **timing_params(model))
    args = scheduler_args(scheduler, csv_path, out_dir, caps)
    _, wall = harness.run_vidur_process(paths, ["-m", "vidur_predictor"], args, spec, scheduler)
    found = harness.vidur_metrics_csv(out_dir)
    if found is None:
        raise RuntimeError(f"Vidur {scheduler}: no request_metrics.csv under {out_dir}")
    return dict(requests=harness.read_vidur_requests(found), wall_s=wall)


def orca_planner_slots(paths: VidurPaths) -> int:
    """Vidur's memory-planner request slots for the replica of `harness.vidur_args` (Orca's
    batch size is min(batch_size_cap, this)); read by running Vidur's MemoryPlanner."""
    code = (
        "from vidur.config import ReplicaConfig, TraceRequestGeneratorConfig\n"
        "from vidur.entities.replica import Replica\n"
        "from vidur.scheduler.utils.memory_planner import MemoryPlanner\n"
        "rc = ReplicaConfig(model_name='meta-llama/Meta-Llama-3-8B', tensor_parallel_size=4,"
        " device='a100', network_device='a100_pairwise_nvlink')\n"
        f"r = Replica(rc, TraceRequestGeneratorConfig(max_tokens={MAX_TOKENS}))\n"
        "print(int(MemoryPlanner(rc, r).get_max_batch_size()))\n"
    )
    out = subprocess.run(
        [str(paths.python), "-c", code], cwd=paths.src, env=harness.vidur_env(), capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(f"Vidur memory planner probe failed:\n{out.stderr[-2000:]}")
    return int(out.stdout.strip().splitlines()[-1])


def compare_one(paths: VidurPaths, w: Workload, scheduler: str, model: str, work: Path, tol: float, caps: Caps) -> dict:
    """jaxsched then Vidur on the same requests; the agreement record of one cell."""
    j = run_jaxsched(w, scheduler, model, caps)
    stream = j["stream"]
    longest = int(np.max(stream["vp"] + stream["vd"] + 1))
    if longest > MAX_TOKENS:
        raise RuntimeError(f"a request of {longest} tokens would be trimmed by Vidur (max_tokens {MAX_TOKENS})")
    tag = f"{w.name}_{scheduler}_{model}"
    csv_path = harness.stream_to_vidur_csv(work / f"{tag}.csv", stream)
    v = run_vidur(paths, scheduler, model, csv_path, work / tag, caps)
    vr = v["requests"]
    if vr["id"].size != stream["id"].size:
        raise RuntimeError(f"{tag}: Vidur finished {vr['id'].size} of {stream['id'].size} requests")
    jv = j["per_request"]
    unfinished = int(np.sum(~np.isfinite(jv["e2e_s"])))
    if unfinished or j["metrics"]["overflowed"]:
        flag = j["metrics"]["overflowed"]
        raise RuntimeError(f"{tag}: jaxsched left {unfinished} requests unfinished (overflowed: {flag})")
    return dict(
        workload=w.name,
        scheduler=scheduler,
        model=model,
        max_requests=caps.max_requests,
        vidur_num_blocks=caps.num_blocks,
        admission_cap=caps.admission_cap,
        requests=int(stream["id"].size),
        jax_unfinished=unfinished,
        rows=harness.agreement(jv, vr, tol),
        paired=harness.paired_differences(jv, vr),
        restarts=dict(jaxsched=0, vidur=int(vr["restarts"].sum())),
        jax_own_metrics=own_metrics(j["metrics"], jv, stream),
        jax_batches=j["num_batches"],
        jax_budget_bound_batches=j["budget_bound_batches"],
        jax_max_batch_requests=j["max_batch_requests"],
        jax_wall_s=j["wall_s"],
        jax_compile_s=j["compile_s"],
        vidur_wall_s=v["wall_s"],
    )


# What the settings match and the differences left, as read in Vidur's scheduler code (commit
# above); rendered into agreement.md.
SEMANTICS = """## Matched semantics

- Requests: Vidur replays jaxsched's own request list (float64 arrival times written with repr,
  the same prompts) with num_decode_tokens = v_d + 1: Vidur's request credits one output token when
  its prefill completes (`Request.on_batch_end`) and then decodes num_decode_tokens - 1 times, while
  jaxsched decodes v_d times after the prefill's batch. With this shift TTFT (Vidur's
  prefill_e2e_time) and end-to-end latency (request_e2e_time) mean the same event in both.
- Batch time: Vidur's predictor is replaced at run time (`vidur_predictor.install`, registered under
  Vidur's linear_regression key) by jaxsched's eq. (2.3) or linear model with the same float32
  constants; the linear model's context term counts Vidur's num_processed_tokens minus its
  prefill bonus token.
- Memory: jaxsched's budget engine has no KV limit, so Vidur's is made non-binding (num_blocks x
  block_size = 4 x M x max_tokens tokens); no request is restarted in either simulator. Vidur's
  max_tokens (8192) exceeds every request's v_p + v_d + 1, so no prefill is trimmed.
- sarathi: chunk_size = b = 512, batch_size_cap = M = 256. Vidur caps decodes only by the request
  count and admits at most batch_size_cap requests at a time; jaxsched caps decodes by b and M;
  with M <= b and at most M requests in a batch (see "most requests in one batch") both form the
  same batches.
- vllm: Vidur caps a prefill batch's padded tokens (requests x longest prompt) by
  max_tokens_in_batch, jaxsched the sum of prompts by prefill_cap; both are made non-binding
  (8192 x 256 and 2^30) so both take every waiting prompt up to M requests.
- orca: Vidur's Orca has no token budget and never chunks a prompt (whole prompts of new requests
  after one decode token per running request, up to min(M, the memory planner's slots = 275));
  jaxsched's orca runs at its largest budget b = 2^15, and "at the budget" (batches with b' >= b)
  = 0 shows the budget never bound, so prefill-first and decode-first ordering give the same
  batch. (For vllm that count is the prefill batches above 512 tokens, which no cap limits; for
  sarathi the batches filled to the chunk.)
- When a cap binds (runs with --max-requests or --kv-blocks below the defaults), the differences
  are named per row: Vidur's batch_size_cap limits the admitted requests (`len(_allocation_map)`)
  and its Orca serves running decodes before new prompts, while jaxsched's M limits the requests
  of one batch under admission_cap "batch" (the default); under admission_cap "running"
  (--admission-cap running) jaxsched's M also caps the requests started and unfinished, Vidur's
  rule, and its orca's prefill gate then waits only for the prompts allowed to start, so that
  at a budget that never binds it forms Vidur's Orca batches. Vidur's KV blocks restart the
  newest running request when they run out (`restart()`: its decoded tokens become prompt),
  which jaxsched's budget engine, without a KV limit, never does (its memory_overhead option
  charges time, it does not restart).
- Time per output token: Vidur's decode_time_execution_plus_preemption_normalized divides the
  decode span (e2e - TTFT) by num_decode_tokens = v_d + 1; jaxsched's per-request TPOT divides it
  by v_d, the number of decode gaps (its token-weighted tbt_mean_s divides the summed spans by the
  summed v_d). Row tpot_vidur_def_s applies Vidur's normalisation to jaxsched's times."""


def own_metrics(metrics: dict, per: dict, stream: dict) -> list[dict]:
    """jaxsched's own summary metrics (float32 sums, float-bit histograms: no recording
    needed) against the same statistics of its rebuilt per-request times: rows (metric, own,
    rebuilt, rel_diff). tbt_mean_s is token-weighted: sum (e2e - ttft) / sum v_d."""
    rows = []
    for name, key in (("ttft", "ttft_s"), ("latency", "e2e_s")):
        rebuilt = harness.summarize(per[key])
        for stat in harness.STATS:
            own = metrics[f"{name}_{stat}_s"]
            rows.append(dict(metric=f"{name}_{stat}_s", own=own, rebuilt=rebuilt[stat]))
    span = np.nansum(per["e2e_s"] - per["ttft_s"])
    rows.append(dict(metric="tbt_mean_s", own=metrics["tbt_mean_s"], rebuilt=float(span / np.sum(stream["vd"]))))
    for r in rows:
        r["rel_diff"] = harness.relative_difference(r["own"], r["rebuilt"])
    return rows


TABLE_HEAD = ("quantity", "stat", "jaxsched (s)", "Vidur (s)", "rel. diff", "within", "difference beyond tolerance")


def explain(row: dict, cell: dict) -> str:
    """The named semantic difference behind a row of `cell` beyond tolerance, from evidence in
    the run: tpot_s when the same statistic with Vidur's normalisation (tpot_vidur_def_s)
    agrees; Vidur's restarts (its KV blocks ran out; jaxsched's budget engine has no KV limit);
    Vidur's Orca reserving max_tokens of blocks per admitted request (`can_allocate(
    _max_blocks_per_sequence)`), so that its blocks admit fewer than M requests;
    a jaxsched batch holding M requests under admission_cap "batch" (Vidur's batch_size_cap
    counts the admitted requests, `len(_allocation_map)`, for sarathi and vllm, and Orca takes
    running decodes before new prompts; jaxsched's M counts the requests of one batch, prefill
    first for orca; under "running" jaxsched caps the admitted requests too, so this is no
    explanation); otherwise unexplained."""
    if row["ok"]:
        return ""
    same = [r for r in cell["rows"] if r["quantity"] == "tpot_vidur_def_s" and r["stat"] == row["stat"]]
    if row["quantity"] == "tpot_s" and same and same[0]["ok"]:
        return "TPOT normalisation: v_d (jaxsched) against v_d + 1 (Vidur)"
    slots = cell.get("vidur_num_blocks", NUM_BLOCKS) // (MAX_TOKENS // BLOCK_SIZE)
    if cell["scheduler"] == "orca" and slots < cell["max_requests"]:
        return f"memory: Vidur's Orca reserves max_tokens per admitted request, so its blocks admit {slots} < M"
    if cell["restarts"]["vidur"] > 0:
        return "memory: Vidur's KV blocks bind and it restarts requests; jaxsched has no KV limit"
    if cell["jax_max_batch_requests"] >= cell["max_requests"] and cell.get("admission_cap", "batch") == "batch":
        return "request cap M binds: Vidur caps admitted requests, jaxsched requests per batch"
    return "UNEXPLAINED"


def table_row(r: dict, cell: dict) -> tuple:
    """One line of a cell's agreement table."""
    ok = "yes" if r["ok"] else "NO"
    return (
        r["quantity"],
        r["stat"],
        f"{r['jaxsched']:.6g}",
        f"{r['vidur']:.6g}",
        f"{r['rel_diff']:.2e}",
        ok,
        explain(r, cell),
    )


def render(report: dict) -> str:
    """agreement.md from the report."""
    tol = report["tolerance"]
    out = harness.report_header(
        report,
        "jaxsched budget engine against Vidur: agreement",
        f"jaxsched's batch time installed as Vidur's execution-time predictor. Tolerance: {tol:.0%} relative on "
        "each mean and percentile (Vidur the reference). Percentiles are NumPy's (linear interpolation) over the "
        "requests of each run, computed the same way for both simulators; jaxsched's per-request times are "
        "rebuilt from its recorded batches (`record_members`).",
    )
    out += [SEMANTICS, ""]
    for cell in report["cells"]:
        bad = [r for r in cell["rows"] if not r["ok"]]
        out += [
            f"## {cell['workload']} / {cell['scheduler']} / batch time {cell['model']}",
            "",
            f"{cell['requests']} requests; {len(bad)} of {len(cell['rows'])} statistics beyond tolerance; "
            f"restarts jaxsched {cell['restarts']['jaxsched']}, Vidur {cell['restarts']['vidur']}; "
            f"jaxsched admission_cap {cell.get('admission_cap', 'batch')}; "
            f"jaxsched batches {cell['jax_batches']} (at the budget: {cell['jax_budget_bound_batches']}, "
            f"most requests in one batch: {cell['jax_max_batch_requests']}); wall jaxsched "
            f"{cell['jax_wall_s']:.1f} s (compile {cell['jax_compile_s']:.1f} s), Vidur {cell['vidur_wall_s']:.1f} s.",
            "",
        ]
        out += [harness.markdown_table(TABLE_HEAD, [table_row(r, cell) for r in cell["rows"]]), ""]
        out += [
            "Request by request: "
            + "; ".join(
                f"{q} max |diff| {d['max_abs_s']:.3g} s, {d['frac_equal_1us']:.1%} within 1 us"
                for q, d in cell["paired"].items()
            )
            + ".",
            "",
            "jaxsched's own summary metrics (no recording) against its rebuilt per-request statistics: "
            + "; ".join(f"{r['metric']} {r['own']:.6g} ({r['rel_diff']:.1e})" for r in cell["jax_own_metrics"])
            + ".",
            "",
        ]
    return "\n".join(out)


def uptime() -> str:
    """The `uptime` line (load averages)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def vidur_commit(paths: VidurPaths) -> str:
    """The commit recorded by setup.sh in the source tree, or "unknown"."""
    f = paths.src / ".vidur-commit"
    return f.read_text().strip() if f.exists() else "unknown"


def main(argv: list[str] | None = None) -> int:
    from jaxsched.budget.config import ADMISSION_CAPS

    ap = argparse.ArgumentParser(prog="python -m benchmarks.vidur.compare", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 requests, the Azure workload, eq. (2.3) only")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE, help="relative tolerance (fraction)")
    ap.add_argument("--requests", type=int, default=None, help="requests per workload (default 2000, quick 200)")
    ap.add_argument("--max-requests", type=int, default=MAX_REQUESTS, help="M = Vidur's batch_size_cap")
    ap.add_argument("--kv-blocks", type=int, default=NUM_BLOCKS, help="Vidur's KV blocks of 16 tokens")
    ap.add_argument(
        "--admission-cap",
        choices=ADMISSION_CAPS,
        default="batch",
        help="what jaxsched's M caps: one batch's requests (batch) or the started, unfinished ones (running, Vidur's)",
    )
    ap.add_argument("--name", default=None, help="results file stem (default agreement[_quick])")
    ap.add_argument("--trace", type=Path, default=None, help="Azure 2023 conversation CSV (default ../shared/data)")
    a = ap.parse_args(argv)
    paths = harness.paths_or_skip()
    if paths is None:
        return 0
    if not 0 < a.tolerance < 1:
        ap.error(f"--tolerance must be in (0, 1), got {a.tolerance}")
    size = QUICK if a.quick else FULL
    n = size["requests"] if a.requests is None else a.requests
    if n < 2:
        ap.error(f"--requests must be >= 2, got {n}")
    if a.max_requests < 1 or a.kv_blocks < 1:
        ap.error(f"--max-requests and --kv-blocks must be >= 1, got {a.max_requests} and {a.kv_blocks}")
    from jaxsched.offline.workloads import azure_default_path

    azure_path = azure_default_path() if a.trace is None else a.trace
    if not azure_path.is_file():
        ap.error(f"no Azure 2023 conversation trace at {azure_path} (give --trace PATH)")
    before = uptime()
    slots = orca_planner_slots(paths)
    caps = Caps(a.max_requests, a.kv_blocks, a.admission_cap)
    if slots < caps.max_requests:
        raise RuntimeError(f"Vidur's planner gives Orca {slots} request slots < M = {caps.max_requests}")
    cells = []
    with tempfile.TemporaryDirectory(prefix="jaxsched_vidur_") as tmp:
        work = Path(tmp)
        workloads = make_workloads(n, work, azure_path)
        if a.quick:
            workloads = workloads[:1]
        for w in workloads:
            for model in size["models"]:
                for s in SCHEDULERS:
                    print(f"{w.name} / {s} / {model} ...", flush=True)
                    cells.append(compare_one(paths, w, s, model, work, a.tolerance, caps))
    report = dict(
        command="python -m benchmarks.vidur.compare " + " ".join(sys.argv[1:] if argv is None else argv),
        vidur_commit=vidur_commit(paths),
        tolerance=a.tolerance,
        settings=dict(
            paper=PAPER,
            linear=LINEAR,
            budget=BUDGET,
            orca_budget=ORCA_BUDGET,
            max_requests=caps.max_requests,
            admission_cap=caps.admission_cap,
            vllm_prefill_cap=VLLM_PREFILL_CAP,
            vidur_max_tokens=MAX_TOKENS,
            vidur_block_size=BLOCK_SIZE,
            vidur_num_blocks=caps.num_blocks,
            vidur_orca_planner_slots=slots,
            workloads={w.name: w.info for w in workloads},
        ),
        uptime_before=before,
        uptime_after=uptime(),
        cells=cells,
    )
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.name or ("agreement_quick" if a.quick else "agreement")
    (a.out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=float))
    (a.out / f"{stem}.md").write_text(render(report))
    bad = sum(not r["ok"] for c in cells for r in c["rows"])
    print(f"wrote {a.out / stem}.md: {bad} of {sum(len(c['rows']) for c in cells)} statistics beyond {a.tolerance:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
