#!/usr/bin/env python3
"""Writes the benchmark models as mpc graphs (forward pass + loss).

  models.py mlp --batch 512 --input 1024 --hidden 4096 --layers 4 \
      --classes 1000 -o mlp.mlir

  models.py bert --batch 8 --seq 512 --hidden 768 --heads 12 --ffn 3072 \
      --layers 12 --vocab 30522 --classes 2 -o bert.mlir

  models.py unet --batch 16 --image 128 --width 128 -o unet.mlir

  models.py chain --ops 10000 -o chain.mlir   # compile-time stress

The MLP: `layers` hidden Linear+ReLU layers of width `hidden` (or of the
widths `--widths 512,256` lists: examples/mlp.mlir's), then a
Linear classifier, softmax cross-entropy on integer labels. Weights are
[in, out] (`x @ W`), named w0, b0, w1, b1, ...; the PyTorch peer
(torch_peer.py) loads them from the executable's initial checkpoint.
"""
import argparse


def mlp(a):
    lines = []
    widths = [int(w) for w in str(a.widths).split(",")] if a.widths else \
        [a.hidden] * a.layers
    dims = [a.input] + widths + [a.classes]
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


def bert(a):
    """BERT-style encoder for classification, as examples/bert_encoder.mlir:
    token + position embeddings, post-LN layers (attention, GELU
    feed-forward; --gelu tanh for GPT-2's tanh approximation), dropout 0.1
    (none on the attention's probabilities with --attention-dropout 0),
    tanh pooler on the first token."""
    B, S, D, NH, F, V, C = (a.batch, a.seq, a.hidden, a.heads, a.ffn,
                            a.vocab, a.classes)
    HD = D // NH
    g, body = [], []
    seed = [0]

    def param(name, shape, init):
        seed[0] += 1
        spec = {"normal": "#mpc.init<normal, seed = %d, std = 0.02>" % seed[0],
                "xavier": "#mpc.init<xavier_uniform, seed = %d>" % seed[0],
                "ones": "#mpc.init<ones>", "zeros": "#mpc.init<zeros>"}[init]
        g.append("ml_program.global private mutable @%s(%s) : tensor<%sxf32>"
                 % (name, spec, "x".join(map(str, shape))))
        body.append("  %%%s = ml_program.global_load @%s : tensor<%sxf32>"
                    % (name, name, "x".join(map(str, shape))))
        return "%" + name

    n = [0]

    def v():
        n[0] += 1
        return "%%v%d" % n[0]

    def t(*shape):
        return "tensor<%sxf32>" % "x".join(map(str, shape))

    def linear(x, shape_in, din, dout, name):
        w = param(name + "_w", (din, dout), "xavier")
        b = param(name + "_b", (dout,), "zeros")
        m, r = v(), v()
        body.append("  %s = mpc.matmul %s, %s : %s, %s" %
                    (m, x, w, t(*shape_in, din), t(din, dout)))
        body.append("  %s = mpc.add %s, %s : %s, %s" %
                    (r, m, b, t(*shape_in, dout), t(dout)))
        return r

    def layer_norm(x, name):
        gm = param(name + "_gamma", (D,), "ones")
        bt = param(name + "_beta", (D,), "zeros")
        r = v()
        body.append("  %s:3 = mpc.layer_norm %s, %s, %s {epsilon = 1.0e-12} "
                    ": %s, %s" % (r, x, gm, bt, t(B, S, D), t(D)))
        return r + "#0"

    drop = [100]

    def dropout(x, shape):
        drop[0] += 1
        r = v()
        body.append("  %s:2 = mpc.dropout %s {p = 0.1, seed = %d} : %s" %
                    (r, x, drop[0], t(*shape)))
        return r + "#0"

    we = param("word_embeddings", (V, D), "normal")
    pe = param("position_embeddings", (S, D), "normal")
    e, e2 = v(), v()
    body.append("  %s = mpc.embedding %s, %%input_ids : %s, tensor<%dx%dxi32>"
                % (e, we, t(V, D), B, S))
    body.append("  %s = mpc.add %s, %s : %s, %s" % (e2, e, pe, t(B, S, D),
                                                  t(S, D)))
    h = dropout(layer_norm(e2, "embeddings_ln"), (B, S, D))
    scale = v()
    body.append("  %s = mpc.constant dense<%r> : tensor<f32>" %
                (scale, 1.0 / HD ** 0.5))
    for l in range(a.layers):
        p = "layer%d_" % l
        heads = []
        for which in ("query", "key", "value"):
            x = linear(h, (B, S), D, D, p + which)
            r, tr = v(), v()
            body.append("  %s = mpc.reshape %s : %s -> %s" %
                        (r, x, t(B, S, D), t(B, S, NH, HD)))
            body.append("  %s = mpc.transpose %s {permutation = array<i64: "
                        "0, 2, 1, 3>} : %s" % (tr, r, t(B, S, NH, HD)))
            heads.append(tr)
        q, k, val = heads
        sc, ss, sm = v(), v(), v()
        body.append("  %s = mpc.matmul %s, %s {transpose_b} : %s, %s" %
                    (sc, q, k, t(B, NH, S, HD), t(B, NH, S, HD)))
        body.append("  %s = mpc.mul %s, %s : %s, tensor<f32>" %
                    (ss, sc, scale, t(B, NH, S, S)))
        body.append("  %s = mpc.softmax %s : %s" % (sm, ss, t(B, NH, S, S)))
        pr = dropout(sm, (B, NH, S, S)) if a.attention_dropout else sm
        ctx, ct, cr = v(), v(), v()
        body.append("  %s = mpc.matmul %s, %s : %s, %s" %
                    (ctx, pr, val, t(B, NH, S, S), t(B, NH, S, HD)))
        body.append("  %s = mpc.transpose %s {permutation = array<i64: 0, 2, "
                    "1, 3>} : %s" % (ct, ctx, t(B, NH, S, HD)))
        body.append("  %s = mpc.reshape %s : %s -> %s" %
                    (cr, ct, t(B, S, NH, HD), t(B, S, D)))
        o = dropout(linear(cr, (B, S), D, D, p + "attention_out"), (B, S, D))
        res = v()
        body.append("  %s = mpc.add %s, %s : %s, %s" %
                    (res, o, h, t(B, S, D), t(B, S, D)))
        h = layer_norm(res, p + "attention_ln")
        inter = linear(h, (B, S), D, F, p + "intermediate")
        ge = v()
        body.append("  %s = mpc.gelu %s%s : %s" %
                    (ge, inter, " {approximate}" if a.gelu == "tanh" else "",
                     t(B, S, F)))
        o = dropout(linear(ge, (B, S), F, D, p + "output"), (B, S, D))
        res = v()
        body.append("  %s = mpc.add %s, %s : %s, %s" %
                    (res, o, h, t(B, S, D), t(B, S, D)))
        h = layer_norm(res, p + "output_ln")
    first, flat = v(), v()
    body.append("  %s = mpc.slice %s {offsets = array<i64: 0, 0, 0>, sizes = "
                "array<i64: %d, 1, %d>} : %s" % (first, h, B, D, t(B, S, D)))
    body.append("  %s = mpc.reshape %s : %s -> %s" %
                (flat, first, t(B, 1, D), t(B, D)))
    pooled = linear(flat, (B,), D, D, "pooler")
    th = v()
    body.append("  %s = mpc.tanh %s : %s" % (th, pooled, t(B, D)))
    logits = linear(dropout(th, (B, D)), (B,), D, C, "classifier")
    loss = v()
    body.append("  %s = mpc.cross_entropy %s, %%labels : %s, tensor<%dxi32>"
                % (loss, logits, t(B, C), B))
    body.append("  return %s : tensor<f32>" % loss)
    head = ("func.func @loss(%%input_ids: tensor<%dx%dxi32>, %%labels: "
            "tensor<%dxi32>) -> tensor<f32> {" % (B, S, B))
    return "\n".join(g + ["", head] + body + ["}"]) + "\n"


def unet(a):
    """UNet-style segmentation net, as examples/unet.mlir with base width W:
    two down stages (W, 2W; two 3x3 conv + BatchNorm + ReLU, 2x2 max pool),
    a 4W bottleneck, an up stage by stride-2 transposed convolution and one
    by nearest upsampling + 3x3 conv, each concatenated with the encoder
    output, a 1x1 head, BCE with logits. 448 W^2 weights (W=128: 7.3M)."""
    N, S, W = a.batch, a.image, a.width
    g, body = [], []
    seed = [1]
    n = [0]

    def v():
        n[0] += 1
        return "%%v%d" % n[0]

    def t(*shape):
        return "tensor<%sxf32>" % "x".join(map(str, shape))

    def glob(name, shape, init):
        g.append("ml_program.global private mutable @%s(%s) : %s" %
                 (name, init, t(*shape)))
        body.append("  %%%s = ml_program.global_load @%s : %s" %
                    (name, name, t(*shape)))
        return "%" + name

    def conv_bn_relu(x, hw, cin, cout, name):
        w = glob(name + "_w", (cout, 3, 3, cin),
                 "#mpc.init<kaiming_uniform, seed = %d>" % seed[0])
        seed[0] += 3
        c = v()
        body.append("  %s = mpc.conv2d %s, %s {padding = array<i64: 1, 1>} "
                    ": %s, %s" % (c, x, w, t(N, hw, hw, cin),
                                  t(cout, 3, 3, cin)))
        gm = glob(name + "_bn_gamma", (cout,), "#mpc.init<ones>")
        bt = glob(name + "_bn_beta", (cout,), "#mpc.init<zeros>")
        rm = glob(name + "_bn_running_mean", (cout,), "#mpc.init<zeros>")
        rv = glob(name + "_bn_running_var", (cout,), "#mpc.init<ones>")
        bn, r = v(), v()
        body.append("  %s:5 = mpc.batch_norm %s, %s, %s, %s, %s : %s, %s" %
                    (bn, c, gm, bt, rm, rv, t(N, hw, hw, cout), t(cout)))
        body.append("  ml_program.global_store @%s_bn_running_mean = %s#1 : %s"
                    % (name, bn, t(cout)))
        body.append("  ml_program.global_store @%s_bn_running_var = %s#2 : %s"
                    % (name, bn, t(cout)))
        body.append("  %s = mpc.relu %s#0 : %s" % (r, bn, t(N, hw, hw, cout)))
        return r

    def pool(x, hw, c):
        r = v()
        body.append("  %s = mpc.max_pool2d %s {kernel = array<i64: 2, 2>} : %s"
                    % (r, x, t(N, hw, hw, c)))
        return r

    def concat(x, y, hw, c):
        r = v()
        body.append("  %s = mpc.concat %s, %s {axis = 3} : %s, %s" %
                    (r, x, y, t(N, hw, hw, c), t(N, hw, hw, c)))
        return r

    x = conv_bn_relu("%image", S, 3, W, "down1_conv1")
    d1 = conv_bn_relu(x, S, W, W, "down1_conv2")
    x = conv_bn_relu(pool(d1, S, W), S // 2, W, 2 * W, "down2_conv1")
    d2 = conv_bn_relu(x, S // 2, 2 * W, 2 * W, "down2_conv2")
    x = conv_bn_relu(pool(d2, S // 2, 2 * W), S // 4, 2 * W, 4 * W,
                     "bottleneck_conv1")
    x = conv_bn_relu(x, S // 4, 4 * W, 4 * W, "bottleneck_conv2")
    up = glob("up1_w", (4 * W, 2, 2, 2 * W),
              "#mpc.init<kaiming_uniform, seed = %d>" % seed[0])
    seed[0] += 1
    u = v()
    body.append("  %s = mpc.conv_transpose2d %s, %s {stride = array<i64: 2, "
                "2>} : %s, %s" % (u, x, up, t(N, S // 4, S // 4, 4 * W),
                                  t(4 * W, 2, 2, 2 * W)))
    x = concat(u, d2, S // 2, 2 * W)
    x = conv_bn_relu(x, S // 2, 4 * W, 2 * W, "up1_conv1")
    x = conv_bn_relu(x, S // 2, 2 * W, 2 * W, "up1_conv2")
    u = v()
    body.append("  %s = mpc.upsample_nearest2d %s {scale = array<i64: 2, 2>} "
                ": %s" % (u, x, t(N, S // 2, S // 2, 2 * W)))
    x = conv_bn_relu(u, S, 2 * W, W, "up2_reduce")
    x = concat(x, d1, S, W)
    x = conv_bn_relu(x, S, 2 * W, W, "up2_conv1")
    x = conv_bn_relu(x, S, W, W, "up2_conv2")
    hw_ = glob("head_w", (1, 1, 1, W),
               "#mpc.init<xavier_uniform, seed = %d>" % seed[0])
    hb = glob("head_b", (1,), "#mpc.init<zeros>")
    c, z, l = v(), v(), v()
    body.append("  %s = mpc.conv2d %s, %s : %s, %s" %
                (c, x, hw_, t(N, S, S, W), t(1, 1, 1, W)))
    body.append("  %s = mpc.add %s, %s : %s, %s" % (z, c, hb, t(N, S, S, 1),
                                                  t(1)))
    body.append("  %s = mpc.bce_with_logits %s, %%mask : %s, %s" %
                (l, z, t(N, S, S, 1), t(N, S, S, 1)))
    body.append("  return %s : tensor<f32>" % l)
    head = ("func.func @loss(%%image: %s, %%mask: %s) -> tensor<f32> {" %
            (t(N, S, S, 3), t(N, S, S, 1)))
    return "\n".join(g + ["", head] + body + ["}"]) + "\n"


def chain(a):
    """One long function: `ops` elementwise ops on one [8, 16] tensor, every
    fifth adding a parameter (a compile-time stress, not a model)."""
    g, body = [], []
    cur = "%x"
    t = "tensor<8x16xf32>"
    for i in range(a.ops):
        if i % 5 == 4:
            p = i // 5
            g.append("ml_program.global private mutable @p%d(#mpc.init<"
                     "uniform, seed = %d, low = -0.1, high = 0.1>) : %s" %
                     (p, p + 1, t))
            body.append("  %%w%d = ml_program.global_load @p%d : %s" %
                        (p, p, t))
            body.append("  %%v%d = mpc.add %s, %%w%d : %s, %s" %
                        (i, cur, p, t, t))
        else:
            op = ["mpc.tanh", "mpc.sigmoid", "mpc.neg", "mpc.tanh"][i % 4]
            body.append("  %%v%d = %s %s : %s" % (i, op, cur, t))
        cur = "%%v%d" % i
    body.append("  %%l = mpc.reduce_sum %s {dims = array<i64: 0, 1>} : %s" %
                (cur, t))
    body.append("  return %l : tensor<f32>")
    head = "func.func @loss(%%x: %s) -> tensor<f32> {" % t
    return "\n".join(g + ["", head] + body + ["}"]) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=["mlp", "bert", "unet", "chain"])
    p.add_argument("--ops", type=int, default=10000)
    p.add_argument("--image", type=int, default=128)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--input", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--widths", default="",
                   help="MLP: hidden widths, e.g. 512,256 (instead of "
                   "--layers of --hidden)")
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--attention-dropout", type=int, choices=[0, 1],
                   default=1,
                   help="bert: 0 leaves out the dropout of the attention's "
                   "probabilities (as models trained without it)")
    p.add_argument("--gelu", choices=["exact", "tanh"], default="exact",
                   help="BERT: the feed-forward GELU, exact (erf, BERT's) "
                   "or its tanh approximation (GPT-2's)")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    with open(a.output, "w") as f:
        f.write({"mlp": mlp, "bert": bert, "unet": unet,
                 "chain": chain}[a.model](a))


if __name__ == "__main__":
    main()
