"""Validation of DPConfig, make_params and simulate's run arguments.

Every invalid value must raise one jaxsched.ConfigError (a ValueError) whose message names the
field and states the allowed range, when the object is built: before anything is traced or
compiled.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from jaxsched import (
    BurstGPTLike,
    ConfigError,
    Constant,
    Geometric,
    Independent,
    Trace,
    kernels,  # noqa: F401  (imported up front: DPConfig imports it lazily for the bfio bound)
)
from jaxsched.dp import DPConfig, make_params, simulate
from jaxsched.dp.config import DRIFT_MAX, LOAD_LIMIT, STEP_LIMIT
from jaxsched.workload import INT32_MAX

SMALL = dict(
    num_workers=2,
    slots_per_worker=2,
    pool_size=2,
    num_steps=5,
    policy="fcfs",
    workload=Independent(Constant(5), Constant(3)),
)


def _raises(fn, *patterns: str) -> ConfigError:
    """fn() raises ConfigError (and nothing else) whose message matches every regex."""
    with pytest.raises(Exception) as info:
        fn()
    err = info.value
    assert type(err) is ConfigError, f"{type(err).__name__}: {err}"
    assert isinstance(err, ValueError)
    msg = str(err)
    for pat in patterns:
        assert re.search(pat, msg), f"{pat!r} not in {msg!r}"
    return err


# ---------------------------------------------------------------------------------------------
# DPConfig
# ---------------------------------------------------------------------------------------------
SHAPE_FIELDS = {
    "num_workers": r"num_workers \(G\)",
    "slots_per_worker": r"slots_per_worker \(B\)",
    "pool_size": r"pool_size \(R\)",
}
BAD_SHAPES = [0, -1, -64, 2.0, 2.5, True, False, "4", None, 65537]


@pytest.mark.parametrize("field", list(SHAPE_FIELDS))
@pytest.mark.parametrize("value", BAD_SHAPES, ids=repr)
def test_bad_shapes(field: str, value) -> None:
    _raises(
        lambda: DPConfig(**{**SMALL, field: value}),
        SHAPE_FIELDS[field],
        r"an integer",
        r">= 1",
        r"<= 65536",
        re.escape(f"got {value!r}"),
    )


@pytest.mark.parametrize("field", list(SHAPE_FIELDS))
def test_numpy_integer_shapes_are_accepted(field: str) -> None:
    cfg = DPConfig(**{**SMALL, field: np.int64(3)})
    assert getattr(cfg, field) == 3


@pytest.mark.parametrize("value", [-1, -100, 1.0, True, 4097])
def test_bad_lookahead_steps(value) -> None:
    _raises(
        lambda: DPConfig(**{**SMALL, "lookahead_steps": value}),
        r"lookahead_steps \(H\)",
        r">= 0",
        r"<= 4096",
        re.escape(repr(value)),
    )


@pytest.mark.parametrize("value", [0, -1, 10.0, True, INT32_MAX])
def test_bad_num_steps(value) -> None:
    _raises(lambda: DPConfig(**{**SMALL, "num_steps": value}), r"num_steps", r">= 1", r"<= \d+", re.escape(repr(value)))


@pytest.mark.parametrize("burn_in,num_steps", [(300, 300), (301, 300), (1, 1), (-1, 300), (1.5, 300)])
def test_bad_burn_in_steps(burn_in, num_steps) -> None:
    hi = num_steps - 1
    _raises(
        lambda: DPConfig(
            **{
                **SMALL,
                "semantics": "theory",
                "workload": BurstGPTLike(),
                "burn_in_steps": burn_in,
                "num_steps": num_steps,
            }
        ),
        r"burn_in_steps",
        r">= 0",
        rf"<= {hi}\b",
        re.escape(repr(burn_in)),
    )


def test_burn_in_just_below_num_steps_is_accepted() -> None:
    cfg = DPConfig(
        **{**SMALL, "semantics": "theory", "workload": BurstGPTLike(), "burn_in_steps": 299, "num_steps": 300}
    )
    assert cfg.burn_in_steps == 299


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("policy", "sjf", r"fcfs.*bfio"),
        ("policy", "BFIO", r"fcfs.*bfio"),
        ("policy", None, r"fcfs.*bfio"),
        ("semantics", "exact", r"paper.*theory"),
        ("predictor", "perfect", r"oracle.*noisy.*classifier"),
        ("delay_bins", 1, r">= 2"),
        ("lookahead_decay", 0.0, r"> 0\.0 and <= 1\.0"),
        ("lookahead_decay", 1.5, r"> 0\.0 and <= 1\.0"),
        ("lookahead_decay", float("nan"), r"finite"),
        ("workload", "burstgpt", r"jaxsched\.workload"),
    ],
)
def test_bad_choice_fields(field: str, value, allowed: str) -> None:
    _raises(lambda: DPConfig(**{**SMALL, field: value}), rf"^{field}\b", allowed, re.escape(repr(value)))


def test_theory_semantics_needs_unbounded_stream() -> None:
    seq = Trace(np.array([5, 6, 7]), np.array([1, 2, 3]), order="sequential")
    _raises(
        lambda: DPConfig(**{**SMALL, "semantics": "theory", "workload": seq}),
        r"semantics 'theory'",
        r"unbounded",
        r"num_requests = 3",
        r"resample",
    )
    # the same trace resampled is fine
    DPConfig(
        **{
            **SMALL,
            "semantics": "theory",
            "workload": Trace(np.array([5, 6, 7]), np.array([1, 2, 3]), order="resample"),
        }
    )


def test_load_overflow_boundary() -> None:
    # loads are int32 and must keep 2^24 headroom: G * B * (max prompt + max output) <= LOAD_LIMIT.
    # With prompt 2^24 and output 1: 126 * (2^24 + 1) fits, 127 * (2^24 + 1) does not.
    wl = Independent(Constant(2**24), Constant(1))
    assert 126 * (2**24 + 1) <= LOAD_LIMIT < 127 * (2**24 + 1)
    DPConfig(**{**SMALL, "num_workers": 1, "slots_per_worker": 126, "workload": wl})
    _raises(
        lambda: DPConfig(**{**SMALL, "num_workers": 1, "slots_per_worker": 127, "workload": wl}),
        r"num_workers",
        r"slots_per_worker",
        r"overflow int32",
        rf"<= {LOAD_LIMIT}",
    )
    _raises(
        lambda: DPConfig(**{**SMALL, "num_workers": 2, "slots_per_worker": 64, "workload": wl}),
        r"overflow int32",
        r"2 \* 64 \* 16777217",
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_workers=65536, slots_per_worker=2, workload=BurstGPTLike()),  # 17323 tokens each
        dict(num_workers=1, slots_per_worker=65536, workload=Independent(Constant(2**15), Geometric(0.5))),
        dict(num_workers=65536, slots_per_worker=65536, workload=Independent(Constant(1), Constant(1))),
        dict(num_workers=1, slots_per_worker=1000, workload=Trace(np.array([2**24, 1]), np.array([2**24, 1]))),
    ],
    ids=["burstgpt_like", "geometric_output", "tiny_lengths", "trace"],
)
def test_huge_loads_overflow(kwargs) -> None:
    _raises(lambda: DPConfig(**{**SMALL, **kwargs}), r"overflow int32", rf"<= {LOAD_LIMIT}")


def test_bfio_lookahead_score_overflow() -> None:
    # G * B * max_len is fine, but the H-row lookahead score sum(w) * (G + 1) * max prompt is not
    wl = Independent(Constant(2**20), Constant(1))
    ok = dict(SMALL, num_workers=16, slots_per_worker=1, workload=wl, policy="bfio")
    DPConfig(**{**ok, "lookahead_steps": 0})
    _raises(
        lambda: DPConfig(**{**ok, "lookahead_steps": 8}),
        r"lookahead score",
        r"lookahead_steps \(H\)",
        r"overflow int32",
        rf"<= {LOAD_LIMIT}",
    )
    DPConfig(**{**ok, "lookahead_steps": 8, "policy": "fcfs"})  # only bfio scores the window


# ---------------------------------------------------------------------------------------------
# drift (theory semantics only)
# ---------------------------------------------------------------------------------------------
THEORY = dict(SMALL, semantics="theory")
PAIR = rf"a pair \(lo, hi\) of integers with 0 <= lo <= hi <= {DRIFT_MAX}"


@pytest.mark.parametrize(
    "value,field,allowed",
    [
        (1, r"drift", PAIR),
        (None, r"drift", PAIR),
        ((1,), r"drift", PAIR),
        ((0, 1, 2), r"drift", PAIR),
        ("01", r"drift", PAIR),
        ((2, 1), r"drift", PAIR),  # lo > hi
        ((-1, 2), r"drift lo", rf">= 0 and <= {DRIFT_MAX}"),
        ((0, DRIFT_MAX + 1), r"drift hi", rf">= 0 and <= {DRIFT_MAX}"),
        ((0.0, 2), r"drift lo", r"an integer"),
        ((0, 2.5), r"drift hi", r"an integer"),
        ((True, 2), r"drift lo", r"an integer"),
    ],
    ids=repr,
)
def test_bad_drift(value, field: str, allowed: str) -> None:
    _raises(lambda: DPConfig(**{**THEORY, "drift": value}), rf"^{field} must", allowed)


@pytest.mark.parametrize("value", [(0, 0), (0, 2), (1, 4), (2, 2), (0, 1)])
def test_drift_other_than_one_needs_theory(value) -> None:
    _raises(
        lambda: DPConfig(**{**SMALL, "drift": value}),
        r"^drift must",
        r"\(1, 1\) with semantics 'paper'",
        r"needs semantics 'theory'",
        re.escape(repr(value)),
    )
    assert DPConfig(**{**THEORY, "drift": value}).drift == value
    assert DPConfig(**{**SMALL, "drift": (1, 1)}).drift == (1, 1)  # the default is fine anywhere


def test_drift_is_normalized_and_hashable() -> None:
    cfg = DPConfig(**{**THEORY, "drift": [np.int64(1), 4]})
    assert cfg.drift == (1, 4) and type(cfg.drift) is tuple and all(type(v) is int for v in cfg.drift)
    assert hash(cfg) == hash(DPConfig(**{**THEORY, "drift": (1, 4)}))
    assert cfg == DPConfig(**{**THEORY, "drift": (1, 4)})
    assert DPConfig(**{**THEORY, "drift": (0, DRIFT_MAX)}).drift == (0, DRIFT_MAX)
    # The lookahead projects the mean drift rounded down.
    assert [
        DPConfig(**{**THEORY, "drift": d}).projection_drift for d in ((0, 0), (0, 1), (0, 2), (1, 4), (1, 1), (3, 3))
    ] == [0, 0, 1, 2, 1, 3]


def test_drift_load_overflow() -> None:
    # A request grows by up to hi tokens per step: loads are bounded by B * (s + hi * o).
    # prompt 2^20, output 2^18, drift hi 64: 2^20 + 64 * 2^18 = 17825792 tokens per slot.
    wl = Independent(Constant(2**20), Constant(2**18))
    kw = dict(THEORY, num_workers=1, slots_per_worker=120, workload=wl)
    assert 120 * (2**20 + 2**18) <= LOAD_LIMIT < 120 * (2**20 + 64 * 2**18)
    DPConfig(**kw)
    DPConfig(**{**kw, "drift": (0, 0)})
    _raises(
        lambda: DPConfig(**{**kw, "drift": (0, 64)}),
        r"drift hi 64 \* max output",
        r"1 \* 120 \* 17825792",
        r"overflow int32",
        rf"<= {LOAD_LIMIT}",
    )


def test_drift_cumulative_overflow() -> None:
    # D_k <= hi * k must stay int32: hi * num_steps <= STEP_LIMIT.
    kw = dict(THEORY, num_steps=STEP_LIMIT // 4)
    DPConfig(**{**kw, "drift": (0, 4)})
    _raises(
        lambda: DPConfig(**{**kw, "drift": (0, 5)}),
        r"drift hi \* num_steps",
        rf"5 \* {STEP_LIMIT // 4}",
        r"cumulative drift",
        rf"<= {STEP_LIMIT}",
    )
    DPConfig(**{**SMALL, "num_steps": STEP_LIMIT})  # the default drift never trips it


def test_drift_projection_overflow() -> None:
    # G=1, B=65536, every request (1, 1): loads are tiny, but each projected row h adds
    # h * floor(mean drift) per slot: 65536 * (65 + 64 * 4096) overflows, (0, 1) projects 0.
    wl = Independent(Constant(1), Constant(1))
    kw = dict(THEORY, num_workers=1, slots_per_worker=65536, workload=wl, policy="bfio", lookahead_steps=4096)
    DPConfig(**{**kw, "drift": (0, 1)})
    DPConfig(**{**kw, "drift": (1, 1)})
    _raises(
        lambda: DPConfig(**{**kw, "drift": (64, 64)}),
        r"projected lookahead loads",
        r"65536 \* \(65 \+ 64 \* 4096\)",
        r"lookahead_steps \(H\)",
        rf"<= {LOAD_LIMIT}",
    )
    DPConfig(**{**kw, "drift": (64, 64), "policy": "fcfs"})  # only the lookahead projects


# ---------------------------------------------------------------------------------------------
# make_params
# ---------------------------------------------------------------------------------------------
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("step_const_s", 0.0, r"> 0\.0"),
        ("step_const_s", 0, r"> 0\.0"),
        ("step_const_s", -1e-3, r"> 0\.0"),
        ("step_const_s", NAN, r"finite"),
        ("step_const_s", True, r"finite number > 0\.0"),
        ("per_token_s", NAN, r"finite number >= 0\.0"),
        ("per_token_s", INF, r"finite"),
        ("per_token_s", -1e-9, r">= 0\.0"),
        ("per_token_s", "fast", r"finite"),
        ("per_token_s", None, r"finite"),
        ("noise_lo", 1.01, r">= 0\.0 and <= 1\.0"),
        ("noise_lo", -0.1, r">= 0\.0 and <= 1\.0"),
        ("noise_hi", 10.5, r">= 0\.0 and <= 10\.0"),
        ("fp_rate", 1.5, r">= 0\.0 and <= 1\.0"),
        ("fn_rate", -0.01, r">= 0\.0 and <= 1\.0"),
        ("idle_power_w", -1.0, r">= 0\.0"),
        ("power_exponent", 0.0, r"> 0\.0"),
    ],
)
def test_bad_params(field: str, value, allowed: str) -> None:
    cfg = DPConfig(**SMALL)
    _raises(lambda: make_params(cfg, **{field: value}), rf"^{field}\b", allowed, re.escape(repr(value)))


def test_max_power_below_idle_power() -> None:
    cfg = DPConfig(**SMALL)
    _raises(
        lambda: make_params(cfg, idle_power_w=300.0, max_power_w=200.0), r"^max_power_w", r">= idle_power_w", r"200\.0"
    )
    make_params(cfg, idle_power_w=300.0, max_power_w=300.0)  # equal is allowed


def test_noise_hi_must_keep_predictions_in_range() -> None:
    # BF-IO with the noisy predictor: the one run that reads noise_hi (make_params refuses it elsewhere).
    cfg = DPConfig(
        **{**SMALL, "workload": Independent(Constant(5), Constant(2**23)), "policy": "bfio", "predictor": "noisy"}
    )
    make_params(cfg, noise_hi=1.0)  # 2^23 * 2 = 2^24: allowed
    _raises(lambda: make_params(cfg, noise_hi=1.5), r"^noise_hi", r"2\^24", r"1\.5")


def test_valid_params_are_float32_scalars() -> None:
    cfg = DPConfig(**{**SMALL, "policy": "bfio", "predictor": "classifier"})  # reads fp_rate
    p = make_params(cfg, step_const_s=0.5, per_token_s=0.0, fp_rate=1.0)
    assert p.step_const_s.dtype == np.float32 and float(p.step_const_s) == 0.5
    assert float(p.per_token_s) == 0.0 and float(p.fp_rate) == 1.0


# ---------------------------------------------------------------------------------------------
# simulate: seeds and seed_chunk
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    cfg = DPConfig(**SMALL)
    return cfg, make_params(cfg)


@pytest.mark.parametrize(
    "seeds",
    [
        [],
        np.array([], np.int64),
        [-1],
        [0, -3],
        [0.0, 1.0],
        [0.5],
        np.array([1.0, 2.0]),
        [[0, 1]],
        3,
        None,
        ["0"],
        [True, False],
        [2**32],
        [0, 2**40],
    ],
    ids=repr,
)
def test_bad_seeds(small, seeds) -> None:
    cfg, params = small
    _raises(lambda: simulate(cfg, params, seeds), r"^seeds must be")


@pytest.mark.parametrize("chunk", [0, -1, 1.5, 2.0, "2", True], ids=repr)
def test_bad_seed_chunk(small, chunk) -> None:
    cfg, params = small
    _raises(
        lambda: simulate(cfg, params, [0, 1, 2], seed_chunk=chunk),
        r"^seed_chunk",
        r"an integer >= 1",
        re.escape(repr(chunk)),
    )


# ---------------------------------------------------------------------------------------------
# Validation happens before anything is compiled
# ---------------------------------------------------------------------------------------------
class _Compiled(AssertionError):
    pass


def test_validation_precedes_compilation(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_jit(*args, **kwargs):
        raise _Compiled("jax.jit was called before the input was validated")

    monkeypatch.setattr(jax, "jit", no_jit)
    # sanity: the patch reaches the code path that compiles (a fresh config misses the cache)
    fresh = DPConfig(**{**SMALL, "num_steps": 7})
    with pytest.raises(_Compiled):
        simulate(fresh, make_params(fresh), [0])
    # bad configs, params and run arguments fail with ConfigError, never reaching jax.jit
    _raises(lambda: DPConfig(**{**SMALL, "num_workers": 0}), r"num_workers")
    _raises(
        lambda: DPConfig(
            **{
                **SMALL,
                "slots_per_worker": 127,
                "num_workers": 1,
                "workload": Independent(Constant(2**24), Constant(1)),
            }
        ),
        r"overflow",
    )
    _raises(lambda: make_params(fresh, step_const_s=0.0), r"step_const_s")
    _raises(lambda: simulate(fresh, make_params(fresh), [-1]), r"seeds")
    _raises(lambda: simulate(fresh, make_params(fresh), []), r"seeds")
    _raises(lambda: simulate(fresh, make_params(fresh), [0, 1], seed_chunk=0), r"seed_chunk")


def test_old_name_horizon_means_lookahead_steps_on_the_command_line(tmp_path, capsys) -> None:
    # `horizon` became `lookahead_steps` (`jaxsched.dp.registry.RENAMED`): `sweep --set` and
    # `--axis`, as flags or in a --config file, take the old name for the new field.
    import csv

    from jaxsched.cli import main
    from jaxsched.cli.sweep import renamed_fields

    assert renamed_fields("dp") == {"horizon": "lookahead_steps"}
    with pytest.raises(TypeError):
        DPConfig(horizon=2)  # the Python API has the new name only
    common = [
        "sweep",
        "--set",
        "num_workers=2",
        "--set",
        "slots_per_worker=4",
        "--set",
        "pool_size=4",
        "--set",
        "policy=bfio",
        "--steps",
        "20",
        "--seeds",
        "1",
        "--quiet",
    ]
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    assert main([*common, "--axis", "horizon=2", "--out", str(old)]) == 0
    assert main([*common, "--axis", "lookahead_steps=2", "--out", str(new)]) == 0
    (r_old,), (r_new,) = (list(csv.DictReader(p.open())) for p in (old, new))
    assert r_old["key"] == r_new["key"] and r_old["point"] == r_new["point"]
    assert r_old["lookahead_steps"] == "2" and "horizon" not in r_old
    conf = tmp_path / "c.toml"  # the same point from a file: resumed
    conf.write_text(
        'axis = ["policy=bfio"]\nsteps = 20\nseeds = 1\nquiet = true\nset = '
        '["num_workers=2", "slots_per_worker=4", "pool_size=4", "horizon=2"]\n'
    )
    assert main(["sweep", "--config", str(conf), "--out", str(new)]) == 0
    assert len(list(csv.DictReader(new.open()))) == 1
    capsys.readouterr()
    assert main([*common, "--set", "horizon=1", "--axis", "lookahead_steps=1,2", "--out", str(new)]) == 2
    assert "also fixed by --set" in capsys.readouterr().err
