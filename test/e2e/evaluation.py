#!/usr/bin/env python3
"""A float64 model of the evaluation steps of the e2e models, from a
checkpoint's weights, compared with the runner's evaluation line.

  evaluation.py check KIND CKPT.safetensors VAL.npz METRICS --batch B
      --step S [--rtol R]
      KIND mlp (Inputs/accumulate.txt: tanh(x w1 + b1) w2) or bn
      (Inputs/eval-bn.txt: batch norm on its running statistics, epsilon
      1e-3, no dropout). The metrics line of step S with val_loss must be
      within R (relative) of the model's mean cross-entropy over the whole
      batches of VAL, and val_accuracy must be the model's, counting as
      either way the rows whose two largest logits are within 1e-4.
"""
import ast
import json
import math
import struct
import sys
import zipfile

from loss_scaling import float_tensors


def npz(path):
    arrays = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            data = z.read(name)
            n = struct.unpack("<H", data[8:10])[0]
            header = ast.literal_eval(data[10:10 + n].decode("latin1"))
            shape = header["shape"]
            count = 1
            for d in shape:
                count *= d
            code = {"<f4": "f", "<i4": "i", "<i8": "q"}[header["descr"]]
            values = struct.unpack("<%d%s" % (count, code),
                                   data[10 + n:10 + n + count *
                                        struct.calcsize(code)])
            arrays[name[:-4]] = (shape, list(values))
    return arrays


def matvec(x, w):
    (rows, cols), values = w
    return [sum(x[i] * values[i * cols + j] for i in range(rows))
            for j in range(cols)]


def logits(kind, t, x):
    if kind == "mlp":
        h = matvec(x, t["w1"])
        h = [math.tanh(v + b) for v, b in zip(h, t["b1"][1])]
        return matvec(h, t["w2"])
    h = matvec(x, t["w"])
    g, b = t["bn_gamma"][1], t["bn_beta"][1]
    m, v = t["bn_running_mean"][1], t["bn_running_var"][1]
    h = [(hi - mi) / math.sqrt(vi + 1e-3) * gi + bi
         for hi, mi, vi, gi, bi in zip(h, m, v, g, b)]
    return matvec(h, t["w2"])


def fail(message):
    print("evaluation.py: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if args[0] != "check":
        fail("unknown command " + args[0])
    kind, ckpt, val, metrics = args[1:5]
    batch = int(args[args.index("--batch") + 1])
    step = int(args[args.index("--step") + 1])
    rtol = float(args[args.index("--rtol") + 1]) if "--rtol" in args else 1e-5
    t = float_tensors(ckpt)
    data = npz(val)
    (n, features), xs = data["x"]
    labels = data["labels"][1]
    rows = n // batch * batch
    loss, correct, ambiguous = 0.0, 0, 0
    for r in range(rows):
        z = logits(kind, t, xs[r * features:(r + 1) * features])
        top = max(z)
        loss += top + math.log(sum(math.exp(v - top) for v in z)) - \
            z[labels[r]]
        best = z.index(top)
        correct += best == labels[r]
        second = max(v for i, v in enumerate(z) if i != best)
        ambiguous += top - second < 1e-4
    loss /= rows
    lines = [json.loads(l) for l in open(metrics) if l.strip()]
    got = [l for l in lines if l.get("step") == step and "val_loss" in l]
    if not got:
        fail("no evaluation line at step %d" % step)
    got = got[-1]
    if got["val_samples"] != rows:
        fail("%d samples evaluated, expected %d" % (got["val_samples"], rows))
    if not abs(got["val_loss"] - loss) <= rtol * abs(loss):
        fail("val_loss %r against %r (rtol %g)" % (got["val_loss"], loss,
                                                    rtol))
    if abs(got["val_accuracy"] * rows - correct) > ambiguous + 1e-6:
        fail("val_accuracy %r against %d/%d" % (got["val_accuracy"], correct,
                                               rows))
    print("step %d: val_loss %.7g (float64 %.7g), accuracy %d/%d" %
          (step, got["val_loss"], loss, round(got["val_accuracy"] * rows),
           rows))


if __name__ == "__main__":
    main()
