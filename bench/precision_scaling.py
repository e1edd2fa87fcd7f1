#!/usr/bin/env python3
"""Is --mpc-assign-precision linear in graph size?

Generates a transformer-like training graph with L blocks (matmuls, adds,
layer_norm, softmax, gelu, their backward ops, and an Adam update per weight),
then one with 10*L blocks, and times the pass alone (--mlir-timing) at O1 and
O2. Prints the time ratio; linear means about 10x.

    bench/precision_scaling.py [--mpc-opt build/bin/mpc-opt] [--blocks 40]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def graph(blocks, h=64, s=32):
    g, body, n = [], [], [0]

    def v():
        n[0] += 1
        return f"%v{n[0]}"

    def op(text):
        r = v()
        body.append(f"  {r} = {text}")
        return r

    act = f"tensor<{s}x{h}xf32>"
    x = "%x"
    for b in range(blocks):
        g.append(f"ml_program.global private mutable @w{b}(#mpc.init<xavier_uniform, seed = {b}>) : tensor<{h}x{h}xf32>")
        g.append(f"ml_program.global private mutable @m{b}(#mpc.init<zeros>) : tensor<{h}x{h}xf32>")
        g.append(f"ml_program.global private mutable @v{b}(#mpc.init<zeros>) : tensor<{h}x{h}xf32>")
        g.append(f"ml_program.global private mutable @g{b}(#mpc.init<ones>) : tensor<{h}xf32>")
        w = op(f"ml_program.global_load @w{b} : tensor<{h}x{h}xf32>")
        gm = op(f"ml_program.global_load @g{b} : tensor<{h}xf32>")
        y = op(f"mpc.matmul {x}, {w} : {act}, tensor<{h}x{h}xf32>")
        a = op(f"mpc.gelu {y} : {act}")
        sm = op(f"mpc.softmax {a} : {act}")
        r = op(f"mpc.add {sm}, {x} : {act}, {act}")
        ln = v()
        body.append(f"  {ln}:3 = mpc.layer_norm {r}, {gm}, {gm} : {act}, tensor<{h}xf32>")
        # Backward-shaped ops on the same values.
        dx = op(f"mpc.gelu_grad {ln}#0, {y} : {act}")
        dsm = op(f"mpc.softmax_backward {dx}, {sm} : {act}")
        dw = op(f"mpc.matmul {x}, {dsm} {{transpose_a}} : {act}, {act}")
        m = op(f"ml_program.global_load @m{b} : tensor<{h}x{h}xf32>")
        vv = op(f"ml_program.global_load @v{b} : tensor<{h}x{h}xf32>")
        upd = v()
        body.append(f"  {upd}:3 = mpc.adam_update {w}, {dw}, {m}, {vv} lr(%lr) step(%step) : tensor<{h}x{h}xf32>, tensor<{h}x{h}xf32>")
        body.append(f"  ml_program.global_store @w{b} = {upd}#0 : tensor<{h}x{h}xf32>")
        body.append(f"  ml_program.global_store @m{b} = {upd}#1 : tensor<{h}x{h}xf32>")
        body.append(f"  ml_program.global_store @v{b} = {upd}#2 : tensor<{h}x{h}xf32>")
        x = f"{ln}#0"
    loss = op(f"mpc.reduce_mean {x} {{dims = array<i64: 0, 1>}} : {act}")
    return "\n".join(g) + (
        f"\nfunc.func @train_step(%x: {act}, %lr: tensor<f32>, %step: tensor<i32>) -> tensor<f32> {{\n"
        + "\n".join(body) + f"\n  return {loss} : tensor<f32>\n}}\n")


def pass_seconds(mpc_opt, path, level, repeats):
    best = None
    for _ in range(repeats):
        out = subprocess.run(
            [mpc_opt, path, f"--mpc-assign-precision=level={level} alignment-remarks=false",
             "--mlir-timing", "-o", os.devnull],
            check=True, capture_output=True, text=True).stderr
        m = re.search(r"^\s*([0-9.]+)\s+\(\s*[0-9.]+%\)\s+AssignPrecisionPass", out, re.M)
        if not m:
            sys.exit("no AssignPrecisionPass line in --mlir-timing output:\n" + out)
        t = float(m.group(1))
        best = t if best is None else min(best, t)
    return best


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpc-opt", default=os.path.join(here, "..", "build", "bin", "mpc-opt"))
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small, large = os.path.join(tmp, "small.mlir"), os.path.join(tmp, "large.mlir")
        with open(small, "w") as f:
            f.write(graph(args.blocks))
        with open(large, "w") as f:
            f.write(graph(10 * args.blocks))
        ops_small = sum(1 for l in open(small) if " = " in l or "global_store" in l)
        ops_large = sum(1 for l in open(large) if " = " in l or "global_store" in l)
        print(f"graph sizes: {ops_small} and {ops_large} ops ({ops_large / ops_small:.1f}x)")
        print(f"{'level':6} {'small (ms)':>11} {'large (ms)':>11} {'ratio':>7}")
        for level in ("O1", "O2"):
            a = pass_seconds(args.mpc_opt, small, level, args.repeats)
            b = pass_seconds(args.mpc_opt, large, level, args.repeats)
            print(f"{level:6} {a * 1e3:11.2f} {b * 1e3:11.2f} {b / a:7.2f}")


if __name__ == "__main__":
    main()
