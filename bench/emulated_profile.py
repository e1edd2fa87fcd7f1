#!/usr/bin/env python3
"""The emulated kernels' global memory accesses, one row per launch site.

Reads what an executable linked with `mpc-compile --emulate-cuda
--racecheck` wrote with MPC_EMULATION_PROFILE=FILE
(lib/Runtime/CUDA/Emulation/Profile.cpp) and prints, largest traffic
first: the kernel launched there, its launches, the MiB its threads asked
for, the MiB of 32-byte sectors its warps' requests moved, the sector
efficiency (asked over moved; 100% is coalesced), the bytes per request
(512: a full warp's 16-byte accesses; 64: its 2-byte ones), and how often
each sector a launch touched was moved (1.0: once). With --lines, the
same per instruction instead: the source line of each access (through
llvm-symbolizer when the profile was written), worst sectors first.

  bench/emulated_profile.py FILE [--top N] [--json] [--lines]
"""
import argparse
import json
import re
import sys


def kernel_at(site):
    """The kernel launched at FILE:LINE (the name before `<<<`)."""
    path, _, line = site.rpartition(":")
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return "?"
    n = int(line)
    text = "\n".join(lines[max(0, n - 3):n])
    found = re.findall(r"(\w+)\s*(?:<[^<>;]*>)?\s*<<<", text)
    return found[-1] if found else "?"


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
        r["efficiency"] = r["bytes"] / moved if moved else 1.0
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
    total = sum(r["moved_bytes"] for r in table) or 1
    if args.top:
        table = table[:args.top]
    if args.json:
        for r in table:
            print(json.dumps(r))
        return 0
    if args.lines:
        print("| kernel | access at | kind | requests | asked MiB | moved MiB "
              "| share | sector efficiency | bytes/request |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in table:
            code = r["code"].split("/lib/Runtime/CUDA/")[-1]
            print("| %s | %s | %s | %d | %.2f | %.2f | %.0f%% | %.0f%% | %.0f |"
                  % (r["kernel"], code, "write" if r["write"] else "read",
                     r["requests"], r["bytes"] / 2**20,
                     r["moved_bytes"] / 2**20,
                     100 * r["moved_bytes"] / total, 100 * r["efficiency"],
                     r["bytes_per_request"]))
        return 0
    print("| kernel | site | launches | asked MiB | moved MiB | share | "
          "sector efficiency | bytes/request | moves per sector |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table:
        site = r["site"].split("/lib/Runtime/CUDA/")[-1]
        print("| %s | %s | %d | %.2f | %.2f | %.0f%% | %.0f%% | %.0f | %.2f |"
              % (r["kernel"], site, r["launches"], r["bytes"] / 2**20,
                 r["moved_bytes"] / 2**20, 100 * r["moved_bytes"] / total,
                 100 * r["efficiency"], r["bytes_per_request"], r["refetch"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
