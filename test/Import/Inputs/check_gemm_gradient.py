#!/usr/bin/env python3
"""test-gradients.test's oracle: the gradients of sum((alpha a b + c) * w)
for test_gemm_alpha (alpha 0.5, c broadcast), from the checkpoint's values
before ("initial:") and after ("input:") one SGD step with lr 1, against
numpy's in f64 from the same values and the weights w of the imported text.

  check_gemm_gradient.py CHECKPOINT MODEL.mlir
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conformance import read_safetensors  # noqa: E402

# test_gemm_alpha's inputs: a [3, 5], b [5, 4].
SHAPES = {"a": (3, 5), "b": (5, 4)}


def main():
    t = {k: np.array(v, np.float32).reshape(SHAPES[k.split(":")[1]])
         for k, v in read_safetensors(sys.argv[1],
                                      ("input:", "initial:")).items()
         if k.split(":")[1] in SHAPES}
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
