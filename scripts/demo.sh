#!/usr/bin/env bash
# The main job on the examples: parse and verify each example training graph
# with mpc-opt and print a summary per graph (ops by kind, parameters,
# parameter bytes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

for model in mlp bert_encoder unet; do
  file="$MPC_ROOT/examples/$model.mlir"
  echo "== $model ($file)"
  "$MPC_BUILD/bin/mpc-opt" "$file" --mpc-verify-graph --mpc-graph-summary \
    -o /dev/null
done
