#!/usr/bin/env python3
"""Compares the losses of an mpc run (its metrics JSON lines, one per
step) with a reference trace (JSON {"losses": [...]}) step by step:
|mpc - ref| <= rtol * |ref| at every step.

  compare_losses.py METRICS REFERENCE RTOL [CHECKPOINT]

With a checkpoint, the reference's "state" tensors (final values) are
compared with the checkpoint's too.
"""
import json
import sys


def main():
    metrics, reference, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    ours = [json.loads(l)["loss"] for l in open(metrics) if l.strip()]
    ref = json.load(open(reference))["losses"]
    if len(ours) != len(ref):
        sys.exit("%d steps against %d" % (len(ours), len(ref)))
    worst = 0.0
    for i, (a, b) in enumerate(zip(ours, ref)):
        rel = abs(a - b) / abs(b)
        worst = max(worst, rel)
        if rel > rtol:
            sys.exit("step %d: loss %.9g, reference %.9g (relative %.2g > %g)"
                     % (i + 1, a, b, rel, rtol))
    print("%d steps within %g (worst %.2g)" % (len(ours), rtol, worst))
    if len(sys.argv) > 4:
        compare_state(sys.argv[4], json.load(open(reference))["state"])


def compare_state(checkpoint, state):
    """The reference's final tensors against the checkpoint's (f32), within
    1e-5 + 1e-4 |ref| each."""
    import struct
    data = open(checkpoint, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    worst = 0.0
    for name, ref in state.items():
        b, e = header[name]["data_offsets"]
        got = struct.unpack("<%df" % ((e - b) // 4), data[8 + n + b:8 + n + e])
        for i, (g, r) in enumerate(zip(got, ref)):
            err = abs(g - r) / (1e-5 + 1e-4 * abs(r))
            worst = max(worst, err)
            if err > 1:
                sys.exit("%s[%d] = %.9g, reference %.9g" % (name, i, g, r))
    print("%d tensors within 1e-5 + 1e-4 |ref| (worst %.2g of it)"
          % (len(state), worst))


if __name__ == "__main__":
    main()
