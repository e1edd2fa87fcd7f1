#!/usr/bin/env python3
"""Where a CUDA training step's device time goes, per entry point.

Reads what an executable of `mpc-compile --backend=cuda` wrote with
MPC_CUDA_OP_TIMES=FILE and --no-graph (docs/CUDA.md): one line per call
of an entry point, the device time of its work and the device's idle
time before it (`idle_ms`: waiting for the host; files without it count
the idle time in the call after it). A step ends with its
`increment_step`; the calls before the first one (initialisation, the
first step's plans and workspaces) are left out, and each later step
counted whole. Prints, largest first: the entry point, its calls per
step, its milliseconds per step (the mean over the steps) and its share
of the step, the idle time as the row `(idle)`; then the step's total
and its busy part.

  bench/op_times.py FILE [--json]
"""
import argparse
import json
import sys

IDLE = "(idle)"


def record_of(path, number, line):
    """Line `number` of the file as (op, ms, idle ms or None), or an error
    naming the file and the line (a run cut off mid-line leaves half of
    one)."""
    try:
        record = json.loads(line)
        idle = record.get("idle_ms")
        return (str(record["op"]), float(record["ms"]),
                None if idle is None else float(idle))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        sys.exit("error: op_times.py: %s:%d: not a line of "
                 "MPC_CUDA_OP_TIMES (%s): %s" %
                 (path, number, e, line.strip()[:80]))


def steps_of(records):
    """The calls of each whole step after the first: lists of (op, ms),
    the idle time before a call as its own ("(idle)", ms)."""
    steps, current, seen_end = [], [], False
    for op, ms, idle in records:
        if idle is not None:
            current.append((IDLE, idle))
        current.append((op, ms))
        if op == "increment_step":
            if seen_end:
                steps.append(current)
            seen_end = True
            current = []
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--json", action="store_true",
                        help="one JSON line per entry point, then the step")
    args = parser.parse_args()
    try:
        with open(args.file) as f:
            steps = steps_of(record_of(args.file, n, line)
                             for n, line in enumerate(f, 1) if line.strip())
    except OSError as e:
        sys.exit("error: op_times.py: cannot read %s: %s" %
                 (args.file, e.strerror))
    if not steps:
        sys.exit("error: op_times.py: %s has no whole step after the first "
                 "(run at least two steps, with --no-graph)" % args.file)
    totals = {}
    for step in steps:
        for op, ms in step:
            calls, time = totals.get(op, (0, 0.0))
            totals[op] = (calls + 1, time + ms)
    n = len(steps)
    step_ms = sum(ms for _, ms in totals.values()) / n
    busy_ms = step_ms - totals.get(IDLE, (0, 0.0))[1] / n
    rows = sorted(((time / n, calls / n, op)
                   for op, (calls, time) in totals.items()), reverse=True)
    if args.json:
        for ms, calls, op in rows:
            print(json.dumps({"op": op, "calls": calls, "ms": round(ms, 6),
                              "share": round(ms / step_ms, 4)}))
        print(json.dumps({"step_ms": round(step_ms, 6),
                          "busy_ms": round(busy_ms, 6), "steps": n}))
        return
    print("| entry point | calls per step | ms per step | share |")
    print("|---|---|---|---|")
    for ms, calls, op in rows:
        print("| %s | %g | %.3f | %.1f%% |" % (op, calls, ms,
                                              100 * ms / step_ms))
    print("\nstep: %.3f ms of device time, %.3f ms of it busy, mean of %d "
          "step%s" % (step_ms, busy_ms, n, "" if n == 1 else "s"))


if __name__ == "__main__":
    main()
