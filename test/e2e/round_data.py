#!/usr/bin/env python3
"""Rounds every float32 array of an .npz to f16 or bf16 and back (round to
nearest even), leaving the others as they are: the data a run with
--data-on-device trains on, for a run without it.

  round_data.py f16|bf16 in.npz -o out.npz

Needs only the Python standard library.
"""
import argparse
import struct
import zipfile


def bf16(bits):
    """float32 bits rounded to bfloat16 (nearest even), as float32 bits."""
    return (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000


def main():
    p = argparse.ArgumentParser()
    p.add_argument("type", choices=["f16", "bf16"])
    p.add_argument("input")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    with zipfile.ZipFile(a.input) as src, \
            zipfile.ZipFile(a.output, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            length = struct.unpack("<H", data[8:10])[0]
            header, payload = data[:10 + length], data[10 + length:]
            if b"'<f4'" in header:
                n = len(payload) // 4
                if a.type == "f16":
                    values = struct.unpack("<%de" % n, struct.pack(
                        "<%de" % n, *struct.unpack("<%df" % n, payload)))
                    payload = struct.pack("<%df" % n, *values)
                else:
                    bits = struct.unpack("<%dI" % n, payload)
                    payload = struct.pack("<%dI" % n, *map(bf16, bits))
            dst.writestr(info.filename, header + payload)


if __name__ == "__main__":
    main()
