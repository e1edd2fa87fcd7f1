#!/usr/bin/env python3
"""The runtime calls of each function of a lowered module, by name.

  call_counts.py LOWERED.mlir NAME...

prints, for every function that is not a declaration, one line
`FUNCTION: NAME count, NAME count, ...` with the calls `call @NAME(` in
its body, in the order the names are given.
"""

import re
import sys


def main():
    path, names = sys.argv[1], sys.argv[2:]
    counts = None
    function = None
    with open(path) as f:
        for line in f:
            header = re.match(r"\s*func\.func @([\w$.]+)\(.*\{\s*$", line)
            if header:
                if function is not None:
                    report(function, counts, names)
                function = header.group(1)
                counts = dict.fromkeys(names, 0)
                continue
            if function is None:
                continue
            call = re.search(r"\bcall @([\w$.]+)\(", line)
            if call and call.group(1) in counts:
                counts[call.group(1)] += 1
    if function is not None:
        report(function, counts, names)


def report(function, counts, names):
    print(f"{function}: " + ", ".join(f"{n} {counts[n]}" for n in names))


if __name__ == "__main__":
    main()
