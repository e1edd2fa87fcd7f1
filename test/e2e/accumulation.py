#!/usr/bin/env python3
"""Checkpoint checks for the gradient-accumulation e2e tests.

  accumulation.py close A.safetensors B.safetensors --rtol R --atol T NAME...
      Each named f32 tensor agrees elementwise: |a - b| <= R * |b| + T.
  accumulation.py zeros A.safetensors NAME...
      Each named f32 tensor is all zeros.
  accumulation.py same A.safetensors B.safetensors NAME FIRST COUNT
      Elements FIRST .. FIRST + COUNT - 1 of the f32 tensor NAME are equal
      in A and B, bit for bit.
"""
import sys

from loss_scaling import float_tensors


def tensors(path):
    return {name: values
            for name, (_, values) in float_tensors(path, ("F32",)).items()}


def fail(message):
    print("accumulation.py: " + message, file=sys.stderr)
    sys.exit(1)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "close":
        a, b = tensors(args[0]), tensors(args[1])
        rtol = float(args[args.index("--rtol") + 1])
        atol = float(args[args.index("--atol") + 1])
        names = [x for i, x in enumerate(args[2:], 2)
                 if not x.startswith("--") and not args[i - 1].startswith("--")]
        worst = 0.0
        for name in names:
            if name not in a or name not in b:
                fail("no f32 tensor %s in both checkpoints" % name)
            for i, (x, y) in enumerate(zip(a[name], b[name])):
                bound = rtol * abs(y) + atol
                if not abs(x - y) <= bound:
                    fail("%s[%d]: %r against %r (bound %r)" %
                         (name, i, x, y, bound))
                worst = max(worst, abs(x - y) / bound)
        print("%d tensors agree (worst %.2f of the bound)" %
              (len(names), worst))
    elif cmd == "zeros":
        a = tensors(args[0])
        for name in args[1:]:
            if name not in a:
                fail("no f32 tensor %s" % name)
            if any(v != 0.0 for v in a[name]):
                fail("%s is not zero" % name)
        print("%d tensors are zero" % len(args[1:]))
    elif cmd == "same":
        a, b = tensors(args[0]), tensors(args[1])
        name, first, count = args[2], int(args[3]), int(args[4])
        if name not in a or name not in b:
            fail("no f32 tensor %s in both checkpoints" % name)
        if a[name][first:first + count] != b[name][first:first + count]:
            fail("%s[%d:%d] differs" % (name, first, first + count))
        print("%s[%d:%d] is the same" % (name, first, first + count))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
