"""The compiled budget step updates its request table in place, all but `last`.

XLA's CPU backend updates a loop-carried array in place only when every read of its old value
comes before the write in data order; otherwise it copies the array every step. The step sums
the table in one pass before it writes and masks the writes with `batch`, which those sums
decide, so `entry`, `p` and `d` (int32) are written in place; `last` (two float32 arrays) is
still copied, because the TBT gaps read its old value and nothing its new value depends on
needs them (docs/benchmarks.md, "Operations per step"). The test compiles the runner's block
(`benchmarks.step_cost`) and lists the table-shaped copies inside its loop.
"""

from __future__ import annotations

from benchmarks.step_cost import copied_arrays, inner_loops, loop_body, step_cost
from jaxsched.budget import BudgetConfig, make_params
from jaxsched.budget.engine import ENGINE

S, Q = 4, 48  # Q differs from every other size of the step (A = 8, the histogram's bins)


def test_step_copies_only_last_of_the_table(tmp_path):
    # The attention term adds its per-slot sums (batch_terms) to the step's one pass.
    config = BudgetConfig(policy="sarathi", horizon_s=4.0, table_size=Q, attention=True, attention_prefix=True)
    params = make_params(config, alpha=1e-8, beta=1e-9)
    step_cost(ENGINE, config, seeds=S, params=params, hlo_dir=tmp_path)
    text = (tmp_path / "budget.hlo.txt").read_text()
    table = {shape: n for shape, n in copied_arrays(text, loop_body(text)).items() if shape.endswith(f"[{S},{Q}]")}
    assert table == {f"f32[{S},{Q}]": 2}


def test_arrival_loop_copies_no_buffer(tmp_path):
    # `workload.arrivals.collect_due` writes its [A] buffers' rows by selects: a scatter would
    # write into a copy of each buffer at every pass of the vmapped loop.
    config = BudgetConfig(policy="sarathi", horizon_s=4.0, table_size=Q)
    step_cost(ENGINE, config, seeds=S, params=make_params(config), hlo_dir=tmp_path)
    text = (tmp_path / "budget.hlo.txt").read_text()
    (arrivals,) = inner_loops(text, loop_body(text))
    A = config.arrivals_per_step
    assert {shape for shape in copied_arrays(text, arrivals) if shape.endswith(f"[{S},{A}]")} == set()
