#!/usr/bin/env python3
"""The emulated kernels' global memory accesses, one row per launch site.

Reads what an executable linked with `mpc-compile --emulate-cuda
--racecheck` wrote with MPC_EMULATION_PROFILE=FILE
(lib/Runtime/CUDA/Emulation/Profile.cpp) and prints, largest traffic
first: the kernel launched there, its launches, the MiB its threads asked
for, the MiB of 32-byte sectors its warps' requests moved, the sector
efficiency (the distinct bytes each request asked for over those its
sectors moved: 100% is coalesced; lanes reading the same value count its
bytes once, as a GPU moves them once), the bytes per request
(512: a full warp's 16-byte accesses; 64: its 2-byte ones), and how often
each sector a launch touched was moved (1.0: once), then the sums over
every site (sectors moved and distinct, requests, launches). With
--lines, the same per instruction instead: the source line of each
access (through llvm-symbolizer when the profile was written), worst
sectors first.

  bench/emulated_profile.py FILE [--top N] [--json] [--lines]
"""
import argparse
import functools
import json
import os
import re
import sys


# The checkout this script is in: launch sites are named relative to it
# (lib/Runtime/CUDA/Nn.cu).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=None)
def kernel_at(site):
    """The kernel launched at FILE:LINE (the name before `<<<`)."""
    path, _, line = site.rpartition(":")
    try:
        lines = open(os.path.join(ROOT, path)).read().split("\n")
    except OSError:
        return "?"
    n = int(line)
    text = "\n".join(lines[max(0, n - 3):n])
    found = re.findall(r"(\w+)\s*(?:<[^<>;]*>)?\s*<<<", text)
    return found[-1] if found else "?"


def short(path):
    """A path from the CUDA backend's folder on."""
    return re.sub(r"^(.*/)?lib/Runtime/CUDA/", "", path)


def rows(path, lines=False):
    out = []
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if ("code" in r) != lines:
            continue
        moved = r["sectors"] * 32
        r["kernel"] = kernel_at(r["site"])
        r["moved_bytes"] = moved
        # Profiles written before distinct bytes were counted: the
        # lanes' bytes (a broadcast then reads above 100%).
        asked = r.get("distinct_bytes", r["bytes"])
        r["efficiency"] = asked / moved if moved else 1.0
        r["bytes_per_request"] = r["bytes"] / r["requests"] if r[
            "requests"] else 0.0
        r["refetch"] = (r["sectors"] / r["distinct_sectors"]
                        if r.get("distinct_sectors") else 0.0)
        out.append(r)
    out.sort(key=lambda r: -r["moved_bytes"])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=0)
    p.add_argument("--json", action="store_true",
                   help="the rows with the derived columns, as JSON lines")
    p.add_argument("--lines", action="store_true",
                   help="a row per instruction (its source line)")
    args = p.parse_args()
    table = rows(args.profile, args.lines)
    every = table  # before --top cuts it: the sums are the whole run's
    moved = sum(r["moved_bytes"] for r in every)
    total = moved or 1
    if args.top:
        table = table[:args.top]
    if args.json:
        for r in table:
            print(json.dumps(r))
        return 0
    # The columns: heading, then the cell of a row.
    traffic = [
        ("asked MiB", lambda r: "%.2f" % (r["bytes"] / 2**20)),
        ("moved MiB", lambda r: "%.2f" % (r["moved_bytes"] / 2**20)),
        ("share", lambda r: "%.0f%%" % (100 * r["moved_bytes"] / total)),
        ("sector efficiency", lambda r: "%.0f%%" % (100 * r["efficiency"])),
        ("bytes/request", lambda r: "%.0f" % r["bytes_per_request"]),
    ]
    if args.lines:
        columns = [("kernel", lambda r: r["kernel"]),
                   ("access at", lambda r: short(r["code"])),
                   ("kind", lambda r: "write" if r["write"] else "read"),
                   ("requests", lambda r: "%d" % r["requests"])] + traffic
    else:
        columns = [("kernel", lambda r: r["kernel"]),
                   ("site", lambda r: short(r["site"])),
                   ("launches", lambda r: "%d" % r["launches"])] + traffic + [
                       ("moves per sector", lambda r: "%.2f" % r["refetch"])]
    print("| " + " | ".join(heading for heading, _ in columns) + " |")
    print("|" + "---|" * len(columns))
    for r in table:
        print("| " + " | ".join(cell(r) for _, cell in columns) + " |")
    if not args.lines:
        print()
        print("all sites: %.1f MiB of sectors moved, %.1f MiB distinct per "
              "launch, %.2f M requests, %d launches" % (
                  moved / 2**20,
                  sum(r.get("distinct_sectors", 0) for r in every) * 32 /
                  2**20,
                  sum(r["requests"] for r in every) / 1e6,
                  sum(r["launches"] for r in every)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
