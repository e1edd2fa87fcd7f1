#!/usr/bin/env python3
"""The CPU's measured f32 GEMM rate, the floor of the CPU benchmarks: a
2048^3 sgemm in the OpenBLAS PyTorch loaded, with --threads OpenBLAS
threads, best of 5 after a warm-up. Prints one JSON line.

  cpu_limits.py --threads 2
"""
import argparse
import json
import time

import torch

from torch_peer import openblas


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--size", type=int, default=2048)
    a = p.parse_args()
    openblas().openblas_set_num_threads(a.threads)
    torch.set_num_threads(1)
    n = a.size
    x, y = torch.randn(n, n), torch.randn(n, n)
    torch.mm(x, y)
    best = min(_timed(lambda: torch.mm(x, y)) for _ in range(5))
    print(json.dumps({"impl": "limits", "threads": a.threads,
                      "gemm_f32_gflops": 2 * n ** 3 / best / 1e9}))


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
