#!/usr/bin/env bash
# Compile time and peak memory of mpc-compile against the size of the
# step: the BERT-style encoder (bench/models.py, BERT-base widths) trained
# with Adam at O2, at LAYERS (default "12 24 48 96") layers, to an
# executable for the CPU backend. One line per size, then the scaling
# ratios (4x the layers should cost at most 4.5x the time):
#
#   bench/compile_time.sh                 # table on stdout
#   LAYERS="12 48" bench/compile_time.sh
#   CHAIN="2000 10000 50000" bench/compile_time.sh   # and long functions
#
# CHECKS=1 (the default) compiles each size again with --check-numerics,
# whose grouped checks add a runtime call (and a constant array of
# indices) for about every op of the forward pass; CHECKS=0 leaves them
# out.
#
# CHAIN sizes (none by default) add single long functions (models.py
# chain: elementwise ops, every fifth adding a parameter, trained with SGD)
# of that many forward ops; 5x the ops should cost at most 5.5x the time.
#
# Timing: wall time of one mpc-compile run per size (best of REPEAT, 1 by
# default), peak resident memory from /usr/bin/time. Results as JSON
# lines in OUT (default bench/out/compile-time.jsonl).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
LAYERS="${LAYERS:-12 24 48 96}"
CHECKS="${CHECKS:-1}"
REPEAT="${REPEAT:-1}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
OUT="${OUT:-$ROOT/bench/out/compile-time.jsonl}"
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

variants=plain
[ "$CHECKS" = 1 ] && variants="plain checks"
printf '%-8s %-7s %10s %12s %10s\n' layers flags ops seconds "peak MiB"
for layers in $LAYERS; do
  python3 "$ROOT/bench/models.py" bert --batch 8 --seq 128 --hidden 768 \
    --heads 12 --ffn 3072 --layers "$layers" --vocab 30522 --classes 2 \
    -o "$WORK/bert.mlir"
  ops=$(grep -c ' = mpc\.' "$WORK/bert.mlir" || true)
  for variant in $variants; do
    flags=()
    [ "$variant" = checks ] && flags=(--check-numerics)
    best=""
    peak=0
    for _ in $(seq "$REPEAT"); do
      /usr/bin/time -f '%e %M' -o "$WORK/time" "$BIN/mpc-compile" \
        "$WORK/bert.mlir" --train --optimizer="kind=adam lr=1e-4" --amp=O2 \
        "${flags[@]}" -o "$WORK/bert"
      read -r seconds kib < "$WORK/time"
      if [ -z "$best" ] || awk -v a="$seconds" -v b="$best" 'BEGIN { exit !(a < b) }'; then
        best=$seconds
      fi
      [ "$kib" -gt "$peak" ] && peak=$kib
    done
    printf '%-8s %-7s %10s %12s %10s\n' "$layers" "$variant" "$ops" "$best" \
      $((peak / 1024))
    printf '{"layers": %d, "flags": "%s", "forward_ops": %d, "seconds": %s, "peak_kib": %d}\n' \
      "$layers" "$variant" "$ops" "$best" "$peak" >> "$OUT"
  done
done
for ops in ${CHAIN:-}; do
  python3 "$ROOT/bench/models.py" chain --ops "$ops" -o "$WORK/chain.mlir"
  /usr/bin/time -f '%e %M' -o "$WORK/time" "$BIN/mpc-compile" \
    "$WORK/chain.mlir" --train --optimizer="kind=sgd lr=0.01" -o "$WORK/chain"
  read -r seconds kib < "$WORK/time"
  printf '%-8s %-7s %10s %12s %10s\n' chain plain "$ops" "$seconds" \
    $((kib / 1024))
  printf '{"chain_ops": %d, "seconds": %s, "peak_kib": %d}\n' \
    "$ops" "$seconds" "$kib" >> "$OUT"
done
python3 - "$OUT" << 'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["layers"], r.get("flags", "plain")): r for r in rows if "layers" in r}
for (layers, flags), r in by.items():
    four = by.get((layers * 4, flags))
    if four:
        print("%d -> %d layers (%s): %.2fx the time, %.2fx the memory "
              "(linear: 4x)"
              % (layers, four["layers"], flags, four["seconds"] / r["seconds"],
                 four["peak_kib"] / r["peak_kib"]))
chains = {r["chain_ops"]: r for r in rows if "chain_ops" in r}
for r in chains.values():
    five = chains.get(r["chain_ops"] * 5)
    if five:
        print("chain %d -> %d ops: %.2fx the time, %.2fx the memory "
              "(linear: 5x)" % (r["chain_ops"], five["chain_ops"],
                                five["seconds"] / r["seconds"],
                                five["peak_kib"] / r["peak_kib"]))
PY
