#!/usr/bin/env bash
# Large weights through the tools, on this machine: a model of one linear
# layer (PyTorch's nn.Linear(1024, N, bias=False), exported to ONNX by
# PyTorch) with MIB MiB of random f32 weights (default 512; at most 2047,
# protobuf's limit for a model holding its data; EXTERNAL=1 moves them to
# one external file first, as exporters do past it), imported, compiled
# for training (mse against targets) and run for no step with
# --checkpoint, which writes the initial weights. Prints a JSON line per
# step: seconds, peak resident memory and that peak over the weights'
# size; then checks that the checkpoint's weights are the model's bytes.
#
#   bench/cpu/large_weights.sh > large-weights.jsonl
#   MIB=1024 EXTERNAL=1 bench/cpu/large_weights.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${MPC_BUILD:-$ROOT/build}/bin"
PYTHON="${PYTHON:-/usr/bin/python3}"
MIB=${MIB:-512}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cols=$((MIB * 256))

"$PYTHON" - "$WORK" "$cols" <<'PY'
import sys, torch
work, cols = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
m = torch.nn.Linear(1024, cols, bias=False)
torch.onnx.export(m, torch.randn(4, 1024), work + "/model.onnx",
                  input_names=["x"], output_names=["y"], opset_version=17)
m.weight.detach().numpy().T.tofile(work + "/weights.bin")
PY
model="$WORK/model.onnx"
if [ "${EXTERNAL:-0}" = 1 ]; then
  (cd "$ROOT/test/Import" && "$PYTHON" externalize.py "$model" \
    "$WORK/external.onnx" --one-file weights.data)
  model="$WORK/external.onnx"
fi
"$PYTHON" -c "
import numpy as np, sys
np.savez(sys.argv[1], x=np.ones((4, 1024), np.float32),
         t=np.zeros((4, $cols), np.float32))" "$WORK/data.npz"

timed() { # NAME COMMAND...
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" > /dev/null
  read -r seconds kib < "$WORK/time"
  echo "{\"step\": \"$name\", \"weights_mib\": $MIB, \"external\": ${EXTERNAL:-0}, \"seconds\": $seconds, \"peak_mib\": $((kib / 1024)), \"peak_over_weights\": $(awk "BEGIN { printf \"%.2f\", $kib / 1024 / $MIB }")}"
}
timed import "$BIN/mpc-import-onnx" "$model" -o "$WORK/model.mlir" \
  --input-shape x=4x1024 --loss mse --labels t
timed compile "$BIN/mpc-compile" "$WORK/model.mlir" --train -o "$WORK/train"
timed initial-checkpoint "$WORK/train" --data "$WORK/data.npz" --steps 0 \
  --checkpoint "$WORK/initial.safetensors"
"$PYTHON" - "$WORK" <<'PY'
import json, struct, sys
work = sys.argv[1]
with open(work + "/initial.safetensors", "rb") as f:
    size = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(size))
    # The weight: the largest tensor.
    name = max((k for k in header if k != "__metadata__"),
               key=lambda k: header[k]["data_offsets"][1] -
               header[k]["data_offsets"][0])
    begin, end = header[name]["data_offsets"]
    f.seek(8 + size + begin)
    data = f.read(end - begin)
same = data == open(work + "/weights.bin", "rb").read()
print(json.dumps({"check": "initial weights are the model's bytes",
                  "weight": name, "bytes": len(data), "same": same}))
sys.exit(0 if same else 1)
PY
