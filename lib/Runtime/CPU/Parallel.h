//===- Parallel.h - the CPU kernels' threads --------------------*- C++ -*-===//
//
// One pool of threadCount() - 1 workers (Blas.h) plus the calling thread.
// Work is cut into blocks whose boundaries depend only on the problem's
// sizes, never on the number of threads, and each block writes its own
// outputs (or a partial result that is combined in block order): what a
// kernel computes does not depend on the thread count, so runs, resumes
// and skipped steps stay bit-reproducible with any --threads.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_CPU_PARALLEL_H
#define MPC_RUNTIME_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mpcrt {

/// Runs body(context, begin, end) for the blocks [b * grain, min(n, (b + 1)
/// * grain)) of [0, n), on the pool; returns when all are done.
void parallelBlocks(int64_t n, int64_t grain,
                    void (*body)(void *, int64_t, int64_t), void *context);

/// parallelBlocks with a callable. `grain` is the block size: pick it so
/// a block is worth a thread's wake-up (tens of microseconds of work).
template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain) {
    fn(int64_t(0), n);
    return;
  }
  parallelBlocks(
      n, grain,
      [](void *context, int64_t begin, int64_t end) {
        (*static_cast<Fn *>(context))(begin, end);
      },
      &fn);
}

/// Elements per block for a loop costing about `work` elementary
/// operations per index: about 64K operations per block.
inline int64_t grainFor(int64_t work) {
  return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(work, 1));
}

/// The sum of v[0, n) in a fixed order: runs of up to 64 in order, their
/// sums halved pairwise, so that the rounding error grows with log2(n)
/// units of roundoff, not n (a mean of 262,144 per-pixel cross-entropies
/// summed in order was 1e-5 off in f32, and 0.4% off where every term was
/// alike).
template <typename A> A pairwiseSum(const A *v, int64_t n) {
  if (n <= 64) {
    A sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += v[i];
    return sum;
  }
  int64_t half = n / 2;
  return pairwiseSum(v, half) + pairwiseSum(v + half, n - half);
}

/// start + the sum of term(i) over [0, n): partial sums over blocks of
/// `block` indices (each in index order, the blocks in parallel), added to
/// start in block order, so the same whatever the thread count.
template <typename A, typename Term>
A blockedSum(A start, int64_t n, int64_t block, Term term) {
  int64_t blocks = n > 0 ? (n + block - 1) / block : 0;
  std::vector<A> partial(static_cast<size_t>(blocks), A(0));
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
        partial[b] += term(i);
  });
  for (A p : partial)
    start += p;
  return start;
}

} // namespace mpcrt

#endif // MPC_RUNTIME_CPU_PARALLEL_H
