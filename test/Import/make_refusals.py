#!/usr/bin/env python3
"""Models the importer refuses, one per reason, encoded here (standard
library only), each NAME/model.onnx at opset 17:

  make_refusals.py OUT

einsum3      Einsum of three operands
einsumsize   Einsum whose shared label has two sizes
lstmclip     LSTM with a clip
cumsumaxis   CumSum along axis 5 of a rank-2 input
tile0        Tile with a repeat of 0
trilu2k      Trilu whose k holds two values
dropout1     Dropout in training mode with a ratio of 1
gatherrange  Gather of a constant index past the axis
slice0       Slice with a step of 0
prelu        PRelu whose slope [3] does not broadcast to [2, 4]
range0       Range with a delta of 0 (its values feed a Reshape)

and one it takes:

boolmask     Where of a BOOL initializer [2, 2] (a registered bool buffer,
             a causal mask) between x and y
"""
import os
import sys

from make_newer_opsets import (FLOAT, INT64, attr_f, attr_i, attr_s, ld,
                               model, node, tensor, vint, write)


def bool_tensor(name, dims, values):
    """A BOOL TensorProto (data_type 9, one raw byte per element)."""
    return (b"".join(vint(1, d) for d in dims) + vint(2, 9) + ld(8, name) +
            ld(9, bytes(values)))


def main():
    out = sys.argv[1]
    one = [1.0] * 64
    cases = {
        "einsum3": model(
            [node("Einsum", ["a", "b", "c"], ["y"], "e",
                  [attr_s("equation", "i,i,i->")])],
            [("a", [3]), ("b", [3]), ("c", [3])], [("y", [])], 17),
        "einsumsize": model(
            [node("Einsum", ["a", "b"], ["y"], "e",
                  [attr_s("equation", "ij,jk->ik")])],
            [("a", [2, 3]), ("b", [4, 5])], [("y", [2, 5])], 17),
        "lstmclip": model(
            [node("LSTM", ["x", "w", "r"], ["y"], "lstm",
                  [attr_i("hidden_size", 2), attr_f("clip", 1.0)])],
            [("x", [3, 1, 2])], [("y", [3, 1, 1, 2])], 17,
            [tensor("w", [1, 8, 2], FLOAT, one[:16]),
             tensor("r", [1, 8, 2], FLOAT, one[:16])]),
        "cumsumaxis": model(
            [node("CumSum", ["x", "axis"], ["y"], "cumsum")],
            [("x", [2, 3])], [("y", [2, 3])], 17,
            [tensor("axis", [], INT64, [5])]),
        "tile0": model(
            [node("Tile", ["x", "repeats"], ["y"], "tile")],
            [("x", [2, 3])], [("y", [0, 3])], 17,
            [tensor("repeats", [2], INT64, [0, 1])]),
        "trilu2k": model(
            [node("Trilu", ["x", "k"], ["y"], "trilu")],
            [("x", [3, 3])], [("y", [3, 3])], 17,
            [tensor("k", [2], INT64, [0, 1])]),
        "dropout1": model(
            [node("Dropout", ["x", "ratio", "train"], ["y"], "dropout")],
            [("x", [2, 3])], [("y", [2, 3])], 17,
            [tensor("ratio", [], FLOAT, [1.0]),
             bool_tensor("train", [], [1])]),
        "gatherrange": model(
            [node("Gather", ["x", "index"], ["y"], "gather",
                  [attr_i("axis", 1)])],
            [("x", [2, 3])], [("y", [2, 2])], 17,
            [tensor("index", [2], INT64, [0, 3])]),
        "slice0": model(
            [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"],
                  "slice")],
            [("x", [2, 3])], [("y", [2, 3])], 17,
            [tensor("starts", [1], INT64, [0]),
             tensor("ends", [1], INT64, [3]),
             tensor("axes", [1], INT64, [1]),
             tensor("steps", [1], INT64, [0])]),
        "prelu": model(
            [node("PRelu", ["x", "slope"], ["y"], "prelu")],
            [("x", [2, 4])], [("y", [2, 4])], 17,
            [tensor("slope", [3], FLOAT, [0.1, 0.2, 0.3])]),
        "range0": model(
            [node("Range", ["start", "limit", "delta"], ["shape"], "range"),
             node("Reshape", ["x", "shape"], ["y"], "reshape")],
            [("x", [6])], [("y", [6])], 17,
            [tensor("start", [], INT64, [6]), tensor("limit", [], INT64, [7]),
             tensor("delta", [], INT64, [0])]),
        "boolmask": model(
            [node("Where", ["mask", "x", "y"], ["z"], "where")],
            [("x", [2, 2]), ("y", [2, 2])], [("z", [2, 2])], 17,
            [bool_tensor("mask", [2, 2], [1, 0, 1, 1])]),
    }
    for name, data in cases.items():
        write(out, name, data)


if __name__ == "__main__":
    main()
