#!/usr/bin/env bash
# The CPU backend against PyTorch on the CPU, in one run: fp32 training
# steps of the three examples (examples/mlp.mlir's MLP, 784-512-256-10 batch
# 64; bert_encoder.mlir's and unet.mlir's sizes) and of the benchmark-size
# MLP (1024 -> 4 x 4096 -> 1000, batch 512), from the same initial weights
# on the same batches, with each thread count of THREADS_LIST (default
# "1 2"). Prints ms/step of both and the ratio (PyTorch's time over mpc's:
# above 1, mpc is faster), and mpc's GFLOP/s (the products' multiply-adds)
# as a share of the f32 GEMM rate measured in the same run
# (bench/cpu_limits.py: a 2048^3 sgemm in OpenBLAS with N threads).
#
#   bench/cpu.sh      # builds (scripts/setup.sh), works in bench/out-cpu/
#
# PyTorch: Debian's python3-torch (installed here when missing) with its
# BLAS through Debian's libblas.so.3 alternative, which must be OpenBLAS
# (libopenblas0-pthread; the script checks what PyTorch loaded). PyTorch
# runs torch.set_num_threads(N); OpenBLAS's own threads are measured at 1
# and at N and the faster kept (torch_peer.py --blas-threads), so the peer
# is at its best. mpc: --threads N. Timing as bench/run.sh: WARMUP untimed
# steps, then STEPS timed in windows of 10, the median window.
# Selectors: BENCH_GROUPS (default "examples mlp-large"), THREADS_LIST, STEPS,
# WARMUP (the benchmark-size MLP uses LARGE_STEPS, LARGE_WARMUP).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$ROOT/bench/out-cpu}"
THREADS_LIST="${THREADS_LIST:-1 2}"
GROUPS_SELECTED="${BENCH_GROUPS:-examples mlp-large}"
STEPS="${STEPS:-50}" WARMUP="${WARMUP:-10}"
LARGE_STEPS="${LARGE_STEPS:-10}" LARGE_WARMUP="${LARGE_WARMUP:-2}"

# An interpreter with PyTorch and NumPy: Debian's, installed when missing
# (the build, and mpc_install_missing, from scripts/setup.sh).
source "$ROOT/scripts/setup.sh"
PYTHON=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import torch, numpy" 2>/dev/null; then
    PYTHON=$candidate
    break
  fi
done
if [ -z "$PYTHON" ]; then
  mpc_install_missing python3-torch python3-numpy libopenblas0-pthread
  PYTHON=/usr/bin/python3
fi
export PYTHON

mkdir -p "$OUT"
FAILED=0
# The floor, in the same run: the f32 GEMM rate at each thread count.
for t in $THREADS_LIST; do
  "$PYTHON" "$ROOT/bench/cpu_limits.py" --threads "$t" \
    > "$OUT/limits-threads-$t.json" || FAILED=1
done
# group NAME VARIABLES...: the models of one group, built once, then run
# with each thread count.
group() {
  local name=$1
  shift
  [[ " $GROUPS_SELECTED " == *" $name "* ]] || return 0
  env "$@" BENCH_DIR="$OUT/$name" BACKEND=cpu LEVELS=fp32 PHASE=build \
    "$ROOT/bench/run.sh" > /dev/null || FAILED=1
  local t
  for t in $THREADS_LIST; do
    env "$@" BENCH_DIR="$OUT/$name" RESULTS_DIR="$OUT/$name/threads-$t" \
      BACKEND=cpu LEVELS=fp32 PEERS=fp32 THREADS="$t" PHASE=run \
      "$ROOT/bench/run.sh" > /dev/null || FAILED=1
  done
}

group examples MODELS="mlp bert unet" STEPS="$STEPS" WARMUP="$WARMUP" \
  B=64 I=784 W=512,256 C=10 \
  BB=8 BS=128 BD=256 BH=4 BF=1024 BL=2 BV=8192 \
  UB=8 US=64 UW=16
group mlp-large MODELS=mlp STEPS="$LARGE_STEPS" WARMUP="$LARGE_WARMUP" \
  B=512 I=1024 H=4096 L=4 C=1000

"$PYTHON" "$ROOT/bench/report.py" cpu "$OUT" | tee "$OUT/table.md"
exit $FAILED
