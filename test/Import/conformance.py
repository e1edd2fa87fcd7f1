#!/usr/bin/env python3
"""ONNX's backend node tests through mpc-import-onnx and mpc-compile.

Each case of the list (node-tests.txt: "OP TEST pass" or "OP TEST xfail:
MESSAGE") is imported with --test-data (its test_data_set_0), compiled with
mpc-compile (the CPU backend, or what --compile-arg asks for: another
backend, a precision level), run for one step, and each output compared
with the stored one as ONNX's backend runner does (|got - want| <= atol +
rtol |want|, 1e-7 and 1e-3 unless given; stored f16 and bf16 outputs are
read too). A case listed to pass must pass; one listed to fail must fail
with MESSAGE in its error (the first line of the failing stage's error,
without the model's path and the node's name: what --record prints), so
the list stays true and checks each refusal's message. Prints the pass
count per op. --per-op N takes only the first N cases of each op that are
listed to pass.

  conformance.py --bin DIR --node-tests DIR --work DIR LIST
      [--compile-arg ARG]... [--atol A] [--rtol R] [--per-op N]
"""
import argparse
import collections
import concurrent.futures
import json
import math
import os
import re
import struct
import subprocess
import sys
import zipfile


def read_safetensors(path, prefixes=("output:", "expected:"), dtypes=None):
    """The tensors whose names begin with one of `prefixes`, each a tuple
    of floats; `dtypes`, where given, gets each one's dtype."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if not name.startswith(prefixes):
            continue
        if dtypes is not None:
            dtypes[name] = t["dtype"]
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if t["dtype"] == "BF16":
            # The upper half of an f32: widen each by 16 zero bits.
            words = struct.unpack("<%dH" % (len(raw) // 2), raw)
            out[name] = struct.unpack("<%df" % len(words), struct.pack(
                "<%dI" % len(words), *(w << 16 for w in words)))
            continue
        code = {"F16": "e", "F32": "f", "F64": "d"}.get(t["dtype"])
        if code is None:
            raise ValueError("%s is %s" % (name, t["dtype"]))
        out[name] = struct.unpack("<%d%s" % (len(raw) // struct.calcsize(code),
                                             code), raw)
    return out


def write_unused_npz(path):
    """The step's one unused input: a single f32 sample."""
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }")
    header += " " * (63 - len(header)) + "\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + \
        header.encode() + struct.pack("<f", 0.0)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("unused.npy", npy)


def run_stages(steps):
    """Runs each (stage, command) in turn: None, or "STAGE: " and the
    first line of the first failing command's error."""
    for stage, cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])
            return "%s: %s" % (stage, last[0])
    return None


def one_step(args, work):
    """The runner's command for one step of work/step, its checkpoint
    written to work/out.safetensors."""
    return ("run", [os.path.join(work, "step"), "--data", args.unused,
                    "--steps", "1", "--threads", "1", "--checkpoint",
                    os.path.join(work, "out.safetensors")])


def run_case(args, test):
    work = os.path.join(args.work, test)
    os.makedirs(work, exist_ok=True)
    case = os.path.join(args.node_tests, test)
    steps = [
        ("import", [os.path.join(args.bin, "mpc-import-onnx"),
                    os.path.join(case, "model.onnx"), "--test-data",
                    os.path.join(case, "test_data_set_0"), "-o",
                    os.path.join(work, "model.mlir")]),
        ("compile", [os.path.join(args.bin, "mpc-compile"),
                     os.path.join(work, "model.mlir"), "--entry=step", "-o",
                     os.path.join(work, "step")] + args.compile_arg),
        one_step(args, work),
    ]
    failure = run_stages(steps)
    if failure:
        return failure
    try:
        state = read_safetensors(os.path.join(work, "out.safetensors"))
    except ValueError as e:
        return "compare: %s" % e
    outputs = [k[len("output:"):] for k in state if k.startswith("output:")]
    if not outputs:
        return "compare: no outputs"
    for name in outputs:
        got, want = state["output:" + name], state["expected:" + name]
        for i, (g, w) in enumerate(zip(got, want)):
            if math.isnan(w) and math.isnan(g):
                continue
            if not abs(g - w) <= args.atol + args.rtol * abs(w):
                return "compare: %s[%d] = %.9g, expected %.9g" % (name, i, g, w)
    return None


# The unit roundoff of each stored type: an input stored after its update
# is rounded to it, relative to the larger of its values before and after.
ROUNDOFF = {"F64": 2.0**-53, "F32": 2.0**-24, "F16": 2.0**-11,
            "BF16": 2.0**-8}


def train_once(args, work, extra):
    """Compiles work/model.mlir's step as a loss with SGD at lr 1 (and
    `extra`), runs one step: the failure, or the checkpoint's inputs as
    {name: (dtype, initial values, values after the step)}."""
    os.makedirs(work, exist_ok=True)
    steps = [
        ("compile", [os.path.join(args.bin, "mpc-compile"),
                     os.path.join(os.path.dirname(work), "model.mlir"),
                     "--train", "--loss=step", "--optimizer=kind=sgd lr=1",
                     "-o", os.path.join(work, "step")] + extra),
        one_step(args, work),
    ]
    failure = run_stages(steps)
    if failure:
        return failure, None
    dtypes = {}
    try:
        state = read_safetensors(os.path.join(work, "out.safetensors"),
                                 ("input:", "initial:"), dtypes)
    except ValueError as e:
        return "compare: %s" % e, None
    # At O2/O3 the checkpoint also holds the low-precision copies the
    # compiler keeps of some inputs (input:y_f16): they have no initial.
    return None, {k[len("input:"):]: (dtypes[k], state["initial:" +
                                                       k[len("input:"):]], v)
                  for k, v in state.items() if k.startswith("input:") and
                  "initial:" + k[len("input:"):] in state}


def gradient_case(args, test):
    """The inputs' gradients of sum(output * w) (mpc-import-onnx
    --test-gradients) on the CPU backend in f32 (the reference, or as
    --reference-arg asks) and as --compile-arg asks: None where they agree within --grad-atol (of the
    largest reference gradient's magnitude) and --grad-rtol, "reference:
    ..." where the reference has none (what --record lists), else the
    difference."""
    work = os.path.join(args.work, test)
    os.makedirs(work, exist_ok=True)
    case = os.path.join(args.node_tests, test)
    failure = run_stages([
        ("import", [os.path.join(args.bin, "mpc-import-onnx"),
                    os.path.join(case, "model.onnx"), "--test-data",
                    os.path.join(case, "test_data_set_0"), "--test-gradients",
                    "-o", os.path.join(work, "model.mlir")])])
    if failure:
        return "reference: " + failure
    failure, ref = train_once(args, os.path.join(work, "ref"),
                              args.reference_arg)
    if failure:
        return "reference: " + failure
    if not ref:
        return "reference: no float inputs"
    failure, alt = train_once(args, os.path.join(work, "alt"),
                              args.compile_arg)
    if failure:
        return failure
    for name, (dtype, initial, after) in ref.items():
        grads = [a - b for a, b in zip(initial, after)]
        alt_dtype, _, alt_after = alt[name]
        scale = max((abs(g) for g in grads if math.isfinite(g)), default=0.0)
        for i, (p0, r, a) in enumerate(zip(initial, after, alt_after)):
            want, got = p0 - r, p0 - a
            if math.isnan(want) and math.isnan(got):
                continue
            stored = (ROUNDOFF.get(dtype, 0) + ROUNDOFF.get(alt_dtype, 0)) * \
                max(abs(p0), abs(r), abs(a))
            if not abs(got - want) <= (args.grad_atol * scale + stored +
                                       args.grad_rtol * abs(want)):
                return "gradient: %s[%d] = %.9g, reference %.9g" % (
                    name, i, got, want)
    return None


def core(failure):
    """A failure without the model's path and the node's name and opset:
    the part of the message that depends on the refusal only."""
    failure = re.sub(r"^import: mpc-import-onnx: error: .*?model\.onnx: ",
                     "", failure)
    failure = re.sub(r"^node '[^']*' \([^)]*\): ", "", failure)
    return failure


def each_case(args, run, cases):
    """run(args, test) of every case, args.jobs at a time, in order. Each
    case's executables (a few MB each, hundreds of cases) are removed once
    it has run, unless --keep-executables: its model.mlir rebuilds them."""
    def one(case):
        result = run(args, case[1])
        if not args.keep_executables:
            for root, _, files in os.walk(os.path.join(args.work, case[1])):
                if "step" in files:
                    os.remove(os.path.join(root, "step"))
        return result
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        return list(pool.map(one, cases))


def report(counts, summary, wrong):
    """Prints each op's (good, total), the summary line and each unexpected
    result, and exits: 1 if any was unexpected."""
    for op, (good, total) in counts.items():
        print("%-12s %d/%d" % (op, good, total))
    print(summary)
    for w in wrong:
        print("UNEXPECTED " + w)
    sys.exit(1 if wrong else 0)


def gradients(args, cases):
    """--gradients: each case listed to pass through gradient_case; prints
    the count that agree per op, and fails on a disagreement or a failure
    where the reference has gradients."""
    results = each_case(args, gradient_case, cases)
    counts = collections.OrderedDict()
    wrong = []
    for (op, test, _), failure in zip(cases, results):
        if args.record:
            print("%s %s %s" % (op, test, failure or "agree"))
        agree, total = counts.get(op, (0, 0))
        counts[op] = (agree + (failure is None), total +
                      (failure is None or not failure.startswith("reference")))
        if failure and not failure.startswith("reference"):
            wrong.append("%s: %s" % (test, failure))
    report(counts, "%d of %d cases have gradients; all but %d agree" % (
        sum(r is None or not r.startswith("reference") for r in results),
        len(results), len(wrong)), wrong)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--node-tests", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--compile-arg", action="append", default=[],
                   help="one more argument of mpc-compile (repeatable), "
                   "e.g. --backend=cuda")
    p.add_argument("--atol", type=float, default=1e-7,
                   help="absolute tolerance of the comparison")
    p.add_argument("--rtol", type=float, default=1e-3,
                   help="tolerance relative to the stored output")
    p.add_argument("--per-op", type=int, default=0,
                   help="only the first N cases of each op listed to pass")
    p.add_argument("--gradients", action="store_true",
                   help="compare the inputs' gradients with the CPU "
                   "backend's in f32 instead of the outputs with ONNX's")
    p.add_argument("--reference-arg", action="append", default=[],
                   help="with --gradients: one more argument of the "
                   "reference's mpc-compile (repeatable)")
    p.add_argument("--grad-atol", type=float, default=1e-4,
                   help="with --gradients: tolerance relative to the "
                   "largest reference gradient of the input")
    p.add_argument("--grad-rtol", type=float, default=1e-4,
                   help="with --gradients: tolerance relative to the "
                   "element's reference gradient")
    p.add_argument("--keep-executables", action="store_true",
                   help="keep each case's compiled step in --work")
    p.add_argument("--record", action="store_true",
                   help="print each case's result in the list's format")
    p.add_argument("list")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    args.unused = os.path.join(args.work, "unused.npz")
    write_unused_npz(args.unused)
    cases = []
    for line in open(args.list):
        line = line.split("#", 1)[0].strip()
        if line:
            op, test, expect = line.split(None, 2)
            cases.append((op, test, expect))
    if args.per_op:
        taken = collections.Counter()
        sample = []
        for op, test, expect in cases:
            if expect == "pass" and taken[op] < args.per_op:
                taken[op] += 1
                sample.append((op, test, expect))
        cases = sample
    if args.gradients:
        return gradients(args, [c for c in cases if c[2] == "pass"])
    results = each_case(args, run_case, cases)
    counts = collections.OrderedDict()
    wrong = []
    for (op, test, expect), failure in zip(cases, results):
        if args.record:
            print("%s %s %s" % (op, test,
                                "pass" if failure is None else
                                "xfail: " + core(failure)))
        passed, total = counts.get(op, (0, 0))
        counts[op] = (passed + (failure is None), total + 1)
        if expect == "pass" and failure is not None:
            wrong.append("%s: listed to pass, fails: %s" % (test, failure))
        elif expect != "pass" and failure is None:
            wrong.append("%s: listed to fail (%s), passes" % (test, expect))
        elif expect != "pass" and expect[len("xfail: "):] not in core(failure):
            wrong.append("%s: listed to fail with '%s', fails with '%s'" %
                         (test, expect[len("xfail: "):], core(failure)))
    report(counts, "%d of %d cases pass" % (sum(r is None for r in results),
                                            len(results)), wrong)


if __name__ == "__main__":
    main()
