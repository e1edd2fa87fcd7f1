#!/usr/bin/env python3
"""Float64 model of the optimizers on the quadratic of Inputs/quadratic.txt
(PyTorch's update rules), compared with a run's metrics: the loss logged at
step k is the loss before the k-th update.

  quadratic.py METRICS --kind sgd|momentum|adam|adamw [--lr ..] [...]
"""
import argparse
import json
import math
import sys

W0 = [1.0, -2.0, 0.5, 3.0]
T = [0.5, 0.5, 0.5, 0.5]


def rate(a, t):
    """The learning rate of update t (1-based), as mpc.lr_schedule."""
    if a.schedule == "constant" or (t >= a.warmup_steps and
                                    a.schedule == "linear-warmup"):
        return a.lr
    if t < a.warmup_steps:
        return a.lr * t / a.warmup_steps
    progress = min(1.0, max(0.0, (t - a.warmup_steps) /
                            (a.total_steps - a.warmup_steps)))
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1 + math.cos(math.pi *
                                                               progress))


def pytorch_rates(a, steps):
    """The rates of updates 1..steps under PyTorch's schedulers, written as
    torch.optim.lr_scheduler computes them: OneCycleLR's phases (cosine,
    cycle_momentum=False, held at its last rate where PyTorch would
    raise), StepLR's and ExponentialLR's chainable forms (the rate
    multiplied by gamma as the epochs pass)."""
    rates = []
    if a.schedule == "one-cycle":
        initial = a.lr / a.div_factor
        min_lr = initial / a.final_div_factor
        total = a.total_steps
        if a.three_phase:
            phases = [(float(a.pct_start * total) - 1, initial, a.lr),
                      (float(2 * a.pct_start * total) - 2, a.lr, initial),
                      (total - 1, initial, min_lr)]
        else:
            phases = [(float(a.pct_start * total) - 1, initial, a.lr),
                      (total - 1, a.lr, min_lr)]
        for step_num in range(steps):  # scheduler.step() calls so far
            step_num = min(step_num, total - 1)
            start_step = 0
            for i, (end_step, start, end) in enumerate(phases):
                if step_num <= end_step or i == len(phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    rates.append(end + (start - end) / 2.0 *
                                 (math.cos(math.pi * pct) + 1))
                    break
                start_step = end_step
        return rates
    lr = a.lr
    for epoch in range(steps):
        if epoch > 0 and (a.schedule == "exponential" or
                          epoch % a.step_size == 0):
            lr *= a.gamma
        rates.append(lr)
    return rates


def model(a, steps):
    w = list(W0)
    buf = None
    m = [0.0] * 4
    v = [0.0] * 4
    losses = []
    norms = []
    pytorch = a.schedule in ("one-cycle", "step", "exponential")
    rates = pytorch_rates(a, steps) if pytorch else None
    for t in range(1, steps + 1):
        losses.append(sum((wi - ti) ** 2 for wi, ti in zip(w, T)))
        lr = rates[t - 1] if pytorch else rate(a, t)
        g = [2 * (wi - ti) for wi, ti in zip(w, T)]
        # torch.nn.utils.clip_grad_norm_ before optimizer.step(): the raw
        # gradient only (weight decay is the optimizer's).
        norm = math.sqrt(sum(gi * gi for gi in g))
        norms.append(norm)
        if a.clip_grad_norm:
            coef = min(1.0, a.clip_grad_norm / (norm + 1e-6))
            g = [gi * coef for gi in g]
        if a.kind in ("sgd", "momentum"):
            g = [gi + a.weight_decay * wi for gi, wi in zip(g, w)]
            if a.kind == "momentum":
                buf = list(g) if buf is None else [
                    a.momentum * bi + gi for bi, gi in zip(buf, g)]
                g = [gi + a.momentum * bi for gi, bi in zip(g, buf)] \
                    if a.nesterov else buf
            w = [wi - lr * gi for wi, gi in zip(w, g)]
        elif a.kind == "lamb":
            # Apex's FusedLAMB (adam_w_mode, grad_averaging, no built-in
            # clipping): Adam's moments, u = m^/(sqrt(v^)+eps) + wd*w, the
            # step scaled by ||w|| / ||u||; without adam_w_mode the decay
            # is added to the gradient instead.
            if a.lamb_l2:
                g = [gi + a.weight_decay * wi for gi, wi in zip(g, w)]
            m = [a.beta1 * mi + (1 - a.beta1) * gi for mi, gi in zip(m, g)]
            v = [a.beta2 * vi + (1 - a.beta2) * gi * gi
                 for vi, gi in zip(v, g)]
            c1 = 1 - a.beta1 ** t
            c2 = 1 - a.beta2 ** t
            decay = 0.0 if a.lamb_l2 else a.weight_decay
            u = [(mi / c1) / (math.sqrt(vi / c2) + a.eps) + decay * wi
                 for mi, vi, wi in zip(m, v, w)]
            wn = math.sqrt(sum(wi * wi for wi in w))
            un = math.sqrt(sum(ui * ui for ui in u))
            ratio = wn / un if wn > 0 and un > 0 else 1.0
            w = [wi - lr * ratio * ui for wi, ui in zip(w, u)]
        else:
            if a.kind == "adamw":
                w = [wi * (1 - lr * a.weight_decay) for wi in w]
            else:
                g = [gi + a.weight_decay * wi for gi, wi in zip(g, w)]
            m = [a.beta1 * mi + (1 - a.beta1) * gi for mi, gi in zip(m, g)]
            v = [a.beta2 * vi + (1 - a.beta2) * gi * gi
                 for vi, gi in zip(v, g)]
            c1 = 1 - a.beta1 ** t if a.bias_correction else 1.0
            c2 = 1 - a.beta2 ** t if a.bias_correction else 1.0
            w = [wi - lr * (mi / c1) / (math.sqrt(vi / c2) + a.eps)
                 for wi, mi, vi in zip(w, m, v)]
    return losses, norms


def main():
    p = argparse.ArgumentParser()
    p.add_argument("metrics")
    p.add_argument("--kind", required=True)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--no-bias-correction", dest="bias_correction",
                   action="store_false")
    p.add_argument("--schedule", default="constant")
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--total-steps", type=int, default=0)
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--gamma", type=float, default=0.1)
    p.add_argument("--step-size", type=int, default=1)
    p.add_argument("--pct-start", type=float, default=0.3)
    p.add_argument("--div-factor", type=float, default=25.0)
    p.add_argument("--final-div-factor", type=float, default=1e4)
    p.add_argument("--three-phase", action="store_true")
    p.add_argument("--clip-grad-norm", type=float, default=0.0)
    p.add_argument("--lamb-l2", action="store_true")
    p.add_argument("--rtol", type=float, default=2e-5)
    a = p.parse_args()
    with open(a.metrics) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    got = [line["loss"] for line in lines]
    want, norms = model(a, len(got))
    for k, (g, w) in enumerate(zip(got, want), 1):
        if abs(g - w) > a.rtol * abs(w):
            print("step %d: loss %r, the float64 model gives %r" % (k, g, w),
                  file=sys.stderr)
            sys.exit(1)
    # The clipped runs log the gradient norm of each step (before clipping).
    if a.clip_grad_norm:
        for k, (line, n) in enumerate(zip(lines, norms), 1):
            if abs(line["grad_norm"] - n) > a.rtol * n:
                print("step %d: grad_norm %r, the float64 model gives %r" %
                      (k, line["grad_norm"], n), file=sys.stderr)
                sys.exit(1)
    print("%d steps match the float64 model (%s)" % (len(got), a.kind))


if __name__ == "__main__":
    main()
