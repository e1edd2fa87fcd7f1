#!/usr/bin/env python3
"""The defaults that wait for a GPU's timings, each with its lines.

  decide.py [--kernels K.jsonl ...] [--steps R.jsonl ...]

--kernels: mpc-bench-kernels' output (a JSON line per kernel; a line
timed in several files counts at its least time). --steps: bench/run.sh's
results.jsonl (mpc's levels' step times, per model).

For each choice the backend or the compiler makes by a default that no
GPU has confirmed, the lines that time the default against the other
way: the same shape and dtype (the other line's shape may go on, as in
"..., 4 groups" or "... offset 1"; a line whose shape says ", 1 groups"
ran as the default does and pairs with nothing), or the same model's
step. Each pair
is "faster" or "slower" (the other way against the default) past 5%,
"same" within it. A choice's verdict: "change" where the other way is
faster on every pair, "keep" where it is faster on none, "mixed" where
some pairs say each, "not timed" where no pair was. Prints a Markdown
table of the pairs, then one line per choice.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "kernels"))
from compare import MARGIN, json_lines, least_times  # noqa: E402

# name, how it is set, the default, the other way, kernel pairs (the
# default's line, the other way's line, dtype or None for any), step
# pairs (the default's level, the other way's level; every model timed).
CHOICES = [
    ("column reductions in one launch",
     "setReductionsInOneLaunch (Kernels.h)", "one launch", "two launches",
     [("column_sums", "column_sums_two_launches", None),
      ("layer_norm_backward", "layer_norm_backward_two_launches", None),
      ("add_layer_norm_backward", "add_layer_norm_backward_two_launches",
       None),
      ("batch_norm", "batch_norm_two_launches", None),
      ("batch_norm_backward", "batch_norm_backward_two_launches", None),
      ("reduce_sum_row", "reduce_sum_row_two_launches", None)], []),
    ("batch norms' second pass from the tensor's end",
     "setBatchNormSecondPassReversed (Kernels.h)", "from the end",
     "from the start",
     [("batch_norm", "batch_norm_forward_order", None),
      ("batch_norm_backward", "batch_norm_backward_forward_order", None)],
     []),
    ("batch norms over groups of channels within the L2",
     "MPC_CUDA_BN_GROUPS", "off", "l2",
     [("batch_norm", "batch_norm_l2_groups", None),
      ("batch_norm_backward", "batch_norm_backward_l2_groups", None),
      ("batch_norm_relu_backward_formed",
       "batch_norm_relu_backward_formed_l2_groups", None)],
     [("mpc-O2", "mpc-O2-bngroups")]),
    ("batch norms over groups of channels within twice the L2",
     "setBatchNormGroupBytes (Kernels.h)", "off", "twice the L2",
     [("batch_norm", "batch_norm_2l2_groups", None),
      ("batch_norm_backward", "batch_norm_backward_2l2_groups", None),
      ("batch_norm_relu_backward_formed",
       "batch_norm_relu_backward_formed_2l2_groups", None)], []),
    ("cuDNN's batch norm (the training step cannot take it yet)",
     "none", "ours", "cuDNN's",
     [("batch_norm", "batch_norm_cudnn", None),
      ("batch_norm_backward", "batch_norm_backward_cudnn", None),
      ("batch_norm_relu", "batch_norm_relu_cudnn", None),
      ("batch_norm_relu_backward_formed", "batch_norm_relu_backward_cudnn",
       None)], []),
    ("bias gradients summed by the norm backward",
     "mpc-compile --no-norm-bias-grads", "on", "off",
     [("add_layer_norm_backward_input_sums",
       "add_layer_norm_backward_then_column_sums", None)], []),
    ("sibling layers' bias gradients in one launch",
     "mpc-compile --no-sibling-bias-grads", "on", "off",
     [("column_sums_siblings", "column_sums_each", None)], []),
    ("transpose of the innermost dimension in pairs",
     "pairsFit (Data.cu)", "pairs", "elements",
     [("transpose_last", "transpose_last_elements", "f16")], []),
    ("programmatic dependencies in step graphs", "MPC_CUDA_PDL", "off", "on",
     [("graph_chain", "graph_chain_pdl", None)],
     [("mpc-O2", "mpc-O2-pdl")]),
    ("head products through pointer arrays, against copies",
     "mpc-compile --no-head-products", "pointer arrays", "copies",
     [("heads_scores_pointers", "heads_scores_copies", None),
      ("heads_context_pointers", "heads_context_copies", None),
      ("heads_scores_packed_pointers", "heads_scores_packed_copies", None),
      ("heads_grad_window_pointers", "heads_grad_window_copies", None)],
     [("mpc-O2", "mpc-O2-headcopies")]),
    ("head products through pointer arrays, against a loop",
     "MPC_CUDA_HEAD_PRODUCTS", "pointer arrays", "a loop of strided calls",
     [("heads_scores_pointers", "heads_scores_loop", None),
      ("heads_context_pointers", "heads_context_loop", None)], []),
    ("layer norms' parameter sums by a column reduction",
     "MPC_CUDA_NORM_SUMS", "columns", "rows", [],
     [("mpc-O2", "mpc-O2-rowsums")]),
    ("attention unfused", "mpc-compile --fuse-attention", "unfused", "fused",
     [], [("mpc-O2", "mpc-O2-attn")]),
]


def step_times(paths):
    """{(model, impl): ms per step} of mpc's levels, the last of each."""
    steps, order = {}, []
    for line in json_lines(paths, "decide.py"):
        if "ms_per_step" not in line or "model" not in line:
            continue
        key = (line["model"], line["impl"])
        if key not in steps:
            order.append(key)
        steps[key] = line["ms_per_step"]
    return steps, order


def verdict(default, other):
    if other > default * (1 + MARGIN):
        return "slower"
    if other < default * (1 - MARGIN):
        return "faster"
    return "same"


def kernel_pairs(times, order, mine, theirs, dtype):
    """(label, default ms, other ms) for each line of `mine` (of dtype,
    where given) with a line of `theirs` of its dtype whose shape is its
    shape or begins with it."""
    for kernel, shape, dt in order:
        if kernel != mine or (dtype and dt != dtype):
            continue
        for other, other_shape, other_dt in order:
            if (other == theirs and other_dt == dt and
                    other_shape.startswith(shape) and
                    not other_shape.endswith(", 1 groups")):
                label = "%s against %s, %s %s" % (theirs, mine, other_shape,
                                                  dt)
                yield (label.rstrip(), times[(kernel, shape, dt)],
                       times[(other, other_shape, other_dt)])
                break


def step_pairs(steps, order, mine, theirs):
    models = []
    for model, _ in order:
        if model not in models:
            models.append(model)
    for model in models:
        if (model, mine) in steps and (model, theirs) in steps:
            yield ("%s against %s, %s step" % (theirs, mine, model),
                   steps[(model, mine)], steps[(model, theirs)])


def overall(verdicts):
    if not verdicts:
        return "not timed"
    if all(v == "faster" for v in verdicts):
        return "change"
    if "faster" in verdicts:
        return "mixed"
    return "keep"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", nargs="+", default=[])
    parser.add_argument("--steps", nargs="+", default=[])
    args = parser.parse_args()
    if not args.kernels and not args.steps:
        parser.error("give --kernels, --steps or both")
    times, order = least_times(
        line for line in json_lines(args.kernels, "decide.py")
        if "kernel" in line and "ms" in line)
    steps, step_order = step_times(args.steps)
    print("| choice | lines | default ms | other ms | other/default |"
          " verdict |")
    print("|---|---|---|---|---|---|")
    summary = []
    for name, setting, default, other, pairs, step_levels in CHOICES:
        rows = []
        for mine, theirs, dtype in pairs:
            rows += kernel_pairs(times, order, mine, theirs, dtype)
        for mine, theirs in step_levels:
            rows += step_pairs(steps, step_order, mine, theirs)
        verdicts = []
        for label, ms_default, ms_other in rows:
            v = verdict(ms_default, ms_other)
            verdicts.append(v)
            print("| %s | %s | %.4f | %.4f | %.2f | %s |" %
                  (name, label, ms_default, ms_other, ms_other / ms_default,
                   v))
        summary.append((name, setting, default, other, overall(verdicts)))
    print()
    for name, setting, default, other, result in summary:
        if result == "change":
            advice = "change: %s is faster on every line (%s)" % (other,
                                                                  setting)
        elif result == "keep":
            advice = "keep %s: %s is not faster on any line" % (default,
                                                               other)
        elif result == "mixed":
            advice = "mixed: %s is faster on some lines only; read them" % (
                other)
        else:
            advice = "not timed: no line of both"
        print("- %s (default %s): %s" % (name, default, advice))


if __name__ == "__main__":
    main()
