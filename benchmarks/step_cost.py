"""What one scan step of each engine costs the compiler and the machine: compile time and the
operations (kernels) per step of the optimized program, with the copies among them.

    python -m benchmarks.step_cost [--engines dp kv ...] [--seeds 64] [--out FILE.json] [--hlo DIR]

For each engine, on its conformance example (`Engine.example()`, a small config: the count of
operations per step hardly depends on the sizes, the time per operation does), a block of the
runner's shape (a scan over a few steps of `vmap(step)` over `--seeds` runs, its carry donated)
is jitted on the default backend; the script times lowering and compilation, and counts the
kernels of one step, the scan's body, in the optimized HLO module (`count_ops`): each fusion
counts as one kernel, and parameters, constants, tuples, get-tuple-element and bitcasts count
as none. Copies (`copy`, `copy-start`) are listed
separately: each one moves a whole array, the cost of an update XLA could not do in place; the
column `copied` names their shapes. XLA's CPU backend orders a loop body's operations by their
data dependencies only: it updates a state array in place when every read of the old value comes
before the write in that order, and copies it every step otherwise (one read that the new value
does not depend on is enough). `--hlo DIR` writes each optimized module, to see which.
Writes JSON to --out and a markdown table next to it (.md), with the load average before and
after.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

# Opcodes that move no data and launch nothing.
FREE = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "partition-id",
        "replica-id",
        "call",
    }
)
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLED = re.compile(r"(?:calls|to_apply|called_computations)=\{?%?([\w.\-]+)")
_RUNS = re.compile(r"(?:body|condition|to_apply|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_WHILE_BODY = re.compile(r"\bwhile\(.*?body=%?([\w.\-]+)")


def _opcode(rhs: str) -> str | None:
    """The opcode of an HLO instruction's right-hand side `shape opcode(operands), attrs`."""
    rhs = rhs.strip()
    if rhs.startswith("("):  # a tuple shape: skip to its closing parenthesis
        depth = 0
        for i, ch in enumerate(rhs):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rhs = rhs[i + 1 :].strip()
                break
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
    m = re.match(r"([a-z][\w\-]*)\(", rhs)
    return m.group(1) if m else None


def parse_hlo(text: str) -> dict[str, list[str]]:
    """{computation name: opcodes of its instructions} of an HLO module's text; the entry
    computation is named "ENTRY"."""
    return {
        name: [op for line in lines if " = " in line for op in [_opcode(line.split(" = ", 1)[1])] if op is not None]
        for name, lines in _lines_by_computation(text).items()
    }


def _references(text: str) -> tuple[dict[str, set[str]], set[str]]:
    """({computation: computations it runs as kernels of its own (while bodies and conditions,
    branches, calls)}, the computations that are inside one kernel: fusion bodies and the
    combiners of reductions, sorts and scatters)."""
    runs: dict[str, set[str]] = {}
    inner: set[str] = set()
    for name, lines in _lines_by_computation(text).items():
        runs[name] = set()
        for line in lines:
            if " = " not in line:
                continue
            if _opcode(line.split(" = ", 1)[1]) in ("while", "conditional", "call"):
                runs[name].update(_RUNS.findall(line))
                runs[name].update(n for group in _BRANCHES.findall(line) for n in re.findall(r"%?([\w.\-]+)", group))
            else:
                inner.update(_CALLED.findall(line))
    return runs, inner


def _kernel_computations(text: str, root: str) -> list[str]:
    """Computation `root` and the loop bodies and conditions, branches and calls it runs,
    transitively (each once); not the bodies of fusions or the combiners of reductions."""
    comps = _lines_by_computation(text)
    runs, inner = _references(text)
    seen, todo = [], [root]
    while todo:
        name = todo.pop()
        if name in seen or name in inner or name not in comps:
            continue
        seen.append(name)
        todo.extend(runs.get(name, ()))
    return seen


def count_ops(text: str, root: str = "ENTRY") -> Counter:
    """Opcodes of the kernels that computation `root` of an HLO module runs, with those of the
    loops, branches and calls it runs (each loop body counted once): fusions count as one
    kernel, the bodies of fusions and the combiners of reductions are not counted, nor are the
    opcodes that move no data (`FREE`)."""
    comps = parse_hlo(text)
    out: Counter = Counter()
    for name in _kernel_computations(text, root):
        out.update(op for op in comps[name] if op not in FREE)
    return out


def copied_arrays(text: str, root: str = "ENTRY") -> Counter:
    """The arrays that the copies among `count_ops(text, root)` move, as "dtype[dims]" (the
    layout dropped), with how many copies of each shape: a copy's shape tells a table field
    [seeds, Q] from a per-run total [seeds]."""
    lines = _lines_by_computation(text)
    out: Counter = Counter()
    for name in _kernel_computations(text, root):
        for line in lines[name]:
            if " = " not in line:
                continue
            rhs = line.split(" = ", 1)[1].strip()
            if _opcode(rhs) in ("copy", "copy-start"):
                out[re.sub(r"\{[^}]*\}", "", rhs.split(" ", 1)[0])] += 1
    return out


def loop_body(text: str) -> str:
    """The body computation of the outermost while loop (a scan over steps: its body is one
    step), found from the entry computation through calls."""
    todo, seen = ["ENTRY"], set()
    lines = _lines_by_computation(text)
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        for line in lines.get(name, ()):
            m = _WHILE_BODY.search(line)
            if m:
                return m.group(1)
            if " call(" in line:
                todo.extend(_RUNS.findall(line))
    raise ValueError("the module has no while loop")


def inner_loops(text: str, body: str) -> list[str]:
    """The body computations of the while loops that computation `body` runs itself (a step's
    arrival, overflow or admission loops, for `body` = `loop_body(text)`)."""
    lines = _lines_by_computation(text)[body]
    return [m.group(1) for line in lines for m in [_WHILE_BODY.search(line)] if m]


def _lines_by_computation(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        head = _HEADER.match(line)
        if head and " = " not in line.split("{", 1)[0]:
            current = "ENTRY" if head.group(1) else head.group(2)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def step_cost(engine, config=None, seeds: int = 64, steps: int = 4, params=None, hlo_dir=None) -> dict:
    """Compile time (s) and operations per step of `engine`'s step over `seeds` runs of `config`
    (default: the engine's example), as the runner's blocks run it: a scan of `steps` steps of
    the vmapped step, its carry donated. ops_per_step counts the scan body's kernels (and the
    loops it runs); copies among them move a whole array each, and `copied` names the arrays
    they move (`copied_arrays`). hlo_dir: also write the optimized module's text there, as
    ENGINE.hlo.txt."""
    import jax
    import jax.numpy as jnp

    config = engine.example() if config is None else config
    params = engine.default_params(config) if params is None else params
    states = jax.vmap(lambda s: engine.init(config, params, s))(jnp.arange(seeds, dtype=jnp.uint32))
    one = jax.vmap(lambda st: engine.step(config, params, st, False)[0])
    block = jax.jit(lambda st: jax.lax.scan(lambda c, _: (one(c), None), st, None, length=steps)[0], donate_argnums=0)
    t0 = time.perf_counter()
    lowered = block.lower(states)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    text = compiled.as_text()
    if hlo_dir is not None:
        Path(hlo_dir).mkdir(parents=True, exist_ok=True)
        (Path(hlo_dir) / f"{engine.name}.hlo.txt").write_text(text)
    body = loop_body(text)
    ops = count_ops(text, body)
    copied = copied_arrays(text, body)
    return dict(
        engine=engine.name,
        seeds=seeds,
        lower_s=round(t1 - t0, 3),
        compile_s=round(t2 - t1, 3),
        ops_per_step=sum(ops.values()),
        copies=ops["copy"] + ops["copy-start"],
        fusions=ops["fusion"],
        loops=ops["while"],
        conditionals=ops["conditional"],
        scatters=ops["scatter"],
        sorts=ops["sort"],
        reduce_windows=ops["reduce-window"],
        copied=", ".join(f"{n} x {shape}" for shape, n in sorted(copied.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def main(argv=None) -> int:
    import os

    from benchmarks.bench_dp import environment, environment_line, write_report
    from jaxsched.engine import get_engine
    from jaxsched.registry import ENGINES
    from jaxsched.results import markdown_table

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    p.add_argument("--seeds", type=int, default=64, help="runs in the vmapped step")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "step_cost.json"))
    p.add_argument("--hlo", metavar="DIR", help="also write each engine's optimized HLO text to DIR/ENGINE.hlo.txt")
    a = p.parse_args(argv)
    if a.seeds < 1:
        p.error(f"--seeds must be >= 1, got {a.seeds}")
    env = environment()
    rows = []
    for name in a.engines:
        rows.append(step_cost(get_engine(name), seeds=a.seeds, hlo_dir=a.hlo))
        print(rows[-1], flush=True)
    env["loadavg_at_end"] = list(os.getloadavg())
    md = (
        f"{environment_line(env)}, at end {env['loadavg_at_end']}\n\n"
        + markdown_table(list(rows[0]), [[str(v) for v in r.values()] for r in rows])
        + "\n"
    )
    return write_report(Path(a.out), dict(environment=env, rows=rows), md, True, print)


if __name__ == "__main__":
    raise SystemExit(main())
