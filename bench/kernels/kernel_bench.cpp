//===- kernel_bench.cpp - the CUDA backend's memory-bound kernels, timed --===//
//
// mpc-bench-kernels [--reps N] [--filter TEXT]: times each memory-bound
// kernel of the CUDA backend at the benchmark models' shapes (BERT-base
// batch 8 x 512, the UNet at width 128 on 128x128 images, batch 16, the
// MLP's 4096-wide layers at batch 512) and, in the same run, a
// device-to-device copy of 1 GiB. One JSON line per kernel on stdout:
// the median of N timings (CUDA events, after 3 untimed runs) on random
// data, the bytes the kernel must move at least (each input read once,
// each output written once), the GB/s that gives, and its share of the
// copy's GB/s. The target of every memory-bound kernel is a share of 0.7
// or more; the multi-tensor Adam update of all BERT-base parameters
// (`adam_multi_bert`) is held to 1.3x the time of moving its bytes at
// the copy's rate (a share of 0.77). `target_met` says whether it holds.
// Last, mpc.attention at BERT's shape, in the flash kernels and in the
// chunked path, and the UNet's skip concatenations convolved whole and
// as their parts: compute-bound, so those lines give TFLOP/s instead.
//
// mpc-bench-kernels --sweep [--filter TEXT]: the batch norms and column
// sums again at other settings of the runtime's launch knobs, the
// two-launch column reductions' cut (setColumnPartialsTarget: 32 K to
// 512 K partials, 128 K the default; the `_two_launches` lines) and the batch
// norms' accesses per thread (setChannelVectorsPerThread: 1 to 16, 4 the
// default), and the batch norms over groups of channels within half to
// twice the L2 (setBatchNormGroupBytes; 0, none, the default), the
// setting in each line's shape ("... partials=131072"): what a
// choice of those defaults would gain, measured rather than guessed.
//
// mpc-bench-kernels --profile --only NAME [--index K]: for a profiler
// (bench/ncu_kernels.py runs it under Nsight Compute with
// --profile-from-start off): the lines named NAME exactly, or only the
// K-th of them (from 0), each run three times, then once between
// cudaProfilerStart and cudaProfilerStop; no timings. Each line says
// whether it was profiled.
//
// Those timings run a kernel again on the operands it has just read, so a
// case of less than the L2 cache (BERT's 4096x768 rows: 6 MiB a tensor)
// reads some of them from L2. Each line also gives the kernel cold
// (`ms_cold`: the L2 overwritten by a buffer twice its size before each
// timing) next to a device-to-device copy of the same bytes, timed cold
// the same way (`copy_same_ms`); `of_same_copy` is their ratio, the share
// of what a copy achieves at that size with its launch and ramp included.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace mpcrt::cuda;

namespace {

int reps = 20;
std::string filter;
/// --profile: the lines named `only` (the `onlyIndex`-th of them where it
/// is not negative) run once for a profiler instead of being timed.
bool profile = false;
std::string only;
int onlyIndex = -1, matched = 0;
/// --sweep: the setting the lines run at, appended to their shapes.
bool sweep = false;
std::string setting;
double copyGbPerS = 0;
/// Written before each cold timing: twice the L2 cache.
void *flushBuffer = nullptr;
int64_t flushBytes = 0;
/// The device's L2 cache.
int64_t l2Bytes = 0;

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return;
  std::fprintf(stderr, "error: mpc-bench-kernels: %s: %s\n", what,
               cudaGetErrorString(status));
  std::exit(1);
}

/// The median milliseconds of `run` over `reps` timings after 3 untimed;
/// with `cold`, the L2 cache overwritten before each.
double medianMs(const std::function<void()> &run, bool cold = false) {
  for (int i = 0; i < 3; ++i)
    run();
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    if (cold)
      zero(flushBuffer, flushBytes);
    check(cudaEventRecord(start, stream()), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop, stream()), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  synchronize();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

const char *nameOf(mpcrt_dtype d) {
  return d == MPCRT_F16    ? "f16"
         : d == MPCRT_BF16 ? "bf16"
         : d == MPCRT_F32  ? "f32"
                           : "f64";
}

/// Device buffers of one case, released when it ends.
struct Buffers {
  std::vector<void *> owned;
  ~Buffers() {
    synchronize();
    for (void *p : owned)
      release(p);
  }
  /// `count` random normal values of `dtype`.
  void *random(mpcrt_dtype dtype, int64_t count, uint64_t seed = 1) {
    void *p = allocate(count * bytesOf(dtype));
    owned.push_back(p);
    fillRandom(dtype, p, count, true, 0, 1, seed);
    return p;
  }
  /// `count` uniform values in [lo, hi) of `dtype` (positive moments).
  void *uniform(mpcrt_dtype dtype, int64_t count, double lo, double hi) {
    void *p = allocate(count * bytesOf(dtype));
    owned.push_back(p);
    fillRandom(dtype, p, count, false, lo, hi, 2);
    return p;
  }
  void *empty(int64_t bytes) {
    void *p = allocate(bytes);
    owned.push_back(p);
    zero(p, bytes);
    return p;
  }
  /// `count` int32 values in [0, bound).
  /// Uniform in [0, bound), but row 1 at every `every`-th position where
  /// every > 0 (a frequent token).
  int32_t *indices(int64_t count, int64_t bound, int64_t every = 0) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(bound - 1));
    std::vector<int32_t> host(count);
    for (int64_t i = 0; i < count; ++i)
      host[i] = every > 0 && i % every == 0 ? 1 : pick(rng);
    auto *p = static_cast<int32_t *>(allocate(count * 4));
    owned.push_back(p);
    copyToDevice(p, host.data(), count * 4);
    return p;
  }
};

/// The cold milliseconds of a device-to-device copy moving `bytes` (half
/// read, half written), kept per size.
double sameCopyMs(double bytes) {
  static std::map<int64_t, double> measured;
  int64_t half = static_cast<int64_t>(bytes / 2) / 16 * 16;
  auto it = measured.find(half);
  if (it != measured.end())
    return it->second;
  void *src = allocate(half), *dst = allocate(half);
  zero(src, half);
  double ms = medianMs([&] { copy(dst, src, half); }, /*cold=*/true);
  synchronize();
  release(src);
  release(dst);
  return measured[half] = ms;
}

/// Whether the line `kernel` is asked for (--filter, --only).
bool selected(const std::string &kernel) {
  if (profile)
    return kernel == only;
  return filter.empty() || kernel.find(filter) != std::string::npos;
}

/// --profile: runs `run` three times, then, where this is the line asked
/// for, once for the profiler; prints the line without timings.
void profileLine(const std::string &kernel, const std::string &shape,
                 const char *dtype, const std::function<void()> &run) {
  int index = matched++;
  bool chosen = onlyIndex < 0 || index == onlyIndex;
  if (chosen) {
    for (int i = 0; i < 3; ++i)
      run();
    synchronize();
    check(cudaProfilerStart(), "cudaProfilerStart");
    run();
    synchronize();
    check(cudaProfilerStop(), "cudaProfilerStop");
  }
  std::printf("{\"kernel\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", "
              "\"index\": %d, \"profiled\": %s}\n",
              kernel.c_str(), shape.c_str(), dtype, index,
              chosen ? "true" : "false");
  std::fflush(stdout);
}

/// Times `run`, which moves at least `bytes`, and prints its line.
void report(const std::string &kernel, const std::string &shape,
            const char *dtype, double bytes, const std::function<void()> &run,
            double target = 0.7) {
  if (!selected(kernel))
    return;
  if (profile)
    return profileLine(kernel, shape, dtype, run);
  std::string where = setting.empty() ? shape : shape + " " + setting;
  double ms = medianMs(run);
  double gbPerS = bytes / (ms * 1e-3) / 1e9;
  double share = gbPerS / copyGbPerS;
  double cold = medianMs(run, /*cold=*/true), same = sameCopyMs(bytes);
  std::printf("{\"kernel\": \"%s\", \"shape\": \"%s\", \"dtype\": \"%s\", "
              "\"ms\": %.5f, \"bytes\": %.0f, \"gb_per_s\": %.1f, "
              "\"of_copy\": %.3f, \"target\": %.2f, \"target_met\": %s, "
              "\"ms_cold\": %.5f, \"copy_same_ms\": %.5f, "
              "\"of_same_copy\": %.3f}\n",
              kernel.c_str(), where.c_str(), dtype, ms, bytes, gbPerS, share,
              target, share >= target ? "true" : "false", cold, same,
              same / cold);
  std::fflush(stdout);
}

/// Times `run`, a compute-bound f16 case doing `flop` operations, and
/// prints its line: the rate instead of a share of the copy.
void reportRate(const std::string &kernel, const std::string &shape,
                double flop, const std::function<void()> &run) {
  if (!selected(kernel))
    return;
  if (profile)
    return profileLine(kernel, shape, "f16", run);
  double ms = medianMs(run);
  std::printf("{\"kernel\": \"%s\", \"shape\": \"%s\", \"dtype\": "
              "\"f16\", \"ms\": %.5f, \"tflop_per_s\": %.1f, "
              "\"gb_per_s\": 0}\n",
              kernel.c_str(), shape.c_str(), ms, flop / (ms * 1e-3) / 1e12);
  std::fflush(stdout);
}

/// The copy rate everything is compared with: 1 GiB device to device
/// (read and written bytes over the time), as bench/limits.py measures it.
void measureCopy() {
  int64_t bytes = int64_t(1) << 30;
  Buffers b;
  void *src = b.empty(bytes), *dst = b.empty(bytes);
  double ms = medianMs([&] { copy(dst, src, bytes); });
  copyGbPerS = 2.0 * bytes / (ms * 1e-3) / 1e9;
  std::printf("{\"kernel\": \"copy\", \"shape\": \"1 GiB\", \"ms\": %.5f, "
              "\"gb_per_s\": %.1f}\n",
              ms, copyGbPerS);
}

// The models' shapes.
constexpr int64_t kRows = 8 * 512, kHidden = 768, kFfn = 3072, kHeads = 12,
                  kSeq = 512, kHead = 64, kVocab = 30522;
constexpr int64_t kPixels = 16 * 128 * 128, kWidth = 128;

std::string dims(std::initializer_list<int64_t> sizes) {
  std::string out;
  for (int64_t s : sizes)
    out += (out.empty() ? "" : "x") + std::to_string(s);
  return out;
}

void elementwise() {
  for (mpcrt_dtype t : {MPCRT_F16, MPCRT_F32}) {
    int64_t n = kRows * kFfn, e = bytesOf(t);
    Buffers b;
    void *x = b.random(t, n), *y = b.random(t, n), *out = b.empty(n * e);
    int64_t shape[] = {kRows, kFfn}, full[] = {kFfn, 1}, row[] = {0, 1};
    report("binary_add", dims({kRows, kFfn}), nameOf(t), 3.0 * n * e,
           [&] { binary(t, MPCRT_ADD, x, full, y, full, out, shape, 2); });
    report("binary_add_bias", dims({kRows, kFfn}) + "+" + dims({kFfn}),
           nameOf(t), 2.0 * n * e + kFfn * e,
           [&] { binary(t, MPCRT_ADD, x, full, y, row, out, shape, 2); });
    report("unary_gelu", dims({kRows, kFfn}), nameOf(t), 2.0 * n * e,
           [&] { unary(t, MPCRT_GELU, x, out, n); });
    report("unary_gelu_grad", dims({kRows, kFfn}), nameOf(t), 3.0 * n * e,
           [&] { unaryGrad(t, MPCRT_GELU, x, y, out, n); });
  }
  int64_t n = kRows * kFfn;
  Buffers b;
  void *x = b.random(MPCRT_F32, n), *h = b.empty(n * 2);
  report("cast", dims({kRows, kFfn}), "f32->f16", 6.0 * n,
         [&] { cast(MPCRT_F32, x, MPCRT_F16, h, n); });
  report("cast", dims({kRows, kFfn}), "f16->f32", 6.0 * n,
         [&] { cast(MPCRT_F16, h, MPCRT_F32, x, n); });
  // --check-numerics' check of one result: a read of it, and one record.
  void *records = b.empty(64);
  auto *first = static_cast<int32_t *>(records);
  auto *amax = reinterpret_cast<float *>(static_cast<char *>(records) + 8);
  auto *counts = reinterpret_cast<int64_t *>(static_cast<char *>(records) + 16);
  mpcrt_dtype f16 = MPCRT_F16;
  const void *input = h;
  int64_t index = 0;
  report("check_numerics", dims({kRows, kFfn}), "f16", 2.0 * n, [&] {
    checkNumerics(1, &f16, &input, &n, &index, first, amax, counts);
  });
  // A grouped check of a BERT layer's forward results in one launch: 12
  // values, from a bias (768) to the FFN's activations (4096x3072), their
  // own records.
  const int64_t sizes[] = {
      kHidden, kRows * kHidden, kRows * kFfn,    kRows * kHidden,
      kFfn,    kRows * kFfn,    kRows * kHidden, kRows * kHidden,
      kHidden, kRows * kFfn,    kRows * kHidden, kRows};
  const int kValues = sizeof(sizes) / sizeof(sizes[0]);
  std::vector<mpcrt_dtype> dtypes(kValues, MPCRT_F16);
  std::vector<const void *> inputs(kValues, h);
  std::vector<int64_t> indices;
  double bytes = 0;
  for (int t = 0; t < kValues; ++t) {
    indices.push_back(t);
    bytes += 2.0 * sizes[t];
  }
  void *manyRecords = b.empty(8 + 24 * kValues);
  auto *manyFirst = static_cast<int32_t *>(manyRecords);
  auto *manyAmax =
      reinterpret_cast<float *>(static_cast<char *>(manyRecords) + 8);
  auto *manyCounts = reinterpret_cast<int64_t *>(
      static_cast<char *>(manyRecords) + 8 + 8 * kValues);
  report("check_numerics_grouped", "12 values, 768 to 4096x3072", "f16", bytes,
         [&] {
           checkNumerics(kValues, dtypes.data(), inputs.data(), sizes,
                         indices.data(), manyFirst, manyAmax, manyCounts);
         });
}

void columnSumCases() {
  // BERT's bias gradients in one launch (the last block of each tile of
  // 64 columns combining its 32 chunks), then as a first pass and a
  // second launch (setReductionsInOneLaunch(false), the cut before).
  for (bool oneLaunch : {true, false}) {
    bool before = setReductionsInOneLaunch(oneLaunch);
    for (int64_t cols : {kHidden, kFfn}) {
      Buffers b;
      void *in = b.random(MPCRT_F16, kRows * cols), *out = b.empty(cols * 4);
      report(oneLaunch ? "column_sums" : "column_sums_two_launches",
             dims({kRows, cols}), "f16->f32", 2.0 * kRows * cols + 4.0 * cols,
             [&] { columnSums(MPCRT_F16, MPCRT_F32, in, out, kRows, cols); });
    }
    setReductionsInOneLaunch(before);
  }
  // An attention's query, key and value bias gradients (--mpc-fuse's
  // sibling-bias-grads): three 4096 x 768 gradients in one launch, against
  // a column reduction each.
  {
    Buffers b;
    const void *ins[3];
    void *outs[3];
    for (int i = 0; i < 3; ++i) {
      ins[i] = b.random(MPCRT_F16, kRows * kHidden);
      outs[i] = b.empty(kHidden * 4);
    }
    double bytes = 3 * (2.0 * kRows * kHidden + 4.0 * kHidden);
    std::string shape = "3 x " + dims({kRows, kHidden});
    report("column_sums_siblings", shape, "f16->f32", bytes, [&] {
      columnSumsOfList(MPCRT_F16, MPCRT_F32, 3, ins, outs, kRows, kHidden);
    });
    report("column_sums_each", shape, "f16->f32", bytes, [&] {
      for (int i = 0; i < 3; ++i)
        columnSums(MPCRT_F16, MPCRT_F32, ins[i], outs[i], kRows, kHidden);
    });
  }
  // One long row: the sum of the UNet head's [16, 128, 128, 1] output
  // gradient (its bias gradient), in segments.
  Buffers b;
  void *in = b.random(MPCRT_F32, kPixels), *out = b.empty(4);
  report("reduce_sum_row", dims({1, kPixels}), "f32", 4.0 * kPixels,
         [&] { reduce(MPCRT_F32, MPCRT_REDUCE_SUM, in, out, 1, kPixels, 1); });
  // Its segments' sums added by a second launch (the way before).
  bool before = setReductionsInOneLaunch(false);
  report("reduce_sum_row_two_launches", dims({1, kPixels}), "f32",
         4.0 * kPixels,
         [&] { reduce(MPCRT_F32, MPCRT_REDUCE_SUM, in, out, 1, kPixels, 1); });
  setReductionsInOneLaunch(before);
}

/// A weight gradient added to its f32 gradient accumulator (gradient
/// accumulation at O2): BERT's feed-forward weight [768, 3072] from 4096
/// rows, with its bias gradient. Rounded to f16, widened and added after
/// the GEMM (`--no-fuse-weight-grad-sums`: three kernels more), against
/// the accumulator as the GEMM's addend, in place (the default). GEMM-bound,
/// so the two lines compare by their ms; both count the summed form's bytes
/// and have no target.
void accumulationCases() {
  const int64_t m = kHidden, n = kFfn, k = kRows;
  Buffers b;
  void *x = b.random(MPCRT_F16, k * m), *dy = b.random(MPCRT_F16, k * n, 2);
  void *acc = b.random(MPCRT_F32, m * n, 3), *product = b.empty(m * n * 2),
       *widened = b.empty(m * n * 4), *bias = b.empty(n * 4);
  double bytes = 2.0 * (k * m + k * n) + 8.0 * m * n + 4.0 * n;
  int64_t shape[] = {m, n}, full[] = {n, 1};
  std::string gemm = dims({k, m}) + "^T x " + dims({k, n});
  report(
      "weight_grad_then_add", gemm, "f16->f32", bytes,
      [&] {
        matmulBiasGrad(MPCRT_F16, MPCRT_F16, MPCRT_F32, x, dy, nullptr, product,
                       nullptr, bias, m, n, k, true);
        cast(MPCRT_F16, product, MPCRT_F32, widened, m * n);
        binary(MPCRT_F32, MPCRT_ADD, acc, full, widened, full, acc, shape, 2);
      },
      /*target=*/0);
  report(
      "weight_grad_summed", gemm, "f16->f32", bytes,
      [&] {
        matmulBiasGrad(MPCRT_F16, MPCRT_F32, MPCRT_F32, x, dy, acc, acc,
                       nullptr, bias, m, n, k, true);
      },
      /*target=*/0);
  // BERT's f32 token-table gradient (O2's embedding backward reads the f32
  // layer norm's gradient) accumulated: a zeroed table of the batch's
  // sums added to the accumulator, against the sums added to the
  // accumulator's rows in place. Bytes: what the summed form must move
  // (the gradient read, each hit row read and written).
  Buffers e;
  void *grad = e.random(MPCRT_F32, kRows * kHidden);
  int32_t *ids = e.indices(kRows, kVocab);
  void *tacc = e.random(MPCRT_F32, kVocab * kHidden, 4),
       *table = e.empty(kVocab * kHidden * 4);
  int64_t tshape[] = {kVocab, kHidden}, tfull[] = {kHidden, 1};
  std::string lookup =
      dims({kVocab, kHidden}) + " from " + dims({kRows, kHidden});
  double rows = 4.0 * kRows * kHidden + 8.0 * kRows * kHidden;
  report(
      "embedding_grad_then_add", lookup, "f32", rows,
      [&] {
        embeddingBackward(MPCRT_F32, grad, ids, 32, kRows, kVocab, kHidden, -1,
                          nullptr, table);
        binary(MPCRT_F32, MPCRT_ADD, tacc, tfull, table, tfull, tacc, tshape,
               2);
      },
      /*target=*/0);
  report(
      "embedding_grad_summed", lookup, "f32", rows,
      [&] {
        embeddingBackward(MPCRT_F32, grad, ids, 32, kRows, kVocab, kHidden, -1,
                          tacc, tacc);
      },
      /*target=*/0);
}

void rowCases() {
  // Cross-entropy: the MLP's 1000 classes at batch 512, forward and
  // backward.
  for (mpcrt_dtype t : {MPCRT_F16, MPCRT_F32}) {
    int64_t rows = 512, classes = 1000, e = bytesOf(t);
    Buffers b;
    void *logits = b.random(t, rows * classes);
    int32_t *labels = b.indices(rows, classes);
    void *loss = b.empty(8), *grad = b.empty(rows * classes * e);
    fill(t, loss, 1, 1.0);
    report("cross_entropy", dims({rows, classes}), nameOf(t),
           double(rows) * classes * e + rows * 4.0, [&] {
             crossEntropy(t, logits, labels, 32, loss, rows, classes, true);
           });
    report("cross_entropy_backward", dims({rows, classes}), nameOf(t),
           2.0 * rows * classes * e + rows * 4.0, [&] {
             crossEntropyBackward(t, loss, logits, labels, 32, grad, rows,
                                  classes, true);
           });
  }
  // Softmax over BERT's attention scores (unfused attention).
  for (mpcrt_dtype t : {MPCRT_F16, MPCRT_F32}) {
    int64_t rows = 8 * kHeads * kSeq, cols = kSeq, e = bytesOf(t);
    Buffers b;
    void *x = b.random(t, rows * cols), *y = b.empty(rows * cols * e),
         *g = b.random(t, rows * cols, 5), *dx = b.empty(rows * cols * e);
    report("softmax", dims({rows, cols}), nameOf(t), 2.0 * rows * cols * e,
           [&] { softmax(t, x, t, y, rows, cols, false); });
    report("softmax_backward", dims({rows, cols}), nameOf(t),
           3.0 * rows * cols * e,
           [&] { softmaxBackward(t, g, t, y, t, dx, rows, cols, false); });
  }
  // The O2 step's unfused attention at BERT's scores: the softmax from
  // f16 scores to f32 probabilities and its gradient (--keep-probabilities),
  // and mpc.softmax_dropout, f16 to f16, with its backward from the scores
  // (the default): the bytes each must move.
  {
    int64_t rows = 8 * kHeads * kSeq, cols = kSeq, n = rows * cols;
    Buffers b;
    void *x = b.random(MPCRT_F16, n), *y = b.empty(n * 4),
         *g = b.random(MPCRT_F16, n, 5), *dx = b.empty(n * 2),
         *p = b.empty(n * 2);
    auto *step = static_cast<int64_t *>(b.empty(8));
    report("softmax", dims({rows, cols}), "f16->f32", 6.0 * n, [&] {
      softmax(MPCRT_F16, x, MPCRT_F32, y, rows, cols, false, 0.125);
    });
    report("softmax_backward", dims({rows, cols}), "f16,f32->f16", 8.0 * n,
           [&] {
             softmaxBackward(MPCRT_F16, g, MPCRT_F32, y, MPCRT_F16, dx, rows,
                             cols, false, 0.125);
           });
    report("softmax_dropout", dims({rows, cols}), "f16", 4.0 * n, [&] {
      softmaxDropout(MPCRT_F16, x, MPCRT_F16, p, rows, cols, 0.125, 0.1, 42,
                     step);
    });
    report("softmax_dropout_backward", dims({rows, cols}), "f16", 6.0 * n, [&] {
      softmaxDropoutBackward(MPCRT_F16, g, MPCRT_F16, x, MPCRT_F16, dx, nullptr,
                             rows, cols, 0.125, 0.1, 42, step);
    });
    // Writing the dropped probabilities too (recompute-in-backward: the
    // step's recomputed softmax_dropout forward no longer runs).
    report("softmax_dropout_backward_dropped", dims({rows, cols}), "f16",
           8.0 * n, [&] {
             softmaxDropoutBackward(MPCRT_F16, g, MPCRT_F16, x, MPCRT_F16, dx,
                                    p, rows, cols, 0.125, 0.1, 42, step);
           });
  }
  // Layer norm over BERT's hidden rows, f32 parameters.
  {
    Buffers b;
    int64_t n = kRows * kHidden;
    void *x = b.random(MPCRT_F16, n), *res = b.random(MPCRT_F16, n, 7),
         *gamma = b.random(MPCRT_F32, kHidden),
         *beta = b.random(MPCRT_F32, kHidden, 9), *y = b.empty(n * 2),
         *sum = b.empty(n * 2), *mean = b.empty(kRows * 4),
         *rstd = b.empty(kRows * 4), *g = b.random(MPCRT_F16, n, 11),
         *dx = b.empty(n * 2), *dres = b.empty(n * 2),
         *dg = b.empty(kHidden * 4), *db = b.empty(kHidden * 4);
    auto *step = static_cast<int64_t *>(b.empty(8));
    report("layer_norm", dims({kRows, kHidden}), "f16", 4.0 * n, [&] {
      layerNorm(MPCRT_F16, x, MPCRT_F32, gamma, beta, y, mean, rstd, kRows,
                kHidden, 1e-12);
    });
    report("layer_norm_backward", dims({kRows, kHidden}), "f16", 6.0 * n, [&] {
      layerNormBackward(MPCRT_F16, g, x, mean, rstd, MPCRT_F32, gamma, dx, dg,
                        db, nullptr, nullptr, kRows, kHidden);
    });
    report("add_layer_norm", dims({kRows, kHidden}), "f16", 8.0 * n, [&] {
      addLayerNorm(MPCRT_F16, x, res, MPCRT_F32, gamma, beta, sum, y, mean,
                   rstd, kRows, kHidden, kRows, 1e-12, 0.1, 42, step);
    });
    // BERT's embeddings: the position embeddings' 512 rows added to the
    // tokens' rows, no dropout (the fused norm in front of the encoder).
    report("add_layer_norm_positions",
           dims({kRows, kHidden}) + "+" + dims({512, kHidden}), "f16",
           6.0 * n + 2.0 * 512 * kHidden, [&] {
             addLayerNorm(MPCRT_F16, x, res, MPCRT_F32, gamma, beta, sum, y,
                          mean, rstd, kRows, kHidden, 512, 1e-12, 0, 42, step);
           });
    report("add_layer_norm_backward", dims({kRows, kHidden}), "f16", 8.0 * n,
           [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0.1, 42, step);
           });
    // Without dropout (the imported PyTorch encoder's x + f(x)): both
    // gradients written, as before, against the input's alone, the
    // residual's null (its readers read the input's: the same values, one
    // write fewer).
    report("add_layer_norm_backward_no_dropout", dims({kRows, kHidden}), "f16",
           8.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0, 42, step);
           });
    report("add_layer_norm_backward_no_dropout_one_gradient",
           dims({kRows, kHidden}), "f16", 6.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, nullptr, dg, db,
                                  nullptr, nullptr, kRows, kHidden, 0, 42,
                                  step);
           });
    // With the input gradient's sums, the bias gradient of the layer
    // before the norm (--mpc-fuse's norm-bias-grads: BERT's attention
    // output and second feed-forward layer), taken by the parameter sums'
    // reduction reading dx again (2 bytes an element more), against the
    // backward and a column_sums of dx of their own, timed as one.
    void *dxSums = b.empty(kHidden * 4);
    report("add_layer_norm_backward_input_sums", dims({kRows, kHidden}), "f16",
           10.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0.1, 42, step,
                                  dxSums);
           });
    report("add_layer_norm_backward_then_column_sums", dims({kRows, kHidden}),
           "f16", 10.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0.1, 42, step);
             columnSums(MPCRT_F16, MPCRT_F32, dx, dxSums, kRows, kHidden,
                        nullptr);
           });
    // The two above with gamma's and beta's sums taken by the row kernel
    // as it reads dy and x (MPC_CUDA_NORM_SUMS=rows) instead of the
    // column reduction reading them again (the default: 3-4% faster on an
    // H200, docs/Benchmarks.md).
    bool rowSums = setLayerNormRowSums(true);
    report("layer_norm_backward_rowsums", dims({kRows, kHidden}), "f16",
           6.0 * n, [&] {
             layerNormBackward(MPCRT_F16, g, x, mean, rstd, MPCRT_F32, gamma,
                               dx, dg, db, nullptr, nullptr, kRows, kHidden);
           });
    report("add_layer_norm_backward_rowsums", dims({kRows, kHidden}), "f16",
           8.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0.1, 42, step);
           });
    setLayerNormRowSums(rowSums);
    // The column reduction's way again as a first pass and a second
    // launch (the cut before setReductionsInOneLaunch's default).
    bool oneLaunch = setReductionsInOneLaunch(false);
    report("layer_norm_backward_two_launches", dims({kRows, kHidden}), "f16",
           6.0 * n, [&] {
             layerNormBackward(MPCRT_F16, g, x, mean, rstd, MPCRT_F32, gamma,
                               dx, dg, db, nullptr, nullptr, kRows, kHidden);
           });
    report("add_layer_norm_backward_two_launches", dims({kRows, kHidden}),
           "f16", 8.0 * n, [&] {
             addLayerNormBackward(MPCRT_F16, g, nullptr, sum, mean, rstd,
                                  MPCRT_F32, gamma, dx, dres, dg, db, nullptr,
                                  nullptr, kRows, kHidden, 0.1, 42, step);
           });
    setReductionsInOneLaunch(oneLaunch);
  }
}

void movementCases() {
  // [8, 512, 12, 64] to [8, 12, 512, 64]: the heads' transpose.
  int64_t n = kRows * kHidden;
  Buffers b;
  void *in = b.random(MPCRT_F16, n), *out = b.empty(n * 2);
  int64_t shape[] = {8, kHeads, kSeq, kHead};
  int64_t strides[] = {kSeq * kHidden, kHead, kHidden, 1};
  report("transpose_heads", dims({8, kSeq, kHeads, kHead}), "f16", 4.0 * n,
         [&] { stridedCopy(in, 0, strides, out, shape, 4, 2); });
  // The same heads out of a packed QKV projection's middle third (a view:
  // rows 3 * 768 apart, 768 elements in), and a gradient scattered back
  // from heads into its concatenation's window ([8, 12, 512, 64] into
  // [8, 512, 2304] at 768): what an imported nn.MultiheadAttention moves
  // once each way (docs/Runtime.md).
  {
    void *packed = b.random(MPCRT_F16, 3 * n), *whole = b.empty(3 * n * 2);
    int64_t viewStrides[] = {kSeq * 3 * kHidden, kHead, 3 * kHidden, 1};
    report("transpose_heads_packed", dims({8, kSeq, 3 * kHidden}) + " third",
           "f16", 4.0 * n, [&] {
             stridedCopy(packed, kHidden, viewStrides, out, shape, 4, 2);
           });
    report("scatter_heads_window", dims({8, kHeads, kSeq, kHead}) + " into 3x",
           "f16", 4.0 * n, [&] {
             stridedScatter(in, whole, kHidden, viewStrides, shape, 4, 2);
           });
  }
  // [4096, 768] to [768, 4096]: a transpose of the innermost dimension
  // (shared-memory tiles).
  int64_t tShape[] = {kHidden, kRows}, tStrides[] = {1, kHidden};
  report("transpose_last", dims({kRows, kHidden}), "f16", 4.0 * n,
         [&] { stridedCopy(in, 0, tStrides, out, tShape, 2, 2); });
  // The same f16 transpose from an odd offset, so that its pairs do not
  // lie on 4 bytes: the element kernel (two 64-byte accesses a warp where
  // the pairs take one of 128), against the line above in the same run;
  // and the f32 transpose (the element kernel, 4-byte elements).
  {
    void *shifted = b.random(MPCRT_F16, n + 1), *wide = b.random(MPCRT_F32, n),
         *wideOut = b.empty(n * 4);
    report("transpose_last_elements", dims({kRows, kHidden}) + " offset 1",
           "f16", 4.0 * n,
           [&] { stridedCopy(shifted, 1, tStrides, out, tShape, 2, 2); });
    report("transpose_last", dims({kRows, kHidden}), "f32", 8.0 * n,
           [&] { stridedCopy(wide, 0, tStrides, wideOut, tShape, 2, 4); });
  }
  // Dropout with its mask, and its backward.
  int64_t m = kRows * kFfn;
  void *x = b.random(MPCRT_F16, m), *y = b.empty(m * 2);
  auto *mask = static_cast<uint8_t *>(b.empty(m));
  auto *step = static_cast<int64_t *>(b.empty(8));
  report("dropout", dims({kRows, kFfn}), "f16", 5.0 * m,
         [&] { dropout(MPCRT_F16, x, MPCRT_F16, y, mask, m, 0.1, 42, step); });
  report("dropout_backward", dims({kRows, kFfn}), "f16", 5.0 * m,
         [&] { dropoutBackward(MPCRT_F16, x, mask, y, m, 0.1); });
  // Embedding backward: BERT's token table from one batch's gradient.
  void *grad = b.random(MPCRT_F16, kRows * kHidden);
  int32_t *ids = b.indices(kRows, kVocab);
  void *table = b.empty(kVocab * kHidden * 2);
  // The forward gather of the same rows: the rows read, written, and the
  // indices read.
  {
    void *words = b.random(MPCRT_F16, kVocab * kHidden, 7),
         *out = b.empty(kRows * kHidden * 2);
    report("embedding",
           dims({kRows, kHidden}) + " of " + dims({kVocab, kHidden}), "f16",
           4.0 * kRows * kHidden + 4.0 * kRows, [&] {
             embedding(MPCRT_F16, words, kVocab, kHidden, ids, 32, kRows, out);
           });
  }
  // At least: the gradient read, the f16 table written (zeros where no
  // index points).
  report("embedding_backward",
         dims({kVocab, kHidden}) + " from " + dims({kRows, kHidden}), "f16",
         2.0 * kRows * kHidden + 2.0 * kVocab * kHidden, [&] {
           embeddingBackward(MPCRT_F16, grad, ids, 32, kRows, kVocab, kHidden,
                             -1, nullptr, table);
         });
  // The same with one token at a tenth of the positions (a frequent word)
  // and at half of them (padding the model does not declare): one row's
  // sum is one block's.
  for (int64_t every : {10, 2}) {
    int32_t *skewed = b.indices(kRows, kVocab, every);
    report("embedding_backward",
           dims({kVocab, kHidden}) + " from " + dims({kRows, kHidden}) +
               ", 1 in " + std::to_string(every) + " one row",
           "f16", 2.0 * kRows * kHidden + 2.0 * kVocab * kHidden, [&] {
             embeddingBackward(MPCRT_F16, grad, skewed, 32, kRows, kVocab,
                               kHidden, -1, nullptr, table);
           });
  }
}

void batchNormCases() {
  int64_t n = kPixels * kWidth;
  Buffers b;
  void *x = b.random(MPCRT_F16, n), *y = b.empty(n * 2),
       *gamma = b.random(MPCRT_F32, kWidth),
       *beta = b.random(MPCRT_F32, kWidth, 3), *runMean = b.empty(kWidth * 4),
       *runVar = b.uniform(MPCRT_F32, kWidth, 0.5, 1.5),
       *g = b.random(MPCRT_F16, n, 5), *dx = b.empty(n * 2),
       *dg = b.empty(kWidth * 4), *db = b.empty(kWidth * 4);
  auto *mean = static_cast<float *>(b.empty(kWidth * 4));
  auto *invstd = static_cast<float *>(b.empty(kWidth * 4));
  const std::string shape = dims({16, 128, 128, kWidth});
  auto forward = [&] {
    batchNorm(MPCRT_F16, x, MPCRT_F32, gamma, beta, runMean, runVar, y, mean,
              invstd, kPixels, kWidth, 0.1, 1e-5);
  };
  auto backward = [&] {
    batchNormBackward(MPCRT_F16, g, x, MPCRT_F32, gamma, mean, invstd, dx, dg,
                      db, kPixels, kWidth);
  };
  // With a fused ReLU whose output is formed again from x and beta.
  auto formed = [&] {
    batchNormBackward(MPCRT_F16, g, x, MPCRT_F32, gamma, mean, invstd, dx, dg,
                      db, kPixels, kWidth, nullptr, beta);
  };
  // The forward and the backward again, their names ending in `suffix`.
  auto both = [&](const std::string &suffix) {
    report("batch_norm" + suffix, shape, "f16", 4.0 * n, forward);
    report("batch_norm_backward" + suffix, shape, "f16", 6.0 * n, backward);
  };
  report("batch_norm", shape, "f16", 4.0 * n, forward);
  // The evaluation step's batch norm with its ReLU (x read, y written).
  report("batch_norm_inference", shape, "f16", 4.0 * n, [&] {
    batchNormInference(MPCRT_F16, x, MPCRT_F32, gamma, beta, runMean, runVar, y,
                       kPixels, kWidth, 1e-5, true);
  });
  report("batch_norm_backward", shape, "f16", 6.0 * n, backward);
  // The two above with their second passes (the normalisation, the input
  // gradient) from the tensor's start, as before they ran from its end
  // (setBatchNormSecondPassReversed), in the same build.
  bool reversed = setBatchNormSecondPassReversed(false);
  both("_forward_order");
  setBatchNormSecondPassReversed(reversed);
  // The two above with the column reductions in two launches (the cut
  // before setReductionsInOneLaunch's default; the one --sweep's partials
  // target changes).
  bool oneLaunch = setReductionsInOneLaunch(false);
  both("_two_launches");
  setReductionsInOneLaunch(oneLaunch);
  // Both passes over one group of channels after another, the bytes a
  // group's second pass reads and writes within the L2
  // (MPC_CUDA_BN_GROUPS=l2: on a 50 MiB L2 the forward and the backwards
  // in 4 groups of 32 channels) and within twice the L2 (2 groups of 64:
  // half the launches, part of the second pass from memory), in the same
  // build; the groups in the shape.
  for (int64_t l2s : {1, 2}) {
    const std::string suffix = l2s == 1 ? "_l2_groups" : "_2l2_groups";
    int64_t before = setBatchNormGroupBytes(l2Bytes * l2s);
    auto groups = [&](const std::function<void()> &run) {
      run();
      return shape + ", " + std::to_string(lastBatchNormGroups()) + " groups";
    };
    if (selected("batch_norm" + suffix))
      report("batch_norm" + suffix, groups(forward), "f16", 4.0 * n, forward);
    if (selected("batch_norm_backward" + suffix))
      report("batch_norm_backward" + suffix, groups(backward), "f16", 6.0 * n,
             backward);
    if (selected("batch_norm_relu_backward_formed" + suffix))
      report("batch_norm_relu_backward_formed" + suffix, groups(formed), "f16",
             6.0 * n, formed);
    setBatchNormGroupBytes(before);
  }
  // With a fused ReLU: its mask from the output read (at least dy, x and
  // the output read, dx written), or formed again from x and beta (the
  // default of mpc-compile: the bytes of the plain backward).
  report("batch_norm_relu_backward_read", dims({16, 128, 128, kWidth}), "f16",
         8.0 * n, [&] {
           batchNormBackward(MPCRT_F16, g, x, MPCRT_F32, gamma, mean, invstd,
                             dx, dg, db, kPixels, kWidth, y);
         });
  report("batch_norm_relu_backward_formed", dims({16, 128, 128, kWidth}), "f16",
         6.0 * n, formed);
  // Our forward with its ReLU (the UNet's: the same bytes as without).
  report("batch_norm_relu", shape, "f16", 4.0 * n, [&] {
    batchNorm(MPCRT_F16, x, MPCRT_F32, gamma, beta, runMean, runVar, y, mean,
              invstd, kPixels, kWidth, 0.1, 1e-5, /*relu=*/true);
  });
  // cuDNN's batch norm on the same tensors, the peer of the lines above
  // (PyTorch's channels-last training calls: NHWC, the persistent spatial
  // mode; Kernels.h): plain, and with cuDNN's fused ReLU, whose backward
  // reads the mask its forward left in the reserve space where ours forms
  // it again. The bytes counted as ours are. A case cuDNN refuses gives a
  // note on stderr and no line.
  for (bool relu : {false, true}) {
    const CudnnBatchNormShape s{16, kPixels / (16 * 128), 128, kWidth, relu};
    const std::string name = relu ? "batch_norm_relu" : "batch_norm";
    if (!selected(name + "_cudnn") && !selected(name + "_backward_cudnn"))
      continue;
    size_t reserveBytes = cudnnBatchNormReserveBytes(MPCRT_F16, s);
    void *reserve = reserveBytes ? b.empty(int64_t(reserveBytes)) : nullptr;
    void *peerMean = b.empty(kWidth * 4), *peerInvstd = b.empty(kWidth * 4);
    auto peerForward = [&] {
      return cudnnBatchNorm(MPCRT_F16, s, x, gamma, beta, runMean, runVar, y,
                            peerMean, peerInvstd, 0.1, 1e-5, reserve,
                            reserveBytes);
    };
    auto peerBackward = [&] {
      return cudnnBatchNormBackward(MPCRT_F16, s, g, x, y, gamma, beta,
                                    peerMean, peerInvstd, dx, dg, db, 1e-5,
                                    reserve, reserveBytes);
    };
    // Once untimed: the backward's statistics, output and reserve space.
    if (!peerForward() || !peerBackward()) {
      std::fprintf(stderr,
                   "mpc-bench-kernels: cuDNN answers NOT_SUPPORTED for its "
                   "batch norm%s at %s: no %s_cudnn lines\n",
                   relu ? " with ReLU" : "", shape.c_str(), name.c_str());
      continue;
    }
    report(name + "_cudnn", shape, "f16", 4.0 * n, [&] { peerForward(); });
    report(name + "_backward_cudnn", shape, "f16", 6.0 * n,
           [&] { peerBackward(); });
  }
  // The UNet's next level down, [16, 64, 64, 2W]: half the bytes (32 MiB
  // of f16, under the 50 MiB L2 of an H100 or H200), where the second
  // passes should find all of the tensor in L2. Against the full
  // resolution's lines, how much of the gap to the copy is bytes read
  // twice from memory.
  {
    const int64_t half = n / 2, c2 = 2 * kWidth, rows2 = half / c2;
    const std::string shape2 = dims({16, 64, 64, c2});
    void *gamma2 = b.random(MPCRT_F32, c2), *beta2 = b.random(MPCRT_F32, c2, 3),
         *runMean2 = b.empty(c2 * 4),
         *runVar2 = b.uniform(MPCRT_F32, c2, 0.5, 1.5), *dg2 = b.empty(c2 * 4),
         *db2 = b.empty(c2 * 4);
    auto *mean2 = static_cast<float *>(b.empty(c2 * 4));
    auto *invstd2 = static_cast<float *>(b.empty(c2 * 4));
    report("batch_norm", shape2, "f16", 4.0 * half, [&] {
      batchNorm(MPCRT_F16, x, MPCRT_F32, gamma2, beta2, runMean2, runVar2, y,
                mean2, invstd2, rows2, c2, 0.1, 1e-5);
    });
    report("batch_norm_backward", shape2, "f16", 6.0 * half, [&] {
      batchNormBackward(MPCRT_F16, g, x, MPCRT_F32, gamma2, mean2, invstd2, dx,
                        dg2, db2, rows2, c2);
    });
  }
  // The skip connection's concatenation: half of the channels of a
  // [16, 128, 128, 2W] tensor written from a [16, 128, 128, W] one (x read,
  // half of y written: 128-byte runs, moved 16 bytes at a time).
  {
    void *wide = b.empty(2 * n * 2);
    int64_t shape[] = {kPixels, kWidth}, strides[] = {2 * kWidth, 1};
    report("concat_scatter", dims({16, 128, 128, kWidth}) + " into 2x", "f16",
           4.0 * n,
           [&] { stridedScatter(x, wide, kWidth, strides, shape, 2, 2); });
  }
  // 2 x 2 max pooling of the full-resolution activation and its backward
  // (at least: x read, y written; dy and x read, dx written), and the
  // nearest 2 x 2 upsampling back to it (y written, x read once).
  mpcrt_pool2d_shape pool{16, 128, 128, kWidth, 64, 64, 2, 2, 2, 2, 0, 0, 0};
  report("max_pool2d", dims({16, 128, 128, kWidth}), "f16", 2.5 * n,
         [&] { maxPool2d(MPCRT_F16, x, y, pool); });
  report("max_pool2d_backward", dims({16, 128, 128, kWidth}), "f16", 4.5 * n,
         [&] { maxPool2dBackward(MPCRT_F16, g, x, dx, pool); });
  // With the skip connection's other gradient added as it writes
  // (pool-grad-sums): a channel half of a [16, 128, 128, 2W] gradient,
  // read where it lies (2 bytes more an element than the plain backward).
  {
    void *wide = b.empty(2 * n * 2);
    report("max_pool2d_backward_add", dims({16, 128, 128, kWidth}) + " + half",
           "f16", 6.5 * n, [&] {
             maxPool2dBackward(MPCRT_F16, g, x, dx, pool,
                               static_cast<char *>(wide) + 2 * kWidth,
                               2 * kWidth);
           });
  }
  report("upsample_nearest2d", dims({16, 64, 64, kWidth}) + " x2", "f16",
         2.5 * n,
         [&] { upsampleNearest2d(MPCRT_F16, x, y, 16, 64, 64, kWidth, 2, 2); });
  report("upsample_nearest2d_backward", dims({16, 64, 64, kWidth}) + " x2",
         "f16", 2.5 * n, [&] {
           upsampleNearest2dBackward(MPCRT_F16, g, dx, 16, 64, 64, kWidth, 2,
                                     2);
         });
}

/// Every BERT-base parameter (12 layers, its embeddings and classifier) in
/// one multi-tensor Adam update at O2: f32 masters and moments, f16
/// gradients for the matrices and f32 for the vectors, f16 copies. The
/// same updates one launch per tensor (`adam_per_tensor_bert`, what the
/// step ran before its updates were grouped) are a reference for the
/// multi-tensor line, not a path of the step, and have no target.
void optimizerCases() {
  std::vector<int64_t> matrices = {kVocab * kHidden, kSeq * kHidden,
                                   2 * kHidden, kHidden * 2};
  std::vector<int64_t> vectors = {kHidden, kHidden, 2};
  for (int layer = 0; layer < 12; ++layer) {
    for (int q = 0; q < 4; ++q) {
      matrices.push_back(kHidden * kHidden);
      vectors.push_back(kHidden);
    }
    matrices.push_back(kHidden * kFfn);
    vectors.push_back(kFfn);
    matrices.push_back(kFfn * kHidden);
    for (int v = 0; v < 5; ++v) // the second bias, two norms' gamma, beta
      vectors.push_back(kHidden);
  }
  Buffers b;
  std::vector<mpcrt_dtype> pd, gd, cd;
  std::vector<void *> params, ms, vs, copies;
  std::vector<const void *> grads;
  std::vector<int64_t> sizes;
  double bytes = 0, elements = 0;
  auto add = [&](int64_t n, mpcrt_dtype g) {
    pd.push_back(MPCRT_F32);
    gd.push_back(g);
    cd.push_back(MPCRT_F16);
    params.push_back(b.random(MPCRT_F32, n));
    grads.push_back(b.random(g, n, 5));
    ms.push_back(b.random(MPCRT_F32, n, 7));
    vs.push_back(b.uniform(MPCRT_F32, n, 0.1, 1));
    copies.push_back(b.empty(n * 2));
    sizes.push_back(n);
    // Read: param, gradient, two moments; written: them and the copy.
    bytes += n * (4.0 + bytesOf(g) + 8 + 12 + 2);
    elements += n;
  };
  for (int64_t n : matrices)
    add(n, MPCRT_F16);
  for (int64_t n : vectors)
    add(n, MPCRT_F32);
  const float *lr =
      static_cast<const float *>(b.uniform(MPCRT_F32, 1, 1e-4, 1e-4));
  auto *step = static_cast<int32_t *>(b.empty(4));
  int32_t one = 1;
  copyToDevice(step, &one, 4);
  auto *found = static_cast<uint8_t *>(b.empty(1));
  const float *inv = static_cast<const float *>(
      b.uniform(MPCRT_F32, 1, 1.0 / 1024, 1.0 / 1024));
  std::string shape = std::to_string(params.size()) + " tensors, " +
                      std::to_string(int64_t(elements)) + " elements";
  report(
      "adam_multi_bert", shape, "f32/f16", bytes,
      [&] {
        adamUpdateMulti(int64_t(params.size()), pd.data(), gd.data(),
                        params.data(), grads.data(), ms.data(), vs.data(),
                        cd.data(), copies.data(), sizes.data(), lr, step, found,
                        inv, 0.9, 0.999, 1e-8, 0.01, true, true);
      },
      1 / 1.3);
  report(
      "adam_per_tensor_bert", shape, "f32/f16", bytes,
      [&] {
        for (size_t t = 0; t < params.size(); ++t)
          adamUpdate(pd[t], gd[t], params[t], grads[t], ms[t], vs[t], lr, step,
                     found, inv, cd[t], copies[t], sizes[t], 0.9, 0.999, 1e-8,
                     0.01, true, true);
      },
      /*target=*/0);
}

/// The gaps between a step graph's kernels: 100 dependent elementwise
/// kernels over BERT's 4096 x 768 f16 rows (each negating what the one
/// before wrote), recorded as a graph and replayed, with the graph's
/// dependencies as captured (`graph_chain`) and made programmatic
/// (`graph_chain_pdl`, MPC_CUDA_PDL=on's graph): the difference over 100
/// is what Programmatic Dependent Launch saves at a boundary between two
/// of the backend's kernels. The bytes are the 100 kernels'.
void graphChainCases() {
  constexpr int kChain = 100;
  const int64_t n = kRows * kHidden;
  Buffers b;
  void *x[2] = {b.random(MPCRT_F16, n), b.empty(n * 2)};
  for (bool programmatic : {false, true}) {
    const std::string kernel = programmatic ? "graph_chain_pdl" : "graph_chain";
    if (!selected(kernel))
      continue;
    bool before = setProgrammaticEdges(programmatic);
    graphBegin();
    for (int i = 0; i < kChain; ++i)
      unary(MPCRT_F16, MPCRT_NEG, x[i % 2], x[(i + 1) % 2], n);
    bool recorded = graphEnd(0);
    setProgrammaticEdges(before);
    if (!recorded) {
      std::fprintf(stderr,
                   "mpc-bench-kernels: the chain's capture failed: no %s "
                   "line\n",
                   kernel.c_str());
      continue;
    }
    report(kernel, "100 x unary 4096x768", "f16", kChain * 4.0 * n,
           [&] { graphLaunch(0); });
  }
}

/// The UNet's two skip concatenations convolved (3 x 3, padding 1, f16):
/// the parts, `[16, 64, 64, 256]` twice to 256 channels and
/// `[16, 128, 128, 128]` twice to 128, written into their concatenation
/// (two strided scatters) and convolved whole, against their convolutions
/// with the filter's channel slices (two strided copies), the second
/// adding to the first (`concat-convs`, docs/Fusion.md); the filter
/// gradients likewise, whole from the concatenation (the scatters again,
/// for the copy the backward pass makes) against the parts' two
/// gradients and their concatenation. Compute-bound: TFLOP/s of the
/// convolution's products (2 n h w o 9 c each way) and the time.
void convolutionCases() {
  struct Case {
    int64_t hw, c, o;
  };
  for (const Case &at : {Case{64, 256, 256}, Case{128, 128, 128}}) {
    const int64_t n = 16, hw = at.hw, c = at.c, o = at.o;
    mpcrt_conv2d_shape whole{n,  hw, hw, 2 * c, o, 3, 3, hw,
                             hw, 1,  1,  1,     1, 1, 1, 1};
    mpcrt_conv2d_shape part = whole;
    part.c = c;
    int64_t pixels = n * hw * hw, taps = o * 9;
    Buffers b;
    void *x0 = b.random(MPCRT_F16, pixels * c, 1),
         *x1 = b.random(MPCRT_F16, pixels * c, 2),
         *w = b.random(MPCRT_F16, taps * 2 * c, 3),
         *dy = b.random(MPCRT_F16, pixels * o, 4),
         *joined = b.empty(pixels * 2 * c * 2), *y = b.empty(pixels * o * 2),
         *w0 = b.empty(taps * c * 2), *w1 = b.empty(taps * c * 2),
         *dw = b.empty(taps * 2 * c * 2), *dw0 = b.empty(taps * c * 2),
         *dw1 = b.empty(taps * c * 2);
    // A part into its channels of the concatenation, and back.
    int64_t rows[] = {pixels, c}, wide[] = {2 * c, 1};
    int64_t filterRows[] = {taps, c};
    auto concatenate = [&](void *a, void *bb, void *into, int64_t *shape) {
      stridedScatter(a, into, 0, wide, shape, 2, 2);
      stridedScatter(bb, into, c, wide, shape, 2, 2);
    };
    double flop = 2.0 * pixels * o * 9 * 2 * c;
    std::string shape = dims({n, hw, hw, c}) + " x2 to " + std::to_string(o);
    auto line = [&](const char *kernel, const std::function<void()> &run) {
      reportRate(kernel, shape, flop, run);
    };
    line("conv_concat_whole", [&] {
      concatenate(x0, x1, joined, rows);
      conv2d(MPCRT_F16, joined, w, nullptr, y, whole);
    });
    line("conv_concat_parts", [&] {
      stridedCopy(w, 0, wide, w0, filterRows, 2, 2);
      stridedCopy(w, c, wide, w1, filterRows, 2, 2);
      conv2d(MPCRT_F16, x0, w0, nullptr, y, part);
      conv2d(MPCRT_F16, x1, w1, y, y, part);
    });
    line("conv_filter_concat_whole", [&] {
      concatenate(x0, x1, joined, rows);
      conv2dBackwardFilter(MPCRT_F16, dy, joined, dw, whole);
    });
    line("conv_filter_concat_parts", [&] {
      conv2dBackwardFilter(MPCRT_F16, dy, x0, dw0, part);
      conv2dBackwardFilter(MPCRT_F16, dy, x1, dw1, part);
      concatenate(dw0, dw1, dw, filterRows);
    });
  }
}

/// An unfused attention's products at BERT's shape (8 x 12 heads, sequence
/// 512, head size 64, f16) with the heads where the projections put them
/// ([8, 512, 12, 64], rows 768 apart): the scores q k^T and the context p
/// v written back to [8, 512, 12, 64], each as --no-head-products runs it
/// (the heads' transposes copied, then one strided-batch GEMM; for the
/// context the copy after it), and as mpc.heads_matmul does: one
/// pointer-array cuBLASLt call, and the loop of strided batches (one call
/// per batch index, 8). Compute-bound lines (TFLOP/s of the product), to
/// compare with each other. Then the same out of a packed QKV projection
/// ([8, 512, 2304], rows 3 * 768 apart): the scores from the queries' and
/// keys' thirds (their views copied into heads, then the GEMM; or read in
/// place), and a third's gradient p^T dy written into its window of the
/// packed gradient (the GEMM, then its scatter there; or written in place).
void headProductCases() {
  int64_t n = kRows * kHidden, scores = 8 * kHeads * kSeq * kSeq;
  Buffers b;
  void *q = b.random(MPCRT_F16, n), *k = b.random(MPCRT_F16, n, 2),
       *p = b.random(MPCRT_F16, scores, 3), *s = b.empty(scores * 2),
       *qt = b.empty(n * 2), *kt = b.empty(n * 2), *o = b.empty(n * 2),
       *ot = b.empty(n * 2);
  int64_t heads[] = {8, kHeads, kSeq, kHead};
  int64_t fromRows[] = {kSeq * kHidden, kHead, kHidden, 1};
  int64_t back[] = {8, kSeq, kHeads, kHead};
  int64_t fromHeads[] = {kHeads * kSeq * kHead, kHead, kSeq * kHead, 1};
  double flop = 2.0 * 8 * kHeads * kSeq * kSeq * kHead;
  std::string shape = dims({8, kSeq, kHeads, kHead});
  const int64_t rows[] = {kSeq * kHidden, kHead, kHidden},
                ordered[] = {kHeads * kSeq * kSeq, kSeq * kSeq, kSeq};
  reportRate("heads_scores_copies", shape, flop, [&] {
    stridedCopy(q, 0, fromRows, qt, heads, 4, 2);
    stridedCopy(k, 0, fromRows, kt, heads, 4, 2);
    matmul(MPCRT_F16, qt, kSeq * kHead, kt, kSeq * kHead, s, 8 * kHeads, kSeq,
           kSeq, kHead, false, true);
  });
  reportRate("heads_context_copies", shape, flop, [&] {
    matmul(MPCRT_F16, p, kSeq * kSeq, kt, kSeq * kHead, o, 8 * kHeads, kSeq,
           kHead, kSeq, false, false);
    stridedCopy(o, 0, fromHeads, ot, back, 4, 2);
  });
  for (bool loop : {false, true}) {
    bool before = setHeadProductsLoop(loop);
    std::string way = loop ? "_loop" : "_pointers";
    reportRate("heads_scores" + way, shape, flop, [&] {
      stridedMatmul(MPCRT_F16, q, rows, k, rows, s, ordered, 8, kHeads, kSeq,
                    kSeq, kHead, false, true);
    });
    reportRate("heads_context" + way, shape, flop, [&] {
      stridedMatmul(MPCRT_F16, p, ordered, k, rows, ot, rows, 8, kHeads, kSeq,
                    kHead, kSeq, false, false);
    });
    setHeadProductsLoop(before);
  }
  void *qkv = b.random(MPCRT_F16, 3 * n, 4), *whole = b.empty(3 * n * 2);
  const void *keys = static_cast<const char *>(qkv) + kHidden * 2;
  void *window = static_cast<char *>(whole) + kHidden * 2;
  int64_t fromPacked[] = {kSeq * 3 * kHidden, kHead, 3 * kHidden, 1};
  const int64_t packed[] = {kSeq * 3 * kHidden, kHead, 3 * kHidden},
                headsOrdered[] = {kHeads * kSeq * kHead, kSeq * kHead, kHead};
  reportRate("heads_scores_packed_copies", shape, flop, [&] {
    stridedCopy(qkv, 0, fromPacked, qt, heads, 4, 2);
    stridedCopy(qkv, kHidden, fromPacked, kt, heads, 4, 2);
    matmul(MPCRT_F16, qt, kSeq * kHead, kt, kSeq * kHead, s, 8 * kHeads, kSeq,
           kSeq, kHead, false, true);
  });
  reportRate("heads_scores_packed_pointers", shape, flop, [&] {
    stridedMatmul(MPCRT_F16, qkv, packed, keys, packed, s, ordered, 8, kHeads,
                  kSeq, kSeq, kHead, false, true);
  });
  reportRate("heads_grad_window_copies", shape, flop, [&] {
    matmul(MPCRT_F16, p, kSeq * kSeq, kt, kSeq * kHead, o, 8 * kHeads, kSeq,
           kHead, kSeq, true, false);
    stridedScatter(o, whole, kHidden, fromPacked, heads, 4, 2);
  });
  reportRate("heads_grad_window_pointers", shape, flop, [&] {
    stridedMatmul(MPCRT_F16, p, ordered, kt, headsOrdered, window, packed, 8,
                  kHeads, kSeq, kHead, kSeq, true, false);
  });
}

/// mpc.attention at BERT's shape (8 x 12 heads, sequence 512, head size
/// 64, f16, dropout 0.1, no mask), forward and backward, in the flash
/// kernels and in the chunked path (cuBLASLt products, a chunk's scores in
/// scratch). Compute-bound, so each line gives the TFLOP/s of the products
/// the definition does (4 sq sk d per head forward, 10 backward: q k^T
/// again, dO v^T, dv, dq, dk), not a share of the copy. The flash kernels
/// again with the heads sharing rows ([8, 512, 12, 64], layout "bshd":
/// what BERT's projections write, no head transposes).
void attentionCases() {
  int64_t heads = 8 * kHeads, n = heads * kSeq * kHead;
  Buffers b;
  void *q = b.random(MPCRT_F16, n, 1), *k = b.random(MPCRT_F16, n, 2),
       *v = b.random(MPCRT_F16, n, 3), *g = b.random(MPCRT_F16, n, 4),
       *o = b.empty(n * 2), *lse = b.empty(heads * kSeq * 4),
       *dq = b.empty(n * 2), *dk = b.empty(n * 2), *dv = b.empty(n * 2);
  auto *step = static_cast<int64_t *>(b.empty(8));
  mpcrt::formulas::AttentionMask none;
  double products = double(heads) * kSeq * kSeq * kHead;
  struct Variant {
    bool flash;
    int64_t rowHeads;
    const char *forward, *backward;
  };
  for (const Variant &variant :
       {Variant{true, 1, "attention_flash", "attention_flash_backward"},
        Variant{true, kHeads, "attention_flash_bshd",
                "attention_flash_bshd_backward"},
        Variant{false, 1, "attention_chunked", "attention_chunked_backward"}}) {
    bool previous = setAttentionFlash(variant.flash);
    int64_t rowHeads = variant.rowHeads;
    auto line = [&](const char *kernel, double flop,
                    const std::function<void()> &run) {
      reportRate(kernel, dims({heads, kSeq, kHead}), flop, run);
    };
    line(variant.forward, 4 * products, [&] {
      attention(MPCRT_F16, q, k, v, o, lse, heads, kSeq, kSeq, kHead, kHead,
                rowHeads, 0.125, 0.1, 42, step, none);
    });
    line(variant.backward, 10 * products, [&] {
      attentionBackward(MPCRT_F16, g, q, k, v, o, lse, dq, dk, dv, heads, kSeq,
                        kSeq, kHead, kHead, rowHeads, 0.125, 0.1, 42, step,
                        none);
    });
    setAttentionFlash(previous);
  }
}

/// --sweep: the batch norms and column sums at each cut of the column
/// reductions, then the batch norms at each count of accesses per thread
/// and over groups of channels within each multiple of the L2, the setting
/// named in the lines' shapes; the defaults among them.
void sweepCases() {
  for (int64_t partials : {32768, 65536, 131072, 262144, 524288}) {
    int64_t before = setColumnPartialsTarget(partials);
    setting = "partials=" + std::to_string(partials);
    batchNormCases();
    columnSumCases();
    setColumnPartialsTarget(before);
  }
  for (int64_t vectors : {1, 2, 4, 8, 16}) {
    int64_t before = setChannelVectorsPerThread(vectors);
    setting = "vectors/thread=" + std::to_string(vectors);
    batchNormCases();
    setChannelVectorsPerThread(before);
  }
  // The batch norms over groups of channels within half, one, one and a
  // half and two times the L2 (the lines other than the _groups ones:
  // those set their own).
  for (int64_t halves : {1, 2, 3, 4}) {
    int64_t bytes = l2Bytes * halves / 2;
    int64_t before = setBatchNormGroupBytes(bytes);
    setting = "group_bytes=" + std::to_string(bytes);
    batchNormCases();
    setBatchNormGroupBytes(before);
  }
  setting.clear();
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (arg == "--sweep") {
      sweep = true;
    } else if (arg == "--profile") {
      profile = true;
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--index" && i + 1 < argc) {
      onlyIndex = std::max(0, std::atoi(argv[++i]));
    } else {
      std::fprintf(arg == "--help" ? stdout : stderr,
                   "usage: mpc-bench-kernels [--reps N] [--filter TEXT] "
                   "[--sweep]\n"
                   "       mpc-bench-kernels --profile --only NAME "
                   "[--index K]\n"
                   "Times the CUDA backend's memory-bound kernels at the "
                   "benchmark models' shapes against a device-to-device "
                   "copy; one JSON line per kernel. With --sweep, the "
                   "batch norms and column sums at other launch settings. "
                   "With --profile, runs "
                   "the lines named NAME (the K-th of them) once between "
                   "cudaProfilerStart and cudaProfilerStop, for a "
                   "profiler, untimed.\n");
      return arg == "--help" ? 0 : 1;
    }
  }
  if (profile != !only.empty() || (onlyIndex >= 0 && !profile) ||
      (sweep && profile)) {
    std::fprintf(stderr, "error: mpc-bench-kernels: --profile goes with "
                         "--only NAME (and --index K with both), not with "
                         "--sweep\n");
    return 1;
  }
  std::string why;
  if (!deviceAvailable(&why)) {
    std::fprintf(stderr, "error: mpc-bench-kernels: %s\n", why.c_str());
    return 1;
  }
  int device = 0, l2 = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device),
        "cudaDeviceGetAttribute");
  l2Bytes = l2;
  flushBytes = std::max<int64_t>(2 * int64_t(l2), int64_t(64) << 20);
  flushBuffer = allocate(flushBytes);
  if (!profile)
    measureCopy();
  if (sweep) {
    sweepCases();
    return 0;
  }
  elementwise();
  columnSumCases();
  accumulationCases();
  rowCases();
  movementCases();
  batchNormCases();
  optimizerCases();
  graphChainCases();
  attentionCases();
  headProductCases();
  convolutionCases();
  if (profile && matched == 0) {
    std::fprintf(stderr, "error: mpc-bench-kernels: no line is named '%s'\n",
                 only.c_str());
    return 1;
  }
  return 0;
}
