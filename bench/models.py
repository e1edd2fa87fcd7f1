#!/usr/bin/env python3
"""Writes the benchmark models as mpc graphs (forward pass + loss).

  models.py mlp --batch 512 --input 1024 --hidden 4096 --layers 4 \
      --classes 1000 -o mlp.mlir

The MLP: `layers` hidden Linear+ReLU layers of width `hidden`, then a
Linear classifier, softmax cross-entropy on integer labels. Weights are
[in, out] (`x @ W`), named w0, b0, w1, b1, ...; the PyTorch peer
(torch_peer.py) loads them from the executable's initial checkpoint.
"""
import argparse


def mlp(a):
    lines = []
    dims = [a.input] + [a.hidden] * a.layers + [a.classes]
    for i in range(len(dims) - 1):
        init = "kaiming_uniform" if i < len(dims) - 2 else "xavier_uniform"
        lines.append(
            "ml_program.global private mutable @w%d(#mpc.init<%s, seed = %d>)"
            " : tensor<%dx%dxf32>" % (i, init, i + 1, dims[i], dims[i + 1]))
        lines.append("ml_program.global private mutable @b%d(#mpc.init<zeros>)"
                     " : tensor<%dxf32>" % (i, dims[i + 1]))
    b = a.batch
    lines.append("")
    lines.append("func.func @loss(%%x: tensor<%dx%dxf32>, %%labels: "
                 "tensor<%dxi32>) -> tensor<f32> {" % (b, a.input, b))
    h = "%x"
    for i in range(len(dims) - 1):
        n, m = dims[i], dims[i + 1]
        lines += [
            "  %%w%d = ml_program.global_load @w%d : tensor<%dx%dxf32>" %
            (i, i, n, m),
            "  %%b%d = ml_program.global_load @b%d : tensor<%dxf32>" % (i, i, m),
            "  %%mm%d = mpc.matmul %s, %%w%d : tensor<%dx%dxf32>, "
            "tensor<%dx%dxf32>" % (i, h, i, b, n, n, m),
            "  %%z%d = mpc.add %%mm%d, %%b%d : tensor<%dx%dxf32>, "
            "tensor<%dxf32>" % (i, i, i, b, m, m),
        ]
        h = "%%z%d" % i
        if i < len(dims) - 2:
            lines.append("  %%h%d = mpc.relu %s : tensor<%dx%dxf32>" %
                         (i, h, b, m))
            h = "%%h%d" % i
    lines += [
        "  %%l = mpc.cross_entropy %s, %%labels : tensor<%dx%dxf32>, "
        "tensor<%dxi32>" % (h, b, a.classes, b),
        "  return %l : tensor<f32>",
        "}",
    ]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=["mlp"])
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--input", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    with open(a.output, "w") as f:
        f.write(mlp(a))


if __name__ == "__main__":
    main()
