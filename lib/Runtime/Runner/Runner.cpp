//===- Runner.cpp - main() of a compiled training executable --------------===//
//
// Feeds the compiled step (mpc_step) batches of NumPy data, runs the steps,
// logs metrics, writes and restores checkpoints. Everything the model needs
// to know comes from the descriptor the compiler embedded (mpc_model).
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include "mpc/Runtime/Report.h"
#include "mpc/Runtime/mpcrt.h"
#include "mpc/Support/Files.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

extern "C" {
extern const char mpc_model[];
void mpc_step(void *arena, void *state, void *const *inputs,
              void *const *outputs);
void mpc_accumulate(void *arena, void *state, void *const *inputs,
                    void *const *outputs);
void mpc_eval(void *arena, void *state, void *const *inputs,
              void *const *outputs);
void mpc_init_globals(void *state);
void mpc_refresh_copies(void *state);
}

using namespace mpc::runner;
namespace cl = llvm::cl;

static cl::OptionCategory category("Training options");
static cl::opt<std::string> dataPath(
    "data",
    cl::desc("Training data: an .npz archive or a directory of .npy files, "
             "one array per step input, named after it, samples along the "
             "leading dimension"),
    cl::value_desc("PATH"), cl::cat(category));
static cl::opt<int64_t>
    steps("steps", cl::desc("Train until this step (counting resumed steps)"),
          cl::init(-1), cl::cat(category));
static cl::opt<int64_t>
    epochs("epochs",
           cl::desc("Train until this many passes over the data (with "
                    "--steps: until whichever comes first)"),
           cl::init(-1), cl::cat(category));
static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("Checked against the batch size the step was compiled for"),
    cl::init(-1), cl::cat(category));
static cl::opt<uint64_t>
    seed("seed", cl::desc("Seed of the per-epoch shuffle (default 0)"),
         cl::init(0), cl::cat(category));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Take the samples in file order"),
                               cl::init(false), cl::cat(category));
static cl::opt<std::string> checkpointPath(
    "checkpoint",
    cl::desc("Write every global to this safetensors file at the end (and "
             "every --checkpoint-every steps), atomically"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Steps between checkpoints (0: at the end)"),
                    cl::init(0), cl::cat(category));
static cl::opt<std::string>
    resumePath("resume",
               cl::desc("Continue from a checkpoint: every global and the "
                        "step count"),
               cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> initPath(
    "init",
    cl::desc("Initial values for the globals a safetensors file holds (the "
             "others keep their initializers)"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("Append one JSON line per logged step to FILE"),
                cl::value_desc("FILE"), cl::cat(category));
static cl::opt<int64_t> logEvery("log-every",
                                 cl::desc("Steps between logged steps"),
                                 cl::init(10), cl::cat(category));
static cl::opt<bool> printMemory(
    "print-memory",
    cl::desc("Print the bytes allocated (arena, state, batches) as JSON and "
             "exit"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> stopOnNonFinite(
    "stop-on-nonfinite",
    cl::desc("Stop with an error at the first logged step whose loss is "
             "NaN or infinite and was not skipped by loss scaling"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> valDataPath(
    "val-data",
    cl::desc("Validation data (as --data): evaluated at the end of training "
             "and every --eval-every steps, in file order, whole batches"),
    cl::value_desc("PATH"), cl::cat(category));
static cl::opt<int64_t> evalEvery(
    "eval-every",
    cl::desc("Steps between evaluations on --val-data (0: at the end only)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool>
    evalOnly("eval-only",
             cl::desc("Evaluate the state (--resume or --init, else the "
                      "initial weights) on --val-data and exit"),
             cl::init(false), cl::cat(category));
static cl::opt<std::string> numericsReport(
    "numerics-report",
    cl::desc("With a step compiled with --check-numerics: write each checked "
             "op's range over the run to FILE (JSON; '-': a table on "
             "stdout) with the ops to keep in f32"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<int64_t> scaleStuckSteps(
    "scale-stuck-steps",
    cl::desc("Warn when the loss scale has sat at its min-scale for this "
             "many steps (0: never; default 100)"),
    cl::init(100), cl::cat(category));
static cl::opt<int64_t> scaleBackoffEvery(
    "scale-backoff-every",
    cl::desc("Warn when the loss scale backs off more often than every this "
             "many steps, over the last 4 times as many (0: never; default "
             "50)"),
    cl::init(50), cl::cat(category));
static cl::opt<std::string> dataOnDevice(
    "data-on-device", cl::ValueOptional,
    cl::desc("Keep the data (--data, --val-data) in the backend's memory: "
             "f32/f64 arrays as f16 (=f16, the default) or bf16 (=bf16), "
             "the others as they are; each batch is gathered and widened "
             "to the step's input type there, not uploaded"),
    cl::value_desc("f16|bf16"), cl::cat(category));
static cl::opt<bool> noGraph(
    "no-graph",
    cl::desc("Run every step eagerly instead of replaying a recorded one "
             "(CUDA Graph; the CPU backend always runs eagerly)"),
    cl::init(false), cl::cat(category));

static cl::opt<int> threads(
    "threads",
    cl::desc("Host threads of the CPU backend's kernels and OpenBLAS "
             "(default: OMP_NUM_THREADS when set, else every core; results "
             "do not depend on it)"),
    cl::init(0), cl::cat(category));

/// This process's place in a data-parallel job (one rank of one without).
static int worldRank = 0, worldSize = 1;

/// Says what went wrong; in a job of several ranks, names the rank and ends
/// them all (a rank that stops alone would leave the others waiting).
static int fail(const llvm::Twine &message) {
  // One write: the ranks of a job share the stream, and a line written in
  // pieces interleaves with theirs.
  std::string line = mpcrt::errors::prefix("error").text +
                     (worldSize > 1 ? "rank " + std::to_string(worldRank) + ": "
                                    : std::string()) +
                     message.str() + "\n";
  llvm::errs().write(line.data(), line.size());
  if (worldSize > 1) {
    llvm::outs().flush();
    llvm::errs().flush();
    mpcrt_comm_abort(1);
  }
  return 1;
}

static int fail(llvm::Error err) {
  return fail(llvm::toString(std::move(err)));
}

/// Memory of the backend (device memory on CUDA), zeroed.
struct DeviceBuffer {
  explicit DeviceBuffer(int64_t bytes)
      : data(static_cast<char *>(mpcrt_buffer_alloc(bytes))) {}
  ~DeviceBuffer() { mpcrt_buffer_free(data); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  char *data;
};

/// --arena-guards: the bytes after each buffer of the arena (by function)
/// and after each global of the state that nothing may write. They are
/// filled with 0xFF and read back after each call; a changed byte stops
/// the run, naming what the bytes follow. Before each call the whole arena
/// is filled (so a kernel reading bytes nothing wrote in this call reads
/// NaN in every float type, -1 as an integer); the state's guards once,
/// before the initialisers.
class Guards {
public:
  Guards(const Model &model, char *arena, char *state)
      : arena(arena),
        arenaBytes(model.arenaGuards.empty() ? 0 : model.arenaBytes) {
    for (const ArenaGuard &g : model.arenaGuards)
      regions.push_back({arena + g.offset, g.bytes, g.slot,
                         "a buffer of the arena",
                         "the result of " + g.op + " at " + g.loc});
    if (model.stateGuard > 0)
      for (const TensorInfo &g : model.globals)
        if (g.offset + g.bytes <= model.stateBytes - model.stateGuard)
          regions.push_back({state + g.offset + g.bytes, model.stateGuard,
                             kState, "a global of the state",
                             "global @" + g.name});
    int64_t widest = std::min<int64_t>(arenaBytes, kChunk);
    for (const Region &r : regions)
      widest = std::max(widest, r.bytes);
    pattern.assign(widest, 0xFF);
    read.resize(widest);
    fill(kState);
  }
  /// Before a call of the function in `slot`: fills the arena (the
  /// function's guards with it); kState: the state's guards.
  void fill(int slot) {
    if (slot != kState) {
      for (int64_t at = 0; at < arenaBytes; at += kChunk)
        mpcrt_upload(arena + at, pattern.data(),
                     std::min(kChunk, arenaBytes - at));
      return;
    }
    for (const Region &r : regions)
      if (r.slot == slot)
        mpcrt_upload(r.at, pattern.data(), r.bytes);
  }
  /// Checks the guards of `slot` and the state's after `when`.
  void check(int slot, const llvm::Twine &when) {
    for (const Region &r : regions) {
      if (r.slot != slot && r.slot != kState)
        continue;
      mpcrt_download(read.data(), r.at, r.bytes);
      auto end = read.begin() + r.bytes;
      auto changed = std::find_if(read.begin(), end,
                                  [](unsigned char c) { return c != 0xFF; });
      if (changed == end)
        continue;
      int64_t count = std::count_if(changed, end,
                                    [](unsigned char c) { return c != 0xFF; });
      llvm::errs() << mpcrt::errors::prefix("error").text << when
                   << ": a kernel wrote past " << r.where << ": " << count
                   << " of the " << r.bytes << " guard bytes after " << r.what
                   << " changed, the first at byte " << (changed - read.begin())
                   << " after its end\n";
      std::exit(1);
    }
  }
  static constexpr int kState = -1;

private:
  static constexpr int64_t kChunk = int64_t(16) << 20;
  char *arena;
  int64_t arenaBytes; // 0 without arena guards: nothing is filled
  struct Region {
    char *at;
    int64_t bytes;
    int slot; // as Entry::slot, or kState
    std::string where, what;
  };
  std::vector<Region> regions;
  std::vector<unsigned char> pattern, read;
};

/// 256-byte aligned, zeroed host storage; the program stops with a message
/// when there is not enough memory (nothing is ever written to a failed
/// allocation).
struct Buffer {
  explicit Buffer(int64_t bytes) : data(allocate(bytes)) {
    std::memset(data, 0, static_cast<size_t>(bytes));
  }
  static char *allocate(int64_t bytes) {
    void *p = nullptr;
    if (bytes >= 0 && bytes <= (int64_t(1) << 48))
      p = std::aligned_alloc(256, static_cast<size_t>(std::max<int64_t>(
                                      256, (bytes + 255) / 256 * 256)));
    if (!p) {
      llvm::errs() << mpcrt::errors::prefix("error").text << "cannot allocate "
                   << bytes << " bytes of host memory\n";
      std::exit(1);
    }
    return static_cast<char *>(p);
  }
  ~Buffer() { std::free(data); }
  char *data;
};

/// A number for the metrics: JSON has no NaN or infinity, so those are
/// the strings "nan", "inf" and "-inf" (a diverged run's metrics stay valid
/// JSON).
static llvm::json::Value jsonNumber(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

static double readScalar(const TensorInfo &t, const char *p) {
  if (t.dtype == "f32") {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (t.dtype == "f64") {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return t.dtype == "f16" ? mpcrt_f16_to_f32(bits) : mpcrt_bf16_to_f32(bits);
}

/// Element `i` of a float global as a double, and back (rounded to
/// nearest even).
static double elementAt(const TensorInfo &t, const char *p, int64_t i) {
  return readScalar(t, p + i * t.elementBytes());
}
static void setElement(const TensorInfo &t, char *p, int64_t i, double v) {
  char *at = p + i * t.elementBytes();
  if (t.dtype == "f64") {
    std::memcpy(at, &v, 8);
  } else if (t.dtype == "f32") {
    float f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else {
    uint16_t bits = t.dtype == "f16" ? mpcrt_f32_to_f16(static_cast<float>(v))
                                     : mpcrt_f32_to_bf16(static_cast<float>(v));
    std::memcpy(at, &bits, 2);
  }
}

/// FNV-1a over bytes: a fingerprint of the state, compared across ranks.
static uint64_t fingerprint(const char *p, int64_t bytes, uint64_t h) {
  for (int64_t i = 0; i < bytes; ++i)
    h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ULL;
  return h;
}

/// splitmix64: the shuffle's generator.
static uint64_t mix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static std::vector<int64_t> permutation(int64_t n, uint64_t epoch) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  if (noShuffle)
    return p;
  uint64_t state = seed ^ (epoch * 0xd1b54a32d192ed03ULL);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(p[i], p[mix(state) % uint64_t(i + 1)]);
  return p;
}

/// f16's largest finite value.
constexpr double kF16Max = 65504.0;

/// The numerics report: each checked op's range over the run, and the ops
/// to keep in f32 (those that overflowed, or came within a factor of 2 of
/// f16's range, in f16).
static llvm::Error writeNumericsReport(const std::string &path,
                                       const Model &model, const float *amax,
                                       const int64_t *counts, bool terminal) {
  llvm::json::Array ops;
  std::vector<std::string> keep; // op kinds, in order of first appearance
  llvm::json::Array keepOps;
  struct Row {
    std::string op, loc, phase, dtype;
    double maxAbs, headroom, belowNormal, belowSubnormal;
    int64_t nonfinite;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < model.numericsOps.size(); ++i) {
    const NumericsOp &op = model.numericsOps[i];
    const int64_t *c = counts + 4 * i;
    double n = static_cast<double>(std::max<int64_t>(c[3], 1));
    Row r{op.op,
          op.loc,
          op.phase,
          op.dtype,
          amax[2 * i + 1],
          amax[2 * i + 1] > 0 ? kF16Max / amax[2 * i + 1] : INFINITY,
          c[1] / n,
          c[2] / n,
          c[0]};
    rows.push_back(r);
    ops.push_back(llvm::json::Object{{"index", static_cast<int64_t>(i)},
                                     {"op", op.op},
                                     {"location", op.loc},
                                     {"phase", op.phase},
                                     {"function", op.function},
                                     {"dtype", op.dtype},
                                     {"max_abs", jsonNumber(r.maxAbs)},
                                     {"f16_headroom", jsonNumber(r.headroom)},
                                     {"below_f16_normal", r.belowNormal},
                                     {"below_f16_subnormal", r.belowSubnormal},
                                     {"nonfinite_values", r.nonfinite},
                                     {"values", c[3]}});
    bool lowp = op.dtype == "f16";
    bool close = r.nonfinite > 0 || r.maxAbs * 2 > kF16Max;
    if (lowp && close && op.op.rfind("mpc.", 0) == 0 && op.op != "mpc.cast") {
      if (std::find(keep.begin(), keep.end(), op.op) == keep.end())
        keep.push_back(op.op);
      keepOps.push_back(llvm::json::Object{{"op", op.op},
                                           {"location", op.loc},
                                           {"phase", op.phase},
                                           {"max_abs", jsonNumber(r.maxAbs)},
                                           {"nonfinite_values", r.nonfinite}});
    }
  }
  std::string option;
  for (const std::string &k : keep)
    option += (option.empty() ? "" : ",") + k;
  if (!option.empty())
    option = "--mpc-assign-precision=\"fp32-ops=" + option + "\"";

  if (path == "-" && terminal) {
    llvm::outs() << llvm::format("%-5s %-28s %-10s %-5s %12s %10s %9s %9s %s\n",
                                 "#", "op", "phase", "type", "max |x|",
                                 "headroom", "<normal", "<subnorm", "location");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row &r = rows[i];
      llvm::outs() << llvm::format(
          "%-5zu %-28s %-10s %-5s %12.4g %10.3g "
          "%8.2f%% %8.2f%% %s%s\n",
          i, r.op.c_str(), r.phase.c_str(), r.dtype.c_str(), r.maxAbs,
          r.headroom, 100 * r.belowNormal, 100 * r.belowSubnormal,
          r.loc.c_str(), r.nonfinite ? "  NON-FINITE" : "");
    }
    if (!option.empty())
      llvm::outs() << "keep in f32 (overflowed, or within a factor of 2 of "
                      "f16's range): "
                   << option << "\n";
    return llvm::Error::success();
  }
  llvm::json::Object report{{"ops", std::move(ops)},
                            {"keep_in_f32", std::move(keepOps)}};
  if (!option.empty())
    report["recommendation"] = option;
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return llvm::createStringError(path + ": " + ec.message());
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
  out.close();
  if (std::string why = mpc::files::writeError(out); !why.empty())
    return llvm::createStringError(path + ": cannot write the report: " + why);
  return llvm::Error::success();
}

/// A dataset kept in the backend's memory (--data-on-device): per step
/// input, its buffer, the type it is stored as and the input's (or, for
/// integer data, the bytes of an element), and the elements of a sample.
struct ResidentData {
  std::vector<void *> buffers;
  std::vector<mpcrt_dtype> stored, type;
  std::vector<int32_t> rawBytes;
  /// Elements of a sample; bytes of an element in the data and stored.
  std::vector<int64_t> sampleElements, hostBytes, storedBytes;
  ~ResidentData() {
    for (void *b : buffers)
      mpcrt_buffer_free(b);
  }
};

/// The float type of an IR dtype name, if it is one.
static std::optional<mpcrt_dtype> floatType(llvm::StringRef dtype) {
  return llvm::StringSwitch<std::optional<mpcrt_dtype>>(dtype)
      .Case("f16", MPCRT_F16)
      .Case("bf16", MPCRT_BF16)
      .Case("f32", MPCRT_F32)
      .Case("f64", MPCRT_F64)
      .Default(std::nullopt);
}

/// The layout of `sources` (samples each) in the backend's memory, 32/64-bit
/// floats as `narrow`: per input the stored type, raw element bytes, and
/// the bytes in all.
static int64_t planResident(const Model &model, int64_t batch,
                            const std::vector<const Array *> &sources,
                            int64_t samples, mpcrt_dtype narrow,
                            ResidentData &data) {
  int64_t total = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const TensorInfo &in = model.inputs[i];
    int64_t elements = 1;
    for (size_t d = 1; d < in.shape.size(); ++d)
      elements *= in.shape[d];
    int64_t bytes = elements ? in.bytes / (batch * elements) : 0;
    std::optional<mpcrt_dtype> type = floatType(in.dtype);
    mpcrt_dtype stored = type && (*type == MPCRT_F32 || *type == MPCRT_F64)
                             ? narrow
                             : type.value_or(MPCRT_F32);
    int64_t storedBytes = !type                 ? bytes
                          : stored == MPCRT_F64 ? 8
                          : stored == MPCRT_F32 ? 4
                                                : 2;
    data.type.push_back(type.value_or(MPCRT_F32));
    data.stored.push_back(stored);
    data.rawBytes.push_back(type ? 0 : static_cast<int32_t>(bytes));
    data.sampleElements.push_back(elements);
    data.hostBytes.push_back(bytes);
    data.storedBytes.push_back(storedBytes);
    total += samples * elements * storedBytes;
  }
  return total;
}

/// Copies `sources` into the buffers planResident laid out, converting
/// through a staging buffer of at most 64 MiB.
static void makeResident(const std::vector<const Array *> &sources,
                         int64_t samples, ResidentData &data) {
  const int64_t stagingBytes = int64_t(64) << 20;
  void *staging = nullptr;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::vector<char> &host = sources[i]->data;
    int64_t elements = samples * data.sampleElements[i];
    int64_t hostElement = data.hostBytes[i],
            storedElement = data.storedBytes[i];
    bool same = data.rawBytes[i] > 0 || data.stored[i] == data.type[i];
    void *buffer =
        mpcrt_buffer_alloc(std::max<int64_t>(1, elements * storedElement));
    data.buffers.push_back(buffer);
    if (same) {
      mpcrt_upload(buffer, host.data(), elements * hostElement);
      continue;
    }
    if (!staging)
      staging = mpcrt_buffer_alloc(stagingBytes);
    int64_t chunk = stagingBytes / hostElement;
    for (int64_t first = 0; first < elements; first += chunk) {
      int64_t n = std::min(chunk, elements - first);
      mpcrt_upload(staging, host.data() + first * hostElement, n * hostElement);
      mpcrt_cast(data.type[i], staging, data.stored[i],
                 static_cast<char *>(buffer) + first * storedElement, n);
    }
  }
  if (staging) {
    char done;
    mpcrt_download(&done, staging, 1); // the casts have read it
    mpcrt_buffer_free(staging);
  }
}

/// Reads `path` and finds the array of each step input: same dtype, same
/// sample shape, the same number of samples in all.
static llvm::Error loadData(const std::string &path, const Model &model,
                            std::vector<std::pair<std::string, Array>> &arrays,
                            std::vector<const Array *> &sources,
                            int64_t &samples) {
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError(path + ": " + why);
  };
  if (llvm::Error err = readArrays(path, arrays))
    return err;
  samples = -1;
  for (const TensorInfo &in : model.inputs) {
    Array *found = nullptr;
    for (auto &[name, array] : arrays)
      if (name == in.name)
        found = &array;
    if (!found)
      return bad("no array '" + in.name + "' for the step input of that name");
    std::vector<int64_t> sampleShape(in.shape.begin() + 1, in.shape.end());
    // 64-bit integers (numpy's default, PyTorch's class labels) for a
    // 32-bit input: narrowed where every value fits, else refused naming
    // the first that does not.
    if (found->dtype == "i64" && in.dtype == "i32") {
      size_t count = found->data.size() / sizeof(int64_t);
      std::vector<char> narrowed(count * sizeof(int32_t));
      for (size_t i = 0; i < count; ++i) {
        int64_t v;
        std::memcpy(&v, found->data.data() + i * sizeof(v), sizeof(v));
        if (v < INT32_MIN || v > INT32_MAX)
          return bad("array '" + in.name + "' (i64) holds " + llvm::Twine(v) +
                     " at element " + llvm::Twine(int64_t(i)) +
                     ", beyond the step input's i32");
        int32_t w = static_cast<int32_t>(v);
        std::memcpy(narrowed.data() + i * sizeof(w), &w, sizeof(w));
      }
      found->data = std::move(narrowed);
      found->dtype = "i32";
    }
    if (found->dtype != in.dtype)
      return bad("array '" + in.name + "' has dtype " + found->dtype +
                 ", the step input is " + in.dtype);
    if (found->shape.empty() ||
        std::vector<int64_t>(found->shape.begin() + 1, found->shape.end()) !=
            sampleShape) {
      std::string want = "[N";
      for (int64_t d : sampleShape)
        want += ", " + std::to_string(d);
      return bad("array '" + in.name +
                 "' has the wrong shape (samples must be " + want + "])");
    }
    if (samples >= 0 && found->shape[0] != samples)
      return bad("arrays hold different numbers of samples (" +
                 llvm::Twine(samples) + " and " + llvm::Twine(found->shape[0]) +
                 " in '" + in.name + "')");
    samples = found->shape[0];
    sources.push_back(found);
  }
  return llvm::Error::success();
}

static int train(int argc, char **argv);

/// An error where --checkpoint, --metrics or --numerics-report names the
/// file of an input (--data, --val-data, --init, --resume: but --resume
/// and --checkpoint may name one file, a run continued in place) or of
/// another output.
static llvm::Error checkOutputsApart() {
  const std::pair<const char *, const cl::opt<std::string> *> outputs[] = {
      {"--checkpoint", &checkpointPath},
      {"--metrics", &metricsPath},
      {"--numerics-report", &numericsReport}};
  const std::pair<const char *, const cl::opt<std::string> *> inputs[] = {
      {"--data", &dataPath},
      {"--val-data", &valDataPath},
      {"--init", &initPath},
      {"--resume", &resumePath}};
  for (size_t i = 0; i < std::size(outputs); ++i) {
    const auto &[name, path] = outputs[i];
    if (path->empty() || *path == "-")
      continue;
    for (const auto &[input, from] : inputs)
      if (!from->empty() && !(path == &checkpointPath && from == &resumePath) &&
          mpc::files::sameFile(*path, *from))
        return llvm::createStringError(
            llvm::Twine(name) + " " + *path + " is the file of " + input +
            ": the run would write over it; name another file");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].second->empty() &&
          mpc::files::sameFile(*path, *outputs[j].second))
        return llvm::createStringError(llvm::Twine(name) + " " + *path +
                                       " is also " + outputs[j].first +
                                       "'s file; name another file");
  }
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  mpcrt::errors::setProgramName(argc > 0 ? argv[0] : "train");
  mpc::files::reportFatalErrorsAs(mpcrt::errors::programName());
  int status = train(argc, argv);
  // The progress lines reached standard output, or an error: a failed
  // stream aborts the process when it closes ("IO failure on output
  // stream").
  if (std::string why = mpc::files::writeError(llvm::outs()); !why.empty()) {
    llvm::errs() << mpcrt::errors::prefix("error").text
                 << "standard output: " << why << "\n";
    return 1;
  }
  return status;
}

static int train(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "A training executable compiled by mpc-compile.\n\n"
      "  train --data train.npz --steps 1000 --checkpoint ckpt.safetensors\n");

  // Every rank of a data-parallel job (mpirun) runs this; rank 0 alone
  // prints progress and writes metrics, checkpoints and reports.
  if (mpcrt_comm_init() != 0)
    return 1;
  worldRank = mpcrt_comm_rank();
  worldSize = mpcrt_comm_size();
  struct Finalize {
    ~Finalize() { mpcrt_comm_finalize(); }
  } finalize;
  mpcrt_set_rank(worldRank);
  // A synchronised batch norm's statistics are summed over the ranks (on
  // the host, or gathered in the device's memory).
  mpcrt_set_rank_sum(mpcrt_comm_host_sum);
  mpcrt_set_rank_gather(worldSize, mpcrt_comm_all_gather);
  if (worldRank != 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      llvm::outs().flush();
      dup2(null, STDOUT_FILENO);
      close(null);
    }
  }

  // Counts given on the command line: a negative one is not "unset".
  for (auto [option, least] :
       {std::pair<cl::opt<int64_t> *, int64_t>{&steps, 0},
        {&epochs, 0},
        {&batchSize, 1},
        {&logEvery, 1},
        {&checkpointEvery, 0}})
    if (option->getNumOccurrences() > 0 && *option < least)
      return fail("--" + option->ArgStr + " must be " + llvm::Twine(least) +
                  " or more, got " + llvm::Twine(option->getValue()));
  if (threads < 0 || threads > 1024)
    return fail("--threads must be between 1 and 1024 (0: the default), not " +
                llvm::Twine(threads.getValue()));
  mpcrt_set_threads(threads);

  llvm::Expected<Model> parsed = parseModel(mpc_model);
  if (!parsed)
    return fail(parsed.takeError());
  Model &model = *parsed;
  if (worldSize > 1 && !model.dataParallel)
    return fail("this step was compiled without --data-parallel; it cannot "
                "run on " +
                llvm::Twine(worldSize) + " ranks");
  llvm::Expected<int64_t> batchOr = batchSizeOf(model);
  if (!batchOr)
    return fail(batchOr.takeError());
  int64_t batch = *batchOr;
  if (batchSize >= 0 && batchSize != batch)
    return fail("--batch-size " + llvm::Twine(batchSize.getValue()) +
                " does not match the batch size the step was compiled for (" +
                llvm::Twine(batch) + "); recompile the model for another size");
  // No output is written over an input or another output (the dataset,
  // the initial weights and the other outputs are the user's): checked
  // now, before anything is opened for writing.
  if (llvm::Error err = checkOutputsApart())
    return fail(std::move(err));
  // Where the checkpoint goes is checked now, not after the whole run.
  if (!checkpointPath.empty() && worldRank == 0)
    if (llvm::Error err = prepareCheckpoint(checkpointPath, llvm::errs()))
      return fail(std::move(err));

  // The step's buffers live in the backend's memory; the host keeps a
  // mirror of the state (read for checkpoints and metrics only) and stages
  // each batch before uploading it.
  DeviceBuffer arena(model.arenaBytes), state(model.stateBytes);
  Buffer hostState(model.stateBytes);
  std::vector<std::unique_ptr<Buffer>> inputBuffers, outputBuffers;
  std::vector<std::unique_ptr<DeviceBuffer>> deviceInputs, deviceOutputs;
  std::vector<void *> inputs, outputs;
  int64_t inputBytes = 0, outputBytes = 0;
  for (const TensorInfo &in : model.inputs) {
    inputBuffers.push_back(std::make_unique<Buffer>(in.bytes));
    deviceInputs.push_back(std::make_unique<DeviceBuffer>(in.bytes));
    inputs.push_back(deviceInputs.back()->data);
    inputBytes += in.bytes;
  }
  for (const TensorInfo &out : model.outputs) {
    outputBuffers.push_back(std::make_unique<Buffer>(out.bytes));
    deviceOutputs.push_back(std::make_unique<DeviceBuffer>(out.bytes));
    outputs.push_back(deviceOutputs.back()->data);
    outputBytes += out.bytes;
  }
  // The evaluation step's scalars (it reads the step's inputs).
  std::vector<std::unique_ptr<DeviceBuffer>> deviceEvalOutputs;
  std::vector<void *> evalOutputs;
  for (const TensorInfo &out : model.evalOutputs) {
    deviceEvalOutputs.push_back(std::make_unique<DeviceBuffer>(out.bytes));
    evalOutputs.push_back(deviceEvalOutputs.back()->data);
    outputBytes += out.bytes;
  }
  if (printMemory) {
    llvm::outs() << llvm::json::Value(llvm::json::Object{
                        {"allocated_bytes", model.arenaBytes +
                                                model.stateBytes + inputBytes +
                                                outputBytes},
                        {"arena_bytes", model.arenaBytes},
                        {"state_bytes", model.stateBytes},
                        {"input_bytes", inputBytes},
                        {"output_bytes", outputBytes}})
                 << "\n";
    return 0;
  }

  // Options that need an evaluation step, or each other.
  bool hasEval = !model.evalOutputs.empty();
  if ((!valDataPath.empty() || evalOnly) && !hasEval)
    return fail("the model has no evaluation step; compile it with "
                "mpc-compile --train (without --no-eval)");
  if ((evalOnly || evalEvery.getNumOccurrences() > 0) && valDataPath.empty())
    return fail(std::string(evalOnly ? "--eval-only" : "--eval-every") +
                " needs --val-data PATH");
  const TensorInfo *numericsEvents = nullptr, *numericsEventAmax = nullptr,
                   *numericsAmax = nullptr, *numericsCounts = nullptr;
  for (const TensorInfo &g : model.globals) {
    int64_t n = static_cast<int64_t>(model.numericsOps.size());
    if (g.name == "mpc_numerics_events" && g.dtype == "i64" &&
        g.shape == std::vector<int64_t>{34})
      numericsEvents = &g;
    if (g.name == "mpc_numerics_event_amax" && g.dtype == "f32" &&
        g.shape == std::vector<int64_t>{n})
      numericsEventAmax = &g;
    if (g.name == "mpc_numerics_amax" && g.dtype == "f32" &&
        g.shape == std::vector<int64_t>{n, 2})
      numericsAmax = &g;
    if (g.name == "mpc_numerics_counts" && g.dtype == "i64" &&
        g.shape == std::vector<int64_t>{n, 4})
      numericsCounts = &g;
  }
  bool checked = !model.numericsOps.empty() && numericsEvents &&
                 numericsEventAmax && numericsAmax && numericsCounts;
  if (!numericsReport.empty() && !checked)
    return fail("--numerics-report needs a step compiled with "
                "mpc-compile --check-numerics");
  if (evalEvery < 0)
    return fail("--eval-every must be 0 or more, got " +
                llvm::Twine(evalEvery.getValue()));

  // Data: one array per input, same number of samples.
  if (dataPath.empty() && !evalOnly)
    return fail("no training data; pass --data FILE.npz (see --help)");
  std::vector<std::pair<std::string, Array>> arrays, valArrays;
  std::vector<const Array *> sources, valSources;
  int64_t samples = -1, valSamples = -1;
  if (!evalOnly)
    if (llvm::Error err = loadData(dataPath, model, arrays, sources, samples))
      return fail(std::move(err));
  if (!valDataPath.empty()) {
    if (llvm::Error err =
            loadData(valDataPath, model, valArrays, valSources, valSamples))
      return fail(std::move(err));
    if (valSamples < batch)
      return fail(valDataPath + ": " + llvm::Twine(valSamples) +
                  " samples, fewer than one batch of " + llvm::Twine(batch));
  }
  // An optimizer step takes K micro-batches of the compiled batch (K = 1
  // without gradient accumulation): an epoch is the whole optimizer steps
  // it holds, as with one batch of K times the size.
  // With N ranks, a step takes N times that: rank r takes every N-th
  // sample of the epoch's order, starting at the r-th.
  const int64_t micro = model.accumulateSteps;
  int64_t batchesPerEpoch =
      evalOnly ? 1 : samples / (batch * micro * worldSize);
  if (batchesPerEpoch == 0)
    return fail(
        dataPath + ": " + llvm::Twine(samples) +
        " samples, fewer than one batch of " +
        llvm::Twine(batch * micro * worldSize) +
        (micro > 1 || worldSize > 1
             ? " (" +
                   (micro > 1 ? std::to_string(micro) + " micro-batches of " +
                                    std::to_string(batch)
                              : std::to_string(batch)) +
                   (worldSize > 1
                        ? " on each of " + std::to_string(worldSize) + " ranks"
                        : std::string()) +
                   ")"
             : std::string()));

  // State: initializers, then --init, then --resume.
  Guards guards(model, arena.data, state.data);
  if (!model.arenaGuards.empty() && worldRank == 0)
    llvm::errs()
        << mpcrt::errors::prefix("note").text
        << llvm::formatv(
               "compiled with --arena-guards: {0} guards of {1} bytes after "
               "the arena's buffers and {2} after the globals are checked "
               "after "
               "every call, and the arena is filled with 0xFF before it\n",
               model.arenaGuards.size(), model.arenaGuards.front().bytes,
               model.stateGuard > 0 ? model.globals.size() : 0);
  mpc_init_globals(state.data);
  guards.check(Guards::kState, "the initialisation of the globals");
  const TensorInfo *stepGlobal = nullptr, *lossScale = nullptr,
                   *skippedGlobal = nullptr, *gradStats = nullptr,
                   *gradNorm = nullptr, *cleanSteps = nullptr;
  for (const TensorInfo &g : model.globals) {
    if (g.name == "loss_scale_skipped" && g.shape.empty() && g.dtype == "bool")
      skippedGlobal = &g;
    if (g.name == "mpc.step")
      stepGlobal = &g;
    if (g.name == "loss_scale" && g.shape.empty() && g.dtype == "f32")
      lossScale = &g;
    if (g.name == "grad_norm" && g.shape.empty() && g.dtype == "f32")
      gradNorm = &g;
    if (g.name == "loss_scale_clean_steps" && g.shape.empty() &&
        g.dtype == "i32")
      cleanSteps = &g;
    if (g.name == "grad_stats" && g.shape == std::vector<int64_t>{4} &&
        g.dtype == "i64")
      gradStats = &g;
  }
  if (!stepGlobal)
    return fail("malformed model descriptor: no step counter");
  mpcrt_download(hostState.data, state.data, model.stateBytes);
  if (!initPath.empty()) {
    if (llvm::Error err =
            readCheckpoint(initPath, model, hostState.data, false))
      return fail(std::move(err));
    // Values, not progress: training starts at step 0. Low-precision
    // copies follow the masters that were loaded.
    std::memset(hostState.data + stepGlobal->offset, 0, 8);
    mpcrt_upload(state.data, hostState.data, model.stateBytes);
    mpc_refresh_copies(state.data);
    guards.check(Guards::kState, "the copies of the loaded weights");
    mpcrt_download(hostState.data, state.data, model.stateBytes);
  }
  // Where the data stands: a resumed run goes on from the checkpoint's
  // position, whatever its number of ranks or batch (a step then takes
  // this job's samples from there).
  int64_t written = 1;
  DataPosition resumed;
  if (!resumePath.empty()) {
    if (llvm::Error err = readCheckpoint(resumePath, model, hostState.data,
                                         true, nullptr, &written, &resumed))
      return fail(std::move(err));
    mpcrt_upload(state.data, hostState.data, model.stateBytes);
  }
  // The mean over ranks is folded into the gradient seed: 1/N.
  if (model.dataParallel) {
    const TensorInfo *inverse = nullptr;
    for (const TensorInfo &g : model.globals)
      if (g.name == model.inverseSize && g.dtype == "f32" && g.shape.empty())
        inverse = &g;
    if (!inverse)
      return fail("malformed model descriptor: no global @" +
                  model.inverseSize);
    float value = 1.0f / static_cast<float>(worldSize);
    std::memcpy(hostState.data + inverse->offset, &value, 4);
    mpcrt_upload(state.data + inverse->offset, hostState.data + inverse->offset,
                 4);
  }
  // Every rank must hold the same state: its fingerprint (the numerics
  // ranges aside, which are each rank's own) against rank 0's.
  auto sameState = [&](const llvm::Twine &when) -> llvm::Error {
    if (worldSize == 1)
      return llvm::Error::success();
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const TensorInfo &g : model.globals)
      if (llvm::StringRef(g.name).starts_with("mpc_numerics") == false)
        h = fingerprint(hostState.data + g.offset, g.bytes, h);
    std::vector<uint64_t> all(worldSize);
    mpcrt_comm_host_gather(h, all.data());
    for (int r = 1; r < worldSize; ++r)
      if (all[r] != all[0])
        return llvm::createStringError(
            "rank " + std::to_string(r) + "'s state differs from rank 0's " +
            when.str() +
            " (the ranks diverged: different --init or --resume files, or "
            "different executables)");
    return llvm::Error::success();
  };
  if (llvm::Error err = sameState("at the start"))
    return fail(std::move(err));
  // The host counts steps as the step function does: no read per step.
  // The counter counts micro-batches (each draws its own dropout masks).
  int64_t firstStep;
  std::memcpy(&firstStep, hostState.data + stepGlobal->offset, 8);
  if (firstStep < 0)
    return fail(resumePath + ": the step counter is negative (" +
                llvm::Twine(firstStep) + "); corrupt checkpoint");
  if (firstStep % micro != 0)
    return fail(resumePath + ": the step counter (" + llvm::Twine(firstStep) +
                " micro-batches) is not a whole number of optimizer steps of " +
                llvm::Twine(micro) + " micro-batches");
  firstStep /= micro;
  // The samples one step takes over every rank, and the data position of
  // the next step. A checkpoint that records no position (written before
  // positions were) was written by steps of this job's batch on its own
  // number of ranks.
  const int64_t stepSamples = batch * micro * worldSize;
  DataPosition position{0, 0};
  if (resumed.epoch >= 0) {
    position = resumed;
  } else if (firstStep > 0) {
    int64_t before = batch * micro * written;
    int64_t perEpoch = std::max<int64_t>(samples / before, 1);
    position = {firstStep / perEpoch, (firstStep % perEpoch) * before};
  }

  // Batch norm's running statistics (the globals marked mpc.rank_mean) are
  // each rank's own: replaces them, in the backend's state and in
  // hostState, by their mean over the ranks. Returns their values before,
  // to put back. `downloaded`: hostState already holds the backend's state.
  auto averageRankMeans = [&](bool downloaded) {
    std::vector<std::pair<const TensorInfo *, std::vector<char>>> before;
    for (const std::string &name : model.rankMean)
      for (const TensorInfo &g : model.globals) {
        if (g.name != name || (g.dtype[0] != 'f' && g.dtype[0] != 'b'))
          continue;
        char *at = hostState.data + g.offset;
        if (!downloaded)
          mpcrt_download(at, state.data + g.offset, g.bytes);
        before.emplace_back(&g, std::vector<char>(at, at + g.bytes));
        int64_t n = g.bytes / g.elementBytes();
        std::vector<double> values(n);
        for (int64_t i = 0; i < n; ++i)
          values[i] = elementAt(g, at, i);
        mpcrt_comm_host_sum(values.data(), n);
        for (int64_t i = 0; i < n; ++i)
          setElement(g, at, i, values[i] / worldSize);
        mpcrt_upload(state.data + g.offset, at, g.bytes);
      }
    return before;
  };
  // The state's values on the host, when a checkpoint is written. State
  // with a NaN or infinity never replaces a checkpoint: the old one is
  // kept, and the run says so.
  auto checkpoint = [&]() -> llvm::Error {
    mpcrt_download(hostState.data, state.data, model.stateBytes);
    if (worldSize > 1) {
      // The ranks' mean, kept by every rank from here on.
      averageRankMeans(true);
      if (llvm::Error err = sameState("before the checkpoint"))
        return err;
      if (worldRank != 0)
        return llvm::Error::success();
    }
    std::string bad = firstNonFinite(model, hostState.data);
    if (!bad.empty()) {
      if (llvm::sys::fs::exists(checkpointPath)) {
        llvm::errs() << mpcrt::errors::prefix("warning").text
                     << "the state holds a non-finite value (" << bad << "); "
                     << checkpointPath
                     << " is kept as it was, not overwritten\n";
        return llvm::Error::success();
      }
      llvm::errs() << mpcrt::errors::prefix("warning").text
                   << "the state holds a non-finite value (" << bad
                   << "); writing it to " << checkpointPath << " anyway\n";
    }
    return writeCheckpoint(checkpointPath, model, hostState.data, worldSize,
                           position);
  };
  auto readGlobal = [&](const TensorInfo &g) {
    mpcrt_download(hostState.data + g.offset, state.data + g.offset, g.bytes);
    return hostState.data + g.offset;
  };

  // A step that would run past its epoch's whole steps starts the next
  // epoch (the last samples of an epoch that make no whole step are left
  // out, as PyTorch's drop_last).
  auto startStep = [&]() {
    if (position.offset + stepSamples > samples)
      position = {position.epoch + 1, 0};
  };
  if (!evalOnly)
    startStep();
  if (!resumePath.empty() && model.dataParallel && written != worldSize &&
      worldRank == 0)
    llvm::errs() << mpcrt::errors::prefix("note").text << resumePath
                 << " was written by a job of " << written
                 << " ranks and this job has " << worldSize
                 << ": a step now takes " << stepSamples << " samples (it took "
                 << batch * micro * written << "); training goes on from "
                 << "sample " << position.offset << " of epoch "
                 << position.epoch << "\n";
  // The last step: --steps, --epochs' passes, whichever comes first where
  // both are given (one epoch where neither is). The passes end where the
  // data position reaches epoch --epochs: from step 0, --epochs times the
  // steps of an epoch.
  int64_t total = batchesPerEpoch;
  if (!evalOnly) {
    int64_t passes = epochs >= 0 ? epochs.getValue() : 1, rest = 0;
    bool overflow = false;
    if (passes > position.epoch) {
      int64_t left = (samples - position.offset) / stepSamples;
      overflow = llvm::MulOverflow(passes - position.epoch - 1, batchesPerEpoch,
                                   rest) ||
                 llvm::AddOverflow(rest, left, rest) ||
                 llvm::AddOverflow(rest, firstStep, total);
    } else {
      total = firstStep;
    }
    if (overflow) {
      if (steps < 0)
        return fail("--epochs " + llvm::Twine(epochs.getValue()) + " of " +
                    llvm::Twine(batchesPerEpoch) +
                    " steps each is more steps than a 64-bit count holds");
      total = std::numeric_limits<int64_t>::max(); // beyond any --steps
    }
  }
  if (steps >= 0)
    total = epochs >= 0 ? std::min<int64_t>(total, steps) : steps;
  std::unique_ptr<llvm::raw_fd_ostream> metrics;
  if (!metricsPath.empty() && worldRank == 0) {
    std::error_code ec;
    metrics = std::make_unique<llvm::raw_fd_ostream>(metricsPath, ec,
                                                     llvm::sys::fs::OF_Append);
    if (ec)
      return fail(metricsPath + ": " + ec.message());
  }
  bool terminal = llvm::sys::Process::StandardOutIsDisplayed();
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  // Time per step: wall time between logged lines (batch staging and
  // uploads included), measured when the backend has finished the steps.
  auto lastLog = std::chrono::steady_clock::now();
  int64_t stepsSinceLog = 0;
  bool trained = false;
  // Each entry (the step, the micro-step) is recorded after its first
  // eager call, once a whole step has run eagerly (buffers and plans
  // sized), and replayed from then on (CUDA Graphs; eager on the CPU).
  struct Entry {
    void (*fn)(void *, void *, void *const *, void *const *);
    int32_t slot;
    void *const *outs;
    int64_t calls = 0;
    bool recorded = false, failed = false;
  };
  Entry stepEntry{mpc_step, 0, outputs.data()},
      microEntry{mpc_accumulate, 1, outputs.data()},
      evalEntry{mpc_eval, 2, evalOutputs.data()};
  // --data-on-device: the data in the backend's memory, if they fit.
  std::unique_ptr<ResidentData> residentTrain, residentVal;
  if (dataOnDevice.getNumOccurrences() > 0) {
    std::optional<mpcrt_dtype> narrow;
    if (dataOnDevice.empty() || dataOnDevice == "f16")
      narrow = MPCRT_F16;
    else if (dataOnDevice == "bf16")
      narrow = MPCRT_BF16;
    else
      return fail("--data-on-device takes f16 or bf16, not '" + dataOnDevice +
                  "'");
    int64_t bytes = 0;
    if (!sources.empty()) {
      residentTrain = std::make_unique<ResidentData>();
      bytes +=
          planResident(model, batch, sources, samples, *narrow, *residentTrain);
    }
    if (!valSources.empty()) {
      residentVal = std::make_unique<ResidentData>();
      bytes += planResident(model, batch, valSources, valSamples, *narrow,
                            *residentVal);
    }
    // With the staging buffer the conversion goes through.
    int64_t free = mpcrt_free_bytes(), needed = bytes + (int64_t(64) << 20);
    if (free >= 0 && needed > free)
      return fail(llvm::formatv("--data-on-device: the data take {0:F1} MiB "
                                "in the backend's memory (and 64 MiB to "
                                "convert them), which has {1:F1} MiB free; "
                                "run without it",
                                bytes / 1048576.0, free / 1048576.0)
                      .str());
    if (residentTrain)
      makeResident(sources, samples, *residentTrain);
    if (residentVal)
      makeResident(valSources, valSamples, *residentVal);
  }

  auto run = [&](Entry &e) {
    guards.fill(e.slot);
    mpcrt_inputs_ready();
    if (e.recorded) {
      mpcrt_graph_launch(e.slot);
    } else if (!noGraph && !e.failed && e.calls > 0 &&
               (stepEntry.calls > 0 || &e == &evalEntry) &&
               mpcrt_graph_begin()) {
      e.fn(arena.data, state.data, inputs.data(), e.outs);
      e.recorded = mpcrt_graph_end(e.slot) != 0;
      e.failed = !e.recorded; // not tried again
      if (e.recorded)
        mpcrt_graph_launch(e.slot);
      else
        e.fn(arena.data, state.data, inputs.data(), e.outs);
    } else {
      e.fn(arena.data, state.data, inputs.data(), e.outs);
    }
    static const char *const names[] = {"step", "micro-step",
                                        "evaluation step"};
    guards.check(e.slot, llvm::formatv("call {0} of the {1}", e.calls + 1,
                                       names[e.slot]));
    ++e.calls;
  };
  // Copies samples order[first], order[first + 1], ... (file order when
  // `order` is empty) of `from` into the input buffers and uploads them.
  // With N ranks, position p of this rank's samples is position
  // base + p * N + rank of `order`.
  std::vector<int64_t> rows(batch);
  auto stage = [&](const std::vector<const Array *> &from,
                   const std::vector<int64_t> &order, int64_t base,
                   int64_t first, const ResidentData *resident) {
    if (resident) { // gathered and widened in the backend's memory
      for (int64_t r = 0; r < batch; ++r)
        rows[r] = order.empty()
                      ? first + r
                      : order[base + (first + r) * worldSize + worldRank];
      for (size_t i = 0; i < model.inputs.size(); ++i)
        mpcrt_gather_rows(resident->buffers[i], resident->stored[i], inputs[i],
                          resident->type[i], resident->sampleElements[i],
                          rows.data(), batch, resident->rawBytes[i]);
      return;
    }
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      int64_t sampleBytes = model.inputs[i].bytes / batch;
      for (int64_t r = 0; r < batch; ++r) {
        int64_t sample =
            order.empty() ? first + r
                          : order[base + (first + r) * worldSize + worldRank];
        std::memcpy(inputBuffers[i]->data + r * sampleBytes,
                    from[i]->data.data() + sample * sampleBytes, sampleBytes);
      }
    }
    // On CUDA the copies overlap the steps still running; the next step
    // reads them (mpcrt_inputs_ready in `run`).
    for (size_t i = 0; i < model.inputs.size(); ++i)
      mpcrt_upload_input(inputs[i], inputBuffers[i]->data,
                         model.inputs[i].bytes);
  };
  // Evaluation: every whole batch of the validation data, in file order;
  // the means of the batches' loss and accuracy (batches of one size, so
  // the means over the samples).
  auto evaluate = [&](int64_t atStep) -> llvm::Error {
    auto start = std::chrono::steady_clock::now();
    // With several ranks, the model evaluated is the one a checkpoint
    // written now would hold: batch norm's running statistics averaged
    // over the ranks. Each rank's own are put back after, so that
    // evaluating changes nothing the training reads.
    std::vector<std::pair<const TensorInfo *, std::vector<char>>> own;
    if (worldSize > 1 && !model.rankMean.empty())
      own = averageRankMeans(false);
    llvm::scope_exit restore([&] {
      for (auto &[g, bytes] : own)
        mpcrt_upload(state.data + g->offset, bytes.data(), g->bytes);
    });
    int64_t batches = valSamples / batch;
    std::vector<double> sums(model.evalOutputs.size(), 0.0);
    // Rank r evaluates batches r, r + N, ...; the sums are added up.
    for (int64_t k = worldRank; k < batches; k += worldSize) {
      stage(valSources, {}, 0, k * batch, residentVal.get());
      run(evalEntry);
      for (size_t i = 0; i < sums.size(); ++i) {
        char value[8];
        mpcrt_download(value, evalOutputs[i], model.evalOutputs[i].bytes);
        sums[i] += readScalar(model.evalOutputs[i], value);
      }
    }
    mpcrt_comm_host_sum(sums.data(), static_cast<int64_t>(sums.size()));
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    llvm::json::Object line{
        {"step", atStep}, {"val_samples", batches * batch}, {"eval_ms", ms}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "eval step " << atStep;
    for (size_t i = 0; i < sums.size(); ++i) {
      double mean = sums[i] / double(batches);
      std::string key = "val_" + model.evalOutputs[i].name;
      line[key] = jsonNumber(mean);
      os << " " << key << " " << llvm::format("%.6f", mean);
    }
    os << " (" << batches * batch << " samples, " << llvm::format("%.0f", ms)
       << " ms)";
    if (metrics) {
      *metrics << llvm::json::Value(std::move(line)) << "\n";
      if (std::string why = mpc::files::writeError(*metrics); !why.empty())
        return llvm::createStringError(metricsPath +
                                       ": cannot write the metrics: " + why);
    }
    llvm::outs() << (terminal ? "\r" : "") << text
                 << (terminal ? "\033[K\n" : "\n");
    llvm::outs().flush();
    return llvm::Error::success();
  };
  // Loss-scale health, from what is read on logged steps: the skips since
  // the last (steps less the clean steps the device counts) and the scale.
  if (scaleStuckSteps < 0 || scaleBackoffEvery < 0)
    return fail("--scale-stuck-steps and --scale-backoff-every must be 0 or "
                "more");
  int64_t lastDone = firstStep, lastClean = -1, minSince = -1;
  if (cleanSteps) { // the state as loaded (resumed runs count on)
    int32_t clean;
    std::memcpy(&clean, hostState.data + cleanSteps->offset, 4);
    lastClean = clean;
  }
  std::deque<std::pair<int64_t, int64_t>> window; // (steps, skips) per log
  bool warnedStuck = false;
  // Said after the step's own line.
  std::vector<std::pair<int64_t, std::string>> pendingWarnings;
  auto warn = [&](int64_t done, const std::string &text) {
    pendingWarnings.push_back({done, text});
  };
  auto sayWarnings = [&] {
    for (auto &[done, text] : pendingWarnings) {
      llvm::outs() << (terminal ? "\r" : "") << "warning: step " << done << ": "
                   << text << (terminal ? "\033[K\n" : "\n");
      if (metrics)
        *metrics << llvm::json::Value(
                        llvm::json::Object{{"step", done}, {"warning", text}})
                 << "\n";
    }
    pendingWarnings.clear();
  };
  const std::string suggestion =
      "; compile with mpc-compile --check-numerics to find the op that "
      "overflows";
  // Returns the skips since the last logged step (-1: not counted).
  auto scaleHealth = [&](int64_t done, double scale) -> int64_t {
    if (!cleanSteps)
      return -1;
    int32_t clean;
    std::memcpy(&clean, readGlobal(*cleanSteps), 4);
    int64_t steps = done - lastDone;
    int64_t skips = steps - (clean - lastClean);
    lastClean = clean;
    lastDone = done;
    if (skips >= 0 && scaleBackoffEvery > 0) {
      window.push_back({steps, skips});
      int64_t total = 0, skipped = 0;
      for (auto [n, k] : window) {
        total += n;
        skipped += k;
      }
      while (window.size() > 1 &&
             total - window.front().first >= 4 * scaleBackoffEvery) {
        total -= window.front().first;
        skipped -= window.front().second;
        window.pop_front();
      }
      if (total >= 4 * scaleBackoffEvery &&
          skipped * scaleBackoffEvery > total) {
        warn(done, "the loss scale backed off " + std::to_string(skipped) +
                       " times in the last " + std::to_string(total) +
                       " steps, more often than every " +
                       std::to_string(scaleBackoffEvery.getValue()) +
                       " steps (endless skipping)" + suggestion);
        window.clear();
      }
    }
    if (model.lossScaleMin > 0 && scaleStuckSteps > 0) {
      if (scale <= model.lossScaleMin) {
        if (minSince < 0)
          minSince = done - steps + 1;
        if (!warnedStuck && done - minSince + 1 >= scaleStuckSteps) {
          char floor[32];
          std::snprintf(floor, sizeof(floor), "%g", model.lossScaleMin);
          warn(done, std::string("the loss scale has sat at its min-scale (") +
                         floor + ") for " +
                         std::to_string(done - minSince + 1) + " steps" +
                         suggestion);
          warnedStuck = true;
        }
      } else {
        minSince = -1;
        warnedStuck = false;
      }
    }
    return skips;
  };
  // Numerics: the steps whose values went non-finite since the last look,
  // each with its first op; the latest with its inputs' ranges.
  int64_t eventsSeen = 0;
  auto describe = [&](int64_t index) {
    const NumericsOp &op = model.numericsOps[index];
    return op.op + " at " + op.loc;
  };
  auto reportNumerics = [&](int64_t done, bool skipped) -> llvm::Error {
    if (!checked)
      return llvm::Error::success();
    int64_t events[34];
    std::memcpy(events, readGlobal(*numericsEvents), sizeof(events));
    if (events[0] <= eventsSeen)
      return llvm::Error::success();
    int64_t from = std::max(eventsSeen, events[0] - 16);
    if (from > eventsSeen)
      llvm::outs() << "numerics: " << (from - eventsSeen)
                   << " earlier steps with non-finite values (not kept)\n";
    const float *ranges =
        reinterpret_cast<const float *>(readGlobal(*numericsEventAmax));
    // Event e's step counter and op, the op null where it is no op.
    auto eventAt = [&](int64_t e) {
      int64_t slot = 2 + 2 * (e % 16), index = events[slot + 1];
      return std::pair{events[slot],
                       index >= 0 && index < int64_t(model.numericsOps.size())
                           ? &model.numericsOps[index]
                           : nullptr};
    };
    for (int64_t e = from; e < events[0]; ++e) {
      auto [counter, checked] = eventAt(e);
      if (!checked)
        return llvm::createStringError("malformed numerics record");
      int64_t index = checked - model.numericsOps.data();
      int64_t stepNumber = counter / micro + 1;
      const NumericsOp &op = model.numericsOps[index];
      bool eval = op.phase == "eval";
      // An evaluation records one event per batch that held a non-finite
      // value: the first one stands for the others of that evaluation.
      int64_t batches = 1;
      for (; eval && e + 1 < events[0]; ++e, ++batches) {
        auto [nextCounter, next] = eventAt(e + 1);
        if (nextCounter != counter || !next || next->phase != "eval")
          break;
      }
      std::string text;
      llvm::raw_string_ostream os(text);
      if (eval)
        os << "evaluation after step " << counter / micro
           << ": first non-finite value in " << describe(index) << " (eval"
           << (batches > 1 ? ", " + std::to_string(batches) + " batches"
                           : std::string())
           << ")";
      else
        os << "step " << stepNumber
           << (stepNumber == done && skipped ? " skipped" : "")
           << ": first non-finite value in " << describe(index) << " ("
           << op.phase
           << (micro > 1
                   ? ", micro-batch " + std::to_string(counter % micro + 1)
                   : std::string())
           << ")";
      llvm::json::Array inputs;
      if (e == events[0] - 1) {
        bool any = false;
        for (int64_t in : op.inputs) {
          if (in < 0)
            continue;
          os << (any ? ", " : "; inputs: ") << "max |x| "
             << llvm::format("%g", ranges[in]) << " (" << describe(in) << ")";
          inputs.push_back(
              llvm::json::Object{{"op", model.numericsOps[in].op},
                                 {"location", model.numericsOps[in].loc},
                                 {"max_abs", jsonNumber(ranges[in])}});
          any = true;
        }
      }
      llvm::outs() << (terminal ? "\r" : "") << text
                   << (terminal ? "\033[K\n" : "\n");
      if (metrics) {
        llvm::json::Object line{
            {"nonfinite_op", op.op}, {"location", op.loc}, {"phase", op.phase}};
        if (eval) {
          line["eval_after_step"] = counter / micro;
          line["batches"] = batches;
        } else {
          line["step"] = stepNumber;
        }
        if (!inputs.empty())
          line["inputs"] = std::move(inputs);
        *metrics << llvm::json::Value(std::move(line)) << "\n";
      }
    }
    eventsSeen = events[0];
    return llvm::Error::success();
  };
  if (evalOnly) {
    if (llvm::Error err = evaluate(firstStep))
      return fail(std::move(err));
    if (llvm::Error err = reportNumerics(firstStep, false))
      return fail(std::move(err));
    return 0;
  }
  for (int64_t step = firstStep; step < total; ++step) {
    trained = true;
    startStep();
    if (position.epoch != orderEpoch) {
      order = permutation(samples, position.epoch);
      orderEpoch = position.epoch;
    }
    for (int64_t j = 0; j < micro; ++j) {
      stage(sources, order, position.offset, j * batch, residentTrain.get());
      run(j + 1 < micro ? microEntry : stepEntry);
    }
    position.offset += stepSamples;
    ++stepsSinceLog;
    int64_t done = step + 1;
    if (done % logEvery == 0 || done == total) {
      // Downloads wait for the steps: the only synchronisation.
      mpcrt_download(outputBuffers[0]->data, outputs[0],
                     model.outputs[0].bytes);
      double loss = readScalar(model.outputs[0], outputBuffers[0]->data);
      if (worldSize > 1) { // the mean over the ranks' batches
        mpcrt_comm_host_sum(&loss, 1);
        loss /= worldSize;
      }
      auto now = std::chrono::steady_clock::now();
      double ms =
          std::chrono::duration<double, std::milli>(now - lastLog).count() /
          stepsSinceLog;
      bool skipped = skippedGlobal && *readGlobal(*skippedGlobal) != 0;
      double scale =
          lossScale ? readScalar(*lossScale, readGlobal(*lossScale)) : 1.0;
      int64_t skipsSinceLog = scaleHealth(done, scale);
      if (metrics) {
        llvm::json::Object line{
            {"step", done},
            {"loss", jsonNumber(loss)},
            {"loss_scale", jsonNumber(scale)},
            {"skipped", skipped},
            {"ms_per_step", ms},
            {"samples_per_s", batch * micro * worldSize * 1000.0 / ms},
            {"memory_bytes", mpcrt_memory_bytes()}};
        if (skipsSinceLog >= 0)
          line["scale_skips"] = skipsSinceLog;
        if (gradNorm)
          line["grad_norm"] =
              jsonNumber(readScalar(*gradNorm, readGlobal(*gradNorm)));
        if (gradStats) {
          int64_t counts[4];
          std::memcpy(counts, readGlobal(*gradStats), sizeof(counts));
          double n = static_cast<double>(std::max<int64_t>(counts[0], 1));
          line["grad_zero"] = counts[1] / n;
          line["grad_underflow"] = counts[2] / n;
          line["grad_nonfinite"] = counts[3] / n;
        }
        *metrics << llvm::json::Value(std::move(line)) << "\n";
        if (std::string why = mpc::files::writeError(*metrics); !why.empty())
          return fail(metricsPath + ": cannot write the metrics: " + why);
      }
      if (terminal) {
        int filled = int(30.0 * done / std::max<int64_t>(total, 1));
        llvm::outs() << "\r[" << std::string(filled, '#')
                     << std::string(30 - filled, '.') << "] step " << done
                     << "/" << total << "  loss " << llvm::format("%.4f", loss)
                     << "  "
                     << llvm::format("%.0f",
                                     batch * micro * worldSize * 1000.0 / ms)
                     << " samples/s\033[K" << (done == total ? "\n" : "");
      } else {
        llvm::outs() << "step " << done << "/" << total << " loss "
                     << llvm::format("%.6f", loss) << " ms/step "
                     << llvm::format("%.2f", ms) << " samples/s "
                     << llvm::format("%.0f",
                                     batch * micro * worldSize * 1000.0 / ms)
                     << "\n";
      }
      if (llvm::Error err = reportNumerics(done, skipped))
        return fail(std::move(err));
      sayWarnings();
      llvm::outs().flush();
      stepsSinceLog = 0;
      lastLog = std::chrono::steady_clock::now();
      if (stopOnNonFinite && !std::isfinite(loss) && !skipped)
        return fail("step " + llvm::Twine(done) + ": the loss is " +
                    (std::isnan(loss) ? "NaN" : "infinite") +
                    "; stopping (--stop-on-nonfinite)");
    }
    if (!valDataPath.empty() &&
        (done == total || (evalEvery > 0 && done % evalEvery == 0))) {
      if (llvm::Error err = evaluate(done))
        return fail(std::move(err));
      if (llvm::Error err = reportNumerics(done, false))
        return fail(std::move(err));
      lastLog = std::chrono::steady_clock::now(); // not a training step's time
    }
    if (!checkpointPath.empty() &&
        (done == total || (checkpointEvery > 0 && done % checkpointEvery == 0)))
      if (llvm::Error err = checkpoint())
        return fail(std::move(err));
  }
  // Nothing trained (--steps 0, or resumed at the end): the checkpoint is
  // the state as it stands, e.g. the initial weights.
  if (!checkpointPath.empty() && !trained)
    if (llvm::Error err = checkpoint())
      return fail(std::move(err));
  if (!numericsReport.empty() && worldRank == 0)
    if (llvm::Error err = writeNumericsReport(
            numericsReport, model,
            reinterpret_cast<const float *>(readGlobal(*numericsAmax)),
            reinterpret_cast<const int64_t *>(readGlobal(*numericsCounts)),
            terminal))
      return fail(std::move(err));
  return 0;
}
