#!/usr/bin/env bash
# Every engine on a GPU in one prepared run: the speed table of the six engines at 1,024 to
# 65,536 runs per call against their CPU references ("engines"), the dp sweep grid at 1,024
# seeds per point with the compilation cache cold and warm, and the budget engine against
# Vidur's recorded rate ("sweep"). Each benchmark runs under its own time limit and rewrites
# its results as it goes, so a limit reached keeps what was finished. Run from the repository
# root on a machine whose python3 has JAX with its CUDA plugin (no install needed: the script
# links kernels/ into the package as `pip install` would map it):
#
#     bash benchmarks/gpu_all.sh OUT_DIR [engines|sweep|all]     # default: all
#
# Stage "engines" (5.5 minutes at most, the limits below): `speed_table --engines E --sizes
# SIZES --skip-step-cost --repeats 1 --reference-json REF` for each engine E (one timed call
# per size, to fit the lease), then one merged table,
# OUT_DIR/speed_table_gpu.{json,md}. REF is the latest CPU run of E's cases as they are now
# (benchmarks/results/speed_table.json for dp, offline and interval; speed_table_run7.json for
# kv, budget and network, whose tables start at the load's size). The references are the CPU
# runs of that JSON (one core of the 2-core machine), so the ratios compare a GPU with the
# one-at-a-time references on a CPU core; every row's metrics are checked against them.
# Stage "sweep" (4 minutes at most): `bench_sweep --seeds 1024` with the cache cold and
# then warm (OUT_DIR/sweep_speed_gpu.{json,md}) and `benchmarks.vidur.speed --vidur-json`
# (OUT_DIR/vidur_speed_gpu.{json,md}). Sizes and limits come from the environment:
# GPU_SIZES (default "1024 16384 65536"), LIMIT_DP, LIMIT_KV, LIMIT_OFFLINE, LIMIT_INTERVAL,
# LIMIT_BUDGET, LIMIT_NETWORK, LIMIT_SWEEP, LIMIT_VIDUR (seconds), VIDUR_SEEDS.
set -u
out="${1:?usage: bash benchmarks/gpu_all.sh OUT_DIR [engines|sweep|all]}"
stage="${2:-all}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# The package maps kernels/ to jaxsched.kernels (pyproject.toml); without an install, a link
# does the same for a checkout run in place (ignored by git).
python3 -c "import jaxsched.kernels" 2>/dev/null || [ -e jaxsched/kernels ] || ln -s ../kernels jaxsched/kernels
{
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
    python3 -c "import jax, sys; print(sys.version.split()[0], 'jax', jax.__version__, jax.devices())"
    uptime
} 2>&1 | tee -a "$out/gpu_env.log"
# GPU_ALL_ALLOW_CPU=1 runs it on a CPU as a smoke test (with small GPU_SIZES).
[ "${GPU_ALL_ALLOW_CPU:-0}" = 1 ] || python3 -c "import jax, sys; sys.exit(jax.default_backend() != 'gpu')" \
    || { echo "no GPU backend: stopping"; exit 1; }

rc=0
# step LIMIT_S LOG MODULE ARGS...: one benchmark under a time limit, its progress to LOG.
step() {
    local limit="$1" log="$2"; shift 2
    echo "== $(date -u +%T) $* (limit ${limit} s; uptime: $(uptime))" | tee -a "$out/gpu_env.log"
    timeout --signal=TERM --kill-after=10 "$limit" python3 -m "$@" >"$out/$log" 2>&1 || {
        local code=$?
        echo "   exit $code" | tee -a "$out/gpu_env.log"
        rc=$code
    }
    tail -n 3 "$out/$log"
}

sizes=${GPU_SIZES:-1024 16384 65536}
if [ "$stage" = engines ] || [ "$stage" = all ]; then
    parts=()
    for e in dp kv offline interval budget network; do
        var="LIMIT_$(echo "$e" | tr a-z A-Z)"
        case $e in dp) d=40 ;; kv | interval) d=55 ;; offline) d=35 ;; budget) d=75 ;; *) d=70 ;; esac
        case $e in kv | budget | network) ref=speed_table_run7.json ;; *) ref=speed_table.json ;; esac
        # shellcheck disable=SC2086
        step "${!var:-$d}" "speed_$e.log" benchmarks.speed_table --engines "$e" --sizes $sizes \
            --offline-extra --skip-step-cost --repeats 1 --reference-json "benchmarks/results/$ref" \
            --out "$out/speed_table_gpu_$e.json"
        parts+=("$out/speed_table_gpu_$e.json")
    done
    python3 -m benchmarks.speed_table --merge "${parts[@]}" --out "$out/speed_table_gpu.json" \
        >/dev/null 2>>"$out/gpu_env.log" || rc=$?
fi
if [ "$stage" = sweep ] || [ "$stage" = all ]; then
    step "${LIMIT_SWEEP:-180}" sweep.log benchmarks.bench_sweep --seeds 1024 \
        --variants "buckets, cold cache" "buckets, warm cache" --no-switch-table \
        --out "$out/sweep_speed_gpu.json"
    lv=${LIMIT_VIDUR:-55}
    step "$lv" vidur.log benchmarks.vidur.speed --vidur-json benchmarks/results/vidur/speed.json \
        --seeds "${VIDUR_SEEDS:-1024,16384,65536}" --jax-calls 2 --time-limit $((lv - 10)) \
        --name vidur_speed_gpu --out "$out"
fi
echo "== $(date -u +%T) done, exit $rc; uptime: $(uptime)" | tee -a "$out/gpu_env.log"
# The summaries last, where a caller that keeps only the end of the output finds them.
for f in speed_table_gpu.md sweep_speed_gpu.md vidur_speed_gpu.md; do
    [ -f "$out/$f" ] && grep -v '^$' "$out/$f" | head -n 24
done
exit $rc
