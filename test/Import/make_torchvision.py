#!/usr/bin/env python3
"""torchvision's classifiers as users export them: each built with 5
classes (Dropout and stochastic depth off: random in both frameworks),
exported by PyTorch in training mode at opset 17 with a batch of 4, its
data (16 RGB images of 64x64) and PyTorch's own 2-step SGD trace (lr
0.001, batch 4, file order):

  make_torchvision.py OUT NAME[:1]...   (OUT/NAME.onnx, NAME-data.npz,
                                         NAME-torch-losses.json)

The first step's loss is the forward pass alone; the second's also
depends on the first step's gradients, and so on the ReLUs whose inputs
are within rounding of 0 (a model of a few hundred thousand such units
has some: PyTorch's own f32 and f64 runs part there), hence a small
learning rate.
"""
import os
import sys

import numpy
import torch
import torchvision.models as models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import sgd_trace, write_trace  # noqa: E402
from make_zoo import export  # noqa: E402


def build(name):
    options = {"num_classes": 5}
    if name.startswith(("efficientnet", "convnext")):
        options["stochastic_depth_prob"] = 0.0
    if name == "googlenet":
        options.update(aux_logits=False, init_weights=True)
    model = getattr(models, name)(**options)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return model


def main():
    out = sys.argv[1]
    for spec in sys.argv[2:]:
        # NAME:1 traces the first step alone (the forward pass).
        name, _, steps = spec.partition(":")
        torch.manual_seed(0)
        model = build(name)
        x = torch.randn(16, 3, 64, 64)
        y = torch.randint(0, 5, (16,), dtype=torch.int32)
        export(out, name, model, x)
        numpy.savez(os.path.join(out, name + "-data.npz"), x=x.numpy(),
                    y=y.numpy())
        # As in make_zoo.py: the export's trace ran once in training mode.
        with torch.no_grad():
            model.train()(x[:4])
        write_trace(out, name, sgd_trace(model.train(), x, y, batch=4,
                                         steps=int(steps or 2), lr=0.001))


if __name__ == "__main__":
    main()
