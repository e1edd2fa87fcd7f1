//===- Emulation.cpp - kernels as fibers, the CUDA runtime on the host ----===//
//
// The scheduler behind Emulation.h and the CUDA runtime calls the backend
// makes, answered with host memory and work done when it is enqueued.
//
//===----------------------------------------------------------------------===//

#include "Emulation.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

// The built-in variables are members of `builtins` here.
#undef threadIdx
#undef blockIdx
#undef blockDim
#undef gridDim

namespace mpcemu {

Builtins builtins;

namespace {

[[noreturn]] void fail(const char *file, int line, const char *what) {
  std::fprintf(stderr, "error: CUDA emulation: kernel launched at %s:%d: %s\n",
               file, line, what);
  std::abort();
}

/// A group of threads that meet at a barrier: the block, or one warp.
struct Group {
  unsigned live = 0, arrived = 0, generation = 0;
  int orSoFar = 0, orResult[2] = {0, 0};
};

// Switching between threads: a few instructions on x86-64 (callee-saved
// registers and the stack pointer); elsewhere, and under
// AddressSanitizer (which follows swapcontext, not a hand-made switch),
// ucontext's, which also saves the signal mask with two system calls.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPCEMU_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(MPCEMU_SANITIZED)
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
}
void switchTo(Context &from, Context &to) { mpcemuSwitch(&from.sp, to.sp); }
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

struct Fiber {
  Context context;
  uint3 index;
  unsigned linear = 0;
  enum Status { Ready, Waiting, Done } status = Ready;
  Group *waitingOn = nullptr;
  unsigned waitingFor = 0;
  bool started = false;
};

/// Threads' stacks, reused by every block (kernels pass tensor lists of a
/// few KiB by value; AddressSanitizer's frames are larger).
#ifdef MPCEMU_SANITIZED
constexpr size_t kStackBytes = 256 * 1024;
#else
constexpr size_t kStackBytes = 64 * 1024;
#endif
std::vector<std::unique_ptr<char[]>> stacks;

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

bool reverseOrder = [] {
  const char *order = std::getenv("MPC_EMULATION_ORDER");
  return order && std::string(order) == "reverse";
}();

void release(Group &g) {
  g.orResult[g.generation & 1] = g.orSoFar;
  g.orSoFar = 0;
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
  switchTo(f.context, running->scheduler);
}

/// A thread's fiber: the kernel, then back to the scheduler for good.
void threadMain() {
  (*running->thread)();
  Fiber &f = *running->current;
  f.status = Fiber::Done;
  for (Group *g : {&running->block, &running->warps[f.linear / 32]}) {
    --g->live;
    if (g->arrived && g->arrived == g->live)
      release(*g);
  }
  switchTo(f.context, running->scheduler);
  __builtin_unreachable();
}

void runBlock(Block &b, dim3 blockDim) {
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  while (stacks.size() < n)
    stacks.emplace_back(new char[kStackBytes]);
  b.fibers.assign(n, Fiber());
  b.block = Group();
  b.block.live = n;
  b.warps.assign((n + 31) / 32, Group());
  for (unsigned w = 0; w < b.warps.size(); ++w)
    b.warps[w].live = std::min(32u, n - 32 * w);
  b.slots.assign(2 * n, 0);
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
  unsigned done = 0;
  while (done < n) {
    bool progressed = false;
    for (unsigned k = 0; k < n; ++k) {
      Fiber &f = b.fibers[reverseOrder ? n - 1 - k : k];
      if (f.status == Fiber::Done)
        continue;
      if (f.status == Fiber::Waiting) {
        if (f.waitingOn->generation == f.waitingFor)
          continue;
        f.status = Fiber::Ready;
      }
      if (!f.started) {
        prepare(f.context, stacks[f.linear].get(), kStackBytes, threadMain);
        f.started = true;
      }
      b.current = &f;
      builtins.threadIdx = f.index;
      switchTo(b.scheduler, f.context);
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

/// A synchronous call while a stream is captured: as CUDA, it fails and so
/// does the capture.
bool refusedDuringCapture() {
  if (!capture.stream)
    return false;
  capture.invalidated = true;
  return true;
}

} // namespace

bool runThreadsInReverse(bool reverse) {
  bool before = reverseOrder;
  reverseOrder = reverse;
  return before;
}

void enqueue(cudaStream_t stream, std::function<void()> work) {
  if (capture.stream && stream == capture.stream) {
    capture.work.push_back(std::move(work));
    return;
  }
  work();
}

void syncThreads() { arrive(running->block); }

int syncThreadsOr(int predicate) {
  Group &g = running->block;
  if (predicate)
    g.orSoFar = 1;
  unsigned generation = g.generation;
  arrive(g);
  return g.orResult[generation & 1];
}

int laneId() { return running->current->linear % 32; }

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
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          builtins.blockIdx = {x, y, z};
          runBlock(b, block);
        }
    builtins = saved;
    running = outer;
  });
}

} // namespace mpcemu

// The CUDA runtime, as far as the backend and its tests use it.
struct CUstream_st {};
struct CUevent_st {};
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
    std::fprintf(stderr, "error: CUDA emulation: cudaMemcpy between "
                         "overlapping ranges\n");
    std::abort();
  }
  if (bytes) // CUDA takes null pointers for no bytes
    std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
} // namespace

cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
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
  return mpcemu::refusedDuringCapture() ? cudaErrorStreamCaptureUnsupported
                                        : cudaSuccess;
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureUnsupported;
  if (allocatedBytes + bytes > kEmulatedMemory)
    return cudaErrorMemoryAllocation;
  *pointer = allocateExactly(bytes);
  if (!*pointer)
    return cudaErrorMemoryAllocation;
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
  allocatedBytes -= found->second;
  allocations().erase(found);
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned) {
  *pointer = allocateExactly(bytes);
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *pointer) {
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  *total = kEmulatedMemory;
  *free = kEmulatedMemory - allocatedBytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureImplicit;
  return copyBytes(dst, src, bytes);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind, cudaStream_t stream) {
  mpcemu::enqueue(stream, [=] { copyBytes(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void *dst, int value, size_t bytes) {
  if (mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureImplicit;
  return fillBytes(dst, value, bytes);
}
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                            cudaStream_t stream) {
  mpcemu::enqueue(stream, [=] { fillBytes(dst, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  *stream = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream == mpcemu::capture.stream && mpcemu::refusedDuringCapture())
    return cudaErrorStreamCaptureUnsupported;
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) {
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

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
