#!/usr/bin/env python3
"""A model with one large weight (standard library only):

  wide_matmul.py make OUT.onnx ROWS COLS
      x [4, ROWS] @ w [ROWS, COLS] -> y, and a target input t [4, COLS]
      (for --loss mse --labels t); w's elements all differ in turn. One
      batch of zeros for each input in OUT.data/x.npy and t.npy
  wide_matmul.py check CKPT.safetensors ROWS COLS
      exit 0 when the checkpoint's "w" holds exactly those elements
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Import"))
from make_newer_opsets import FLOAT, model, node, tensor  # noqa: E402


def weights(rows, cols):
    return [((i * 7919) % 1999 - 999) / 1024.0 for i in range(rows * cols)]


def npy(path, shape):
    """Zeros of f32 as a NumPy .npy file (format 1.0)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                header.encode() + bytes(4 * count))


def main():
    mode, path, rows, cols = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
    w = weights(rows, cols)
    if mode == "make":
        with open(path, "wb") as f:
            f.write(model([node("MatMul", ["x", "w"], ["y"], "mm")],
                          [("x", [4, rows]), ("t", [4, cols])],
                          [("y", [4, cols])], 17,
                          [tensor("w", [rows, cols], FLOAT, w)]))
        os.makedirs(path + ".data", exist_ok=True)
        npy(os.path.join(path + ".data", "x.npy"), [4, rows])
        npy(os.path.join(path + ".data", "t.npy"), [4, cols])
        return
    with open(path, "rb") as f:
        data = f.read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    begin, end = header["w"]["data_offsets"]
    raw = data[8 + size + begin:8 + size + end]
    if header["w"]["dtype"] != "F32" or raw != struct.pack("<%df" % len(w),
                                                          *w):
        sys.exit("w differs from the model's weights")
    print("w: %d elements as in the model" % len(w))


if __name__ == "__main__":
    main()
