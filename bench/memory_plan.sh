#!/usr/bin/env bash
# The training step's memory plan with and without --mpc-fuse: the
# BERT-style encoder (bench/models.py, BERT-base widths unless overridden)
# trained with Adam at O2, at each sequence length of SEQS (default
# "128 512"), compiled for the CPU backend fused, unfused (--no-fuse), and
# fused but for attention (--fuse-attention=false, the CUDA default) with
# its softmax and dropout as mpc.softmax_dropout and with them kept apart
# (--keep-probabilities). The plan is the same on every backend and does
# not depend on the machine: one line per length with the arenas (every
# activation and gradient of the step; parameters and optimizer state are
# on top) and the fused one's saving.
#
#   bench/memory_plan.sh                  # table on stdout
#   SEQS=128 LAYERS=2 bench/memory_plan.sh
#
# UNET ("BATCH IMAGE WIDTH", default "16 128 128", the UNet-style
# benchmark; empty: none) adds the UNet-style network (bench/models.py
# unet, Adam, O2 f16) fused, fused with its moves kept rather than computed
# again (--no-recompute-moves) and unfused: its step's arena and its peak
# with parameters, masters and Adam's state.
#
# Results as JSON lines in OUT (default bench/out/memory-plan.jsonl).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
SEQS="${SEQS:-128 512}" BATCH="${BATCH:-8}" LAYERS="${LAYERS:-12}"
HIDDEN="${HIDDEN:-768}" HEADS="${HEADS:-12}" FFN="${FFN:-3072}"
VOCAB="${VOCAB:-30522}"
UNET="${UNET-16 128 128}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
OUT="${OUT:-$ROOT/bench/out/memory-plan.jsonl}"
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

printf '%-6s %16s %16s %8s %16s %16s\n' seq "fused MB" "unfused MB" saving \
  "no-attn MB" "no-attn kept MB"
for seq in $SEQS; do
  python3 "$ROOT/bench/models.py" bert --batch "$BATCH" --seq "$seq" \
    --hidden "$HIDDEN" --heads "$HEADS" --ffn "$FFN" --layers "$LAYERS" \
    --vocab "$VOCAB" --classes 2 -o "$WORK/bert.mlir"
  for variant in fused unfused noattn kept; do
    flag=()
    [ "$variant" = unfused ] && flag=(--no-fuse)
    [ "$variant" = noattn ] && flag=(--fuse-attention=false)
    [ "$variant" = kept ] && flag=(--fuse-attention=false --keep-probabilities)
    "$BIN/mpc-compile" "$WORK/bert.mlir" --train \
      --optimizer="kind=adam lr=1e-4" --amp=O2 "${flag[@]}" \
      --memory-report="$WORK/$variant.json" -o "$WORK/bert-$variant"
  done
  python3 - "$WORK" "$seq" "$OUT" << 'PY'
import json, sys
def arena(variant):
    fns = json.load(open("%s/%s.json" % (sys.argv[1], variant)))["functions"]
    step = [f for f in fns if f["function"] == "train_step"][0]
    return step["arena_bytes"], step["fused"]
fused, ops = arena("fused")
unfused, _ = arena("unfused")
noattn, noattn_ops = arena("noattn")
kept, _ = arena("kept")
seq = int(sys.argv[2])
print("%-6d %16.1f %16.1f %7.0f%% %16.1f %16.1f" %
      (seq, fused / 1e6, unfused / 1e6, 100 * (1 - fused / unfused),
       noattn / 1e6, kept / 1e6))
with open(sys.argv[3], "a") as out:
    out.write(json.dumps({"seq": seq, "fused_arena_bytes": fused,
                          "unfused_arena_bytes": unfused,
                          "fused_ops": ops,
                          "no_attention_arena_bytes": noattn,
                          "no_attention_kept_arena_bytes": kept,
                          "no_attention_fused_ops": noattn_ops}) + "\n")
PY
done

if [ -n "$UNET" ]; then
  read -r ub us uw <<< "$UNET"
  python3 "$ROOT/bench/models.py" unet --batch "$ub" --image "$us" \
    --width "$uw" -o "$WORK/unet.mlir"
  for variant in fused moves unfused; do
    flag=()
    [ "$variant" = moves ] && flag=(--no-recompute-moves)
    [ "$variant" = unfused ] && flag=(--no-fuse)
    "$BIN/mpc-compile" "$WORK/unet.mlir" --train \
      --optimizer="kind=adam lr=1e-4" --amp=O2 --dtype=f16 "${flag[@]}" \
      --memory-report="$WORK/unet-$variant.json" -o "$WORK/unet-$variant"
  done
  printf '\n%-16s %12s %12s %12s %14s %14s\n' unet "fused MB" "moves kept MB" \
    "unfused MB" "fused peak MB" "kept peak MB"
  python3 - "$WORK" "$UNET" "$OUT" << 'PY'
import json, sys
def step(variant):
    fns = json.load(open("%s/unet-%s.json" % (sys.argv[1], variant)))["functions"]
    return [f for f in fns if f["function"] == "train_step"][0]
fused, moves, unfused = step("fused"), step("moves"), step("unfused")
b, i, w = (int(x) for x in sys.argv[2].split())
print("%-16s %12.1f %12.1f %12.1f %14.1f %14.1f" %
      ("%dx%d w%d" % (b, i, w), fused["arena_bytes"] / 1e6,
       moves["arena_bytes"] / 1e6, unfused["arena_bytes"] / 1e6,
       fused["peak_bytes"] / 1e6, moves["peak_bytes"] / 1e6))
with open(sys.argv[3], "a") as out:
    out.write(json.dumps({"unet": {"batch": b, "image": i, "width": w},
                          "fused_arena_bytes": fused["arena_bytes"],
                          "moves_kept_arena_bytes": moves["arena_bytes"],
                          "unfused_arena_bytes": unfused["arena_bytes"],
                          "fused_peak_bytes": fused["peak_bytes"],
                          "moves_kept_peak_bytes": moves["peak_bytes"],
                          "fused_ops": fused["fused"]}) + "\n")
PY
fi
