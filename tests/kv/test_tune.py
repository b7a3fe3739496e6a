"""Threshold tuning (jaxsched.kv.tune) and the differentiable kv relaxation
(jaxsched.kv.relaxed)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxsched.errors import ConfigError
from jaxsched.kv import KVConfig, make_params, simulate, tuning
from jaxsched.kv import relaxed as R
from jaxsched.kv.tune import integer_search, round_thresholds, temperatures, tune

# Tiny WAIT system: one type, l = 1, l' = 2 (stages cost 1, 2, 3 tokens: 6 per request),
# d0 = 1 s, d1 = 0.01 s/token. A batch of n per stage lasts 1 + 0.06 n s.
TINY = KVConfig(
    prefill_tokens=(1,), decode_tokens=(2,), policy="wait", num_requests=None, horizon_s=1500.0, table_size=2048
)
D0, D1 = 1.0, 0.01


def _tiny(rate: float) -> R.RelaxedSystem:
    return R.relaxed_system(TINY, rates=(rate,), d0_s=D0, d1_s_per_token=D1, capacity_tokens=1e6)


def test_tune_maximizes_known_objective_over_any_shape():
    target = jnp.array([[2.0, 5.0, 40.0], [1.5, 9.0, 300.0]])
    fn = lambda n, key, temp: -jnp.sum((jnp.log(n) - jnp.log(target)) ** 2)  # noqa: E731
    res = tune(fn, np.full((2, 3), 10.0), steps=300, key=jax.random.PRNGKey(0), optimizer=optax.adam(0.05))
    assert res.thresholds.shape == (2, 3)
    np.testing.assert_allclose(res.thresholds, np.asarray(target), rtol=0.05)
    h = res.history["objective"]
    assert h[-1] > h[0] and h[-1] > -1e-3
    assert res.history["thresholds"].shape == (300, 2, 3)


def test_tune_passes_annealed_temperature_and_rejects_bad_init():
    seen = []
    fn = lambda n, key, temp: -jnp.sum((n - temp) ** 2)  # noqa: E731
    res = tune(
        fn, [1.0], steps=5, key=jax.random.PRNGKey(0), temperature=(2.0, 0.5), progress=lambda i, v: seen.append(v)
    )
    np.testing.assert_allclose(res.history["temperature"], temperatures(5, 2.0, 0.5))
    assert res.history["temperature"][0] == 2.0 and np.isclose(res.history["temperature"][-1], 0.5)
    assert len(seen) == 5
    with pytest.raises(ConfigError, match="init_thresholds"):
        tune(fn, [1.0, -2.0], steps=2, key=jax.random.PRNGKey(0))


def test_round_and_integer_search():
    assert round_thresholds([0.2, 1.5, 2.49, 7.7]).tolist() == [1, 2, 2, 8]
    target = np.array([3, 1, 6])
    fn = lambda x: -float(np.sum((x - target) ** 2))  # noqa: E731
    best, v = integer_search(fn, [3.6, 1.2, 5.4])  # exhaustive box of 27 points
    assert best.tolist() == [3, 1, 6] and v == 0.0
    best, _ = integer_search(fn, [1.0, 4.0, 2.0], radius=1, max_box=1)  # coordinate descent
    assert best.tolist() == [3, 1, 6]


def test_relaxed_throughput_gradient_sign_when_threshold_far_too_low():
    # rate 3/s but n = 1 serves 1 request per 1.06 s: raising n raises throughput (memory loose).
    sys = _tiny(3.0)
    cfg = R.RelaxedConfig(steps=400, burn_steps=100, samples=4)
    thr = lambda n: R.run_mean(sys, cfg, n, 0.3, jax.random.PRNGKey(0)).throughput_tokens_per_s  # noqa: E731
    g = jax.grad(thr)(jnp.array([1.0]))
    assert np.all(np.isfinite(np.asarray(g))) and float(g[0]) > 0
    obj = lambda n: R.objective(
        sys,
        cfg,
        n,
        0.3,
        jax.random.PRNGKey(1),
        lam=1.0,  # noqa: E731
        memory_weight=10.0,
    )
    g2 = jax.grad(obj)(jnp.array([1.0]))
    assert np.isfinite(float(g2[0])) and float(g2[0]) > 0


def test_relaxed_memory_penalty_pushes_thresholds_down():
    # C below the memory of full batches: the overflow term falls as n falls.
    sys = R.relaxed_system(TINY, rates=(3.0,), d0_s=D0, d1_s_per_token=D1, capacity_tokens=20.0)
    cfg = R.RelaxedConfig(steps=300, burn_steps=100, samples=2)
    over = lambda n: R.run_mean(sys, cfg, n, 0.3, jax.random.PRNGKey(0)).overflow  # noqa: E731
    assert float(over(jnp.array([6.0]))) > 0
    assert float(jax.grad(over)(jnp.array([6.0]))[0]) > 0


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:kv.*table full")  # the overloaded backlog may fill Q
@pytest.mark.parametrize("rate,n", [(3.0, 2), (0.5, 2)])
def test_relaxed_throughput_matches_exact_engine_at_low_temperature(rate, n):
    # Overloaded (rate 3: 2 requests per 1.12 s batch) and idling (rate 0.5) WAIT. Tolerance 5%:
    # the relaxation measures a steady-state window, the engine [0, T] from empty.
    params = make_params(
        TINY, rates=(rate,), d0_s=D0, d1_s_per_token=D1, capacity_tokens=1000, thresholds=(n,), check_stability=False
    )
    exact = simulate(TINY, params, range(4)).metrics["throughput_tokens_per_s"].mean()
    cfg = R.RelaxedConfig(steps=2000, burn_steps=300, samples=4)
    relaxed = float(
        R.run_mean(_tiny(rate), cfg, jnp.array([float(n)]), 0.05, jax.random.PRNGKey(0)).throughput_tokens_per_s
    )
    assert relaxed == pytest.approx(exact, rel=0.05)


@pytest.mark.slow
def test_relaxed_nested_latency_tracks_exact_engine():
    # Nested WAIT, 2 types: Little's-law latency within 15% of the engine's mean latency.
    config = KVConfig(
        prefill_tokens=(2, 2), decode_tokens=(2, 5), policy="nested_wait", num_requests=3000, table_size=512
    )
    rates, d0, d1, n = (1.0, 1.0), 0.5, 0.005, (2, 2)
    exact = simulate(
        config,
        make_params(config, rates=rates, d0_s=d0, d1_s_per_token=d1, capacity_tokens=10_000, thresholds=n),
        range(4),
    )
    sys = R.relaxed_system(config, rates=rates, d0_s=d0, d1_s_per_token=d1, capacity_tokens=10_000.0)
    m = R.run_mean(
        sys,
        R.RelaxedConfig(steps=2000, burn_steps=300, samples=4),
        jnp.array(n, jnp.float32),
        0.05,
        jax.random.PRNGKey(0),
    )
    assert float(m.latency_mean_s) == pytest.approx(exact.metrics["latency_mean_s"].mean(), rel=0.15)


def test_end_to_end_tune_on_tiny_config_is_fast():
    # Start far too low (n = 1 at rate 3/s): tuning raises the threshold and the objective.
    sys = _tiny(3.0)
    cfg = R.RelaxedConfig(steps=300, burn_steps=100, samples=2)
    fn = lambda n, key, temp: (
        R.objective(
            sys,
            cfg,
            n,
            temp,
            key,
            lam=0.1,  # noqa: E731
            memory_weight=0.0,
        )
        / 9.0
    )
    res = tune(fn, [1.0], steps=40, key=jax.random.PRNGKey(0), temperature=(0.5, 0.2))
    assert res.thresholds[0] > 1.5
    h = res.history["objective"]
    assert h[-5:].mean() > h[:5].mean()
    assert res.wall_s < 60


def test_setups_and_baselines():
    s = tuning.tune_setup("e3")
    b = tuning.fluid_baselines(s)
    assert b["fluid"].shape == (4,) and b["practical"].shape == (4,)
    # The default lam prices 1% of throughput like 10% of the fluid latency.
    assert s.lam == pytest.approx(0.1 * s.throughput_star / s.latency_fluid)
    assert tuning.tune_setup("e4").config.num_thresholds == 10
    with pytest.raises(ConfigError, match="name"):
        tuning.tune_setup("e9")


def _tiny_nested_setup() -> tuning.TuneSetup:
    # Nested WAIT, 2 types (stages 0..2 and 3..5), 1 + 1 req/s, d0 = 1 s: n = (4, 4) serves up
    # to 4 entries per ~1 s iteration (stable); n = (1, 1) serves at most 1 of the 2 arrivals
    # per second, so the backlog grows by ~1 req/s and overruns the Q = 128 slot table.
    config = KVConfig(
        prefill_tokens=(2, 2),
        decode_tokens=(2, 5),
        policy="nested_wait",
        num_requests=400,
        table_size=128,
        max_steps=20_000,
    )
    return tuning.TuneSetup(
        name="tiny",
        config=config,
        rates=(1.0, 1.0),
        d0_s=1.0,
        d1_s_per_token=0.005,
        capacity_tokens=10_000,
        lam=1.0,
        memory_weight=0.0,
        throughput_star=1.0,
        latency_fluid=1.0,
        relaxed=R.RelaxedConfig(steps=10, burn_steps=1, samples=1),
    )


@pytest.mark.filterwarnings("ignore:kv.*")  # the overloaded arm fills the table
def test_exact_comparison_refuses_an_overloaded_arm():
    setup = _tiny_nested_setup()
    stable = tuning.exact_comparison(setup, {"tuned": np.array([4, 4]), "other": np.array([4, 4])}, [0, 1])
    assert stable["valid"] and stable["issues"] == {"tuned": [], "other": []}
    cmp = tuning.exact_comparison(setup, {"tuned": np.array([4, 4]), "fluid": np.array([1, 1])}, [0, 1])
    assert not cmp["valid"] and cmp["issues"]["tuned"] == []
    assert any("table" in msg for msg in cmp["issues"]["fluid"])
    assert any("not completed" in msg for msg in cmp["issues"]["fluid"])
    assert "NO (an arm is unstable)" in cmp["diff_table"] and "NO: " in cmp["table"]


def test_stability_issues_names_every_failure():
    ok = {
        "num_dropped": np.zeros(2),
        "table_overflow": np.zeros(2),
        "num_arrived": np.full(2, 9.0),
        "num_completed": np.full(2, 9.0),
        "done": np.ones(2),
        "stalled": np.zeros(2),
    }
    assert tuning.stability_issues(ok, 9) == [] and tuning.stability_issues(ok, None) == []
    bad = dict(
        ok,
        num_dropped=np.array([0.0, 2.0]),
        table_overflow=np.array([1.0, 0.0]),
        num_completed=np.array([9.0, 6.0]),
        done=np.array([1.0, 0.0]),
        stalled=np.array([1.0, 0.0]),
    )
    assert tuning.stability_issues(bad, 9) == [
        "2 dropped arrivals",
        "1 arrivals lost to a full request table",
        "3 requests not completed",
        "1 seeds not finished",
        "1 seeds stalled",
    ]


def test_e4_table_outlasts_the_longest_stay():
    # The ring table needs Q > arrivals during the longest stay, (l'_max + 1) n_1* = 16.3k.
    s = tuning.tune_setup("e4")
    assert s.config.table_size >= 1.5 * (max(s.config.decode_tokens) + 1) * 32.5


def test_exact_objective_is_the_steady_window():
    # With a burn-in K the exact objective reads the window's throughput and the latency of the
    # measured requests; a stable arm's window settles, so the comparison stays valid.
    import dataclasses

    setup = dataclasses.replace(_tiny_nested_setup(), burn_in=60)
    m = tuning.exact_objective(setup, np.array([4, 4]), [0, 1])
    assert np.allclose(m["objective"], m["window_throughput_tokens_per_s"] - setup.lam * m["latency_mean_s"])
    assert np.all(m["window_throughput_tokens_per_s"] != m["throughput_tokens_per_s"])
    cmp = tuning.exact_comparison(setup, {"tuned": np.array([4, 4]), "other": np.array([5, 4])}, [0, 1])
    assert cmp["valid"], cmp["issues"]
    assert tuning.tune_setup("e3").burn_in == 12_000 // 6


def test_integer_search_starts_inside_the_stage0_bound():
    # E4's relaxation tuned n_1 = 30.9 below ceil(Lambda dT*) = 33; a +-1 search from 31 would
    # never reach the bound, so it starts at 33 (the other thresholds untouched).
    start = tuning.search_start([30.9, 20.4, 1.0], 33)
    assert start.tolist() == [33.0, 20.4, 1.0]
    assert tuning.search_start([34.2, 2.0], 33).tolist() == [34.2, 2.0]
