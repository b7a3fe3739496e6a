"""The compiled interval step updates the carries of its overflow and admission loops in place
where it can.

Inside a vmapped `while_loop` every carry is chosen per run between its old and its new value
(runs whose loop has ended keep the old one). A carry written by a scatter (`x.at[r].set`) is
scattered into a copy, since that choice still reads the old array; written by a select on the
index (`where(idx == r, ...)`) it fuses with the choice and is updated in place. The overflow
loop's cancelled set and the admission loop's candidates left are written that way, so neither
is copied at each pass; the admission loop still copies its members and their planned ends
once a pass, because the members' new peaks read the old ones in another kernel. The test
compiles the runner's block (`benchmarks.step_cost`) and lists the copies inside the step's
inner loops.
"""

from __future__ import annotations

from benchmarks.step_cost import copied_arrays, inner_loops, loop_body, step_cost
from jaxsched.interval.engine import ENGINE

S = 4


def test_inner_loops_copy_at_most_the_members_and_their_ends(tmp_path):
    config = ENGINE.example()
    n = config.n
    step_cost(ENGINE, config, seeds=S, params=ENGINE.make_params(config), hlo_dir=tmp_path)
    text = (tmp_path / "interval.hlo.txt").read_text()
    loops = inner_loops(text, loop_body(text))
    assert len(loops) >= 2  # overflow and admission (and the quiet window's clock)
    per_job = [{k: v for k, v in copied_arrays(text, b).items() if k.endswith(f"[{S},{n}]")} for b in loops]
    assert sorted(per_job, key=len) == [{}] * (len(loops) - 1) + [{f"pred[{S},{n}]": 1, f"s32[{S},{n}]": 1}]
