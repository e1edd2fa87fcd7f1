#!/usr/bin/env python3
"""A model with one large weight (standard library only):

  wide_matmul.py make OUT.mlir ROWS COLS
      the loss mse(x [4, ROWS] @ w [ROWS, COLS], t [4, COLS]), w a
      trainable global whose elements all differ in turn; one batch of
      zeros for each input in OUT.data/x.npy and t.npy
  wide_matmul.py check CKPT.safetensors ROWS COLS
      exit 0 when the checkpoint's "w" holds exactly those elements
"""
import json
import os
import struct
import sys


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
        w_type = "tensor<%dx%dxf32>" % (rows, cols)
        x_type, y_type = "tensor<4x%dxf32>" % rows, "tensor<4x%dxf32>" % cols
        hex_w = struct.pack("<%df" % len(w), *w).hex().upper()
        with open(path, "w") as f:
            f.write(
                "ml_program.global private mutable @w(dense<\"0x%s\"> : %s)"
                " : %s\n" % (hex_w, w_type, w_type) +
                "func.func @loss(%%x: %s, %%t: %s) -> tensor<f32> {\n"
                % (x_type, y_type) +
                "  %%w = ml_program.global_load @w : %s\n" % w_type +
                "  %%y = mpc.matmul %%x, %%w : %s, %s\n" % (x_type, w_type) +
                "  %%l = mpc.mse %%y, %%t : %s, %s\n" % (y_type, y_type) +
                "  return %l : tensor<f32>\n}\n")
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
