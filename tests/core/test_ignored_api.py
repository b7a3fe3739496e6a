"""Options a run ignores, refused through the Python API as on the command line.

The make_params of dp, offline, kv and budget refuse a config field set away from its default,
or a keyword given, that the run's settings ignore (the readers are the registries' options and
dp's predictor table, as for the command line's flags); the refused cases are in
`core/test_bad_inputs.py`. Here: what the settings read is accepted, a value at its default is
never refused, and `errors.as_one_grid` refuses only an option that no point of the grid reads.
Nothing here compiles.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched import budget, dp, kv, offline
from jaxsched.errors import ConfigError, as_one_grid, changed_keywords, refuse_ignored
from jaxsched.workload import Batch, Independent

SMALL = dict(num_workers=2, slots_per_worker=2, pool_size=2, num_steps=10)


def _dp(**kw) -> dp.DPConfig:
    return dp.DPConfig(**{**SMALL, **kw})


def _off(**kw) -> offline.OfflineConfig:
    return offline.OfflineConfig(Batch(Independent(), 4), **kw)


def test_options_the_settings_read_pass():
    p = dp.make_params(_dp(predictor="noisy"), noise_lo=0.1, noise_hi=0.3)
    assert float(p.noise_hi) == pytest.approx(0.3)
    dp.make_params(_dp(predictor="classifier", lookahead_steps=2, lookahead_decay=0.5), fp_rate=0.1, fn_rate=0.2)
    # A policy set reads what any of its policies reads.
    dp.make_params(_dp(policy="fcfs", policy_set=("fcfs", "bfio"), lookahead_steps=2, predictor="noisy"), noise_hi=0.2)
    offline.make_params(_off(policy="sorted_f_scaled", epsilon=0.2, scale_b=50))
    offline.make_params(_off(policy="sorted_f_quantile", quantile=0.5, sample_fraction=0.2))
    kv.make_params(kv.KVConfig(policy="sarathi"), chunk_size=64, block_size=8, watermark=0.1, batch_size_cap=8)
    kv.make_params(kv.KVConfig(policy="vllm"), max_tokens_in_batch=8192)
    budget.make_params(budget.BudgetConfig(policy="vllm", horizon_s=10.0), prefill_cap=600)
    budget.make_params(budget.BudgetConfig(policy="wc", horizon_s=10.0), K_p=4, K_d=2)


def test_options_at_their_defaults_are_never_refused():
    # Each value equals its default, given explicitly, with a policy that does not read it.
    dp.make_params(_dp(policy="fcfs", lookahead_steps=0, bfio_kernel="vf", lookahead_decay=0.7), noise_hi=0.0)
    dp.make_params(_dp(policy="jsq_tokens", predictor="oracle"), noise_lo=0, fp_rate=0.0, fn_rate=0.0)
    offline.make_params(_off(policy="fcfs", epsilon=0.1, dp_width=256, quantile=0.3))
    kv.make_params(kv.KVConfig(policy="wait"), chunk_size=512, block_size=16, watermark=0.01, batch_size_cap=128)
    budget.make_params(budget.BudgetConfig(horizon_s=10.0), prefill_cap=None, K_p=None, K_d=None)


def test_changed_keywords_compares_with_the_signature_defaults():
    def f(a, *, b=1, c=None, d=(1, 2)):
        return a

    assert changed_keywords(f, dict(b=1, c=None, d=(1, 2))) == []
    assert changed_keywords(f, dict(b=2, c=0, d=(1, 3))) == ["b", "c", "d"]  # 0 is not None
    assert changed_keywords(f, dict(b=np.float64(1.0), c=np.zeros(2))) == ["c"]  # an array is never a default


def test_a_grid_accepts_an_option_that_one_point_reads():
    # A comparison of FCFS and BF-IO with one base config and one set of keywords: the noise
    # is BF-IO's, FCFS runs as it would without it.
    with as_one_grid():
        fcfs, bfio = (dp.make_params(_dp(policy=p, predictor="noisy"), noise_hi=0.3) for p in ("fcfs", "bfio"))
    assert float(fcfs.noise_hi) == float(bfio.noise_hi) == pytest.approx(0.3)
    # A block inside another joins it: the outer block's BF-IO point reads the inner's option.
    with as_one_grid():
        with as_one_grid():
            dp.make_params(_dp(policy="fcfs", lookahead_steps=2))
        dp.make_params(_dp(policy="bfio", lookahead_steps=2))
    # Alone, the FCFS point is refused at once: the grid's state does not outlive the block.
    with pytest.raises(ConfigError, match=r"^predictor is read only by policy bfio; policy fcfs ignores it$"):
        dp.make_params(_dp(policy="fcfs", predictor="noisy"), noise_hi=0.3)


def test_a_grid_refuses_an_option_no_point_reads_on_leaving():
    built = []
    with pytest.raises(
        ConfigError, match=r"^chunk_size is read only by policy sarathi; policies wait, fcfs ignore it$"
    ):
        with as_one_grid():
            for p in ("wait", "fcfs"):
                built.append(kv.make_params(kv.KVConfig(policy=p), chunk_size=64))
    assert len(built) == 2  # every point was built: the grid decides when it is complete
    # A block left by another error lets that error through and leaves no grid behind.
    with pytest.raises(ZeroDivisionError), as_one_grid():
        dp.make_params(_dp(policy="fcfs"), noise_hi=0.3)
        1 / 0
    with pytest.raises(ConfigError, match=r"^noise_hi"):
        dp.make_params(_dp(policy="fcfs"), noise_hi=0.3)


def test_a_grid_refuses_bad_values_and_exclusive_options_at_once():
    with as_one_grid():
        with pytest.raises(ConfigError, match=r"^noise_hi must be"):
            dp.make_params(_dp(policy="bfio", predictor="noisy"), noise_hi=-1.0)
        with pytest.raises(ConfigError, match=r"^rate and load are exclusive"):
            refuse_ignored(["rate", "load"], {}, {}, [("rate", "load", "load sets the rate")])


class ReachedCompilation(Exception):
    """Raised by the guard: every point was accepted and the runner was about to compile."""


@pytest.fixture
def no_compile(monkeypatch):
    import jaxsched.run

    def refuse(*args, **kwargs):
        raise ReachedCompilation

    monkeypatch.setattr(jaxsched.run, "_compiled", refuse)


def test_a_sweep_over_policies_shares_an_option_that_one_of_them_reads(tmp_path, no_compile):
    from jaxsched.sweep import run_sweep

    base = _dp(predictor="noisy", lookahead_steps=2)
    with pytest.raises(ReachedCompilation):  # FCFS's points accepted: BF-IO's read the options
        run_sweep(base, {"policy": ["fcfs", "bfio"]}, [0], tmp_path / "a.csv", params={"noise_hi": 0.3}, progress=False)
    message = r"^noise_hi is read only by policy bfio; policies fcfs, jsq_tokens ignore it$"
    with pytest.raises(ConfigError, match=message):
        run_sweep(_dp(), {"policy": ["fcfs", "jsq_tokens"]}, [0], tmp_path / "b.csv", params={"noise_hi": 0.3})


def test_a_comparison_of_policies_shares_the_predictor_keywords(no_compile):
    from jaxsched.dp.experiments import parse_policies, run_policies

    with pytest.raises(ReachedCompilation):
        run_policies(_dp(predictor="noisy"), parse_policies("fcfs,bfio:2"), [0], params_kw={"noise_hi": 0.3})
    with pytest.raises(ConfigError, match=r"^predictor is read only by policy bfio; policies fcfs, jsq_count ignore"):
        run_policies(_dp(predictor="noisy"), parse_policies("fcfs,jsq_count"), [0], params_kw={"noise_hi": 0.3})
