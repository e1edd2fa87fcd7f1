#!/usr/bin/env python3
"""Compares an mpc evaluation (the metrics JSON line of --eval-only) with
PyTorch's (JSON {"val_loss": ..., "val_accuracy": ...}): the loss within
RTOL relative, the accuracy within one position of all those evaluated.

  compare_eval.py METRICS REFERENCE RTOL POSITIONS

POSITIONS: the positions evaluated over all batches (images, or pixels),
so that one position whose two largest logits are within rounding of
each other may be decided either way, and no more.
"""
import json
import sys


def main():
    metrics, reference = sys.argv[1], sys.argv[2]
    rtol, positions = float(sys.argv[3]), int(sys.argv[4])
    ours = [json.loads(l) for l in open(metrics) if "val_loss" in l]
    if len(ours) != 1:
        sys.exit("%d evaluations in %s, not 1" % (len(ours), metrics))
    ref = json.load(open(reference))
    loss, want = ours[0]["val_loss"], ref["val_loss"]
    if abs(loss - want) > rtol * abs(want):
        sys.exit("val_loss %.9g, reference %.9g (relative %.2g > %g)"
                 % (loss, want, abs(loss - want) / abs(want), rtol))
    accuracy, wanted = ours[0].get("val_accuracy"), ref["val_accuracy"]
    if accuracy is None or abs(accuracy - wanted) > 1.0 / positions + 1e-7:
        sys.exit("val_accuracy %s, reference %.9g" % (accuracy, wanted))
    print("evaluation within %g (loss %.2g, accuracy %.2g)"
          % (rtol, abs(loss - want) / abs(want), abs(accuracy - wanted)))


if __name__ == "__main__":
    main()
