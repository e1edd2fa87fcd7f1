//===- Model.h - the runner's view of a compiled model ----------*- C++ -*-===//

#ifndef MPC_LIB_RUNTIME_RUNNER_MODEL_H
#define MPC_LIB_RUNTIME_RUNNER_MODEL_H

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mpc::runner {

/// A tensor of the descriptor: an input, an output or a global.
struct TensorInfo {
  std::string name, dtype; // dtype as the IR spells it: f32, i32, bool, ...
  std::vector<int64_t> shape;
  int64_t bytes = 0, offset = 0; // offset: in the state buffer (globals)
  int64_t elementBytes() const;
};

/// An op checked by --mpc-check-numerics (its number is its position).
struct NumericsOp {
  std::string op, loc, phase, function, dtype;
  std::vector<int64_t> inputs; // the numbers of its operands' ops, -1: none
};

/// Bytes of the arena after one buffer that no buffer holds (a step
/// compiled with --arena-guards): the runner fills them before each call
/// of the function and checks them after.
struct ArenaGuard {
  int slot = 0; // 0 the step, 1 the micro-step, 2 the evaluation step
  int64_t offset = 0, bytes = 0;
  std::string op, loc; // the op whose result the buffer holds first
};

struct Model {
  std::string entry;
  int64_t arenaBytes = 0, stateBytes = 0;
  /// Micro-batches per optimizer step: mpc_accumulate runs K-1 times, then
  /// mpc_step (gradient accumulation; 1 without).
  int64_t accumulateSteps = 1;
  /// The loss scale's floor (min-scale), 0 without one.
  double lossScaleMin = 0;
  std::vector<TensorInfo> inputs, outputs, globals;
  /// The evaluation step's scalar results (loss, accuracy), empty without
  /// one (mpc_eval then does nothing); it reads `inputs`.
  std::vector<TensorInfo> evalOutputs;
  /// Compiled with --data-parallel: the global the runner sets to 1/N, and
  /// those averaged over the ranks before a checkpoint.
  bool dataParallel = false;
  std::string inverseSize;
  std::vector<std::string> rankMean;
  /// The checked ops of a step compiled with --check-numerics (else empty).
  std::vector<NumericsOp> numericsOps;
  /// The arena's guards (compiled with --arena-guards, else empty), and
  /// the bytes after every global of the state (0 without).
  std::vector<ArenaGuard> arenaGuards;
  int64_t stateGuard = 0;
};

/// Parses the JSON descriptor the compiler embeds (mpc_model).
llvm::Expected<Model> parseModel(llvm::StringRef json);

/// The batch size of the step, or why the runner cannot run it: the first
/// result must be the scalar float loss, and every input must have the
/// batch as its leading dimension. mpc-compile asks the same at compile
/// time.
llvm::Expected<int64_t> batchSizeOf(const Model &model);

/// A host array read from .npy data.
struct Array {
  std::string dtype; // as TensorInfo::dtype
  std::vector<int64_t> shape;
  std::vector<char> data;
};

/// The whole of the file at `path` (mapped where the system can), or why
/// not, naming the file. A regular file or a pipe: a device, a socket or a
/// folder is refused (/dev/zero never ends; the readers take files whole).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readWholeFile(const std::string &path);

/// Reads every array of an .npz archive, or every .npy file of a directory,
/// or one .npy file (named after its stem). Errors name the file.
llvm::Error readArrays(const std::string &path,
                       std::vector<std::pair<std::string, Array>> &arrays);

/// Where a run stands in its data between steps: the next step's first
/// sample is at `offset` of epoch `epoch`'s order (both -1: not known, a
/// checkpoint written before they were recorded).
struct DataPosition {
  int64_t epoch = -1, offset = -1;
};

/// safetensors checkpoints of the state buffer: every global by name.
/// Writing goes to a temporary file renamed over `path` when complete.
/// A data-parallel job's checkpoint records its number of ranks; every
/// checkpoint records the data position where it is known.
llvm::Error writeCheckpoint(const std::string &path, const Model &model,
                            const char *state, int64_t worldSize = 1,
                            DataPosition position = {});
/// Checks, before training, that a checkpoint can be written at `path`: its
/// folder exists and is writable, and `path` is a regular file or absent
/// (never a device, a folder or another special file). Removes the
/// temporary files of earlier writes that were killed (`path.tmp.PID` of a
/// process that no longer runs), saying so on `notes`.
llvm::Error prepareCheckpoint(const std::string &path,
                              llvm::raw_ostream &notes);

/// The first non-finite value of a floating-point global in `state`, as
/// "@name element i", or empty when every value is finite.
std::string firstNonFinite(const Model &model, const char *state);

/// Reads `path` into `state`. With `all`, every global must be present
/// (resume); otherwise the ones present are loaded (init) and returned
/// (a data-parallel job's 1/N global is skipped when the model has none).
/// `worldSize` receives the number of ranks that wrote it (1 when it does
/// not say), `position` its data position (-1s when it does not say).
llvm::Error readCheckpoint(const std::string &path, const Model &model,
                           char *state, bool all,
                           std::vector<std::string> *loaded = nullptr,
                           int64_t *worldSize = nullptr,
                           DataPosition *position = nullptr);

} // namespace mpc::runner

#endif // MPC_LIB_RUNTIME_RUNNER_MODEL_H
