#!/usr/bin/env python3
"""Compares the losses of an mpc run (its metrics JSON lines, one per
step) with a reference trace (JSON {"losses": [...]}) step by step:
|mpc - ref| <= rtol * |ref| at every step.

  compare_losses.py METRICS REFERENCE RTOL
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


if __name__ == "__main__":
    main()
