#!/usr/bin/env python3
"""PyTorch's reflection, replication and constant padding exported as
ONNX Pad (modes reflect, edge and constant), in the layout of ONNX's node
tests (model.onnx, test_data_set_0 with PyTorch's output), and a small
CNN that pads with each mode, its data and PyTorch's 10-step SGD trace:

  make_pad.py OUT

  reflect2d/   ReflectionPad2d((3, 1, 2, 0)) on [2, 3, 5, 6]
  edge2d/      ReplicationPad2d((1, 4, 3, 2)) on [2, 3, 5, 6]
  reflect1d/   ReflectionPad1d((2, 3)) on [2, 3, 7]
  edge1d/      ReplicationPad1d((0, 1)) on [2, 3, 7]
  constant3d/  ConstantPad3d(1, -1.5) on [1, 2, 3, 4, 5]
  padcnn.onnx, padcnn-data.npz, padcnn-torch-losses.json:
      ReflectionPad2d(2) -> Conv2d(3, 4, 3) -> ReLU -> ReplicationPad2d(1)
      -> Conv2d(4, 4, 3, stride 2) -> ZeroPad2d((1, 0, 0, 1)) -> Flatten
      -> Linear(144, 3), on 8x8 images
  reflectbig/  Pad mode reflect of x [1, 3] by 3 before axis 1: refused
               (a reflect pad must be smaller than its axis)
  wrap17/      Pad mode wrap at opset 17 (opset 19's mode): refused
"""
import copy
import os
import sys

import numpy
import torch

from make_1d import write
from make_models import sgd_trace, write_trace
from make_newer_opsets import (INT64, attr_s, model as graph_model, node,
                               tensor as proto, write as write_proto)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    nn = torch.nn
    write(out, "reflect2d", nn.ReflectionPad2d((3, 1, 2, 0)),
          torch.randn(2, 3, 5, 6))
    write(out, "edge2d", nn.ReplicationPad2d((1, 4, 3, 2)),
          torch.randn(2, 3, 5, 6))
    write(out, "reflect1d", nn.ReflectionPad1d((2, 3)), torch.randn(2, 3, 7))
    write(out, "edge1d", nn.ReplicationPad1d((0, 1)), torch.randn(2, 3, 7))
    write(out, "constant3d", nn.ConstantPad3d(1, -1.5),
          torch.randn(1, 2, 3, 4, 5))

    model = nn.Sequential(
        nn.ReflectionPad2d(2), nn.Conv2d(3, 4, 3), nn.ReLU(),
        nn.ReplicationPad2d(1), nn.Conv2d(4, 4, 3, stride=2),
        nn.ZeroPad2d((1, 0, 0, 1)), nn.Flatten(), nn.Linear(144, 3))
    images = torch.rand(32, 3, 8, 8) * 2 - 1
    labels = torch.randint(0, 3, (32,), dtype=torch.int32)
    torch.onnx.export(copy.deepcopy(model), images[:4],
                      os.path.join(out, "padcnn.onnx"), input_names=["image"],
                      output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=17)
    numpy.savez(os.path.join(out, "padcnn-data.npz"), image=images.numpy(),
                labels=labels.numpy())
    losses = sgd_trace(model, images, labels, batch=4, steps=10, lr=0.05)
    write_trace(out, "padcnn", losses)

    for name, mode, pads, dims in (("reflectbig", "reflect", [0, 3, 0, 0],
                                    [1, 6]),
                                   ("wrap17", "wrap", [0, 1, 0, 1], [1, 5])):
        write_proto(out, name, graph_model(
            [node("Pad", ["x", "pads"], ["y"], "pad", [attr_s("mode", mode)])],
            [("x", [1, 3])], [("y", dims)], 17,
            [proto("pads", [4], INT64, pads)]))


if __name__ == "__main__":
    main()
