#!/usr/bin/env python3
"""Writes the ONNX models the import tests read (Inputs/*.onnx), exported
from PyTorch (Debian's python3-torch) with fixed seeds; run it again to
regenerate them. The files are checked in, so the tests need no PyTorch.

  /usr/bin/python3 test/Import/make_models.py test/Import/Inputs
"""
import copy
import json
import os
import sys

import numpy
import torch


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def sgd_trace(model, x, y, batch, steps, lr):
    """PyTorch's losses of `steps` SGD steps on the batches in file order
    (wrapping), as the runner's --no-shuffle takes them."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for i in range(steps):
        k = i % (x.shape[0] // batch)
        loss = torch.nn.functional.cross_entropy(
            model(x[k * batch:(k + 1) * batch]),
            y[k * batch:(k + 1) * batch].long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = Mlp().eval()
    # A dynamic batch dimension: the importer must bind it.
    torch.onnx.export(model, torch.randn(4, 12), os.path.join(out, "mlp.onnx"),
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}}, opset_version=13)
    torch.onnx.export(model, torch.randn(4, 12),
                      os.path.join(out, "mlp-static.onnx"),
                      input_names=["x"], output_names=["logits"],
                      opset_version=17)
    # The MLP's training data and PyTorch's loss trace from the exported
    # weights: SGD, lr 0.1, batch 8, 10 steps.
    x = torch.rand(64, 12) * 2 - 1
    y = torch.randint(0, 5, (64,), dtype=torch.int32)
    numpy.savez(os.path.join(out, "mlp-data.npz"), x=x.numpy(), y=y.numpy())
    trained = copy.deepcopy(model).train()
    losses = sgd_trace(trained, x, y, batch=8, steps=10, lr=0.1)
    with open(os.path.join(out, "mlp-torch-losses.json"), "w") as f:
        json.dump({"torch": torch.__version__, "losses": losses}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
