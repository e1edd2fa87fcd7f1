//===- Support.cu - context, memory, fills and counters on the device -----===//

#include "mpc/Runtime/Report.h"

#include "Device.cuh"
#include "Formulas.h"
#include "Libraries.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mpcrt::cuda {

namespace {
/// Between graphBegin and graphEnd: errors make the capture fail instead of
/// the program (nothing ran; the step is then run eagerly, which reports
/// what is really wrong).
bool capturing = false;
/// Why the capture in progress failed (empty: it has not).
std::string captureError;
} // namespace

bool capturingGraph() { return capturing; }

bool captureFailure(const std::string &what) {
  if (!capturing)
    return false;
  if (captureError.empty())
    captureError = what;
  return true;
}

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return;
  if (captureFailure(std::string(what) + ": " + cudaGetErrorString(status))) {
    cudaGetLastError(); // clear a non-sticky error
    return;
  }
  mpcrt::errors::reportError("CUDA: %s: %s\n", what,
                             cudaGetErrorString(status));
  std::exit(1);
}

namespace {
/// The stream itself: stream() without its op-times mark.
cudaStream_t rawStream() {
  static cudaStream_t s = [] {
    initialize();
    cudaStream_t created;
    MPCRT_CUDA_CHECK(
        cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return s;
}

/// One call's marks: the event recorded before its first work (null
/// where none was enqueued since the previous mark) and the one after.
struct OpMark {
  const char *name;
  cudaEvent_t begin, end;
};

/// MPC_CUDA_OP_TIMES: the file, the marks not yet written, the begin
/// event of the call in progress (recorded when it first asks for the
/// stream) and the event the first mark is timed from.
struct OpTimes {
  std::FILE *out = nullptr;
  std::vector<OpMark> marks;
  cudaEvent_t begin = nullptr;
  cudaEvent_t last = nullptr;
};

/// The process's op times, null without MPC_CUDA_OP_TIMES (read once).
OpTimes *opTimes() {
  static OpTimes *times = []() -> OpTimes * {
    const char *path = std::getenv("MPC_CUDA_OP_TIMES");
    if (!path || !*path)
      return nullptr;
    std::FILE *out = std::fopen(path, "w");
    if (!out) {
      mpcrt::errors::reportError("MPC_CUDA_OP_TIMES: cannot write '%s': %s\n",
                                 path, std::strerror(errno));
      std::exit(1);
    }
    auto *t = new OpTimes{out, {}, nullptr};
    MPCRT_CUDA_CHECK(cudaEventCreate(&t->last));
    MPCRT_CUDA_CHECK(cudaEventRecord(t->last, rawStream()));
    return t;
  }();
  return times;
}

/// Writes the marks' times (the stream synchronised: every event done):
/// a call's from its begin event to its end, and the device's idle time
/// before it, from the previous call's end to its begin (the begin ran
/// as soon as it was enqueued if the device had nothing left to do: the
/// device waited for the host). A call without a begin is timed from the
/// previous end.
void writeOpTimes(OpTimes &t) {
  for (OpMark &m : t.marks) {
    float ms = 0, idle = 0;
    if (m.begin) {
      MPCRT_CUDA_CHECK(cudaEventElapsedTime(&idle, t.last, m.begin));
      MPCRT_CUDA_CHECK(cudaEventElapsedTime(&ms, m.begin, m.end));
      MPCRT_CUDA_CHECK(cudaEventDestroy(m.begin));
    } else {
      MPCRT_CUDA_CHECK(cudaEventElapsedTime(&ms, t.last, m.end));
    }
    std::fprintf(t.out, "{\"op\": \"%s\", \"ms\": %.6f, \"idle_ms\": %.6f}\n",
                 m.name, ms, idle);
    MPCRT_CUDA_CHECK(cudaEventDestroy(t.last));
    t.last = m.end;
  }
  t.marks.clear();
  std::fflush(t.out);
}
} // namespace

void markOp(const char *name) {
  OpTimes *t = opTimes();
  if (!t)
    return;
  cudaEvent_t event;
  MPCRT_CUDA_CHECK(cudaEventCreate(&event));
  MPCRT_CUDA_CHECK(cudaEventRecord(event, rawStream()));
  t->marks.push_back({name, t->begin, event});
  t->begin = nullptr;
  if (t->marks.size() >= 4096) { // bounded: written in batches
    synchronize();
    writeOpTimes(*t);
  }
}

void initialize() {
  static bool done = [] {
    loadLibraries();
    std::string why;
    if (!deviceAvailable(&why)) {
      mpcrt::errors::reportError("CUDA backend: %s\n", why.c_str());
      std::exit(1);
    }
    deviceErrors();
    return true;
  }();
  (void)done;
}

bool deviceAvailable(std::string *why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why)
      *why = std::string("no CUDA device: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why)
      *why = "no CUDA device";
    return false;
  }
  return true;
}

cudaStream_t stream() {
  cudaStream_t s = rawStream();
  // With op times: the first request since the last mark is the call's
  // first work, about to be enqueued; its begin event goes before it.
  if (OpTimes *t = opTimes(); t && !t->begin) {
    MPCRT_CUDA_CHECK(cudaEventCreate(&t->begin));
    MPCRT_CUDA_CHECK(cudaEventRecord(t->begin, s));
  }
  return s;
}

namespace {
/// Whether a graph has been recorded: buffers it may address are then
/// never freed (another entry's first, eager call may grow a scratch
/// buffer or a workspace after the step was recorded).
bool graphRecorded = false;
std::vector<void *> retired;
} // namespace

bool releaseGrown(void *pointer) {
  if (!pointer)
    return true;
  if (graphRecorded) {
    retired.push_back(pointer);
    return false;
  }
  MPCRT_CUDA_CHECK(cudaFree(pointer));
  return true;
}

bool environmentChoice(const char *variable, const char *first,
                       const char *firstMeans, const char *second,
                       const char *secondMeans) {
  const char *v = std::getenv(variable);
  if (!v || !*v || std::strcmp(v, first) == 0)
    return false;
  if (std::strcmp(v, second) == 0)
    return true;
  mpcrt::errors::reportError(
      "%s is '%s': it takes '%s' (%s, the default) or '%s' "
      "(%s)\n",
      variable, v, first, firstMeans, second, secondMeans);
  std::exit(1);
}

float *scratchF32(int64_t elements) {
  static float *buffer = nullptr;
  static int64_t capacity = 0;
  // Memory cannot be allocated while a graph is captured: the capture
  // fails (the first, eager step has sized the buffer).
  if (capacity < elements &&
      captureFailure("the f32 scratch buffer would grow during capture"))
    return buffer;
  if (capacity < elements) {
    bool freed = releaseGrown(buffer);
    MPCRT_CUDA_CHECK(cudaMalloc(&buffer, elements * sizeof(float)));
    countDeviceBytes((elements - (freed ? capacity : 0)) *
                     int64_t(sizeof(float)));
    capacity = elements;
  }
  return buffer;
}

unsigned *arrivalCounters(int64_t count) {
  static unsigned *buffer = nullptr;
  static int64_t capacity = 0;
  if (capacity < count &&
      captureFailure("the reductions' arrival counters would grow during "
                     "capture"))
    return buffer;
  if (capacity < count) {
    // Every counter is 0 between launches (the last block to arrive sets
    // it back: arrivesLast), so the new ones start from 0 as the old ones
    // were.
    bool freed = releaseGrown(buffer);
    MPCRT_CUDA_CHECK(cudaMalloc(&buffer, count * sizeof(unsigned)));
    MPCRT_CUDA_CHECK(
        cudaMemsetAsync(buffer, 0, count * sizeof(unsigned), stream()));
    countDeviceBytes((count - (freed ? capacity : 0)) *
                     int64_t(sizeof(unsigned)));
    capacity = count;
  }
  return buffer;
}

namespace {
int64_t heldBytes = 0;
/// The size of every buffer allocate() handed out, for release().
std::unordered_map<void *, int64_t> &bufferSizes() {
  static auto *sizes = new std::unordered_map<void *, int64_t>();
  return *sizes;
}
} // namespace

int64_t deviceBytes() { return heldBytes; }
void countDeviceBytes(int64_t delta) { heldBytes += delta; }

DeviceErrors *deviceErrors() {
  static DeviceErrors *errors = [] {
    DeviceErrors *created;
    MPCRT_CUDA_CHECK(cudaMalloc(&created, sizeof(DeviceErrors)));
    countDeviceBytes(sizeof(DeviceErrors));
    // cudaMemset runs on the legacy default stream, which the backend's
    // (non-blocking) stream does not wait for: wait here, once.
    MPCRT_CUDA_CHECK(cudaMemset(created, 0, sizeof(DeviceErrors)));
    MPCRT_CUDA_CHECK(cudaDeviceSynchronize());
    return created;
  }();
  return errors;
}

IndexErrors takeDeviceErrors() {
  // On the backend's (non-blocking) stream, after the kernels that may have
  // recorded something: the legacy default stream would not wait for them.
  DeviceErrors host{};
  MPCRT_CUDA_CHECK(cudaMemcpyAsync(&host, deviceErrors(), sizeof(host),
                                   cudaMemcpyDeviceToHost, stream()));
  synchronize();
  if (host.index || host.label)
    MPCRT_CUDA_CHECK(
        cudaMemsetAsync(deviceErrors(), 0, sizeof(DeviceErrors), stream()));
  IndexErrors errors;
  errors.index = static_cast<int64_t>(host.index);
  errors.label = static_cast<int64_t>(host.label);
  return errors;
}

namespace {
cudaGraphExec_t recorded[MPCRT_GRAPH_SLOTS] = {};

/// setProgrammaticEdges: 1 on, 0 off, -1 not read yet.
int programmaticEdges = -1;
ProgrammaticEdges lastEdges;

bool programmaticEdgesOn() {
  if (programmaticEdges < 0)
    programmaticEdges = environmentChoice(
        "MPC_CUDA_PDL", "off",
        "a step graph's kernels each wait for the one before to finish "
        "before they launch",
        "on",
        "the backend's kernels launch while the kernel before them runs "
        "and wait in their prologue: Programmatic Dependent Launch");
  return programmaticEdges;
}

#ifndef MPC_CUDA_EMULATION
/// Whether the kernel node `node` runs one of the backend's own kernels
/// (mpcrt::cuda's, each beginning with MPCRT_KERNEL_PROLOGUE): the
/// runtime names the kernels it registered; a library's kernel (cuBLASLt,
/// cuDNN) it does not.
bool ownKernel(cudaGraphNode_t node) {
  cudaKernelNodeParams params = {};
  const char *name = nullptr;
  bool own = cudaGraphKernelNodeGetParams(node, &params) == cudaSuccess &&
             params.func &&
             cudaFuncGetName(&name, params.func) == cudaSuccess && name &&
             std::strstr(name, "5mpcrt4cuda");
  cudaGetLastError(); // a library's function is not an error to keep
  return own;
}

/// Makes each full-completion edge from a kernel node to a node of the
/// backend's own kernels programmatic (the upstream's programmatic port:
/// the downstream may launch once every block of the upstream has begun
/// its prologue's trigger or exited, and waits in its own prologue for the
/// upstream to complete).
ProgrammaticEdges makeEdgesProgrammatic(cudaGraph_t graph) {
  ProgrammaticEdges counts;
  size_t count = 0;
  MPCRT_CUDA_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
  std::vector<cudaGraphNode_t> from(count), to(count);
  std::vector<cudaGraphEdgeData> data(count);
  if (count)
    MPCRT_CUDA_CHECK(
        cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count));
  for (size_t e = 0; e < count; ++e) {
    cudaGraphNodeType fromType;
    MPCRT_CUDA_CHECK(cudaGraphNodeGetType(from[e], &fromType));
    cudaGraphNodeType toType;
    MPCRT_CUDA_CHECK(cudaGraphNodeGetType(to[e], &toType));
    if (fromType != cudaGraphNodeTypeKernel ||
        toType != cudaGraphNodeTypeKernel)
      continue;
    ++counts.betweenKernels;
    if (data[e].type != cudaGraphDependencyTypeDefault ||
        data[e].from_port != cudaGraphKernelNodePortDefault ||
        !ownKernel(to[e]))
      continue;
    cudaGraphEdgeData programmatic = {};
    programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
    programmatic.type = cudaGraphDependencyTypeProgrammatic;
    MPCRT_CUDA_CHECK(
        cudaGraphRemoveDependencies(graph, &from[e], &to[e], &data[e], 1));
    cudaError_t status =
        cudaGraphAddDependencies(graph, &from[e], &to[e], &programmatic, 1);
    if (status != cudaSuccess) {
      // A driver without programmatic edges: the edge as it was, and the
      // rest of the graph as captured.
      (void)cudaGetLastError();
      MPCRT_CUDA_CHECK(
          cudaGraphAddDependencies(graph, &from[e], &to[e], &data[e], 1));
      counts.refusal = cudaGetErrorString(status);
      break;
    }
    ++counts.made;
  }
  return counts;
}
#endif

/// The slot's recording, or a message and exit for a slot out of range.
cudaGraphExec_t &recordedIn(int slot) {
  if (slot < 0 || slot >= MPCRT_GRAPH_SLOTS) {
    mpcrt::errors::reportError("CUDA: no step graph slot %d\n", slot);
    std::exit(1);
  }
  return recorded[slot];
}
} // namespace

void graphBegin() {
  if (opTimes()) {
    mpcrt::errors::reportError("MPC_CUDA_OP_TIMES times each call of an "
                               "eager step: run with --no-graph\n");
    std::exit(1);
  }
  MPCRT_CUDA_CHECK(
      cudaStreamBeginCapture(rawStream(), cudaStreamCaptureModeThreadLocal));
  capturing = true;
  captureError.clear();
}

bool graphEnd(int slot) {
  cudaGraphExec_t &slotGraph = recordedIn(slot);
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(rawStream(), &graph);
  capturing = false;
  if (status != cudaSuccess && captureError.empty())
    captureError =
        std::string("cudaStreamEndCapture: ") + cudaGetErrorString(status);
  if (captureError.empty() && programmaticEdgesOn()) {
#ifndef MPC_CUDA_EMULATION
    lastEdges = makeEdgesProgrammatic(graph);
    static bool noted = false;
    if (!noted && lastEdges.refusal)
      mpcrt::errors::reportWarning(
          "step graph: the CUDA runtime refused a programmatic dependency "
          "(%s); %lld were made, the rest kept as captured\n",
          lastEdges.refusal, static_cast<long long>(lastEdges.made));
    else if (!noted)
      mpcrt::errors::reportNote(
          "step graph: %lld of its %lld dependencies between kernels made "
          "programmatic (Programmatic Dependent Launch)\n",
          static_cast<long long>(lastEdges.made),
          static_cast<long long>(lastEdges.betweenKernels));
    noted = true;
#endif
  }
  if (captureError.empty()) {
    cudaGraphExec_t exec = nullptr;
    status = cudaGraphInstantiate(&exec, graph, 0);
    if (status == cudaSuccess) {
      if (slotGraph)
        MPCRT_CUDA_CHECK(cudaGraphExecDestroy(slotGraph));
      slotGraph = exec;
      graphRecorded = true;
      MPCRT_CUDA_CHECK(cudaGraphDestroy(graph));
      return true;
    }
    captureError =
        std::string("cudaGraphInstantiate: ") + cudaGetErrorString(status);
  }
  // Discard what was captured, clear the error, go on eagerly.
  if (graph)
    cudaGraphDestroy(graph);
  cudaGetLastError();
  static bool warned = false;
  if (!warned)
    mpcrt::errors::reportWarning("CUDA Graph capture of the step failed (%s); "
                                 "steps run eagerly\n",
                                 captureError.c_str());
  warned = true;
  captureError.clear();
  return false;
}

bool setProgrammaticEdges(bool on) {
  bool before = programmaticEdgesOn();
  programmaticEdges = on;
  return before;
}

ProgrammaticEdges lastProgrammaticEdges() { return lastEdges; }

void graphLaunch(int slot) {
  cudaGraphExec_t exec = recordedIn(slot);
  if (!exec) {
    mpcrt::errors::reportError("CUDA: no step graph was recorded in slot %d\n",
                               slot);
    std::exit(1);
  }
  MPCRT_CUDA_CHECK(cudaGraphLaunch(exec, stream()));
}

void synchronize() {
  MPCRT_CUDA_CHECK(cudaStreamSynchronize(rawStream()));
  // Op times: a begin whose work no mark ended (a read of the device's
  // error flags) would time the next call from before the host's work.
  if (OpTimes *t = opTimes(); t && t->begin) {
    MPCRT_CUDA_CHECK(cudaEventDestroy(t->begin));
    t->begin = nullptr;
  }
}

void *allocate(int64_t bytes) {
  initialize();
  void *pointer = nullptr;
  int64_t size = bytes > 0 ? bytes : 1;
  MPCRT_CUDA_CHECK(cudaMalloc(&pointer, static_cast<size_t>(size)));
  bufferSizes()[pointer] = size;
  countDeviceBytes(size);
  return pointer;
}

void release(void *pointer) {
  auto it = bufferSizes().find(pointer);
  if (it != bufferSizes().end()) {
    countDeviceBytes(-it->second);
    bufferSizes().erase(it);
  }
  MPCRT_CUDA_CHECK(cudaFree(pointer));
}

void copyToDevice(void *device, const void *host, int64_t bytes) {
  // From pageable memory the call returns once the source is staged: the
  // host buffer may be reused, and the stream is not waited for.
  MPCRT_CUDA_CHECK(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes),
                                   cudaMemcpyHostToDevice, stream()));
}

namespace {

/// One input buffer's upload pipeline (see uploadInput).
struct InputUpload {
  int64_t bytes = 0;
  void *staging = nullptr;
  void *pinned[2] = {nullptr, nullptr};
  cudaEvent_t uploaded[2] = {nullptr, nullptr}; // the copy from pinned[k]
  cudaEvent_t taken = nullptr; // the staged bytes moved into the buffer
  int next = 0;                // the pinned buffer the next batch fills
  bool pending = false;        // staged, not yet taken
};

std::unordered_map<void *, InputUpload> &inputUploads() {
  static auto *uploads = new std::unordered_map<void *, InputUpload>();
  return *uploads;
}

cudaStream_t copyStream() {
  static cudaStream_t s = [] {
    cudaStream_t created;
    MPCRT_CUDA_CHECK(
        cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return s;
}

cudaEvent_t newEvent() {
  cudaEvent_t e;
  MPCRT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

} // namespace

void uploadInput(void *device, const void *host, int64_t bytes) {
  if (bytes <= 0)
    return;
  InputUpload &u = inputUploads()[device];
  if (u.bytes != bytes) { // first use (an input buffer keeps its size)
    if (u.bytes) {        // not a step's input after all: a plain upload
      u.pending = false;
      return copyToDevice(device, host, bytes);
    }
    u.bytes = bytes;
    MPCRT_CUDA_CHECK(cudaMalloc(&u.staging, static_cast<size_t>(bytes)));
    countDeviceBytes(bytes);
    for (int k = 0; k < 2; ++k) {
      MPCRT_CUDA_CHECK(cudaHostAlloc(&u.pinned[k], static_cast<size_t>(bytes),
                                     cudaHostAllocDefault));
      u.uploaded[k] = newEvent();
    }
    u.taken = newEvent();
    MPCRT_CUDA_CHECK(cudaEventRecord(u.taken, stream()));
  }
  int k = u.next;
  u.next = 1 - k;
  // The copy that last read pinned[k] (two batches ago) has finished.
  MPCRT_CUDA_CHECK(cudaEventSynchronize(u.uploaded[k]));
  std::memcpy(u.pinned[k], host, static_cast<size_t>(bytes));
  // The staging buffer is free once the previous batch was taken.
  MPCRT_CUDA_CHECK(cudaStreamWaitEvent(copyStream(), u.taken, 0));
  MPCRT_CUDA_CHECK(cudaMemcpyAsync(u.staging, u.pinned[k],
                                   static_cast<size_t>(bytes),
                                   cudaMemcpyHostToDevice, copyStream()));
  MPCRT_CUDA_CHECK(cudaEventRecord(u.uploaded[k], copyStream()));
  u.pending = true;
}

void inputsReady() {
  for (auto &[device, u] : inputUploads()) {
    if (!u.pending)
      continue;
    // The last copy recorded uploaded[1 - next].
    MPCRT_CUDA_CHECK(cudaStreamWaitEvent(stream(), u.uploaded[1 - u.next], 0));
    MPCRT_CUDA_CHECK(cudaMemcpyAsync(device, u.staging,
                                     static_cast<size_t>(u.bytes),
                                     cudaMemcpyDeviceToDevice, stream()));
    MPCRT_CUDA_CHECK(cudaEventRecord(u.taken, stream()));
    u.pending = false;
  }
  // The wait for the batch (and the host's time between steps) is its own.
  markOp("inputs");
}

namespace {

/// Up to kGatherRows row numbers, by value (no copy to the device).
constexpr int kGatherRows = 64;
struct GatherRows {
  int64_t row[kGatherRows];
};

/// Row r of the list, element c: src row rows.row[r] to dst row r.
__global__ void gatherRowsKernel(const void *src, mpcrt_dtype from, void *dst,
                                 mpcrt_dtype to, int64_t rowElements,
                                 GatherRows rows, int count, int rawBytes) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t total = count * rowElements;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = e / rowElements, c = e % rowElements;
    int64_t in = rows.row[r] * rowElements + c;
    switch (rawBytes) {
    case 1:
      static_cast<uint8_t *>(dst)[e] = static_cast<const uint8_t *>(src)[in];
      break;
    case 2:
      static_cast<uint16_t *>(dst)[e] = static_cast<const uint16_t *>(src)[in];
      break;
    case 4:
      static_cast<uint32_t *>(dst)[e] = static_cast<const uint32_t *>(src)[in];
      break;
    case 8:
      static_cast<uint64_t *>(dst)[e] = static_cast<const uint64_t *>(src)[in];
      break;
    default: // widening (exact) or the same type
      storeAny(to, dst, e, loadAny(from, src, in));
    }
  }
}

} // namespace

void gatherRows(const void *src, mpcrt_dtype from, void *dst, mpcrt_dtype to,
                int64_t rowElements, const int64_t *rows, int64_t count,
                int32_t rawBytes) {
  if (rawBytes <= 0 && from == to)
    rawBytes = static_cast<int32_t>(bytesOf(from));
  if (rawBytes != 0 && rawBytes != 1 && rawBytes != 2 && rawBytes != 4 &&
      rawBytes != 8) {
    mpcrt::errors::reportError("CUDA backend: gather_rows of %d-byte "
                               "elements\n",
                               rawBytes);
    std::exit(1);
  }
  int64_t outRow = rowElements * (rawBytes > 0 ? rawBytes : bytesOf(to));
  for (int64_t first = 0; first < count; first += kGatherRows) {
    int n = static_cast<int>(std::min<int64_t>(kGatherRows, count - first));
    GatherRows list{};
    for (int r = 0; r < n; ++r)
      list.row[r] = rows[first + r];
    if (n * rowElements == 0)
      continue;
    gatherRowsKernel<<<blocksFor(n * rowElements), kThreads, 0, stream()>>>(
        src, from, static_cast<char *>(dst) + first * outRow, to, rowElements,
        list, n, rawBytes);
    MPCRT_CUDA_LAUNCHED("gather_rows");
  }
}

int64_t freeBytes() {
  initialize();
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess)
    return -1;
  return static_cast<int64_t>(free);
}

void copyToHost(void *host, const void *device, int64_t bytes) {
  MPCRT_CUDA_CHECK(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes),
                                   cudaMemcpyDeviceToHost, stream()));
  markOp("download");
  synchronize();
  if (OpTimes *t = opTimes())
    writeOpTimes(*t);
}

// Default direction: global initialisers copy from host constants.
// Overlapping ranges (memmove, as the reference) go through the scratch
// buffer: cudaMemcpyAsync is undefined on overlap.
void copy(void *dst, const void *src, int64_t bytes) {
  if (dst == src || bytes <= 0)
    return;
  auto at = [](const void *p) { return reinterpret_cast<uintptr_t>(p); };
  size_t n = static_cast<size_t>(bytes);
  if (at(dst) < at(src) + n && at(src) < at(dst) + n) {
    void *staging = scratchF32((bytes + 3) / 4);
    MPCRT_CUDA_CHECK(
        cudaMemcpyAsync(staging, src, n, cudaMemcpyDefault, stream()));
    src = staging;
  }
  MPCRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream()));
  markOp("copy");
}

void zero(void *dst, int64_t bytes) {
  if (bytes > 0)
    MPCRT_CUDA_CHECK(
        cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), stream()));
  markOp("zero");
}

namespace {

__global__ void fillKernel(mpcrt_dtype dtype, void *dst, int64_t count,
                           double value) {
  MPCRT_KERNEL_PROLOGUE();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    storeAny(dtype, dst, i, value);
}

/// Pair q of elements from counter {lo32(q), 0, 0, hi32(q)}, as the host's
/// mpcrt_fill_random: the same values on both backends for one seed.
__global__ void fillRandomKernel(mpcrt_dtype dtype, void *dst, int64_t count,
                                 bool normal, double a, double b,
                                 uint64_t seed) {
  MPCRT_KERNEL_PROLOGUE();
  int64_t pairs = (count + 1) / 2;
  for (int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; q < pairs;
       q += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t counter[4] = {static_cast<uint32_t>(q), 0, 0,
                                 static_cast<uint32_t>(q >> 32)};
    uint32_t w[4] = {counter[0], counter[1], counter[2], counter[3]};
    formulas::philox4x32(w, static_cast<uint32_t>(seed),
                         static_cast<uint32_t>(seed >> 32));
    double u0 = formulas::unitInterval(w[0], w[1]),
           u1 = formulas::unitInterval(w[2], w[3]);
    double v[2];
    if (normal) {
      double r = sqrt(-2.0 * log(1.0 - u0));
      v[0] = a + b * r * cos(2.0 * M_PI * u1);
      v[1] = a + b * r * sin(2.0 * M_PI * u1);
    } else {
      v[0] = a + (b - a) * u0;
      v[1] = a + (b - a) * u1;
    }
    for (int j = 0; j < 2 && 2 * q + j < count; ++j)
      storeAny(dtype, dst, 2 * q + j, v[j]);
  }
}

/// One rounding from the source's value to To, as the CPU reference: a
/// double source rounds from double, any other from its exact float.
template <typename To, typename From> __device__ To convert(From v) {
  if constexpr (std::is_same_v<From, double>) {
    if constexpr (std::is_same_v<To, __half>)
      return __double2half(v);
    else if constexpr (std::is_same_v<To, __nv_bfloat16>)
      return __double2bfloat16(v);
    else
      return static_cast<To>(v);
  } else {
    float f = Storage<From>::load(v);
    if constexpr (std::is_same_v<To, double>)
      return static_cast<double>(f);
    else
      return Storage<To>::store(f);
  }
}

/// N elements per access (N = 1 when a pointer is not aligned to N
/// elements); the last count % N one at a time.
template <typename From, typename To, int N>
__global__ void castKernel(const From *input, To *output, uint32_t count) {
  MPCRT_KERNEL_PROLOGUE();
  uint32_t stride = gridDim.x * blockDim.x,
           first = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t vectors = count / N;
  for (uint32_t v = first; v < vectors; v += stride) {
    Vec<From, N> x = reinterpret_cast<const Vec<From, N> *>(input)[v];
    Vec<To, N> y;
#pragma unroll
    for (int k = 0; k < N; ++k)
      y.v[k] = convert<To>(x.v[k]);
    reinterpret_cast<Vec<To, N> *>(output)[v] = y;
  }
  for (uint32_t i = vectors * N + first; i < count; i += stride)
    output[i] = convert<To>(input[i]);
}

/// Counts of 2^31 elements and more (beyond a 32-bit grid stride).
__global__ void castLargeKernel(mpcrt_dtype from, const void *input,
                                mpcrt_dtype to, void *output, int64_t count) {
  MPCRT_KERNEL_PROLOGUE();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    storeAny(to, output, i, loadAny(from, input, i));
}

__global__ void incrementStepKernel(int64_t *step) {
  MPCRT_KERNEL_PROLOGUE();
  ++*step;
}

__global__ void incrementI32Kernel(const int32_t *in, int32_t *out,
                                   const uint8_t *skip) {
  MPCRT_KERNEL_PROLOGUE();
  *out = skip && *skip ? *in : *in + 1;
}

__global__ void lrScheduleKernel(const int32_t *step, float *lr, LrSchedule s) {
  MPCRT_KERNEL_PROLOGUE();
  double rate = formulas::learningRate(
      *step, s.kind, s.base, s.warmup, s.total, s.minLr, s.gamma, s.stepSize,
      s.pctStart, s.divFactor, s.finalDivFactor, s.threePhase);
  *lr = static_cast<float>(rate);
}

/// mpc.cast from i32: to f32 (nearest even), then to To as from f32.
template <typename To>
__global__ void castI32Kernel(const int32_t *in, To *out, int64_t count) {
  MPCRT_KERNEL_PROLOGUE();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<To, double>)
      out[i] = static_cast<double>(in[i]);
    else
      out[i] = Storage<To>::store(static_cast<float>(in[i]));
  }
}

} // namespace

void castI32(const int32_t *input, mpcrt_dtype to, void *output,
             int64_t count) {
  if (count <= 0)
    return;
  dispatch(to, [&](auto *t) {
    using To = MPCRT_TYPE(t);
    castI32Kernel<To><<<blocksFor(count), kThreads, 0, stream()>>>(
        input, static_cast<To *>(output), count);
  });
  MPCRT_CUDA_LAUNCHED("cast_i32");
}

void fill(mpcrt_dtype dtype, void *dst, int64_t count, double value) {
  if (count <= 0)
    return;
  fillKernel<<<blocksFor(count), kThreads, 0, stream()>>>(dtype, dst, count,
                                                          value);
  MPCRT_CUDA_LAUNCHED("fill");
}

void fillRandom(mpcrt_dtype dtype, void *dst, int64_t count, bool normal,
                double a, double b, uint64_t seed) {
  if (count <= 0)
    return;
  fillRandomKernel<<<blocksFor((count + 1) / 2), kThreads, 0, stream()>>>(
      dtype, dst, count, normal, a, b, seed);
  MPCRT_CUDA_LAUNCHED("fill_random");
}

void cast(mpcrt_dtype from, const void *input, mpcrt_dtype to, void *output,
          int64_t count) {
  if (count <= 0)
    return;
  if (count >= (int64_t(1) << 31)) {
    castLargeKernel<<<blocksFor(count), kThreads, 0, stream()>>>(
        from, input, to, output, count);
  } else {
    dispatch(from, [&](auto *f) {
      dispatch(to, [&](auto *t) {
        using From = MPCRT_TYPE(f);
        using To = MPCRT_TYPE(t);
        constexpr int N =
            16 / (sizeof(From) > sizeof(To) ? sizeof(From) : sizeof(To));
        auto *in = static_cast<const From *>(input);
        auto *out = static_cast<To *>(output);
        if (alignedTo(in, N * sizeof(From)) && alignedTo(out, N * sizeof(To)))
          castKernel<From, To, N>
              <<<blocksFor((count + N - 1) / N), kThreads, 0, stream()>>>(
                  in, out, static_cast<uint32_t>(count));
        else
          castKernel<From, To, 1><<<blocksFor(count), kThreads, 0, stream()>>>(
              in, out, static_cast<uint32_t>(count));
      });
    });
  }
  MPCRT_CUDA_LAUNCHED("cast");
}

void incrementStep(int64_t *step) {
  incrementStepKernel<<<1, 1, 0, stream()>>>(step);
  MPCRT_CUDA_LAUNCHED("increment_step");
}

void incrementI32(const int32_t *in, int32_t *out, const uint8_t *skip) {
  incrementI32Kernel<<<1, 1, 0, stream()>>>(in, out, skip);
  MPCRT_CUDA_LAUNCHED("increment_i32");
}

void lrSchedule(const int32_t *step, float *lr, const LrSchedule &s) {
  lrScheduleKernel<<<1, 1, 0, stream()>>>(step, lr, s);
  MPCRT_CUDA_LAUNCHED("lr_schedule");
}

} // namespace mpcrt::cuda
