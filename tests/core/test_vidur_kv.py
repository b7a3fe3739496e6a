"""The kv engine against Vidur (benchmarks/vidur/kv_compare.py): its pure parts without Vidur
(the "kv" batch time, the request list and per-request times rebuilt from a recorded run, the
engine under Vidur's block rules checked against its reference, the minimal examples under
both block rules), and one slow end-to-end run of `python -m benchmarks.vidur.kv_compare
--quick` when Vidur is set up."""

from __future__ import annotations

import csv
import dataclasses
import json
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.vidur import harness, kv_compare
from benchmarks.vidur.vidur_predictor import batch_counts, batch_time_s, check_spec, kv_batch_time_s
from jaxsched.clock import split12
from jaxsched.kv import KVConfig, batches, make_params, simulate
from jaxsched.timing import iteration_time_s
from tests.reference import kv as ref

TOKENS = (0, 1, 17, 4095, 4096, 65_537, 1_000_003, 2**28 + 5)


@pytest.mark.parametrize("d0, d1", [(0.01, 1e-6), (0.0455, 1.8e-4), (0.003, 3.7e-7)])
def test_kv_predictor_equals_jaxsched_iteration_time(d0, d1):
    d1_hi, d1_lo = split12(d1)
    for tokens in TOKENS:
        want = float(
            iteration_time_s(jnp.int32(tokens), jnp.float32(d0), jnp.float32(d1_hi), jnp.float32(d1_lo)).to_numpy()
        )
        # jaxsched sums the exact products in a double-float, Vidur's side in float64 once.
        assert kv_batch_time_s(tokens, d0, d1) == pytest.approx(want, rel=2.0**-46, abs=0.0), tokens
        assert float(ref.to_float64(ref.iteration_time(tokens, np.float32(d0), np.float32(d1)))) == want


def _vidur_request(processed: int, prefill_done: bool):
    return SimpleNamespace(num_processed_tokens=processed, is_prefill_complete=prefill_done)


def test_kv_spec_counts_prefills_recomputes_and_contexts():
    # A 512-token prompt; a restarted request recomputing 512 + 18 tokens (Vidur's restart makes
    # them its prompt: processed 0, prefill not complete); a request of prompt 256 at kv stage 44
    # (Vidur: 256 + 44 tokens processed, the prefill's bonus token included), work 300.
    batch = SimpleNamespace(
        requests=[_vidur_request(0, False), _vidur_request(0, False), _vidur_request(300, True)],
        total_num_tokens=512 + 530 + 1,
        num_prefill_tokens=512 + 530,
        num_decode_tokens=1,
    )
    spec = check_spec(dict(model="kv", d0_s=0.01, d1_s_per_token=1e-6))
    assert spec == dict(model="kv", d0_s=0.01, d1_s_per_token=1e-6)
    assert batch_time_s(spec, *batch_counts(batch)) == kv_batch_time_s(512 + 530 + 300, 0.01, 1e-6)
    assert kv_batch_time_s(1342, 0.01, 1e-6) == float(np.float32(0.01)) + float(np.float32(1e-6)) * 1342
    with pytest.raises(ValueError, match="missing"):
        check_spec(dict(model="kv", d0_s=0.01))
    with pytest.raises(ValueError, match="extra"):
        check_spec(dict(model="kv", d0_s=0.01, d1_s_per_token=1e-6, b0=64))


# A small vllm run whose KV blocks bind: prompts of 8 and 24 tokens grow by 40 and 24 decode
# tokens, 6 blocks of 16 (32 restarts at seed 3).
SMALL = KVConfig(prefill_tokens=(8, 24), decode_tokens=(40, 24), policy="vllm", num_requests=60, table_size=64)
SMALL_RATES = [2.5, 2.5]
SMALL_LIMITS = dict(d0_s=0.01, d1_s_per_token=1e-4, batch_size_cap=8, max_tokens_in_batch=128)


@pytest.fixture(scope="module")
def small_run():
    params = make_params(SMALL, rates=SMALL_RATES, capacity_tokens=96, **SMALL_LIMITS)
    res = simulate(SMALL, params, [3], record=True, warn=False)
    stream = kv_compare.candidate_stream(SMALL, params, 3, SMALL.num_requests)
    return params, res, stream


def test_request_list_and_per_request_times_match_the_engine(small_run, tmp_path):
    params, res, stream = small_run
    m = {k: float(v[0]) for k, v in res.metrics.items()}
    n = SMALL.num_requests
    assert m["preemption_count"] > 0 and m["num_completed"] == n
    req = kv_compare.request_list(stream, SMALL.prefill_tokens, SMALL.decode_tokens, n)
    run = kv_compare.reference_run(SMALL, params, SMALL_RATES, stream, 3)
    eb = batches(res, 0)
    kv_compare.check_reference_equals_engine(run, eb, res.metrics)
    # The request list is the run's: its decode tokens are the completed tokens the engine
    # counts (l'_j + 1 each over the drained run), its arrivals the reference's.
    counted = float(np.sum(req["decode"] + 1))
    assert counted == pytest.approx(m["throughput_tokens_per_s"] * m["end_time_s"], rel=1e-12)
    for i in range(n):
        r = run["requests"][i]
        assert (r["arrival_hi"], r["arrival_lo"], r["type"]) == (req["t_hi"][i], req["t_lo"][i], req["type"][i])
    # Per-request times: their means are the engine's (float32 values, compensated sums).
    per = kv_compare.per_request(run, n)
    assert np.isfinite(per["ttft_s"]).all() and np.isfinite(per["e2e_s"]).all()
    assert np.mean(per["ttft_s"]) == pytest.approx(m["ttft_mean_s"], rel=1e-5)
    assert np.mean(per["e2e_s"]) == pytest.approx(m["latency_mean_s"], rel=1e-5)
    assert int(per["restarts"].sum()) == m["preemption_count"]
    ends = kv_compare.batch_end_s(run)
    np.testing.assert_allclose(ends, np.asarray(eb["start_s"]) + np.asarray(eb["tau_s"]), rtol=1e-12)
    assert np.all(per["e2e_s"] >= per["ttft_s"]) and np.all(per["ttft_s"] > 0)
    # A run that differs from the engine in one batch is refused.
    bad = dict(eb, tokens=np.asarray(eb["tokens"]).copy())
    bad["tokens"][5] += 1
    with pytest.raises(RuntimeError, match="batch 5: engine tokens"):
        kv_compare.check_reference_equals_engine(run, bad, res.metrics)
    # Vidur's trace: the same arrivals, prompts, and l'_j + 1 decode tokens.
    path = kv_compare.write_vidur_trace(tmp_path / "t.csv", req)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    np.testing.assert_array_equal([float(r["arrived_at"]) for r in rows], req["arrival_s"])
    np.testing.assert_array_equal([int(r["num_prefill_tokens"]) for r in rows], req["prefill"])
    np.testing.assert_array_equal([int(r["num_decode_tokens"]) for r in rows], req["decode"] + 1)


SMALL_VIDUR = dataclasses.replace(SMALL, block_rules="vidur")


def test_vidur_rules_change_only_a_binding_run(small_run):
    params, res, stream = small_run
    counts: dict = {}
    kv = kv_compare.reference_run(SMALL, params, SMALL_RATES, stream, 3)
    # The engine under Vidur's rules on the same requests: its reference (the counting policy
    # decides as the reference's vllm policy with block_rules "vidur") reproduces it bitwise.
    vparams = make_params(SMALL_VIDUR, rates=SMALL_RATES, capacity_tokens=96, **SMALL_LIMITS)
    vres = simulate(SMALL_VIDUR, vparams, [3], record=True, warn=False)
    vstream = kv_compare.candidate_stream(SMALL_VIDUR, vparams, 3, SMALL.num_requests)
    rules = kv_compare.reference_run(
        SMALL_VIDUR, vparams, SMALL_RATES, vstream, 3, policy=kv_compare.counting_policy(counts)
    )
    kv_compare.check_reference_equals_engine(rules, batches(vres, 0), vres.metrics)
    assert rules["metrics"] == kv_compare.reference_run(SMALL_VIDUR, vparams, SMALL_RATES, vstream, 3)["metrics"]
    assert float(vres.metrics["preemption_count"][0]) > 0
    a, b = kv_compare.batch_sequence(kv), kv_compare.batch_sequence(rules)
    cmp = kv_compare.compare_batches(a, b)
    # Blocks bind here: the rules change decisions, and the first one is where the runs part.
    assert counts["admission"] + counts["decode"] > 0
    assert cmp["first_difference"] == min(
        x for x in (counts["first_admission"], counts["first_decode"]) if x is not None
    )
    assert cmp["max_start_diff_s"] == 0.0
    # With memory that never binds the two rule sets are one.
    big = make_params(SMALL, rates=SMALL_RATES, capacity_tokens=2**20, **SMALL_LIMITS)
    vbig = make_params(SMALL_VIDUR, rates=SMALL_RATES, capacity_tokens=2**20, **SMALL_LIMITS)
    counts = {}
    kv = kv_compare.reference_run(SMALL, big, SMALL_RATES, stream, 3)
    rules = kv_compare.reference_run(
        SMALL_VIDUR, vbig, SMALL_RATES, stream, 3, policy=kv_compare.counting_policy(counts)
    )
    assert counts["admission"] == counts["decode"] == 0
    assert (
        kv_compare.compare_batches(kv_compare.batch_sequence(kv), kv_compare.batch_sequence(rules))["first_difference"]
        is None
    )
    assert kv["metrics"] == rules["metrics"]


def test_minimal_examples_under_both_rule_sets():
    # The batch sequences worked out from both codes (and produced by Vidur itself in
    # benchmarks/results/vidur/kv_agreement.md).
    ex = {e.name: e for e in kv_compare.EXAMPLES}
    members = lambda res: [b["batch_ids"] for b in res["batches"]]  # noqa: E731
    restarts = lambda res: sum(b["preempted"] for b in res["batches"])  # noqa: E731

    kv = kv_compare.example_run(ex["free-block"])
    vid = kv_compare.example_run(ex["free-block"], "vidur")
    assert members(kv) == [[0, 1]] * 11 and restarts(kv) == 0
    assert members(vid) == [[0, 1]] + [[0], [1]] * 10 and restarts(vid) == 10
    assert [b["preempted"] for b in vid["batches"]] == [0] + [1, 0] * 10

    kv = kv_compare.example_run(ex["admission-lag"])
    vid = kv_compare.example_run(ex["admission-lag"], "vidur")
    assert members(kv) == [[0]] * 9 + [[1]] * 9 and restarts(kv) == 0
    assert members(vid) == [[0], [1]] + [[0]] * 8 + [[1]] * 8 and restarts(vid) == 1
    assert vid["batches"][-8]["tokens"] == 51  # request 1's recompute: prompt 50 + 1 token

    kv = kv_compare.example_run(ex["lone-request"])
    vid = kv_compare.example_run(ex["lone-request"], "vidur")
    assert kv["metrics"]["num_completed"] == 2 and kv["metrics"]["stalled"] == 0
    assert members(vid) == [[0], [1]] + [[0]] * 8 + [[1]]
    assert vid["metrics"]["num_completed"] == 1 and vid["metrics"]["stalled"] == 1
    # The engine refuses lone-request under Vidur's rules (the bound that rules the stall out).
    assert [kv_compare.engine_refuses(e) for e in kv_compare.EXAMPLES] == [
        e.engine_refuses for e in kv_compare.EXAMPLES
    ]
    assert [e.name for e in kv_compare.EXAMPLES if e.engine_refuses] == ["lone-request"]


def test_vidur_batch_log_and_comparison():
    rows = [[0.0, 0.5, 40, 0, [0, 1]], [0.5, 0.25, 21, 1, [0]], [0.75, 0.25, 21, 1, [1]], [1.0, 0.25, 22, 2, [0]]]
    v = kv_compare.vidur_batches(rows)
    np.testing.assert_array_equal(v["preempted"], [0, 1, 0, 1])
    np.testing.assert_array_equal(v["tokens"], [40, 21, 21, 22])
    kv = dict(
        start_s=np.array([0.0, 0.5, 0.75]), tokens=np.array([40, 42, 44]), members=[[0, 1]] * 3, preempted=np.zeros(3)
    )
    c = kv_compare.compare_batches(kv, v)
    assert c["first_difference"] == 1 and c["common_prefix"] == 1
    assert c["batches"] == (3, 4) and c["preemptions"] == (0, 2)
    same = kv_compare.compare_batches(v, v)
    assert same["first_difference"] is None and same["common_prefix"] == 4
    prefix = kv_compare.compare_batches(dict(v, members=v["members"][:2], tokens=v["tokens"][:2]), v)
    assert prefix["first_difference"] == 2
    a = dict(ttft_s=np.array([1.0, 2.0]), e2e_s=np.array([3.0, 4.0]), restarts=np.array([0, 1]))
    p = kv_compare.paired(a, dict(a, e2e_s=np.array([3.0, 4.5]), restarts=np.array([0, 0])))
    assert p["ttft_s"] == dict(max_abs_s=0.0, frac_equal=1.0)
    assert p["e2e_s"] == dict(max_abs_s=0.5, frac_equal=0.5) and p["restarts_differ"] == 1


def test_vidur_arguments_carry_blocks_and_watermark(tmp_path):
    args = kv_compare.vidur_kv_args(tmp_path / "t.csv", tmp_path, 3072, watermark=0.0)
    flags = {f: args[args.index(f) + 1] for f in args if f.startswith("--") and not f.startswith("--no-")}
    assert flags["--vllm_scheduler_config_num_blocks"] == "3072"
    assert flags["--vllm_scheduler_config_block_size"] == str(kv_compare.BLOCK_SIZE)
    assert flags["--vllm_scheduler_config_batch_size_cap"] == str(kv_compare.BATCH_SIZE_CAP)
    assert flags["--vllm_scheduler_config_max_tokens_in_batch"] == str(kv_compare.MAX_TOKENS_IN_BATCH)
    assert flags["--vllm_scheduler_config_watermark_blocks_fraction"] == "0.0"
    assert flags["--replica_scheduler_config_type"] == "vllm"


def test_skip_message_when_vidur_is_absent(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VIDUR_VENV", str(tmp_path / "no-venv"))
    monkeypatch.setenv("VIDUR_SRC", str(tmp_path / "no-src"))
    assert kv_compare.main(["--quick", "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.startswith(harness.SKIP_MESSAGE)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_quick_kv_comparison_against_vidur(tmp_path):
    why = harness.missing_reason(harness.vidur_paths())
    if why is not None:
        pytest.skip(f"Vidur is not set up ({why}); run benchmarks/vidur/setup.sh")
    assert kv_compare.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "kv_agreement_quick.json").read_text())
    cases = {c["case"]: c for c in report["cases"]}
    # Memory that never binds: the same batches and times as Vidur, request by request.
    nb = cases["non-binding"]["kv_vs_vidur"]
    assert nb["batches"]["first_difference"] is None
    assert nb["paired"]["ttft_s"]["max_abs_s"] < 1e-6 and nb["paired"]["e2e_s"]["max_abs_s"] < 1e-6
    # The kv engine with Vidur's two block rules is Vidur in every case, restarts included.
    for c in cases.values():
        r = c["rules_vs_vidur"]
        assert r["batches"]["first_difference"] is None, c["case"]
        assert r["paired"]["e2e_s"]["max_abs_s"] < 1e-6 and r["paired"]["restarts_differ"] == 0, c["case"]
    assert cases["binding-3072-blocks"]["stats"]["vidur"]["restarts"] > 0
    for ex in report["examples"]:
        assert ex["vidur"]["batches"] == ex["rules"]["batches"], ex["name"]
