#!/usr/bin/env bash
# Data-parallel training on the CPU backend against PyTorch's
# DistributedDataParallel (gloo), on this machine: the MLP example at a
# global batch of 2B, as one process with 2 threads and as 2 ranks of B with
# one thread each (mpirun for mpc, torch.multiprocessing for PyTorch), same
# samples per step. Prints JSON lines, then each one's scaling (2 ranks
# against 1 process) and mpc's rate against PyTorch's. Needs a build with
# MPI (scripts/setup.sh) and an interpreter with PyTorch (PYTHON).
#
#   bench/cpu/data_parallel.sh > dp.jsonl
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
PYTHON="${PYTHON:-/usr/bin/python3}"
B=${BATCH:-64}
STEPS=${STEPS:-220}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$PYTHON" "$ROOT/scripts/make_dataset.py" --samples $((B * 2 * STEPS)) \
  -o "$WORK/data.npz" > /dev/null
sed "s/tensor<64x/tensor<${B}x/g; s/tensor<64xi32>/tensor<${B}xi32>/g" \
  "$ROOT/examples/mlp.mlir" > "$WORK/b.mlir"
sed "s/tensor<64x/tensor<$((2 * B))x/g; s/tensor<64xi32>/tensor<$((2 * B))xi32>/g" \
  "$ROOT/examples/mlp.mlir" > "$WORK/b2.mlir"
options=(--train --entry=dp_step --optimizer="kind=momentum lr=0.01")
"$BIN/mpc-compile" "$WORK/b.mlir" "${options[@]}" --data-parallel -o "$WORK/dp"
"$BIN/mpc-compile" "$WORK/b2.mlir" "${options[@]}" -o "$WORK/one"

# samples/s: the median of the logged windows of 20 steps, the first
# (start-up) left out.
rate() { "$PYTHON" -c 'import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][1:]
print(statistics.median(l["samples_per_s"] for l in lines))' "$1"; }
"$WORK/one" --data "$WORK/data.npz" --steps "$STEPS" --log-every 20 \
  --threads 2 --metrics "$WORK/one.jsonl" > /dev/null
echo "{\"impl\": \"mpc\", \"ranks\": 1, \"batch_per_rank\": $((2 * B)), \"threads\": 2, \"samples_per_s\": $(rate "$WORK/one.jsonl")}"
mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2 \
  "$WORK/dp" --data "$WORK/data.npz" --steps "$STEPS" \
  --log-every 20 --threads 1 --metrics "$WORK/dp.jsonl" > /dev/null
echo "{\"impl\": \"mpc\", \"ranks\": 2, \"batch_per_rank\": $B, \"threads\": 1, \"samples_per_s\": $(rate "$WORK/dp.jsonl")}"
# PyTorch runs OpenBLAS's own threads beside its own (they spin between
# calls): one process is run with 1 and 2 of them and the faster kept;
# each DDP rank has one.
best=""
for blas in 1 2; do
  line=$(OPENBLAS_NUM_THREADS=$blas "$PYTHON" "$ROOT/bench/cpu/ddp_peer.py" \
    --ranks 1 --batch $((2 * B)) --threads 2)
  best=$("$PYTHON" -c 'import json,sys
a, b = sys.argv[1], sys.argv[2]
print(b if not a or json.loads(b)["samples_per_s"] > json.loads(a)["samples_per_s"] else a)' "$best" "$line")
done
echo "$best"
OPENBLAS_NUM_THREADS=1 "$PYTHON" "$ROOT/bench/cpu/ddp_peer.py" --ranks 2 \
  --batch "$B"
