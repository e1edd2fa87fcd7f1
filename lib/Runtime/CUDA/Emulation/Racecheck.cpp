//===- Racecheck.cpp - data races between the emulated threads ------------===//
//
// The emulated kernels compiled for the race check (`-fsanitize=thread`'s
// instrumentation without its runtime) call these hooks before each load
// and store. Accesses to device memory (cudaMalloc's) and to shared memory
// are recorded per byte: the last write and the last read, each with its
// launch, block, thread and the barriers its block and warp had passed
// (Emulation.h's RaceClock). Two accesses of one launch to one byte, one a
// write, conflict unless one thread made both, or one block with a
// __syncthreads between, or one warp with a __syncwarp or a shuffle
// between, or blocks that a __threadfence and atomics order (a block
// counting itself in after storing its results, the last one reading them:
// see orderedBetweenBlocks); atomics do not conflict with atomics. A
// conflicting write that
// leaves the byte as it was (blocks storing the 1 a flag already holds)
// is not reported, nor a read that conflicts only with such writes: the
// result is the same in any order. A conflict stops the run with what
// CUDA calls a hazard: the memory, the two threads, and where the access
// that found it is in the code.
//
// Shared memory is each block's own: what another block or launch wrote
// there is not a conflict. Device memory is recorded for the launch: an
// access of another launch is ordered by the stream (the stream order is
// the emulation's other check). Records are made only for the pages
// kernels touch.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Emulation.h"
#include "Racecheck.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cxxabi.h>
#include <dlfcn.h>

#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim

extern "C" char __start_mpcemu_shared[] __attribute__((weak));
extern "C" char __stop_mpcemu_shared[] __attribute__((weak));

namespace mpcemu {

std::vector<CodeLocation> locate(const std::vector<const void *> &returns) {
  std::vector<CodeLocation> found(returns.size());
  const char *symbolizer = std::getenv("LLVM_SYMBOLIZER_PATH");
  std::string command =
      std::string("'") + (symbolizer ? symbolizer : "llvm-symbolizer") + "'";
  std::vector<size_t> asked;
  for (size_t i = 0; i < returns.size(); ++i) {
    Dl_info info;
    if (!dladdr(returns[i], &info) || !info.dli_fbase)
      continue;
    // The return address: the call is the instruction before it.
    size_t offset = size_t(static_cast<const char *>(returns[i]) -
                           static_cast<const char *>(info.dli_fbase)) -
                    1;
    char text[512];
    std::snprintf(text, sizeof text, "%s+0x%zx", info.dli_fname, offset);
    found[i].address = text;
    if (info.dli_sname) {
      int status = 0;
      char *name =
          abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      found[i].function = status == 0 ? name : info.dli_sname;
      std::free(name);
    }
    std::snprintf(text, sizeof text, " '%s 0x%zx'", info.dli_fname, offset);
    command += text;
    asked.push_back(i);
  }
  if (asked.empty())
    return found;
  command += " 2>/dev/null";
  if (FILE *out = popen(command.c_str(), "r")) {
    // Per address, its inlined frames (function, then file:line:column),
    // innermost first, then an empty line: the kernels are inlined into
    // their launches, and the innermost frame is where the access is.
    char text[4096];
    auto next = [&](std::string &line) {
      if (!std::fgets(text, sizeof text, out))
        return false;
      line = text;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.pop_back();
      return true;
    };
    for (size_t i : asked) {
      std::string function, line, rest;
      if (!next(function) || !next(line))
        break;
      if (!function.empty() && function != "??")
        found[i].function = function;
      if (!line.empty() && line[0] != '?')
        found[i].line = line;
      while (next(rest) && !rest.empty()) {
      }
    }
    pclose(out);
  }
  return found;
}

namespace {

/// One access as the race check keeps it. `launch` 0: none.
struct Access {
  uint32_t launch = 0, block = 0, blockBarriers = 0, warpBarriers = 0;
  uint32_t thread : 24;
  uint32_t atomic : 1;
  /// For reads: another thread read the byte too, unordered with this one
  /// (the write that follows conflicts with that read).
  uint32_t others : 1;
  Access() : thread(0), atomic(0), others(0) {}
};
struct Cell {
  Access write, read;
  /// The byte before the last write (before the first of writes no
  /// order separates): a conflicting access is benign where the write
  /// did not change the byte.
  uint8_t before = 0;
};

constexpr size_t kPageBytes = 4096;
struct Region {
  const char *start = nullptr;
  size_t bytes = 0;
  bool shared = false;
  std::vector<std::unique_ptr<Cell[]>> pages;
};

/// Device allocations by start, and the shared section.
std::map<const char *, std::unique_ptr<Region>> &regions() {
  static auto *all = new std::map<const char *, std::unique_ptr<Region>>();
  return *all;
}
Region &sharedRegion() {
  static Region *shared = [] {
    auto *r = new Region();
    r->start = __start_mpcemu_shared;
    r->bytes = size_t(__stop_mpcemu_shared - __start_mpcemu_shared);
    r->shared = true;
    r->pages.resize((r->bytes + kPageBytes - 1) / kPageBytes);
    return r;
  }();
  return *shared;
}
/// The region last found: consecutive accesses mostly hit it.
Region *lastRegion = nullptr;

void forget(const void *pointer) {
  auto it = regions().find(static_cast<const char *>(pointer));
  if (it == regions().end())
    return;
  if (lastRegion == it->second.get())
    lastRegion = nullptr;
  regions().erase(it);
}

/// The region holding `p`, or null (the stack, the host's memory).
Region *regionOf(const char *p) {
  if (lastRegion && p >= lastRegion->start &&
      p < lastRegion->start + lastRegion->bytes)
    return lastRegion;
  Region &shared = sharedRegion();
  if (p >= shared.start && p < shared.start + shared.bytes)
    return lastRegion = &shared;
  auto [start, bytes] = deviceAllocationAt(p);
  if (!start)
    return nullptr;
  // cudaFree forgets a region (forget), so one found here is its own.
  std::unique_ptr<Region> &r = regions()[start];
  if (!r) {
    r = std::make_unique<Region>();
    r->start = start;
    r->bytes = bytes;
    r->pages.resize((bytes + kPageBytes - 1) / kPageBytes);
  }
  return lastRegion = r.get();
}

Cell &cellOf(Region &r, size_t offset) {
  std::unique_ptr<Cell[]> &page = r.pages[offset / kPageBytes];
  if (!page)
    page.reset(new Cell[kPageBytes]);
  return page[offset % kPageBytes];
}

Access now(bool atomic) {
  Access a;
  a.launch = raceClock.launch;
  a.block = raceClock.block;
  a.thread = raceClock.thread;
  a.blockBarriers = *raceClock.blockBarriers;
  a.warpBarriers = *raceClock.warpBarriers;
  a.atomic = atomic;
  return a;
}

/// Whether `a`, recorded earlier, is still to be compared with accesses
/// of the running thread: of this launch, and in shared memory of this
/// block.
bool current(const Access &a, const Region &r) {
  return a.launch == raceClock.launch &&
         (!r.shared || a.block == raceClock.block);
}

/// Order between blocks of one launch, as CUDA's "last block" pattern
/// makes it: each block stores its results, fences (__threadfence) and
/// counts itself in with an atomic; the block whose atomic counts last
/// reads the others' results. Modelled per block, not per instruction:
/// - a block's atomic *releases* the block's accesses that a fence before
///   the atomic orders: the fencing thread's own accesses up to the
///   fence's barrier interval, and every thread's before a barrier that
///   precedes the fence (the fence itself the atomic's thread's, or before
///   a barrier that precedes the atomic);
/// - a block's atomic *acquires* what earlier blocks released, for its
///   thread's accesses and for every thread's past the next barrier.
/// Blocks run one after another, so every release of another block comes
/// before the running block's atomics. What the model does not see: an
/// access of the fencing (or the atomic's) thread after its fence (or
/// before its atomic) in the same barrier interval counts as before (or
/// after) it.
struct Release {
  int64_t before = -1;         // every thread's accesses in intervals below
  std::vector<int32_t> fenced; // a thread's own, up to this interval (or -1)
};
struct RunningBlock {
  uint32_t launch = 0, block = 0;
  std::vector<int32_t> fences; // each thread's last fence's interval, or -1
  bool fenced = false;
  std::vector<bool> acquiredBy; // threads whose atomic acquired
  int64_t acquiredAt = -1;      // the first acquiring atomic's interval
};
uint32_t releasesLaunch = 0;
std::unordered_map<uint32_t, Release> releases; // by block
RunningBlock runningBlock;

RunningBlock &running() {
  if (releasesLaunch != raceClock.launch) {
    releases.clear();
    releasesLaunch = raceClock.launch;
  }
  RunningBlock &b = runningBlock;
  if (b.launch != raceClock.launch || b.block != raceClock.block) {
    const dim3 &d = builtins.blockDim;
    size_t threads = size_t(d.x) * d.y * d.z;
    b = RunningBlock();
    b.launch = raceClock.launch;
    b.block = raceClock.block;
    b.fences.assign(threads, -1);
    b.acquiredBy.assign(threads, false);
  }
  return b;
}

/// The running thread's atomic: what it releases and acquires.
void atomicOrders() {
  RunningBlock &b = running();
  uint32_t t = raceClock.thread, interval = *raceClock.blockBarriers;
  if (!b.acquiredBy[t]) {
    b.acquiredBy[t] = true;
    if (b.acquiredAt < 0)
      b.acquiredAt = interval;
  }
  if (!b.fenced)
    return;
  Release r;
  r.fenced.assign(b.fences.size(), -1);
  for (size_t u = 0; u < b.fences.size(); ++u) {
    int32_t f = b.fences[u];
    if (f < 0 || (u != t && uint32_t(f) >= interval))
      continue;
    r.fenced[u] = f;
    r.before = std::max<int64_t>(r.before, f);
  }
  if (r.before >= 0)
    releases[raceClock.block] = std::move(r);
}

/// Whether `a`, of another block of this launch, was released before the
/// running block acquired it for `b`.
bool orderedBetweenBlocks(const Access &a, const Access &b) {
  RunningBlock &o = running();
  auto it = releases.find(a.block);
  if (it == releases.end())
    return false;
  const Release &r = it->second;
  bool released = int64_t(a.blockBarriers) < r.before ||
                  (a.thread < r.fenced.size() &&
                   r.fenced[a.thread] >= int64_t(a.blockBarriers));
  return released &&
         ((b.thread < o.acquiredBy.size() && o.acquiredBy[b.thread]) ||
          (o.acquiredAt >= 0 && int64_t(b.blockBarriers) > o.acquiredAt));
}

/// Whether `a` (current) happened before `b`, the running thread's.
bool ordered(const Access &a, const Access &b) {
  if (a.block != b.block)
    return orderedBetweenBlocks(a, b);
  if (a.thread == b.thread)
    return true;
  if (a.blockBarriers != b.blockBarriers)
    return true;
  return a.thread / 32 == b.thread / 32 && a.warpBarriers != b.warpBarriers;
}

bool sameThread(const Access &a, const Access &b) {
  return a.block == b.block && a.thread == b.thread;
}

/// Whether no barrier of the block passed between `a` and `b`, accesses of
/// one thread.
bool sameInterval(const Access &a, const Access &b) {
  return a.blockBarriers == b.blockBarriers && a.warpBarriers == b.warpBarriers;
}

std::string threadName(uint32_t block, uint32_t thread) {
  const dim3 &g = builtins.gridDim, &d = builtins.blockDim;
  char text[160];
  std::snprintf(text, sizeof text, "thread (%u,%u,%u) of block (%u,%u,%u)",
                thread % d.x, thread / d.x % d.y, thread / (d.x * d.y),
                block % g.x, block / g.x % g.y, block / (g.x * g.y));
  return text;
}

/// Where the access that found the race is: its function and source line,
/// else the binary and the offset to give llvm-symbolizer.
std::string codeAt(const void *pc) {
  CodeLocation at = locate({pc})[0];
  if (at.function.empty())
    return at.address.empty() ? "" : " at " + at.address;
  return " in " + at.function + (at.line.empty() ? "" : " at " + at.line);
}

[[noreturn]] void report(const char *hazard, const Region &r, size_t offset,
                         const Access &earlier, const char *earlierDid,
                         const Access &later, const char *laterDoes,
                         const void *pc) {
  const char *how =
      earlier.block != later.block
          ? "threads of different blocks of one launch are not ordered (a "
            "__threadfence and an atomic in the first, an atomic in the "
            "second, would order them)"
      : earlier.thread / 32 == later.thread / 32
          ? "no __syncthreads, __syncwarp or shuffle between"
          : "no __syncthreads between";
  mpcrt::errors::reportError(
      "CUDA emulation: kernel launched at %s:%d: data race (%s hazard) "
      "on byte %zu of %s of %zu bytes: %s %s, %s %s%s; %s\n",
      raceClock.file, raceClock.line, hazard, offset,
      r.shared ? "shared memory" : "a device allocation", r.bytes,
      threadName(earlier.block, earlier.thread).c_str(), earlierDid,
      threadName(later.block, later.thread).c_str(), laterDoes,
      codeAt(pc).c_str(), how);
  std::abort();
}

/// A write that conflicts with an earlier access, checked once it is done
/// (the hooks run before the store): a race where it changed the byte.
/// Threads storing the value a byte already holds (every block setting
/// one flag to 1) do not race in effect.
struct Pending {
  const uint8_t *byte;
  uint8_t before;
  const char *hazard, *earlierDid;
  Access earlier, later;
  Region *region;
  size_t offset;
  const void *pc;
};
std::vector<Pending> pending;

void checkPending() {
  for (const Pending &w : pending)
    if (*w.byte != w.before)
      report(w.hazard, *w.region, w.offset, w.earlier, w.earlierDid, w.later,
             "writes it", w.pc);
  pending.clear();
}

/// The running thread's access of `bytes` at `address` (a write where
/// `isWrite`): the deferred checks first, the profile told, then
/// visit(cell, region, offset, byte, access) for each byte of device or
/// shared memory it touches.
template <typename Visit>
void access(const void *address, size_t bytes, bool isWrite, bool atomic,
            const void *pc, Visit visit) {
  if (!raceClock.running)
    return;
  if (!pending.empty())
    checkPending();
  const char *p = static_cast<const char *>(address);
  Region *r = regionOf(p);
  if (!r)
    return;
  if (!r->shared && profiling())
    profileAccess(p, bytes, isWrite, pc);
  Access me = now(atomic);
  for (size_t i = 0; i < bytes; ++i) {
    size_t offset = size_t(p + i - r->start);
    if (offset >= r->bytes) {
      r = regionOf(p + i);
      if (!r)
        return;
      offset = size_t(p + i - r->start);
    }
    visit(cellOf(*r, offset), *r, offset,
          reinterpret_cast<const uint8_t *>(p + i), me);
  }
}

void read(const void *address, size_t bytes, const void *pc) {
  access(
      address, bytes, false, false, pc,
      [&](Cell &c, Region &r, size_t offset, const uint8_t *byte, Access me) {
        if (current(c.write, r) && !ordered(c.write, me) && *byte != c.before)
          report("read after write", r, offset, c.write,
                 c.write.atomic ? "updated it atomically" : "wrote it", me,
                 "reads it", pc);
        // Other readers unordered with this one: one is enough to know
        // of.
        if (current(c.read, r)) {
          if (sameThread(c.read, me))
            me.others = c.read.others && sameInterval(c.read, me);
          else
            me.others = !ordered(c.read, me);
        }
        c.read = me;
      });
}

void write(const void *address, size_t bytes, bool atomic, const void *pc) {
  access(
      address, bytes, true, atomic, pc,
      [&](Cell &c, Region &r, size_t offset, const uint8_t *byte,
          const Access &me) {
        // A conflict: at once for an atomic update, else once the store
        // is done, where it changed the byte.
        auto conflict = [&](const char *hazard, const Access &earlier,
                            const char *earlierDid) {
          if (atomic)
            report(hazard, r, offset, earlier, earlierDid, me,
                   "updates it atomically", pc);
          pending.push_back(
              {byte, *byte, hazard, earlierDid, earlier, me, &r, offset, pc});
        };
        bool concurrent = current(c.write, r) && !ordered(c.write, me);
        if (concurrent && !(atomic && c.write.atomic))
          conflict("write after write", c.write,
                   c.write.atomic ? "updated it atomically" : "wrote it");
        if (current(c.read, r) &&
            (sameThread(c.read, me) ? c.read.others && sameInterval(c.read, me)
                                    : !ordered(c.read, me)))
          conflict("write after read", c.read,
                   sameThread(c.read, me) ? "and another read it" : "read it");
        if (!concurrent)
          c.before = *byte;
        c.write = me;
        c.read = Access();
      });
}

/// The deferred checks of the block's last writes; the records of an
/// allocation go with it.
bool hooked = [] {
  atBlockEnd(checkPending);
  onDeviceFree = forget;
  return true;
}();

} // namespace

void atomicAccess(const void *address, size_t bytes) {
  write(address, bytes, true, __builtin_return_address(0));
  if (raceClock.running)
    atomicOrders();
}

void fenceAccess() {
  if (!raceClock.running)
    return;
  RunningBlock &b = running();
  b.fences[raceClock.thread] = int32_t(*raceClock.blockBarriers);
  b.fenced = true;
}

} // namespace mpcemu

// The instrumentation's entry points (ThreadSanitizer's names). Only the
// accesses are checked; the rest are no-ops the instrumented code calls.
#define MPCEMU_RACE_ACCESS(n)                                                  \
  extern "C" void __tsan_read##n(void *p) {                                    \
    mpcemu::read(p, n, __builtin_return_address(0));                           \
  }                                                                            \
  extern "C" void __tsan_write##n(void *p) {                                   \
    mpcemu::write(p, n, false, __builtin_return_address(0));                   \
  }                                                                            \
  extern "C" void __tsan_unaligned_read##n(void *p) {                          \
    mpcemu::read(p, n, __builtin_return_address(0));                           \
  }                                                                            \
  extern "C" void __tsan_unaligned_write##n(void *p) {                         \
    mpcemu::write(p, n, false, __builtin_return_address(0));                   \
  }
MPCEMU_RACE_ACCESS(1)
MPCEMU_RACE_ACCESS(2)
MPCEMU_RACE_ACCESS(4)
MPCEMU_RACE_ACCESS(8)
MPCEMU_RACE_ACCESS(16)

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit() {}
void __tsan_vptr_read(void **) {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_read_range(void *p, unsigned long n) {
  mpcemu::read(p, n, __builtin_return_address(0));
}
void __tsan_write_range(void *p, unsigned long n) {
  mpcemu::write(p, n, false, __builtin_return_address(0));
}
void *__tsan_memcpy(void *dst, const void *src, unsigned long n) {
  mpcemu::read(src, n, __builtin_return_address(0));
  mpcemu::write(dst, n, false, __builtin_return_address(0));
  return std::memcpy(dst, src, n);
}
void *__tsan_memmove(void *dst, const void *src, unsigned long n) {
  mpcemu::read(src, n, __builtin_return_address(0));
  mpcemu::write(dst, n, false, __builtin_return_address(0));
  return std::memmove(dst, src, n);
}
void *__tsan_memset(void *dst, int value, unsigned long n) {
  mpcemu::write(dst, n, false, __builtin_return_address(0));
  return std::memset(dst, value, n);
}
}
