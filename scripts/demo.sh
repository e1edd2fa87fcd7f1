#!/usr/bin/env bash
# The main job on the examples: parse and verify each example training graph
# with mpc-opt, print a summary per graph (ops by kind, parameters, parameter
# bytes), then what automatic mixed precision (O2, f16) does to it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

for model in mlp bert_encoder unet; do
  file="$MPC_ROOT/examples/$model.mlir"
  echo "== $model (examples/$model.mlir)"
  "$MPC_BUILD/bin/mpc-opt" "$file" --mpc-verify-graph --mpc-graph-summary \
    -o /dev/null
  echo "-- mixed precision, O2 f16 (--mpc-assign-precision):"
  "$MPC_BUILD/bin/mpc-opt" "$file" \
    --mpc-assign-precision="level=O2 alignment-remarks=false report=- report-format=table" \
    -o /dev/null | tail -n 3 | sed 's/^/  /'
done

# Training: compile the MLP's hand-written training step into an executable
# (CPU reference backend) and train it on a synthetic 10-class dataset,
# in MPC_DEMO_DIR (default build/demo).
demo="${MPC_DEMO_DIR:-$MPC_BUILD/demo}"
mkdir -p "$demo"
if [[ ! -f "$demo/mlp_train.npz" ]]; then
  python3 "$MPC_ROOT/scripts/make_dataset.py" --samples 1024 --noise 4 \
    -o "$demo/mlp_train.npz"
fi
echo "== training examples/mlp.mlir (mpc-compile, CPU backend)"
"$MPC_BUILD/bin/mpc-compile" "$MPC_ROOT/examples/mlp.mlir" -o "$demo/mlp-train"
"$demo/mlp-train" --data "$demo/mlp_train.npz" --steps 40 --log-every 5 \
  --metrics "$demo/mlp-metrics.jsonl" --checkpoint "$demo/mlp.safetensors"
echo "metrics: $demo/mlp-metrics.jsonl, checkpoint: $demo/mlp.safetensors"
