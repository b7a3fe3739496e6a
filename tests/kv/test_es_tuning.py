"""`jaxsched.kv.tuning.es_experiment`: the evolution strategy on the exact engine scores its
candidates with the gradient tuner's exact objective, starts from the fluid thresholds and
compares its best against them on the held-out seeds. Slow (E3's exact runs): `-m slow`."""

from __future__ import annotations

import numpy as np
import pytest

from jaxsched.kv.tuning import es_experiment, exact_objective, fluid_baselines


@pytest.mark.slow
def test_es_scores_with_the_exact_objective_and_starts_at_the_fluid_thresholds():
    out = es_experiment("e3", population=4, generations=1, train_seeds=[0, 1], seeds=[1000, 1001])
    res, setup = out["search"], out["setup"]
    fluid = tuple(int(x) for x in fluid_baselines(setup)["fluid"])
    assert res.history[0]["thresholds"] == fluid
    for h in res.history[:2]:
        own = exact_objective(setup, np.asarray(h["thresholds"]), [0, 1])["objective"]
        assert np.isclose(h["objective"], own.mean(), rtol=1e-12)
    assert set(out["exact"]) == {"tuned", "fluid", "practical"}
    assert out["tuned"].tolist() == list(res.best["thresholds"])
