#!/usr/bin/env python3
"""Prints the end of each failed test's output from a lit results file.

  scripts/lit_failures.py RESULTS.json [--lines N]

lit -o RESULTS.json records every test's code and output. A failure's
output starts with the whole trace of its RUN lines and ends with the
command that failed and what it said; in a long log that end is far from
the log's own end. This prints, after everything else, each failed test's
name and its last N (default 30) lines that are not progress-bar redraws.
Prints nothing when no test failed.
"""
import json
import sys

FAILED = {"FAIL", "XPASS", "TIMEOUT", "UNRESOLVED"}


def main():
    args = sys.argv[1:]
    lines = 30
    if "--lines" in args:
        i = args.index("--lines")
        lines = int(args[i + 1])
        del args[i:i + 2]
    with open(args[0]) as f:
        results = json.load(f)
    failed = [t for t in results.get("tests", []) if t.get("code") in FAILED]
    if not failed:
        return
    print("== lit: the end of each failed test's output")
    for t in failed:
        out = [l for l in t.get("output", "").splitlines()
               if "\r" not in l and "\x1b[K" not in l]
        print("-- %s: %s" % (t["code"], t["name"]))
        for l in out[-lines:]:
            print("   " + l)


if __name__ == "__main__":
    main()
