#!/usr/bin/env python3
"""The PyTorch peer of a benchmark model: same architecture, same initial
weights (read from the mpc executable's initial checkpoint), same batches in
file order, same optimizer; fp32, eager AMP (autocast + GradScaler) or
torch.compile AMP. Prints one JSON line. Timing: the median over windows
of --window steps of their wall time per step, each window ended by reading
the loss back, as mpc's runner times its logged lines.

  torch_peer.py mlp --init init.safetensors --data mlp.npz --mode amp \
      --steps 100 --warmup 20 --lr 0.01 --momentum 0.9
"""
import argparse
import json
import struct
import statistics
import time

import numpy as np
import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I32": torch.int32, "I64": torch.int64, "F64": torch.float64,
          "BOOL": torch.bool}


def read_safetensors(path):
    """The model's f32 weights in an mpc checkpoint. One written by an AMP
    build also holds the 16-bit copies of the weights, the loss scaler's
    state and step counters: none of them is a weight of the peer."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32" or \
                name.startswith(("loss_scale", "mpc.")):
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def openblas():
    """The OpenBLAS this process loaded (through PyTorch), for its thread
    count."""
    import ctypes
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "openblas" in path and ".so" in path:
            return ctypes.CDLL(path)
    raise SystemExit("PyTorch did not load OpenBLAS: install Debian's "
                     "libopenblas0-pthread (its libblas.so.3 alternative)")


def mlp_from(weights):
    layers, i = [], 0
    while "w%d" % i in weights:
        w, b = weights["w%d" % i], weights["b%d" % i]
        linear = torch.nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            linear.weight.copy_(w.t())  # ours is [in, out]
            linear.bias.copy_(b)
        layers.append(linear)
        if "w%d" % (i + 1) in weights:
            layers.append(torch.nn.ReLU())
        i += 1
    flops = sum(6 * weights["w%d" % j].shape[0] * weights["w%d" % j].shape[1]
                for j in range(i))  # per sample: forward 2, backward 4
    return torch.nn.Sequential(*layers), flops


class Bert(torch.nn.Module):
    """models.py's BERT-style encoder: post-LN layers, GELU (erf), dropout
    0.1, tanh pooler on the first token. Attention through
    scaled_dot_product_attention (what a PyTorch user writes; it may pick a
    fused kernel), or written out with --attention math."""

    def __init__(self, w, heads, math_attention):
        super().__init__()
        self.heads, self.math = heads, math_attention
        self.p = torch.nn.ParameterDict(
            {k: torch.nn.Parameter(v) for k, v in w.items()
             if not k.endswith(("_momentum", "_exp_avg", "_exp_avg_sq"))
             and v.is_floating_point() and v.dim() > 0})
        self.layers = 0
        while "layer%d_query_w" % self.layers in self.p:
            self.layers += 1

    def linear(self, x, name):
        return x @ self.p[name + "_w"] + self.p[name + "_b"]

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(
            x, x.shape[-1:], self.p[name + "_gamma"], self.p[name + "_beta"],
            1e-12)

    def forward(self, ids):
        F = torch.nn.functional
        b, s = ids.shape
        h = self.p["word_embeddings"][ids] + self.p["position_embeddings"]
        h = F.dropout(self.ln(h, "embeddings_ln"), 0.1, self.training)
        for l in range(self.layers):
            p = "layer%d_" % l
            q, k, v = (self.linear(h, p + n).view(b, s, self.heads, -1)
                       .transpose(1, 2) for n in ("query", "key", "value"))
            if self.math:
                a = torch.softmax(q @ k.transpose(-1, -2) /
                                  q.shape[-1] ** 0.5, -1)
                ctx = F.dropout(a, 0.1, self.training) @ v
            else:
                ctx = F.scaled_dot_product_attention(
                    q, k, v, dropout_p=0.1 if self.training else 0.0)
            ctx = ctx.transpose(1, 2).reshape(b, s, -1)
            o = F.dropout(self.linear(ctx, p + "attention_out"), 0.1,
                          self.training)
            h = self.ln(o + h, p + "attention_ln")
            f = F.gelu(self.linear(h, p + "intermediate"))
            o = F.dropout(self.linear(f, p + "output"), 0.1, self.training)
            h = self.ln(o + h, p + "output_ln")
        pooled = torch.tanh(self.linear(h[:, 0], "pooler"))
        return self.linear(F.dropout(pooled, 0.1, self.training),
                           "classifier")


def bert_flops(w, heads):
    """Training flops per sample (3x the forward's matmuls)."""
    s, d = w["position_embeddings"].shape
    f = w["layer0_intermediate_w"].shape[1]
    layers = sum(1 for k in w if k.endswith("_query_w"))
    forward = layers * (2 * s * (4 * d * d + 2 * d * f) + 4 * s * s * d)
    forward += 2 * d * d + 2 * d * w["classifier_w"].shape[1]
    return 3 * forward


class UNet(torch.nn.Module):
    """models.py's UNet, channels-last: conv weights are OHWI in the
    checkpoint (torch's OIHW after a permute), BatchNorm momentum 0.1."""

    BLOCKS = ["down1_conv1", "down1_conv2", "down2_conv1", "down2_conv2",
              "bottleneck_conv1", "bottleneck_conv2", "up1_conv1",
              "up1_conv2", "up2_reduce", "up2_conv1", "up2_conv2"]

    def __init__(self, w):
        super().__init__()
        nn = torch.nn
        self.blocks = nn.ModuleDict()
        for name in self.BLOCKS:
            k = w[name + "_w"]
            conv = nn.Conv2d(k.shape[3], k.shape[0], 3, padding=1, bias=False)
            bn = nn.BatchNorm2d(k.shape[0], eps=1e-5, momentum=0.1)
            with torch.no_grad():
                conv.weight.copy_(k.permute(0, 3, 1, 2))
                bn.weight.copy_(w[name + "_bn_gamma"])
                bn.bias.copy_(w[name + "_bn_beta"])
                bn.running_mean.copy_(w[name + "_bn_running_mean"])
                bn.running_var.copy_(w[name + "_bn_running_var"])
            self.blocks[name] = nn.Sequential(conv, bn, nn.ReLU())
        k = w["up1_w"]
        self.up1 = nn.ConvTranspose2d(k.shape[0], k.shape[3], 2, stride=2,
                                      bias=False)
        k = w["head_w"]
        self.head = nn.Conv2d(k.shape[3], 1, 1)
        with torch.no_grad():
            self.up1.weight.copy_(w["up1_w"].permute(0, 3, 1, 2))
            self.head.weight.copy_(k.permute(0, 3, 1, 2))
            self.head.bias.copy_(w["head_b"])

    def forward(self, x):
        F, b = torch.nn.functional, self.blocks
        d1 = b["down1_conv2"](b["down1_conv1"](x))
        d2 = b["down2_conv2"](b["down2_conv1"](F.max_pool2d(d1, 2)))
        x = b["bottleneck_conv2"](b["bottleneck_conv1"](F.max_pool2d(d2, 2)))
        x = torch.cat([self.up1(x), d2], 1)
        x = b["up1_conv2"](b["up1_conv1"](x))
        x = b["up2_reduce"](F.interpolate(x, scale_factor=2, mode="nearest"))
        x = b["up2_conv2"](b["up2_conv1"](torch.cat([x, d1], 1)))
        return self.head(x)


def unet_flops(w, image):
    """Training flops per sample: 3x the forward's convolutions."""
    total, size = 0, {"down1": image, "down2": image // 2,
                      "bottleneck": image // 4, "up1": image // 2,
                      "up2": image}
    for name in UNet.BLOCKS:
        k = w[name + "_w"]
        hw = size[name.split("_")[0]]
        total += 2 * hw * hw * k.numel()
    k = w["up1_w"]
    total += 2 * (image // 4) ** 2 * k.numel()
    total += 2 * image * image * w["head_w"].numel()
    return 3 * total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=["mlp", "bert", "unet"])
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--attention", choices=["sdpa", "math"], default="sdpa")
    p.add_argument("--init", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--mode", choices=["fp32", "amp", "compile"],
                   required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--window", type=int, default=10,
                   help="steps per timing window (as mpc's --log-every)")
    p.add_argument("--fused", action="store_true",
                   help="PyTorch's fused optimizer kernel (default: foreach)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark: each convolution's "
                   "algorithms timed on its first call")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--threads", type=int, default=0,
                   help="CPU: torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--blas-threads", default="",
                   help="CPU: OpenBLAS thread counts to try, e.g. 1,2 "
                   "(the fastest is reported)")
    a = p.parse_args()

    cuda = a.device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False  # ours: f32 in f32
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    elif a.mode != "fp32":
        p.error("on the CPU only --mode fp32 is measured")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    weights = read_safetensors(a.init)
    arrays = np.load(a.data)
    if a.model == "mlp":
        model, flops = mlp_from(weights)
        x = torch.from_numpy(arrays["x"])
        y = torch.from_numpy(arrays["labels"]).long()
        loss_fn = torch.nn.CrossEntropyLoss()
    elif a.model == "bert":
        # PyTorch before 2.0 has no scaled_dot_product_attention: its
        # users write attention out.
        model = Bert(weights, a.heads, a.attention == "math" or not hasattr(
            torch.nn.functional, "scaled_dot_product_attention"))
        flops = bert_flops(weights, a.heads)
        x = torch.from_numpy(arrays["input_ids"]).long()
        y = torch.from_numpy(arrays["labels"]).long()
        loss_fn = torch.nn.CrossEntropyLoss()
    else:
        model = UNet(weights)
        image = arrays["image"].shape[1]
        flops = unet_flops(weights, image)
        # NHWC data, channels-last tensors: no layout change on the device.
        x = torch.from_numpy(arrays["image"]).permute(0, 3, 1, 2)
        y = torch.from_numpy(arrays["mask"]).permute(0, 3, 1, 2)
        loss_fn = torch.nn.BCEWithLogitsLoss()
    model = model.to(dev).train()
    if a.model == "unet":
        model = model.to(memory_format=torch.channels_last)
    layout = (torch.channels_last if a.model == "unet"
              else torch.contiguous_format)
    x = x.contiguous(memory_format=layout)
    y = y.contiguous(memory_format=layout)
    if cuda:
        x, y = x.pin_memory(), y.pin_memory()
    batches = x.shape[0] // a.batch
    fused = {"fused": True} if a.fused else {}
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr,
                              momentum=a.momentum, **fused)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, **fused)
    amp = a.mode != "fp32"
    # fp32 steps without a scaler: PyTorch releases without torch.amp's
    # GradScaler (the CPU's 1.13) run them too.
    scaler = torch.amp.GradScaler("cuda") if amp else None
    forward = torch.compile(model) if a.mode == "compile" else model

    def step(i):
        k = i % batches
        xb = x[k * a.batch:(k + 1) * a.batch].to(dev, non_blocking=True)
        yb = y[k * a.batch:(k + 1) * a.batch].to(dev, non_blocking=True)
        if not amp:
            loss = loss_fn(forward(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(forward(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    def measure(first):
        """Warm-up, then the median window; steps first, first + 1, ..."""
        for i in range(first, first + a.warmup):
            step(i)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        # As mpc's runner: wall time of windows of steps, each ended by
        # reading the loss back (which waits for the device); the median.
        windows = []
        i = first + a.warmup
        while i < first + a.warmup + a.steps:
            n = min(a.window, first + a.warmup + a.steps - i)
            start = time.perf_counter()
            for j in range(i, i + n):
                loss = step(j)
            float(loss)
            windows.append((time.perf_counter() - start) * 1e3 / n)
            i += n
        return statistics.median(windows), loss

    # On the CPU, PyTorch's products run in the BLAS it loaded (OpenBLAS
    # on Debian), whose threads are its own: each --blas-threads count is
    # measured in turn and the fastest kept, PyTorch at its best.
    blas_counts = [None]
    if not cuda and a.blas_threads:
        blas = openblas()
        blas_counts = [int(v) for v in a.blas_threads.split(",")]
    ms, loss, blas_used, first = None, None, None, 0
    for count in blas_counts:
        if count is not None:
            blas.openblas_set_num_threads(count)
        took, last = measure(first)
        first += a.warmup + a.steps
        if ms is None or took < ms:
            ms, loss, blas_used = took, last, count
    print(json.dumps({
        "impl": "torch-" + a.mode + ("-math" if a.attention == "math" else "")
        + ("-benchmark" if a.cudnn_benchmark else ""),
        "model": a.model, "batch": a.batch,
        "ms_per_step": ms, "samples_per_s": a.batch * 1000.0 / ms,
        "peak_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "tflops": flops * a.batch / (ms * 1e-3) / 1e12,
        "final_loss": float(loss),
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "threads": None if cuda else torch.get_num_threads(),
        "blas_threads": blas_used,
        "torch": torch.__version__}))


if __name__ == "__main__":
    main()
