#!/usr/bin/env python3
"""bends.test's driver: the gradients of the piecewise activations the
importer writes with mpc.compare and mpc.where, at their bends, against
PyTorch's autograd. Each case is one ONNX node (written here with
make_newer_opsets.py's encoder) on x holding its bend points, imported
with --test-gradients (loss sum(y * w)), trained one SGD step at lr 1 on
the CPU backend in f32; each input's gradient (its value before minus
after) is compared with PyTorch's of the same loss.

  bends.py --bin BIN --work DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance import read_safetensors, write_unused_npz  # noqa: E402
from make_newer_opsets import (FLOAT, attr_f, model, node, tensor,  # noqa
                               write)

# name: (ONNX op, attributes, extra inputs as (name, values), x, PyTorch).
CASES = {
    "leakyrelu": ("LeakyRelu", [attr_f("alpha", 0.1)], [],
                  [-2.0, 0.0, 1.5, 0.0], lambda x: F.leaky_relu(x, 0.1)),
    "prelu": ("PRelu", [], [("slope", [0.25])], [-2.0, 0.0, 1.5, 0.0],
              lambda x, s: F.prelu(x, s)),
    "hardsigmoid": ("HardSigmoid", [attr_f("alpha", 1.0 / 6)], [],
                    [-3.0, 0.0, 3.0, 4.0, -4.0], F.hardsigmoid),
    "hardswish": ("HardSwish", [], [], [-3.0, 0.0, 3.0, 4.0, -4.0],
                  F.hardswish),
    "clip": ("Clip", [], [("lo", 0.0), ("hi", 6.0)],
             [-1.0, 0.0, 3.0, 6.0, 7.0], lambda x: torch.clamp(x, 0, 6)),
    "elu": ("Elu", [attr_f("alpha", 0.5)], [], [-1.0, 0.0, 1.0],
            lambda x: F.elu(x, 0.5)),
    "selu": ("Selu", [], [], [-1.0, 0.0, 1.0], F.selu),
    "celu": ("Celu", [attr_f("alpha", 0.5)], [], [-1.0, 0.0, 1.0],
             lambda x: F.celu(x, 0.5)),
    "hardshrink": ("Shrink", [attr_f("lambd", 0.5)], [],
                   [-1.0, -0.5, 0.0, 0.5, 1.0], lambda x: F.hardshrink(x, 0.5)),
    "softshrink": ("Shrink", [attr_f("lambd", 0.5), attr_f("bias", 0.5)], [],
                   [-1.0, -0.5, 0.0, 0.5, 1.0], lambda x: F.softshrink(x, 0.5)),
}


def build(work, name):
    op, attrs, extra, x, fn = CASES[name]
    n = len(x)
    inputs = [("x", [n], x)]
    initializers = []
    for ename, values in extra:
        if isinstance(values, list):  # a trainable input
            inputs.append((ename, [len(values)], values))
        else:  # a constant scalar bound
            initializers.append(tensor(ename, [], FLOAT, [values]))
    args = [torch.tensor(v, dtype=torch.float64) for _, _, v in inputs]
    y = fn(*args).tolist()
    write(work, name,
          model([node(op, ["x"] + [e for e, _ in extra], ["y"], name, attrs)],
                [(i, d) for i, d, _ in inputs], [("y", [n])], 17,
                initializers),
          inputs, [("y", [n], y)])


def check(args, name):
    op, attrs, extra, x, fn = CASES[name]
    case = os.path.join(args.work, name)
    mlir = os.path.join(case, "model.mlir")
    subprocess.run([os.path.join(args.bin, "mpc-import-onnx"),
                    os.path.join(case, "model.onnx"), "--test-data",
                    os.path.join(case, "test_data_set_0"),
                    "--test-gradients", "-o", mlir], check=True)
    subprocess.run([os.path.join(args.bin, "mpc-compile"), mlir, "--train",
                    "--loss=step", "--optimizer=kind=sgd lr=1", "-o",
                    os.path.join(case, "step")], check=True)
    write_unused_npz(os.path.join(case, "unused.npz"))
    subprocess.run([os.path.join(case, "step"), "--data",
                    os.path.join(case, "unused.npz"), "--steps", "1",
                    "--threads", "1", "--checkpoint",
                    os.path.join(case, "after.safetensors")],
                   check=True, stdout=subprocess.DEVNULL)
    state = {k: np.array(v, np.float32) for k, v in read_safetensors(
        os.path.join(case, "after.safetensors"), ("input:", "initial:")).items()}
    w = re.search(r"mpc\.constant dense<(\[[^\]]*\])> : tensor<%dxf32>" %
                  len(x), open(mlir).read()).group(1)
    w = torch.tensor(json.loads(w), dtype=torch.float64)
    names = ["x"] + [e for e, v in extra if isinstance(v, list)]
    leaves = [torch.tensor(state["initial:" + k], dtype=torch.float64,
                           requires_grad=True) for k in names]
    (fn(*leaves) * w).sum().backward()
    worst = 0.0
    for k, leaf in zip(names, leaves):
        got = state["initial:" + k].astype(np.float64) - state["input:" + k]
        want = leaf.grad.numpy()
        err = np.abs(got - want) / (np.abs(want) + 1)
        if not np.all(err < 1e-6):
            print("%s: %s's gradient %s, PyTorch's %s" % (
                name, k, got.tolist(), want.tolist()))
            return False
        worst = max(worst, float(np.max(err)))
    print("%-12s PyTorch's gradients within %.1e" % (name, worst))
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    ok = True
    for name in CASES:
        build(args.work, name)
        ok &= check(args, name)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
