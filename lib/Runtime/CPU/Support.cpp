//===- Support.cpp - memory, initialisers and checks for compiled steps ---===//
//
// The entry points a compiled step needs besides the op kernels: copies and
// fills of buffers, the deterministic expansion of global initialisers, the
// step counter that seeds dropout, and run-time checks that stop the program
// with a message instead of computing garbage.
//
//===----------------------------------------------------------------------===//

#include "Errors.h"
#include "Formulas.h"
#include "Storage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <malloc.h>
#include <sys/resource.h>

using namespace mpcrt;

/// Bytes of the buffers mpcrt_buffer_alloc handed out and not yet freed.
static int64_t heldBytes = 0;

/// MPCRT_MEMORY_LIMIT (bytes): the most the buffers may hold, to see how a
/// step fits a device of that size (-1: no limit).
static int64_t memoryLimit() {
  static const int64_t limit = [] {
    const char *text = std::getenv("MPCRT_MEMORY_LIMIT");
    char *end = nullptr;
    long long value = text ? std::strtoll(text, &end, 10) : -1;
    if (text && (end == text || *end != '\0' || value < 0)) {
      mpcrt::errors::reportError(
          "MPCRT_MEMORY_LIMIT must be a number of bytes, not "
          "'%s'\n",
          text);
      std::exit(1);
    }
    return static_cast<int64_t>(value);
  }();
  return limit;
}

/// The bytes of the first line of the /proc file `path` that `format`
/// (one %lld of kB) reads, or -1.
static int64_t kibibytes(const char *path, const char *format) {
  int64_t bytes = -1;
  if (std::FILE *file = std::fopen(path, "r")) {
    char line[256];
    long long kib;
    while (bytes < 0 && std::fgets(line, sizeof(line), file))
      if (std::sscanf(line, format, &kib) == 1)
        bytes = static_cast<int64_t>(kib) * 1024;
    std::fclose(file);
  }
  return bytes;
}

extern "C" {

void *mpcrt_buffer_alloc(int64_t bytes) {
  size_t size =
      static_cast<size_t>(std::max<int64_t>(256, (bytes + 255) / 256 * 256));
  if (memoryLimit() >= 0 &&
      heldBytes + static_cast<int64_t>(size) > memoryLimit()) {
    mpcrt::errors::reportError(
        "cannot allocate %lld bytes: the buffers would hold "
        "%lld, more than MPCRT_MEMORY_LIMIT (%lld)\n",
        static_cast<long long>(bytes),
        static_cast<long long>(heldBytes + int64_t(size)),
        static_cast<long long>(memoryLimit()));
    std::exit(1);
  }
  void *buffer = std::aligned_alloc(256, size);
  if (!buffer) {
    mpcrt::errors::reportError("cannot allocate %lld bytes\n",
                               static_cast<long long>(bytes));
    std::exit(1);
  }
  std::memset(buffer, 0, size);
  heldBytes += static_cast<int64_t>(malloc_usable_size(buffer));
  return buffer;
}

void mpcrt_buffer_free(void *buffer) {
  if (buffer)
    heldBytes -= static_cast<int64_t>(malloc_usable_size(buffer));
  std::free(buffer);
}

int64_t mpcrt_memory_bytes(void) { return heldBytes; }

void mpcrt_upload(void *buffer, const void *host, int64_t bytes) {
  if (bytes > 0 && buffer != host)
    std::memcpy(buffer, host, static_cast<size_t>(bytes));
}

void mpcrt_upload_input(void *buffer, const void *host, int64_t bytes) {
  mpcrt_upload(buffer, host, bytes); // every step has finished by now
}

void mpcrt_inputs_ready(void) {}

void mpcrt_gather_rows(const void *src, mpcrt_dtype from, void *dst,
                       mpcrt_dtype to, int64_t row_elements,
                       const int64_t *rows, int64_t count, int32_t raw_bytes) {
  auto elementBytes = [](mpcrt_dtype d) -> int64_t {
    return d == MPCRT_F64 ? 8 : d == MPCRT_F32 ? 4 : 2;
  };
  int64_t fromRow =
      row_elements * (raw_bytes > 0 ? raw_bytes : elementBytes(from));
  int64_t toRow = row_elements * (raw_bytes > 0 ? raw_bytes : elementBytes(to));
  for (int64_t r = 0; r < count; ++r) {
    const char *in = static_cast<const char *>(src) + rows[r] * fromRow;
    char *out = static_cast<char *>(dst) + r * toRow;
    if (raw_bytes > 0 || from == to)
      std::memcpy(out, in, static_cast<size_t>(toRow));
    else
      mpcrt_cast(from, in, to, out, row_elements);
  }
}

int64_t mpcrt_free_bytes(void) {
  int64_t available = kibibytes("/proc/meminfo", "MemAvailable: %lld kB");
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    // What the address-space limit leaves beside what is mapped now.
    int64_t mapped =
        std::max<int64_t>(0, kibibytes("/proc/self/status", "VmSize: %lld kB"));
    int64_t left =
        std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - mapped);
    available = available < 0 ? left : std::min(available, left);
  }
  if (memoryLimit() >= 0) {
    int64_t left = std::max<int64_t>(0, memoryLimit() - heldBytes);
    available = available < 0 ? left : std::min(available, left);
  }
  return available;
}

void mpcrt_download(void *host, const void *buffer, int64_t bytes) {
  if (bytes > 0 && buffer != host)
    std::memcpy(host, buffer, static_cast<size_t>(bytes));
}

int32_t mpcrt_graph_begin(void) { return 0; }
int32_t mpcrt_graph_end(int32_t) { return 0; }
void mpcrt_graph_launch(int32_t) {}

void mpcrt_copy(void *dst, const void *src, int64_t bytes) {
  if (dst != src && bytes > 0)
    std::memmove(dst, src, static_cast<size_t>(bytes));
}

void mpcrt_zero(void *dst, int64_t bytes) {
  if (bytes > 0)
    std::memset(dst, 0, static_cast<size_t>(bytes));
}

void mpcrt_fill(mpcrt_dtype dtype, void *dst, int64_t count, double value) {
  for (int64_t i = 0; i < count; ++i)
    storeAny(dtype, dst, i, value);
}

void mpcrt_fill_random(mpcrt_dtype dtype, void *dst, int64_t count,
                       int32_t normal, double a, double b, uint64_t seed) {
  const uint32_t key[2] = {static_cast<uint32_t>(seed),
                           static_cast<uint32_t>(seed >> 32)};
  for (int64_t q = 0; q * 2 < count; ++q) {
    const uint32_t counter[4] = {static_cast<uint32_t>(q), 0, 0,
                                 static_cast<uint32_t>(q >> 32)};
    uint32_t w[4];
    mpcrt_philox4x32(counter, key, w);
    double u0 = formulas::unitInterval(w[0], w[1]),
           u1 = formulas::unitInterval(w[2], w[3]);
    double v[2];
    if (normal) {
      // Box-Muller; 1 - u0 is in (0, 1], so the log is finite.
      double r = std::sqrt(-2.0 * std::log(1.0 - u0));
      v[0] = a + b * r * std::cos(2.0 * M_PI * u1);
      v[1] = a + b * r * std::sin(2.0 * M_PI * u1);
    } else {
      v[0] = a + (b - a) * u0;
      v[1] = a + (b - a) * u1;
    }
    for (int64_t j = 0; j < 2 && 2 * q + j < count; ++j)
      storeAny(dtype, dst, 2 * q + j, v[j]);
  }
}

void mpcrt_increment_step(int64_t *step) { ++*step; }

void mpcrt_increment_i32(const int32_t *in, int32_t *out, const uint8_t *skip) {
  *out = skip && *skip ? *in : *in + 1;
}

void mpcrt_lr_schedule(const int32_t *step, float *lr, int32_t kind,
                       double base, int64_t warmup, int64_t total,
                       double min_lr, double gamma, int64_t step_size,
                       double pct_start, double div_factor,
                       double final_div_factor, int32_t three_phase) {
  double rate = formulas::learningRate(*step, kind, base, warmup, total, min_lr,
                                       gamma, step_size, pct_start, div_factor,
                                       final_div_factor, three_phase != 0);
  *lr = static_cast<float>(rate);
}

void mpcrt_check_index(int64_t code, const char *where) {
  if (code != 0)
    mpcrt::errors::badIndex(code - 1, where);
}

void mpcrt_check_label(int64_t code, int64_t classes, const char *where) {
  if (code != 0)
    mpcrt::errors::badLabel(code - 1, classes, where);
}

} // extern "C"
