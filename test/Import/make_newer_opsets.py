#!/usr/bin/env python3
"""Writes ONNX models of opsets 18 to 21 (which PyTorch 1.13 cannot
export) with their test data, encoded here (standard library only):

  gelu20/   Gelu (opset 20), approximate none and tanh, on x [4, 6]
  reduce18/ ReduceMean with its axes as a constant input (opset 18),
            and ReduceMax with noop_with_empty_axes and no axes
  mish18/   Mish (opset 18): not converted
  opset21/  Relu at opset 21: newer than the importer reads
  convsame/ Conv (opset 17) with auto_pad SAME_UPPER and a 2x2 kernel:
            an odd total padding, the extra row and column at the end
  avgceil/  AveragePool (opset 17) with ceil_mode and count_include_pad:
            not imported
  powint/   Pow (opset 17) of x [4] (float) to the power of y [4] (int64,
            a graph input): the exponent cast to the base's type
  powmixed/ Pow (opset 17) of x [4] (float16) to the power of y [4]
            (float): not imported
  huge/     Relu (opset 17) of x [2^21, 2^21]: too large to import
  clipbounds/ Clip (opset 17) of x [4] to a lower bound of [2]: refused
            (the bounds are scalars)
  bneps/    BatchNormalization (opset 17, inference) with epsilon 0:
            refused

Each directory holds model.onnx and, where it imports, test_data_set_0
(input_0.pb, output_*.pb) in the layout of ONNX's node tests, the outputs
computed here in double precision.

  make_newer_opsets.py OUT
"""
import math
import os
import random
import struct
import sys


def varint(n):
    if n < 0:
        n += 1 << 64
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def key(field, wire):
    return varint(field << 3 | wire)


def ld(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def vint(field, n):
    return key(field, 0) + varint(n)


FLOAT, INT64, FLOAT16 = 1, 7, 10


def tensor(name, dims, dtype, values):
    body = b"".join(vint(1, d) for d in dims) + vint(2, dtype) + ld(8, name)
    if dtype == FLOAT:
        body += ld(9, struct.pack("<%df" % len(values), *values))
    else:
        body += ld(9, struct.pack("<%dq" % len(values), *values))
    return body


def attr_s(name, value):
    return ld(1, name) + ld(4, value) + vint(20, 3)


def attr_f(name, value):
    return ld(1, name) + key(2, 5) + struct.pack("<f", value) + vint(20, 1)


def attr_i(name, value):
    return ld(1, name) + vint(3, value) + vint(20, 2)


def attr_ints(name, values):
    return ld(1, name) + b"".join(vint(8, v) for v in values) + vint(20, 7)


def node(op, inputs, outputs, name, attrs=()):
    return (b"".join(ld(1, i) for i in inputs) +
            b"".join(ld(2, o) for o in outputs) + ld(3, name) + ld(4, op) +
            b"".join(ld(5, a) for a in attrs))


def value_info(name, dims, dtype=FLOAT):
    dim = b"".join(ld(1, vint(1, d)) for d in dims)
    return ld(1, name) + ld(2, ld(1, vint(1, dtype) + ld(2, dim)))


def model(nodes, inputs, outputs, opset, initializers=()):
    graph = (b"".join(ld(1, n) for n in nodes) + ld(2, "g") +
             b"".join(ld(5, t) for t in initializers) +
             b"".join(ld(11, value_info(*i)) for i in inputs) +
             b"".join(ld(12, value_info(*o)) for o in outputs))
    return (vint(1, 9 if opset >= 19 else 8) + ld(2, "make_newer_opsets") +
            ld(7, graph) + ld(8, ld(1, "") + vint(2, opset)))


def write(out, name, data, inputs=(), outputs=()):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(data)
    if not inputs:
        return
    t = os.path.join(d, "test_data_set_0")
    os.makedirs(t, exist_ok=True)
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for i, (aname, dims, values) in enumerate(arrays):
            with open(os.path.join(t, "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(tensor(aname, dims, FLOAT, values))


def main():
    out = sys.argv[1]
    rng = random.Random(0)
    x = [rng.uniform(-4, 4) for _ in range(24)]
    x = list(struct.unpack("<24f", struct.pack("<24f", *x)))  # as stored
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    tanh = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) *
                                     (v + 0.044715 * v ** 3))) for v in x]
    write(out, "gelu20",
          model([node("Gelu", ["x"], ["exact"], "gelu_exact"),
                 node("Gelu", ["x"], ["tanh"], "gelu_tanh",
                      [attr_s("approximate", "tanh")])],
                [("x", [4, 6])], [("exact", [4, 6]), ("tanh", [4, 6])], 20),
          [("x", [4, 6], x)],
          [("exact", [4, 6], exact), ("tanh", [4, 6], tanh)])
    mean = [sum(x[r * 6:(r + 1) * 6]) / 6 for r in range(4)]
    write(out, "reduce18",
          model([node("ReduceMean", ["x", "axes"], ["mean"], "mean",
                      [attr_i("keepdims", 0)]),
                 node("ReduceMax", ["x"], ["same"], "noop",
                      [attr_i("noop_with_empty_axes", 1)])],
                [("x", [4, 6])], [("mean", [4]), ("same", [4, 6])], 18,
                [tensor("axes", [1], INT64, [1])]),
          [("x", [4, 6], x)], [("mean", [4], mean), ("same", [4, 6], x)])
    # 1x1x5x5 input, 2x2 filter, SAME_UPPER: 4 of 5 rows and columns get
    # no padding before, one of zeros after.
    img = [rng.uniform(-2, 2) for _ in range(25)]
    img = list(struct.unpack("<25f", struct.pack("<25f", *img)))
    filt = [0.5, -1.0, 0.25, 2.0]
    conv = []
    for i in range(5):
        for j in range(5):
            acc = 0.0
            for a in range(2):
                for b in range(2):
                    if i + a < 5 and j + b < 5:
                        acc += img[(i + a) * 5 + j + b] * filt[a * 2 + b]
            conv.append(acc)
    write(out, "convsame",
          model([node("Conv", ["x", "w"], ["y"], "conv",
                      [attr_s("auto_pad", "SAME_UPPER"),
                       attr_ints("kernel_shape", [2, 2])])],
                [("x", [1, 1, 5, 5])], [("y", [1, 1, 5, 5])], 17,
                [tensor("w", [1, 1, 2, 2], FLOAT, filt)]),
          [("x", [1, 1, 5, 5], img)], [("y", [1, 1, 5, 5], conv)])
    write(out, "avgceil",
          model([node("AveragePool", ["x"], ["y"], "pool",
                      [attr_ints("kernel_shape", [2, 2]),
                       attr_ints("strides", [2, 2]), attr_i("ceil_mode", 1),
                       attr_i("count_include_pad", 1)])],
                [("x", [1, 1, 5, 5])], [("y", [1, 1, 3, 3])], 17))
    write(out, "powint",
          model([node("Pow", ["x", "y"], ["z"], "pow")],
                [("x", [4]), ("y", [4], INT64)], [("z", [4])], 17))
    write(out, "powmixed",
          model([node("Pow", ["x", "y"], ["z"], "pow")],
                [("x", [4], FLOAT16), ("y", [4])], [("z", [4], FLOAT16)], 17))
    write(out, "huge",
          model([node("Relu", ["x"], ["y"], "relu")],
                [("x", [1 << 21, 1 << 21])], [("y", [1 << 21, 1 << 21])], 17))
    write(out, "clipbounds",
          model([node("Clip", ["x", "lo"], ["y"], "clip")], [("x", [4])],
                [("y", [4])], 17, [tensor("lo", [2], FLOAT, [0.0, 1.0])]))
    write(out, "bneps",
          model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                      "bn", [attr_f("epsilon", 0.0)])],
                [("x", [1, 2, 2, 2])], [("y", [1, 2, 2, 2])], 17,
                [tensor(n, [2], FLOAT, [1.0, 1.0]) for n in "sbmv"]))
    write(out, "mish18",
          model([node("Mish", ["x"], ["y"], "mish")], [("x", [4, 6])],
                [("y", [4, 6])], 18))
    write(out, "opset21",
          model([node("Relu", ["x"], ["y"], "relu")], [("x", [4, 6])],
                [("y", [4, 6])], 21))


if __name__ == "__main__":
    main()
