"""The linear batch-time model of the budget engine (BudgetConfig batch_time="linear").

t = c + a_p * prefill + a_d * decode + a_c * context (docs/budget-semantics.md §2 step 5),
context = the sum over the batch's members of the tokens already in their KV cache (P_i + D_i
before the batch). Checked here: a hand-computed batch sequence (timing function, reference
and engine), the engine against the plain-Python reference bitwise on random small cases,
a = b = d = 0 (every batch lasts exactly c), the refused inputs, and one command-line sweep.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxsched.budget import BudgetConfig, batches, make_params, request_stream, simulate
from jaxsched.errors import ConfigError, as_one_grid
from jaxsched.workload import Constant, Independent, Poisson, UniformInt
from tests.reference import budget as ref
from tests.reference.kv import DF, to_float64

LAW = Independent(UniformInt(1, 12), Poisson(3.0), name="a")
HORIZON = 12.0
LINEAR = ("prefill_s_per_token", "decode_s_per_token", "context_s_per_token")


def _config(policy: str, **kw) -> BudgetConfig:
    return BudgetConfig(
        workload=(LAW,),
        policy=policy,
        horizon_s=HORIZON,
        burn_in_s=2.0,
        table_size=16,
        max_steps=6000,
        record_members=True,
        snapshots=8,
        **{"batch_time": "linear", **kw},
    )


def _requests(cfg: BudgetConfig, params, seed: int) -> list:
    s = request_stream(cfg, params, seed, 600)
    return [
        (DF(np.float32(h), np.float32(lo)), int(t), int(p), int(d))
        for h, lo, t, p, d in zip(s["t_hi"], s["t_lo"], s["type"], s["vp"], s["vd"])
    ]


def _compare(cfg: BudgetConfig, kw: dict, seed: int) -> int:
    """Run the engine and the reference on the same requests; assert the same batches, start
    times and durations bitwise, and the same end state. Returns the number of batches."""
    params = make_params(cfg, **kw)
    eng = batches(simulate(cfg, params, [seed], record=True, warn=False), 0)
    out = ref.simulate(
        _requests(cfg, params, seed),
        cfg.policy,
        budget=kw["budget"],
        max_requests=kw["max_requests"],
        prefill_cap=kw.get("prefill_cap"),
        c=kw["c_s"],
        batch_time="linear",
        a_prefill=kw["prefill_s_per_token"],
        a_decode=kw["decode_s_per_token"],
        a_context=kw["context_s_per_token"],
        attention=cfg.attention,
        alpha=kw.get("alpha", 0.0),
        beta=kw.get("beta", 0.0),
        horizon=cfg.horizon_s,
        burn_in=cfg.burn_in_s,
        table_size=cfg.table_size,
        snapshots=cfg.snapshots,
    )
    rb = out["batches"]
    assert len(rb) == len(eng["load"])
    for k, b in enumerate(rb):
        assert (eng["t_hi"][k], eng["t_lo"][k]) == (b["t0"].hi, b["t0"].lo), k
        assert (eng["tau_hi"][k], eng["tau_lo"][k]) == (b["tau"].hi, b["tau"].lo), k
        on = (eng["entry"][k] >= 0) & ((eng["dp"][k] > 0) | (eng["dd"][k] > 0))
        got = {int(i): (int(p), int(d)) for i, p, d in zip(eng["id"][k][on], eng["dp"][k][on], eng["dd"][k][on])}
        assert got == {int(i): (int(p), int(d)) for i, (p, d) in b["members"].items()}, k
    return len(rb)


# --------------------------------------------------------------------------- hand-computed


def test_linear_time_hand():
    """Two requests (6, 3) and (4, 2) at t = 0 under sarathi, b = 8, c = 1 s, a_p = 1/16,
    a_d = 1/8, a_c = 1/32 s/token (dyadic: every time is exact):
    B1 {r0: 6 prefill, r1: 2 prefill}: 1 + 8/16 = 1.5 (no context yet);
    B2 {r0: decode, r1: 2 prefill}: context 6 + 2 = 8, 1 + 2/16 + 1/8 + 8/32 = 1.5;
    B3 {r0, r1 decode}: context 7 + 4 = 11, 1 + 2/8 + 11/32 = 1.59375;
    B4 {r0, r1 decode}: context 8 + 5 = 13, 1 + 2/8 + 13/32 = 1.65625."""
    import jax.numpy as jnp

    from jaxsched.budget.timing import budget_linear_time_s

    want = [1.5, 1.5, 1.59375, 1.65625]
    coefs = (2.0**-4, 2.0**-3, 2.0**-5)
    sums = [(8, 0, 0), (2, 1, 8), (0, 2, 11), (0, 2, 13)]
    fence = jnp.int32(-1)
    got = [budget_linear_time_s(*map(jnp.int32, s), 1.0, coefs, fence) for s in sums]
    assert [(float(t.hi), float(t.lo)) for t in got] == [(w, 0.0) for w in want]

    reqs = [(0.0, 0, 6, 3), (0.0, 0, 4, 2)]
    kw = dict(c=1.0, a_prefill=coefs[0], a_decode=coefs[1], a_context=coefs[2], horizon=100.0)
    res = ref.simulate(reqs, "sarathi", budget=8, batch_time="linear", **kw)
    assert [b["members"] for b in res["batches"]] == [
        {0: (6, 0), 1: (2, 0)},
        {0: (0, 1), 1: (2, 0)},
        {0: (0, 1), 1: (0, 1)},
        {0: (0, 1), 1: (0, 1)},
    ]
    assert [to_float64(b["tau"]) for b in res["batches"]] == want
    assert to_float64(res["requests"][0]["departure"]) == sum(want)

    # The engine on the same two requests: a backlog at t = 0 (one per type); the arrival
    # stream is kept to one request at a negligible rate, arriving after the horizon.
    cfg = BudgetConfig(
        workload=(Independent(Constant(6), Constant(3)), Independent(Constant(4), Constant(2))),
        horizon_s=100.0,
        table_size=8,
        initial_requests=(1, 1),
        num_requests=1,
        record_members=True,
        batch_time="linear",
    )
    params = make_params(cfg, rates=[1e-6, 1e-6], budget=8, c_s=1.0, **dict(zip(LINEAR, coefs)))
    eng = batches(simulate(cfg, params, [0], record=True, warn=False), 0)
    assert list(eng["tau_hi"]) == want and not np.any(eng["tau_lo"])
    assert list(eng["prefill"]) == [8, 2, 0, 0] and list(eng["decode"]) == [0, 1, 2, 2]


def test_paper_model_is_the_default_and_unchanged():
    # The same batch under both models: eq. (2.3) with b0 = 0 and a = 1/16 charges the load,
    # the linear model with a_p = a_d = 1/16 and a_c = 0 charges the same tokens.
    reqs = [(0.0, 0, 6, 3), (0.0, 0, 4, 2)]
    paper = ref.simulate(reqs, "sarathi", budget=8, c=1.0, a=2.0**-4, b0=0, horizon=100.0)
    lin = ref.simulate(
        reqs, "sarathi", budget=8, c=1.0, batch_time="linear", a_prefill=2.0**-4, a_decode=2.0**-4, horizon=100.0
    )
    assert [b["tau"] for b in paper["batches"]] == [b["tau"] for b in lin["batches"]]
    # With a context price the linear model differs once requests hold KV.
    ctx = ref.simulate(reqs, "sarathi", budget=8, c=1.0, batch_time="linear", a_context=2.0**-5, horizon=100.0)
    assert [to_float64(b["tau"]) for b in ctx["batches"]] == [1.0, 1.25, 1.0 + 11 / 32, 1.0 + 13 / 32]
    assert BudgetConfig().batch_time == "paper"
    p = make_params(BudgetConfig(horizon_s=10.0))
    assert [float(getattr(p, k)) for k in LINEAR] == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- engine vs reference


def _kw(draw, policy: str) -> dict:
    kw = dict(
        budget=draw(st.integers(1, 40)),
        max_requests=draw(st.integers(1, 10)),
        rates=[draw(st.floats(0.2, 3.0))],
        c_s=draw(st.sampled_from([0.0, 0.05, 0.3])),
        # Awkward float32 values (not dyadic) make each fenced product round.
        prefill_s_per_token=draw(st.sampled_from([0.0, 1.37e-3, 0.0211])),
        decode_s_per_token=draw(st.sampled_from([0.013, 0.0737, 0.21])),
        context_s_per_token=draw(st.sampled_from([0.0, 3.3e-4, 7.1e-3])),
    )
    if kw["c_s"] == 0.0:
        # A batch must take time, and long enough that 6000 steps reach the horizon.
        kw["prefill_s_per_token"] = 0.0211
    if policy == "vllm":
        kw["prefill_cap"] = draw(st.integers(12, 40))
    return kw


CASES = [("sarathi", {}), ("vllm", {}), ("orca", dict(attention=True))]


@pytest.mark.parametrize("policy,static", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_engine_matches_reference(policy, static, data, seed):
    kw = _kw(data.draw, policy)
    if static.get("attention"):
        # The attention terms (A.1) are added after the linear model, as after eq. (2.3).
        kw.update(alpha=data.draw(st.sampled_from([1e-4, 3.3e-3])), beta=data.draw(st.sampled_from([0.0, 2.1e-3])))
    assert _compare(_config(policy, **static), kw, seed) > 0


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["sarathi", "vllm", "orca", "ft", "wc"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**31 - 1))
def test_engine_matches_reference_many(policy, data, seed):
    kw = _kw(data.draw, policy)
    kw["c_s"] = data.draw(st.floats(0.01, 0.3))
    for k in LINEAR:
        kw[k] = data.draw(st.floats(1e-4, 0.05))
    if policy == "ft":
        kw["prefill_cap"] = data.draw(st.integers(12, 40))
    _compare(_config(policy), kw, seed)


@pytest.mark.parametrize("policy", ["sarathi", "vllm"])
def test_zero_coefficients_last_exactly_c(policy):
    cfg = _config(policy)
    kw = dict(rates=[2.5], budget=7, max_requests=5, c_s=0.0371, **({"prefill_cap": 20} if policy == "vllm" else {}))
    res = simulate(cfg, make_params(cfg, **kw), [3, 4], record=True, warn=False)
    for s in range(2):
        b = batches(res, s)
        assert b["load"].size > 10 and np.all(b["prefill"] + b["decode"] > 0)
        assert np.all(b["tau_hi"] == np.float32(0.0371)) and not np.any(b["tau_lo"])
        # Each batch starts where the previous one ended, or at an arrival after an idle jump.
        assert np.all(np.diff(b["start_s"]) >= b["tau_s"][:-1] - 1e-9)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("name", LINEAR)
@pytest.mark.parametrize("value", [-1e-3, float("nan"), float("inf"), "0.1"])
def test_bad_coefficients_are_refused(name, value):
    with pytest.raises(ConfigError, match=rf"^{name} must be a finite number >= 0"):
        make_params(_config("sarathi"), rates=[1.0], **{name: value})


def test_options_of_the_other_model_are_refused():
    paper = BudgetConfig(horizon_s=10.0)
    for name in LINEAR:
        with pytest.raises(ConfigError, match=rf"^{name} is read only by batch_time linear; batch_time paper ignores"):
            make_params(paper, **{name: 0.01})
        make_params(paper, **{name: 0.0})  # at its default: never refused
    lin = _config("sarathi")
    for kw in (dict(a_s_per_token=0.001), dict(b0=3)):
        with pytest.raises(ConfigError, match=r"is read only by batch_time paper; batch_time linear ignores it$"):
            make_params(lin, rates=[1.0], decode_s_per_token=0.01, **kw)
    # One grid over both models reads every coefficient at some point: accepted.
    with as_one_grid():
        for cfg in (_config("sarathi"), _config("sarathi", batch_time="paper")):
            make_params(cfg, rates=[1.0], decode_s_per_token=0.01)


def test_bad_model_settings_are_refused():
    with pytest.raises(ConfigError, match=r"^batch_time must be one of \('paper', 'linear'\), got 'vidur'"):
        BudgetConfig(batch_time="vidur")
    with pytest.raises(ConfigError, match=r"^rates must be .* when batch_time is 'linear'"):
        make_params(_config("sarathi"))
    with pytest.raises(ConfigError, match=r"^c_s must be > 0, or prefill_s_per_token and decode_s_per_token > 0"):
        make_params(_config("sarathi"), rates=[1.0], c_s=0.0, decode_s_per_token=0.01)
    # c = 0 with both per-token prices > 0: the shortest batch (one token) takes a_p or a_d.
    make_params(_config("sarathi"), rates=[1.0], c_s=0.0, prefill_s_per_token=0.02, decode_s_per_token=0.01)
    with pytest.raises(ConfigError, match=r"^max_steps must be >= "):
        # 12 s of batches of 1 ms need ~13,000 steps; the config allows 6000.
        make_params(_config("sarathi"), rates=[1.0], c_s=0.0, prefill_s_per_token=0.001, decode_s_per_token=0.001)


# --------------------------------------------------------------------------- command line


def test_sweep_command_runs_the_linear_model(tmp_path):
    from jaxsched.cli import main

    sets = ["batch_time=linear", "rates=[3.0]", "horizon_s=6", "table_size=64", "c_s=0.02"]
    sets += ["decode_s_per_token=0.05", "prefill_s_per_token=0.001", "context_s_per_token=0.0004"]
    out = tmp_path / "lin.csv"
    argv = ["sweep", "--engine", "budget", "--axis", "budget=64", "--seeds", "2", "--quiet", "--out", str(out)]
    assert main(argv + [x for s in sets for x in ("--set", s)]) == 0
    (row,) = list(csv.DictReader(out.open()))  # one point, its metrics over seeds 0 and 1
    # The same runs through the Python API: the same metrics, and not eq. (2.3)'s.
    cfg = BudgetConfig(horizon_s=6.0, table_size=64, batch_time="linear")
    kw = dict(rates=[3.0], budget=64, c_s=0.02)
    lin = dict(decode_s_per_token=0.05, prefill_s_per_token=0.001, context_s_per_token=0.0004)
    res = simulate(cfg, make_params(cfg, **kw, **lin), [0, 1], warn=False)
    paper_cfg = BudgetConfig(horizon_s=6.0, table_size=64)
    paper = simulate(paper_cfg, make_params(paper_cfg, **kw), [0, 1], warn=False)
    for key in ("latency_mean_s", "num_batches", "tbt_mean_s"):
        assert float(row[f"{key}_mean"]) == pytest.approx(np.mean(res.metrics[key]), rel=1e-12), key
    assert float(row["tbt_mean_s_mean"]) != pytest.approx(np.mean(paper.metrics["tbt_mean_s"]), rel=1e-3)
