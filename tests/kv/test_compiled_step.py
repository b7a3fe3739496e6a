"""The compiled kv step updates its request table in place.

XLA's CPU backend updates a loop-carried array in place only when every read of its old value
comes before the write in data order; otherwise it copies the array every step. The step's
insertion writes the fields that the batch then changes (id, stage, resident, prefilled)
through a scatter into a fresh ring and selects, which fuse with the batch's updates, and the
batch's writes are ordered after the policy's and the step's sums (`kernels.all_computed`),
so no table field is copied. The test compiles the runner's block (`benchmarks.step_cost`)
and lists the table-shaped copies inside its loop, for WAIT and for Sarathi (whose chunked
prefills write `prefilled` too).
"""

from __future__ import annotations

import pytest

from benchmarks.step_cost import copied_arrays, loop_body, step_cost
from jaxsched.kv import KVConfig, make_params
from jaxsched.kv.engine import ENGINE

S, Q = 4, 48  # Q differs from every other size of the step


@pytest.mark.parametrize("policy", ["wait", "sarathi"])
def test_step_copies_no_table_field(tmp_path, policy):
    config = KVConfig(policy=policy, num_requests=40, table_size=Q)
    step_cost(ENGINE, config, seeds=S, params=make_params(config), hlo_dir=tmp_path)
    text = (tmp_path / "kv.hlo.txt").read_text()
    table = {shape: n for shape, n in copied_arrays(text, loop_body(text)).items() if shape.endswith(f"[{S},{Q}]")}
    assert table == {}
