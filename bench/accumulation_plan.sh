#!/usr/bin/env bash
# The memory plans and runtime calls of gradient accumulation
# (--accumulate=K): for each benchmark model at O2 f16, compiled for the
# CUDA backend (the plan does not depend on the machine), the arenas of
# the step that consumes the sums (train_step) and of the micro-step
# (train_step_accumulate), the step's peak with parameters and state, the
# sums computed in their globals, and each function's runtime calls
# counted in the lowered module; with the default fusions and with f16
# weight gradients (--no-fuse-weight-grad-sums).
#
#   bench/accumulation_plan.sh          # table on stdout
#
# Results as JSON lines in OUT (default bench/out/accumulation-plan.jsonl).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
OUT="${OUT:-$ROOT/bench/out/accumulation-plan.jsonl}"
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

python3 "$ROOT/bench/models.py" bert --batch 8 --seq 512 --hidden 768 \
  --heads 12 --ffn 3072 --layers 12 --vocab 30522 --classes 2 \
  -o "$WORK/bert.mlir"
python3 "$ROOT/bench/models.py" mlp -o "$WORK/mlp.mlir"
python3 "$ROOT/bench/models.py" unet --batch 16 --image 128 --width 128 \
  -o "$WORK/unet.mlir"
printf '%-6s %-8s %2s %12s %12s %12s %8s %7s %7s\n' model grads K \
  "step MB" "micro MB" "peak MB" globals calls "micro"
for model in bert mlp unet; do
  case $model in
  bert) opt="kind=adam lr=1e-4" k=2 ;;
  mlp) opt="kind=momentum lr=0.1" k=4 ;;
  unet) opt="kind=adam lr=1e-4" k=2 ;;
  esac
  for grads in summed f16; do
    flag=()
    [ "$grads" = f16 ] && flag=(--no-fuse-weight-grad-sums)
    "$BIN/mpc-compile" "$WORK/$model.mlir" --train --optimizer="$opt" \
      --amp=O2 --dtype=f16 --accumulate=$k --backend=cuda "${flag[@]}" \
      --emit=mlir --memory-report="$WORK/report.json" -o "$WORK/lowered.mlir"
    python3 - "$WORK" "$model" "$grads" "$k" "$OUT" << 'PY'
import collections, json, re, sys
work, model, grads, k, out = sys.argv[1:]
fns = {f["function"]: f
       for f in json.load(open(work + "/report.json"))["functions"]}
calls = collections.Counter()
name = None
for line in open(work + "/lowered.mlir"):
    m = re.match(r"\s*llvm\.func @([\w.]+)\(", line)
    if m:
        name = m.group(1).split(".part")[0]
        continue
    calls[name] += len(re.findall(r"call @mpcrt_\w+", line))
step, micro = fns["train_step"], fns["train_step_accumulate"]
row = {"model": model, "weight_grads": grads, "accumulate": int(k),
       "step_arena_bytes": step["arena_bytes"],
       "micro_arena_bytes": micro["arena_bytes"],
       "step_peak_bytes": step["peak_bytes"],
       "step_written_in_globals": step["written_in_globals"],
       "step_calls": calls["train_step"],
       "micro_calls": calls["train_step_accumulate"]}
print("%-6s %-8s %2s %12.1f %12.1f %12.1f %8d %7d %7d" % (
    model, grads, k, row["step_arena_bytes"] / 1e6,
    row["micro_arena_bytes"] / 1e6, row["step_peak_bytes"] / 1e6,
    row["step_written_in_globals"], row["step_calls"], row["micro_calls"]))
with open(out, "a") as f:
    f.write(json.dumps(row) + "\n")
PY
  done
done
