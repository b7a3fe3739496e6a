"""The vllm policy's `block_rules` (docs/kv-semantics.md §6): Vidur's two block rules on the
minimal examples of benchmarks/vidur/kv_compare.py, written out batch by batch, in the engine
and in the reference; the option's validation. The engine against the reference on random
cases with binding memory: tests/kv/test_properties.py (case "vllm_vidur")."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.errors import ConfigError
from jaxsched.kv import KVConfig, batches, make_params, simulate
from jaxsched.workload.arrivals import arrival_stream
from tests.reference import kv as ref

BLOCK = 16
D0, D1 = 0.01, 1e-6  # kv_compare's eq. (1)

# kv_compare.EXAMPLES' data: types (l_j, l'_j), num_blocks of 16 tokens, watermark 0.
FREE_BLOCK = dict(types=((20, 10),), num_blocks=4)
ADMISSION_LAG = dict(types=((16, 8), (50, 8)), num_blocks=5)
LONE_REQUEST = dict(types=((16, 8), (48, 8)), num_blocks=4)


def _config(types, rules: str, n: int = 2) -> KVConfig:
    return KVConfig(
        prefill_tokens=tuple(p for p, _ in types),
        decode_tokens=tuple(d for _, d in types),
        policy="vllm",
        num_requests=n,
        table_size=8,
        max_steps=128,
        block_rules=rules,
    )


def _reference_at(types, num_blocks: int, rules: str, arrivals) -> dict:
    """The reference on given arrivals ((time s, type) pairs, equal rates: type j is drawn by
    a type draw in [j/m, (j+1)/m)), watermark 0, as kv_compare's `example_run`."""
    m = len(types)
    t = np.asarray([a for a, _ in arrivals], np.float64)
    return ref.simulate(
        prefill=[p for p, _ in types],
        decode=[d for _, d in types],
        policy="vllm",
        rates=[1.0] * m,
        d0=D0,
        d1=D1,
        capacity=num_blocks * BLOCK,
        gaps=np.diff(np.concatenate([[0.0], t])).astype(np.float32).tolist(),
        type_u=[(j + 0.5) / m for _, j in arrivals],
        num_requests=len(arrivals),
        block_size=BLOCK,
        watermark=0.0,
        block_rules=rules,
    )


def _members(res: dict) -> list[list[int]]:
    return [b["batch_ids"] for b in res["batches"]]


def _preempted(res: dict) -> list[int]:
    return [b["preempted"] for b in res["batches"]]


def test_reference_reproduces_the_examples_arrivals():
    # kv_compare's arrivals exactly (Vidur's own batches in benchmarks/results/vidur/kv_agreement.md).
    # free-block: both arrive together; Vidur finds no free block at request 1's turn.
    kv = _reference_at(**FREE_BLOCK, rules="kv", arrivals=((0.001, 0), (0.001, 0)))
    vid = _reference_at(**FREE_BLOCK, rules="vidur", arrivals=((0.001, 0), (0.001, 0)))
    assert _members(kv) == [[0, 1]] * 11 and sum(_preempted(kv)) == 0
    assert _members(vid) == [[0, 1]] + [[0], [1]] * 10
    assert _preempted(vid) == [0] + [1, 0] * 10
    # admission-lag: Vidur admits request 1 against the blocks request 0 holds, then restarts it.
    arr = ((0.001, 0), (0.005, 1))
    kv = _reference_at(**ADMISSION_LAG, rules="kv", arrivals=arr)
    vid = _reference_at(**ADMISSION_LAG, rules="vidur", arrivals=arr)
    assert _members(kv) == [[0]] * 9 + [[1]] * 9 and sum(_preempted(kv)) == 0
    assert _members(vid) == [[0], [1]] + [[0]] * 8 + [[1]] * 8
    assert _preempted(vid) == [0, 0, 1] + [0] * 15
    assert vid["batches"][-8]["tokens"] == 51  # request 1's recompute: prompt 50 + 1 token
    # lone-request: under Vidur's rules request 1 alone holds every block and stalls the run
    # (the configuration the engine refuses, below).
    vid = _reference_at(**LONE_REQUEST, rules="vidur", arrivals=arr)
    assert _members(vid) == [[0], [1]] + [[0]] * 8 + [[1]]
    assert vid["metrics"]["num_completed"] == 1 and vid["metrics"]["stalled"] == 1


# The engine draws its own Poisson arrivals: seeds (at these rates) where request 1 arrives
# while request 0's prefill runs (the batch time is d0 + d1 l_0 ~ 10 ms), with the types of the
# examples. Request 1 then joins after that prefill instead of with it (free-block: {0} {1}
# where the example has {0, 1}); admission-lag is the example batch for batch.
ENGINE_CASES = {
    # name: (example, total rate /s, seed, {rules: (members per batch, kv tokens per batch)})
    "free-block": (
        FREE_BLOCK,
        50.0,
        4,
        {
            "kv": ([[0], [1]] + [[0, 1]] * 10, [20, 20] + [2 * w for w in range(21, 31)]),
            "vidur": ([[0], [1]] + [[0], [1]] * 10, [20, 20] + [w for w in range(21, 31) for _ in (0, 1)]),
        },
    ),
    "admission-lag": (
        ADMISSION_LAG,
        200.0,
        5,
        {
            "kv": ([[0]] * 9 + [[1]] * 9, list(range(16, 25)) + list(range(50, 59))),
            "vidur": ([[0], [1]] + [[0]] * 8 + [[1]] * 8, [16, 50] + list(range(17, 25)) + list(range(51, 59))),
        },
    ),
}
# Restarts at each batch's start under Vidur's rules (none under the kv rules).
ENGINE_RESTARTS = {"free-block": [0, 0] + [1, 0] * 10, "admission-lag": [0, 0, 1] + [0] * 15}


@pytest.mark.parametrize("rules", ["kv", "vidur"])
@pytest.mark.parametrize("name", sorted(ENGINE_CASES))
def test_engine_reproduces_the_examples(name: str, rules: str):
    example, rate, seed, want = ENGINE_CASES[name]
    types, num_blocks = example["types"], example["num_blocks"]
    config = _config(types, rules)
    m = config.m
    params = make_params(
        config,
        rates=[rate / m] * m,
        d0_s=D0,
        d1_s_per_token=D1,
        capacity_tokens=num_blocks * BLOCK,
        block_size=BLOCK,
        watermark=0.0,
    )
    out = simulate(config, params, [seed], record=True, warn=False)
    eb = batches(out, 0)
    members, tokens = want[rules]
    restarts = ENGINE_RESTARTS[name] if rules == "vidur" else [0] * len(members)
    np.testing.assert_array_equal(eb["tokens"], tokens)
    np.testing.assert_array_equal(eb["preempted"], restarts)
    metrics = {k: float(v[0]) for k, v in out.metrics.items()}
    assert metrics["num_completed"] == 2 and metrics["stalled"] == 0
    assert metrics["preemption_count"] == sum(restarts)
    # The members by id: the reference on the engine's own arrivals, batch for batch the engine's.
    stream = arrival_stream(config, params, seed, 64)
    res = ref.simulate(
        prefill=config.prefill_tokens,
        decode=config.decode_tokens,
        policy="vllm",
        rates=[rate / m] * m,
        d0=D0,
        d1=D1,
        capacity=num_blocks * BLOCK,
        gaps=stream["gap_s"],
        seed=seed,
        num_requests=2,
        table_size=config.table_size,
        block_size=BLOCK,
        watermark=0.0,
        block_rules=rules,
    )
    assert _members(res) == members
    for key in ("t_hi", "t_lo", "tau_hi", "tau_lo", "tokens", "preempted", "completed"):
        assert [b[key] for b in res["batches"]] == list(eb[key]), key
    # Request 1 arrives during request 0's first batch (the premise of the seed).
    r0, r1 = res["requests"][0], res["requests"][1]
    start = [b["start_s"] for b in res["batches"]]
    assert start[0] < float(r1["arrival_hi"]) + float(r1["arrival_lo"]) < start[1]
    assert (r0["type"], r1["type"]) == ((0, 0) if m == 1 else (0, 1))


def test_block_rules_validation():
    # Vidur's rules need ceil((l + l' - 1) / b) <= num_blocks - 1 for every type: lone-request's
    # 48 + 8 tokens hold 4 of 4 blocks before their last token.
    types = LONE_REQUEST["types"]
    kw = dict(capacity_tokens=4 * BLOCK, block_size=BLOCK, watermark=0.0, d0_s=D0, d1_s_per_token=D1)
    make_params(_config(types, "kv"), rates=[1.0, 1.0], **kw)  # the kv rules serve it
    with pytest.raises(ConfigError, match=r"capacity_tokens .*ceil\(55 / 16\) = 4 .*block_rules 'vidur'"):
        make_params(_config(types, "vidur"), rates=[1.0, 1.0], **kw)
    make_params(_config(types, "vidur"), rates=[1.0, 1.0], **dict(kw, capacity_tokens=5 * BLOCK))
    # One request of l + l' = 33 tokens: 3 blocks of 16 (kv rules), 2 held before its last token.
    make_params(_config(((30, 3),), "vidur"), rates=[1.0], **dict(kw, capacity_tokens=3 * BLOCK))
    with pytest.raises(ConfigError, match="block_rules"):
        _config(types, "vLLM")
    with pytest.raises(ConfigError, match="block_rules"):
        _config(types, None)
    # Read by vllm only: another policy refuses it (the registry's options), but takes the default.
    with pytest.raises(ConfigError, match=r"block_rules.*vllm"):
        KVConfig(policy="sarathi", block_rules="vidur")
    KVConfig(policy="sarathi", block_rules="kv")


def test_cli_block_rules(capsys):
    from jaxsched.cli import main

    base = ["kv", "run", "--prefill", "16,50", "--decode", "8,8", "--rates", "100,100", "--capacity", "80"]
    base += ["--num-requests", "20", "--table-size", "32", "--seeds", "1", "--quiet"]
    assert main([*base, "--policy", "vllm", "--block-rules", "vidur"]) == 0
    assert "block_rules=vidur" in capsys.readouterr().err
    assert main([*base, "--policy", "fcfs", "--block-rules", "vidur"]) == 2
    assert "--block-rules" in capsys.readouterr().err
