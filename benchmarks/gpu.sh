#!/usr/bin/env bash
# The GPU measurements of the README ("On a GPU"): bench_dp at the shape (G = 16),
# bench_kv and the valley-fill kernel's unroll sweep (bench_unroll), at seed counts that fill an accelerator, each under a time limit so that one slow
# step cannot take the other's results with it. Run from the repository root with JAX's CUDA
# plugin installed (or the project on PYTHONPATH in an environment that has it):
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
timeout "${DP_LIMIT_S:-300}" python3 -m benchmarks.bench_dp --shapes 16 \
    --seeds ${DP_SEEDS:-1024 16384 65536} --repeats 2 --out "$out/dp_speed_gpu.json" \
    2> >(tee "$out/dp_gpu.log" >&2) || rc=$?
timeout "${KV_LIMIT_S:-180}" python3 -m benchmarks.bench_kv \
    --seeds ${KV_SEEDS:-1 64 1024 16384} --out "$out/kv_speed_gpu.json" \
    2> >(tee "$out/kv_gpu.log" >&2) || rc=$?
timeout "${UNROLL_LIMIT_S:-90}" python3 -m benchmarks.bench_unroll \
    --seeds ${UNROLL_SEEDS:-1024 16384 65536} --out "$out/kernel_unroll_gpu.json" \
    2> >(tee "$out/unroll_gpu.log" >&2) || rc=$?
exit $rc
