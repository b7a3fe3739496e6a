"""benchmarks/step_cost.py counts the kernels of an optimized HLO module: fusions as one, the
bodies of fusions and reductions not at all, free opcodes never, copies by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from benchmarks.step_cost import copied_arrays, count_ops, loop_body, parse_hlo, step_cost

HLO = """HloModule m, entry_computation_layout={(f32[8]{0})->(f32[], f32[8]{0})}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%fused_computation (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %c = f32[] constant(2)
  %bc = f32[8]{0} broadcast(f32[] %c), dimensions={}
  ROOT %m = f32[8]{0} multiply(f32[8]{0} %p, f32[8]{0} %bc)
}

ENTRY %main (x: f32[8]) -> (f32[], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %f = f32[8]{0} fusion(f32[8]{0} %x), kind=kLoop, calls=%fused_computation
  %z = f32[] constant(0)
  %r = f32[] reduce(f32[8]{0} %f, f32[] %z), dimensions={0}, to_apply=%add
  %cp = f32[8]{0} copy(f32[8]{0} %f)
  ROOT %t = (f32[], f32[8]{0}) tuple(f32[] %r, f32[8]{0} %cp)
}
"""


def test_count_ops_counts_kernels_only():
    comps = parse_hlo(HLO)
    assert comps["ENTRY"] == ["parameter", "fusion", "constant", "reduce", "copy", "tuple"]
    assert comps["fused_computation"] == ["parameter", "constant", "broadcast", "multiply"]
    assert dict(count_ops(HLO)) == {"fusion": 1, "reduce": 1, "copy": 1}
    assert dict(copied_arrays(HLO)) == {"f32[8]": 1}


def test_count_ops_reads_a_compiled_module():
    def f(x):
        return jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0 + 1.0, x).sum()

    text = jax.jit(f).lower(jnp.ones(16)).compile().as_text()
    ops = count_ops(text)
    assert ops["while"] == 1 and ops["fusion"] >= 3  # the body's kernels and the sum
    assert not set(ops) & {"parameter", "constant", "tuple", "get-tuple-element"}
    body = count_ops(text, loop_body(text))  # one iteration: c * 2 + 1 and i + 1
    assert body["fusion"] >= 1 and "while" not in body and sum(body.values()) < sum(ops.values())


def test_step_cost_of_the_toy_engine():
    from tests import toy_engine

    row = step_cost(toy_engine.ENGINE, seeds=4)
    assert row["engine"] == "toy" and row["seeds"] == 4
    assert row["ops_per_step"] >= 1 and 0 <= row["copies"] <= row["ops_per_step"]
    assert row["compile_s"] > 0
