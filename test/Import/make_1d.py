#!/usr/bin/env python3
"""1-D window ops exported by PyTorch, in the layout of ONNX's node tests
(model.onnx, test_data_set_0 with PyTorch's output):

  make_1d.py OUT

  conv1d/           Conv1d(4, 6, 3, stride 2, padding 2, dilation 2,
                    groups 2) with a bias, on [2, 4, 11]
  maxpool1d/        MaxPool1d(3, stride 2, padding 1) on [2, 3, 10]
  avgpool1d/        AvgPool1d(3, stride 2, padding 1, ceil_mode,
                    count_include_pad False) on [2, 3, 10]
  convtranspose1d/  ConvTranspose1d(4, 3, 3, stride 2, padding 1,
                    output_padding 1) with a bias, on [2, 4, 7]
  linear1d/         Upsample(scale_factor 2, mode linear) on [2, 3, 7]
  trilinear3d/      Upsample(scale_factor (2, 1, 3), mode trilinear,
                    align_corners) on [1, 2, 3, 4, 5]
  batchnorm1d/      BatchNorm1d(4) in training mode on [2, 4, 11]
  batchnorm3d/      BatchNorm3d(3) in training mode on [2, 3, 2, 3, 4]
  conv3d/           Conv3d(2, 3, 2) on [1, 2, 3, 3, 3] (refused)
"""
import os
import sys

import torch

from make_grouped import tensor


def write(out, name, module, x, training=False):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    torch.onnx.export(module, x, os.path.join(d, "model.onnx"),
                      input_names=["x"], output_names=["y"], opset_version=17,
                      training=mode, do_constant_folding=not training)
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(tensor("x", x))
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(tensor("y", module(x)))


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    write(out, "conv1d",
          torch.nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
          torch.randn(2, 4, 11))
    write(out, "maxpool1d", torch.nn.MaxPool1d(3, stride=2, padding=1),
          torch.randn(2, 3, 10))
    write(out, "avgpool1d",
          torch.nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True,
                             count_include_pad=False),
          torch.randn(2, 3, 10))
    write(out, "convtranspose1d",
          torch.nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1,
                                   output_padding=1),
          torch.randn(2, 4, 7))
    write(out, "linear1d", torch.nn.Upsample(scale_factor=2, mode="linear"),
          torch.randn(2, 3, 7))
    write(out, "trilinear3d",
          torch.nn.Upsample(scale_factor=(2, 1, 3), mode="trilinear",
                            align_corners=True),
          torch.randn(1, 2, 3, 4, 5))
    # Training mode: the batch's statistics (the output does not depend on
    # the running ones, which the export's trace updated).
    write(out, "batchnorm1d", torch.nn.BatchNorm1d(4).train(),
          torch.randn(2, 4, 11) * 2 + 1, training=True)
    write(out, "batchnorm3d", torch.nn.BatchNorm3d(3).train(),
          torch.randn(2, 3, 2, 3, 4) * 2 + 1, training=True)
    write(out, "conv3d", torch.nn.Conv3d(2, 3, 2), torch.randn(1, 2, 3, 3, 3))


if __name__ == "__main__":
    main()
