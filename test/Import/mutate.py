#!/usr/bin/env python3
"""Mutation testing of mpc-import-onnx: random byte changes and
truncations of the checked-in models; every run must end with exit 0 or 1
(an error message), never a signal or a hang. A mutant that fails is kept
in the work folder.

  mutate.py --import-onnx BIN --work DIR --seed S --count N MODEL...
"""
import argparse
import os
import random
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--import-onnx", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = random.Random(a.seed)
    sources = [open(m, "rb").read() for m in a.models]
    bad = 0
    for i in range(a.count):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data))]
        path = os.path.join(a.work, "mutant-%d.onnx" % i)
        with open(path, "wb") as f:
            f.write(data)
        try:
            rc = subprocess.run(
                [a.import_onnx, path, "--input-shape", "x=4x12",
                 "--input-shape", "ids=4x8", "-o", os.devnull],
                capture_output=True, timeout=60).returncode
        except subprocess.TimeoutExpired:
            rc = "a hang"
        if rc in (0, 1):
            os.remove(path)
        else:
            bad += 1
            print("mutant %d (%s): exit %s" % (i, path, rc))
    print("%d mutants, %d crashed or hung" % (a.count, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
