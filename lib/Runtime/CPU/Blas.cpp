//===- Blas.cpp - matrix products through OpenBLAS, the thread count ------===//

#include "Blas.h"
#include "Parallel.h"
#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sys/mman.h>
#include <sys/resource.h>
#include <thread>

using namespace mpcrt;

namespace {

bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

/// The loops BLAS would run, for sizes its integers cannot hold.
template <typename T>
void loopGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
              int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t l = 0; l < k; ++l)
        sum += (transA ? a[l * lda + i] : a[i * lda + l]) *
               (transB ? b[j * ldb + l] : b[l * ldb + j]);
      c[i * ldc + j] = beta == 0 ? sum : sum + beta * c[i * ldc + j];
    }
}

/// OpenBLAS's work buffer (BUFFER_SIZE of Debian's x86-64 build): each
/// thread that calls it maps one on its first call and keeps it.
constexpr size_t kBlasBuffer = size_t(128) << 20;

/// OpenBLAS retries a failing mapping of its work buffer forever: under an
/// address-space limit (ulimit -v) too tight for it, the first product
/// would hang. Before that product, the limit must leave room for one
/// buffer per pool thread; otherwise the run stops, saying so.
void checkAddressSpace() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
      return;
    size_t need = static_cast<size_t>(threadCount()) * kBlasBuffer;
    void *room = mmap(nullptr, need, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (room != MAP_FAILED) {
      munmap(room, need);
      return;
    }
    mpcrt::errors::reportError(
        "the address-space limit (ulimit -v: %llu MiB) "
        "leaves no room for OpenBLAS's work buffers (128 MiB for "
        "each of %d threads); raise the limit or run fewer threads "
        "(--threads)\n",
        static_cast<unsigned long long>(limit.rlim_cur >> 20), threadCount());
    // Not exit(): its handlers may map memory too (and spin as OpenBLAS
    // would).
    std::fflush(nullptr);
    std::_Exit(1);
  });
}

template <typename T, typename Blas>
void gemmWith(Blas blas, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
              T beta, T *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) { // An empty sum: BLAS would refuse the leading dimensions.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0 ? T(0) : c[i * ldc + j];
    return;
  }
  if (!fitsInt(m) || !fitsInt(n) || !fitsInt(k) || !fitsInt(lda) ||
      !fitsInt(ldb) || !fitsInt(ldc))
    return loopGemm(transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc);
  threadCount(); // OpenBLAS runs single-threaded from the first call on.
  checkAddressSpace();
  auto call = [&](int64_t m, int64_t n, const T *a, const T *b, T *c) {
    blas(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
         transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
         static_cast<int>(n), static_cast<int>(k), T(1), a,
         static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
         static_cast<int>(ldc));
  };
  // The product in blocks of rows (or columns, whichever C has more of) on
  // the pool. The blocks depend on the sizes only, so the same BLAS calls
  // run whatever the thread count; each element's sum is one call's.
  bool byRows = m >= n;
  int64_t extent = byRows ? m : n;
  int64_t block = std::max<int64_t>(128, (extent + 7) / 8 + 15) / 16 * 16;
  if (m * n * k < (int64_t(1) << 20) || extent <= block)
    return call(m, n, a, b, c);
  parallelFor(extent, block, [&](int64_t begin, int64_t end) {
    if (byRows)
      call(end - begin, n, transA ? a + begin : a + begin * lda, b,
           c + begin * ldc);
    else
      call(m, end - begin, a, transB ? b + begin * ldb : b + begin, c + begin);
  });
}

/// 0 until the first use or mpcrt_set_threads.
int threads = 0;

/// OMP_NUM_THREADS (the convention OpenBLAS and PyTorch follow), else
/// every core this process may use.
int defaultThreads() {
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && v >= 1 && v <= 1024)
      return static_cast<int>(v);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

namespace mpcrt {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  gemmWith(cblas_sgemm, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const double *a, int64_t lda, const double *b, int64_t ldb,
          double beta, double *c, int64_t ldc) {
  gemmWith(cblas_dgemm, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

int threadCount() {
  if (threads == 0)
    setThreadCount(defaultThreads());
  return threads;
}

void setThreadCount(int count) {
  threads = std::clamp(count, 1, 1024);
  // The pool splits products among threads (gemmWith); OpenBLAS's own
  // threads would spin between calls and take the cores from the pool's.
  openblas_set_num_threads(1);
}

} // namespace mpcrt

extern "C" {

void mpcrt_set_threads(int32_t count) {
  setThreadCount(count > 0 ? count : defaultThreads());
}

int32_t mpcrt_threads(void) { return threadCount(); }

} // extern "C"
