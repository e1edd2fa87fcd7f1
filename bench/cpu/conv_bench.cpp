//===- conv_bench.cpp - the CPU backend's convolutions, timed -------------===//
//
// mpc-bench-conv N H W C O K THREADS: times mpcrt_conv2d_f32 and its two
// backward kernels (stride 1, "same" padding, NHWC/OHWI) on random inputs;
// prints one JSON line of milliseconds (the best of 10 after a warm-up).
// bench/cpu/conv_peer.py times oneDNN (through PyTorch) on the same shape.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/mpcrt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

static double bestMs(void (*fn)(void *), void *context) {
  fn(context);
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn(context);
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

struct Problem {
  mpcrt_conv2d_shape s;
  std::vector<float> x, w, y, dy, dx, dw;
};

int main(int argc, char **argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: mpc-bench-conv N H W C O K THREADS\n");
    return 1;
  }
  int64_t v[7];
  for (int i = 0; i < 7; ++i)
    v[i] = std::atoll(argv[i + 1]);
  Problem p;
  mpcrt_conv2d_shape &s = p.s;
  s = {};
  s.n = v[0], s.h = v[1], s.w = v[2], s.c = v[3], s.o = v[4];
  s.kh = s.kw = v[5];
  s.ho = s.h, s.wo = s.w;
  s.stride_h = s.stride_w = s.dilation_h = s.dilation_w = s.groups = 1;
  s.pad_h = s.pad_w = v[5] / 2;
  mpcrt_set_threads(static_cast<int32_t>(v[6]));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  auto fill = [&](std::vector<float> &t, int64_t n) {
    t.resize(n);
    for (float &e : t)
      e = normal(rng);
  };
  fill(p.x, s.n * s.h * s.w * s.c);
  fill(p.w, s.o * s.kh * s.kw * s.c);
  fill(p.dy, s.n * s.ho * s.wo * s.o);
  p.y.resize(p.dy.size()), p.dx.resize(p.x.size()), p.dw.resize(p.w.size());
  double forward = bestMs(
      [](void *c) {
        auto *q = static_cast<Problem *>(c);
        mpcrt_conv2d_f32(q->x.data(), q->w.data(), q->y.data(), &q->s);
      },
      &p);
  double data = bestMs(
      [](void *c) {
        auto *q = static_cast<Problem *>(c);
        mpcrt_conv2d_backward_data_f32(q->dy.data(), q->w.data(), q->dx.data(),
                                       &q->s);
      },
      &p);
  double filter = bestMs(
      [](void *c) {
        auto *q = static_cast<Problem *>(c);
        mpcrt_conv2d_backward_filter_f32(q->dy.data(), q->x.data(),
                                         q->dw.data(), &q->s);
      },
      &p);
  std::printf("{\"impl\": \"mpc\", \"shape\": [%lld, %lld, %lld, %lld, %lld, "
              "%lld], \"threads\": %lld, \"forward_ms\": %.3f, "
              "\"backward_data_ms\": %.3f, \"backward_filter_ms\": %.3f}\n",
              (long long)v[0], (long long)v[1], (long long)v[2],
              (long long)v[3], (long long)v[4], (long long)v[5],
              (long long)v[6], forward, data, filter);
}
