"""Do two devices compute the same runs? Every metric of the speed table's cases, saved from one
device and compared with another's.

    python -m benchmarks.device_check --out cpu.npz [--runs 64] [--engines dp offline ...]
    python -m benchmarks.device_check --out gpu.npz --compare cpu.npz     # on the other device

Each case of `benchmarks.speed_table` (the same configurations, instances and seeds) runs once
over runs 0..R-1; every metric array it returns is saved to --out (an .npz keyed
"engine/case/metric", with the JAX backend and device in "_device"). With --compare, each
metric is compared with the other file's: bitwise equal, or the number of runs that differ,
the largest absolute and relative difference and the first run that differs; the table goes to
stdout and beside --out (.md). Exit status 1 when any metric differs.

Float sums may legitimately round differently on two backends (XLA orders reductions and fuses
multiply-adds per backend), so a difference in a float metric is worth a look, not always a
bug; integer counts (completions, batches, TEL in steps) that differ mean the two devices took
different scheduling decisions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from benchmarks.speed_table import ENGINES, FULL, build_cases, log


def collect(engines: list[str], runs: int) -> dict[str, np.ndarray]:
    """{"engine/case/metric": array[runs, ...]} of every case of `engines`, and "_device"."""
    import jax

    out: dict[str, np.ndarray] = {}
    for case in build_cases(engines, FULL, (runs,), ()):
        log(f"{case.key}: {runs} runs")
        for name, value in case.metrics(runs).items():
            arr = np.asarray(value)
            if arr.dtype != object and arr.ndim >= 1 and arr.shape[0] == runs:
                out[f"{case.key}/{name}"] = arr
    out.update(draws(runs))
    device = jax.devices()[0]
    out["_device"] = np.array(f"{jax.default_backend()} {device.device_kind}, jax {jax.__version__}")
    return out


def draws(runs: int, n: int = 4096) -> dict[str, np.ndarray]:
    """The request lengths the cases start from, drawn on this device: BurstGPTLike's (s, o)
    for ids 0..n-1 of seeds 0..runs-1 (the dp cases' law), and the offline and interval
    cases' instances. A difference here is in the draw (float exp, log and the normal
    quantile round differently on two backends), before any scheduling."""
    import jax
    import jax.numpy as jnp

    from benchmarks import bench_interval, bench_offline
    from jaxsched import BurstGPTLike
    from jaxsched.interval import Buckets, IntervalConfig, jobs
    from jaxsched.interval.workloads import LMSYS
    from jaxsched.workload import Batch

    law, ids = BurstGPTLike(), jnp.arange(n, dtype=jnp.uint32)
    s, o = jax.jit(jax.vmap(lambda seed: law.sample(seed, ids)))(jnp.arange(runs, dtype=jnp.uint32))
    out = {"draw/burstgpt/prompt": np.asarray(s), "draw/burstgpt/output": np.asarray(o)}
    _, draw = bench_offline.real_family()
    s, o = draw(200, np.arange(runs, dtype=np.uint32))
    out.update({"draw/offline_mix/prompt": np.asarray(s), "draw/offline_mix/output": np.asarray(o)})
    config = IntervalConfig(Batch(LMSYS, bench_interval.N_JOBS), policy="amin", intervals=Buckets.uniform(100, 10))
    arrays = jax.jit(jax.vmap(lambda seed: jobs(config, seed)))(jnp.arange(runs, dtype=jnp.uint32))
    out.update({f"draw/interval_jobs/{k}": np.asarray(a) for k, a in zip("solu", arrays)})
    return out


def compare(mine: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> tuple[list[list[str]], bool]:
    """(rows of the comparison table, all equal) over the metrics both files hold."""
    rows, same = [], True
    for key in sorted(k for k in mine if k in other and not k.startswith("_")):
        a, b = mine[key], other[key]
        if a.shape != b.shape:
            rows.append([key, "NO", f"shape {a.shape} vs {b.shape}", "", "", ""])
            same = False
            continue
        eq = (a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b
        eq = eq.reshape(a.shape[0], -1).all(axis=1)
        if eq.all():
            rows.append([key, "yes", "0", "", "", ""])
            continue
        same = False
        da, db = a.astype(np.float64), b.astype(np.float64)
        diff = np.abs(da - db)
        rel = diff / np.maximum(np.abs(db), 1e-300)
        first = int(np.argmin(eq))
        rows.append(
            [
                key,
                "NO",
                f"{int((~eq).sum())} of {eq.size}",
                f"{np.nanmax(diff):.6g}",
                f"{np.nanmax(rel):.3g}",
                f"run {first}: {_first_values(da, db, eq, first)}",
            ]
        )
    return rows, same


def _first_values(a: np.ndarray, b: np.ndarray, eq: np.ndarray, run: int) -> str:
    """The first differing entries of run `run` in both arrays, as "index: a vs b"."""
    ra, rb = a.reshape(len(eq), -1)[run], b.reshape(len(eq), -1)[run]
    k = int(np.argmax(ra != rb))
    return f"entry {k}: {ra[k]:.10g} vs {rb[k]:.10g} ({int((ra != rb).sum())} of {ra.size} entries differ)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.device_check", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the .npz of this device's metrics")
    ap.add_argument("--runs", type=int, default=64, help="runs (seeds or instances) per case, >= 1 (default 64)")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    ap.add_argument("--compare", type=Path, default=None, help="another device's .npz to compare with")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error("--runs must be >= 1")
    if a.compare is not None and not a.compare.exists():
        ap.error(f"--compare: {a.compare} does not exist")
    mine = collect(a.engines, a.runs)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(a.out, **mine)
    log(f"wrote {a.out}")
    if a.compare is None:
        return 0
    with np.load(a.compare) as f:
        other = {k: f[k] for k in f.files}
    from jaxsched.results import markdown_table

    rows, same = compare(mine, other)
    header = ["metric", "equal", "runs differing", "max abs diff", "max rel diff", "first difference (this vs other)"]
    md = "\n".join(
        [
            f"# The same runs on two devices: {mine['_device']} (this) against {other['_device']}",
            "",
            f"{a.runs} runs per case; `python -m benchmarks.device_check --runs {a.runs} --compare {a.compare.name}`.",
            "",
            markdown_table(header, rows),
            "",
        ]
    )
    print(md)
    a.out.with_suffix(".md").write_text(md)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
