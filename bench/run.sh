#!/usr/bin/env bash
# The benchmarks, side by side with PyTorch in one run, on a machine with a
# GPU, PyTorch and a built checkout (scripts/setup.sh):
#
#   bench/run.sh            # results under bench/out/, table on stdout
#
# MLP: 1024 -> 4 x 4096 (ReLU) -> 1000, batch 512, momentum SGD; a
# BERT-base-style encoder and a UNet-style conv net (below), Adam; mpc at fp32
# and O2 f16 (dynamic loss scaling) against PyTorch fp32, eager AMP
# (autocast + GradScaler) and torch.compile AMP, from the same initial
# weights and batches. Steps: $WARMUP untimed, then $STEPS timed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$ROOT/bench/out}"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
STEPS="${STEPS:-100}" WARMUP="${WARMUP:-20}"
# BACKEND=cpu PEERS=0 with small sizes checks the harness without a GPU.
BACKEND="${BACKEND:-cuda}" PEERS="${PEERS:-1}"
# PHASE=build generates and compiles only; PHASE=run runs what a build made
# (OUT carried to the GPU machine, which needs no compiler); default both.
PHASE="${PHASE:-all}"
b() { if [ "$PHASE" != run ]; then "$@"; fi; }
r() { if [ "$PHASE" != build ]; then "$@"; fi; }
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
r truncate -s 0 "$RESULTS"

# bench NAME BATCH FLOPS_PER_SAMPLE OPTIMIZER [PEER OPTIONS...]: OUT/NAME.mlir
# and OUT/NAME.npz compiled at fp32 and O2 f16 and run, then the PyTorch
# peers from the fp32 executable's initial checkpoint.
bench() {
  local name=$1 batch=$2 flops=$3 optimizer=$4
  shift 4
  local level amp mode
  for level in fp32 O2; do
    amp=()
    if [ "$level" = O2 ]; then amp=(--amp=O2 --dtype=f16); fi
    b "$BIN/mpc-compile" "$OUT/$name.mlir" --train --optimizer="$optimizer" \
      --backend="$BACKEND" "${amp[@]}" -o "$OUT/$name-$level"
    r rm -f "$OUT/$name-$level.jsonl"
    r "$OUT/$name-$level" --data "$OUT/$name.npz" --no-shuffle \
      --steps $((WARMUP + STEPS)) --log-every 10 \
      --metrics "$OUT/$name-$level.jsonl" > /dev/null
    r "$OUT/$name-$level" --print-memory > "$OUT/$name-$level.memory.json"
    r python3 "$ROOT/bench/report.py" ours "$OUT/$name-$level.jsonl" \
      "$OUT/$name-$level.memory.json" --impl "mpc-$level" --model "$name" \
      --batch "$batch" --warmup $WARMUP --flops-per-sample "$flops" \
      >> "$RESULTS"
  done
  r "$OUT/$name-fp32" --data "$OUT/$name.npz" --steps 0 \
    --checkpoint "$OUT/$name-init.safetensors" > /dev/null
  if [ "$PEERS" = 1 ] && [ "$PHASE" != build ]; then
    for mode in fp32 amp compile; do
      python3 "$ROOT/bench/torch_peer.py" "$name" \
        --init "$OUT/$name-init.safetensors" --data "$OUT/$name.npz" \
        --mode $mode --batch "$batch" --steps $STEPS --warmup $WARMUP "$@" \
        >> "$RESULTS"
    done
  fi
}

B="${B:-512}" I="${I:-1024}" H="${H:-4096}" L="${L:-4}" C="${C:-1000}"
b python3 "$ROOT/bench/models.py" mlp --batch $B --input $I --hidden $H \
  --layers $L --classes $C -o "$OUT/mlp.mlir"
b python3 "$ROOT/scripts/make_dataset.py" --samples $((B * 8)) --features $I \
  --classes $C -o "$OUT/mlp.npz"
# Per sample: forward 2, backward 4 flops per weight.
bench mlp $B $(( 6 * (I * H + (L - 1) * H * H + H * C) )) \
  "kind=momentum lr=0.01"

# BERT-base-style encoder: hidden 768, 12 heads, feed-forward 3072,
# sequence 512, $BL layers, batch $BB, Adam; 2-class classification.
BB="${BB:-8}" BS="${BS:-512}" BD="${BD:-768}" BH="${BH:-12}" BF="${BF:-3072}"
BL="${BL:-12}" BV="${BV:-30522}"
b python3 "$ROOT/bench/models.py" bert --batch $BB --seq $BS --hidden $BD \
  --heads $BH --ffn $BF --layers $BL --vocab $BV --classes 2 \
  -o "$OUT/bert.mlir"
b python3 "$ROOT/test/e2e/random_inputs.py" -o "$OUT/bert.npz" \
  input_ids:i4:$((BB * 8))x$BS:0:$BV labels:i4:$((BB * 8)):0:2
bench bert $BB \
  $(( 3 * (BL * (2 * BS * (4 * BD * BD + 2 * BD * BF) + 4 * BS * BS * BD) \
    + 2 * BD * BD + 4 * BD) )) \
  "kind=adam lr=1e-4" --heads $BH --optimizer adam --lr 1e-4

# UNet-style conv net: base width $UW (448 W^2 weights: 7.3M at 128),
# ${US}x$US RGB images, batch $UB, Adam; NHWC throughout.
UB="${UB:-16}" US="${US:-128}" UW="${UW:-128}"
b python3 "$ROOT/bench/models.py" unet --batch $UB --image $US --width $UW \
  -o "$OUT/unet.mlir"
b python3 "$ROOT/test/e2e/random_inputs.py" -o "$OUT/unet.npz" \
  image:f4:$((UB * 4))x${US}x${US}x3:-1:1 mask:f4:$((UB * 4))x${US}x${US}x1:0:1
# 3x the forward's 2 multiply-adds per weight per output pixel: full size
# 28W + 54W^2, half size 162W^2, quarter size 248W^2 (transposed conv
# counted at its input size).
bench unet $UB \
  $(( 3 * 2 * (US * US * (28 * UW + 54 * UW * UW) \
    + (US / 2) * (US / 2) * 162 * UW * UW \
    + (US / 4) * (US / 4) * 248 * UW * UW) )) \
  "kind=adam lr=1e-3" --optimizer adam --lr 1e-3

r python3 "$ROOT/bench/report.py" table "$RESULTS"
