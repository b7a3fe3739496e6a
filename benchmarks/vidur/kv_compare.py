"""jaxsched's kv engine, policy `vllm`, side by side with Vidur's vLLM replica scheduler.

    python -m benchmarks.vidur.kv_compare [--quick] [--out DIR] [--requests N] [--seed S]

The kv engine (docs/kv-semantics.md; prefill-first batches, KV blocks, a watermark, restart
preemption of the newest running request) draws N typed Poisson requests itself and is run with
`simulate(..., record=True)`. The same N requests (arrival times in float64 from the engine's
own generator `arrival_stream`, prompt l_j, num_decode_tokens l'_j + 1: Vidur credits one
output token when the prefill completes) are replayed by Vidur's `vllm` replica scheduler, one
replica, with the same batch_size_cap, max_tokens_in_batch, block_size, watermark and
num_blocks = C // block_size, and with the kv engine's batch time d0 + d1 * sum (l_j + k)
installed as its execution-time predictor (`vidur_predictor`, model "kv").

Per-request TTFT and end-to-end latency of the kv engine come from the plain-Python reference
`tests/reference/kv.py` run on the engine's arrival gaps; it is checked to reproduce the
engine's recorded batches bitwise (times, tokens, preemptions) before it is used. Vidur's come
from its request_metrics.csv, and its batch sequence (start, members, kv tokens, restarts) from
a log written by the predictor (`VIDUR_RUNNER`).

A third run is the kv engine with Vidur's two block rules (`KVConfig(block_rules="vidur")`,
docs/kv-semantics.md §6, `VIDUR_RULES`), recorded and checked against its reference the same
way; where it equals Vidur batch for batch, those two rules are the whole difference.
`EXAMPLES` are minimal request sets that show each rule on its own, run through the reference
(the engine draws its own arrivals, so it cannot replay a hand-made request set; the same
examples on the engine's own arrivals are tests/kv/test_block_rules.py) under both block rules
and through Vidur.

Cases (`CASES`): memory that never binds, Vidur's 4096 blocks, and 3072 blocks (restarts).
Results: OUT/kv_agreement.md and .json (kv_agreement_quick.* with --quick). When Vidur is not
set up it prints harness.SKIP_MESSAGE and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from unittest import mock

import numpy as np

from . import harness
from .harness import VidurPaths

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "vidur"

# The workload: three request types (prompt l_j, output l'_j tokens), equal Poisson rates.
TYPES = ((512, 256), (1024, 128), (256, 512))
RATE_PER_S = 4.0  # all types together; d1 * A = 0.757 (make_params' stability check)
D0_S = 0.01  # eq. (1), the WAIT paper's hardware (jaxsched.kv defaults)
D1_S_PER_TOKEN = 1e-6
# vLLM's limits: Vidur's VllmSchedulerConfig defaults, which are also make_params' defaults.
BATCH_SIZE_CAP = 128
MAX_TOKENS_IN_BATCH = 4096
BLOCK_SIZE = 16
WATERMARK = 0.01
VIDUR_MAX_TOKENS = 8192  # Vidur's trace cap on prompt + decode: above every request, none trimmed
TABLE_SIZE = 1024  # the kv ring; a run that loses an arrival is refused (table_overflow)
FULL = dict(requests=2000)
QUICK = dict(requests=600)
TIME_EQUAL_S = 1e-6  # "the same time" for a request's TTFT or latency in the two simulators


@dataclass(frozen=True)
class Case:
    """A memory size: C tokens (num_blocks = C // BLOCK_SIZE blocks in both simulators)."""

    name: str
    capacity_tokens: int
    note: str


CASES = (
    Case("non-binding", 2**24, "C = 2^24 tokens: no request ever waits for memory"),
    Case("vidur-4096-blocks", 4096 * BLOCK_SIZE, "Vidur's 4096 blocks of 16 tokens: admission binds"),
    Case("binding-3072-blocks", 3072 * BLOCK_SIZE, "3072 blocks: decodes run out of blocks, restarts"),
)


# ------------------------------------------------------------------------------------ kv runs


def kv_config(n: int, block_rules: str = "kv"):
    """The KVConfig of a run of n requests of `TYPES` under policy vllm (drain at the end) with
    the given block rules ("kv", or "vidur": Vidur's, docs/kv-semantics.md §6)."""
    from jaxsched.kv import KVConfig

    return KVConfig(
        prefill_tokens=tuple(t[0] for t in TYPES),
        decode_tokens=tuple(t[1] for t in TYPES),
        policy="vllm",
        num_requests=n,
        table_size=TABLE_SIZE,
        block_rules=block_rules,
    )


def kv_params(config, capacity_tokens: int):
    """make_params with `RATE_PER_S` split equally over the types, eq. (1)'s D0_S, D1_S_PER_TOKEN
    and the vLLM limits above."""
    from jaxsched.kv import make_params

    return make_params(
        config,
        rates=[RATE_PER_S / config.m] * config.m,
        d0_s=D0_S,
        d1_s_per_token=D1_S_PER_TOKEN,
        capacity_tokens=capacity_tokens,
        batch_size_cap=BATCH_SIZE_CAP,
        max_tokens_in_batch=MAX_TOKENS_IN_BATCH,
        block_size=BLOCK_SIZE,
        watermark=WATERMARK,
    )


def candidate_stream(config, params, seed: int, need: int) -> dict:
    """`arrival_stream` of run `seed` with at least `need` accepted candidates (doubling)."""
    from jaxsched.workload.arrivals import arrival_stream

    n = 64
    while True:
        stream = arrival_stream(config, params, seed, n)
        if int(np.sum(stream["accepted"] & ~stream["exhausted"])) >= need or bool(stream["exhausted"][-1]):
            return stream
        n *= 2


def request_list(stream: Mapping[str, np.ndarray], prefill: Sequence[int], decode: Sequence[int], n: int) -> dict:
    """The first n requests of a candidate stream (`arrival_stream`: accepted candidates in
    order, docs/kv-semantics.md §3), arrays [n] by request id: arrival_s (float64, t_hi + t_lo,
    exact), t_hi, t_lo (float32), type, prefill l_j, decode l'_j (tokens).
    ValueError if the stream holds fewer than n requests."""
    ok = np.asarray(stream["accepted"], bool) & ~np.asarray(stream["exhausted"], bool)
    idx = np.flatnonzero(ok)[:n]
    if idx.size < n:
        raise ValueError(f"the stream holds {idx.size} requests, {n} needed")
    typ = np.asarray(stream["type"], np.int64)[idx]
    t_hi = np.asarray(stream["t_hi"], np.float32)[idx]
    t_lo = np.asarray(stream["t_lo"], np.float32)[idx]
    return dict(
        arrival_s=t_hi.astype(np.float64) + t_lo.astype(np.float64),
        t_hi=t_hi,
        t_lo=t_lo,
        type=typ,
        prefill=np.asarray(prefill, np.int64)[typ],
        decode=np.asarray(decode, np.int64)[typ],
    )


def write_vidur_trace(path: Path, requests: Mapping[str, np.ndarray]) -> Path:
    """The requests as Vidur's trace CSV: arrival_s, prompt l_j, num_decode_tokens l'_j + 1
    (`harness.vidur_decode_tokens`: Vidur's prefill yields the first output token)."""
    return harness.write_vidur_csv(
        path, requests["arrival_s"], requests["prefill"], harness.vidur_decode_tokens(requests["decode"])
    )


def reference_run(
    config,
    params,
    rates: Sequence[float],
    stream: Mapping[str, np.ndarray],
    seed: int,
    policy: Callable | None = None,
    watermark: float = WATERMARK,
) -> dict:
    """tests/reference/kv.py on the engine's gaps (`stream["gap_s"]`, enough candidates for
    the run), with the engine's config (its block rules included), params and rates
    (requests/s, [m], as given to make_params) and watermark (the fraction given to
    make_params); `policy` replaces the reference's vllm policy for this run (a
    `PolicyInput -> (batch, preempted, chunks)` function, e.g. `counting_policy`)."""
    from tests.reference import kv as ref

    patch = mock.patch.dict(ref._POLICY_FUNCS, {"vllm": policy}) if policy is not None else contextlib.nullcontext()
    with patch:
        return ref.simulate(
            prefill=config.prefill_tokens,
            decode=config.decode_tokens,
            policy="vllm",
            rates=list(rates),
            d0=float(params.d0_s),
            d1=float(params.d1_s_per_token),
            capacity=int(params.capacity_tokens),
            gaps=stream["gap_s"],
            seed=seed,
            num_requests=config.num_requests,
            table_size=config.table_size,
            arrivals_per_step=config.arrivals_per_step,
            max_steps=config.max_steps,
            hist_octave_bits=config.hist_octave_bits,
            batch_size_cap=int(params.batch_size_cap),
            max_tokens_in_batch=int(params.max_tokens_in_batch),
            block_size=int(params.block_size),
            watermark=watermark,
            block_rules=config.block_rules,
        )


def check_reference_equals_engine(res: dict, engine_batches: Mapping[str, np.ndarray], metrics: Mapping) -> None:
    """The reference run reproduces the engine's recorded run: the same batches (start and
    iteration-time double-floats, tokens, memory, preemptions, completions, bitwise) and the
    same counts. RuntimeError naming the first difference."""
    rb = res["batches"]
    n = len(rb)
    eb = engine_batches
    if n != int(np.asarray(eb["tokens"]).size):
        raise RuntimeError(f"reference has {n} batches, the engine {np.asarray(eb['tokens']).size}")
    for key in ("t_hi", "t_lo", "tau_hi", "tau_lo", "tokens", "memory_tokens", "preempted", "completed"):
        want = np.asarray([row[key] for row in rb])
        got = np.asarray(eb[key]).astype(want.dtype)
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            raise RuntimeError(f"batch {i}: engine {key} {got[i]!r}, reference {want[i]!r}")
    for key in ("num_completed", "preemption_count", "num_batches", "table_overflow"):
        if float(np.asarray(metrics[key]).reshape(-1)[0]) != float(res["metrics"][key]):
            raise RuntimeError(f"{key}: engine {metrics[key]}, reference {res['metrics'][key]}")


def batch_end_s(res: dict) -> np.ndarray:
    """float64 [B]: each batch's end time, the exact double-float clock that starts the epoch
    after it (docs/kv-semantics.md §5 step 6: t := add(t, tau))."""
    epochs = res["epochs"]
    ends = []
    for e, row in enumerate(epochs):
        if row["kind"] == 2:
            nxt = epochs[e + 1]
            ends.append(float(nxt["t_hi"]) + float(nxt["t_lo"]))
    return np.asarray(ends, np.float64)


def per_request(res: dict, n: int) -> dict:
    """Per-request times of a reference run, arrays [n] by id (NaN if not done): ttft_s (end of
    the batch that took it from stage 0 to 1 minus arrival), e2e_s (end of its last batch
    minus arrival), restarts (its restart preemptions), all float64 from the double-floats."""
    ends = batch_end_s(res)
    ttft = np.full(n, np.nan)
    e2e = np.full(n, np.nan)
    restarts = np.zeros(n, np.int64)
    for i in range(n):
        r = res["requests"][i]
        arrival = float(r["arrival_hi"]) + float(r["arrival_lo"])
        restarts[i] = r["preemptions"]
        if r["batches"]:
            ttft[i] = ends[r["batches"][0]] - arrival
        if r["latency"] is not None:
            e2e[i] = ends[r["batches"][-1]] - arrival
    return dict(ttft_s=ttft, e2e_s=e2e, restarts=restarts)


def batch_sequence(res: dict) -> dict:
    """The batch sequence of a reference run: start_s (float64), tokens (kv tokens), members
    (sorted ids), preempted (count at the batch start)."""
    return dict(
        start_s=np.asarray([float(b["t_hi"]) + float(b["t_lo"]) for b in res["batches"]], np.float64),
        tokens=np.asarray([b["tokens"] for b in res["batches"]], np.int64),
        members=[list(b["batch_ids"]) for b in res["batches"]],
        preempted=np.asarray([b["preempted"] for b in res["batches"]], np.int64),
    )


# --------------------------------------------------------------------- Vidur's rules in kv terms

VIDUR_RULES = """\
1. **Admission counts the blocks held, not the blocks the next token needs.** A running request
   at stage k (KV of l_j + k - 1 tokens so far, its next decode adds one) holds
   ceil((l_j + k - 1) / b) blocks in Vidur between batches (`_allocate_request` adds a block
   only when the decode is scheduled), while the kv engine counts ceil((l_j + k) / b) for it
   (docs/kv-semantics.md §6: `used` = the blocks of the running requests' work l_j + k). So
   Vidur sees one free block more for every running request whose KV exactly fills its blocks
   ((l_j + k - 1) mod b = 0): it can admit a request the kv engine holds back, and then has to
   restart one at the next decode batch, when those blocks are taken.
2. **A decode needs one free block at its turn even when it needs no new block.** Vidur walks
   the running requests oldest first and, before each, requires num_blocks - allocated >= 1
   (`_can_allocate_request`: "vllm requires at least one block to be available"), restarting
   the newest running request until it holds. The kept set is the longest prefix r_1..r_p with
   sum_{j<p} ceil((l + k)_j / b) + ceil((l + k - 1)_p / b) <= num_blocks - 1; the kv engine
   keeps the longest prefix with sum_{j<=p} ceil((l + k)_j / b) <= num_blocks. They differ when
   the blocks after growth are exactly num_blocks and the last kept request needs no new block:
   Vidur restarts it (or a newer one), the kv engine does not. A lone running request that
   holds every block is restarted by itself and Vidur forms no batch: nothing is left to wake
   its scheduler and the simulation stops unfinished (example lone-request). Vidur needs
   ceil((l_j + l'_j - 1) / b) <= num_blocks - 1 for every type; the kv engine validates
   ceil((l_j + l'_j) / b) <= num_blocks - floor(watermark * num_blocks), and under
   `block_rules="vidur"` Vidur's bound as well, so that no run of it can stall.
"""


def counting_policy(counts: dict) -> Callable:
    """The reference's vllm policy under Vidur's block rules (`block_rules="vidur"`, whatever
    the run's), counting in `counts` the epochs where the kv block rules would decide
    differently on the same state: "admission" (either admits, and the batches differ: rule 1)
    and "decode" (both decode, and the kept sets differ: rule 2), with "first_admission" and
    "first_decode" the index of the batch formed at the first such epoch (None: never). A
    policy epoch with a non-empty batch forms the next batch (docs/kv-semantics.md §5)."""
    from tests.reference import kv as ref

    counts.update(admission=0, decode=0, first_admission=None, first_decode=None, batches=0)

    def policy(inp):
        v = ref.policy_vllm(dataclasses.replace(inp, block_rules="vidur"))
        k = ref.policy_vllm(dataclasses.replace(inp, block_rules="kv"))
        v_prefill = any(not r.resident for r in inp.requests if r.id in v[0])
        k_prefill = any(not r.resident for r in inp.requests if r.id in k[0])
        rule = None
        if (v_prefill or k_prefill) and v[0] != k[0]:
            rule = "admission"
        elif v[0] != k[0] or v[1] != k[1]:
            rule = "decode"
        if rule is not None:
            counts[rule] += 1
            if counts[f"first_{rule}"] is None:
                counts[f"first_{rule}"] = counts["batches"]
        counts["batches"] += bool(v[0])
        return v

    return policy


# ------------------------------------------------------------------------------------ Vidur

# Run in Vidur's interpreter (cwd = Vidur's source, PYTHONPATH = this folder, argv = Vidur's
# arguments): install the predictor of $JAXSCHED_VIDUR_BATCH_TIME, log every batch at its
# scheduling (start, seconds, kv tokens, member ids, restarts so far) to
# $JAXSCHED_VIDUR_BATCH_LOG as JSON, and run vidur.main.
VIDUR_RUNNER = r"""
import json, os, runpy
import vidur_predictor as vp
from vidur.entities.request import Request

cls = vp.install(json.loads(os.environ[vp.ENV_SPEC]))
restarts = [0]
_restart = Request.restart


def _counting_restart(self):
    restarts[0] += 1
    _restart(self)


Request.restart = _counting_restart
rows = []
_predict = cls.get_execution_time


def _logging_predict(self, batch, pipeline_stage):
    out = _predict(self, batch, pipeline_stage)
    _, prefill, decode, context = vp.batch_counts(batch)
    ids = sorted(int(r.id) for r in batch.requests)
    # Vidur reads the trace with pandas' iterrows, so its token counts are floats.
    rows.append([batch.scheduled_at, out.total_time, int(prefill + decode + context), restarts[0], ids])
    return out


cls.get_execution_time = _logging_predict
try:
    runpy.run_module("vidur.main", run_name="__main__", alter_sys=True)
finally:
    with open(os.environ["JAXSCHED_VIDUR_BATCH_LOG"], "w") as f:
        json.dump(rows, f)
"""
LOG_ENV = "JAXSCHED_VIDUR_BATCH_LOG"


def vidur_kv_args(trace_csv: Path, out_dir: Path, num_blocks: int, watermark: float = WATERMARK) -> list[str]:
    """Vidur's arguments: `harness.vidur_args` for vllm with this module's limits, plus the
    watermark fraction (Vidur's watermark_blocks_fraction)."""
    args = harness.vidur_args(
        "vllm",
        trace_csv,
        out_dir,
        max_requests=BATCH_SIZE_CAP,
        chunk_size=MAX_TOKENS_IN_BATCH,  # read by sarathi only
        max_tokens=VIDUR_MAX_TOKENS,
        num_blocks=num_blocks,
        block_size=BLOCK_SIZE,
        max_tokens_in_batch=MAX_TOKENS_IN_BATCH,
    )
    return args + ["--vllm_scheduler_config_watermark_blocks_fraction", repr(float(watermark))]


def vidur_batches(rows: list) -> dict:
    """The batch log of `VIDUR_RUNNER` as arrays: start_s, tau_s, tokens (kv tokens), members
    (sorted ids), preempted (Vidur's restarts at each batch's scheduling)."""
    if not rows:
        return dict(
            start_s=np.zeros(0), tau_s=np.zeros(0), tokens=np.zeros(0, np.int64), members=[], preempted=np.zeros(0)
        )
    start, tau, tokens, cum, members = zip(*rows)
    cum = np.asarray(cum, np.int64)
    return dict(
        start_s=np.asarray(start, np.float64),
        tau_s=np.asarray(tau, np.float64),
        tokens=np.asarray(tokens, np.int64),
        members=[list(m) for m in members],
        preempted=np.diff(np.concatenate([[0], cum])),
    )


def run_vidur(paths: VidurPaths, trace_csv: Path, out_dir: Path, num_blocks: int, watermark: float = WATERMARK) -> dict:
    """One Vidur run (`VIDUR_RUNNER` in `harness.run_vidur_process`) with the kv batch time and
    the batch log: requests (`read_vidur_requests`), batches (`vidur_batches`), wall_s."""
    log = out_dir / "batches.json"
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = dict(model="kv", d0_s=D0_S, d1_s_per_token=D1_S_PER_TOKEN)
    args = vidur_kv_args(trace_csv, out_dir, num_blocks, watermark)
    _, wall = harness.run_vidur_process(paths, ["-c", VIDUR_RUNNER], args, spec, "vllm", {LOG_ENV: str(log)})
    found = harness.vidur_metrics_csv(out_dir)
    if found is None:
        raise RuntimeError(f"Vidur: no request_metrics.csv under {out_dir}")
    return dict(
        requests=harness.read_vidur_requests(found),
        batches=vidur_batches(json.loads(log.read_text())),
        wall_s=wall,
    )


# ------------------------------------------------------------------------------ comparisons


def paired(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> dict:
    """Request by request (same ids): for ttft_s and e2e_s the largest |a - b| (s) and the
    fraction within TIME_EQUAL_S; restarts: requests whose restart counts differ."""
    out = {}
    for q in ("ttft_s", "e2e_s"):
        x, y = np.asarray(a[q], np.float64), np.asarray(b[q], np.float64)
        if x.shape != y.shape:
            raise ValueError(f"{q}: {x.shape} against {y.shape}")
        d = np.abs(x - y)
        out[q] = dict(max_abs_s=float(np.max(d)), frac_equal=float(np.mean(d <= TIME_EQUAL_S)))
    out["restarts_differ"] = int(np.sum(np.asarray(a["restarts"]) != np.asarray(b["restarts"])))
    return out


def compare_batches(a: Mapping, b: Mapping) -> dict:
    """Two batch sequences side by side: counts, total tokens and preemptions, the length of
    their common prefix (same members, same kv tokens), the largest start-time difference on
    it (s), and the first batch that differs (index or None)."""
    n = min(len(a["members"]), len(b["members"]))
    first = next(
        (i for i in range(n) if a["members"][i] != b["members"][i] or int(a["tokens"][i]) != int(b["tokens"][i])),
        None,
    )
    if first is None and len(a["members"]) != len(b["members"]):
        first = n
    common = n if first is None else first
    dstart = np.abs(np.asarray(a["start_s"][:common]) - np.asarray(b["start_s"][:common]))
    return dict(
        batches=(len(a["members"]), len(b["members"])),
        tokens=(int(np.sum(a["tokens"])), int(np.sum(b["tokens"]))),
        preemptions=(int(np.sum(a["preempted"])), int(np.sum(b["preempted"]))),
        common_prefix=common,
        max_start_diff_s=float(dstart.max()) if common else 0.0,
        first_difference=first,
    )


def divergence_rows(a: Mapping, b: Mapping, first: int | None, before: int = 2, after: int = 4) -> list[dict]:
    """Batches first - before .. first + after of two sequences side by side (start, tokens,
    members, preempted), for the report."""
    if first is None:
        return []
    rows = []
    for i in range(max(first - before, 0), first + after):
        row = dict(batch=i)
        for tag, s in (("kv", a), ("vidur", b)):
            if i < len(s["members"]):
                row[tag] = dict(
                    start_s=float(s["start_s"][i]),
                    tokens=int(s["tokens"][i]),
                    members=s["members"][i],
                    preempted=int(s["preempted"][i]),
                )
        rows.append(row)
    return rows


def stats(values: Mapping[str, np.ndarray]) -> dict:
    """harness.summarize of ttft_s and e2e_s, plus total restarts."""
    return dict(
        ttft_s=harness.summarize(values["ttft_s"]),
        e2e_s=harness.summarize(values["e2e_s"]),
        restarts=int(np.sum(values["restarts"])),
    )


# ------------------------------------------------------------------------------ the cases


def engine_run(case: Case, n: int, seed: int, block_rules: str, counts: dict | None = None) -> dict:
    """The kv engine under `block_rules` (recorded) and its reference on the engine's gaps,
    checked equal batch for batch (`check_reference_equals_engine`) and request for request
    (arrival times and types of `request_list`); with `counts`, the reference runs
    `counting_policy(counts)` (which requires block_rules "vidur"). Returns the config, params,
    stream, requests, reference run, the engine's metrics and the two wall times (s)."""
    from jaxsched.kv import batches, simulate

    config = kv_config(n, block_rules)
    params = kv_params(config, case.capacity_tokens)
    t0 = time.perf_counter()
    res = simulate(config, params, [seed], record=True, warn=False)
    jax_wall = time.perf_counter() - t0
    metrics = {k: float(np.asarray(v)[0]) for k, v in res.metrics.items()}
    if metrics["table_overflow"] or not metrics["done"] or metrics["num_completed"] != n:
        raise RuntimeError(f"{case.name} ({block_rules} block rules): kv run incomplete: {metrics}")
    stream = candidate_stream(config, params, seed, n)
    requests = request_list(stream, config.prefill_tokens, config.decode_tokens, n)
    rates = [RATE_PER_S / config.m] * config.m
    policy = None
    if counts is not None:
        if block_rules != "vidur":
            raise ValueError("counting_policy decides by Vidur's block rules: run block_rules 'vidur'")
        policy = counting_policy(counts)
    t0 = time.perf_counter()
    ref_run = reference_run(config, params, rates, stream, seed, policy=policy)
    ref_wall = time.perf_counter() - t0
    check_reference_equals_engine(ref_run, batches(res, 0), res.metrics)
    for i in range(n):  # the request list is the reference's (and so the engine's) requests
        r = ref_run["requests"][i]
        if (r["arrival_hi"], r["arrival_lo"], r["type"]) != (
            requests["t_hi"][i],
            requests["t_lo"][i],
            requests["type"][i],
        ):
            raise RuntimeError(f"{case.name}: request {i} differs between arrival_stream and the reference")
    return dict(
        config=config,
        params=params,
        stream=stream,
        requests=requests,
        reference=ref_run,
        metrics=metrics,
        wall_s=dict(engine=jax_wall, reference=ref_wall),
    )


KV_METRICS = ("num_batches", "preemption_count", "ttft_mean_s", "latency_mean_s", "peak_memory_tokens")


def run_case(paths: VidurPaths, case: Case, n: int, seed: int, work: Path) -> dict:
    """One memory size: the kv engine under its own block rules and under Vidur's (each
    recorded, each checked against its reference), and Vidur; the record of the comparison."""
    kv_run = engine_run(case, n, seed, "kv")
    counts: dict = {}
    rules_run = engine_run(case, n, seed, "vidur", counts)
    requests = kv_run["requests"]
    for key in ("t_hi", "t_lo", "type"):  # the block rules change no arrival
        if not np.array_equal(requests[key], rules_run["requests"][key]):
            raise RuntimeError(f"{case.name}: the two runs' requests differ in {key}")
    kv = per_request(kv_run["reference"], n)
    kv_seq = batch_sequence(kv_run["reference"])
    rules = per_request(rules_run["reference"], n)
    rules_seq = batch_sequence(rules_run["reference"])
    csv_path = write_vidur_trace(work / f"{case.name}.csv", requests)
    v = run_vidur(paths, csv_path, work / case.name, case.capacity_tokens // BLOCK_SIZE)
    vr = v["requests"]
    if vr["id"].size != n:
        raise RuntimeError(f"{case.name}: Vidur finished {vr['id'].size} of {n} requests")
    vidur = dict(ttft_s=vr["ttft_s"], e2e_s=vr["e2e_s"], restarts=vr["restarts"])
    vseq = v["batches"]
    kv_vs = compare_batches(kv_seq, vseq)
    rules_vs = compare_batches(rules_seq, vseq)
    return dict(
        case=case.name,
        note=case.note,
        capacity_tokens=case.capacity_tokens,
        num_blocks=case.capacity_tokens // BLOCK_SIZE,
        requests=n,
        kv_metrics={k: kv_run["metrics"][k] for k in KV_METRICS},
        rules_metrics={k: rules_run["metrics"][k] for k in KV_METRICS},
        stats=dict(kv=stats(kv), vidur=stats(vidur), rules=stats(rules)),
        kv_vs_vidur=dict(paired=paired(kv, vidur), batches=kv_vs),
        rules_vs_vidur=dict(paired=paired(rules, vidur), batches=rules_vs),
        rule_effects={k: counts[k] for k in ("admission", "decode", "first_admission", "first_decode")},
        divergence=divergence_rows(kv_seq, vseq, kv_vs["first_difference"]),
        rules_divergence=divergence_rows(rules_seq, vseq, rules_vs["first_difference"]),
        wall_s=dict(
            kv_engine=kv_run["wall_s"]["engine"],
            reference=kv_run["wall_s"]["reference"],
            rules_engine=rules_run["wall_s"]["engine"],
            rules_reference=rules_run["wall_s"]["reference"],
            vidur=v["wall_s"],
        ),
    )


# ----------------------------------------------------------------------------- the examples


@dataclass(frozen=True)
class Example:
    """A minimal request set: requests (arrival s, type), the types (l_j, l'_j), num_blocks and
    a watermark of 0; run through the reference under both block rules and through Vidur.
    engine_refuses: the kv engine refuses the configuration under Vidur's rules (make_params:
    ceil((l + l' - 1) / b) <= num_blocks - 1 for every type, the bound that rules out the stall)."""

    name: str
    rule: str
    types: tuple[tuple[int, int], ...]
    arrivals: tuple[tuple[float, int], ...]
    num_blocks: int
    what: str
    vidur_stalls: bool = False
    engine_refuses: bool = False


EXAMPLES = (
    Example(
        "free-block",
        "2",
        ((20, 10),),
        ((0.001, 0), (0.001, 0)),
        4,
        "Two requests of 20 + 10 tokens arrive together; each holds 2 blocks of 16 for its whole life "
        "(20 + 10 <= 32), so 4 blocks fit both. The kv engine decodes both together; Vidur finds no free "
        "block at the second request's turn and restarts it before every decode of the first, so the second "
        "moves on only by its recompute prefills in between: 21 batches instead of 11.",
    ),
    Example(
        "admission-lag",
        "1",
        ((16, 8), (50, 8)),
        ((0.001, 0), (0.005, 1)),
        5,
        "Request 0 (16 + 8) is prefilled; request 1 (50 + 8, 4 blocks) arrives during that prefill. "
        "Request 0 holds 1 block and its next token needs a 2nd: the kv engine counts 2 + 4 > 5 blocks and "
        "decodes request 0 to its end first; Vidur counts 1 + 4 <= 5, prefills request 1, restarts it at the "
        "next decode and prefills it again after request 0.",
    ),
    Example(
        "lone-request",
        "2",
        ((16, 8), (48, 8)),
        ((0.001, 0), (0.005, 1)),
        4,
        "As admission-lag with 4 blocks and a 48-token prompt (3 blocks). After the restart, request 1 runs "
        "alone and holds all 4 blocks (ceil(49 / 16)); its next decode needs none, but Vidur requires a free "
        "block, restarts it and returns no batch: no event is left and its simulator stops with the request "
        "unfinished (simulator.py: `assert self._scheduler.is_empty()`). The reference with Vidur's rules "
        "stops the same way (an empty batch ends a drained run, docs/kv-semantics.md §5 step 5, `stalled` = 1); "
        "the kv rules serve request 1 to its end (their validation asks ceil((l + l') / b) <= num_blocks - "
        "watermark blocks). The kv engine refuses this configuration under block_rules 'vidur': make_params "
        "asks ceil((l + l' - 1) / b) <= num_blocks - 1 for every type (here ceil(55 / 16) = 4 > 3), so a "
        "lone request always finds its free block.",
        vidur_stalls=True,
        engine_refuses=True,
    ),
)


def example_run(ex: Example, block_rules: str = "kv") -> dict:
    """The reference on an example's requests (gaps and type draws given), watermark 0, under
    the kv engine's block rules ("kv") or Vidur's ("vidur")."""
    from tests.reference import kv as ref

    m = len(ex.types)
    t = [a for a, _ in ex.arrivals]
    gaps = np.diff(np.concatenate([[0.0], np.asarray(t, np.float64)])).astype(np.float32).tolist()
    type_u = [(j + 0.5) / m for _, j in ex.arrivals]  # equal rates: type j iff u in [j/m, (j+1)/m)
    return ref.simulate(
        prefill=[p for p, _ in ex.types],
        decode=[d for _, d in ex.types],
        policy="vllm",
        rates=[1.0] * m,
        d0=D0_S,
        d1=D1_S_PER_TOKEN,
        capacity=ex.num_blocks * BLOCK_SIZE,
        gaps=gaps,
        type_u=type_u,
        num_requests=len(ex.arrivals),
        batch_size_cap=BATCH_SIZE_CAP,
        max_tokens_in_batch=MAX_TOKENS_IN_BATCH,
        block_size=BLOCK_SIZE,
        watermark=0.0,
        block_rules=block_rules,
    )


def example_requests(ex: Example, res: dict) -> dict:
    """The example's requests as `request_list` gives them (arrival times from the reference)."""
    n = len(ex.arrivals)
    typ = np.asarray([res["requests"][i]["type"] for i in range(n)], np.int64)
    arrival = np.asarray(
        [float(res["requests"][i]["arrival_hi"]) + float(res["requests"][i]["arrival_lo"]) for i in range(n)]
    )
    return dict(
        arrival_s=arrival,
        type=typ,
        prefill=np.asarray([ex.types[j][0] for j in typ], np.int64),
        decode=np.asarray([ex.types[j][1] for j in typ], np.int64),
    )


def engine_refuses(ex: Example) -> bool:
    """Whether the kv engine refuses the example's configuration under Vidur's block rules
    (a ConfigError of make_params)."""
    from jaxsched.errors import ConfigError
    from jaxsched.kv import KVConfig, make_params

    config = KVConfig(
        prefill_tokens=tuple(p for p, _ in ex.types),
        decode_tokens=tuple(d for _, d in ex.types),
        policy="vllm",
        num_requests=len(ex.arrivals),
        table_size=8,
        block_rules="vidur",
    )
    try:
        make_params(
            config,
            rates=[1.0] * config.m,
            d0_s=D0_S,
            d1_s_per_token=D1_S_PER_TOKEN,
            capacity_tokens=ex.num_blocks * BLOCK_SIZE,
            batch_size_cap=BATCH_SIZE_CAP,
            max_tokens_in_batch=MAX_TOKENS_IN_BATCH,
            block_size=BLOCK_SIZE,
            watermark=0.0,
        )
    except ConfigError:
        return True
    return False


def run_example(paths: VidurPaths, ex: Example, work: Path) -> dict:
    """An example through the reference under both block rules and Vidur (watermark 0): each
    one's batch sequence and per-request times, and whether the kv engine refuses it under
    Vidur's rules (`engine_refuses`, checked against `ex.engine_refuses`)."""
    refused = engine_refuses(ex)
    if refused != ex.engine_refuses:
        raise RuntimeError(f"example {ex.name}: the engine refuses it {refused}, expected {ex.engine_refuses}")
    kv_run = example_run(ex)
    rules_run = example_run(ex, "vidur")
    n = len(ex.arrivals)
    csv_path = write_vidur_trace(work / f"example_{ex.name}.csv", example_requests(ex, kv_run))
    out_dir = work / f"example_{ex.name}"
    stalled = False
    try:
        v = run_vidur(paths, csv_path, out_dir, ex.num_blocks, watermark=0.0)
        vper = dict(ttft_s=v["requests"]["ttft_s"], e2e_s=v["requests"]["e2e_s"], restarts=v["requests"]["restarts"])
        vseq = v["batches"]
    except RuntimeError as err:
        if not (ex.vidur_stalls and "is_empty()" in str(err)):
            raise
        # Vidur stopped with requests left: its batches so far are logged, no request metrics.
        stalled = True
        vseq = vidur_batches(json.loads((out_dir / "batches.json").read_text()))
        vper = dict(ttft_s=np.full(n, np.nan), e2e_s=np.full(n, np.nan), restarts=np.zeros(n, np.int64))
    if stalled != ex.vidur_stalls:
        raise RuntimeError(f"example {ex.name}: Vidur stalled {stalled}, expected {ex.vidur_stalls}")
    out = dict(
        name=ex.name,
        rule=ex.rule,
        what=ex.what,
        types=ex.types,
        arrivals=ex.arrivals,
        num_blocks=ex.num_blocks,
        vidur_stalled=stalled,
        engine_refuses=refused,
    )
    for tag, seq, per in (
        ("kv", batch_sequence(kv_run), per_request(kv_run, n)),
        ("rules", batch_sequence(rules_run), per_request(rules_run, n)),
        ("vidur", vseq, vper),
    ):
        out[tag] = dict(
            batches=[
                [int(seq["tokens"][i]), seq["members"][i], int(seq["preempted"][i])] for i in range(len(seq["members"]))
            ],
            ttft_s=[float(x) for x in per["ttft_s"]],
            e2e_s=[float(x) for x in per["e2e_s"]],
            restarts=[int(x) for x in per["restarts"]] if tag != "vidur" or not stalled else None,
        )
    return out


# ------------------------------------------------------------------------------------ report


def _fmt_ids(ids: Sequence[int], limit: int = 8) -> str:
    ids = list(ids)
    if len(ids) <= limit:
        return "{" + ", ".join(map(str, ids)) + "}"
    return "{" + ", ".join(map(str, ids[:limit])) + f", ... ({len(ids)})" + "}"


def tokens_note(cases: list) -> str:
    """The kv tokens processed per run: one number when every run of a case processes the same
    total (eq. (1) charges a restarted request's recompute at stage k l_j + k tokens, what its
    decode at stage k costs, so restarts add batches and waiting, not tokens)."""
    parts = []
    for c in cases:
        totals = {*c["kv_vs_vidur"]["batches"]["tokens"], *c["rules_vs_vidur"]["batches"]["tokens"]}
        parts.append(f"{c['case']}: " + (f"{totals.pop():,} in all three" if len(totals) == 1 else str(sorted(totals))))
    return (
        "Tokens processed (sum of kv tokens over the batches): "
        + "; ".join(parts)
        + ". Under eq. (1) a restarted request's recompute at stage k costs l_j + k tokens, what its decode at "
        "stage k costs, so restarts add batches (each d0) and waiting, not tokens."
    )


def _or_dash(x) -> str:
    return "-" if x is None else str(x)


def restarts_cell(x: dict) -> str:
    """An example's restarts: the per-request sum, or, for a run that stalled, its logged ones."""
    if x["restarts"] is not None:
        return str(sum(x["restarts"]))
    return f"{sum(p for _, _, p in x['batches'])} (then stalls)"


def render(report: dict) -> str:
    """kv_agreement.md from the report."""
    s = report["settings"]
    out = harness.report_header(
        report,
        "jaxsched kv engine (policy vllm) against Vidur's vLLM scheduler",
        "the kv engine's batch time d0 + d1 * sum (l_j + k) installed as Vidur's execution-time predictor "
        "(model `kv`).",
        order=("uptime", "settings"),
    )
    out += [
        "## What is matched",
        "",
        "- Requests: the kv engine's own N typed Poisson arrivals (`arrival_stream`, float64 arrival times "
        "t_hi + t_lo), written as Vidur's trace with prompt l_j and num_decode_tokens l'_j + 1 (Vidur's prefill "
        "yields the first output token; a kv request is processed l'_j + 1 times in both).",
        "- Batch time: eq. (1) with tokens = sum over the batch of l_j + k: a prefill's prompt (a restarted "
        "request's recompute: prompt plus generated tokens, Vidur's `Request.restart` makes them its prompt), a "
        "decode's context (Vidur's num_processed_tokens); d0, d1 rounded to float32 in both.",
        f"- vLLM's limits: batch_size_cap {s['batch_size_cap']}, max_tokens_in_batch {s['max_tokens_in_batch']} "
        f"(a prefill batch's requests x longest prompt), block_size {s['block_size']}, watermark "
        f"{s['watermark']} (floor(watermark x num_blocks) blocks kept free at admission), num_blocks = C // "
        "block_size given to Vidur (`--vllm_scheduler_config_num_blocks`, so its memory planner is not used).",
        "- kv per-request times: `tests/reference/kv.py` on the engine's gaps, checked equal to the engine's "
        "recorded batches bitwise (start and iteration times, tokens, memory, preemptions, completions); "
        "times are the exact double-float batch ends minus arrivals, in float64.",
        '- `kv engine, Vidur\'s rules`: the kv engine with `KVConfig(block_rules="vidur")` (docs/kv-semantics.md '
        "§6: the vllm policy with the two block rules below, nothing else changed), on the same requests, "
        "recorded and checked against its reference the same way.",
        "",
        "## Results",
        "",
    ]
    head = (
        "case",
        "blocks",
        "simulator",
        "batches",
        "preemptions",
        "TTFT mean (s)",
        "TTFT p99 (s)",
        "e2e mean (s)",
        "e2e p99 (s)",
        "same batches as Vidur",
        "max abs TTFT diff (s)",
        "max abs e2e diff (s)",
        "requests within 1 us",
    )
    rows = []
    for c in report["cases"]:
        for tag, label, key in (
            ("kv", "kv engine", "kv_vs_vidur"),
            ("vidur", "Vidur", None),
            ("rules", "kv engine, Vidur's rules", "rules_vs_vidur"),
        ):
            st = c["stats"][tag]
            if key is None:
                b = c["kv_vs_vidur"]["batches"]
                nb, npre = b["batches"][1], b["preemptions"][1]
                same = dt = de = eq = "-"
            else:
                b = c[key]["batches"]
                p = c[key]["paired"]
                nb, npre = b["batches"][0], b["preemptions"][0]
                same = f"{b['common_prefix']} of {b['batches'][1]}"
                dt, de = f"{p['ttft_s']['max_abs_s']:.3g}", f"{p['e2e_s']['max_abs_s']:.3g}"
                eq = f"{min(p['ttft_s']['frac_equal'], p['e2e_s']['frac_equal']):.1%}"
            rows.append(
                (
                    c["case"],
                    c["num_blocks"],
                    label,
                    nb,
                    npre,
                    f"{st['ttft_s']['mean']:.4f}",
                    f"{st['ttft_s']['p99']:.4f}",
                    f"{st['e2e_s']['mean']:.3f}",
                    f"{st['e2e_s']['p99']:.3f}",
                    same,
                    dt,
                    de,
                    eq,
                )
            )
    out += [harness.markdown_table(head, rows), ""]
    out += [
        'The kv engine with `block_rules="vidur"` against Vidur, batch for batch: '
        + "; ".join(
            f"{c['case']} ({c['num_blocks']} blocks): "
            + (
                f"all {b['batches'][1]} batches the same"
                if b["first_difference"] is None
                else f"the first {b['common_prefix']} of {b['batches'][1]} batches the same"
            )
            + f", restarts {b['preemptions'][0]} and {b['preemptions'][1]}, "
            f"{c['rules_vs_vidur']['paired']['restarts_differ']} requests with another restart count, batch "
            f"starts within {b['max_start_diff_s']:.2g} s"
            for c in report["cases"]
            for b in [c["rules_vs_vidur"]["batches"]]
        )
        + ".",
        "",
    ]
    out += [
        '"same batches": the common prefix of the two batch sequences (the same member ids and kv tokens in '
        'every batch); "max abs diff": over all requests, against Vidur; "within 1 us": the share of requests '
        "whose TTFT and end-to-end latency both agree to 1 us with Vidur's (the smaller of the two shares).",
        "",
        tokens_note(report["cases"]),
        "",
        "Along the `kv engine, Vidur's rules` run (Vidur's own path where they agree), the epochs where the "
        "kv block rules would have decided otherwise on the same state, by rule, and the batch formed at the "
        "first of them (the kv engine's first difference from Vidur when it is the earliest):",
        "",
        harness.markdown_table(
            ("case", "rule 1 (admission) epochs", "first at batch", "rule 2 (decode) epochs", "first at batch"),
            [
                (
                    c["case"],
                    c["rule_effects"]["admission"],
                    _or_dash(c["rule_effects"]["first_admission"]),
                    c["rule_effects"]["decode"],
                    _or_dash(c["rule_effects"]["first_decode"]),
                )
                for c in report["cases"]
            ],
        ),
        "",
        "The kv engine's own metrics (float32 per-request values, no recording needed) against the rebuilt "
        "per-request times, kv rules then Vidur's rules: "
        + "; ".join(
            f"{c['case']}: "
            + ", then ".join(
                f"ttft_mean_s {c[mk]['ttft_mean_s']:.6g} ({c['stats'][sk]['ttft_s']['mean']:.6g} rebuilt), "
                f"latency_mean_s {c[mk]['latency_mean_s']:.6g} ({c['stats'][sk]['e2e_s']['mean']:.6g}), "
                f"preemption_count {c[mk]['preemption_count']:.0f}, peak_memory_tokens "
                f"{c[mk]['peak_memory_tokens']:.0f}"
                for mk, sk in (("kv_metrics", "kv"), ("rules_metrics", "rules"))
            )
            for c in report["cases"]
        )
        + ".",
        "",
        "Wall times (s): "
        + "; ".join(
            f"{c['case']}: kv engine {c['wall_s']['kv_engine']:.1f} and with Vidur's rules "
            f"{c['wall_s']['rules_engine']:.1f} (compile included), their references "
            f"{c['wall_s']['reference']:.1f} and {c['wall_s']['rules_reference']:.1f}, Vidur {c['wall_s']['vidur']:.1f}"
            for c in report["cases"]
        )
        + " (single runs on a shared machine: unconfirmed).",
        "",
        "## The rules that differ",
        "",
        VIDUR_RULES,
        "Everything else agrees in the code of both: prefill-only batches first (waiting requests in FCFS "
        "order, restarted ones first: Vidur puts them at the queue head, the kv engine orders by id and a "
        "restarted request is older than every request that never ran), the three admission tests and their "
        "stop at the first failure, restart preemption of the newest running request, a restarted request's "
        "recompute of prompt plus generated tokens, and TTFT kept from the first prefill.",
        "",
    ]
    for c in report["cases"]:
        for key, tag in (("divergence", "kv engine"), ("rules_divergence", "kv engine with Vidur's rules")):
            rows_ = c[key]
            if not rows_:
                continue
            first = c["kv_vs_vidur" if key == "divergence" else "rules_vs_vidur"]["batches"]["first_difference"]
            out += [f"### {c['case']}: first batch where the {tag} and Vidur differ (batch {first})", ""]
            t_rows = []
            for r in rows_:
                cells = [r["batch"]]
                for sim in ("kv", "vidur"):
                    x = r.get(sim)
                    cells += (
                        [f"{x['start_s']:.6f}", x["tokens"], _fmt_ids(x["members"]), x["preempted"]] if x else ["-"] * 4
                    )
                t_rows.append(cells)
            out += [
                harness.markdown_table(
                    (
                        "batch",
                        "start (s)",
                        "kv tokens",
                        "members",
                        "restarts",
                        "Vidur start (s)",
                        "Vidur kv tokens",
                        "Vidur members",
                        "Vidur restarts",
                    ),
                    t_rows,
                ),
                "",
            ]
    out += [
        "## Minimal examples",
        "",
        "Hand-made request sets (arrival times given, so the kv side is the reference simulator, bitwise the "
        "engine's semantics; the engine draws its own arrivals), each through the vllm policy under the kv "
        'block rules, Vidur, and the vllm policy under Vidur\'s rules (`block_rules="vidur"`). '
        "tests/kv/test_block_rules.py checks these sequences, and the engine under both rules on its own "
        "arrivals with the examples' types and blocks.",
        "",
    ]
    for ex in report["examples"]:
        out += [
            f"### {ex['name']} (rule {ex['rule']}): types {ex['types']}, arrivals (s, type) {ex['arrivals']}, "
            f"{ex['num_blocks']} blocks of {BLOCK_SIZE}, watermark 0",
            "",
            ex["what"],
            "",
        ]
        t_rows = []
        for tag, label in (("kv", "kv rules (reference)"), ("vidur", "Vidur"), ("rules", "Vidur's rules (reference)")):
            x = ex[tag]
            seq = " ".join(f"{_fmt_ids(m)}{'!' * p}" for _, m, p in x["batches"])
            t_rows.append(
                (
                    label,
                    len(x["batches"]),
                    restarts_cell(x),
                    ", ".join(f"{v:.4f}" for v in x["e2e_s"]),
                    seq,
                )
            )
        out += [
            harness.markdown_table(
                (
                    "simulator",
                    "batches",
                    "restarts",
                    "e2e per request (s)",
                    "batch members in order (! = restarts at its start)",
                ),
                t_rows,
            ),
            "",
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.vidur.kv_compare", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK['requests']} requests (default {FULL['requests']})")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    ap.add_argument("--requests", type=int, default=None, help="requests per case")
    ap.add_argument("--seed", type=int, default=0, help="the kv engine's seed")
    ap.add_argument("--name", default=None, help="results file stem (default kv_agreement[_quick])")
    a = ap.parse_args(argv)
    paths = harness.paths_or_skip()
    if paths is None:
        return 0
    n = (QUICK if a.quick else FULL)["requests"] if a.requests is None else a.requests
    if not 2 <= n <= TABLE_SIZE * 8:
        ap.error(f"--requests must be in [2, {TABLE_SIZE * 8}], got {n}")
    if a.seed < 0:
        ap.error(f"--seed must be >= 0, got {a.seed}")
    from .compare import uptime, vidur_commit

    before = uptime()
    cases, examples = [], []
    with tempfile.TemporaryDirectory(prefix="jaxsched_vidur_kv_") as tmp:
        work = Path(tmp)
        for ex in EXAMPLES:
            print(f"example {ex.name} ...", flush=True)
            examples.append(run_example(paths, ex, work))
        for case in CASES:
            print(f"{case.name} ...", flush=True)
            cases.append(run_case(paths, case, n, a.seed, work))
    report = dict(
        command=" ".join(["python -m benchmarks.vidur.kv_compare", *(sys.argv[1:] if argv is None else argv)]),
        vidur_commit=vidur_commit(paths),
        settings=dict(
            types=TYPES,
            rate_per_s=RATE_PER_S,
            d0_s=D0_S,
            d1_s_per_token=D1_S_PER_TOKEN,
            batch_size_cap=BATCH_SIZE_CAP,
            max_tokens_in_batch=MAX_TOKENS_IN_BATCH,
            block_size=BLOCK_SIZE,
            watermark=WATERMARK,
            requests=n,
            seed=a.seed,
            table_size=TABLE_SIZE,
            vidur_max_tokens=VIDUR_MAX_TOKENS,
        ),
        uptime_before=before,
        uptime_after=uptime(),
        cases=cases,
        examples=examples,
    )
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.name or ("kv_agreement_quick" if a.quick else "kv_agreement")
    (a.out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=_json_default))
    (a.out / f"{stem}.md").write_text(render(report))
    print(f"wrote {a.out / stem}.md")
    return 0


def _json_default(x: Any):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x).__name__)


if __name__ == "__main__":
    sys.exit(main())
