#!/usr/bin/env python3
"""Checks on the metrics files (one JSON object per line) of the e2e tests.

  metrics.py falls FILE --steps N --ratio R
      N lines for steps 1..N, every field present and finite, and the last
      loss at most R times the first.
  metrics.py first-below FILE_A FILE_B --ratio R
      The first loss of A is at most R times the first loss of B.
  metrics.py close FILE_A FILE_B --rtol R
      The first losses agree to relative tolerance R.
  metrics.py track FILE REF --tol T --floor F [--no-skips]
      At every step of REF, |loss - loss_ref| <= T * (loss_ref + F); with
      --no-skips, no step of FILE was skipped.
  metrics.py same FILE_A FILE_B
      Every step present in both files has bit-identical loss, loss_scale
      and skipped fields; at least one step is shared.
  metrics.py track-eval FILE REF --tol T --floor F
      The evaluation lines (val_loss) of FILE and REF are at the same
      steps, and |val_loss - val_loss_ref| <= T * (val_loss_ref + F).

Every command but track-eval reads the training lines only (lines with a
"loss"; evaluation lines have "val_loss").
"""
import argparse
import json
import math
import sys


def load(path, key="loss"):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [line for line in lines if key in line]


def fail(message):
    print("metrics.py: " + message, file=sys.stderr)
    sys.exit(1)


def falls(args):
    lines = load(args.file)
    if [m["step"] for m in lines] != list(range(1, args.steps + 1)):
        fail("expected steps 1..%d, got %s" % (args.steps,
                                               [m["step"] for m in lines]))
    for m in lines:
        for key in ("loss", "loss_scale", "ms_per_step", "samples_per_s"):
            if not math.isfinite(m[key]):
                fail("step %d: %s is %r" % (m["step"], key, m[key]))
        if not isinstance(m["skipped"], bool):
            fail("step %d: skipped is not a boolean" % m["step"])
    first, last = lines[0]["loss"], lines[-1]["loss"]
    if not last <= args.ratio * first:
        fail("loss went from %r to %r, not below %r of it" %
             (first, last, args.ratio))
    print("loss %.6g -> %.6g over %d steps" % (first, last, args.steps))


def same(args):
    a = {m["step"]: m for m in load(args.a)}
    b = {m["step"]: m for m in load(args.b)}
    shared = sorted(set(a) & set(b))
    if not shared:
        fail("no step in common")
    for s in shared:
        for key in ("loss", "loss_scale", "skipped"):
            if a[s][key] != b[s][key]:
                fail("step %d: %s differs: %r vs %r" %
                     (s, key, a[s][key], b[s][key]))
    print("%d steps identical" % len(shared))


def first_below(args):
    a, b = load(args.a)[0]["loss"], load(args.b)[0]["loss"]
    if not a <= args.ratio * b:
        fail("first loss %r is not below %r of %r" % (a, args.ratio, b))
    print("first loss %.6g vs %.6g" % (a, b))


def close(args):
    a, b = load(args.a)[0]["loss"], load(args.b)[0]["loss"]
    if not (math.isfinite(a) and math.isfinite(b)) or \
            abs(a - b) > args.rtol * abs(a):
        fail("losses %r and %r differ by more than %r" % (a, b, args.rtol))
    print("losses %.7g and %.7g agree" % (a, b))


def track(args):
    got, ref = load(args.file), load(args.ref)
    if len(got) != len(ref):
        fail("%d steps against %d" % (len(got), len(ref)))
    worst = 0.0
    for m, r in zip(got, ref):
        if args.no_skips and m["skipped"]:
            fail("step %d was skipped" % m["step"])
        bound = args.tol * (r["loss"] + args.floor)
        if not abs(m["loss"] - r["loss"]) <= bound:
            fail("step %d: loss %r against %r (bound %r)" %
                 (m["step"], m["loss"], r["loss"], bound))
        worst = max(worst, abs(m["loss"] - r["loss"]) / bound)
    print("%d steps within the tolerance (worst %.2f of it)" %
          (len(got), worst))


def track_eval(args):
    got, ref = load(args.file, "val_loss"), load(args.ref, "val_loss")
    if not ref or [m["step"] for m in got] != [r["step"] for r in ref]:
        fail("evaluations at steps %r against %r" %
             ([m["step"] for m in got], [r["step"] for r in ref]))
    for m, r in zip(got, ref):
        bound = args.tol * (r["val_loss"] + args.floor)
        if not abs(m["val_loss"] - r["val_loss"]) <= bound:
            fail("step %d: val_loss %r against %r" %
                 (m["step"], m["val_loss"], r["val_loss"]))
    print("%d evaluations within the tolerance" % len(got))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("falls")
    f.add_argument("file")
    f.add_argument("--steps", type=int, required=True)
    f.add_argument("--ratio", type=float, required=True)
    s = sub.add_parser("same")
    s.add_argument("a")
    s.add_argument("b")
    fb = sub.add_parser("first-below")
    fb.add_argument("a")
    fb.add_argument("b")
    fb.add_argument("--ratio", type=float, required=True)
    c = sub.add_parser("close")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--rtol", type=float, required=True)
    t = sub.add_parser("track")
    t.add_argument("file")
    t.add_argument("ref")
    t.add_argument("--tol", type=float, required=True)
    t.add_argument("--floor", type=float, required=True)
    t.add_argument("--no-skips", action="store_true")
    te = sub.add_parser("track-eval")
    te.add_argument("file")
    te.add_argument("ref")
    te.add_argument("--tol", type=float, required=True)
    te.add_argument("--floor", type=float, required=True)
    args = p.parse_args()
    {"falls": falls, "same": same,
     "first-below": first_below, "close": close,
     "track": track, "track-eval": track_eval}[args.command](args)


if __name__ == "__main__":
    main()
