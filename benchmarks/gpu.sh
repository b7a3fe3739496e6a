#!/usr/bin/env bash
# The GPU measurements of docs/guide/gpu.md: bench_dp at the shape (G = 16),
# bench_kv and the valley-fill kernel's unroll sweep (bench_unroll), at seed counts that fill
# an accelerator, each under its own time limit so that one slow step cannot take the others'
# results with it. Run from the repository root with JAX's CUDA plugin installed (or the
# project on PYTHONPATH in an environment that has it):
#
#     bash benchmarks/gpu.sh [OUT_DIR]     # default benchmarks/results
#
# Writes dp_speed_gpu.{json,md}, kv_speed_gpu.{json,md}, kernel_unroll_gpu.{json,md} and the
# progress logs to OUT_DIR. Each step's seed counts and time limit come from the environment
# (DP_SEEDS, DP_LIMIT_S, KV_SEEDS, KV_LIMIT_S, UNROLL_SEEDS, UNROLL_LIMIT_S).
set -u
out="${1:-benchmarks/results}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv \
    2>&1 | tee "$out/gpu_env.log"
python3 -c "import jax, sys; print(sys.version.split()[0], 'jax', jax.__version__, jax.devices())" \
    2>&1 | tee -a "$out/gpu_env.log"
python3 -c "import jax, sys; sys.exit(jax.default_backend() != 'gpu')" \
    || { echo "no GPU backend: stopping"; exit 1; }

rc=0
# step LIMIT_S LOG MODULE ARGS...: one benchmark under a time limit, progress (stderr) to LOG.
step() {
    local limit="$1" log="$2"; shift 2
    timeout "$limit" python3 -m "$@" 2> >(tee "$out/$log" >&2) || rc=$?
}
step "${DP_LIMIT_S:-300}" dp_gpu.log benchmarks.bench_dp --shapes 16 \
    --seeds ${DP_SEEDS:-1024 16384 65536} --repeats 2 --out "$out/dp_speed_gpu.json"
step "${KV_LIMIT_S:-180}" kv_gpu.log benchmarks.bench_kv \
    --seeds ${KV_SEEDS:-1 64 1024 16384} --out "$out/kv_speed_gpu.json"
step "${UNROLL_LIMIT_S:-90}" unroll_gpu.log benchmarks.bench_unroll \
    --seeds ${UNROLL_SEEDS:-1024 16384 65536} --out "$out/kernel_unroll_gpu.json"
exit $rc
