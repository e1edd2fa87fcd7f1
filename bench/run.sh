#!/usr/bin/env bash
# The benchmarks, side by side with PyTorch in one run, on a machine with a
# GPU, PyTorch and a built checkout (scripts/setup.sh):
#
#   bench/run.sh            # results under bench/out/, table on stdout
#
# MLP: 1024 -> 4 x 4096 (ReLU) -> 1000, batch 512, momentum SGD; mpc at fp32
# and O2 f16 (dynamic loss scaling) against PyTorch fp32, eager AMP
# (autocast + GradScaler) and torch.compile AMP, from the same initial
# weights and batches. Steps: $WARMUP untimed, then $STEPS timed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$ROOT/bench/out}"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
STEPS="${STEPS:-100}" WARMUP="${WARMUP:-20}"
B="${B:-512}" I="${I:-1024}" H="${H:-4096}" L="${L:-4}" C="${C:-1000}"
# BACKEND=cpu PEERS=0 with small sizes checks the harness without a GPU.
BACKEND="${BACKEND:-cuda}" PEERS="${PEERS:-1}"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"

python3 "$ROOT/bench/models.py" mlp --batch $B --input $I --hidden $H \
  --layers $L --classes $C -o "$OUT/mlp.mlir"
python3 "$ROOT/scripts/make_dataset.py" --samples $((B * 8)) --features $I \
  --classes $C -o "$OUT/mlp.npz"
# Per sample: forward 2, backward 4 flops per weight.
FLOPS=$(( 6 * (I * H + (L - 1) * H * H + H * C) ))
OPT="kind=momentum lr=0.01"
for level in fp32 O2; do
  amp=(); [ "$level" = O2 ] && amp=(--amp=O2 --dtype=f16)
  "$BIN/mpc-compile" "$OUT/mlp.mlir" --train --optimizer="$OPT" \
    --backend="$BACKEND" "${amp[@]}" -o "$OUT/mlp-$level"
  rm -f "$OUT/mlp-$level.jsonl"
  "$OUT/mlp-$level" --data "$OUT/mlp.npz" --no-shuffle \
    --steps $((WARMUP + STEPS)) --log-every 10 \
    --metrics "$OUT/mlp-$level.jsonl" > /dev/null
  "$OUT/mlp-$level" --print-memory > "$OUT/mlp-$level.memory.json"
  python3 "$ROOT/bench/report.py" ours "$OUT/mlp-$level.jsonl" \
    "$OUT/mlp-$level.memory.json" --impl "mpc-$level" --model mlp \
    --batch $B --warmup $WARMUP --flops-per-sample $FLOPS >> "$RESULTS"
done
"$OUT/mlp-fp32" --data "$OUT/mlp.npz" --steps 0 \
  --checkpoint "$OUT/mlp-init.safetensors" > /dev/null
[ "$PEERS" = 1 ] && for mode in fp32 amp compile; do
  python3 "$ROOT/bench/torch_peer.py" mlp --init "$OUT/mlp-init.safetensors" \
    --data "$OUT/mlp.npz" --mode $mode --batch $B --steps $STEPS \
    --warmup $WARMUP >> "$RESULTS"
done
python3 "$ROOT/bench/report.py" table "$RESULTS"
