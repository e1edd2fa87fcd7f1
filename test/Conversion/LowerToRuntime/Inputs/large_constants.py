#!/usr/bin/env python3
"""Constants at and around the size from which the lowering stores them as
bytes (standard library only):

  large_constants.py make OUT.mlir
      a function adding three mpc.constants (f32 [128, 128]: 64 KiB;
      f32 [16383]: 4 bytes less; f16 [32768]: 64 KiB) and a global
      (f32 [128, 128]) to its arguments, every element distinct
  large_constants.py check LOWERED.mlir
      reads the lowered module from LOWERED.mlir; exit 0 when each constant
      of 64 KiB or more is one i8 global holding exactly its bytes
"""
import re
import struct
import sys


def values(n, seed):
    return [((i * 7919 + seed) % 1999 - 999) / 1024.0 for i in range(n)]


def constants():
    """name -> (MLIR type, element type, little-endian bytes)."""
    return {
        "square": ("tensor<128x128xf32>",
                   struct.pack("<16384f", *values(16384, 1))),
        "short": ("tensor<16383xf32>",
                  struct.pack("<16383f", *values(16383, 2))),
        "half": ("tensor<32768xf16>",
                 struct.pack("<32768e", *values(32768, 3))),
        "global": ("tensor<128x128xf32>",
                   struct.pack("<16384f", *values(16384, 4))),
    }


def main():
    mode, path = sys.argv[1], sys.argv[2]
    c = constants()
    if mode == "make":
        dense = {k: 'dense<"0x%s"> : %s' % (v[1].hex().upper(), v[0])
                 for k, v in c.items()}
        with open(path, "w") as f:
            f.write("ml_program.global private mutable @w(%s) : %s\n"
                    % (dense["global"], c["global"][0]))
            args = ", ".join("%%%s: %s" % (k, c[k][0])
                             for k in ("square", "short", "half"))
            results = ", ".join(c[k][0] for k in ("square", "short", "half"))
            f.write("func.func @f(%s) -> (%s, %s) {\n"
                    % (args, results, c["global"][0]))
            for k in ("square", "short", "half"):
                f.write("  %%c_%s = mpc.constant %s\n" % (k, dense[k]))
                f.write("  %%r_%s = mpc.add %%%s, %%c_%s : %s, %s\n"
                        % (k, k, k, c[k][0], c[k][0]))
            f.write("  %%w = ml_program.global_load @w : %s\n"
                    % c["global"][0])
            f.write("  return %%r_square, %%r_short, %%r_half, %%w : %s, "
                    "%s\n}\n" % (results, c["global"][0]))
        return
    text = open(path).read()
    blobs = re.findall(r'llvm\.mlir\.global internal constant @\w+\('
                       r'dense<"0x([0-9A-F]+)"> : tensor<(\d+)xi8>\)', text)
    held = sorted(bytes.fromhex(h) for h, _ in blobs)
    want = sorted(v[1] for k, v in c.items() if k != "short")
    if held != want:
        sys.exit("the i8 globals hold %d blobs, not the 3 constants' bytes"
                 % len(held))
    print("3 constants of 64 KiB or more: bytes as in the model")


if __name__ == "__main__":
    main()
