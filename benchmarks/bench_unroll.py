"""Cost of the valley-fill kernel (BF-IO H = 0) against its loop unroll, vmapped over seeds.

`kernels.valley_fill(..., unroll=u)` runs u admissions per iteration of its loop: the results are
the same for every u (tests/kernels/test_kernels.py), only the speed changes. Fewer iterations
mean fewer loop-condition checks (on a GPU each is a device-to-host read) and let XLA fuse
across admissions; more admissions per iteration waste up to u - 1 no-op admissions per call.

For each seed count, one `jit(vmap(valley_fill))` per unroll on the same random step states of
`bench_kernel_scale.instances` at (G, B, R) = (16, 72, 64) (0-4 free slots per worker, about 32
admissions per instance), compiled first, then timed in alternation (`--rounds` rounds, each
unroll once per round, the fastest call kept), so that load that comes and goes on a shared
machine hits every unroll alike. On a CPU where `kernels.native` could be built, the native
kernel is timed as one more "unroll" (`native`; `--no-native` leaves it out). Speed-up = time
at the first unroll / time at u. Each unroll's assignments must equal the first's; the script
exits 1 otherwise.

    python -m benchmarks.bench_unroll [--seeds 64 1024] [--unrolls 1 2 4 8] [--no-native] [--out FILE.json]

Writes the JSON to --out (default benchmarks/results/kernel_unroll.json) and the markdown next
to it (.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from benchmarks.bench_dp import environment, environment_line
from benchmarks.bench_kernel_scale import instances
from jaxsched import kernels
from jaxsched.results import markdown_table

_HERE = Path(__file__).resolve().parent
G, B, R = 16, 72, 64


NATIVE = "native"


def _form(u: int | str):
    """The XLA form at unroll u, or the native CPU kernel for u = NATIVE."""
    if u == NATIVE:
        return functools.partial(kernels.valley_fill, native=True)
    return functools.partial(kernels.valley_fill, unroll=u, native=False)


def time_unrolls(seeds: int, unrolls: list, rounds: int) -> tuple[dict, dict, bool]:
    """({unroll: fastest seconds per call}, {unroll: compile seconds}, every unroll's
    assignments equal to the first's) on `seeds` instances; an unroll NATIVE is the native
    kernel."""
    args = instances(seeds, G, B, R, np.random.default_rng(seeds))
    fns, compile_s, outs = {}, {}, {}
    for u in unrolls:
        fns[u] = jax.jit(jax.vmap(_form(u)))
        t0 = time.perf_counter()
        outs[u] = jax.block_until_ready(fns[u](*args))
        compile_s[u] = time.perf_counter() - t0
    first = outs[unrolls[0]]
    same = all(np.array_equal(np.asarray(outs[u][k]), np.asarray(first[k])) for u in unrolls for k in (0, 1))
    best = {u: float("inf") for u in unrolls}
    for _ in range(rounds):
        for u in unrolls:
            t0 = time.perf_counter()
            jax.block_until_ready(fns[u](*args))
            best[u] = min(best[u], time.perf_counter() - t0)
    return best, compile_s, same


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_unroll", description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[64, 1024], metavar="S")
    ap.add_argument("--unrolls", nargs="+", type=int, default=[1, 2, 4, 8], metavar="U")
    ap.add_argument("--rounds", type=int, default=5, help="timed calls per unroll, alternating")
    ap.add_argument(
        "--no-native",
        dest="native",
        action="store_false",
        help="leave out the native CPU kernel (timed after the unrolls by default, on a CPU where it could be built)",
    )
    ap.add_argument("--out", type=Path, default=_HERE / "results" / "kernel_unroll.json")
    a = ap.parse_args(argv)
    if min(a.seeds) < 1 or min(a.unrolls) < 1 or a.rounds < 1:
        ap.error("--seeds, --unrolls and --rounds take values >= 1")
    unrolls = list(dict.fromkeys(a.unrolls))
    if a.native and kernels.native.default_on():
        unrolls.append(NATIVE)
    env = environment()
    rows, ok = [], True
    for S in a.seeds:
        best, compile_s, same = time_unrolls(S, unrolls, a.rounds)
        ok &= same
        for u in unrolls:
            rows.append(
                dict(
                    seeds=S,
                    unroll=u,
                    s_per_call=best[u],
                    compile_s=compile_s[u],
                    speedup_vs_first=best[unrolls[0]] / best[u],
                    same_assignment=same,
                )
            )
        print(
            f"[unroll] {S} seeds: "
            + ", ".join(f"{u} {best[u] * 1e3:.2f} ms" for u in unrolls)
            + f"; assignments equal: {same}",
            file=sys.stderr,
            flush=True,
        )
    table = markdown_table(
        [
            "seeds",
            "unroll",
            "ms per call",
            "us per seed",
            f"speed-up vs unroll {unrolls[0]}",
            "compile s",
            "same assignment",
        ],
        [
            [
                str(r["seeds"]),
                str(r["unroll"]),
                f"{r['s_per_call'] * 1e3:.3f}",
                f"{r['s_per_call'] / r['seeds'] * 1e6:.2f}",
                f"{r['speedup_vs_first']:.2f}x",
                f"{r['compile_s']:.1f}",
                "yes" if r["same_assignment"] else "NO",
            ]
            for r in rows
        ],
    )
    md = "\n".join(
        [
            "# Valley-fill kernel against its unroll",
            "",
            f"{environment_line(env)}.",
            "",
            f"(G, B, R) = ({G}, {B}, {R}), random step states of `bench_kernel_scale.instances`; "
            f"one jit(vmap(valley_fill)) call on all seeds, fastest of {a.rounds} calls timed in "
            "alternation across unrolls after compilation. Unroll n: the XLA form with n admissions "
            "per loop iteration; native: the native CPU kernel (`kernels/native`).",
            "",
            table,
            "",
        ]
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(dict(environment=env, G=G, B=B, R=R, rounds=a.rounds, rows=rows), indent=1))
    a.out.with_suffix(".md").write_text(md)
    print(md)
    if not ok:
        print("an unroll changed the assignment", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
