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
B="${B:-512}" I="${I:-1024}" H="${H:-4096}" L="${L:-4}" C="${C:-1000}"
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

b python3 "$ROOT/bench/models.py" mlp --batch $B --input $I --hidden $H \
  --layers $L --classes $C -o "$OUT/mlp.mlir"
b python3 "$ROOT/scripts/make_dataset.py" --samples $((B * 8)) --features $I \
  --classes $C -o "$OUT/mlp.npz"
# Per sample: forward 2, backward 4 flops per weight.
FLOPS=$(( 6 * (I * H + (L - 1) * H * H + H * C) ))
OPT="kind=momentum lr=0.01"
for level in fp32 O2; do
  amp=(); [ "$level" = O2 ] && amp=(--amp=O2 --dtype=f16)
  b "$BIN/mpc-compile" "$OUT/mlp.mlir" --train --optimizer="$OPT" \
    --backend="$BACKEND" "${amp[@]}" -o "$OUT/mlp-$level"
  r rm -f "$OUT/mlp-$level.jsonl"
  r "$OUT/mlp-$level" --data "$OUT/mlp.npz" --no-shuffle \
    --steps $((WARMUP + STEPS)) --log-every 10 \
    --metrics "$OUT/mlp-$level.jsonl" > /dev/null
  r "$OUT/mlp-$level" --print-memory > "$OUT/mlp-$level.memory.json"
  r python3 "$ROOT/bench/report.py" ours "$OUT/mlp-$level.jsonl" \
    "$OUT/mlp-$level.memory.json" --impl "mpc-$level" --model mlp \
    --batch $B --warmup $WARMUP --flops-per-sample $FLOPS >> "$RESULTS"
done
r "$OUT/mlp-fp32" --data "$OUT/mlp.npz" --steps 0 \
  --checkpoint "$OUT/mlp-init.safetensors" > /dev/null
[ "$PEERS" = 1 ] && [ "$PHASE" != build ] && for mode in fp32 amp compile; do
  python3 "$ROOT/bench/torch_peer.py" mlp --init "$OUT/mlp-init.safetensors" \
    --data "$OUT/mlp.npz" --mode $mode --batch $B --steps $STEPS \
    --warmup $WARMUP >> "$RESULTS"
done

# BERT-base-style encoder: hidden 768, 12 heads, feed-forward 3072,
# sequence 512, $BL layers, batch $BB, Adam; 2-class classification.
BB="${BB:-8}" BS="${BS:-512}" BD="${BD:-768}" BH="${BH:-12}" BF="${BF:-3072}"
BL="${BL:-12}" BV="${BV:-30522}"
b python3 "$ROOT/bench/models.py" bert --batch $BB --seq $BS --hidden $BD \
  --heads $BH --ffn $BF --layers $BL --vocab $BV --classes 2 \
  -o "$OUT/bert.mlir"
b python3 "$ROOT/test/e2e/random_inputs.py" -o "$OUT/bert.npz" \
  input_ids:i4:$((BB * 8))x$BS:0:$BV labels:i4:$((BB * 8)):0:2
BFLOPS=$(( 3 * (BL * (2 * BS * (4 * BD * BD + 2 * BD * BF) + 4 * BS * BS * BD) + 2 * BD * BD + 4 * BD) ))
for level in fp32 O2; do
  amp=(); [ "$level" = O2 ] && amp=(--amp=O2 --dtype=f16)
  b "$BIN/mpc-compile" "$OUT/bert.mlir" --train --optimizer="kind=adam lr=1e-4" \
    --backend="$BACKEND" "${amp[@]}" -o "$OUT/bert-$level"
  r rm -f "$OUT/bert-$level.jsonl"
  r "$OUT/bert-$level" --data "$OUT/bert.npz" --no-shuffle \
    --steps $((WARMUP + STEPS)) --log-every 10 \
    --metrics "$OUT/bert-$level.jsonl" > /dev/null
  r "$OUT/bert-$level" --print-memory > "$OUT/bert-$level.memory.json"
  r python3 "$ROOT/bench/report.py" ours "$OUT/bert-$level.jsonl" \
    "$OUT/bert-$level.memory.json" --impl "mpc-$level" --model bert \
    --batch $BB --warmup $WARMUP --flops-per-sample $BFLOPS >> "$RESULTS"
done
r "$OUT/bert-fp32" --data "$OUT/bert.npz" --steps 0 \
  --checkpoint "$OUT/bert-init.safetensors" > /dev/null
[ "$PEERS" = 1 ] && [ "$PHASE" != build ] && for mode in fp32 amp compile; do
  python3 "$ROOT/bench/torch_peer.py" bert --heads $BH \
    --init "$OUT/bert-init.safetensors" --data "$OUT/bert.npz" --mode $mode \
    --batch $BB --optimizer adam --lr 1e-4 --steps $STEPS \
    --warmup $WARMUP >> "$RESULTS"
done

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
UFLOPS=$(( 3 * 2 * (US * US * (28 * UW + 54 * UW * UW) \
  + (US / 2) * (US / 2) * 162 * UW * UW + (US / 4) * (US / 4) * 248 * UW * UW) ))
for level in fp32 O2; do
  amp=(); [ "$level" = O2 ] && amp=(--amp=O2 --dtype=f16)
  b "$BIN/mpc-compile" "$OUT/unet.mlir" --train --optimizer="kind=adam lr=1e-3" \
    --backend="$BACKEND" "${amp[@]}" -o "$OUT/unet-$level"
  r rm -f "$OUT/unet-$level.jsonl"
  r "$OUT/unet-$level" --data "$OUT/unet.npz" --no-shuffle \
    --steps $((WARMUP + STEPS)) --log-every 10 \
    --metrics "$OUT/unet-$level.jsonl" > /dev/null
  r "$OUT/unet-$level" --print-memory > "$OUT/unet-$level.memory.json"
  r python3 "$ROOT/bench/report.py" ours "$OUT/unet-$level.jsonl" \
    "$OUT/unet-$level.memory.json" --impl "mpc-$level" --model unet \
    --batch $UB --warmup $WARMUP --flops-per-sample $UFLOPS >> "$RESULTS"
done
r "$OUT/unet-fp32" --data "$OUT/unet.npz" --steps 0 \
  --checkpoint "$OUT/unet-init.safetensors" > /dev/null
[ "$PEERS" = 1 ] && [ "$PHASE" != build ] && for mode in fp32 amp compile; do
  python3 "$ROOT/bench/torch_peer.py" unet \
    --init "$OUT/unet-init.safetensors" --data "$OUT/unet.npz" --mode $mode \
    --batch $UB --optimizer adam --lr 1e-3 --steps $STEPS \
    --warmup $WARMUP >> "$RESULTS"
done

r python3 "$ROOT/bench/report.py" table "$RESULTS"
