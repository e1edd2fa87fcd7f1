#!/usr/bin/env python3
"""oneDNN's convolutions, through PyTorch on the CPU (Debian's PyTorch 1.13
bundles oneDNN 2.6 and runs channels-last f32 convolutions in it), timed as
mpc-bench-conv times mpc's: stride 1, "same" padding, the best of 10 after
a warm-up. Prints one JSON line.

  conv_peer.py N H W C O K THREADS
"""
import json
import sys
import time

import torch


def best_ms(fn):
    fn()
    best = 1e30
    for _ in range(10):
        start = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def main():
    n, h, w, c, o, k, threads = (int(v) for v in sys.argv[1:8])
    torch.set_num_threads(threads)
    assert torch.backends.mkldnn.is_available(), "PyTorch without oneDNN"
    x = torch.randn(n, c, h, w).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(o, c, k, k).contiguous(
        memory_format=torch.channels_last)
    dy = torch.randn(n, o, h, w).contiguous(memory_format=torch.channels_last)
    conv = torch.ops.aten.convolution
    backward = torch.ops.aten.convolution_backward

    def forward():
        conv(x, weight, None, [1, 1], [k // 2, k // 2], [1, 1], False,
             [0, 0], 1)

    def grads(mask):
        return lambda: backward(dy, x, weight, None, [1, 1], [k // 2, k // 2],
                                [1, 1], False, [0, 0], 1, mask)

    print(json.dumps({
        "impl": "onednn", "shape": [n, h, w, c, o, k], "threads": threads,
        "forward_ms": best_ms(forward),
        "backward_data_ms": best_ms(grads([True, False, False])),
        "backward_filter_ms": best_ms(grads([False, True, False]))}))


if __name__ == "__main__":
    main()
