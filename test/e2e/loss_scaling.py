#!/usr/bin/env python3
"""Checks for the loss-scaling e2e tests.

  loss_scaling.py data OUT.npz --overflow-batch K [--tiny-batch T]
                   [--input-scale S] [--overflow-value V]
      12 samples of 8 features (small values, times S: 1 unless given),
      batch K (of 2 samples) with inputs of V (3e4 unless given), whose
      products overflow an f16 matmul's gradients (6e4: its outputs too),
      batch T with inputs below 1e-8 in magnitude (gradients that underflow
      f16).
  loss_scaling.py grad-stats METRICS --expect STEP:ZERO:UNDERFLOW:NONFINITE...
      The logged gradient fractions at the given steps are exactly these
      ('+': above zero, '*': any); every other logged step has none
      underflowing and none non-finite.
  loss_scaling.py trace METRICS --skips 3,9 --init 256 --interval 3
      The skipped flags are exactly the given steps ('none': no step), and
      the logged scale
      after every step equals PyTorch GradScaler's rule (growth 2, backoff
      0.5), computed here from those flags; the loss recovers (finite after
      every skipped step, the last below the first).
  loss_scaling.py same-tensors A.safetensors B.safetensors NAME...
      The named tensors are bit-identical in both checkpoints.
  loss_scaling.py finite A.safetensors NAME...
      The named f32 tensors hold only finite values.
"""
import json
import math
import random
import struct
import sys
import zipfile


def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape))
    header = header.ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + \
        header.encode("latin1") + payload


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: (v, data[8 + n + v["data_offsets"][0]:
                        8 + n + v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def float_tensors(path, dtypes=("F32", "F16")):
    """The tensors of the given dtypes as (shape, tuple of floats)."""
    out = {}
    for name, (info, raw) in tensors(path).items():
        if info["dtype"] not in dtypes:
            continue
        code, size = ("f", 4) if info["dtype"] == "F32" else ("e", 2)
        out[name] = (info["shape"],
                     struct.unpack("<%d%s" % (len(raw) // size, code), raw))
    return out


def fail(message):
    print("loss_scaling.py: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "data":
        out = args[0]
        k = int(args[args.index("--overflow-batch") + 1])
        tiny = (int(args[args.index("--tiny-batch") + 1])
                if "--tiny-batch" in args else -1)
        scale = (float(args[args.index("--input-scale") + 1])
                 if "--input-scale" in args else 1.0)
        big = (float(args[args.index("--overflow-value") + 1])
               if "--overflow-value" in args else 3e4)
        rng = random.Random(7)
        x = []
        for s in range(12):
            if s // 2 == k:
                x.extend(big for _ in range(8))
            elif s // 2 == tiny:
                # Nonzero, below 2^-25 in magnitude: every weight gradient
                # (a mean of x times probabilities) rounds to zero in f16.
                x.extend(rng.choice((-1, 1)) * rng.uniform(1e-9, 1e-8)
                         for _ in range(8))
            else:
                x.extend(scale * rng.uniform(-0.5, 0.5) for _ in range(8))
        labels = [rng.randrange(4) for _ in range(12)]
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            z.writestr("x.npy", npy("<f4", (12, 8), struct.pack("<96f", *x)))
            z.writestr("labels.npy",
                       npy("<i4", (12,), struct.pack("<12i", *labels)))
    elif cmd == "grad-stats":
        lines = [json.loads(l) for l in open(args[0]) if l.strip()]
        expect = {}
        for spec in args[args.index("--expect") + 1:]:
            step, *fractions = spec.split(":")
            expect[int(step)] = fractions
        keys = ("grad_zero", "grad_underflow", "grad_nonfinite")
        for m in lines:
            want = expect.pop(m["step"], ["*", "0", "0"])
            for key, w in zip(keys, want):
                got = m[key]
                ok = (w == "*" or (got > 0 if w == "+" else
                                   got == float(w)))
                if not ok:
                    fail("step %d: %s is %r, expected %s" %
                         (m["step"], key, got, w))
        if expect:
            fail("steps not logged: %s" % sorted(expect))
        print("%d steps: gradient statistics as expected" % len(lines))
    elif cmd == "trace":
        lines = [json.loads(l) for l in open(args[0]) if l.strip()]
        listed = args[args.index("--skips") + 1]
        skips = (set() if listed == "none" else
                 {int(s) for s in listed.split(",")})
        scale = float(args[args.index("--init") + 1])
        interval = int(args[args.index("--interval") + 1])
        tracker = 0
        for m in lines:
            inf = m["step"] in skips
            if m["skipped"] != inf:
                fail("step %d: skipped is %s" % (m["step"], m["skipped"]))
            if inf:
                scale *= 0.5
                tracker = 0
            else:
                tracker += 1
                if tracker == interval:
                    scale *= 2.0
                    tracker = 0
            if m["loss_scale"] != scale:
                fail("step %d: scale %r, GradScaler gives %r" %
                     (m["step"], m["loss_scale"], scale))
            if not inf and not math.isfinite(m["loss"]):
                fail("step %d: loss %r" % (m["step"], m["loss"]))
        if not lines[-1]["loss"] < lines[0]["loss"]:
            fail("no recovery: loss %r -> %r" % (lines[0]["loss"],
                                                  lines[-1]["loss"]))
        print("%d steps: skips and scale trace as GradScaler" % len(lines))
    elif cmd == "same-tensors":
        a, b = tensors(args[0]), tensors(args[1])
        for name in args[2:]:
            if a[name][1] != b[name][1]:
                fail("%s differs" % name)
        print("identical: " + " ".join(args[2:]))
    elif cmd == "finite":
        t = tensors(args[0])
        for name in args[1:]:
            raw = t[name][1]
            for v in struct.unpack("<%df" % (len(raw) // 4), raw):
                if not math.isfinite(v):
                    fail("%s holds %r" % (name, v))
        print("finite: " + " ".join(args[1:]))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
