#!/usr/bin/env python3
"""Models of PyTorch's piecewise activations and maxima, exported at
opset 17 with a dynamic batch, their data and PyTorch's own 10-step SGD
traces:

  make_activations.py OUT   (OUT/NAME.onnx, NAME-data.npz,
                             NAME-torch-losses.json)

activations: Linear(12, 16) -> LeakyReLU(0.1) -> Linear(16, 16) -> ReLU6
  (Clip) -> Linear(16, 16) -> Hardswish -> Linear(16, 16) -> ELU(0.5) ->
  Linear(16, 16) -> Hardsigmoid -> x * reciprocal(1 + |x|) -> x minus its
  row maximum (ReduceMax) -> padded with 0.5 (Pad, 1 before and 2 after)
  -> plus a [1, 19] parameter expanded to the batch (Expand) ->
  Linear(19, 5). PyTorch computes the pads and the expanded shape with
  small graphs of Reshape, Slice, Transpose, Equal and Where that the
  importer folds, and ONNX's inference leaves the types after them
  unknown: the importer types them. Inputs in [-4, 4] and weights
  scaled by 3 put values on both sides of every bend.
"""
import copy
import os
import sys

import numpy
import torch

from make_models import sgd_trace, write_trace


class Activations(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.ModuleList(
            [torch.nn.Linear(12, 16)] +
            [torch.nn.Linear(16, 16) for _ in range(4)] +
            [torch.nn.Linear(19, 5)])
        self.p = torch.nn.Parameter(torch.randn(1, 19))
        self.act = torch.nn.ModuleList([
            torch.nn.LeakyReLU(0.1), torch.nn.ReLU6(), torch.nn.Hardswish(),
            torch.nn.ELU(0.5), torch.nn.Hardsigmoid()])
        with torch.no_grad():
            for fc in self.fc[:-1]:
                fc.weight.mul_(3)

    def forward(self, x):
        for fc, act in zip(self.fc, self.act):
            x = act(fc(x))
        x = x * torch.reciprocal(1 + x.abs())
        x = x - x.amax(dim=1, keepdim=True)
        x = torch.nn.functional.pad(x, (1, 2), value=0.5)
        x = x + self.p.expand(x.shape[0], -1)
        return self.fc[-1](x)


def main():
    out = sys.argv[1]
    torch.manual_seed(5)
    model = Activations().eval()
    torch.onnx.export(model, torch.randn(4, 12),
                      os.path.join(out, "activations.onnx"),
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}}, opset_version=17)
    x = torch.rand(64, 12) * 8 - 4
    y = torch.randint(0, 5, (64,), dtype=torch.int32)
    numpy.savez(os.path.join(out, "activations-data.npz"), x=x.numpy(),
                y=y.numpy())
    losses = sgd_trace(copy.deepcopy(model).train(), x, y, batch=8, steps=10,
                       lr=0.05)
    write_trace(out, "activations", losses)


if __name__ == "__main__":
    main()
