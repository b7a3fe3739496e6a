"""The pure parts of the Vidur comparison (`benchmarks.vidur.compare`), testable without Vidur.

- Where Vidur lives (`vidur_paths`, environment variables VIDUR_VENV and VIDUR_SRC) and the
  skip message when it is absent (`missing_reason`, SKIP_MESSAGE).
- Trace files: a request list written as Vidur's processed CSV
  (`arrived_at,num_prefill_tokens,num_decode_tokens`, which `jaxsched.workload.read_trace`
  also reads), with Vidur's decode count = jaxsched's v_d + 1 (`vidur_decode_tokens`: Vidur's
  prefill iteration yields the first output token, jaxsched's v_d decode tokens each need a
  batch after the prefill).
- Vidur's command line (`vidur_args`) for one replica under the sarathi, vllm or orca
  scheduler with memory made non-binding; the process that runs it (`run_vidur_process`: its
  environment `vidur_env`, interpreter and working directory, shared by compare.py, speed.py
  and kv_compare.py), and its per-request output (`vidur_metrics_csv`, `read_vidur_requests`).
- jaxsched's per-request TTFT, end-to-end latency and time per output token rebuilt from a
  recorded budget run (`per_request_from_batches`).
- Statistics and the agreement table (`summarize`, `agreement`), and the opening lines of a
  report (`report_header`, shared by compare.py and kv_compare.py).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .vidur_predictor import ENV_SPEC

HERE = Path(__file__).resolve().parent
SKIP_MESSAGE = "skipped: Vidur is not installed (run benchmarks/vidur/setup.sh)"
DEFAULT_VENV = "/work/vidur-venv"
DEFAULT_SRC = "/work/vidur-src"
VIDUR_COLUMNS = ("arrived_at", "num_prefill_tokens", "num_decode_tokens")
# The quantities compared per request: (row name, jaxsched key, Vidur key). tpot_s is each
# simulator's own time per output token; tpot_vidur_def_s is jaxsched's with Vidur's
# normalisation ((e2e - ttft) / (v_d + 1)) against Vidur's.
QUANTITIES = (
    ("ttft_s", "ttft_s", "ttft_s"),
    ("e2e_s", "e2e_s", "e2e_s"),
    ("tpot_s", "tpot_s", "tpot_s"),
    ("tpot_vidur_def_s", "tpot_vidur_s", "tpot_s"),
)
STATS = ("mean", "p50", "p90", "p99")
SCHEDULERS = ("sarathi", "vllm", "orca")


@dataclass(frozen=True)
class VidurPaths:
    """Vidur's virtual environment (`python` is its interpreter) and source checkout."""

    venv: Path
    src: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def vidur_paths(env: Mapping[str, str] | None = None) -> VidurPaths:
    """Paths from VIDUR_VENV and VIDUR_SRC (defaults /work/vidur-venv, /work/vidur-src)."""
    env = os.environ if env is None else env
    return VidurPaths(Path(env.get("VIDUR_VENV", DEFAULT_VENV)), Path(env.get("VIDUR_SRC", DEFAULT_SRC)))


def paths_or_skip() -> VidurPaths | None:
    """Vidur's paths, or None after printing SKIP_MESSAGE and why (the caller then exits 0)."""
    paths = vidur_paths()
    why = missing_reason(paths)
    if why is not None:
        print(f"{SKIP_MESSAGE} ({why})")
        return None
    return paths


def missing_reason(paths: VidurPaths) -> str | None:
    """Why Vidur cannot run from `paths` (the first missing piece), or None when it can."""
    if not paths.python.exists():
        return f"no interpreter at {paths.python}"
    if not (paths.src / "vidur" / "main.py").exists():
        return f"no Vidur source at {paths.src} (vidur/main.py missing)"
    return None


# ------------------------------------------------------------------------------------ traces


def vidur_decode_tokens(v_d: np.ndarray) -> np.ndarray:
    """Vidur's num_decode_tokens for jaxsched's v_d (int, >= 1): v_d + 1. Vidur credits one
    output token when the prefill completes and then decodes num_decode_tokens - 1 times;
    jaxsched decodes v_d times after the prefill's batch (docs/budget-semantics.md §2)."""
    v_d = np.asarray(v_d, np.int64)
    if v_d.size and v_d.min() < 1:
        raise ValueError(f"decode tokens must be >= 1, got min {v_d.min()}")
    return v_d + 1


def write_vidur_csv(path: Path, arrived_at: np.ndarray, prefill: np.ndarray, decode: np.ndarray) -> Path:
    """Write requests as Vidur's processed trace CSV (header `VIDUR_COLUMNS`, one row each).

    arrived_at: float64[n] s, nondecreasing, written with repr so the float64 values read back
    exactly; prefill, decode: int[n] tokens >= 1 (the file's own counts: pass
    `vidur_decode_tokens(v_d)` for Vidur). ValueError on mismatched, unordered or bad input."""
    t = np.asarray(arrived_at, np.float64)
    p = np.asarray(prefill)
    d = np.asarray(decode)
    if t.ndim != 1 or p.shape != t.shape or d.shape != t.shape or t.size == 0:
        raise ValueError(f"need equal-length non-empty 1-d arrays, got {t.shape}, {p.shape}, {d.shape}")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0) or t[0] < 0:
        raise ValueError("arrived_at must be finite, >= 0 and nondecreasing")
    if p.min() < 1 or d.min() < 1:
        raise ValueError("token counts must be >= 1")
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(VIDUR_COLUMNS)
        for ti, pi, di in zip(t.tolist(), p.tolist(), d.tolist()):
            w.writerow((repr(float(ti)), int(pi), int(di)))
    return path


def trace_prefix_csv(path_in: Path, n: int, path_out: Path) -> Path:
    """The first n rows of a timed trace file (any layout `read_trace` knows, e.g. Azure 2023)
    written as a Vidur-format CSV with arrival times in s since the first row and the file's
    own (prompt, output) lengths; the file jaxsched replays. ValueError if it has < n rows."""
    from jaxsched.workload import read_trace

    tr = read_trace(path_in, times=True)
    if n < 2 or n > tr.prompt.size:
        raise ValueError(f"n must be in [2, {tr.prompt.size}] (rows of {path_in}), got {n}")
    return write_vidur_csv(path_out, tr.arrival_s[:n], tr.prompt[:n], tr.output[:n])


def stream_arrivals_s(stream: Mapping[str, np.ndarray]) -> np.ndarray:
    """float64 arrival times (s) of a `jaxsched.budget.request_stream` (its double-float
    words t_hi + t_lo, exact in float64)."""
    return np.asarray(stream["t_hi"], np.float64) + np.asarray(stream["t_lo"], np.float64)


def stream_to_vidur_csv(path: Path, stream: Mapping[str, np.ndarray]) -> Path:
    """Write the requests of a jaxsched run as Vidur's trace: the same arrival times and
    prompts, decode tokens v_d + 1 (`vidur_decode_tokens`)."""
    return write_vidur_csv(path, stream_arrivals_s(stream), stream["vp"], vidur_decode_tokens(stream["vd"]))


# ------------------------------------------------------------------------------------ Vidur


def vidur_args(
    scheduler: str,
    trace_csv: Path,
    out_dir: Path,
    *,
    max_requests: int,
    chunk_size: int,
    max_tokens: int,
    num_blocks: int,
    block_size: int = 16,
    model: str = "meta-llama/Meta-Llama-3-8B",
    device: str = "a100",
    network_device: str = "a100_pairwise_nvlink",
    tensor_parallel: int = 4,
    max_tokens_in_batch: int | None = None,
) -> list[str]:
    """Arguments of `python -m vidur.main` for one replica replaying `trace_csv` under
    `scheduler` with the jaxsched predictor (registered under `linear_regression`).

    max_requests: batch_size_cap (jaxsched's M). chunk_size: Sarathi's chunk (jaxsched's b).
    max_tokens: the trace generator's cap on prefill + decode (longer requests get their
    prefill trimmed; pass at least the longest request). num_blocks, block_size: the KV cache
    (non-binding when num_blocks * block_size exceeds every request's tokens in system).
    model, device, tensor_parallel: only Vidur's memory planner reads them (Orca's batch size is
    min(batch_size_cap, the planner's request slots)). max_tokens_in_batch: vLLM's cap on a
    prefill batch's padded tokens (len * max), default max_tokens * max_requests (non-binding).
    """
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {SCHEDULERS}, got {scheduler!r}")
    s = f"{scheduler}_scheduler_config"
    args = [
        "--replica_config_model_name",
        model,
        "--replica_config_device",
        device,
        "--replica_config_network_device",
        network_device,
        "--replica_config_tensor_parallel_size",
        str(tensor_parallel),
        "--replica_config_num_pipeline_stages",
        "1",
        "--cluster_config_num_replicas",
        "1",
        "--request_generator_config_type",
        "trace_replay",
        "--trace_request_generator_config_trace_file",
        str(trace_csv),
        "--trace_request_generator_config_max_tokens",
        str(max_tokens),
        "--replica_scheduler_config_type",
        scheduler,
        f"--{s}_batch_size_cap",
        str(max_requests),
        f"--{s}_block_size",
        str(block_size),
        f"--{s}_num_blocks",
        str(num_blocks),
        "--execution_time_predictor_config_type",
        "linear_regression",
        "--metrics_config_output_dir",
        str(out_dir),
        "--no-metrics_config_store_plots",
        "--no-metrics_config_enable_chrome_trace",
        "--no-metrics_config_save_table_to_wandb",
        "--no-metrics_config_store_batch_metrics",
        "--no-metrics_config_store_utilization_metrics",
    ]
    if scheduler == "sarathi":
        args += [f"--{s}_chunk_size", str(chunk_size)]
    if scheduler == "vllm":
        cap = max_tokens * max_requests if max_tokens_in_batch is None else max_tokens_in_batch
        args += [f"--{s}_max_tokens_in_batch", str(cap)]
    return args


def vidur_env(spec: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Vidur process: `environ` (default os.environ) with wandb disabled;
    with a batch-time `spec` (`vidur_predictor.check_spec`'s dict) also this folder on
    PYTHONPATH (so `vidur_predictor` imports) and the spec as JSON in `ENV_SPEC`."""
    env = dict(os.environ if environ is None else environ, WANDB_MODE="disabled")
    if spec is not None:
        env["PYTHONPATH"] = str(HERE)
        env[ENV_SPEC] = json.dumps(dict(spec))
    return env


def run_vidur_process(
    paths: VidurPaths,
    entry: Sequence[str],
    args: Sequence[str],
    spec: Mapping[str, Any],
    what: str,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess, float]:
    """Run Vidur's interpreter on `entry` (e.g. ["-m", "vidur_predictor"], or ["-c", code]) with
    `args` (`vidur_args`), from Vidur's source root, in `vidur_env(spec)` plus `extra_env` (e.g.
    where a runner script writes its log), output captured. Returns (the finished process, its
    wall time in s); RuntimeError naming `what` (e.g. the scheduler) with the end of stderr when
    it fails."""
    env = {**vidur_env(spec), **(extra_env or {})}
    t0 = time.perf_counter()
    proc = subprocess.run([str(paths.python), *entry, *args], cwd=paths.src, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"Vidur {what} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc, wall


def vidur_metrics_csv(out_dir: Path) -> Path | None:
    """The request_metrics.csv a Vidur run wrote under `out_dir` (its run folder, the last in
    name order if several), or None."""
    found = sorted(Path(out_dir).glob("*/request_metrics.csv"))
    return found[-1] if found else None


# Columns of Vidur's request_metrics.csv read here, and the names they get.
VIDUR_METRIC_COLUMNS = {
    "Request Id": "id",
    "prefill_e2e_time": "ttft_s",
    "request_e2e_time": "e2e_s",
    "decode_time_execution_plus_preemption_normalized": "tpot_s",
    "request_num_restarts": "restarts",
}


def read_vidur_requests(path: Path) -> dict[str, np.ndarray]:
    """Vidur's request_metrics.csv as arrays sorted by request id: id, ttft_s (prefill_e2e_time),
    e2e_s (request_e2e_time), tpot_s (decode_time_execution_plus_preemption_normalized: the
    decode span over num_decode_tokens) and restarts. ValueError if a column is missing."""
    with Path(path).open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no rows")
    absent = [c for c in VIDUR_METRIC_COLUMNS if c not in rows[0]]
    if absent:
        raise ValueError(f"{path}: columns {absent} missing (found {sorted(rows[0])})")
    out = {name: np.array([float(r[col]) for r in rows]) for col, name in VIDUR_METRIC_COLUMNS.items()}
    order = np.argsort(out["id"], kind="stable")
    out = {k: v[order] for k, v in out.items()}
    out["id"] = out["id"].astype(np.int64)
    out["restarts"] = out["restarts"].astype(np.int64)
    return out


# ------------------------------------------------------------------------------------ jaxsched


def per_request_from_batches(batches: Mapping[str, np.ndarray], stream: Mapping[str, np.ndarray]) -> dict:
    """Per-request times of a budget run recorded with `record_members` (arrays [n], request
    id order; NaN where the request did not finish in the run).

    batches: `jaxsched.budget.batches(results, s)` (start_s, tau_s [B]; id, dp, dd [B, Q]);
    stream: `request_stream` of the same run (id, t_hi, t_lo, vp, vd [n]). A request's first
    token is produced at the end of the last batch that loads its prefill (jaxsched's TTFT),
    its departure at the end of the batch with its last decode token. Keys: ttft_s, e2e_s,
    tpot_s ((e2e - ttft) / v_d, the mean gap between its decode tokens), tpot_vidur_s
    ((e2e - ttft) / (v_d + 1), Vidur's normalisation by num_decode_tokens)."""
    n = int(np.asarray(stream["id"]).size)
    end = np.asarray(batches["start_s"], np.float64) + np.asarray(batches["tau_s"], np.float64)
    ids = np.asarray(batches["id"])
    ends = np.broadcast_to(end[:, None], ids.shape)
    first = np.full(n, -np.inf)
    depart = np.full(n, -np.inf)
    for target, mask in ((first, np.asarray(batches["dp"]) > 0), (depart, np.asarray(batches["dd"]) > 0)):
        sel = mask & (ids >= 0) & (ids < n)
        np.maximum.at(target, ids[sel], ends[sel])
    arrival = stream_arrivals_s(stream)
    vd = np.asarray(stream["vd"], np.float64)
    done = np.isfinite(first) & np.isfinite(depart)
    ttft = np.where(done, first - arrival, np.nan)
    e2e = np.where(done, depart - arrival, np.nan)
    return dict(ttft_s=ttft, e2e_s=e2e, tpot_s=(e2e - ttft) / vd, tpot_vidur_s=(e2e - ttft) / (vd + 1.0))


# ------------------------------------------------------------------------------------ stats


def summarize(x: np.ndarray) -> dict[str, float]:
    """mean, p50, p90, p99 (NumPy's linear-interpolation percentiles) of the finite values,
    and their count n."""
    x = np.asarray(x, np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return dict(n=0, **{s: float("nan") for s in STATS})
    q = np.percentile(x, [50, 90, 99])
    return dict(n=int(x.size), mean=float(x.mean()), p50=float(q[0]), p90=float(q[1]), p99=float(q[2]))


def relative_difference(a: float, b: float) -> float:
    """|a - b| / |b| (b the reference, Vidur); 0 when both are 0, inf when only b is."""
    if a == b:
        return 0.0
    return abs(a - b) / abs(b) if b != 0 else float("inf")


def agreement(
    jax_values: Mapping[str, np.ndarray], vidur_values: Mapping[str, np.ndarray], tolerance: float
) -> list[dict]:
    """One row per (quantity, statistic) of `QUANTITIES` x `STATS`: jaxsched's and Vidur's
    value, the relative difference and whether it is within `tolerance` (a fraction, e.g.
    0.05). jax_values: `per_request_from_batches`; vidur_values: `read_vidur_requests`."""
    rows = []
    for q, jk, vk in QUANTITIES:
        a, b = summarize(jax_values[jk]), summarize(vidur_values[vk])
        for s in STATS:
            rel = relative_difference(a[s], b[s])
            rows.append(dict(quantity=q, stat=s, jaxsched=a[s], vidur=b[s], rel_diff=rel, ok=bool(rel <= tolerance)))
    return rows


def paired_differences(jax_values: Mapping[str, np.ndarray], vidur_values: Mapping[str, np.ndarray]) -> dict:
    """Request-by-request comparison (same ids) of each of `QUANTITIES`: the largest absolute
    difference (s) and the fraction of requests within 1e-6 s."""
    out = {}
    for q, jk, vk in QUANTITIES:
        a = np.asarray(jax_values[jk], np.float64)
        b = np.asarray(vidur_values[vk], np.float64)
        if a.shape != b.shape:
            raise ValueError(f"{q}: {a.shape} jaxsched values against {b.shape} from Vidur")
        d = np.abs(a - b)
        out[q] = dict(max_abs_s=float(np.nanmax(d)) if d.size else 0.0, frac_equal_1us=float(np.mean(d <= 1e-6)))
    return out


def report_header(
    report: Mapping[str, Any], title: str, method: str, order: Sequence[str] = ("settings", "uptime")
) -> list[str]:
    """The opening lines of a comparison report (markdown, one string a line, a blank line after
    each paragraph): the title, the command and Vidur commit followed by `method` (how the
    simulators are set up, in sentences), then the "Settings:" line (`report["settings"]` as
    JSON) and the "uptime" line (`report["uptime_before"]`, `report["uptime_after"]`) in
    `order`. report: a compare.py or kv_compare.py report (keys command, vidur_commit, settings,
    uptime_before, uptime_after)."""
    lines = {
        "settings": "Settings: " + json.dumps(report["settings"]),
        "uptime": f"uptime before: `{report['uptime_before']}`; after: `{report['uptime_after']}`.",
    }
    if sorted(order) != sorted(lines):
        raise ValueError(f"order must list {sorted(lines)} once each, got {list(order)}")
    out = [
        f"# {title}",
        "",
        f"Command: `{report['command']}`. Vidur commit {report['vidur_commit']}, one replica, {method}",
        "",
    ]
    for key in order:
        out += [lines[key], ""]
    return out


def markdown_table(head: Iterable[str], rows: Iterable[Iterable]) -> str:
    """A markdown table."""
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
