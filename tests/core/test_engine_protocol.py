"""The engine protocol and the shared runner: every engine fits them the same way."""

from __future__ import annotations

import dataclasses
import io
import warnings

import numpy as np
import pytest

import jaxsched as js
from jaxsched import ConfigError, dp, kv
from jaxsched.engine import Engine, engine_of, get_engine
from jaxsched.progress import Progress
from jaxsched.registry import ENGINES
from jaxsched.run import Results, default_seed_chunk, seeds_for_budget, simulate
from jaxsched.workload import Batch, BurstGPTLike

# Each engine's own small example (`Engine.example`, the conformance kit's configuration).
SMALL = {name: get_engine(name).example() for name in ENGINES}


# The protocol's tables, registries and pure steps: tests/core/test_conformance.py (the kit).


@pytest.mark.parametrize("name", list(ENGINES))
def test_runner_results_and_metric_table_agree(name):
    cfg = SMALL[name]
    eng = get_engine(name)
    calls = []
    res = simulate(cfg, seeds=[3, 1, 2], progress=lambda d, t: calls.append((d, t)))
    assert isinstance(res, Results) and res.engine == name and res.trajectories is None
    assert list(res.metrics) == list(eng.METRICS)  # finalize gives exactly the table
    assert all(v.dtype == np.float64 and v.shape == (3,) for v in res.metrics.values())
    assert res.seeds.tolist() == [3, 1, 2] and calls and calls[-1][0] == calls[-1][1]
    assert calls[0][0] == 0 and calls[0][1] == calls[-1][1]  # shown before any block runs
    # Default params are make_params(config); an explicit engine gives the same numbers.
    again = simulate(cfg, eng.make_params(cfg), [3, 1, 2], engine=eng, seed_chunk=2, record=True)
    for k in res.metrics:
        assert res.metrics[k].tobytes() == again.metrics[k].tobytes(), k
    assert again.trajectories and all(v.shape[0] == 3 for v in again.trajectories.values())


def test_engine_lookup_errors_name_the_choices():
    with pytest.raises(
        ConfigError,
        match=r"engine must be one of \('dp', 'kv', 'offline', 'interval', "
        r"'budget', 'network'\)",
    ):
        get_engine("fluid")
    with pytest.raises(ConfigError, match="config must be the Config of an engine"):
        engine_of(object())
    with pytest.raises(ConfigError, match="seed_chunk"):
        simulate(SMALL["dp"], seeds=[0], seed_chunk=0)


def test_chunk_sizes_follow_the_engine_estimates():
    cfg = SMALL["dp"]
    assert seeds_for_budget(dp.ENGINE, cfg, 1e-6) == 1
    assert seeds_for_budget(dp.ENGINE, cfg, 1.0) == int(2**20 // dp.ENGINE.peak_bytes(cfg, False))
    assert dp.ENGINE.peak_bytes(cfg, True) > dp.ENGINE.peak_bytes(cfg, False)
    n = default_seed_chunk(kv.ENGINE, SMALL["kv"], 1000)
    assert 1 <= n <= 1000 and -(-1000 // n) * n - 1000 < -(-1000 // n)  # equal chunks, little padding


def test_kv_warnings_come_through_the_runner():
    cfg = dataclasses.replace(SMALL["kv"], max_steps=3)
    with pytest.warns(RuntimeWarning, match="did not finish within max_steps"):
        simulate(cfg, seeds=[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(cfg, seeds=[0], warn=False)


def test_kv_default_params_are_the_documented_load():
    cfg = kv.KVConfig(prefill_tokens=(10, 5), decode_tokens=(20, 4))
    p = kv.make_params(cfg)
    rates = kv.default_rates(cfg)
    work = kv.config.work_per_request(cfg)
    assert rates[0] == rates[1] and float(np.dot(rates, work)) * 1e-6 == pytest.approx(0.5)
    assert float(p.d0_s) == np.float32(0.01) and int(p.capacity_tokens) == 110_000
    with pytest.raises(ConfigError, match="d1_s_per_token"):
        kv.make_params(cfg, d1_s_per_token=0.0)


def test_batch_generator_is_jobs_at_time_zero():
    b = Batch(BurstGPTLike(), 5)
    prompt, output = b.jobs(7)
    p2, o2 = BurstGPTLike().sample(np.uint32(7), np.arange(5, dtype=np.int32))
    assert prompt.tolist() == np.asarray(p2).tolist() and output.tolist() == np.asarray(o2).tolist()
    assert np.asarray(b.arrival_s(7, np.arange(5))).tolist() == [0.0] * 5
    assert b.num_requests == 5 and b.name == "burstgpt_like_batch5"
    with pytest.raises(ConfigError, match="Batch.num_requests"):
        Batch(BurstGPTLike(), 0)


def test_progress_line_counts_and_eta():
    out = io.StringIO()
    bar = Progress("demo", 4, stream=out)
    bar.update(0)
    assert "0/4" in out.getvalue() and "ETA ?" in out.getvalue()  # no rate before any work
    bar.advance(2, "half")
    assert "50%" in out.getvalue() and "2/4" in out.getvalue() and "half" in out.getvalue()
    assert bar.eta_s() > 0
    bar.close("done")
    text = out.getvalue()
    assert text.endswith("\n") and "done" in text
    quiet = io.StringIO()
    Progress("x", 1, enabled=False, stream=quiet).advance(1)
    assert quiet.getvalue() == ""


def test_top_level_names_no_engine_silently():
    # The top level shows the shared tools and the engine packages, not one engine's config.
    assert not hasattr(js, "DPConfig") and not hasattr(js, "make_params")
    assert js.simulate is simulate and js.dp.simulate is simulate and js.kv.simulate is simulate


def test_every_engine_is_an_attribute_of_the_package():
    import importlib

    assert js.ENGINES == ENGINES.names() and set(js.ENGINES) <= set(js.__all__)
    for name in js.ENGINES:
        assert getattr(js, name) is importlib.import_module(f"jaxsched.{name}")


def test_engines_are_values_built_from_functions():
    # No wiring classes: every engine is an `Engine` value whose model entries are the plain
    # module functions of its package.
    import importlib

    for name in ENGINES:
        eng = get_engine(name)
        assert type(eng) is Engine, name
        mod = importlib.import_module(f"jaxsched.{name}.engine")
        assert eng.step is mod.step and eng.init is mod.init and eng.done is mod.done, name


def test_engine_value_errors_name_the_field():
    dp = get_engine("dp")
    with pytest.raises(ConfigError, match="step_unit must be one of"):
        dataclasses.replace(dp, step_unit="tick")
    with pytest.raises(ConfigError, match="'dp2': step must be a function"):
        dataclasses.replace(dp, name="dp2", step=3)
    with pytest.raises(ConfigError, match="'lookahead' .* is not a field of DPConfig"):
        dataclasses.replace(dp, size_fields=("lookahead",))
    with pytest.raises(ConfigError, match="POLICIES must be"):
        dataclasses.replace(dp, POLICIES={})


def test_replace_rederives_the_default_hints():
    # trajectory_length defaults to max_steps: a replaced max_steps is the one read, not the
    # original engine's (dataclasses.replace hands the old default back to __post_init__).
    dp = get_engine("dp")
    cfg = dp.example()
    longer = dataclasses.replace(dp, max_steps=lambda config: 7 * config.num_steps)
    assert dp.trajectory_length(cfg, {}) == cfg.num_steps
    assert longer.trajectory_length(cfg, {}) == 7 * cfg.num_steps
    assert dp.can_switch(cfg) and not dataclasses.replace(dp, switch=None, can_switch=None).can_switch(cfg)
    with pytest.raises(NotImplementedError, match="'dp' declares no example"):
        dataclasses.replace(dp, example=None).example()


def test_pad_checks_before_the_engine_pads():
    from jaxsched.dp import DPConfig

    dp = get_engine("dp")
    ms = DPConfig(num_workers=3, slots_per_worker=4, pool_size=4, num_steps=10, policy="bfio", bfio_kernel="ms_ls")
    assert not dp.can_pad(ms)
    with pytest.raises(ConfigError, match="bfio_kernel 'ms_ls' does not run padded"):
        dp.pad(ms, dp.make_params(ms), {"num_workers": 4})
    cfg = dp.example()
    with pytest.raises(ConfigError, match="config must be a DPConfig"):
        dp.pad(get_engine("kv").example(), dp.make_params(cfg), {})
    bucket, params = dp.pad(cfg, dp.make_params(cfg), {"num_workers": 5})
    assert bucket.num_workers == 5 and int(params.sizes.num_workers) == cfg.num_workers
    with pytest.raises(ConfigError, match="params already padded"):
        dp.pad(cfg, params, {"num_workers": 5})
    assert not dataclasses.replace(dp, pad_into=None).can_pad(cfg)
