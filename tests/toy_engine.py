"""A seventh engine built from outside the package, by the recipe "How to add an engine from
your own code" (docs/contributing.md): one module with Config, Params, State, pure functions, a policy `Registry`
and one `Engine` value built from them, then `register_engine`. tests/core/test_recipes.py registers it and
runs the conformance kit, a sweep and a policy added with `register_policy` on it.

The model: one server and n jobs present at t = 0, job i of run `seed` needing 1..max_size
units of work (a hash of (seed, i)); each step the policy picks one unfinished job and the
server does one unit of it. Metrics: the mean completion step and the jobs finished.
"""

from __future__ import annotations

from dataclasses import dataclass

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from jaxsched import rng
from jaxsched.engine import Engine, Metric
from jaxsched.errors import require_float, require_int
from jaxsched.registry import Registry, register_engine

# ------------------------------------------------------------------ policies (one signature)
# policy(config, params, remaining int32[n]) -> int32 job index among the unfinished ones
# (config, params, then what the engine shows the policy, as in every engine).


def fifo(config, params, remaining: jnp.ndarray) -> jnp.ndarray:
    """The unfinished job with the lowest index."""
    return jnp.argmax(remaining > 0).astype(jnp.int32)


def shortest_first(config, params, remaining: jnp.ndarray) -> jnp.ndarray:
    """The unfinished job with the least work left (ties: lowest index)."""
    big = jnp.iinfo(jnp.int32).max
    return jnp.argmin(jnp.where(remaining > 0, remaining, big)).astype(jnp.int32)


POLICIES = Registry("toy", "policy")
POLICIES.register("fifo", fifo, "the lowest-index unfinished job", builtin=True)
POLICIES.register("shortest_first", shortest_first, "the least work left first", builtin=True)


# ------------------------------------------------------------------ config, params, state
@dataclass(frozen=True)
class ToyConfig:
    """num_jobs n, max_size (units of work), policy (a name in POLICIES)."""

    num_jobs: int = 8
    max_size: int = 5
    policy: str = "fifo"

    def __post_init__(self):
        require_int(self.num_jobs, "num_jobs", lo=1, hi=4096)
        require_int(self.max_size, "max_size", lo=1, hi=1000)
        POLICIES.require(self.policy, "policy")


class ToyParams(eqx.Module):
    """step_s: seconds per unit of work (float32)."""

    step_s: jnp.ndarray


def make_params(config: ToyConfig, *, step_s: float = 1.0) -> ToyParams:
    return ToyParams(jnp.float32(require_float(step_s, "step_s", lo=0.0, lo_open=True)))


class ToyState(eqx.Module):
    remaining: jnp.ndarray  # int32[n] units left per job
    finish: jnp.ndarray  # int32[n] completion step (0 while unfinished)
    step: jnp.ndarray  # int32 steps taken


# ------------------------------------------------------------------ pure functions
def init(config: ToyConfig, params: ToyParams, seed) -> ToyState:
    ids = jnp.arange(config.num_jobs, dtype=jnp.uint32)
    size = rng.hash3(jnp.asarray(seed, jnp.uint32), ids, 40) % config.max_size + 1
    n = config.num_jobs
    return ToyState(size.astype(jnp.int32), jnp.zeros((n,), jnp.int32), jnp.int32(0))


def done(config: ToyConfig, state: ToyState):
    return jnp.all(state.remaining == 0, axis=-1)


def step(config: ToyConfig, params: ToyParams, state: ToyState, record: bool):
    live = ~done(config, state)
    j = POLICIES[config.policy].fn(config, params, state.remaining)
    work = jnp.zeros_like(state.remaining).at[j].set(live.astype(jnp.int32))
    remaining = state.remaining - work
    k = state.step + live.astype(jnp.int32)
    finish = jnp.where((state.remaining > 0) & (remaining == 0), k, state.finish)
    new = ToyState(remaining, finish, k)
    return new, ({"job": jnp.where(live, j, -1)} if record else None)


METRICS = {
    "mean_completion_s": Metric("s", "mean over jobs of the completion time"),
    "num_finished": Metric("count", "jobs finished"),
}


def finalize(config: ToyConfig, params: ToyParams, state: ToyState) -> dict[str, np.ndarray]:
    finish = np.asarray(state.finish, np.float64)
    ok = finish > 0
    mean = np.where(ok.any(-1), (finish * ok).sum(-1) / np.maximum(ok.sum(-1), 1), np.nan)
    return {"mean_completion_s": mean * float(params.step_s), "num_finished": ok.sum(-1).astype(np.float64)}


def max_steps(config: ToyConfig) -> int:
    return config.num_jobs * config.max_size


def peak_bytes(config: ToyConfig, record: bool) -> int:
    return 16 * config.num_jobs + (4 * max_steps(config) if record else 0)


ENGINE = Engine(
    name="toy",
    Config=ToyConfig,
    Params=ToyParams,
    METRICS=METRICS,
    POLICIES=POLICIES,
    make_params=make_params,
    init=init,
    step=step,
    done=done,
    finalize=finalize,
    max_steps=max_steps,
    working_set_bytes=lambda config: 8 * config.num_jobs,
    peak_bytes=peak_bytes,
    example=lambda: ToyConfig(num_jobs=6, max_size=4),
)


def register() -> None:
    """Register the toy engine (`jaxsched.registry.register_engine`)."""
    register_engine("toy", ENGINE, "one server, n jobs at t = 0 (a recipe test)", policies="tests.toy_engine:POLICIES")
