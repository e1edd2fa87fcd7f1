#!/usr/bin/env python3
"""test-gradients.test's oracle: the gradients of sum((alpha a b + c) * w)
for test_gemm_alpha (alpha 0.5, c broadcast), from the checkpoint's values
before ("initial:") and after ("input:") one SGD step with lr 1, against
numpy's in f64 from the same values and the weights w of the imported text.

  check_gemm_gradient.py CHECKPOINT MODEL.mlir
"""
import json
import re
import struct
import sys

import numpy as np


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e],
                                  np.float32).reshape(t["shape"])
    return out


def main():
    t = tensors(sys.argv[1])
    text = open(sys.argv[2]).read()
    w = re.search(r"mpc\.constant dense<(\[\[.*?\]\])> : tensor<3x4xf32>",
                  text).group(1)
    w = np.array(json.loads(w), np.float64)
    assert np.all(np.abs(w) >= 0.25), "a weight is near zero"
    a0 = t["initial:a"].astype(np.float64)
    b0 = t["initial:b"].astype(np.float64)
    want = {"a": 0.5 * w @ b0.T, "b": 0.5 * a0.T @ w}
    for name in ("a", "b"):
        got = t["initial:" + name].astype(np.float64) - t["input:" + name]
        # f32: the products' rounding (5 terms) and the update's.
        err = np.max(np.abs(got - want[name]) / (np.abs(want[name]) + 1e-3))
        assert err < 1e-5, (name, err, got, want[name])
        print("%s: gradient within %.1e of numpy's" % (name, err))


if __name__ == "__main__":
    main()
