#!/usr/bin/env python3
"""PyTorch's trace of make_zoo.py's summed masked-token objective with the
optimizer steps an mpc run skipped left out (its metrics lines' "skipped":
a step whose loss-scaled f16 gradients overflowed), as GradScaler leaves
them out: the loss is computed, the parameters are not updated.

  skipped_steps_trace.py DATA METRICS OUT_DIR NAME

Writes OUT_DIR/NAME-torch-losses.json and prints how many steps were
skipped (none is an error: the trace would be the plain one).
"""
import json
import os
import sys

import numpy
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import write_trace  # noqa: E402
from make_zoo import MaskedTokens  # noqa: E402


def main():
    data, metrics, out, name = sys.argv[1:5]
    skipped = [json.loads(l).get("skipped", False) for l in open(metrics)
               if l.strip()]
    if not any(skipped):
        sys.exit("no step was skipped")
    arrays = numpy.load(data)
    ids = torch.from_numpy(arrays["x"])
    labels = torch.from_numpy(arrays["y"])
    # make_zoo.py's model, made the same way.
    torch.manual_seed(7)
    model = MaskedTokens(True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for i, skip in enumerate(skipped):
        k = i % 8
        loss = model(ids[k * 4:(k + 1) * 4], labels[k * 4:(k + 1) * 4])
        losses.append(float(loss))
        if not skip:
            opt.zero_grad()
            loss.backward()
            opt.step()
    write_trace(out, name, losses)
    print("%d of %d steps skipped" % (sum(skipped), len(skipped)))


if __name__ == "__main__":
    main()
