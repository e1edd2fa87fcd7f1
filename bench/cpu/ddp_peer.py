#!/usr/bin/env python3
"""The peer of bench/cpu/data_parallel.sh: the MLP example (784-512-256-10,
ReLU, cross-entropy, SGD with momentum 0.9, lr 0.01) in PyTorch on the CPU,
one process with a batch of B*N and T threads, or N processes of
DistributedDataParallel (gloo) with a batch of B and 1 thread each. Prints
one JSON line: samples per second of the whole job, median of 5 timed
windows of STEPS steps after a warm-up.

  ddp_peer.py --ranks N --batch B --threads T --steps STEPS
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256),
        torch.nn.ReLU(), torch.nn.Linear(256, 10))


def train(rank, a, out):
    torch.set_num_threads(a.threads if a.ranks == 1 else 1)
    torch.manual_seed(0)
    net = model()
    if a.ranks > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
        net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(a.batch, 784)
    y = torch.randint(0, 10, (a.batch,))

    def step():
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    rates = []
    for _ in range(5):
        if a.ranks > 1:
            dist.barrier()
        start = time.perf_counter()
        for _ in range(a.steps):
            step()
        if a.ranks > 1:
            dist.barrier()
        rates.append(a.batch * a.ranks * a.steps /
                     (time.perf_counter() - start))
    if rank == 0:
        out.put(statistics.median(rates))
    if a.ranks > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    if a.ranks == 1:
        train(0, a, out)
    else:
        procs = [ctx.Process(target=train, args=(r, a, out))
                 for r in range(a.ranks)]
        for q in procs:
            q.start()
        for q in procs:
            q.join()
    print(json.dumps({"impl": "torch", "torch": torch.__version__,
                      "ranks": a.ranks, "batch_per_rank": a.batch,
                      "threads": a.threads, "samples_per_s": out.get()}))


if __name__ == "__main__":
    main()
