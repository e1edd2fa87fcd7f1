#!/usr/bin/env python3
"""Writes a synthetic classification dataset as an uncompressed .npz.

Each class has a random centre in `features` dimensions; a sample is its
class centre plus Gaussian noise, so a small network can learn it. Arrays
are named after the inputs of the step function they feed (x: float32
[samples, features], labels: int32 [samples]). Needs only the Python
standard library (no NumPy).

  scripts/make_dataset.py --samples 2048 --features 784 --classes 10 \
      --seed 0 -o mlp_train.npz
"""
import argparse
import random
import struct
import zipfile


def npy(dtype, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in shape))
    header = header.ljust(118) + "\n"  # 10 + 118 = 128 bytes, aligned
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + \
        header.encode("latin1") + payload


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--noise", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--x-name", default="x")
    p.add_argument("--labels-name", default="labels")
    p.add_argument("--labels-dtype", choices=["i4", "i8"], default="i4")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    rng = random.Random(a.seed)
    centres = [[rng.gauss(0.0, 1.0) for _ in range(a.features)]
               for _ in range(a.classes)]
    labels = [rng.randrange(a.classes) for _ in range(a.samples)]
    x = []
    for label in labels:
        c = centres[label]
        x.extend(c[i] + a.noise * rng.gauss(0.0, 1.0)
                 for i in range(a.features))
    with zipfile.ZipFile(a.output, "w", zipfile.ZIP_STORED) as z:
        z.writestr(a.x_name + ".npy",
                   npy("<f4", (a.samples, a.features),
                       struct.pack("<%df" % len(x), *x)))
        code = "i" if a.labels_dtype == "i4" else "q"
        z.writestr(a.labels_name + ".npy",
                   npy("<" + a.labels_dtype, (a.samples,),
                       struct.pack("<%d%s" % (len(labels), code), *labels)))


if __name__ == "__main__":
    main()
