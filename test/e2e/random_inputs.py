#!/usr/bin/env python3
"""Writes an uncompressed .npz of random arrays for the e2e tests.

  random_inputs.py -o out.npz --seed 0 NAME:DTYPE:SHAPE:LOW:HIGH ...

DTYPE is f4 (uniform in [LOW, HIGH)) or i4 (integers in [LOW, HIGH));
SHAPE is dimensions joined by 'x', e.g. 16x128.
"""
import argparse
import random
import struct
import zipfile


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("arrays", nargs="+")
    a = p.parse_args()
    rng = random.Random(a.seed)
    with zipfile.ZipFile(a.output, "w", zipfile.ZIP_STORED) as z:
        for spec in a.arrays:
            name, dtype, shape, low, high = spec.split(":")
            dims = [int(d) for d in shape.split("x")]
            count = 1
            for d in dims:
                count *= d
            if dtype == "f4":
                values = [rng.uniform(float(low), float(high))
                          for _ in range(count)]
                payload = struct.pack("<%df" % count, *values)
            else:
                values = [rng.randrange(int(low), int(high))
                          for _ in range(count)]
                payload = struct.pack("<%di" % count, *values)
            header = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
                dtype, "".join("%d, " % d for d in dims))
            header = header.ljust(118) + "\n"
            z.writestr(name + ".npy", b"\x93NUMPY\x01\x00" +
                       struct.pack("<H", len(header)) +
                       header.encode("latin1") + payload)


if __name__ == "__main__":
    main()
