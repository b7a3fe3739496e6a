"""Cost of the BF-IO H = 0 valley-fill kernel per step at scale, vmapped over seeds.

For (G, R) on a grid from (16, 64) to (256, 1024) (B = 72 or 128 sets the free-slot counts),
times one call of `kernels.valley_fill` on `--seeds` independent random instances (jit(vmap),
after compilation; best of `--repeats`) and fits log-log slopes of the time against G (at the
smallest R) and against R (at the smallest G). The kernel makes R sequential choices, each a
reduction over the G workers and the R pool entries: O(U (G + R)) per step and seed for U
admissions.
Writes benchmarks/results/kernel_scale.{md,json}. Run:
    python -m benchmarks.bench_kernel_scale [--seeds 1024] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsched.kernels import valley_fill
from jaxsched.results import markdown_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def instances(seeds: int, G: int, B: int, R: int, rng: np.random.Generator):
    """Random step states: loads around B * 1000 tokens, 0-4 free slots, a full pool."""
    loads = rng.integers(B * 900, B * 1100, size=(seeds, G)).astype(np.int32)
    free = rng.integers(0, 5, size=(seeds, G)).astype(np.int32)
    sizes = np.clip(np.rint(217 * np.exp(rng.standard_normal((seeds, R)))), 1, 14117).astype(np.int32)
    valid = np.ones((seeds, R), bool)
    return [jnp.asarray(a) for a in (loads, free, sizes, valid)]


def time_call(G: int, B: int, R: int, seeds: int, repeats: int) -> tuple[float, float]:
    """(seconds per call after compilation, compile seconds) for one (G, R) point."""
    f = jax.jit(jax.vmap(valley_fill))
    args = instances(seeds, G, B, R, np.random.default_rng(G * 100003 + R))
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        best = min(best, time.perf_counter() - t)
    return best, compile_s


def slope(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_kernel_scale", description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small grid and 64 seeds")
    a = ap.parse_args()
    Gs = [16, 32, 64] if a.quick else [16, 32, 64, 128, 256]
    Rs = [64, 128] if a.quick else [64, 128, 256, 512, 1024]
    seeds = 64 if a.quick else a.seeds
    points = [(G, 72, Rs[0]) for G in Gs] + [(Gs[0], 72, R) for R in Rs[1:]] + [(Gs[-1], 128, Rs[-1])]
    rows = []
    for G, B, R in points:
        t, c = time_call(G, B, R, seeds, a.repeats)
        rows.append(dict(G=G, B=B, R=R, seeds=seeds, s_per_call=t, us_per_seed_step=t / seeds * 1e6, compile_s=c))
        print(
            f"[scale] G={G} B={B} R={R}: {t / seeds * 1e6:.1f} us per seed-step (compile {c:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    by_g = [r for r in rows if r["R"] == Rs[0] and r["B"] == 72]
    by_r = [r for r in rows if r["G"] == Gs[0] and r["B"] == 72]
    sg = slope([r["G"] for r in by_g], [r["us_per_seed_step"] for r in by_g])
    sr = slope([r["R"] for r in by_r], [r["us_per_seed_step"] for r in by_r])
    table = markdown_table(
        ["G", "B", "R", "us per seed-step", "ms per step (all seeds)", "compile s"],
        [
            [
                str(r["G"]),
                str(r["B"]),
                str(r["R"]),
                f"{r['us_per_seed_step']:.2f}",
                f"{r['s_per_call'] * 1e3:.1f}",
                f"{r['compile_s']:.1f}",
            ]
            for r in rows
        ],
    )
    md = (
        f"# Valley-fill kernel cost at scale ({seeds} seeds, vmapped)\n\n{table}\n\n"
        f"log-log slope against G (R = {Rs[0]}): {sg:.2f}; against R (G = {Gs[0]}): {sr:.2f}. "
        "Complexity O(U (G + R)) per step and seed: U sequential choices (U <= R admissions; here "
        "about 2G, from 0-4 free slots per worker), each a reduction over the G workers and the R "
        "requests, plus O(R + G) per step.\n"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "kernel_scale_quick" if a.quick else "kernel_scale"
    (RESULTS / f"{name}.md").write_text(md)
    (RESULTS / f"{name}.json").write_text(json.dumps({"rows": rows, "slope_G": sg, "slope_R": sr}, indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
