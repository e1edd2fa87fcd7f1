#!/usr/bin/env python3
"""The PyTorch peer of a benchmark model: same architecture, same initial
weights (read from the mpc executable's initial checkpoint), same batches in
file order, same optimizer; fp32, eager AMP (autocast + GradScaler) or
torch.compile AMP. Prints one JSON line.

  torch_peer.py mlp --init init.safetensors --data mlp.npz --mode amp \
      --steps 100 --warmup 20 --lr 0.01 --momentum 0.9
"""
import argparse
import json
import struct
import statistics

import numpy as np
import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I32": torch.int32, "I64": torch.int64, "F64": torch.float64}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=["mlp"])
    p.add_argument("--init", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--mode", choices=["fp32", "amp", "compile"],
                   required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    a = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False  # ours computes f32 in f32
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model, flops = mlp_from(read_safetensors(a.init))
    model = model.to(dev)
    arrays = np.load(a.data)
    x = torch.from_numpy(arrays["x"]).pin_memory()
    y = torch.from_numpy(arrays["labels"]).long().pin_memory()
    batches = x.shape[0] // a.batch
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    amp = a.mode != "fp32"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    loss_fn = torch.nn.CrossEntropyLoss()
    forward = torch.compile(model) if a.mode == "compile" else model

    def step(i):
        k = i % batches
        xb = x[k * a.batch:(k + 1) * a.batch].to(dev, non_blocking=True)
        yb = y[k * a.batch:(k + 1) * a.batch].to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(forward(xb), yb)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(a.warmup, a.warmup + a.steps):
        start, end = torch.cuda.Event(enable_timing=True), \
            torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step(i)
        end.record()
        times.append((start, end))
    torch.cuda.synchronize()
    ms = statistics.median(s.elapsed_time(e) for s, e in times)
    print(json.dumps({
        "impl": "torch-" + a.mode, "model": a.model, "batch": a.batch,
        "ms_per_step": ms, "samples_per_s": a.batch * 1000.0 / ms,
        "peak_bytes": torch.cuda.max_memory_allocated(),
        "tflops": flops * a.batch / (ms * 1e-3) / 1e12,
        "final_loss": float(loss), "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__}))


if __name__ == "__main__":
    main()
