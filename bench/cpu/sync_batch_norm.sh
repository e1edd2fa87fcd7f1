#!/usr/bin/env bash
# Synchronised batch norm (--data-parallel=sync-batch-norm=true) on the CPU
# backend, on this machine: the UNet example (11 batch norms) at a global
# batch of 2B, as one process with 2 threads and as 2 ranks of B with one
# thread each, with and without synchronised batch norms (mpirun; the same
# samples per step; momentum SGD, whose steps follow the gradients' values,
# where Adam's first steps follow their signs and rounding-level
# differences grow). Prints JSON lines (samples/s, the median of the
# logged windows, and the last logged loss), then what the exchanges cost
# (the synchronised ranks' rate against the unsynchronised ranks') and how
# far each 2-rank run's logged losses are from one process's. PyTorch's
# SyncBatchNorm runs on GPUs only, so there is no peer here. Needs a build
# with MPI (scripts/setup.sh).
#
#   bench/cpu/sync_batch_norm.sh > sync-bn.jsonl
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
PYTHON="${PYTHON:-/usr/bin/python3}"
B=${BATCH:-4}
STEPS=${STEPS:-40}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$PYTHON" "$ROOT/test/e2e/random_inputs.py" -o "$WORK/data.npz" \
  "image:f4:$((2 * B * STEPS))x64x64x3:-1:1" \
  "mask:f4:$((2 * B * STEPS))x64x64x1:0:1"
sed "s/tensor<8x/tensor<${B}x/g" "$ROOT/examples/unet.mlir" > "$WORK/b.mlir"
sed "s/tensor<8x/tensor<$((2 * B))x/g" "$ROOT/examples/unet.mlir" > "$WORK/b2.mlir"
options=(--train --entry=ad_step --no-eval --optimizer="kind=momentum lr=0.05")
"$BIN/mpc-compile" "$WORK/b.mlir" "${options[@]}" --data-parallel -o "$WORK/dp"
"$BIN/mpc-compile" "$WORK/b.mlir" "${options[@]}" \
  --data-parallel=sync-batch-norm=true -o "$WORK/sync"
"$BIN/mpc-compile" "$WORK/b2.mlir" "${options[@]}" -o "$WORK/one"

# samples/s: the median of the logged windows of 5 steps, the first
# (start-up) left out; and the last logged loss.
rate() { "$PYTHON" -c 'import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(statistics.median(l["samples_per_s"] for l in lines[1:]), lines[-1]["loss"])' "$1"; }
line() { # NAME RANKS BATCH THREADS METRICS
  read -r r loss < <(rate "$5")
  echo "{\"impl\": \"mpc\", \"model\": \"unet\", \"run\": \"$1\", \"ranks\": $2, \"batch_per_rank\": $3, \"threads\": $4, \"samples_per_s\": $r, \"last_loss\": $loss}"
}
common=(--data "$WORK/data.npz" --steps "$STEPS" --log-every 5)
"$WORK/one" "${common[@]}" --threads 2 --metrics "$WORK/one.jsonl" > /dev/null
line one 1 $((2 * B)) 2 "$WORK/one.jsonl"
for run in dp sync; do
  mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2 \
    "$WORK/$run" "${common[@]}" --threads 1 --metrics "$WORK/$run.jsonl" \
    > /dev/null
  line "$run" 2 "$B" 1 "$WORK/$run.jsonl"
done
"$PYTHON" - "$WORK" <<'PY'
import json, statistics, sys
work = sys.argv[1]
def rates(name):
    lines = [json.loads(l) for l in open(f"{work}/{name}.jsonl") if l.strip()]
    return statistics.median(l["samples_per_s"] for l in lines[1:]), lines
one, dp, sync = (rates(n) for n in ("one", "dp", "sync"))
def worst(run):
    return max(abs(a["loss"] - b["loss"]) / abs(b["loss"])
               for a, b in zip(run[1], one[1]))
print(json.dumps({"sync_over_unsync": sync[0] / dp[0],
                  "sync_over_one_process": sync[0] / one[0],
                  "unsync_over_one_process": dp[0] / one[0],
                  "sync_loss_vs_one_process_worst_rel": worst(sync),
                  "unsync_loss_vs_one_process_worst_rel": worst(dp)}))
PY
