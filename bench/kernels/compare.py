#!/usr/bin/env python3
"""The kernel timings of two builds on one GPU, line by line.

  compare.py --baseline B.jsonl [B2.jsonl ...] --current C.jsonl [...]
             [--json OUT.jsonl]

Each file is mpc-bench-kernels' output (a JSON line per kernel). Lines
are matched by kernel, shape and dtype; each side's time is the least of
its rounds (the runs alternate, so that drift of the clocks or the
temperature falls on both). A line is "slower" or "faster" past 5%
either way and "same" within it; a line one side lacks is "new" or
"gone". The copy line says whether both saw the same memory speed.
Prints a Markdown table, then a count of each verdict.
"""
import argparse
import json
import sys

MARGIN = 0.05


def json_lines(paths, tool="compare.py"):
    """Each path's JSON lines, in order; a line that is not JSON stops the
    run with its file and number."""
    for path in paths:
        with open(path) as f:
            for number, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    yield json.loads(text)
                except ValueError:
                    sys.exit("%s: %s:%d: not a JSON line" % (tool, path,
                                                             number))


def least_times(lines):
    """{(kernel, shape, dtype): least ms} over kernel lines, and the keys
    in first order."""
    best, order = {}, []
    for line in lines:
        key = (line["kernel"], line.get("shape", ""), line.get("dtype", ""))
        if key not in best:
            order.append(key)
            best[key] = line["ms"]
        else:
            best[key] = min(best[key], line["ms"])
    return best, order


def verdict(base, now):
    if base is None:
        return "new"
    if now is None:
        return "gone"
    if now > base * (1 + MARGIN):
        return "slower"
    if now < base * (1 - MARGIN):
        return "faster"
    return "same"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", nargs="+", required=True)
    parser.add_argument("--current", nargs="+", required=True)
    parser.add_argument("--json", help="also write the rows as JSON lines")
    args = parser.parse_args()
    base, base_order = least_times(json_lines(args.baseline))
    now, now_order = least_times(json_lines(args.current))
    keys = now_order + [k for k in base_order if k not in now]
    rows = []
    for key in keys:
        b, n = base.get(key), now.get(key)
        rows.append({"kernel": key[0], "shape": key[1], "dtype": key[2],
                     "baseline_ms": b, "current_ms": n,
                     "ratio": None if b is None or n is None else n / b,
                     "verdict": verdict(b, n)})
    print("| kernel | shape | dtype | baseline ms | current ms | "
          "current/baseline | verdict |")
    print("|---|---|---|---|---|---|---|")
    show = lambda ms: "" if ms is None else "%.4f" % ms
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["kernel"], r["shape"], r["dtype"], show(r["baseline_ms"]),
            show(r["current_ms"]),
            "" if r["ratio"] is None else "%.2f" % r["ratio"], r["verdict"]))
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print("\n" + ", ".join("%d %s" % (counts.get(v, 0), v) for v in
                           ("slower", "faster", "same", "new", "gone")))
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    sys.exit(main())
