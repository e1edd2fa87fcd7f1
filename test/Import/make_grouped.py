#!/usr/bin/env python3
"""A grouped transposed convolution exported by PyTorch, in the layout of
ONNX's node tests (model.onnx, test_data_set_0 with PyTorch's output):

  make_grouped.py OUT    (OUT/convtranspose_group/...)

ConvTranspose2d(4, 6, 3, stride 2, padding 1, output_padding 1, groups 2)
with a bias, on a [2, 4, 5, 5] input.
"""
import os
import struct
import sys

import torch


def tensor(name, t):
    """A TensorProto of a float32 tensor (dims, FLOAT, name, raw_data)."""
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out

    def ld(field, data):
        return varint(field << 3 | 2) + varint(len(data)) + data

    body = b"".join(varint(1 << 3) + varint(d) for d in t.shape)
    body += varint(2 << 3) + varint(1) + ld(8, name.encode())
    values = t.detach().flatten().tolist()
    return body + ld(9, struct.pack("<%df" % len(values), *values))


def main():
    out = os.path.join(sys.argv[1], "convtranspose_group")
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    torch.manual_seed(0)
    conv = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                    output_padding=1, groups=2)
    x = torch.randn(2, 4, 5, 5)
    torch.onnx.export(conv, x, os.path.join(out, "model.onnx"),
                      input_names=["x"], output_names=["y"], opset_version=17)
    data = os.path.join(out, "test_data_set_0")
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(tensor("x", x))
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(tensor("y", conv(x)))


if __name__ == "__main__":
    main()
