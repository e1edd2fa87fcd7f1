#!/usr/bin/env python3
"""Two memory reports (mpc-compile --memory-report) of one model, compiled
with and without --mpc-fuse: for each function, what was fused and both
arena sizes; fails if the fused plan's arena is larger.

  memory_report.py FUSED.json UNFUSED.json
"""
import json
import sys


def functions(path):
    with open(path) as f:
        return {fn["function"]: fn for fn in json.load(f)["functions"]}


def main():
    fused, plain = functions(sys.argv[1]), functions(sys.argv[2])
    if sorted(fused) != sorted(plain):
        sys.exit("memory_report.py: functions %r against %r" %
                 (sorted(fused), sorted(plain)))
    for name in sorted(fused):
        f, p = fused[name], plain[name]
        what = ", ".join("%s %d" % (op, n) for op, n in sorted(f["fused"].items()))
        print("%s: fused %s; arena %d against %d bytes" %
              (name, what or "nothing", f["arena_bytes"], p["arena_bytes"]))
        if f["arena_bytes"] > p["arena_bytes"]:
            sys.exit("memory_report.py: %s: the fused plan is larger" % name)


if __name__ == "__main__":
    main()
