#!/usr/bin/env python3
"""The GPU's measured limits, the floors the benchmarks are compared with.

  python3 bench/limits.py        # one JSON line on stdout

copy_gb_per_s: device-to-device copy of 1 GiB (read + written bytes over
the time); gemm_*_tflops: an 8192^3 matrix product in f16, bf16 and f32
(TF32 off) through PyTorch (cuBLAS). Each the median of 20 timings with CUDA
events after 3 untimed runs, on random data.
"""
import json
import statistics

import torch


def median_ms(fn, reps=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 1 << 28  # f32 elements: 1 GiB
    a = torch.rand(n, device="cuda")
    b = torch.empty_like(a)
    ms = median_ms(lambda: b.copy_(a))
    result = {"impl": "limits", "gpu": torch.cuda.get_device_name(),
              "copy_gb_per_s": 2 * 4 * n / (ms * 1e-3) / 1e9}
    del a, b
    m = 8192
    for name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16),
                        ("f32", torch.float32)):
        x = torch.randn(m, m, device="cuda", dtype=dtype)
        y = torch.randn(m, m, device="cuda", dtype=dtype)
        ms = median_ms(lambda: torch.matmul(x, y))
        result[f"gemm_{name}_tflops"] = 2 * m**3 / (ms * 1e-3) / 1e12
    print(json.dumps(result))


if __name__ == "__main__":
    main()
