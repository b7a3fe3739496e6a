"""The compiled offline event step updates its per-request arrays and its table of running
requests in place.

XLA's CPU backend updates a loop-carried array in place only when every read of its old value
comes before the write in data order; otherwise it copies the array every step. The event step
reads the table (the admission check, the quiet window, the completions it stamps) and then
admits a request into it; the admission's writes are masked by a flag built from everything
those reads produce (`kernels.all_computed`), so none of the state's [n] or [A] arrays is
copied. What is left is one copy of the admission check's per-row peaks, a temporary that the
admitted row's entry overwrites while the quiet window still reads it. The test compiles the
runner's block (`benchmarks.step_cost`) and lists the copies inside its loop.
"""

from __future__ import annotations

import dataclasses

from benchmarks.step_cost import copied_arrays, loop_body, step_cost
from jaxsched.offline.engine import ENGINE

S, A = 4, 24  # n = 40 requests (the example's), A table rows


def test_event_step_copies_no_state_array(tmp_path):
    config = dataclasses.replace(ENGINE.example(), slots=A)
    step_cost(ENGINE, config, seeds=S, params=ENGINE.make_params(config), hlo_dir=tmp_path)
    text = (tmp_path / "offline.hlo.txt").read_text()
    copied = copied_arrays(text, loop_body(text))
    assert {shape: k for shape, k in copied.items() if shape.endswith(f"[{S},40]")} == {}
    assert {shape: k for shape, k in copied.items() if shape.endswith(f"[{S},{A}]")} == {f"s32[{S},{A}]": 1}
