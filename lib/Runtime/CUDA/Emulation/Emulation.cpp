//===- Emulation.cpp - kernels as fibers, the CUDA runtime on the host ----===//
//
// The scheduler behind Emulation.h and the CUDA runtime calls the backend
// makes, answered with host memory and streams as queues of work that runs
// when the host waits for it.
//
//===----------------------------------------------------------------------===//

#include "mpc/Runtime/Report.h"

#include "Emulation.h"

#include <cuda_profiler_api.h>
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// The built-in variables are members of `builtins` here.
#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim

namespace mpcemu {

Builtins builtins;
RaceClock raceClock;
void (*onDeviceFree)(const void *) = nullptr;
namespace {
// Built on first use: other files' static initialisers add to them.
std::vector<void (*)()> &blockEndHooks() {
  static auto *hooks = new std::vector<void (*)()>();
  return *hooks;
}
std::vector<void (*)()> &launchEndHooks() {
  static auto *hooks = new std::vector<void (*)()>();
  return *hooks;
}
} // namespace
void atBlockEnd(void (*hook)()) { blockEndHooks().push_back(hook); }
void atLaunchEnd(void (*hook)()) { launchEndHooks().push_back(hook); }

namespace {

[[noreturn]] void fail(const char *file, int line, const char *what) {
  mpcrt::errors::reportError("CUDA emulation: kernel launched at %s:%d: %s\n",
                             file, line, what);
  std::abort();
}

/// A group of threads that meet at a barrier: the block, or one warp.
struct Group {
  unsigned live = 0, arrived = 0, generation = 0;
  // The predicates counted at a barrier (__syncthreads_count, _or),
  // and the count each of the last two generations released with.
  int countSoFar = 0, countResult[2] = {0, 0};
};

// Switching between threads: a few instructions on x86-64 (callee-saved
// registers and the stack pointer); elsewhere ucontext's, which also saves
// the signal mask with two system calls. Under AddressSanitizer the switch
// tells it which stack runs (its fiber interface): otherwise it takes the
// fibers' stacks for a stray stack pointer. (Its swapcontext interceptor
// does know, but it clears the whole shadow of the stack it enters at every
// switch, which made the emulated kernels a hundred times slower than
// without it.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPCEMU_SANITIZED 1
#endif
#endif
#if defined(__x86_64__)
#ifdef MPCEMU_SANITIZED
#define MPCEMU_ANNOTATED 1
#include <sanitizer/common_interface_defs.h>
#endif
extern "C" void mpcemuSwitch(void **save, void *to);
asm(R"(
  .text
  .p2align 4
  .type mpcemuSwitch,@function
mpcemuSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mpcemuSwitch, .-mpcemuSwitch
)");
struct Context {
  void *sp = nullptr;
  const void *stack = nullptr; // where the sanitizer asks (null: unknown)
  size_t bytes = 0;
  void *fakeStack = nullptr; // the sanitizer's, while switched away
};
/// A context that calls `entry` (which never returns) on `stack`.
void prepare(Context &c, char *stack, size_t bytes, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
  auto *sp = reinterpret_cast<void **>(top);
  *--sp = nullptr;                         // entry's return address slot
  *--sp = reinterpret_cast<void *>(entry); // mpcemuSwitch's ret
  for (int r = 0; r < 6; ++r)              // the callee-saved registers
    *--sp = nullptr;
  c.sp = sp;
  c.stack = stack;
  c.bytes = bytes;
}
#ifdef MPCEMU_ANNOTATED
/// The stack the scheduler runs on, learnt when a thread is first entered.
Context *schedulerContext = nullptr;
/// Begins a switch from `from` to `to`.
void beginSwitch(Context &from, const Context &to) {
  __sanitizer_start_switch_fiber(&from.fakeStack, to.stack, to.bytes);
}
/// Ends a switch into `c`, noting the stack it came from: the scheduler's
/// when `c` is a thread's.
void endSwitch(Context *c, Context *scheduler) {
  const void *bottom = nullptr;
  size_t bytes = 0;
  __sanitizer_finish_switch_fiber(c ? c->fakeStack : nullptr, &bottom, &bytes);
  if (scheduler) {
    scheduler->stack = bottom;
    scheduler->bytes = bytes;
  }
}
#endif
void switchTo(Context &from, Context &to) {
#ifdef MPCEMU_ANNOTATED
  beginSwitch(from, to);
#endif
  mpcemuSwitch(&from.sp, to.sp);
#ifdef MPCEMU_ANNOTATED
  endSwitch(&from, &from == schedulerContext ? nullptr : schedulerContext);
#endif
}
#else
struct Context {
  ucontext_t context;
};
void prepare(Context &c, char *stack, size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;
  makecontext(&c.context, entry, 0);
}
void switchTo(Context &from, Context &to) {
  swapcontext(&from.context, &to.context);
}
#endif

/// A thread of the running block.
struct Fiber {
  uint3 index;
  unsigned linear = 0;
  enum Status { Ready, Waiting, Done } status = Ready;
  Group *waitingOn = nullptr;
  unsigned waitingFor = 0;
};

/// Where the thread of each index runs: a stack and a context that every
/// block reuses, the thread parked between blocks where its last one
/// ended (kernels pass tensor lists of a few KiB by value;
/// AddressSanitizer's frames are larger).
#ifdef MPCEMU_SANITIZED
constexpr size_t kStackBytes = 256 * 1024;
#else
constexpr size_t kStackBytes = 64 * 1024;
#endif
struct Thread {
  std::unique_ptr<char[]> stack{new char[kStackBytes]};
  Context context;
  bool prepared = false;
};
std::vector<std::unique_ptr<Thread>> threads;

/// The block that runs.
struct Block {
  const char *file;
  int line;
  const std::function<void()> *thread;
  std::vector<Fiber> fibers;
  Group block;
  std::vector<Group> warps;
  std::vector<uint64_t> slots; // two exchange words per thread
  Context scheduler;
  Fiber *current = nullptr;
};
Block *running = nullptr;

bool reverseOrder = otherOrderRequested();

void release(Group &g) {
  g.countResult[g.generation & 1] = g.countSoFar;
  g.countSoFar = 0;
  g.arrived = 0;
  ++g.generation;
}

/// Waits at `g` until every live thread of it has arrived.
void arrive(Group &g) {
  Fiber &f = *running->current;
  f.waitingOn = &g;
  f.waitingFor = g.generation;
  if (++g.arrived == g.live) {
    release(g);
    return;
  }
  f.status = Fiber::Waiting;
  switchTo(threads[f.linear]->context, running->scheduler);
}

/// A thread's fiber: the kernel of each block it runs in, back to the
/// scheduler after each.
void threadMain() {
#ifdef MPCEMU_ANNOTATED
  endSwitch(nullptr, schedulerContext);
#endif
  for (;;) {
    (*running->thread)();
    Fiber &f = *running->current;
    f.status = Fiber::Done;
    for (Group *g : {&running->block, &running->warps[f.linear / 32]}) {
      --g->live;
      if (g->arrived && g->arrived == g->live)
        release(*g);
    }
    switchTo(threads[f.linear]->context, running->scheduler);
  }
}

} // namespace
} // namespace mpcemu

// The bounds of every __shared__ variable (the linker's names for the
// section Emulation.h puts them in; null where a program has none).
extern "C" char __start_mpcemu_shared[] __attribute__((weak));
extern "C" char __stop_mpcemu_shared[] __attribute__((weak));

namespace mpcemu {
namespace {

void runBlock(Block &b, dim3 blockDim, bool reverse) {
  if (+__start_mpcemu_shared != +__stop_mpcemu_shared)
    std::memset(__start_mpcemu_shared, 0xff,
                size_t(__stop_mpcemu_shared - __start_mpcemu_shared));
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  while (threads.size() < n)
    threads.push_back(std::make_unique<Thread>());
  b.fibers.assign(n, Fiber());
  b.block = Group();
  b.block.live = n;
  b.warps.assign((n + 31) / 32, Group());
  for (unsigned w = 0; w < b.warps.size(); ++w)
    b.warps[w].live = std::min(32u, n - 32 * w);
  b.slots.assign(2 * n, 0);
  raceClock.blockBarriers = &b.block.generation;
  for (unsigned i = 0; i < n; ++i) {
    Fiber &f = b.fibers[i];
    f.linear = i;
    f.index = {i % blockDim.x, (i / blockDim.x) % blockDim.y,
               i / (blockDim.x * blockDim.y)};
  }
  // Threads run in order of their index, or in the reverse order with
  // MPC_EMULATION_ORDER=reverse: a kernel whose result depends on the order
  // (a thread reading what another writes with no barrier between) gives
  // another result in one of the two, which the tests then catch.
#ifdef MPCEMU_ANNOTATED
  schedulerContext = &b.scheduler;
#endif
  unsigned done = 0;
  while (done < n) {
    bool progressed = false;
    for (unsigned k = 0; k < n; ++k) {
      Fiber &f = b.fibers[reverse ? n - 1 - k : k];
      if (f.status == Fiber::Done)
        continue;
      if (f.status == Fiber::Waiting) {
        if (f.waitingOn->generation == f.waitingFor)
          continue;
        f.status = Fiber::Ready;
      }
      Thread &t = *threads[f.linear];
      if (!t.prepared) {
        prepare(t.context, t.stack.get(), kStackBytes, threadMain);
        t.prepared = true;
      }
      b.current = &f;
      builtins.threadIdx = f.index;
      raceClock.thread = f.linear;
      raceClock.warpBarriers = &b.warps[f.linear / 32].generation;
      switchTo(b.scheduler, t.context);
      progressed = true;
      if (f.status == Fiber::Done)
        ++done;
    }
    if (!progressed)
      fail(b.file, b.line,
           "threads wait at a barrier (__syncthreads or a warp shuffle) "
           "that the others never reach");
  }
}

/// Work enqueued on a stream while it is captured.
struct Capture {
  cudaStream_t stream = nullptr;
  std::vector<std::function<void()>> work;
  /// A call that cannot be captured was made: the capture fails.
  bool invalidated = false;
};
Capture capture;
cudaError_t lastError = cudaSuccess;

/// Whether `stream` is being captured.
bool capturing(cudaStream_t stream) {
  return capture.stream && stream == capture.stream;
}

/// A synchronous call while a stream is captured: as CUDA, it fails and so
/// does the capture.
bool refusedDuringCapture() {
  if (!capture.stream)
    return false;
  capture.invalidated = true;
  return true;
}

/// A stream's work not yet run, in order. Positions count every item
/// ever enqueued, so an event is the position it was recorded at.
struct Queue {
  std::deque<std::function<void()>> pending;
  uint64_t enqueued = 0, done = 0;
  bool blocking = false; // created without cudaStreamNonBlocking
};
/// Every stream's queue; the null stream is the legacy default stream.
std::map<cudaStream_t, Queue> &queues() {
  static auto *all = new std::map<cudaStream_t, Queue>();
  return *all;
}
/// Whether work is running: what it enqueues runs at once.
bool inWork = false;

/// Runs `s`'s work up to position `upTo` (items that wait for other
/// streams run those first).
void drain(cudaStream_t s, uint64_t upTo) {
  Queue &q = queues()[s];
  while (q.done < upTo && !q.pending.empty()) {
    std::function<void()> work = std::move(q.pending.front());
    q.pending.pop_front();
    ++q.done;
    bool outer = inWork;
    inWork = true;
    work();
    inWork = outer;
  }
}

/// When the host waits for a stream, whether every other stream's work
/// runs first (MPC_EMULATION_ORDER=reverse): work on a stream then runs
/// as early as CUDA allows against the one waited for, which exposes a
/// missing wait before a buffer is overwritten; otherwise as late as it
/// allows, which exposes a missing wait before a buffer is read.
bool othersFirst = reverseOrder;

/// The host waits for `s` up to position `upTo` (everything enqueued so
/// far when not given).
void hostWait(cudaStream_t s, std::optional<uint64_t> upTo = std::nullopt) {
  if (othersFirst)
    for (auto &[t, q] : queues())
      if (t != s)
        drain(t, q.enqueued);
  drain(s, upTo ? *upTo : queues()[s].enqueued);
}

void drainAll() {
  for (bool ran = true; ran;) {
    ran = false;
    for (auto &[s, q] : queues())
      if (!q.pending.empty()) {
        drain(s, q.enqueued);
        ran = true;
      }
  }
}

/// Appends `work` to `s`'s queue, after what the legacy default stream's
/// implicit synchronisation with blocking streams orders before it.
void append(cudaStream_t s, std::function<void()> work) {
  Queue &q = queues()[s];
  auto waitFor = [&](cudaStream_t t) {
    uint64_t at = queues()[t].enqueued;
    q.pending.push_back([t, at] { drain(t, at); });
    ++q.enqueued;
  };
  if (!s) {
    for (auto &[t, other] : queues())
      if (t && other.blocking && other.enqueued > other.done)
        waitFor(t);
  } else if (q.blocking &&
             queues()[nullptr].enqueued > queues()[nullptr].done) {
    waitFor(nullptr);
  }
  q.pending.push_back(std::move(work));
  ++q.enqueued;
}

} // namespace

bool otherOrderRequested() {
  static bool other = [] {
    const char *order = std::getenv("MPC_EMULATION_ORDER");
    return order && std::string(order) == "reverse";
  }();
  return other;
}

bool runThreadsInReverse(bool reverse) {
  bool before = reverseOrder;
  reverseOrder = reverse;
  return before;
}

bool runOtherStreamsFirst(bool first) {
  bool before = othersFirst;
  othersFirst = first;
  return before;
}

void enqueue(cudaStream_t stream, std::function<void()> work) {
  if (capturing(stream)) {
    capture.work.push_back(std::move(work));
    return;
  }
  if (inWork)
    return work();
  append(stream, std::move(work));
}

void syncThreads() { arrive(running->block); }

int syncThreadsCount(int predicate) {
  Group &g = running->block;
  if (predicate)
    ++g.countSoFar;
  unsigned generation = g.generation;
  arrive(g);
  return g.countResult[generation & 1];
}

int syncThreadsOr(int predicate) { return syncThreadsCount(predicate) != 0; }

int laneId() { return running->current->linear % 32; }

void kernelFault(const char *what) { fail(running->file, running->line, what); }

namespace {
/// The running thread's warp, for `what` over all 32 lanes: each must
/// exist and not have exited.
Group &fullWarp(const char *what) {
  Block &b = *running;
  Group &w = b.warps[b.current->linear / 32];
  if (w.live != 32)
    fail(b.file, b.line,
         (std::string(what) + " over all lanes in a warp whose lanes have "
                              "exited or do not exist")
             .c_str());
  return w;
}
} // namespace

void syncWarp() { arrive(fullWarp("a __syncwarp")); }

void exchange(const void *value, void *result, size_t bytes, int source) {
  Block &b = *running;
  Fiber &f = *b.current;
  unsigned warp = f.linear / 32;
  fullWarp("a warp shuffle");
  // Two sets of slots, by the barrier's generation: a lane that has read
  // this exchange and writes the next cannot overwrite a value another
  // lane has still to read (it would first have to pass the next barrier,
  // which waits for that lane).
  uint64_t *slots = &b.slots[(b.warps[warp].generation & 1) * b.fibers.size()];
  std::memcpy(&slots[f.linear], value, bytes);
  arrive(b.warps[warp]);
  std::memcpy(result, &slots[warp * 32 + source], bytes);
}

void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
            const char *file, int line, std::function<void()> thread) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 ||
      threads > 1024 || block.z > 64 || grid.x > 0x7fffffffu ||
      grid.y > 65535 || grid.z > 65535 || shared > 48 * 1024) {
    lastError = cudaErrorInvalidConfiguration;
    return;
  }
  // The order of the threads is the one set when the kernel is launched.
  bool reverse = reverseOrder;
  enqueue(stream, [=] {
    Block b;
    b.file = file;
    b.line = line;
    b.thread = &thread;
    Block *outer = running;
    running = &b;
    Builtins saved = builtins;
    builtins.gridDim = grid;
    builtins.blockDim = block;
    RaceClock savedClock = raceClock;
    ++raceClock.launch;
    raceClock.running = true;
    raceClock.file = file;
    raceClock.line = line;
    // Blocks run one after another, in the reverse order too: a block
    // that reads what another writes in the same launch gets another
    // result in one of the two.
    uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
    for (uint64_t k = 0; k < blocks; ++k) {
      uint64_t i = reverse ? blocks - 1 - k : k;
      builtins.blockIdx = {unsigned(i % grid.x), unsigned(i / grid.x % grid.y),
                           unsigned(i / (uint64_t(grid.x) * grid.y))};
      raceClock.block = unsigned(i);
      runBlock(b, block, reverse);
      for (auto hook : blockEndHooks())
        hook();
    }
    for (auto hook : launchEndHooks())
      hook();
    raceClock.running = savedClock.running;
    raceClock.block = savedClock.block;
    raceClock.thread = savedClock.thread;
    builtins = saved;
    running = outer;
  });
}

} // namespace mpcemu

// The CUDA runtime, as far as the backend and its tests use it.
struct CUstream_st {};
/// The stream and position of the last record (none: null stream and no
/// position recorded).
struct CUevent_st {
  cudaStream_t stream = nullptr;
  uint64_t position = 0;
  bool recorded = false;
  /// When the stream's work reached the record (cudaEventElapsedTime).
  std::chrono::steady_clock::time_point reached;
};
struct CUgraph_st {
  std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> work;
};

namespace {
std::map<const void *, size_t> &allocations() {
  static auto *sizes = new std::map<const void *, size_t>();
  return *sizes;
}
/// Page-locked host buffers (cudaHostAlloc): copies from and to them run
/// with the stream, as on a GPU; other host memory is pageable.
std::map<const void *, size_t> &pinned() {
  static auto *sizes = new std::map<const void *, size_t>();
  return *sizes;
}
/// How far past the start of the last of `ranges` that starts at or before
/// `p` it lies, with that range's size; none where no range starts there.
std::optional<std::pair<size_t, size_t>>
offsetInto(const std::map<const void *, size_t> &ranges, const void *p) {
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin())
    return std::nullopt;
  --it;
  return std::make_pair(size_t(static_cast<const char *>(p) -
                               static_cast<const char *>(it->first)),
                        it->second);
}
/// Within one of `ranges` (an empty one holds its start).
bool within(const std::map<const void *, size_t> &ranges, const void *p) {
  auto at = offsetInto(ranges, p);
  return at && at->first < std::max<size_t>(at->second, 1);
}
bool pageable(const void *p) {
  return !within(allocations(), p) && !within(pinned(), p);
}
/// Within or one past the end of one of `ranges`.
bool reaches(const std::map<const void *, size_t> &ranges, const void *p) {
  auto at = offsetInto(ranges, p);
  return at && at->first <= at->second;
}
/// What fresh device memory holds: NaN in every floating-point type, -1 in
/// every integer type, as a GPU's unwritten memory holds whatever was there.
constexpr int kFreshByte = 0xff;
size_t allocatedBytes = 0;
constexpr size_t kEmulatedMemory = size_t(16) << 30;

/// 256-byte aligned as cudaMalloc's, and no byte more than asked for, so
/// that an access past the end is caught by AddressSanitizer.
void *allocateExactly(size_t bytes) {
  void *pointer = nullptr;
  if (posix_memalign(&pointer, 256, bytes ? bytes : 1))
    return nullptr;
  return pointer;
}

/// CUDA takes null pointers for no bytes, memset does not.
cudaError_t fillBytes(void *dst, int value, size_t bytes) {
  if (bytes)
    std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t copyBytes(void *dst, const void *src, size_t bytes) {
  auto *d = static_cast<char *>(dst);
  auto *s = static_cast<const char *>(src);
  if (bytes && d < s + bytes && s < d + bytes) {
    mpcrt::errors::reportError("CUDA emulation: cudaMemcpy between "
                               "overlapping ranges\n");
    std::abort();
  }
  if (bytes) // CUDA takes null pointers for no bytes
    std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
} // namespace

std::pair<const char *, size_t> mpcemu::deviceAllocationAt(const void *p) {
  auto at = offsetInto(allocations(), p);
  if (!at || at->first >= at->second)
    return {nullptr, 0};
  return {static_cast<const char *>(p) - at->first, at->second};
}

bool mpcemu::deviceAccessible(const void *p) {
  return !p || reaches(allocations(), p) || reaches(pinned(), p);
}

void mpcemu::checkAccessible(const char *where, size_t index, const void *p) {
  if (deviceAccessible(p))
    return;
  mpcrt::errors::reportError(
      "CUDA emulation: %s: argument %zu (%p) is host memory "
      "that the device cannot address (neither cudaMalloc's nor "
      "cudaHostAlloc's)\n",
      where, index, p);
  std::abort();
}

namespace {
/// A copy's pointers must be of the kinds its direction names (CUDA leaves
/// a mismatch undefined); cudaMemcpyDefault takes any.
void checkDirection(const char *call, void *dst, const void *src,
                    cudaMemcpyKind kind) {
  auto device = [](const void *p) { return within(allocations(), p); };
  const char *wrong = nullptr;
  if ((kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) &&
      !device(dst))
    wrong = "its destination is not device memory";
  else if ((kind == cudaMemcpyDeviceToHost ||
            kind == cudaMemcpyDeviceToDevice) &&
           !device(src))
    wrong = "its source is not device memory";
  else if (kind == cudaMemcpyHostToDevice && device(src))
    wrong = "its source is device memory";
  else if (kind == cudaMemcpyDeviceToHost && device(dst))
    wrong = "its destination is device memory";
  if (!wrong)
    return;
  mpcrt::errors::reportError(
      "CUDA emulation: %s from %p to %p of direction %d: %s\n", call, src, dst,
      int(kind), wrong);
  std::abort();
}
} // namespace

cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
// The one attribute asked for (by mpc-bench-kernels, to size the buffer
// that flushes the cache between timings): an L2 of 4 MiB.
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute,
                                   int device) {
  if (device != 0 || attribute != cudaDevAttrL2CacheSize)
    return cudaErrorInvalidValue;
  *value = 4 << 20;
  return cudaSuccess;
}
// No profiler to start or stop (mpc-bench-kernels --profile).
cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
  cudaError_t e = mpcemu::lastError;
  mpcemu::lastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return mpcemu::lastError; }
const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureImplicit:
    return "operation would make the legacy stream depend on a capturing "
           "blocking stream";
  case cudaErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  default:
    return "error (emulated)";
  }
}
cudaError_t cudaDeviceSynchronize() {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureUnsupported;
  mpcemu::drainAll();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureUnsupported;
  if (allocatedBytes + bytes > kEmulatedMemory)
    return cudaErrorMemoryAllocation;
  *pointer = allocateExactly(bytes);
  if (!*pointer)
    return cudaErrorMemoryAllocation;
  fillBytes(*pointer, kFreshByte, bytes);
  allocations()[*pointer] = bytes;
  allocatedBytes += bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void *pointer) {
  if (!pointer)
    return cudaSuccess;
  auto found = allocations().find(pointer);
  if (found == allocations().end())
    return cudaErrorInvalidValue;
  mpcemu::drainAll(); // cudaFree waits for the device
  if (mpcemu::onDeviceFree)
    mpcemu::onDeviceFree(pointer);
  allocatedBytes -= found->second;
  allocations().erase(found);
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned) {
  *pointer = allocateExactly(bytes);
  if (!*pointer)
    return cudaErrorMemoryAllocation;
  pinned()[*pointer] = bytes;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void *pointer) {
  if (!pointer)
    return cudaSuccess;
  if (!pinned().erase(pointer))
    return cudaErrorInvalidValue;
  mpcemu::drainAll(); // cudaFreeHost waits for the device
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  *total = kEmulatedMemory;
  *free = kEmulatedMemory - allocatedBytes;
  return cudaSuccess;
}

// Copies follow CUDA's "API synchronization behavior": from pageable
// memory the source is staged when the call is made; to pageable memory
// the call returns once the copy is done; between device and pinned memory
// an asynchronous copy runs with its stream. The synchronous calls run on
// the legacy default stream, which does not wait for non-blocking streams:
// cudaMemcpy returns once its copy is done, cudaMemset (of device memory)
// returns at once.
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  if (bytes)
    checkDirection("cudaMemcpyAsync", dst, src, kind);
  bool capturing = mpcemu::capturing(stream);
  if (bytes && pageable(src) && !capturing) {
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(src), static_cast<const char *>(src) + bytes);
    mpcemu::enqueue(stream, [=] { copyBytes(dst, staged->data(), bytes); });
  } else {
    mpcemu::enqueue(stream, [=] { copyBytes(dst, src, bytes); });
  }
  if (bytes && pageable(dst) && !capturing)
    mpcemu::hostWait(stream);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureImplicit;
  cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
  mpcemu::hostWait(nullptr);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureImplicit;
  if (bytes)
    mpcemu::checkAccessible("cudaMemset", 0, dst);
  mpcemu::enqueue(nullptr, [=] { fillBytes(dst, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                            cudaStream_t stream) {
  if (bytes)
    mpcemu::checkAccessible("cudaMemsetAsync", 0, dst);
  mpcemu::enqueue(stream, [=] { fillBytes(dst, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags) {
  *stream = new CUstream_st;
  mpcemu::queues()[*stream].blocking = !(flags & cudaStreamNonBlocking);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  // Work already enqueued still runs (here: now); then the stream is gone.
  auto &all = mpcemu::queues();
  mpcemu::drain(stream, all[stream].enqueued);
  all.erase(stream);
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (mpcemu::capturing(stream) && mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureUnsupported;
  mpcemu::hostWait(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned) {
  if (mpcemu::capturing(stream)) {
    // An event recorded outside the capture: CUDA refuses the dependency.
    if (event->recorded) {
      mpcemu::capture.invalidated = true;
      return cudaErrorStreamCaptureIsolation;
    }
    return cudaSuccess;
  }
  if (!event->recorded)
    return cudaSuccess;
  cudaStream_t from = event->stream;
  uint64_t at = event->position;
  mpcemu::enqueue(stream, [from, at] { mpcemu::drain(from, at); });
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, 0);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (mpcemu::capturing(stream)) {
    // Inside a capture a record only orders captured work, which the
    // recording replays in order: it is not a record the host can wait on.
    event->recorded = false;
    return cudaSuccess;
  }
  // The host's time when the stream's work gets here: the emulated
  // kernels' times, as a GPU's events time its kernels.
  mpcemu::enqueue(
      stream, [event] { event->reached = std::chrono::steady_clock::now(); });
  event->stream = stream;
  event->position = mpcemu::queues()[stream].enqueued;
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  if (!start->recorded || !end->recorded)
    return cudaErrorInvalidResourceHandle;
  cudaEventSynchronize(start);
  cudaEventSynchronize(end);
  *ms = std::chrono::duration<float, std::milli>(end->reached - start->reached)
            .count();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event->recorded)
    mpcemu::hostWait(event->stream, event->position);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (mpcemu::capture.stream)
    return cudaErrorIllegalState;
  mpcemu::capture.stream = stream;
  mpcemu::capture.work.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  if (mpcemu::capture.stream != stream)
    return cudaErrorIllegalState;
  bool invalidated = mpcemu::capture.invalidated;
  *graph =
      invalidated ? nullptr : new CUgraph_st{std::move(mpcemu::capture.work)};
  mpcemu::capture = mpcemu::Capture();
  return invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  *exec = new CUgraphExec_st{graph->work};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  for (const auto &work : exec->work)
    mpcemu::enqueue(stream, work);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
