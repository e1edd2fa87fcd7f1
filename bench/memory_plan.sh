#!/usr/bin/env bash
# The training step's memory plan with and without --mpc-fuse: the
# BERT-style encoder (bench/models.py, BERT-base widths unless overridden)
# trained with Adam at O2, at each sequence length of SEQS (default
# "128 512"), compiled twice (fused, --no-fuse) for the CPU backend. The
# plan is the same on every backend and does not depend on the machine:
# one line per length with both arenas (every activation and gradient of
# the step; parameters and optimizer state are on top) and the saving.
#
#   bench/memory_plan.sh                  # table on stdout
#   SEQS=128 LAYERS=2 bench/memory_plan.sh
#
# Results as JSON lines in OUT (default bench/out/memory-plan.jsonl).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
SEQS="${SEQS:-128 512}" BATCH="${BATCH:-8}" LAYERS="${LAYERS:-12}"
HIDDEN="${HIDDEN:-768}" HEADS="${HEADS:-12}" FFN="${FFN:-3072}"
VOCAB="${VOCAB:-30522}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
OUT="${OUT:-$ROOT/bench/out/memory-plan.jsonl}"
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

printf '%-6s %16s %16s %8s\n' seq "fused MB" "unfused MB" saving
for seq in $SEQS; do
  python3 "$ROOT/bench/models.py" bert --batch "$BATCH" --seq "$seq" \
    --hidden "$HIDDEN" --heads "$HEADS" --ffn "$FFN" --layers "$LAYERS" \
    --vocab "$VOCAB" --classes 2 -o "$WORK/bert.mlir"
  for variant in fused unfused; do
    flag=()
    [ "$variant" = unfused ] && flag=(--no-fuse)
    "$BIN/mpc-compile" "$WORK/bert.mlir" --train \
      --optimizer="kind=adam lr=1e-4" --amp=O2 "${flag[@]}" \
      --memory-report="$WORK/$variant.json" -o "$WORK/bert-$variant"
  done
  python3 - "$WORK/fused.json" "$WORK/unfused.json" "$seq" "$OUT" << 'PY'
import json, sys
def arena(path):
    fns = json.load(open(path))["functions"]
    step = [f for f in fns if f["function"] == "train_step"][0]
    return step["arena_bytes"], step["fused"]
fused, ops = arena(sys.argv[1])
unfused, _ = arena(sys.argv[2])
seq = int(sys.argv[3])
print("%-6d %16.1f %16.1f %7.0f%%" % (seq, fused / 1e6, unfused / 1e6,
                                       100 * (1 - fused / unfused)))
with open(sys.argv[4], "a") as out:
    out.write(json.dumps({"seq": seq, "fused_arena_bytes": fused,
                          "unfused_arena_bytes": unfused,
                          "fused_ops": ops}) + "\n")
PY
done
