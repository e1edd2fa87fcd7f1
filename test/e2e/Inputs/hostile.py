"""Hostile variants of good files, for the runner's error tests.

  hostile.py safetensors-offsets IN OUT   data_offsets near 2^63
  hostile.py npy-shape IN.npz OUT.npz     x.npy announces a shape whose
                                          byte count overflows 64 bits
  hostile.py zip64-offset IN.npz OUT.npz  x.npy's directory entry points
                                          at a local header near 2^64
  hostile.py nan-feature IN.npz OUT.npz   feature 0 of every sample of the
                                          f32 array x set to NaN
  hostile.py step IN OUT VALUE            the checkpoint's step counter
                                          set to VALUE, CRC recomputed
The archives and checkpoints are rewritten with correct CRCs, so the check
under test is the one that fails.
"""
import json
import struct
import sys
import zipfile
import zlib


def safetensors_offsets(src, dst):
    data = open(src, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)  # a foreign file: no CRC to stop us
    name = next(k for k in header)
    header[name]["data_offsets"] = [2**63 - 8, 2**63 - 1]
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])


def npy_shape(src, dst):
    with zipfile.ZipFile(src) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    npy = members["x.npy"]
    hlen = struct.unpack("<H", npy[8:10])[0]
    header = npy[10:10 + hlen].decode("latin1")
    start = header.index("'shape': (") + len("'shape': (")
    end = header.index(")", start)
    header = header[:start] + "4611686018427387904, 8" + header[end:]
    header = header.rstrip("\n ")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    members["x.npy"] = (npy[:8] + struct.pack("<H", len(header)) +
                        header.encode("latin1") + npy[10 + hlen:])
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for name, body in members.items():
            z.writestr(name, body)


def zip64_offset(src, dst):
    data = bytearray(open(src, "rb").read())
    eocd = data.rindex(b"PK\x05\x06")
    cd = struct.unpack("<I", data[eocd + 16:eocd + 20])[0]
    while data[cd:cd + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack(
            "<HHH", data[cd + 28:cd + 34])
        name = bytes(data[cd + 46:cd + 46 + name_len])
        if name == b"x.npy":
            # Local header offset 0xffffffff: the real one is in a ZIP64
            # extra field, here 2^64 - 16.
            data[cd + 42:cd + 46] = b"\xff\xff\xff\xff"
            extra = struct.pack("<HHQ", 1, 8, 2**64 - 16)
            at = cd + 46 + name_len
            data[at:at] = extra
            data[cd + 30:cd + 32] = struct.pack("<H", extra_len + len(extra))
            eocd += len(extra)
            size = struct.unpack("<I", data[eocd + 12:eocd + 16])[0]
            data[eocd + 12:eocd + 16] = struct.pack("<I", size + len(extra))
            break
        cd += 46 + name_len + extra_len + comment_len
    open(dst, "wb").write(data)


def nan_feature(src, dst):
    with zipfile.ZipFile(src) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    npy = bytearray(members["x.npy"])
    hlen = struct.unpack("<H", npy[8:10])[0]
    header = npy[10:10 + hlen].decode("latin1")
    start = header.index("'shape': (") + len("'shape': (")
    rows, cols = [int(v) for v in header[start:header.index(")", start)]
                  .split(",") if v.strip()]
    data = 10 + hlen
    for r in range(rows):
        at = data + 4 * r * cols
        npy[at:at + 4] = struct.pack("<f", float("nan"))
    members["x.npy"] = bytes(npy)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as z:
        for name, body in members.items():
            z.writestr(name, body)


def step(src, dst, value):
    data = bytearray(open(src, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    begin, _ = header["mpc.step"]["data_offsets"]
    data[8 + n + begin:8 + n + begin + 8] = struct.pack("<q", int(value))
    # mpc's CRC: size, header with the CRC as "00000000", data.
    text = bytes(data[8:8 + n])
    crc = header["__metadata__"]["mpc.crc32"].encode()
    blank = text.replace(b'"mpc.crc32":"' + crc, b'"mpc.crc32":"00000000')
    new = ("%08x" % (zlib.crc32(bytes(data[:8]) + blank + bytes(data[8 + n:]))
                     & 0xffffffff)).encode()
    data[8:8 + n] = blank.replace(b'"mpc.crc32":"00000000',
                                  b'"mpc.crc32":"' + new)
    open(dst, "wb").write(data)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "step":
        step(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        {"safetensors-offsets": safetensors_offsets, "npy-shape": npy_shape,
         "zip64-offset": zip64_offset,
         "nan-feature": nan_feature}[mode](sys.argv[2], sys.argv[3])
