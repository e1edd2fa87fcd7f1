//===- Runner.cpp - main() of a compiled training executable --------------===//
//
// Feeds the compiled step (mpc_step) batches of NumPy data, runs the steps,
// logs metrics, writes and restores checkpoints. Everything the model needs
// to know comes from the descriptor the compiler embedded (mpc_model).
//
//===----------------------------------------------------------------------===//

#include "Model.h"

#include "mpc/Runtime/mpcrt.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>

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
    epochs("epochs", cl::desc("Train until this many passes over the data"),
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
static cl::opt<bool> noGraph(
    "no-graph",
    cl::desc("Run every step eagerly instead of replaying a recorded one "
             "(CUDA Graph; the CPU backend always runs eagerly)"),
    cl::init(false), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
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
      llvm::errs() << "error: cannot allocate " << bytes
                   << " bytes of host memory\n";
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
    const Array *found = nullptr;
    for (const auto &[name, array] : arrays)
      if (name == in.name)
        found = &array;
    if (!found)
      return bad("no array '" + in.name + "' for the step input of that name");
    std::vector<int64_t> sampleShape(in.shape.begin() + 1, in.shape.end());
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

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "A training executable compiled by mpc-compile.\n\n"
      "  train --data train.npz --steps 1000 --checkpoint ckpt.safetensors\n");

  llvm::Expected<Model> parsed = parseModel(mpc_model);
  if (!parsed)
    return fail(parsed.takeError());
  Model &model = *parsed;
  llvm::Expected<int64_t> batchOr = batchSizeOf(model);
  if (!batchOr)
    return fail(batchOr.takeError());
  int64_t batch = *batchOr;
  if (batchSize >= 0 && batchSize != batch)
    return fail("--batch-size " + llvm::Twine(batchSize.getValue()) +
                " does not match the batch size the step was compiled for (" +
                llvm::Twine(batch) + "); recompile the model for another size");
  // Where the checkpoint goes is checked now, not after the whole run.
  if (!checkpointPath.empty())
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
  const int64_t micro = model.accumulateSteps;
  int64_t batchesPerEpoch = evalOnly ? 1 : samples / (batch * micro);
  if (batchesPerEpoch == 0)
    return fail(
        dataPath + ": " + llvm::Twine(samples) +
        " samples, fewer than one batch of " + llvm::Twine(batch * micro) +
        (micro > 1 ? " (" + std::to_string(micro) + " micro-batches of " +
                         std::to_string(batch) + ")"
                   : std::string()));

  // State: initializers, then --init, then --resume.
  mpc_init_globals(state.data);
  const TensorInfo *stepGlobal = nullptr, *lossScale = nullptr,
                   *skippedGlobal = nullptr, *gradStats = nullptr,
                   *gradNorm = nullptr;
  for (const TensorInfo &g : model.globals) {
    if (g.name == "loss_scale_skipped" && g.shape.empty() && g.dtype == "bool")
      skippedGlobal = &g;
    if (g.name == "mpc.step")
      stepGlobal = &g;
    if (g.name == "loss_scale" && g.shape.empty() && g.dtype == "f32")
      lossScale = &g;
    if (g.name == "grad_norm" && g.shape.empty() && g.dtype == "f32")
      gradNorm = &g;
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
    mpcrt_download(hostState.data, state.data, model.stateBytes);
  }
  if (!resumePath.empty()) {
    if (llvm::Error err =
            readCheckpoint(resumePath, model, hostState.data, true))
      return fail(std::move(err));
    mpcrt_upload(state.data, hostState.data, model.stateBytes);
  }
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
  // The state's values on the host, when a checkpoint is written. State
  // with a NaN or infinity never replaces a checkpoint: the old one is
  // kept, and the run says so.
  auto checkpoint = [&]() -> llvm::Error {
    mpcrt_download(hostState.data, state.data, model.stateBytes);
    std::string bad = firstNonFinite(model, hostState.data);
    if (!bad.empty()) {
      if (llvm::sys::fs::exists(checkpointPath)) {
        llvm::errs() << "warning: the state holds a non-finite value (" << bad
                     << "); " << checkpointPath
                     << " is kept as it was, not overwritten\n";
        return llvm::Error::success();
      }
      llvm::errs() << "warning: the state holds a non-finite value (" << bad
                   << "); writing it to " << checkpointPath << " anyway\n";
    }
    return writeCheckpoint(checkpointPath, model, hostState.data);
  };
  auto readGlobal = [&](const TensorInfo &g) {
    mpcrt_download(hostState.data + g.offset, state.data + g.offset, g.bytes);
    return hostState.data + g.offset;
  };

  int64_t total = steps >= 0    ? steps.getValue()
                  : epochs >= 0 ? epochs * batchesPerEpoch
                                : batchesPerEpoch;
  std::unique_ptr<llvm::raw_fd_ostream> metrics;
  if (!metricsPath.empty()) {
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
  auto run = [&](Entry &e) {
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
    ++e.calls;
  };
  // Copies samples order[first], order[first + 1], ... (file order when
  // `order` is empty) of `from` into the input buffers and uploads them.
  auto stage = [&](const std::vector<const Array *> &from,
                   const std::vector<int64_t> &order, int64_t first) {
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      int64_t sampleBytes = model.inputs[i].bytes / batch;
      for (int64_t r = 0; r < batch; ++r) {
        int64_t sample = order.empty() ? first + r : order[first + r];
        std::memcpy(inputBuffers[i]->data + r * sampleBytes,
                    from[i]->data.data() + sample * sampleBytes, sampleBytes);
      }
    }
    for (size_t i = 0; i < model.inputs.size(); ++i)
      mpcrt_upload(inputs[i], inputBuffers[i]->data, model.inputs[i].bytes);
  };
  // Evaluation: every whole batch of the validation data, in file order;
  // the means of the batches' loss and accuracy (batches of one size, so
  // the means over the samples).
  auto evaluate = [&](int64_t atStep) -> llvm::Error {
    auto start = std::chrono::steady_clock::now();
    int64_t batches = valSamples / batch;
    std::vector<double> sums(model.evalOutputs.size(), 0.0);
    for (int64_t k = 0; k < batches; ++k) {
      stage(valSources, {}, k * batch);
      run(evalEntry);
      for (size_t i = 0; i < sums.size(); ++i) {
        char value[8];
        mpcrt_download(value, evalOutputs[i], model.evalOutputs[i].bytes);
        sums[i] += readScalar(model.evalOutputs[i], value);
      }
    }
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
      metrics->flush();
      if (metrics->has_error()) {
        std::string why = metrics->error().message();
        metrics->clear_error();
        return llvm::createStringError(metricsPath +
                                       ": cannot write the metrics: " + why);
      }
    }
    llvm::outs() << (terminal ? "\r" : "") << text
                 << (terminal ? "\033[K\n" : "\n");
    llvm::outs().flush();
    return llvm::Error::success();
  };
  if (evalOnly) {
    if (llvm::Error err = evaluate(firstStep))
      return fail(std::move(err));
    return 0;
  }
  for (int64_t step = firstStep; step < total; ++step) {
    trained = true;
    int64_t epoch = step / batchesPerEpoch, first = step % batchesPerEpoch;
    if (epoch != orderEpoch) {
      order = permutation(samples, epoch);
      orderEpoch = epoch;
    }
    for (int64_t j = 0; j < micro; ++j) {
      stage(sources, order, (first * micro + j) * batch);
      run(j + 1 < micro ? microEntry : stepEntry);
    }
    ++stepsSinceLog;
    int64_t done = step + 1;
    if (done % std::max<int64_t>(1, logEvery) == 0 || done == total) {
      // Downloads wait for the steps: the only synchronisation.
      mpcrt_download(outputBuffers[0]->data, outputs[0],
                     model.outputs[0].bytes);
      double loss = readScalar(model.outputs[0], outputBuffers[0]->data);
      auto now = std::chrono::steady_clock::now();
      double ms =
          std::chrono::duration<double, std::milli>(now - lastLog).count() /
          stepsSinceLog;
      bool skipped = skippedGlobal && *readGlobal(*skippedGlobal) != 0;
      double scale =
          lossScale ? readScalar(*lossScale, readGlobal(*lossScale)) : 1.0;
      if (metrics) {
        llvm::json::Object line{{"step", done},
                                {"loss", jsonNumber(loss)},
                                {"loss_scale", jsonNumber(scale)},
                                {"skipped", skipped},
                                {"ms_per_step", ms},
                                {"samples_per_s", batch * micro * 1000.0 / ms},
                                {"memory_bytes", mpcrt_memory_bytes()}};
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
        metrics->flush();
        if (metrics->has_error()) {
          std::string why = metrics->error().message();
          metrics->clear_error();
          return fail(metricsPath + ": cannot write the metrics: " + why);
        }
      }
      if (terminal) {
        int filled = int(30.0 * done / std::max<int64_t>(total, 1));
        llvm::outs() << "\r[" << std::string(filled, '#')
                     << std::string(30 - filled, '.') << "] step " << done
                     << "/" << total << "  loss " << llvm::format("%.4f", loss)
                     << "  "
                     << llvm::format("%.0f", batch * micro * 1000.0 / ms)
                     << " samples/s\033[K" << (done == total ? "\n" : "");
      } else {
        llvm::outs() << "step " << done << "/" << total << " loss "
                     << llvm::format("%.6f", loss) << " ms/step "
                     << llvm::format("%.2f", ms) << " samples/s "
                     << llvm::format("%.0f", batch * micro * 1000.0 / ms)
                     << "\n";
      }
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
  return 0;
}
