#!/usr/bin/env python3
"""Rewrites an ONNX model so that its tensors keep their data in external
files (ONNX's external data format, as onnx.save_model(...,
save_as_external_data=True) and PyTorch's exporter past 2 GB write it);
standard library only:

  externalize.py IN OUT [--one-file NAME] [--threshold BYTES]
                 [--align BYTES] [--attributes] [--no-length]
                 [--keep-raw] [--set KEY=VALUE]... [--add KEY=VALUE]...

Tensors whose raw_data holds at least --threshold bytes (default 0: all
with raw_data) move to files beside OUT: one file per tensor, named after
it (PyTorch's layout), or all in --one-file NAME at offsets aligned to
--align (onnx's layout). --attributes moves tensor attributes (Constant
nodes' values) too. --no-length leaves out the length entries (the data
then runs to the end of its file). --set KEY=VALUE writes KEY's entry as
VALUE in every moved tensor (adding it where there is none), and
--add KEY=VALUE one more entry after them, and --keep-raw leaves the data
in the model as well, for tests of malformed references.
"""
import argparse
import os

from make_newer_opsets import varint


def read_varint(data, i):
    n, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def fields(data):
    """The message's fields as (number, wire type, value) in order; a
    length-delimited value is its bytes, any other its encoded bytes."""
    out, i = [], 0
    while i < len(data):
        k, j = read_varint(data, i)
        number, wire = k >> 3, k & 7
        if wire == 0:
            _, end = read_varint(data, j)
            out.append((number, wire, data[j:end]))
        elif wire == 1:
            end = j + 8
            out.append((number, wire, data[j:end]))
        elif wire == 5:
            end = j + 4
            out.append((number, wire, data[j:end]))
        elif wire == 2:
            size, j = read_varint(data, j)
            end = j + size
            out.append((number, wire, data[j:end]))
        else:
            raise SystemExit("unexpected wire type %d" % wire)
        i = end
    return out


def encode(items):
    out = b""
    for number, wire, value in items:
        out += varint(number << 3 | wire)
        if wire == 2:
            out += varint(len(value))
        out += value
    return out


def entry(k, v):
    return encode([(1, 2, k.encode()), (2, 2, v.encode())])


class Writer:
    def __init__(self, args, folder):
        self.a = args
        self.folder = folder
        self.offsets = {}

    def tensor(self, data):
        items = fields(data)
        raw = [v for n, w, v in items if n == 9]
        name = b"".join(v for n, w, v in items if n == 8).decode()
        if not raw or len(raw[0]) < self.a.threshold:
            return data
        raw = raw[0]
        if self.a.one_file:
            location = self.a.one_file
            offset = self.offsets.get(location, 0)
            if self.a.align > 1:
                offset = -(-offset // self.a.align) * self.a.align
        else:
            stem = "".join(c if c.isalnum() or c in "._-" else "_"
                           for c in name).lstrip(".") or "tensor"
            location, i = stem, 1
            while location in self.offsets:
                location, i = "%s.%d" % (stem, i), i + 1
            offset = 0
        path = os.path.join(self.folder, location)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = "r+b" if location in self.offsets else "wb"
        with open(path, mode) as f:
            f.seek(0, 2)
            if f.tell() < offset:
                f.write(b"\0" * (offset - f.tell()))
            f.seek(offset)
            f.write(raw)
        self.offsets[location] = offset + len(raw)
        entries = {"location": location, "offset": str(offset),
                   "length": str(len(raw))}
        if self.a.no_length:
            del entries["length"]
        for kv in self.a.set:
            k, v = kv.split("=", 1)
            entries[k] = v
        dropped = (13, 14) if self.a.keep_raw else (9, 13, 14)
        kept = [(n, w, v) for n, w, v in items if n not in dropped]
        kept += [(13, 2, entry(k, v)) for k, v in entries.items()]
        kept += [(13, 2, entry(*kv.split("=", 1))) for kv in self.a.add]
        kept.append((14, 0, varint(1)))  # data_location = EXTERNAL
        return encode(kept)

    def attribute(self, data):
        return encode([(n, w, self.tensor(v) if n == 5 else v)
                       for n, w, v in fields(data)])

    def node(self, data):
        if not self.a.attributes:
            return data
        return encode([(n, w, self.attribute(v) if n == 5 else v)
                       for n, w, v in fields(data)])

    def graph(self, data):
        out = []
        for n, w, v in fields(data):
            if n == 5:
                v = self.tensor(v)
            elif n == 1:
                v = self.node(v)
            out.append((n, w, v))
        return encode(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--one-file")
    p.add_argument("--threshold", type=int, default=0)
    p.add_argument("--align", type=int, default=1)
    p.add_argument("--attributes", action="store_true")
    p.add_argument("--no-length", action="store_true")
    p.add_argument("--keep-raw", action="store_true")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--add", action="append", default=[])
    a = p.parse_args()
    folder = os.path.dirname(os.path.abspath(a.output))
    os.makedirs(folder, exist_ok=True)
    w = Writer(a, folder)
    with open(a.input, "rb") as f:
        model = fields(f.read())
    out = [(n, wt, w.graph(v) if n == 7 else v) for n, wt, v in model]
    with open(a.output, "wb") as f:
        f.write(encode(out))


if __name__ == "__main__":
    main()
