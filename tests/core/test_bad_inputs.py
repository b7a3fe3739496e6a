"""Bad input gets one clear error naming the field, before anything compiles.

Every case here is a value a user can plausibly type or pass. On the command line each one must
end with exit status 2 and exactly one stderr line `jaxsched: error: ...` naming the flag or
field, without a traceback; from Python each one must raise one single-line `ConfigError`
naming the field. A guard replaces the runner's compilation and the optimizer with a function
that raises: a case the checks let through fails at once instead of starting a simulation, so
the module runs in seconds.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from jaxsched.cli import main
from jaxsched.errors import ConfigError

NAN, INF = float("nan"), float("inf")


class ReachedCompilation(Exception):
    """Raised by the guard: the input was accepted and work was about to start."""


@pytest.fixture
def no_compile(monkeypatch):
    import jaxsched.kv.tune
    import jaxsched.run

    def refuse(*args, **kwargs):
        raise ReachedCompilation("a simulation or tuning run was about to compile")

    monkeypatch.setattr(jaxsched.run, "_compiled", refuse)
    monkeypatch.setattr(jaxsched.kv.tune, "tune", refuse)


# ------------------------------------------------------------------------------ files

FILES = {
    "good": b"prompt,output\n10,2\n20,3\n",
    # Every byte value: NUL bytes and invalid UTF-8 sequences.
    "binary": bytes(range(256)) * 4,
    # Valid text in another encoding: the accents are single bytes that are not UTF-8.
    "latin1": "prompt,output\n10,2\n20,3\n# r\xe9sum\xe9\n".encode("latin-1"),
    "empty": b"",
    "header_only": b"input_tokens,output_tokens\n",
    "negative": b"10,2\n-5,3\n",
    "zero": b"10,2\n20,0\n",
    "non_numeric": b"prompt,output\n10,abc\n",
    "three_columns": b"a,b,c\n1,2,3\n",
    "headerless": b"10,2\n20,3\n",
    # Two columns, one of them not a known prompt / output name: not read as lengths.
    "unknown_output": b"input_tokens,foo\n10,2\n",
    "unknown_prompt": b"foo,output\n10,2\n",
    "unknown_both": b"a,b\n10,2\n",
    "blocker": b"a regular file where a folder is expected\n",
}


# --config files, {name: text} (formatted with the paths above), each `{name}_toml` in `paths`.
TOMLS = {
    "noise": "noise = 0.3\n",
    "workload_trace": 'workload = "bivariate_normal"\ntrace = "{good}"\n',
    "epsilon": 'policy = "mcsf"\nepsilon = 0.2\n',
    "rate_load": "rate = 10\nload = 0.5\n",
    "seeds_fraction": "seeds = 2.9\n",
    "steps_inf": "steps = inf\n",
    "steps_nan": "steps = nan\n",
    "g_float": "G = 4.0\n",
    "seeds_string": 'seeds = "3"\n',
    "noise_inf": "noise = inf\n",
    "noise_string": 'noise = "0.3"\n',
    "policies_list": 'policies = ["fcfs"]\n',
    "seed_start_bool": "seed_start = true\n",
    "budget_fraction": "budget = 512.5\n",
    "load_nan": "load = nan\n",
    "horizon_inf": "horizon_s = inf\n",
    "axis_string": 'axis = "num_workers=4"\n',
    "set_string": 'axis = ["policy=fcfs"]\nset = "num_steps=50"\n',
    "memory_inf": 'axis = ["policy=fcfs"]\nmemory_mb = inf\n',
    "capacity_float": "capacity_tokens = 1e5\n",
    "n_fraction": "num_requests = 50.5\n",
    "low_bool": "low = true\n",
    "x_nan": 'intervals = "relative"\nx = nan\n',
    "agents_fraction": "agents = 2.5\n",
    "measured_fraction": "measured = 10.5\n",
}


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad_inputs")
    out = {}
    for name, data in FILES.items():
        p = root / f"{name}.csv"
        p.write_bytes(data)
        out[name] = str(p)
    (root / "folder").mkdir()
    out["dir"] = str(root / "folder")
    out["missing"] = str(root / "missing.csv")
    # Paths below a regular file cannot be created by any user, root included (a read-only
    # folder would not stop root).
    out["unwritable_csv"] = str(root / "blocker.csv" / "sub" / "out.csv")
    out["unwritable_png"] = str(root / "blocker.csv" / "sub" / "plot.png")
    out["unwritable_dir"] = str(root / "blocker.csv" / "sub")
    out["not_image"] = str(root / "plot.txt")
    for name, text in TOMLS.items():  # after the CSVs: a file may name one
        p = root / f"{name}.toml"
        p.write_text(text.format(**out))
        out[f"{name}_toml"] = str(p)
    return out


# ------------------------------------------------------------------------------ command line

BOTH = r"(?=.*--workload)(?=.*--trace)"  # the line names both flags, in any order
IGN = r"--predictor is read only by policy bfio; policy \w+ ignores it"
RATE_LOAD = r"--rate and --load are exclusive"

CLI_CASES = [
    # (id, argv with {placeholders} from `paths`, regex the error line must match)
    # --- jaxsched run: shapes, counts, seeds
    ("run-G-not-int", ["run", "--G", "x"], r"--G"),
    ("run-G-zero", ["run", "--G", "0"], r"num_workers|--G"),
    ("run-G-negative", ["run", "--G", "-3"], r"num_workers|--G"),
    ("run-G-too-large", ["run", "--G", "100000"], r"num_workers|--G"),
    ("run-B-zero", ["run", "--B", "0"], r"slots_per_worker|--B"),
    ("run-B-float", ["run", "--B", "1.5"], r"--B"),
    ("run-R-zero", ["run", "--R", "0"], r"pool_size|--R"),
    ("run-load-overflow", ["run", "--G", "65536", "--B", "65536"], r"overflow"),
    ("run-steps-zero", ["run", "--steps", "0"], r"num_steps|--steps"),
    ("run-steps-not-int", ["run", "--steps", "abc"], r"--steps"),
    ("run-seeds-zero", ["run", "--seeds", "0"], r"--seeds"),
    ("run-seeds-negative", ["run", "--seeds", "-1"], r"--seeds"),
    ("run-seed-start-negative", ["run", "--seed-start", "-1"], r"seed"),
    ("run-seed-start-beyond-uint32", ["run", "--seed-start", "4294967296"], r"seed"),
    ("run-plot-steps-zero", ["run", "--plot-steps", "0"], r"--plot-steps"),
    # --- policies and choices
    ("run-policy-unknown", ["run", "--policies", "nope"], r"policies"),
    ("run-policy-lookahead-on-fcfs", ["run", "--policies", "fcfs:3"], r"policies"),
    ("run-policy-negative-lookahead", ["run", "--policies", "bfio:-1"], r"policies"),
    ("run-policy-lookahead-not-int", ["run", "--policies", "bfio:x"], r"policies"),
    ("run-policy-none", ["run", "--policies", ","], r"policies"),
    ("run-policy-lookahead-too-large", ["run", "--policies", "bfio:5000"], r"lookahead_steps"),
    ("run-workload-unknown", ["run", "--workload", "nope"], r"--workload"),
    ("run-semantics-unknown", ["run", "--semantics", "nope"], r"--semantics"),
    ("run-predictor-unknown", ["run", "--predictor", "nope"], r"--predictor"),
    ("run-unknown-flag", ["run", "--bogus"], r"--bogus"),
    # --- prediction errors
    ("run-noise-negative", ["run", "--predictor", "noisy", "--noise", "-0.5"], r"noise"),
    ("run-noise-nan", ["run", "--predictor", "noisy", "--noise", "nan"], r"noise"),
    ("run-fp-rate-above-1", ["run", "--predictor", "classifier", "--fp-rate", "1.5"], r"fp.rate"),
    ("run-noise-without-noisy", ["run", "--noise", "0.3"], r"--noise"),
    ("run-fp-rate-without-classifier", ["run", "--fp-rate", "0.1"], r"--fp-rate"),
    ("run-fn-rate-with-noisy", ["run", "--predictor", "noisy", "--fn-rate", "0.1"], r"--fn-rate"),
    # --- traces
    ("run-workload-and-trace", ["run", "--workload", "bivariate_normal", "--trace", "{good}"], BOTH),
    ("run-trace-missing", ["run", "--trace", "{missing}"], r"missing\.csv.*does not exist"),
    ("run-trace-directory", ["run", "--trace", "{dir}"], r"folder.*directory"),
    ("run-trace-binary", ["run", "--trace", "{binary}"], r"binary\.csv.*binary data"),
    ("run-trace-latin1", ["run", "--trace", "{latin1}"], r"latin1\.csv.*UTF-8"),
    ("run-trace-empty", ["run", "--trace", "{empty}"], r"empty\.csv.*empty"),
    ("run-trace-header-only", ["run", "--trace", "{header_only}"], r"no data rows"),
    ("run-trace-negative", ["run", "--trace", "{negative}"], r"line 2 prompt length.*'-5'"),
    ("run-trace-zero", ["run", "--trace", "{zero}"], r"line 2 output length.*'0'"),
    ("run-trace-non-numeric", ["run", "--trace", "{non_numeric}"], r"output length.*'abc'"),
    ("run-trace-three-columns", ["run", "--trace", "{three_columns}"], r"missing columns"),
    # --- output paths
    ("run-out-directory", ["run", "--out", "{dir}"], r"--out"),
    ("run-out-unwritable", ["run", "--out", "{unwritable_csv}"], r"--out"),
    ("run-plot-directory", ["run", "--plot", "{dir}"], r"--plot"),
    ("run-plot-not-image", ["run", "--plot", "{not_image}"], r"--plot"),
    ("run-plot-unwritable", ["run", "--plot", "{unwritable_png}"], r"--plot"),
    # --- jaxsched reproduce
    ("reproduce-unknown", ["reproduce", "nope"], r"nope"),
    ("reproduce-table1-no-trace", ["reproduce", "table1"], r"--trace"),
    ("reproduce-table1-trace-missing", ["reproduce", "table1", "--trace", "{missing}"], r"does not exist"),
    ("reproduce-table1-trace-binary", ["reproduce", "table1", "--trace", "{binary}"], r"binary data"),
    (
        "reproduce-table1-out-is-a-file",
        ["reproduce", "table1", "--trace", "{good}", "--out", "{good}"],
        r"--out must be a folder",
    ),
    ("reproduce-fig4-seeds-zero", ["reproduce", "fig4", "--seeds", "0"], r"seeds"),
    ("reproduce-noise-seeds-negative", ["reproduce", "noise", "--seeds", "-1"], r"seeds"),
    ("reproduce-fig4-seeds-not-int", ["reproduce", "fig4", "--seeds", "x"], r"--seeds"),
    ("reproduce-fig4-plot-not-image", ["reproduce", "fig4", "--plot", "{not_image}"], r"--plot"),
    # --- jaxsched check theorems
    ("check-unknown", ["check", "nope"], r"theorems"),
    ("check-kernel-unknown", ["check", "theorems", "--kernel", "nope"], r"--kernel"),
    ("check-t1-kernel-unknown", ["check", "theorems", "--t1-kernel", "nope"], r"--t1-kernel"),
    ("check-seeds-one", ["check", "theorems", "--seeds", "1"], r"--seeds"),
    ("check-seeds-zero", ["check", "theorems", "--seeds", "0"], r"--seeds"),
    ("check-measured-zero", ["check", "theorems", "--measured", "0"], r"--measured"),
    ("check-measured-not-int", ["check", "theorems", "--measured", "x"], r"--measured"),
    ("check-out-is-a-file", ["check", "theorems", "--out", "{good}"], r"--out"),
    # --- jaxsched sweep, dp engine
    ("sweep-axis-no-equals", ["sweep", "--axis", "bogus"], r"--axis"),
    ("sweep-axis-no-values", ["sweep", "--axis", "num_workers="], r"--axis"),
    ("sweep-axis-unknown-field", ["sweep", "--axis", "nope=1"], r"nope"),
    ("sweep-axis-zero-workers", ["sweep", "--axis", "num_workers=0"], r"num_workers"),
    ("sweep-axis-workers-not-int", ["sweep", "--axis", "num_workers=x"], r"num_workers"),
    ("sweep-axis-policy-unknown", ["sweep", "--axis", "policy=nope"], r"policy"),
    ("sweep-axis-decay-zero", ["sweep", "--axis", "lookahead_decay=0"], r"lookahead_decay"),
    ("sweep-axis-drift-reversed", ["sweep", "--axis", "drift=[2,1]", "--semantics", "theory"], r"drift"),
    ("sweep-axis-duplicate-value", ["sweep", "--axis", "num_workers=8,8"], r"num_workers"),
    ("sweep-axis-given-twice", ["sweep", "--axis", "num_workers=4", "--axis", "num_workers=8"], r"num_workers"),
    ("sweep-set-no-equals", ["sweep", "--axis", "policy=fcfs", "--set", "bogus"], r"--set"),
    ("sweep-set-unknown-field", ["sweep", "--axis", "policy=fcfs", "--set", "nope=1"], r"nope"),
    ("sweep-set-negative-const", ["sweep", "--axis", "policy=fcfs", "--set", "step_const_s=-1"], r"step_const_s"),
    ("sweep-set-const-not-number", ["sweep", "--axis", "policy=fcfs", "--set", "step_const_s=abc"], r"step_const_s"),
    ("sweep-seeds-zero", ["sweep", "--axis", "policy=fcfs", "--seeds", "0"], r"--seeds"),
    ("sweep-seeds-not-int", ["sweep", "--axis", "policy=fcfs", "--seeds", "x"], r"--seeds"),
    ("sweep-steps-zero", ["sweep", "--axis", "policy=fcfs", "--steps", "0"], r"num_steps|--steps"),
    ("sweep-engine-unknown", ["sweep", "--engine", "nope", "--axis", "policy=fcfs"], r"--engine"),
    ("sweep-trace-binary", ["sweep", "--axis", "policy=fcfs", "--trace", "{binary}"], r"binary data"),
    ("sweep-trace-directory", ["sweep", "--axis", "policy=fcfs", "--trace", "{dir}"], r"directory"),
    ("sweep-memory-zero", ["sweep", "--axis", "policy=fcfs", "--memory-mb", "0"], r"--memory-mb"),
    ("sweep-memory-negative", ["sweep", "--axis", "policy=fcfs", "--memory-mb", "-5"], r"--memory-mb"),
    ("sweep-memory-nan", ["sweep", "--axis", "policy=fcfs", "--memory-mb", "nan"], r"--memory-mb"),
    ("sweep-out-directory", ["sweep", "--axis", "policy=fcfs", "--out", "{dir}"], r"--out"),
    ("sweep-out-unwritable", ["sweep", "--axis", "policy=fcfs", "--out", "{unwritable_csv}"], r"--out"),
    # --- jaxsched sweep, kv engine
    ("sweep-kv-policy-unknown", ["sweep", "--engine", "kv", "--axis", "policy=nope"], r"policy"),
    ("sweep-kv-capacity-zero", ["sweep", "--engine", "kv", "--axis", "capacity_tokens=0"], r"capacity_tokens"),
    (
        "sweep-kv-rates-wrong-length",
        ["sweep", "--engine", "kv", "--axis", "policy=fcfs", "--set", "rates=[1]"],
        r"rates",
    ),
    (
        "sweep-kv-prefill-zero",
        ["sweep", "--engine", "kv", "--axis", "policy=fcfs", "--set", "prefill_tokens=[0,1]"],
        r"prefill_tokens",
    ),
    (
        "sweep-kv-thresholds-zero",
        ["sweep", "--engine", "kv", "--axis", "policy=wait", "--set", "thresholds=[0,1]"],
        r"thresholds",
    ),
    ("sweep-kv-dp-field", ["sweep", "--engine", "kv", "--axis", "num_workers=4"], r"num_workers"),
    (
        "sweep-kv-steps-flag",
        ["sweep", "--engine", "kv", "--axis", "policy=fcfs", "--steps", "10"],
        r"--num-steps is read only by engine dp",
    ),
    ("sweep-kv-memory-zero", ["sweep", "--engine", "kv", "--axis", "policy=fcfs", "--memory-mb", "0"], r"--memory-mb"),
    # --- jaxsched kv run
    ("kv-run-policy-unknown", ["kv", "run", "--policy", "nope"], r"policy"),
    ("kv-run-prefill-not-int", ["kv", "run", "--prefill", "a,b"], r"--prefill"),
    ("kv-run-prefill-zero", ["kv", "run", "--prefill", "0,1"], r"prefill"),
    ("kv-run-decode-wrong-length", ["kv", "run", "--decode", "10"], r"decode"),
    ("kv-run-rates-not-number", ["kv", "run", "--rates", "x"], r"--rates"),
    ("kv-run-rates-zero", ["kv", "run", "--rates", "0,1"], r"rates"),
    ("kv-run-rates-wrong-length", ["kv", "run", "--rates", "1"], r"rates"),
    ("kv-run-thresholds-zero", ["kv", "run", "--thresholds", "0,1"], r"thresholds"),
    ("kv-run-thresholds-not-int", ["kv", "run", "--thresholds", "x"], r"--thresholds"),
    ("kv-run-d0-zero", ["kv", "run", "--d0", "0"], r"d0"),
    ("kv-run-d0-nan", ["kv", "run", "--d0", "nan"], r"d0"),
    ("kv-run-d1-negative", ["kv", "run", "--d1", "-1"], r"d1"),
    ("kv-run-capacity-too-small", ["kv", "run", "--capacity", "5"], r"capacity"),
    ("kv-run-capacity-not-int", ["kv", "run", "--capacity", "x"], r"--capacity"),
    ("kv-run-num-requests-zero", ["kv", "run", "--num-requests", "0"], r"--num-requests"),
    ("kv-run-table-size-zero", ["kv", "run", "--table-size", "0"], r"--table-size"),
    ("kv-run-seeds-zero", ["kv", "run", "--seeds", "0"], r"--seeds"),
    # --- jaxsched kv experiment
    ("kv-exp-unknown", ["kv", "experiment", "nope"], r"nope"),
    ("kv-exp-seeds-zero", ["kv", "experiment", "e1", "--seeds", "0"], r"--seeds"),
    ("kv-exp-policy-unknown", ["kv", "experiment", "e1", "--policies", "nope"], r"polic"),
    ("kv-exp-load-zero", ["kv", "experiment", "e1", "--loads", "0"], r"load"),
    ("kv-exp-load-above-1", ["kv", "experiment", "e1", "--loads", "1.5"], r"load"),
    ("kv-exp-loads-not-number", ["kv", "experiment", "e1", "--loads", "x"], r"--loads"),
    ("kv-exp-loads-empty", ["kv", "experiment", "e1", "--loads", ","], r"loads"),
    ("kv-exp-batch-limit-zero", ["kv", "experiment", "e1", "--batch-limits", "0"], r"batch.limits"),
    ("kv-exp-batch-limit-not-int", ["kv", "experiment", "e1", "--batch-limits", "x"], r"--batch-limits"),
    ("kv-exp-capacity-rule-unknown", ["kv", "experiment", "e1", "--capacity", "nope"], r"capacit"),
    ("kv-exp-prefill-price-negative", ["kv", "experiment", "e1", "--prefill-price", "-1"], r"prefill.price"),
    ("kv-exp-scaling-policies", ["kv", "experiment", "scaling", "--policies", "wait"], r"--policies"),
    ("kv-exp-scaling-seeds-one", ["kv", "experiment", "scaling", "--seeds", "1"], r"--seeds"),
    ("kv-exp-out-is-a-file", ["kv", "experiment", "e1", "--out", "{good}"], r"--out"),
    # --- jaxsched offline
    ("offline-run-policy-unknown", ["offline", "run", "--policy", "nope"], r"--policy"),
    ("offline-run-workload-unknown", ["offline", "run", "--workload", "zipf"], r"--workload"),
    ("offline-run-n-zero", ["offline", "run", "--n", "0"], r"\bn\b"),
    ("offline-run-n-huge", ["offline", "run", "--n", "100000"], r"\bn\b"),
    ("offline-run-capacity-one", ["offline", "run", "--capacity", "1"], r"capacity"),
    ("offline-run-dp-width-below-m", ["offline", "run", "--policy", "sorted_f_dp", "--capacity", "300"], r"dp_width"),
    ("offline-run-dp-width-one", ["offline", "run", "--policy", "sorted_f_dp", "--dp-width", "1"], r"dp_width"),
    ("offline-run-epsilon-zero", ["offline", "run", "--policy", "sorted_f_scaled", "--epsilon", "0"], r"epsilon"),
    ("offline-run-scale-b-zero", ["offline", "run", "--policy", "sorted_f_scaled", "--scale-b", "0"], r"scale_b"),
    ("offline-run-quantile-two", ["offline", "run", "--policy", "sorted_f_quantile", "--quantile", "2"], r"quantile"),
    (
        "offline-run-sample-fraction-zero",
        ["offline", "run", "--policy", "sorted_f_quantile", "--sample-fraction", "0"],
        r"sample_fraction",
    ),
    ("offline-run-seeds-zero", ["offline", "run", "--seeds", "0"], r"--seeds"),
    ("offline-run-step-model-unknown", ["offline", "run", "--step-model", "vidur"], r"--step-model"),
    (
        "offline-run-trace-missing",
        ["offline", "run", "--workload", "azure", "--trace", "/nonexistent/azure.csv"],
        r"--trace",
    ),
    ("offline-run-out-is-a-folder", ["offline", "run", "--out", "."], r"--out"),
    ("offline-exp-unknown", ["offline", "experiment", "table9"], r"experiment"),
    ("offline-exp-missing", ["offline", "experiment"], r"required"),
    ("offline-exp-seeds-zero", ["offline", "experiment", "lemma1", "--seeds", "0"], r"--seeds"),
    ("offline-exp-out-is-a-file", ["offline", "experiment", "lemma1", "--out", "{good}"], r"--out"),
    (
        "sweep-offline-workload-unknown",
        ["sweep", "--engine", "offline", "--set", "workload=zipf", "--axis", "policy=mcsf"],
        r"workload",
    ),
    # --- jaxsched interval
    ("interval-run-policy-unknown", ["interval", "run", "--policy", "amid"], r"--policy"),
    ("interval-run-workload-unknown", ["interval", "run", "--workload", "zipf"], r"--workload"),
    ("interval-run-n-zero", ["interval", "run", "--n", "0"], r"\bn\b"),
    ("interval-run-n-huge", ["interval", "run", "--n", "100000"], r"\bn\b"),
    ("interval-run-capacity-below-s-plus-u", ["interval", "run", "--capacity", "1000"], r"capacity"),
    ("interval-run-intervals-unknown", ["interval", "run", "--intervals", "fuzzy"], r"--intervals"),
    ("interval-run-low-above-high", ["interval", "run", "--low", "9", "--high", "5"], r"intervals.high"),
    ("interval-run-high-below-support", ["interval", "run", "--high", "500"], r"intervals"),
    ("interval-run-low-zero", ["interval", "run", "--low", "0"], r"intervals.low"),
    ("interval-run-x-above-one", ["interval", "run", "--intervals", "relative", "--x", "1.5"], r"intervals.x"),
    ("interval-run-x-nan", ["interval", "run", "--intervals", "relative", "--x", "nan"], r"intervals.x"),
    ("interval-run-x-too-fine", ["interval", "run", "--intervals", "relative", "--x", "0.123456"], r"intervals.x"),
    (
        "interval-run-buckets-too-narrow",
        ["interval", "run", "--intervals", "buckets", "--bucket-width", "10"],
        r"intervals",
    ),
    (
        "interval-run-bucket-width-zero",
        ["interval", "run", "--intervals", "buckets", "--bucket-width", "0"],
        r"intervals.width",
    ),
    ("interval-run-eviction-key-unknown", ["interval", "run", "--eviction-key", "fresh"], r"--eviction-key"),
    ("interval-run-seeds-zero", ["interval", "run", "--seeds", "0"], r"--seeds"),
    ("interval-run-out-is-a-folder", ["interval", "run", "--out", "."], r"--out"),
    ("interval-exp-unknown", ["interval", "experiment", "fig9"], r"experiment"),
    ("interval-exp-missing", ["interval", "experiment"], r"required"),
    ("interval-exp-seeds-zero", ["interval", "experiment", "two_point", "--seeds", "0"], r"--seeds"),
    (
        "sweep-interval-policy-unknown",
        ["sweep", "--engine", "interval", "--set", "workload=lmsys", "--axis", "policy=amin,amid"],
        r"policy",
    ),
    # --- jaxsched budget | check stability
    ("budget-run-budget-zero", ["budget", "run", "--budget", "0"], r"budget must be"),
    ("budget-run-budget-huge", ["budget", "run", "--budget", "100000"], r"budget must be"),
    ("budget-run-load-negative", ["budget", "run", "--load", "-1"], r"--load"),
    ("budget-run-rate-zero", ["budget", "run", "--rate", "0"], r"--rate"),
    ("budget-run-rate-nan", ["budget", "run", "--rate", "nan"], r"--rate"),
    ("budget-run-policy-unknown", ["budget", "run", "--policy", "fastest"], r"--policy"),
    ("budget-run-max-requests-zero", ["budget", "run", "--max-requests", "0"], r"max_requests"),
    (
        "budget-run-prefill-cap-below-prompt",
        ["budget", "run", "--policy", "vllm", "--prefill-cap", "100"],
        r"prefill_cap",
    ),
    ("budget-run-horizon-zero", ["budget", "run", "--horizon", "0"], r"horizon_s"),
    ("budget-run-burn-in-past-horizon", ["budget", "run", "--horizon", "10", "--burn-in", "20"], r"burn_in_s"),
    ("budget-run-batch-takes-no-time", ["budget", "run", "--c-ms", "0", "--a-ms", "0"], r"c_s"),
    ("budget-run-prompt-zero", ["budget", "run", "--prompt", "0"], r"--prompt"),
    ("budget-run-constant-fraction", ["budget", "run", "--decode", "1.5"], r"--decode"),
    ("budget-run-table-zero", ["budget", "run", "--table-size", "0"], r"table_size"),
    ("budget-run-seeds-zero", ["budget", "run", "--seeds", "0"], r"--seeds"),
    ("budget-exp-unknown", ["budget", "experiment", "fig99"], r"experiment"),
    ("check-stability-seeds-two", ["check", "stability", "--seeds", "2"], r"--seeds"),
    # --- jaxsched network
    ("network-run-agents-zero", ["network", "run", "--agents", "0"], r"agents"),
    ("network-run-router-unknown", ["network", "run", "--router", "nearest"], r"--router"),
    ("network-run-budget-zero", ["network", "run", "--budget", "0"], r"agent 0: budget must"),
    ("network-run-load-zero", ["network", "run", "--load", "0"], r"--load"),
    ("network-run-rs-load-nan", ["network", "run", "--topology", "rs", "--load", "nan"], r"--load"),
    ("network-run-table-zero", ["network", "run", "--table-size", "0"], r"table_size"),
    ("network-exp-unknown", ["network", "experiment", "fig8"], r"experiment"),
    ("check-unknown-names-stability", ["check", "lemmas"], r"stability"),
    # --- jaxsched tune
    ("tune-unknown", ["tune", "e9"], r"e9"),
    ("tune-steps-zero", ["tune", "e3", "--steps", "0"], r"--steps"),
    ("tune-steps-not-int", ["tune", "e3", "--steps", "x"], r"--steps"),
    ("tune-seeds-one", ["tune", "e3", "--seeds", "1"], r"--seeds"),
    ("tune-seed-start-negative", ["tune", "e3", "--seed-start", "-1"], r"seed"),
    ("tune-lam-negative", ["tune", "e3", "--lam", "-1"], r"lam"),
    ("tune-lam-nan", ["tune", "e3", "--lam", "nan"], r"lam"),
    ("tune-out-is-a-file", ["tune", "e3", "--out", "{good}"], r"--out|out_dir"),
    # ============================================================ issue 33: ignored options
    # Each option names what reads it (a registry entry's options, a predictor, a topology,
    # an experiment); given while the chosen settings ignore it, it is one error line.
    # --- run (dp): BF-IO reads the predictor and its errors; each predictor its own rate
    ("run-predictor-without-bfio", ["run", "--predictor", "noisy", "--noise", "0.3", "--policies", "fcfs"], IGN),
    ("run-predictor-classifier-jsq", ["run", "--predictor", "classifier", "--policies", "jsq_tokens"], IGN),
    (
        "run-noise-two-policies-without-bfio",
        ["run", "--noise", "0.3", "--policies", "fcfs,jsq_tokens"],
        r"--noise is read only by policy bfio; policies fcfs, jsq_tokens ignore it",
    ),
    ("run-fp-rate-with-noisy", ["run", "--predictor", "noisy", "--fp-rate", "0.1"], r"--fp-rate.*predictor noisy"),
    ("run-fn-rate-with-oracle", ["run", "--fn-rate", "0.2"], r"--fn-rate.*predictor oracle ignores it"),
    ("run-noise-with-classifier", ["run", "--predictor", "classifier", "--noise", "0.1"], r"--noise.*classifier"),
    ("run-noise-at-its-default", ["run", "--noise", "0"], r"--noise is read only by predictor noisy"),
    ("run-fp-rate-round-robin", ["run", "--fp-rate", "0.1", "--policies", "round_robin"], r"--fp-rate.*round_robin"),
    ("run-fn-rate-power-of-two", ["run", "--fn-rate", "0.1", "--policies", "power_of_two"], r"--fn-rate"),
    ("run-trace-columns-without-trace", ["run", "--trace-columns", "a,b"], r"--trace-columns is read only by --trace"),
    ("run-config-noise-oracle", ["run", "--config", "{noise_toml}"], r"--noise is read only by predictor noisy"),
    ("run-config-workload-and-trace", ["run", "--config", "{workload_trace_toml}"], BOTH),
    ("dp-run-predictor-fcfs", ["dp", "run", "--predictor", "noisy", "--policies", "fcfs"], IGN),
    (
        "sweep-workload-and-trace",
        ["sweep", "--axis", "policy=fcfs", "--workload", "bivariate_normal", "--trace", "{good}"],
        BOTH,
    ),
    # --- reproduce: table1 is one run on its trace, fig4 and noise draw their own requests
    (
        "reproduce-table1-plot",
        ["reproduce", "table1", "--trace", "{good}", "--plot", "t.png"],
        r"--plot is read only by reproduce fig4, noise; reproduce table1 ignores it",
    ),
    (
        "reproduce-table1-seeds",
        ["reproduce", "table1", "--trace", "{good}", "--seeds", "4"],
        r"--seeds.*reproduce table1",
    ),
    (
        "reproduce-fig4-trace",
        ["reproduce", "fig4", "--trace", "{good}"],
        r"--trace is read only by reproduce table1; reproduce fig4",
    ),
    ("reproduce-noise-trace", ["reproduce", "noise", "--trace", "{good}"], r"--trace.*reproduce noise"),
    ("dp-reproduce-table1-plot", ["dp", "reproduce", "table1", "--trace", "{good}", "--plot", "t.png"], r"--plot"),
    # --- check stability runs the budget experiment: the theorem options do not reach it
    (
        "check-stability-kernel",
        ["check", "stability", "--kernel", "vf"],
        r"--kernel is read only by check theorems; check stability ignores it",
    ),
    ("check-stability-t1-kernel", ["check", "stability", "--t1-kernel", "window"], r"--t1-kernel"),
    ("check-stability-measured", ["check", "stability", "--measured", "10"], r"--measured"),
    ("check-stability-bucket-waste", ["check", "stability", "--bucket-waste", "3"], r"--bucket-waste"),
    ("check-stability-no-buckets", ["check", "stability", "--no-buckets"], r"--no-buckets"),
    # --- kv: thresholds are WAIT's and Nested WAIT's; scaling reads no grid options
    (
        "kv-run-thresholds-fcfs",
        ["kv", "run", "--policy", "fcfs", "--thresholds", "1,2"],
        r"--thresholds is read only by policy wait, nested_wait; policy fcfs ignores it",
    ),
    ("kv-run-thresholds-vllm", ["kv", "run", "--policy", "vllm", "--thresholds", "1,2"], r"--thresholds.*vllm"),
    (
        "kv-run-thresholds-sarathi",
        ["kv", "run", "--policy", "sarathi", "--thresholds", "1,2"],
        r"--thresholds.*sarathi",
    ),
    (
        "kv-exp-scaling-loads",
        ["kv", "experiment", "scaling", "--loads", "0.5"],
        r"--loads is read only by experiment e1, e2, e3, e4",
    ),
    (
        "kv-exp-scaling-batch-limits",
        ["kv", "experiment", "scaling", "--batch-limits", "64"],
        r"--batch-limits.*scaling",
    ),
    ("kv-exp-scaling-capacity", ["kv", "experiment", "scaling", "--capacity", "mstar"], r"--capacity.*scaling"),
    ("kv-exp-scaling-prefill-price", ["kv", "experiment", "scaling", "--prefill-price", "2"], r"--prefill-price"),
    # --- offline: each Sorted-F solver's options (the registry's), the azure trace
    (
        "offline-run-epsilon-fcfs",
        ["offline", "run", "--policy", "fcfs", "--epsilon", "0.2"],
        r"--epsilon is read only by policy sorted_f_scaled; policy fcfs ignores it",
    ),
    ("offline-run-epsilon-at-its-default", ["offline", "run", "--policy", "fcfs", "--epsilon", "0.1"], r"--epsilon"),
    (
        "offline-run-dp-width-mcsf",
        ["offline", "run", "--policy", "mcsf", "--dp-width", "512"],
        r"--dp-width is read only by policy sorted_f_dp",
    ),
    ("offline-run-scale-b-swap", ["offline", "run", "--scale-b", "50"], r"--scale-b.*policy sorted_f_swap ignores it"),
    (
        "offline-run-quantile-dp",
        ["offline", "run", "--policy", "sorted_f_dp", "--quantile", "0.5"],
        r"--quantile is read only by policy sorted_f_quantile",
    ),
    (
        "offline-run-sample-fraction-scaled",
        ["offline", "run", "--policy", "sorted_f_scaled", "--sample-fraction", "0.3"],
        r"--sample-fraction",
    ),
    (
        "offline-run-epsilon-quantile",
        ["offline", "run", "--policy", "sorted_f_quantile", "--epsilon", "0.2"],
        r"--epsilon",
    ),
    (
        "offline-run-trace-uniform",
        ["offline", "run", "--workload", "uniform", "--trace", "{good}"],
        r"--trace is read only by workload azure; workload uniform ignores it",
    ),
    (
        "offline-run-trace-lmsys",
        ["offline", "run", "--workload", "lmsys", "--trace", "{good}"],
        r"--trace.*workload lmsys",
    ),
    ("offline-run-config-epsilon-mcsf", ["offline", "run", "--config", "{epsilon_toml}"], r"--epsilon.*policy mcsf"),
    # --- interval: A_min's eviction key, A_max's order, each predictor's parameters
    (
        "interval-run-eviction-key-hsf",
        ["interval", "run", "--policy", "hsf", "--eviction-key", "live"],
        r"--eviction-key is read only by policy amin; policy hsf ignores it",
    ),
    (
        "interval-run-eviction-key-amax",
        ["interval", "run", "--policy", "amax", "--eviction-key", "live"],
        r"--eviction-key",
    ),
    (
        "interval-run-amax-order-amin",
        ["interval", "run", "--amax-order", "random"],
        r"--amax-order is read only by policy amax; policy amin",
    ),
    ("interval-run-amax-order-al", ["interval", "run", "--policy", "al", "--amax-order", "random"], r"--amax-order"),
    (
        "interval-run-low-relative",
        ["interval", "run", "--intervals", "relative", "--low", "3"],
        r"--low is read only by intervals shared; intervals relative ignores it",
    ),
    ("interval-run-high-buckets", ["interval", "run", "--intervals", "buckets", "--high", "900"], r"--high.*buckets"),
    (
        "interval-run-x-shared",
        ["interval", "run", "--x", "0.3"],
        r"--x is read only by intervals relative; intervals shared",
    ),
    (
        "interval-run-bucket-width-shared",
        ["interval", "run", "--bucket-width", "50"],
        r"--bucket-width.*intervals buckets",
    ),
    ("interval-run-buckets-exact", ["interval", "run", "--intervals", "exact", "--buckets", "5"], r"--buckets.*exact"),
    ("interval-run-x-exact", ["interval", "run", "--intervals", "exact", "--x", "0.2"], r"--x.*exact"),
    # --- budget: vllm's and ft's prefill cap; a rate and a load
    ("budget-run-rate-and-load", ["budget", "run", "--rate", "10", "--load", "0.5"], RATE_LOAD),
    (
        "budget-run-prefill-cap-sarathi",
        ["budget", "run", "--prefill-cap", "600"],
        r"--prefill-cap is read only by policy vllm, ft; policy sarathi ignores it",
    ),
    ("budget-run-prefill-cap-wc", ["budget", "run", "--policy", "wc", "--prefill-cap", "600"], r"--prefill-cap.*wc"),
    (
        "budget-run-prefill-cap-orca",
        ["budget", "run", "--policy", "orca", "--prefill-cap", "600"],
        r"--prefill-cap.*orca",
    ),
    ("budget-run-config-rate-and-load", ["budget", "run", "--config", "{rate_load_toml}"], RATE_LOAD),
    # --- network: rs runs Fig. 8's fixed agents; parallel has no priorities
    (
        "network-rs-router",
        ["network", "run", "--topology", "rs", "--router", "random"],
        r"--router is read only by topology parallel; topology rs ignores it",
    ),
    ("network-rs-agents", ["network", "run", "--topology", "rs", "--agents", "3"], r"--agents"),
    ("network-rs-policy", ["network", "run", "--topology", "rs", "--policy", "orca"], r"--policy"),
    ("network-rs-rate", ["network", "run", "--topology", "rs", "--rate", "5"], r"--rate"),
    ("network-rs-budget", ["network", "run", "--topology", "rs", "--budget", "256"], r"--budget"),
    ("network-rs-prompt", ["network", "run", "--topology", "rs", "--prompt", "10"], r"--prompt"),
    ("network-rs-decode", ["network", "run", "--topology", "rs", "--decode", "10"], r"--decode"),
    ("network-rs-max-requests", ["network", "run", "--topology", "rs", "--max-requests", "8"], r"--max-requests"),
    ("network-rs-c-ms", ["network", "run", "--topology", "rs", "--c-ms", "10"], r"--c-ms"),
    ("network-rs-a-ms", ["network", "run", "--topology", "rs", "--a-ms", "0.1"], r"--a-ms"),
    ("network-rs-b0", ["network", "run", "--topology", "rs", "--b0", "0"], r"--b0"),
    (
        "network-parallel-priority",
        ["network", "run", "--priority", "stable"],
        r"--priority is read only by topology rs; topology parallel",
    ),
    ("network-run-rate-and-load", ["network", "run", "--rate", "5", "--load", "0.5"], RATE_LOAD),
    ("network-run-config-rate-and-load", ["network", "run", "--config", "{rate_load_toml}"], RATE_LOAD),
    # ============================================================ issue 33: strict values
    # --- TOML: integers are integers, numbers are finite, numbers are not strings
    ("run-config-seeds-fraction", ["run", "--config", "{seeds_fraction_toml}"], r"seeds must be an integer, got 2\.9"),
    ("run-config-steps-inf", ["run", "--config", "{steps_inf_toml}"], r"steps must be a finite number, got inf"),
    ("run-config-steps-nan", ["run", "--config", "{steps_nan_toml}"], r"steps must be a finite number, got nan"),
    ("run-config-G-integral-float", ["run", "--config", "{g_float_toml}"], r"G must be an integer, got 4\.0"),
    ("run-config-seeds-string", ["run", "--config", "{seeds_string_toml}"], r"seeds must be a int, got '3'"),
    ("run-config-noise-inf", ["run", "--config", "{noise_inf_toml}"], r"noise must be a finite number"),
    ("run-config-noise-string", ["run", "--config", "{noise_string_toml}"], r"noise must be a float"),
    ("run-config-policies-list", ["run", "--config", "{policies_list_toml}"], r"policies must be a single value"),
    (
        "run-config-seed-start-bool",
        ["run", "--config", "{seed_start_bool_toml}"],
        r"seed_start must be a int, got True",
    ),
    (
        "budget-run-config-budget-fraction",
        ["budget", "run", "--config", "{budget_fraction_toml}"],
        r"budget must be an integer, got 512\.5",
    ),
    ("budget-run-config-load-nan", ["budget", "run", "--config", "{load_nan_toml}"], r"load must be a finite number"),
    (
        "budget-run-config-horizon-inf",
        ["budget", "run", "--config", "{horizon_inf_toml}"],
        r"horizon_s must be a finite number",
    ),
    (
        "sweep-config-axis-string",
        ["sweep", "--config", "{axis_string_toml}"],
        r"axis must be a list of values, one per --axis",
    ),
    ("sweep-config-set-string", ["sweep", "--config", "{set_string_toml}"], r"set must be a list"),
    ("sweep-config-memory-inf", ["sweep", "--config", "{memory_inf_toml}"], r"memory_mb must be a finite number"),
    ("sweep-config-seeds-fraction", ["sweep", "--config", "{seeds_fraction_toml}"], r"seeds must be an integer"),
    (
        "kv-run-config-capacity-float",
        ["kv", "run", "--config", "{capacity_float_toml}"],
        r"capacity_tokens must be an integer",
    ),
    (
        "kv-exp-config-seeds-fraction",
        ["kv", "experiment", "e1", "--config", "{seeds_fraction_toml}"],
        r"seeds must be an integer",
    ),
    (
        "offline-run-config-n-fraction",
        ["offline", "run", "--config", "{n_fraction_toml}"],
        r"num_requests must be an integer",
    ),
    (
        "interval-run-config-low-bool",
        ["interval", "run", "--config", "{low_bool_toml}"],
        r"low must be a int, got True",
    ),
    ("interval-run-config-x-nan", ["interval", "run", "--config", "{x_nan_toml}"], r"x must be a finite number"),
    (
        "network-run-config-agents-fraction",
        ["network", "run", "--config", "{agents_fraction_toml}"],
        r"agents must be an integer",
    ),
    ("tune-config-steps-inf", ["tune", "e3", "--config", "{steps_inf_toml}"], r"steps must be a finite number"),
    (
        "check-config-measured-fraction",
        ["check", "theorems", "--config", "{measured_fraction_toml}"],
        r"measured must be an integer",
    ),
    (
        "reproduce-config-seeds-fraction",
        ["reproduce", "fig4", "--config", "{seeds_fraction_toml}"],
        r"seeds must be an integer",
    ),
    (
        "budget-exp-config-seeds-string",
        ["budget", "experiment", "stability", "--config", "{seeds_string_toml}"],
        r"seeds must be a int",
    ),
    # --- inf and NaN on the command line: one line naming the flag or the field it sets
    ("budget-run-load-inf", ["budget", "run", "--load", "inf"], r"--load must be a finite number"),
    ("budget-run-c-ms-inf", ["budget", "run", "--c-ms", "inf"], r"c_s must be a finite number"),
    ("budget-run-a-ms-nan", ["budget", "run", "--a-ms", "nan"], r"a_s_per_token must be a finite number"),
    ("budget-run-horizon-inf", ["budget", "run", "--horizon", "inf"], r"horizon_s must be a finite number"),
    ("budget-run-burn-in-nan", ["budget", "run", "--burn-in", "nan"], r"burn_in_s must be a finite number"),
    ("budget-run-prompt-inf", ["budget", "run", "--prompt", "inf"], r"--prompt must be a finite number"),
    ("network-run-prompt-nan", ["network", "run", "--prompt", "nan"], r"--prompt must be a finite number"),
    ("network-run-c-ms-inf", ["network", "run", "--c-ms", "inf"], r"agent 0: c_s must be a finite number"),
    ("network-run-horizon-nan", ["network", "run", "--horizon", "nan"], r"horizon_s must be a finite number"),
    ("network-run-rate-inf", ["network", "run", "--rate", "inf"], r"--rate must be a finite number"),
    ("kv-run-d0-inf", ["kv", "run", "--d0", "inf"], r"d0_s must be a finite number"),
    ("kv-run-d1-nan", ["kv", "run", "--d1", "nan"], r"d1_s_per_token must be a finite number"),
    ("kv-run-rates-inf", ["kv", "run", "--rates", "1000,inf"], r"--rates must be comma-separated finite numbers"),
    (
        "kv-exp-loads-nan",
        ["kv", "experiment", "e1", "--loads", "nan"],
        r"--loads must be comma-separated finite numbers",
    ),
    (
        "kv-exp-prefill-price-inf",
        ["kv", "experiment", "e1", "--prefill-price", "inf"],
        r"prefill_price must be a finite number",
    ),
    (
        "interval-run-x-inf",
        ["interval", "run", "--intervals", "relative", "--x", "inf"],
        r"intervals.x must be a finite number",
    ),
    (
        "offline-run-epsilon-nan",
        ["offline", "run", "--policy", "sorted_f_scaled", "--epsilon", "nan"],
        r"epsilon must be a finite number",
    ),
    (
        "offline-run-quantile-inf",
        ["offline", "run", "--policy", "sorted_f_quantile", "--quantile", "inf"],
        r"quantile must be a finite number",
    ),
    (
        "offline-run-sample-fraction-nan",
        ["offline", "run", "--policy", "sorted_f_quantile", "--sample-fraction", "nan"],
        r"sample_fraction must be a finite number",
    ),
    ("run-noise-inf", ["run", "--predictor", "noisy", "--noise", "inf"], r"noise_lo must be a finite number"),
    ("run-fp-rate-nan", ["run", "--predictor", "classifier", "--fp-rate", "nan"], r"fp_rate must be a finite number"),
    ("run-fn-rate-inf", ["run", "--predictor", "classifier", "--fn-rate", "inf"], r"fn_rate must be a finite number"),
    (
        "check-bucket-waste-inf",
        ["check", "theorems", "--bucket-waste", "inf"],
        r"--bucket-waste must be a number in \[1, 1e6\]",
    ),
    ("check-bucket-waste-nan", ["check", "theorems", "--bucket-waste", "nan"], r"--bucket-waste"),
    ("sweep-bucket-waste-inf", ["sweep", "--axis", "policy=fcfs", "--bucket-waste", "inf"], r"--bucket-waste"),
    (
        "sweep-memory-inf",
        ["sweep", "--axis", "policy=fcfs", "--memory-mb", "inf"],
        r"--memory-mb must be a finite number",
    ),
    ("tune-lam-inf", ["tune", "e3", "--lam", "inf"], r"--lam must be a finite number"),
    (
        "sweep-set-const-inf",
        ["sweep", "--axis", "policy=fcfs", "--set", "step_const_s=inf"],
        r"step_const_s must be a finite number",
    ),
    ("sweep-axis-const-nan", ["sweep", "--axis", "step_const_s=nan"], r"step_const_s must be a finite number"),
    (
        "sweep-set-decay-nan",
        ["sweep", "--axis", "policy=fcfs", "--set", "lookahead_decay=nan"],
        r"lookahead_decay must be a finite number",
    ),
    # --- list options: no empty entries; a policy, load or rule once
    (
        "run-policies-empty-entry",
        ["run", "--policies", "fcfs,,bfio"],
        r"--policies must be a comma-separated list without empty entries",
    ),
    ("run-policies-trailing-comma", ["run", "--policies", "fcfs,"], r"--policies.*empty"),
    ("run-policies-blank-entry", ["run", "--policies", "fcfs, ,bfio"], r"--policies.*empty"),
    ("run-policies-repeated", ["run", "--policies", "fcfs,fcfs"], r"--policies must not repeat an entry, got 'fcfs'"),
    (
        "run-policies-same-run",
        ["run", "--policies", "bfio,bfio:0"],
        r"--policies must not repeat a run, got bfio\(H=0\)",
    ),
    ("run-policies-entry-unknown", ["run", "--policies", "fcfs,nope"], r"--policies entry must be one of"),
    ("dp-run-policies-repeated", ["dp", "run", "--policies", "jsq_tokens,jsq_tokens"], r"--policies must not repeat"),
    (
        "kv-run-rates-empty-entry",
        ["kv", "run", "--rates", "1000,,1000"],
        r"--rates must be a comma-separated list without empty entries",
    ),
    ("kv-run-prefill-trailing-comma", ["kv", "run", "--prefill", "10,10,"], r"--prefill.*empty"),
    ("kv-run-decode-empty-entry", ["kv", "run", "--decode", ",20"], r"--decode.*empty"),
    ("kv-run-thresholds-empty-entry", ["kv", "run", "--thresholds", "1,,2"], r"--thresholds.*empty"),
    ("kv-exp-loads-repeated", ["kv", "experiment", "e1", "--loads", "0.5,0.5"], r"--loads must not repeat"),
    ("kv-exp-loads-trailing-comma", ["kv", "experiment", "e1", "--loads", "0.5,"], r"--loads.*empty"),
    ("kv-exp-policies-repeated", ["kv", "experiment", "e1", "--policies", "wait,wait"], r"--policies must not repeat"),
    ("kv-exp-policies-empty-entry", ["kv", "experiment", "e1", "--policies", "wait,,fcfs"], r"--policies.*empty"),
    (
        "kv-exp-batch-limits-repeated",
        ["kv", "experiment", "e1", "--batch-limits", "512,512"],
        r"--batch-limits must not repeat",
    ),
    ("kv-exp-batch-limits-none-twice", ["kv", "experiment", "e1", "--batch-limits", "none,none"], r"--batch-limits"),
    (
        "kv-exp-capacity-repeated",
        ["kv", "experiment", "e1", "--capacity", "mstar,mstar"],
        r"--capacity must not repeat",
    ),
    ("kv-exp-capacity-trailing-comma", ["kv", "experiment", "e1", "--capacity", "mstar,"], r"--capacity.*empty"),
    # --- traces: columns by known names, or named by --trace-columns
    (
        "run-trace-unknown-output-column",
        ["run", "--trace", "{unknown_output}"],
        r"column 'foo' is not a known output column name",
    ),
    (
        "run-trace-unknown-prompt-column",
        ["run", "--trace", "{unknown_prompt}"],
        r"column 'foo' is not a known prompt column name",
    ),
    ("run-trace-unknown-columns", ["run", "--trace", "{unknown_both}"], r"column 'a' is not a known prompt"),
    (
        "run-trace-columns-one-name",
        ["run", "--trace", "{good}", "--trace-columns", "prompt"],
        r"--trace-columns must name two columns",
    ),
    (
        "run-trace-columns-repeated",
        ["run", "--trace", "{good}", "--trace-columns", "prompt,prompt"],
        r"--trace-columns must not repeat",
    ),
    (
        "run-trace-columns-not-in-header",
        ["run", "--trace", "{good}", "--trace-columns", "a,b"],
        r"columns=\('a', 'b'\) must name columns of its header",
    ),
    (
        "sweep-trace-unknown-output-column",
        ["sweep", "--axis", "policy=fcfs", "--trace", "{unknown_output}"],
        r"'foo' is not a known output column",
    ),
    (
        "reproduce-table1-unknown-column",
        ["reproduce", "table1", "--trace", "{unknown_output}"],
        r"'foo' is not a known output column",
    ),
    (
        "offline-run-azure-unknown-column",
        ["offline", "run", "--workload", "azure", "--trace", "{unknown_output}"],
        r"'foo'",
    ),
]


@pytest.mark.parametrize("argv, needle", [pytest.param(a, n, id=i) for i, a, n in CLI_CASES])
def test_cli_rejects_with_one_line(argv, needle, paths, no_compile, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default output paths land here, if anything is written
    argv = [a.format(**paths) for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    except ReachedCompilation as e:
        pytest.fail(f"{argv} was accepted ({e})")
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert "Traceback" not in cap.out + cap.err
    assert code == 2, (code, cap.err)
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{cap.err}"
    assert lines[0].startswith("jaxsched: error:"), lines[0]
    assert re.search(needle, lines[0]), (needle, lines[0])


def test_cli_corpus_is_large_enough():
    assert len(CLI_CASES) >= 300 and len({i for i, _, _ in CLI_CASES}) == len(CLI_CASES)


# ------------------------------------------------------------------------------ Python API


def _off_cfg(n=4, **kw):
    from jaxsched.offline import OfflineConfig
    from jaxsched.workload import Batch, Independent

    return OfflineConfig(Batch(Independent(), n), **kw)


def _off_trace(**kw):
    from jaxsched.offline import OfflineConfig
    from jaxsched.workload import Trace

    return OfflineConfig(Trace(np.array([1, 2, 3]), np.array([4, 5, 6]), order="sequential"), **kw)


def _off_named(name):
    from jaxsched.offline import OfflineConfig

    return OfflineConfig(name)


def _off_params(**kw):
    from jaxsched.offline import instance_params

    return instance_params(**{"capacity_tokens": 10, **kw})


def _off_execute(s=((1, 2),), o=((1, 1),), order=((0, 1),)):
    from jaxsched.offline import execute, instance_params

    return execute(instance_params(10), np.array(s), np.array(o), np.array(order))


def _off_evaluate(name, **kw):
    from jaxsched.offline.compare import evaluate

    return evaluate([name], np.array([[1, 2]]), np.array([[1, 1]]), 10, [0], **kw)


def _family(fn, *args):
    from jaxsched.offline import families

    return getattr(families, fn)(*args)


def _lp(fn, *args, **kw):
    pytest.importorskip("scipy")
    from jaxsched.offline import lp

    return getattr(lp, fn)(*(np.asarray(a) if isinstance(a, list) else a for a in args), **kw)


def _iv_execute(s=(1, 1), o=(1, 2), low=(1, 1), high=(2, 3), **kw):
    from jaxsched.interval import execute
    from jaxsched.offline import instance_params

    return execute(instance_params(10), np.array(s), np.array(o), np.array(low), np.array(high), **kw)


def _iv_cfg(**kw):
    from jaxsched.interval import IntervalConfig
    from jaxsched.workload import Batch, Independent

    return IntervalConfig(Batch(Independent(), 4), **kw)


def _iv_params(n, **kw):
    from jaxsched.interval import IntervalConfig, make_params

    return make_params(IntervalConfig("lmsys", num_requests=n), **kw)


def _iv_buckets(edges):
    from jaxsched.interval import Buckets

    return Buckets(edges)


def _iv_law(name, *args):
    from jaxsched import workload

    return getattr(workload, name)(*args)


def _iv_theory(fn, *args):
    from jaxsched.interval import theory

    return getattr(theory, fn)(*args)


def _dp_cfg(**kw):
    from jaxsched.dp import DPConfig

    return DPConfig(**{"num_workers": 2, "slots_per_worker": 2, "pool_size": 2, "num_steps": 10, **kw})


def _dp_params(**kw):
    from jaxsched import dp

    return dp.make_params(_dp_cfg(), **kw)


def _dp_params_of(cfg_kw, **kw):
    """dp.make_params of a small DPConfig with the fields `cfg_kw`."""
    from jaxsched import dp

    return dp.make_params(_dp_cfg(**cfg_kw), **kw)


def _dp_grid(policies, cfg_kw=None, **kw):
    """The params of one small DPConfig per policy, built as the points of one grid (the
    make_params keywords and config fields `cfg_kw` shared by all)."""
    from jaxsched.errors import as_one_grid

    with as_one_grid():
        return [_dp_params_of({**(cfg_kw or {}), "policy": p}, **kw) for p in policies]


def _off_params_of(cfg_kw, **kw):
    """offline.make_params of a small OfflineConfig with the fields `cfg_kw`."""
    from jaxsched import offline

    return offline.make_params(_off_cfg(**cfg_kw), **kw)


def _kv_params_of(cfg_kw, **kw):
    """kv.make_params of a small KVConfig with the fields `cfg_kw`."""
    from jaxsched import kv

    return kv.make_params(_kv_cfg(**cfg_kw), **kw)


def _kv_cfg(**kw):
    from jaxsched.kv import KVConfig

    return KVConfig(**{"num_requests": 10, "table_size": 16, **kw})


def _kv_params(**kw):
    from jaxsched import kv

    return kv.make_params(_kv_cfg(), **kw)


def _simulate(**kw):
    from jaxsched import simulate

    params = kw.pop("params", None)
    return simulate(_dp_cfg(), _dp_params() if params is None else params, **{"seeds": [0], **kw})


def _simulate_cfg(config):
    """simulate with the engine's default params (`Engine.default_params`)."""
    from jaxsched import simulate

    return simulate(config, seeds=[0])


def _workload(cls: str, **kw):
    import jaxsched.workload as w

    return getattr(w, cls)(**kw)


def _read(ctx, name: str, **kw):
    from jaxsched.workload import read_trace

    return read_trace(ctx[name], **kw)


def _budget(value):
    from jaxsched import dp
    from jaxsched.run import seeds_for_budget

    return seeds_for_budget(dp.ENGINE, _dp_cfg(), value)


def _bd_params(cfg_kw=None, **kw):
    from jaxsched.budget import BudgetConfig, make_params

    return make_params(BudgetConfig(horizon_s=10.0, **(cfg_kw or {})), **kw)


def _bd_config(**kw):
    from jaxsched.budget import BudgetConfig

    return BudgetConfig(**{"horizon_s": 10.0, **kw})


def _off_named_n(name, n):
    from jaxsched.offline import OfflineConfig

    return OfflineConfig(name, num_requests=n)


def _iv_relative(x):
    from jaxsched.interval import Relative

    return Relative(x)


def _bd_cfg():
    from jaxsched.budget import BudgetConfig

    return BudgetConfig(horizon_s=10.0)


def _law():
    from jaxsched.workload import Constant, Independent

    return Independent(Constant(4), Constant(2))


_LAW = _law()


def _nw_cfg(**kw):
    from jaxsched.network import NetworkConfig

    return NetworkConfig(**{"horizon_s": 10.0, "workload": (_LAW,), **kw})


def _nw_params(**kw):
    from jaxsched.network import make_params

    return make_params(_nw_cfg(max_steps=10**7), **kw)


def _nw_params_of(config):
    from jaxsched.network import make_params

    return make_params(config)


def _sweep(ctx, **kw):
    from jaxsched import run_sweep

    return run_sweep(
        _dp_cfg(),
        kw.pop("axes", {"policy": ["fcfs"]}),
        kw.pop("seeds", [0]),
        ctx["tmp"] / "sweep.csv",
        progress=False,
        **kw,
    )


def _theorem_point(**kw):
    from jaxsched.dp.theorems import run_point, theorem_grid

    return run_point(theorem_grid(quick=True)[0], "fcfs", "window", 8, [0, 1], **kw)


def _fluid_types(**kw):
    from jaxsched.kv.fluid import FluidTypes

    return FluidTypes(
        **{"prefill": [10, 10], "decode": [10, 20], "rates": [1, 1], "d0": 0.01, "d1": 1e-6, "capacity": 1e5, **kw}
    )


def _experiment(name="e1", **kw):
    from jaxsched.kv.experiments import run_experiment

    return run_experiment(name, quick=True, **kw)


def _scaling(**kw):
    from jaxsched.kv.experiments import run_scaling

    return run_scaling(quick=True, **kw)


def _tune(ctx, name="e3", **kw):
    from jaxsched.kv.tuning import tune_experiment

    return tune_experiment(name, **kw)


def _tune_setup(**kw):
    from jaxsched.kv.tuning import tune_setup

    return tune_setup("e3", **kw)


def _theorems(ctx, **kw):
    from jaxsched.dp.theorems import check_theorems

    out = kw.pop("out_dir", ctx["tmp"] / "theorems")
    return check_theorems(out, quick=True, progress=False, plots=False, **kw)


API_CASES = [
    # (id, fn(ctx), regex the message must match); ctx: the `paths` plus "tmp" (a Path)
    # --- DPConfig: bools, floats and strings where ints are expected; unknown names
    ("dp-workers-bool", lambda c: _dp_cfg(num_workers=True), r"num_workers"),
    ("dp-workers-float", lambda c: _dp_cfg(num_workers=2.0), r"num_workers"),
    ("dp-slots-string", lambda c: _dp_cfg(slots_per_worker="8"), r"slots_per_worker"),
    ("dp-pool-numpy-zero", lambda c: _dp_cfg(pool_size=np.int64(0)), r"pool_size"),
    ("dp-lookahead-negative", lambda c: _dp_cfg(lookahead_steps=-1), r"lookahead_steps"),
    ("dp-steps-nan", lambda c: _dp_cfg(num_steps=NAN), r"num_steps"),
    ("dp-burn-in-too-long", lambda c: _dp_cfg(burn_in_steps=10), r"burn_in_steps"),
    ("dp-policy-unknown", lambda c: _dp_cfg(policy="nope"), r"policy"),
    ("dp-policy-list", lambda c: _dp_cfg(policy=["fcfs"]), r"policy"),
    ("dp-kernel-unknown", lambda c: _dp_cfg(bfio_kernel="nope"), r"bfio_kernel"),
    ("dp-decay-string", lambda c: _dp_cfg(lookahead_decay="0.5"), r"lookahead_decay"),
    ("dp-decay-inf", lambda c: _dp_cfg(lookahead_decay=INF), r"lookahead_decay"),
    ("dp-drift-one-value", lambda c: _dp_cfg(drift=(1,)), r"drift"),
    ("dp-workload-class", lambda c: _dp_cfg(workload=_workload("BurstGPTLike").__class__), r"workload"),
    ("dp-workload-name", lambda c: _dp_cfg(workload="burstgpt_like"), r"workload"),
    # --- dp.make_params
    ("dp-params-const-zero", lambda c: _dp_params(step_const_s=0), r"step_const_s"),
    ("dp-params-per-token-nan", lambda c: _dp_params(per_token_s=NAN), r"per_token_s"),
    ("dp-params-per-token-string", lambda c: _dp_params(per_token_s="1"), r"per_token_s"),
    ("dp-params-fp-rate-bool", lambda c: _dp_params(fp_rate=True), r"fp_rate"),
    ("dp-params-noise-inf", lambda c: _dp_params(noise_hi=INF), r"noise_hi"),
    ("dp-params-kv-config", lambda c: __import__("jaxsched").dp.make_params(_kv_cfg()), r"config"),
    # --- KVConfig and kv.make_params
    ("kv-prefill-empty", lambda c: _kv_cfg(prefill_tokens=()), r"prefill_tokens"),
    ("kv-prefill-bool", lambda c: _kv_cfg(prefill_tokens=(True, 1)), r"prefill_tokens\[0\]"),
    ("kv-decode-wrong-length", lambda c: _kv_cfg(decode_tokens=(1, 2, 3)), r"decode_tokens"),
    ("kv-policy-list", lambda c: _kv_cfg(policy=["wait"]), r"policy"),
    ("kv-horizon-string", lambda c: _kv_cfg(horizon_s="1"), r"horizon_s"),
    ("kv-num-requests-bool", lambda c: _kv_cfg(num_requests=True), r"num_requests"),
    ("kv-prefill-price-int", lambda c: _kv_cfg(prefill_price=1), r"prefill_price"),
    ("kv-rates-string", lambda c: _kv_params(rates="ab"), r"rates"),
    ("kv-rates-ragged", lambda c: _kv_params(rates=[[1, 2], [3]]), r"rates"),
    ("kv-rates-nan", lambda c: _kv_params(rates=(NAN, 1)), r"rates"),
    ("kv-capacity-float", lambda c: _kv_params(capacity_tokens=1.5), r"capacity_tokens"),
    ("kv-thresholds-wrong-length", lambda c: _kv_params(thresholds=(1, 2, 3)), r"thresholds"),
    ("kv-check-stability-string", lambda c: _kv_params(check_stability="x"), r"check_stability"),
    ("kv-params-dp-config", lambda c: __import__("jaxsched").kv.make_params(_dp_cfg()), r"config"),
    # --- workloads
    ("burstgpt-median-zero", lambda c: _workload("BurstGPTLike", median_prompt=0), r"median_prompt"),
    ("burstgpt-mode-prob-above-1", lambda c: _workload("BurstGPTLike", mode_prob=1.5), r"mode_prob"),
    ("burstgpt-max-output-string", lambda c: _workload("BurstGPTLike", max_output="x"), r"max_output"),
    ("burstgpt-mode-above-max", lambda c: _workload("BurstGPTLike", mode_output=5000), r"mode_output"),
    ("burstgpt-sigma-nan", lambda c: _workload("BurstGPTLike", sigma_output=NAN), r"sigma_output"),
    ("bivariate-mean-huge", lambda c: _workload("BivariateNormal", mean_prompt=1e30), r"mean_prompt"),
    ("bivariate-corr-nan", lambda c: _workload("BivariateNormal", corr=NAN), r"corr"),
    ("constant-bool", lambda c: _workload("Constant", value=True), r"Constant.value"),
    ("uniform-high-below-low", lambda c: _workload("UniformInt", low=5, high=3), r"UniformInt.high"),
    ("geometric-p-string", lambda c: _workload("Geometric", p="0.5"), r"Geometric.p"),
    ("independent-number", lambda c: _workload("Independent", prompt=5), r"Independent.prompt"),
    ("finite-base-none", lambda c: _workload("Finite", base=None, num_requests=3), r"Finite.base"),
    ("trace-ragged", lambda c: _workload("Trace", prompt=[[1], [1, 2]], output=[1, 2]), r"prompt and output"),
    ("trace-zero-length", lambda c: _workload("Trace", prompt=[0], output=[1]), r"prompt"),
    ("trace-name-none", lambda c: _workload("Trace", prompt=[1], output=[1], name=None), r"Trace.name"),
    # --- read_trace
    ("read-binary", lambda c: _read(c, "binary"), r"binary\.csv.*UTF-8.*binary data"),
    ("read-latin1", lambda c: _read(c, "latin1"), r"latin1\.csv.*not UTF-8.*line 4"),
    ("read-directory", lambda c: _read(c, "dir"), r"directory"),
    ("read-empty", lambda c: _read(c, "empty"), r"is empty"),
    ("read-header-only", lambda c: _read(c, "header_only"), r"no data rows"),
    ("read-negative", lambda c: _read(c, "negative"), r"line 2 prompt length"),
    ("read-zero", lambda c: _read(c, "zero"), r"line 2 output length"),
    ("read-path-none", lambda c: __import__("jaxsched").read_trace(None), r"trace"),
    ("read-order-unknown", lambda c: _read(c, "good", order="random"), r"order"),
    # --- simulate
    ("simulate-seeds-empty", lambda c: _simulate(seeds=[]), r"seeds"),
    ("simulate-seeds-negative", lambda c: _simulate(seeds=[-1]), r"seeds"),
    ("simulate-seeds-beyond-uint32", lambda c: _simulate(seeds=[2**32]), r"seeds"),
    ("simulate-seeds-beyond-int64", lambda c: _simulate(seeds=[2**70]), r"seeds"),
    ("simulate-seeds-float", lambda c: _simulate(seeds=[1.5]), r"seeds"),
    ("simulate-seed-chunk-zero", lambda c: _simulate(seed_chunk=0), r"seed_chunk"),
    ("simulate-seed-chunk-bool", lambda c: _simulate(seed_chunk=True), r"seed_chunk"),
    ("simulate-block-steps-zero", lambda c: _simulate(block_steps=0), r"block_steps"),
    ("simulate-params-of-kv", lambda c: _simulate(params=_kv_params()), r"params"),
    ("simulate-params-string", lambda c: _simulate(params="fast"), r"params"),
    ("simulate-engine-name", lambda c: _simulate(engine="dp"), r"engine"),
    ("simulate-progress-string", lambda c: _simulate(progress="yes"), r"progress"),
    ("simulate-record-string", lambda c: _simulate(record="yes"), r"record"),
    ("simulate-config-none", lambda c: __import__("jaxsched").simulate(None), r"config"),
    ("get-engine-list", lambda c: __import__("jaxsched").get_engine([]), r"engine"),
    (
        "multihost-seeds-empty",
        lambda c: __import__("jaxsched.multihost").multihost.simulate_multihost(_dp_cfg(), _dp_params(), []),
        r"seeds",
    ),
    # --- memory budgets
    ("budget-zero", lambda c: _budget(0), r"memory_budget_mb"),
    ("budget-negative", lambda c: _budget(-5), r"memory_budget_mb"),
    ("budget-nan", lambda c: _budget(NAN), r"memory_budget_mb"),
    ("budget-inf", lambda c: _budget(INF), r"memory_budget_mb"),
    ("budget-bool", lambda c: _budget(True), r"memory_budget_mb"),
    ("theorem-point-budget-zero", lambda c: _theorem_point(memory_budget_mb=0), r"memory_budget_mb"),
    ("sweep-budget-zero", lambda c: _sweep(c, memory_budget_mb=0), r"memory_budget_mb"),
    ("sweep-budget-nan", lambda c: _sweep(c, memory_budget_mb=NAN), r"memory_budget_mb"),
    ("sweep-budget-inf", lambda c: _sweep(c, memory_budget_mb=INF), r"memory_budget_mb"),
    ("sweep-budget-string", lambda c: _sweep(c, memory_budget_mb="1024"), r"memory_budget_mb"),
    ("sweep-budget-none", lambda c: _sweep(c, memory_budget_mb=None), r"memory_budget_mb"),
    # --- run_sweep
    ("sweep-seeds-empty", lambda c: _sweep(c, seeds=[]), r"seeds"),
    ("sweep-seeds-float", lambda c: _sweep(c, seeds=[1.5]), r"seeds"),
    ("sweep-axis-unknown", lambda c: _sweep(c, axes={"nope": [1]}), r"nope"),
    ("sweep-axis-duplicate", lambda c: _sweep(c, axes={"num_workers": [2, 2]}), r"num_workers"),
    ("sweep-axis-not-a-list", lambda c: _sweep(c, axes={"num_workers": 5}), r"num_workers"),
    ("sweep-params-unknown", lambda c: _sweep(c, params={"nope": 1}), r"nope"),
    ("sweep-metric-unknown", lambda c: _sweep(c, metrics=["nope"]), r"nope"),
    # --- fluid model
    ("fluid-prefill-zero", lambda c: _fluid_types(prefill=[0, 1]), r"prefill\[0\]"),
    ("fluid-decode-float", lambda c: _fluid_types(decode=[1.5, 2]), r"decode\[0\]"),
    ("fluid-rates-wrong-length", lambda c: _fluid_types(rates=[1]), r"rates"),
    ("fluid-capacity-inf", lambda c: _fluid_types(capacity=INF), r"capacity"),
    ("fluid-theta-p-one", lambda c: __import__("jaxsched.kv.fluid").kv.fluid.theta_root(1, 1, 1), r"\bp\b"),
    # --- kv experiments
    ("exp-unknown", lambda c: _experiment("e9"), r"experiment"),
    ("exp-seeds-zero", lambda c: _experiment(seeds=0), r"seeds"),
    ("exp-policies-string", lambda c: _experiment(policies="wait"), r"policies"),
    ("exp-loads-empty", lambda c: _experiment(loads=[]), r"loads"),
    ("exp-loads-scalar", lambda c: _experiment(loads=0.5), r"loads"),
    ("exp-load-nan", lambda c: _experiment(loads=[NAN]), r"load"),
    ("exp-capacities-string", lambda c: _experiment(capacities="mstar"), r"capacities"),
    ("exp-batch-limits-empty", lambda c: _experiment(batch_limits=[]), r"batch_limits"),
    ("exp-steady-string", lambda c: _experiment(steady="yes"), r"steady"),
    ("exp-hardware-none", lambda c: _experiment(hw=None), r"hw"),
    ("scaling-seeds-one", lambda c: _scaling(seeds=1), r"seeds"),
    ("scaling-one-horizon", lambda c: _scaling(horizons=[100.0]), r"horizons"),
    # --- tuning
    ("tune-unknown", lambda c: _tune(c, "e9"), r"name"),
    ("tune-steps-zero", lambda c: _tune(c, steps=0), r"steps"),
    ("tune-lam-nan", lambda c: _tune(c, lam=NAN), r"lam"),
    ("tune-one-seed", lambda c: _tune(c, seeds=[1]), r"seeds"),
    ("tune-seed-negative", lambda c: _tune(c, seeds=[-1, 0]), r"seeds"),
    ("tune-key-float", lambda c: _tune(c, key=1.5), r"key"),
    ("tune-out-dir-is-a-file", lambda c: _tune(c, out_dir=c["good"]), r"out_dir"),
    ("tune-burn-in-half", lambda c: _tune_setup(burn_in_fraction=0.6), r"burn_in_fraction"),
    ("tune-capacity-nan", lambda c: _tune_setup(capacity_factor=NAN), r"capacity_factor"),
    # --- offline engine (paper 002)
    ("offline-n-too-large", lambda c: _off_cfg(n=2_000_000), r"num_requests"),
    # num_requests resizes a Batch (how a sweep varies n); a fixed instance cannot resize.
    ("offline-num-requests-zero", lambda c: _off_cfg(num_requests=0), r"num_requests"),
    ("offline-num-requests-with-trace", lambda c: _off_trace(num_requests=5), r"num_requests"),
    ("offline-workload-name-unknown", lambda c: _off_named("zipf"), r"workload"),
    ("offline-epsilon-nan", lambda c: _off_cfg(epsilon=NAN), r"epsilon"),
    ("offline-dp-width-float", lambda c: _off_cfg(dp_width=100.5), r"dp_width"),
    ("offline-quantile-negative", lambda c: _off_cfg(quantile=-0.1), r"quantile"),
    ("offline-capacity-zero", lambda c: _off_params(capacity_tokens=0), r"capacity_tokens"),
    ("offline-per-kv-negative", lambda c: _off_params(per_kv_token_s=-1.0), r"per_kv_token_s"),
    ("offline-instance-too-big", lambda c: _off_execute(s=[[5, 9]], o=[[5, 2]]), r"s \+ o"),
    ("offline-instance-zero-length", lambda c: _off_execute(s=[[0, 1]]), r"lengths"),
    ("offline-order-not-permutation", lambda c: _off_execute(order=[[0, 0]]), r"order"),
    ("offline-algorithm-unknown", lambda c: _off_evaluate("sorted_f_magic"), r"algorithm"),
    ("offline-step-model-unknown", lambda c: _off_evaluate("mcsf", models=("vidur",)), r"step model"),
    ("offline-family-m-not-power", lambda c: _family("theorem1", 80), r"M"),
    ("offline-example2-unequal", lambda c: _family("example2", 2, 3, 1, 2, 2, 3), r"n2"),
    ("offline-lower-bound-too-big", lambda c: _family("tel_lower_bound", [9], [5], 10), r"s \+ o"),
    ("offline-lp-time-step-zero", lambda c: _lp("relaxed_lp", [1, 2], [1, 1], 10, time_step=0), r"time_step"),
    ("offline-ip-too-big", lambda c: _lp("opt_ip", [9, 1], [5, 1], 10), r"s \+ o"),
    # --- interval engine (paper 003)
    ("interval-l-above-u", lambda c: _iv_execute(low=[3, 1]), r"low \(l\) must be <= high"),
    ("interval-o-outside", lambda c: _iv_execute(o=[1, 4]), r"o must lie in its promised"),
    ("interval-o-zero", lambda c: _iv_execute(o=[0, 2]), r"o must be >= 1"),
    ("interval-s-negative", lambda c: _iv_execute(s=[-1, 1]), r"s must be >= 0"),
    ("interval-s-plus-u-above-m", lambda c: _iv_execute(high=[2, 12]), r"s \+ u"),
    ("interval-float-lengths", lambda c: _iv_execute(o=[1.0, 2.0]), r"o must hold integers"),
    ("interval-shape-mismatch", lambda c: _iv_execute(high=[2, 3, 3]), r"high \(u\) must have"),
    (
        "interval-seeds-mismatch",
        lambda c: _iv_execute(s=[[1, 1]] * 3, o=[[1, 2]] * 3, low=[[1, 1]] * 3, high=[[2, 3]] * 3, seeds=[0, 1]),
        r"seeds",
    ),
    ("interval-policy-unknown", lambda c: _iv_execute(policy="amid"), r"policy"),
    ("interval-eviction-key-unknown", lambda c: _iv_execute(eviction_key="x"), r"eviction_key"),
    ("interval-m-too-big-for-n", lambda c: _iv_params(n=2000, capacity_tokens=2_000_000), r"capacity_tokens"),
    ("interval-intervals-not-a-spec", lambda c: _iv_cfg(intervals=(1, 1000)), r"intervals"),
    ("interval-buckets-unsorted", lambda c: _iv_buckets((1, 50, 40)), r"intervals.edges"),
    ("interval-num-requests-zero", lambda c: _iv_cfg(num_requests=0), r"num_requests"),
    ("interval-two-point-high-below-low", lambda c: _iv_law("TwoPoint", 5, 3, 0.5), r"TwoPoint.high"),
    ("interval-geometric-p-zero", lambda c: _iv_law("TruncGeometric", 0.0, 100), r"TruncGeometric.p"),
    ("interval-lg-high-huge", lambda c: _iv_law("LinearGeometric", 0.5, 10**6), r"LinearGeometric.high"),
    ("interval-theory-alpha-zero", lambda c: _iv_theory("thm51_cr", 0.0, 1.0), r"alpha"),
    # --- budget engine: arrival mode and the (A.2) memory overhead
    ("budget-arrival-mode-unknown", lambda c: _bd_params(dict(arrival_mode="replay")), r"arrival_mode must be one of"),
    ("budget-rate-scale-poisson", lambda c: _bd_params(rate_scale=2.0), r"rate_scale must be None"),
    (
        "budget-memory-overhead-unknown",
        lambda c: _bd_params(dict(memory_overhead="evict")),
        r"memory_overhead must be one of",
    ),
    (
        "budget-kv-limit-missing",
        lambda c: _bd_params(dict(memory_overhead="swap")),
        r"kv_limit_tokens must be an integer >= 0",
    ),
    (
        "budget-kv-limit-negative",
        lambda c: _bd_params(dict(memory_overhead="swap"), kv_limit_tokens=-1),
        r"kv_limit_tokens",
    ),
    ("budget-kv-limit-when-off", lambda c: _bd_params(kv_limit_tokens=100), r"kv_limit_tokens must be None unless"),
    (
        "budget-swap-coef-in-recompute",
        lambda c: _bd_params(dict(memory_overhead="recompute"), kv_limit_tokens=10, swap_a1_s_per_token=1e-3),
        r"swap_a1_s_per_token must be 0 unless",
    ),
    (
        "budget-recompute-b1-nan",
        lambda c: _bd_params(dict(memory_overhead="recompute"), kv_limit_tokens=10, recompute_b1_s_per_token2=NAN),
        r"recompute_b1_s_per_token2",
    ),
    # --- network engine
    ("network-topology-unknown", lambda c: _nw_cfg(topology="mesh"), r"topology must be one of"),
    ("network-routes-in-parallel", lambda c: _nw_cfg(routes=((0,),)), r"routes must be None"),
    (
        "network-route-agent-out-of-range",
        lambda c: _nw_cfg(topology="routes", workload=((_LAW, _LAW),), routes=((0, 2),)),
        r"routes\[0\]",
    ),
    (
        "network-agent-unvisited",
        lambda c: _nw_cfg(topology="routes", agents=3, workload=((_LAW, _LAW),), routes=((0, 1),)),
        r"agents must be visited",
    ),
    (
        "network-fork-join-agents",
        lambda c: _nw_cfg(topology="fork_join", agents=3, workload=((_LAW,) * 4,)),
        r"agents \(K\)",
    ),
    (
        "network-fork-join-stages",
        lambda c: _nw_cfg(topology="fork_join", agents=4, workload=((_LAW,) * 3,)),
        r"workload\[0\]",
    ),
    (
        "network-type-orders-not-permutation",
        lambda c: _nw_cfg(policy="priority", type_orders=((0,), (1,))),
        r"type_orders\[1\]",
    ),
    (
        "network-per-agent-length",
        lambda c: _nw_params(budget=[512, 512, 512]),
        r"budget must be a number or a sequence of K = 2",
    ),
    ("network-agent-budget-zero", lambda c: _nw_params(budget=[512, 0]), r"agent 1: budget"),
    ("network-rates-negative", lambda c: _nw_params(rates=[-1.0]), r"rates"),
    ("network-params-wrong-config", lambda c: _nw_params_of(_bd_cfg()), r"NetworkConfig"),
    # --- theorems
    ("theorems-seeds-one", lambda c: _theorems(c, seeds=1), r"seeds"),
    ("theorems-measured-zero", lambda c: _theorems(c, measured=0), r"measured"),
    ("theorems-kernel-unknown", lambda c: _theorems(c, kernel="nope"), r"kernel"),
    ("theorems-out-is-a-file", lambda c: _theorems(c, out_dir=c["good"]), r"out_dir"),
    # ============================================================ issue 33: ignored options
    # --- interval: eviction_key is A_min's, amax_order A_max's (the policies' registry options)
    (
        "interval-eviction-key-hsf",
        lambda c: _iv_cfg(policy="hsf", eviction_key="live"),
        r"eviction_key is read only by policy amin; policy hsf ignores it",
    ),
    ("interval-eviction-key-amax", lambda c: _iv_cfg(policy="amax", eviction_key="live"), r"eviction_key.*amax"),
    ("interval-eviction-key-al", lambda c: _iv_cfg(policy="al", eviction_key="live"), r"eviction_key.*al"),
    (
        "interval-amax-order-amin",
        lambda c: _iv_cfg(amax_order="random"),
        r"amax_order is read only by policy amax; policy amin ignores it",
    ),
    ("interval-amax-order-al", lambda c: _iv_cfg(policy="al", amax_order="random"), r"amax_order"),
    ("interval-amax-order-arandom", lambda c: _iv_cfg(policy="arandom", amax_order="random"), r"amax_order"),
    ("interval-amax-order-hsf", lambda c: _iv_cfg(policy="hsf", amax_order="random"), r"amax_order.*hsf"),
    # --- budget: phase_first and inner_order are wc's, type_order priority's
    (
        "budget-inner-order-sarathi",
        lambda c: _bd_config(inner_order="srpt"),
        r"inner_order is read only by policy wc; policy sarathi ignores it",
    ),
    ("budget-phase-first-orca", lambda c: _bd_config(policy="orca", phase_first="prefill"), r"phase_first.*orca"),
    (
        "budget-inner-order-priority",
        lambda c: _bd_config(policy="priority", inner_order="srpt"),
        r"inner_order.*priority",
    ),
    (
        "budget-type-order-vllm",
        lambda c: _bd_config(policy="vllm", workload=(_LAW, _LAW), type_order=(1, 0)),
        r"type_order is read only by policy priority; policy vllm ignores it",
    ),
    (
        "budget-type-order-wc",
        lambda c: _bd_config(policy="wc", workload=(_LAW, _LAW), type_order=(1, 0)),
        r"type_order.*wc",
    ),
    # --- network: router reads the parallel topology; the agents' policy options as budget's
    (
        "network-router-routes",
        lambda c: _nw_cfg(topology="routes", workload=((_LAW, _LAW),), routes=((0, 1),), router="random"),
        r"router is read only by topology parallel; topology routes ignores it",
    ),
    (
        "network-router-fork-join",
        lambda c: _nw_cfg(topology="fork_join", agents=4, workload=((_LAW,) * 4,), router="random"),
        r"router.*fork_join",
    ),
    (
        "network-phase-first-sarathi",
        lambda c: _nw_cfg(phase_first="prefill"),
        r"phase_first is read only by policy wc; policy sarathi ignores it",
    ),
    ("network-inner-order-ft", lambda c: _nw_cfg(policy="ft", inner_order="srpt"), r"inner_order.*ft"),
    (
        "network-type-orders-sarathi",
        lambda c: _nw_cfg(workload=(_LAW, _LAW), type_orders=((1, 0), (0, 1))),
        r"type_orders is read only by policy priority",
    ),
    # --- dp.make_params: BF-IO's options (the registry's) and the predictor's error rates
    (
        "dp-params-noise-fcfs",
        lambda c: _dp_params_of({"policy": "fcfs"}, noise_hi=0.3),
        r"^noise_hi is read only by policy bfio; policy fcfs ignores it$",
    ),
    (
        "dp-params-noise-oracle",
        lambda c: _dp_params_of({}, noise_lo=0.2),
        r"^noise_lo is read only by predictor noisy; predictor oracle ignores it$",
    ),
    (
        "dp-params-fp-rate-noisy",
        lambda c: _dp_params_of({"predictor": "noisy"}, fp_rate=0.1),
        r"^fp_rate is read only by predictor classifier; predictor noisy ignores it$",
    ),
    ("dp-params-fn-rate-jsq", lambda c: _dp_params_of({"policy": "jsq_tokens"}, fn_rate=0.1), r"^fn_rate.*jsq_tokens"),
    (
        "dp-params-predictor-fcfs",
        lambda c: _dp_params_of({"policy": "fcfs", "predictor": "noisy"}),
        r"^predictor is read only by policy bfio; policy fcfs ignores it$",
    ),
    (
        "dp-params-lookahead-jsq",
        lambda c: _dp_params_of({"policy": "jsq_count", "lookahead_steps": 2}),
        r"^lookahead_steps is read only by policy bfio; policy jsq_count ignores it$",
    ),
    (
        "dp-params-kernel-round-robin",
        lambda c: _dp_params_of({"policy": "round_robin", "bfio_kernel": "ms_ls"}),
        r"^bfio_kernel.*round_robin",
    ),
    (
        "dp-params-decay-power-of-two",
        lambda c: _dp_params_of({"policy": "power_of_two", "lookahead_decay": 0.5}),
        r"^lookahead_decay.*power_of_two",
    ),
    (
        "dp-params-lookahead-policy-set",
        lambda c: _dp_params_of({"policy": "fcfs", "policy_set": ("fcfs", "jsq_tokens"), "lookahead_steps": 1}),
        r"^lookahead_steps is read only by policy bfio; policies fcfs, jsq_tokens ignore it$",
    ),
    (
        "dp-simulate-default-params-predictor-fcfs",
        lambda c: _simulate_cfg(_dp_cfg(policy="fcfs_alg2", predictor="classifier")),
        r"^predictor.*fcfs_alg2",
    ),
    (
        "dp-grid-noise-no-bfio",
        lambda c: _dp_grid(["fcfs", "jsq_tokens"], noise_hi=0.3),
        r"^noise_hi is read only by policy bfio; policies fcfs, jsq_tokens ignore it$",
    ),
    (
        "dp-grid-fp-rate-noisy",
        lambda c: _dp_grid(["fcfs", "bfio"], {"predictor": "noisy"}, fp_rate=0.2),
        r"^fp_rate is read only by predictor classifier; predictor noisy ignores it$",
    ),
    # --- offline.make_params: Sorted-F's solver options (the registry's)
    (
        "offline-params-epsilon-fcfs",
        lambda c: _off_params_of({"policy": "fcfs", "epsilon": 0.2}),
        r"^epsilon is read only by policy sorted_f_scaled; policy fcfs ignores it$",
    ),
    ("offline-params-scale-b-mcsf", lambda c: _off_params_of({"scale_b": 50}), r"^scale_b.*policy mcsf ignores"),
    (
        "offline-params-dp-width-scaled",
        lambda c: _off_params_of({"policy": "sorted_f_scaled", "dp_width": 128}),
        r"^dp_width is read only by policy sorted_f_dp; policy sorted_f_scaled ignores it$",
    ),
    (
        "offline-params-quantile-dp",
        lambda c: _off_params_of({"policy": "sorted_f_dp", "quantile": 0.5}, capacity_tokens=100),
        r"^quantile is read only by policy sorted_f_quantile",
    ),
    (
        "offline-params-sample-fraction-swap",
        lambda c: _off_params_of({"policy": "sorted_f_swap", "sample_fraction": 0.2}),
        r"^sample_fraction.*sorted_f_swap",
    ),
    (
        "offline-simulate-default-params-epsilon",
        lambda c: _simulate_cfg(_off_cfg(policy="mcsf2", epsilon=0.5)),
        r"^epsilon.*mcsf2",
    ),
    # --- kv.make_params: the vllm and sarathi limits (the registry's)
    (
        "kv-params-chunk-size-wait",
        lambda c: _kv_params(chunk_size=64),
        r"^chunk_size is read only by policy sarathi; policy wait ignores it$",
    ),
    (
        "kv-params-max-tokens-sarathi",
        lambda c: _kv_params_of({"policy": "sarathi"}, max_tokens_in_batch=8192),
        r"^max_tokens_in_batch is read only by policy vllm; policy sarathi ignores it$",
    ),
    (
        "kv-params-block-size-fcfs",
        lambda c: _kv_params_of({"policy": "fcfs"}, block_size=32),
        r"^block_size is read only by policy vllm, sarathi; policy fcfs ignores it$",
    ),
    ("kv-params-watermark-nested", lambda c: _kv_params_of({"policy": "nested_wait"}, watermark=0.1), r"^watermark"),
    ("kv-params-batch-cap-wait", lambda c: _kv_params(batch_size_cap=8), r"^batch_size_cap.*policy wait"),
    # --- budget.make_params: prefill_cap is vllm's and ft's, K_p and K_d wc's; network's agents
    (
        "budget-params-prefill-cap-sarathi",
        lambda c: _bd_params(prefill_cap=600),
        r"^prefill_cap is read only by policy vllm, ft; policy sarathi ignores it$",
    ),
    ("budget-params-k-p-vllm", lambda c: _bd_params({"policy": "vllm"}, K_p=4), r"^K_p is read only by policy wc"),
    ("budget-params-k-d-priority", lambda c: _bd_params({"policy": "priority"}, K_d=2), r"^K_d.*priority"),
    ("budget-params-prefill-cap-wc", lambda c: _bd_params({"policy": "wc"}, prefill_cap=512), r"^prefill_cap.*wc"),
    (
        "network-params-prefill-cap-sarathi",
        lambda c: _nw_params(prefill_cap=64),
        r"^agent 0: prefill_cap is read only by policy vllm, ft; policy sarathi ignores it$",
    ),
    # ============================================================ issue 33: strict values
    # --- integer fields take integers only: 512.5, 2.9, True are errors, never cut
    ("budget-params-budget-fraction", lambda c: _bd_params(budget=512.5), r"budget must be an integer"),
    ("budget-params-max-requests-bool", lambda c: _bd_params(max_requests=True), r"max_requests"),
    ("budget-params-b0-float", lambda c: _bd_params(b0=64.0), r"b0"),
    ("budget-params-prefill-cap-fraction", lambda c: _bd_params(prefill_cap=600.5), r"prefill_cap"),
    (
        "budget-type-order-float",
        lambda c: _bd_config(policy="priority", workload=(_LAW, _LAW), type_order=(1.0, 0)),
        r"type_order\[0\] must be an integer",
    ),
    (
        "budget-type-order-bool",
        lambda c: _bd_config(policy="priority", workload=(_LAW, _LAW), type_order=(True, False)),
        r"type_order\[0\]",
    ),
    ("budget-initial-requests-float", lambda c: _bd_config(initial_requests=(2.0,)), r"initial_requests\[0\]"),
    ("budget-table-size-fraction", lambda c: _bd_config(table_size=2.9), r"table_size"),
    ("network-params-budget-fraction", lambda c: _nw_params(budget=512.5), r"budget"),
    ("network-agents-fraction", lambda c: _nw_cfg(agents=2.9), r"agents"),
    (
        "network-type-orders-float",
        lambda c: _nw_cfg(policy="priority", workload=(_LAW, _LAW), type_orders=((1.0, 0), (0, 1))),
        r"type_orders\[0\]\[0\] must be an integer",
    ),
    (
        "network-type-orders-bool",
        lambda c: _nw_cfg(policy="priority", workload=(_LAW, _LAW), type_orders=((1, 0), (False, True))),
        r"type_orders\[1\]\[0\]",
    ),
    (
        "network-route-bool",
        lambda c: _nw_cfg(topology="routes", workload=((_LAW, _LAW),), routes=((False, True),)),
        r"routes\[0\]",
    ),
    ("dp-steps-fraction", lambda c: _dp_cfg(num_steps=2.9), r"num_steps"),
    ("dp-pool-bool", lambda c: _dp_cfg(pool_size=True), r"pool_size"),
    ("dp-lookahead-float", lambda c: _dp_cfg(lookahead_steps=2.0), r"lookahead_steps"),
    ("dp-drift-float", lambda c: _dp_cfg(semantics="theory", drift=(1.0, 2)), r"drift lo"),
    ("kv-num-requests-fraction", lambda c: _kv_cfg(num_requests=512.5), r"num_requests"),
    ("kv-table-size-float", lambda c: _kv_cfg(table_size=16.0), r"table_size"),
    ("kv-thresholds-fraction", lambda c: _kv_params(thresholds=(1.5, 2)), r"thresholds"),
    ("kv-thresholds-bool", lambda c: _kv_params(thresholds=(True, 2)), r"thresholds"),
    ("kv-prefill-float", lambda c: _kv_cfg(prefill_tokens=(10.0, 10)), r"prefill_tokens\[0\]"),
    ("offline-capacity-fraction", lambda c: _off_params(capacity_tokens=100.5), r"capacity_tokens"),
    ("offline-scale-b-bool", lambda c: _off_cfg(scale_b=True), r"scale_b"),
    ("offline-num-requests-fraction", lambda c: _off_named_n("uniform", 2.9), r"n \(requests\)"),
    ("interval-num-requests-fraction", lambda c: _iv_cfg(num_requests=2.9), r"num_requests"),
    ("interval-max-steps-bool", lambda c: _iv_cfg(max_steps=True), r"max_steps"),
    ("experiment-seeds-fraction", lambda c: _experiment(seeds=2.9), r"seeds"),
    ("workload-batch-n-fraction", lambda c: _workload("Batch", base=_LAW, num_requests=2.9), r"num_requests"),
    ("workload-constant-fraction", lambda c: _workload("Constant", value=4.5), r"Constant.value"),
    # --- inf and NaN: one line naming the field
    ("dp-steps-inf", lambda c: _dp_cfg(num_steps=INF), r"num_steps"),
    ("dp-params-step-const-nan", lambda c: _dp_params(step_const_s=NAN), r"step_const_s"),
    ("budget-horizon-inf", lambda c: _bd_config(horizon_s=INF), r"horizon_s"),
    ("budget-params-c-nan", lambda c: _bd_params(c_s=NAN), r"c_s"),
    ("network-horizon-nan", lambda c: _nw_cfg(horizon_s=NAN), r"horizon_s"),
    ("kv-horizon-nan", lambda c: _kv_cfg(horizon_s=NAN), r"horizon_s"),
    ("kv-d0-inf", lambda c: _kv_params(d0_s=INF), r"d0_s"),
    ("offline-epsilon-inf", lambda c: _off_cfg(policy="sorted_f_scaled", epsilon=INF), r"epsilon"),
    ("offline-quantile-nan", lambda c: _off_cfg(policy="sorted_f_quantile", quantile=NAN), r"quantile"),
    ("interval-relative-nan", lambda c: _iv_cfg(intervals=_iv_relative(NAN)), r"x"),
    # --- seeds: a repeated seed would be one run counted twice
    ("simulate-seeds-repeated", lambda c: _simulate(seeds=[0, 0]), r"seeds must be distinct, got seed 0 2 times"),
    (
        "simulate-seeds-repeated-numpy",
        lambda c: _simulate(seeds=np.array([5, 1, 5])),
        r"seeds must be distinct, got seed 5",
    ),
    ("simulate-seeds-bool", lambda c: _simulate(seeds=[True]), r"seeds"),
    ("simulate-seeds-scalar", lambda c: _simulate(seeds=3), r"seeds"),
    ("sweep-seeds-repeated", lambda c: _sweep(c, seeds=[1, 2, 1]), r"seeds must be distinct"),
    ("tune-seeds-repeated", lambda c: _tune(c, seeds=[3, 3]), r"seeds must be distinct"),
    ("check-seeds-repeated", lambda c: __import__("jaxsched.rng").rng.check_seeds([7, 7]), r"seeds must be distinct"),
    (
        "multihost-seeds-repeated",
        lambda c: __import__("jaxsched.multihost").multihost.simulate_multihost(_dp_cfg(), _dp_params(), [0, 0]),
        r"seeds must be distinct",
    ),
    # --- traces: columns by known names, or named
    (
        "read-unknown-output-column",
        lambda c: _read(c, "unknown_output"),
        r"column 'foo' is not a known output column name",
    ),
    (
        "read-unknown-prompt-column",
        lambda c: _read(c, "unknown_prompt"),
        r"column 'foo' is not a known prompt column name",
    ),
    ("read-unknown-columns", lambda c: _read(c, "unknown_both"), r"column 'a'"),
    ("read-columns-not-in-header", lambda c: _read(c, "good", columns=("a", "b")), r"must name columns of its header"),
    (
        "read-columns-one-name",
        lambda c: _read(c, "good", columns=("prompt",)),
        r"columns must be None or the names of two",
    ),
    ("read-columns-same-twice", lambda c: _read(c, "good", columns=("prompt", "prompt")), r"columns must be"),
    ("read-columns-string", lambda c: _read(c, "good", columns="prompt,output"), r"columns must be"),
    ("read-columns-not-strings", lambda c: _read(c, "good", columns=(0, 1)), r"columns must be"),
    (
        "read-columns-headerless",
        lambda c: _read(c, "headerless", columns=("prompt", "output")),
        r"must name columns of its header",
    ),
]


@pytest.mark.parametrize("fn, needle", [pytest.param(f, n, id=i) for i, f, n in API_CASES])
def test_api_rejects_with_config_error(fn, needle, paths, no_compile, tmp_path):
    with pytest.raises(ConfigError, match=needle) as info:
        fn({**paths, "tmp": tmp_path})
    msg = str(info.value)
    assert msg and "\n" not in msg, msg


def test_api_corpus_is_large_enough():
    assert len(API_CASES) >= 240 and len({i for i, _, _ in API_CASES}) == len(API_CASES)


def test_corpus_covers_every_engine():
    # At least 400 cases in all, and every engine's commands (or its API) among them.
    assert len(CLI_CASES) + len(API_CASES) >= 400
    ids = [i for i, _, _ in CLI_CASES + API_CASES]
    argvs = [a for _, a, _ in CLI_CASES]
    for engine in ("kv", "offline", "interval", "budget", "network"):
        assert sum(a[0] == engine for a in argvs) >= 10, engine
        assert sum(i.startswith(engine) for i in ids) >= 10, engine
    assert sum(a[0] in ("run", "dp", "reproduce", "check", "sweep") for a in argvs) >= 60


# ------------------------------------------------------------------------------ byte-order marks

BOM = b"\xef\xbb\xbf"


def test_headerless_trace_with_bom_keeps_every_row(tmp_path):
    from jaxsched.workload import read_trace

    p = tmp_path / "bom.csv"
    p.write_bytes(BOM + b"10,2\n20,3\n30,4\n")
    tr = read_trace(p, order="sequential")
    assert tr.num_requests == 3
    assert tr.prompt.tolist() == [10, 20, 30] and tr.output.tolist() == [2, 3, 4]


def test_headed_trace_with_bom_reads_its_header(tmp_path):
    from jaxsched.workload import read_trace

    # Three columns: only a recognised header (not the two-column fallback) can read this file.
    p = tmp_path / "bom_header.csv"
    p.write_bytes(BOM + b"input_tokens,output_tokens,note\n10,2,a\n20,3,b\n")
    tr = read_trace(p, order="sequential")
    assert tr.prompt.tolist() == [10, 20] and tr.output.tolist() == [2, 3]
    p.write_bytes(BOM + b"prompt,output\r\n10,2\r\n")
    assert read_trace(p, order="sequential").prompt.tolist() == [10]
