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

lstmhidden   LSTM without hidden_size
lstmlens     LSTM whose sequence_lens is a graph input
lstmstate    LSTM whose initial_h is [1, 1, 3] for a hidden size of 2
trilubig     Trilu of [8192, 4096] (a mask of 2^25 elements)
trilu16      Trilu of float16 data
d2smode      DepthToSpace with mode 'XYZ'
d2sblock     DepthToSpace of 3 channels by blocks of 2
d2sblock0    DepthToSpace with a blocksize of 0
d2sbig       DepthToSpace with a blocksize of 70000
s2dsize      SpaceToDepth of a 3x4 image by blocks of 2
celu0        Celu with an alpha of 0
eyerank      EyeLike of a [2, 3, 4] input
twoheads     two outputs (logits and an auxiliary head), for --loss
eyebig       EyeLike of a [8192, 4096] input (2^25 elements)
geindex      GatherElements of [2, 3] by a constant index 5 along axis 1
gewide       GatherElements of [2, 3] by indices [3, 3] along axis 1
gebig        GatherElements of [1, 70000] by indices [1, 4000]
tilebig      Tile repeating an axis 5000 times
tileinput    Tile whose repeats are a graph input
cumsumbig    CumSum along an axis of 8192
einsumtypes  Einsum of a float and a float16 operand
einsumlabel  Einsum 'i->j'
padvalue     Pad whose constant value is a graph input
padneg       Pad with pads of -1 (a crop)
dropouttrain Dropout whose training_mode is a graph input
constfloat   Constant given as value_float
constint8    Constant of int8 values
gatheraxis1  Gather along axis 1 by indices that are a graph input
slicenegbig  Slice taking 8200 rows with a step of -1
poolneg      MaxPool with a pad of -1
stride0      MaxPool with a stride of 0
instrank     InstanceNormalization of [2, 3]
instscale    InstanceNormalization whose scale is [2] for 3 channels
convtshape1  ConvTranspose whose output_shape gives one size
resizerank   Resize of [4, 4] data
resizeinput  Resize whose scales are a graph input
resize16     Resize (linear) of float16 data
resizebig    Resize (linear) of an axis of 8192 to 16384
celabel64    SoftmaxCrossEntropyLoss with a label of 2^40
cerank       SoftmaxCrossEntropyLoss of [3] scores
ceweights    SoftmaxCrossEntropyLoss with 2 class weights for 3 classes
cereduction  SoftmaxCrossEntropyLoss with reduction 'max'
nllweights   NegativeLogLikelihoodLoss with 2 class weights for 3 classes
cofvalue     ConstantOfShape whose value holds two elements
cofbig       ConstantOfShape of 2^21 integers
rangebig     Range of 2^30 values
shapemul     Mul of shape values 2^62 * 4 (feeding a Reshape)
shapediv     Div of shape values by 0
shapeprod    ReduceProd of shape values 2^40 * 2^40
domain       a node of the domain com.example

and, with their outputs' sizes left to ONNX's inference (symbolic
dimensions in the model):

convdil0     Conv with a dilation of 0
convkernel   Conv whose kernel_shape [0, 3] is not its filter's [3, 3]
avgkernel0   AveragePool with a kernel of 0
convtdil0    ConvTranspose with a dilation of 0
convtpads    ConvTranspose padded beyond its output (inferred size -4)

and two that import but take no loss:

notbool      Not of a bool [3, 4] (a bool output: --loss mse refuses it)
rank1        Relu of [3] (--loss cross_entropy needs [batch, classes, ...])
twoshapes    two outputs of [2, 3] and [2, 4] (--loss-output: one shape)
twotypes     two outputs, f32 and f16 (--loss-output: one element type)

and two it takes:

boolmask     Where of a BOOL initializer [2, 2] (a registered bool buffer,
             a causal mask) between x and y
rank3        Relu of [2, 3, 4] (--loss cross_entropy: 3 classes, labels
             [2, 4], as PyTorch's K-dimensional cross_entropy)
"""
import os
import sys

from make_newer_opsets import (FLOAT, FLOAT16, INT64, attr_f, attr_i,
                               attr_ints, attr_s, ld, model, node, tensor,
                               value_info, vint, write)

BOOL, INT8, INT32 = 9, 3, 6


def bool_tensor(name, dims, values):
    """A BOOL TensorProto (data_type 9, one raw byte per element)."""
    return (b"".join(vint(1, d) for d in dims) + vint(2, 9) + ld(8, name) +
            ld(9, bytes(values)))


def raw_tensor(name, dims, dtype, raw):
    """A TensorProto of `dtype` with its raw bytes."""
    return (b"".join(vint(1, d) for d in dims) + vint(2, dtype) +
            ld(8, name) + ld(9, raw))


def attr_t(name, t):
    """A TENSOR attribute."""
    return ld(1, name) + ld(5, t) + vint(20, 4)


def symbolic_model(nodes, inputs, outputs, initializers=()):
    """model() at opset 17 whose outputs (names) are float tensors of rank
    4 with symbolic dimensions: their sizes are ONNX's inference's."""
    def symbolic(name):
        dims = b"".join(ld(1, ld(2, "d%d" % k)) for k in range(4))
        return ld(1, name) + ld(2, ld(1, vint(1, FLOAT) + ld(2, dims)))
    graph = (b"".join(ld(1, n) for n in nodes) + ld(2, "g") +
             b"".join(ld(5, t) for t in initializers) +
             b"".join(ld(11, value_info(*i)) for i in inputs) +
             b"".join(ld(12, symbolic(o)) for o in outputs))
    return (vint(1, 8) + ld(2, "make_refusals") + ld(7, graph) +
            ld(8, ld(1, "") + vint(2, 17)))


def lstm(one, inputs=("x", "w", "r"), attrs=(), graph_inputs=(),
         initializers=()):
    """LSTM of x [3, 1, 2] with a hidden size of 2 (where given)."""
    return model(
        [node("LSTM", list(inputs), ["y"], "lstm", list(attrs))],
        [("x", [3, 1, 2])] + list(graph_inputs), [("y", [3, 1, 1, 2])], 17,
        [tensor("w", [1, 8, 2], FLOAT, one[:16]),
         tensor("r", [1, 8, 2], FLOAT, one[:16])] + list(initializers))


def cross_entropy(op, scores, attrs=(), inputs=("s", "l"),
                  initializers=(), labels=True):
    """op of scores [2, 3] (or `scores`) and int64 labels (a graph input
    where `labels`)."""
    graph_inputs = [("s", scores)]
    if labels:
        graph_inputs.append(("l", scores[:1] + scores[2:], INT64))
    return model([node(op, list(inputs), ["y"], "ce", list(attrs))],
                 graph_inputs, [("y", [])], 17, list(initializers))


def shape_arithmetic(op, a, b):
    """op of two int64 constants [1], whose result is a Reshape's shape."""
    return model(
        [node(op, ["a", "b"], ["shape"], "shape"),
         node("Reshape", ["x", "shape"], ["y"], "reshape")],
        [("x", [6])], [("y", [6])], 17,
        [tensor("a", [1], INT64, [a]), tensor("b", [1], INT64, [b])])


def main():
    out = sys.argv[1]
    one = [1.0] * 64
    two_axes = [tensor("p", [4], INT64, [0, 1, 0, 1])]
    w1133 = [tensor("w", [1, 1, 3, 3], FLOAT, one[:9])]
    w2133 = [tensor("w", [2, 1, 3, 3], FLOAT, one[:18])]
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
        "lstmhidden": lstm(one),
        "lstmlens": lstm(one, ["x", "w", "r", "", "lens"],
                         [attr_i("hidden_size", 2)], [("lens", [1], INT32)]),
        "lstmstate": lstm(one, ["x", "w", "r", "", "", "h0"],
                          [attr_i("hidden_size", 2)],
                          initializers=[tensor("h0", [1, 1, 3], FLOAT,
                                               [0.0] * 3)]),
        "trilubig": model(
            [node("Trilu", ["x"], ["y"], "trilu")],
            [("x", [8192, 4096])], [("y", [8192, 4096])], 17),
        "d2smode": model(
            [node("DepthToSpace", ["x"], ["y"], "d2s",
                  [attr_i("blocksize", 2), attr_s("mode", "XYZ")])],
            [("x", [1, 4, 2, 2])], [("y", [1, 1, 4, 4])], 17),
        "d2sblock": model(
            [node("DepthToSpace", ["x"], ["y"], "d2s",
                  [attr_i("blocksize", 2)])],
            [("x", [1, 3, 2, 2])], [("y", [1, 0, 4, 4])], 17),
        "d2sblock0": model(
            [node("DepthToSpace", ["x"], ["y"], "d2s",
                  [attr_i("blocksize", 0)])],
            [("x", [1, 4, 2, 2])], [("y", [1, 4, 2, 2])], 17),
        "d2sbig": model(
            [node("DepthToSpace", ["x"], ["y"], "d2s",
                  [attr_i("blocksize", 70000)])],
            [("x", [1, 4, 2, 2])], [("y", [1, 0, 140000, 140000])], 17),
        "s2dsize": model(
            [node("SpaceToDepth", ["x"], ["y"], "s2d",
                  [attr_i("blocksize", 2)])],
            [("x", [1, 1, 3, 4])], [("y", [1, 4, 1, 2])], 17),
        "celu0": model(
            [node("Celu", ["x"], ["y"], "celu", [attr_f("alpha", 0.0)])],
            [("x", [2, 3])], [("y", [2, 3])], 17),
        "twoheads": model(
            [node("Relu", ["x"], ["logits"], "relu"),
             node("Sigmoid", ["x"], ["aux"], "sigmoid")],
            [("x", [2, 3]), ("y", [2], INT64)],
            [("logits", [2, 3]), ("aux", [2, 3])], 17),
        "eyerank": model(
            [node("EyeLike", ["x"], ["y"], "eye")],
            [("x", [2, 3, 4])], [("y", [2, 3, 4])], 17),
        "eyebig": model(
            [node("EyeLike", ["x"], ["y"], "eye")],
            [("x", [8192, 4096])], [("y", [8192, 4096])], 17),
        "geindex": model(
            [node("GatherElements", ["x", "i"], ["y"], "ge",
                  [attr_i("axis", 1)])],
            [("x", [2, 3])], [("y", [2, 2])], 17,
            [tensor("i", [2, 2], INT64, [0, 5, 1, 2])]),
        "gewide": model(
            [node("GatherElements", ["x", "i"], ["y"], "ge",
                  [attr_i("axis", 1)])],
            [("x", [2, 3]), ("i", [3, 3], INT64)], [("y", [3, 3])], 17),
        "gebig": model(
            [node("GatherElements", ["x", "i"], ["y"], "ge",
                  [attr_i("axis", 1)])],
            [("x", [1, 70000]), ("i", [1, 4000], INT64)], [("y", [1, 4000])],
            17),
        "trilu16": model(
            [node("Trilu", ["x"], ["y"], "trilu")],
            [("x", [3, 3], FLOAT16)], [("y", [3, 3], FLOAT16)], 17),
        "tilebig": model(
            [node("Tile", ["x", "r"], ["y"], "tile")],
            [("x", [2, 3])], [("y", [2, 15000])], 17,
            [tensor("r", [2], INT64, [1, 5000])]),
        "tileinput": model(
            [node("Tile", ["x", "r"], ["y"], "tile")],
            [("x", [2, 3]), ("r", [2], INT64)], [("y", [2, 3])], 17),
        "cumsumbig": model(
            [node("CumSum", ["x", "a"], ["y"], "cumsum")],
            [("x", [8192])], [("y", [8192])], 17,
            [tensor("a", [], INT64, [0])]),
        "einsumtypes": model(
            [node("Einsum", ["a", "b"], ["y"], "e",
                  [attr_s("equation", "ij,jk->ik")])],
            [("a", [2, 3]), ("b", [3, 4], FLOAT16)], [("y", [2, 4])], 17),
        "einsumlabel": model(
            [node("Einsum", ["a"], ["y"], "e", [attr_s("equation", "i->j")])],
            [("a", [3])], [("y", [3])], 17),
        "padvalue": model(
            [node("Pad", ["x", "p", "v"], ["y"], "pad")],
            [("x", [2, 3]), ("v", [])], [("y", [2, 5])], 17, two_axes),
        "padneg": model(
            [node("Pad", ["x", "p"], ["y"], "pad")],
            [("x", [2, 3])], [("y", [2, 1])], 17,
            [tensor("p", [4], INT64, [0, -1, 0, -1])]),
        "dropouttrain": model(
            [node("Dropout", ["x", "r", "t"], ["y"], "dropout")],
            [("x", [2, 3]), ("t", [], BOOL)], [("y", [2, 3])], 17,
            [tensor("r", [], FLOAT, [0.5])]),
        "constfloat": model(
            [node("Constant", [], ["c"], "c", [attr_f("value_float", 2.0)]),
             node("Add", ["x", "c"], ["y"], "add")],
            [("x", [3])], [("y", [3])], 17),
        "constint8": model(
            [node("Constant", [], ["c"], "c",
                  [attr_t("value", raw_tensor("v", [3], INT8, b"\1\2\3"))]),
             node("Cast", ["c"], ["cf"], "cast", [attr_i("to", FLOAT)]),
             node("Add", ["x", "cf"], ["y"], "add")],
            [("x", [3])], [("y", [3])], 17),
        "gatheraxis1": model(
            [node("Gather", ["x", "i"], ["y"], "gather", [attr_i("axis", 1)])],
            [("x", [4, 3]), ("i", [2], INT64)], [("y", [4, 2])], 17),
        "slicenegbig": model(
            [node("Slice", ["x", "s", "e", "a", "st"], ["y"], "slice")],
            [("x", [8200])], [("y", [8200])], 17,
            [tensor("s", [1], INT64, [-1]), tensor("e", [1], INT64, [-9000]),
             tensor("a", [1], INT64, [0]), tensor("st", [1], INT64, [-1])]),
        "poolneg": model(
            [node("MaxPool", ["x"], ["y"], "pool",
                  [attr_ints("kernel_shape", [2, 2]),
                   attr_ints("pads", [0, 0, -1, 0])])],
            [("x", [1, 1, 4, 4])], [("y", [1, 1, 2, 3])], 17),
        "stride0": model(
            [node("MaxPool", ["x"], ["y"], "pool",
                  [attr_ints("kernel_shape", [2, 2]),
                   attr_ints("strides", [0, 1])])],
            [("x", [1, 1, 4, 4])], [("y", [1, 1, 3, 3])], 17),
        "instrank": model(
            [node("InstanceNormalization", ["x", "s", "b"], ["y"], "in")],
            [("x", [2, 3])], [("y", [2, 3])], 17,
            [tensor("s", [3], FLOAT, one[:3]),
             tensor("b", [3], FLOAT, one[:3])]),
        "instscale": model(
            [node("InstanceNormalization", ["x", "s", "b"], ["y"], "in")],
            [("x", [2, 3, 4])], [("y", [2, 3, 4])], 17,
            [tensor("s", [2], FLOAT, one[:2]),
             tensor("b", [3], FLOAT, one[:3])]),
        "convtshape1": model(
            [node("ConvTranspose", ["x", "w"], ["y"], "convt",
                  [attr_ints("output_shape", [6])])],
            [("x", [1, 2, 4, 4])], [("y", [1, 1, 6, 6])], 17, w2133),
        "resizerank": model(
            [node("Resize", ["x", "", "sc"], ["y"], "resize")],
            [("x", [4, 4])], [("y", [8, 8])], 17,
            [tensor("sc", [2], FLOAT, [2.0, 2.0])]),
        "resizeinput": model(
            [node("Resize", ["x", "", "sc"], ["y"], "resize")],
            [("x", [1, 1, 4, 4]), ("sc", [4])], [("y", [1, 1, 8, 8])], 17),
        "resize16": model(
            [node("Resize", ["x", "", "sc"], ["y"], "resize",
                  [attr_s("mode", "linear")])],
            [("x", [1, 1, 4, 4], FLOAT16)], [("y", [1, 1, 8, 8], FLOAT16)],
            17, [tensor("sc", [4], FLOAT, [1.0, 1.0, 2.0, 2.0])]),
        "resizebig": model(
            [node("Resize", ["x", "", "sc"], ["y"], "resize",
                  [attr_s("mode", "linear")])],
            [("x", [1, 1, 4, 8192])], [("y", [1, 1, 4, 16384])], 17,
            [tensor("sc", [4], FLOAT, [1.0, 1.0, 1.0, 2.0])]),
        "celabel64": cross_entropy(
            "SoftmaxCrossEntropyLoss", [2, 3], labels=False,
            initializers=[tensor("l", [2], INT64, [0, 1 << 40])]),
        "cerank": cross_entropy("SoftmaxCrossEntropyLoss", [3]),
        "ceweights": cross_entropy(
            "SoftmaxCrossEntropyLoss", [2, 3], inputs=["s", "l", "w"],
            initializers=[tensor("w", [2], FLOAT, one[:2])]),
        "cereduction": cross_entropy("SoftmaxCrossEntropyLoss", [2, 3],
                                     [attr_s("reduction", "max")]),
        "nllweights": cross_entropy(
            "NegativeLogLikelihoodLoss", [2, 3], inputs=["s", "l", "w"],
            initializers=[tensor("w", [2], FLOAT, one[:2])]),
        "cofvalue": model(
            [node("ConstantOfShape", ["shape"], ["c"], "cos",
                  [attr_t("value", tensor("v", [2], FLOAT, [1.0, 2.0]))]),
             node("Add", ["x", "c"], ["y"], "add")],
            [("x", [3])], [("y", [3])], 17,
            [tensor("shape", [1], INT64, [3])]),
        "cofbig": model(
            [node("ConstantOfShape", ["shape"], ["c"], "cos",
                  [attr_t("value", tensor("v", [1], INT64, [1]))]),
             node("Reshape", ["x", "c"], ["y"], "reshape")],
            [("x", [3])], [("y", [3])], 17,
            [tensor("shape", [1], INT64, [1 << 21])]),
        "rangebig": model(
            [node("Range", ["start", "limit", "delta"], ["shape"], "range"),
             node("Reshape", ["x", "shape"], ["y"], "reshape")],
            [("x", [6])], [("y", [6])], 17,
            [tensor("start", [], INT64, [0]),
             tensor("limit", [], INT64, [1 << 30]),
             tensor("delta", [], INT64, [1])]),
        "shapemul": shape_arithmetic("Mul", 1 << 62, 4),
        "shapediv": shape_arithmetic("Div", 6, 0),
        "shapeprod": model(
            [node("ReduceProd", ["a"], ["p"], "prod"),
             node("Reshape", ["x", "p"], ["y"], "reshape")],
            [("x", [6])], [("y", [6])], 17,
            [tensor("a", [2], INT64, [1 << 40, 1 << 40])]),
        "domain": model(
            [node("Foo", ["x"], ["y"], "foo") + ld(7, "com.example")],
            [("x", [3])], [("y", [3])], 17) +
        ld(8, ld(1, "com.example") + vint(2, 1)),
        "convdil0": symbolic_model(
            [node("Conv", ["x", "w"], ["y"], "conv",
                  [attr_ints("dilations", [0, 1])])],
            [("x", [1, 1, 4, 4])], ["y"], w1133),
        "convkernel": symbolic_model(
            [node("Conv", ["x", "w"], ["y"], "conv",
                  [attr_ints("kernel_shape", [0, 3])])],
            [("x", [1, 1, 4, 4])], ["y"], w1133),
        "avgkernel0": symbolic_model(
            [node("AveragePool", ["x"], ["y"], "pool",
                  [attr_ints("kernel_shape", [0, 2])])],
            [("x", [1, 1, 4, 4])], ["y"]),
        "convtdil0": symbolic_model(
            [node("ConvTranspose", ["x", "w"], ["y"], "convt",
                  [attr_ints("dilations", [0, 1])])],
            [("x", [1, 2, 4, 4])], ["y"], w2133),
        "convtpads": symbolic_model(
            [node("ConvTranspose", ["x", "w"], ["y"], "convt",
                  [attr_ints("pads", [10, 10, 0, 0])])],
            [("x", [1, 2, 4, 4])], ["y"], w2133),
        "notbool": model(
            [node("Not", ["x"], ["y"], "not")],
            [("x", [3, 4], BOOL)], [("y", [3, 4], BOOL)], 17),
        "rank3": model(
            [node("Relu", ["x"], ["y"], "relu")],
            [("x", [2, 3, 4])], [("y", [2, 3, 4])], 17),
        "rank1": model(
            [node("Relu", ["x"], ["y"], "relu")],
            [("x", [3])], [("y", [3])], 17),
        "twoshapes": model(
            [node("Relu", ["x"], ["logits"], "relu"),
             node("Concat", ["x", "x"], ["wide"], "concat",
                  [attr_i("axis", 1)])],
            [("x", [2, 3])], [("logits", [2, 3]), ("wide", [2, 6])], 17),
        "twotypes": model(
            [node("Relu", ["x"], ["logits"], "relu"),
             node("Cast", ["x"], ["half"], "cast", [attr_i("to", FLOAT16)])],
            [("x", [2, 3])],
            [("logits", [2, 3]), ("half", [2, 3], FLOAT16)], 17),
        "boolmask": model(
            [node("Where", ["mask", "x", "y"], ["z"], "where")],
            [("x", [2, 2]), ("y", [2, 2])], [("z", [2, 2])], 17,
            [bool_tensor("mask", [2, 2], [1, 0, 1, 1])]),
    }
    for name, data in cases.items():
        write(out, name, data)


if __name__ == "__main__":
    main()
