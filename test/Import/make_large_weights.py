#!/usr/bin/env python3
"""Models whose weights the importer writes as hex, and a check of what it
wrote (standard library only):

  make_large_weights.py make OUT
      OUT/weights/model.onnx: y = x [2, 300] @ (W + S + V + Cast(H)) + B,
      W, V [300, 7] f32 of distinct elements (8400 bytes), S [300, 7] f32
      all 0.5 (a splat), H [300, 7] f16 of distinct elements, B [7] f32
      (28 bytes); OUT/spelled/model.onnx: the same, its input named
      like the importer's stand-in for a weight
  make_large_weights.py check MLIR ROUNDTRIP
      exit 0 when MLIR (the import) holds W, V and H as hex of exactly
      their bytes, S as a splat and B as a list, and equals ROUNDTRIP
      (the same module printed by mpc-opt) but for its last newline
"""
import os
import re
import struct
import sys

from make_newer_opsets import FLOAT, attr_i, ld, model, node, vint, write

FLOAT16 = 10


def values(n, seed):
    return [((i * 7919 + seed) % 1999 - 999) / 1024.0 for i in range(n)]


def raw(name, dims, dtype, data):
    return (b"".join(vint(1, d) for d in dims) + vint(2, dtype) +
            ld(8, name) + ld(9, data))


WEIGHTS = {
    "W": struct.pack("<2100f", *values(2100, 1)),
    "V": struct.pack("<2100f", *values(2100, 2)),
    "H": struct.pack("<2100e", *values(2100, 3)),
}


def graph(spelled):
    init = [raw("W", [300, 7], FLOAT, WEIGHTS["W"]),
            raw("V", [300, 7], FLOAT, WEIGHTS["V"]),
            raw("S", [300, 7], FLOAT, struct.pack("<2100f", *[0.5] * 2100)),
            raw("H", [300, 7], FLOAT16, WEIGHTS["H"]),
            raw("B", [7], FLOAT, struct.pack("<7f", *values(7, 4)))]
    # The input's name is printed before the weights (a location alias).
    x = "dense_resource<mpc_import_weight_0>" if spelled else "x"
    nodes = [node("Add", ["W", "S"], ["ws"], "ws"),
             node("Add", ["ws", "V"], ["wsv"], "wsv"),
             node("Cast", ["H"], ["h"], "h", [attr_i("to", FLOAT)]),
             node("Add", ["wsv", "h"], ["all"], "all"),
             node("MatMul", [x, "all"], ["xw"], "xw"),
             node("Add", ["xw", "B"], ["y"], "y")]
    return model(nodes, [(x, [2, 300])], [("y", [2, 7])], 17, init)


def check(path, roundtrip):
    text = open(path).read()
    if text.rstrip("\n") != open(roundtrip).read().rstrip("\n"):
        sys.exit("the import differs from its module as MLIR prints it")
    found = re.findall(r'dense<"0x([0-9A-F]+)">', text)
    if sorted(bytes.fromhex(h) for h in found) != sorted(WEIGHTS.values()):
        sys.exit("the hex values are not W's, V's and H's bytes")
    if not re.search(r'dense<5\.000000e-01> : tensor<300x7xf32>', text):
        sys.exit("S: not a splat")
    if not re.search(r'dense<\[-?[0-9.e+-]+(, -?[0-9.e+-]+){6}\]> : '
                     r'tensor<7xf32>', text):
        sys.exit("B: not a list")
    print("W, V, H as hex of their bytes, S a splat, B a list; "
          "as MLIR prints it")


def main():
    if sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
        return
    out = sys.argv[2]
    write(out, "weights", graph(False))
    write(out, "spelled", graph(True))


if __name__ == "__main__":
    main()
