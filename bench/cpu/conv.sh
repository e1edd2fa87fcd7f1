#!/usr/bin/env bash
# mpc's CPU convolutions (shifted GEMMs in OpenBLAS) against oneDNN's
# (through PyTorch on the CPU) on the UNet example's shapes and one layer of
# the benchmark-size UNet, with 1 and 2 threads; the measurement behind the
# choice of GEMMs over oneDNN (docs/Benchmarks.md). Needs a build
# (scripts/setup.sh) and an interpreter with PyTorch (PYTHON, default the
# first of python3 and /usr/bin/python3 that has it).
#
#   bench/cpu/conv.sh > conv.jsonl; bench/report.py conv conv.jsonl
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c "import torch" 2>/dev/null; then
      PYTHON=$candidate
      break
    fi
  done
fi
# N H W C O K: batch, image, channels in and out, kernel.
SHAPES=${SHAPES:-"8 64 64 3 16 3;8 64 64 16 16 3;8 32 32 32 32 3;8 16 16 64 64 3;4 128 128 128 128 3"}
IFS=';' read -ra shapes <<< "$SHAPES"
for threads in ${THREADS_LIST:-1 2}; do
  for shape in "${shapes[@]}"; do
    # shellcheck disable=SC2086
    "$BIN/mpc-bench-conv" $shape "$threads"
    # shellcheck disable=SC2086
    OPENBLAS_NUM_THREADS=1 "$PYTHON" "$ROOT/bench/cpu/conv_peer.py" $shape "$threads"
  done
done
