#!/usr/bin/env python3
"""pow-limits.test's oracle: the gradients of sum(x ^ y) that one SGD step
at lr 1 left in CHECKPOINT (the values before, from MODEL's dense
initialisers, minus those after) against PyTorch's autograd in f64 from
the same values. Non-finite gradients must match exactly (there are none
in PyTorch's at these points).

  pow_limits.py MODEL.mlir CHECKPOINT
"""
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gradcheck import read_safetensors  # noqa: E402


def main():
    text = open(sys.argv[1]).read()
    before = {m.group(1): np.array(json.loads(m.group(2)), np.float64)
              for m in re.finditer(r"@(\w+)\(dense<(\[[^\]]*\])>", text)}
    after = {k: np.frombuffer(raw, np.float32)
             for k, (t, raw) in read_safetensors(sys.argv[2]).items()
             if t["dtype"] == "F32"}
    x = torch.tensor(before["x"], requires_grad=True)
    y = torch.tensor(before["y"], requires_grad=True)
    torch.pow(x, y).sum().backward()
    for name, want in (("x", x.grad.numpy()), ("y", y.grad.numpy())):
        got = before[name] - after[name].astype(np.float64)
        assert np.all(np.isfinite(want)), (name, want)
        # f32: the pow, log and product's rounding, and the update's.
        err = np.abs(got - want) / (np.abs(want) + 1)
        assert np.all(err < 1e-6), (name, got, want)
        print("%s: %d gradients within %.1e of PyTorch's" % (
            name, len(want), np.max(err)))


if __name__ == "__main__":
    main()
