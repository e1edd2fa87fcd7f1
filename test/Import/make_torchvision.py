#!/usr/bin/env python3
"""torchvision's classifiers and segmentation models as users export them:
each built with 5 classes (Dropout and stochastic depth off: random in
both frameworks), exported by PyTorch in training mode at opset 17 with a
batch of 4, its data (16 RGB images of 64x64, with a label per image or,
for segmentation, per pixel) and PyTorch's own 2-step SGD trace (lr
0.001, batch 4, file order):

  make_torchvision.py OUT NAME[:1]...   (OUT/NAME.onnx, NAME-data.npz,
                                         NAME-torch-losses.json)

The first step's loss is the forward pass alone; the second's also
depends on the first step's gradients, and so on the ReLUs whose inputs
are within rounding of 0 (a model of a few hundred thousand such units
has some: PyTorch's own f32 and f64 runs part there), hence a small
learning rate.

Models of several outputs (HEADS) are exported with all of them, and
PyTorch's loss is the weighted sum of their cross-entropies against the
same labels: GoogLeNet's two auxiliary classifiers weighed 0.3 as in its
paper, DeepLabV3's auxiliary head 0.5 as in torchvision's segmentation
training, which also ignores the label 255 (IGNORE): a tenth of the
pixels carry it here.

NAME-torch-eval.json holds PyTorch's evaluation of the exported state
(eval mode, the first output alone), as the runner's --eval-only gives
it.
"""
import json
import os
import sys

import numpy
import torch
import torchvision.models as models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import write_trace  # noqa: E402
from make_zoo import export  # noqa: E402

HEADS = {
    "googlenet": (("logits", 1.0), ("aux1", 0.3), ("aux2", 0.3)),
    "deeplabv3_mobilenet_v3_large": (("out", 1.0), ("aux", 0.5)),
}
SEGMENTATION = ("deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large",
                "fcn_resnet50")
IGNORE = 255


class Outputs(torch.nn.Module):
    """The model's outputs as a tuple in HEADS' order (torchvision returns
    a namedtuple or a dict)."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, x):
        result = self.model(x)
        if isinstance(result, dict):
            return tuple(result[n] for n in self.names)
        return tuple(result) if isinstance(result, tuple) else (result,)


def build(name):
    options = {"num_classes": 5}
    if name.startswith(("efficientnet", "convnext")):
        options["stochastic_depth_prob"] = 0.0
    if name == "googlenet":
        options.update(aux_logits=True, init_weights=True)
    if name in SEGMENTATION:
        options.update(weights_backbone=None,
                       aux_loss=True if name in HEADS else None)
        model = getattr(models.segmentation, name)(**options)
    else:
        model = getattr(models, name)(**options)
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return Outputs(model, [n for n, _ in HEADS.get(name, (("out", 1),))])


def trace(model, heads, x, y, steps):
    """PyTorch's losses of `steps` SGD steps (lr 0.001, batch 4) on the
    batches in file order, as the runner's --no-shuffle takes them: the
    weighted sum of the heads' cross-entropies."""
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    losses = []
    for i in range(steps):
        k = i % (x.shape[0] // 4)
        labels = y[k * 4:(k + 1) * 4].long()
        outputs = model(x[k * 4:(k + 1) * 4])
        loss = sum(w * torch.nn.functional.cross_entropy(
            o, labels, ignore_index=IGNORE) for o, (_, w) in zip(outputs, heads))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def evaluate(model, x, y):
    """PyTorch's evaluation as the runner's --val-data does it: eval mode,
    the means over the batches of 4 of the first output's loss and top-1
    accuracy (per position, the ignored label left out)."""
    model.eval()
    losses, accuracies = [], []
    with torch.no_grad():
        for k in range(x.shape[0] // 4):
            labels = y[k * 4:(k + 1) * 4].long()
            logits = model(x[k * 4:(k + 1) * 4])[0]
            losses.append(float(torch.nn.functional.cross_entropy(
                logits, labels, ignore_index=IGNORE)))
            kept = labels != IGNORE
            accuracies.append(float(
                (logits.argmax(1) == labels)[kept].float().mean()))
    model.train()
    return {"val_loss": sum(losses) / len(losses),
            "val_accuracy": sum(accuracies) / len(accuracies)}


def main():
    out = sys.argv[1]
    for spec in sys.argv[2:]:
        # NAME:1 traces the first step alone (the forward pass).
        name, _, steps = spec.partition(":")
        torch.manual_seed(0)
        model = build(name)
        heads = HEADS.get(name, (("logits", 1.0),))
        x = torch.randn(16, 3, 64, 64)
        if name in SEGMENTATION:
            y = torch.randint(0, 5, (16, 64, 64), dtype=torch.int32)
            y[torch.rand(y.shape) < 0.1] = IGNORE
        else:
            y = torch.randint(0, 5, (16,), dtype=torch.int32)
        export(out, name, model, x, [n for n, _ in heads])
        numpy.savez(os.path.join(out, name + "-data.npz"), x=x.numpy(),
                    y=y.numpy())
        # As in make_zoo.py: the export's trace ran once in training mode.
        with torch.no_grad():
            model.train()(x[:4])
        with open(os.path.join(out, name + "-torch-eval.json"), "w") as f:
            json.dump(evaluate(model, x, y), f)
        write_trace(out, name, trace(model.train(), heads, x, y,
                                     int(steps or 2)))


if __name__ == "__main__":
    main()
