//===- Variants.h - the mpc-compile variants the fuzzers take ---*- C++ -*-===//
//
// Which of mpc-compile's option sets an input is compiled with follows
// from a hash of its bytes, so that every pass a user can ask for is
// fuzzed: the backend's lowering (cpu, or cuda, whose fusion leaves
// attention unfused), the level (O1, O2 or O3) and the type (f16 or
// bf16), and the optional passes (data parallelism, gradient statistics,
// Tensor Core padding, numerics checks, evaluation at the training level,
// moves computed again before autodiff). MPC_FUZZ_VARIANT=N in the
// environment gives every input variant N instead (its bits as the
// hash's): a sweep of the seeds through one variant. The passes and their
// order are mpc-compile's own (stepPipeline, Pipeline.h).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_FUZZ_VARIANTS_H
#define MPC_TOOLS_MPC_FUZZ_VARIANTS_H

#include "mpc/Dialect/MPC/Transforms/Pipeline.h"

#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace mpc::fuzz {

/// The mpc-compile options an input is compiled with.
struct Variant {
  bool cuda, dataParallel, syncBatchNorm, gradStats, pad, checkNumerics,
      evalAmp, recomputeFirst;
  const char *level, *dtype;
};

/// The variant of an input's bytes (or MPC_FUZZ_VARIANT's).
inline Variant pipelineVariant(const uint8_t *data, size_t size) {
  static const char *forced = std::getenv("MPC_FUZZ_VARIANT");
  uint32_t h = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 16777619u;
  if (forced)
    h = static_cast<uint32_t>(std::strtoul(forced, nullptr, 0));
  // Half of the inputs lower for CUDA; a quarter take each optional
  // pass; O2 half of them, O1 and O3 a quarter each.
  static const char *const levels[] = {"O2", "O1", "O3", "O2"};
  Variant v;
  v.cuda = (h & 1) != 0;
  v.dataParallel = (h >> 1 & 3) == 0;
  v.gradStats = (h >> 3 & 3) == 0;
  v.pad = (h >> 5 & 3) == 0;
  v.checkNumerics = (h >> 7 & 3) == 0;
  v.evalAmp = (h >> 9 & 1) != 0;
  v.recomputeFirst = (h >> 10 & 1) != 0;
  v.level = levels[h >> 11 & 3];
  v.dtype = (h >> 13 & 1) != 0 ? "bf16" : "f16";
  v.syncBatchNorm = v.dataParallel && (h >> 14 & 1) != 0;
  return v;
}

/// The passes of mpc-compile without --train in the variant: `entry`
/// compiled as it is. On CUDA attention stays unfused, as mpc-compile
/// leaves it; before autodiff, moves are computed again and
/// concatenations convolved in parts only with the variant's
/// recomputeFirst (mpc-compile never does; mpc-opt may).
inline mlir::mpc::StepPipelineOptions
inferencePipeline(const Variant &v, const std::string &entry) {
  mlir::mpc::StepPipelineOptions o;
  o.step = entry;
  o.level = v.level;
  o.dtype = v.dtype;
  o.precisionOptions = "alignment-remarks=false";
  o.fuseOptions = v.cuda ? "attention=false" : "";
  o.recomputeBeforeAutodiff = v.recomputeFirst;
  if (v.pad)
    o.pad = "";
  if (v.checkNumerics)
    o.checkNumerics = "";
  o.backend = v.cuda ? "cuda" : "cpu";
  return o;
}

/// mpc-compile --train of the loss function `loss` into `step` in the
/// variant: `accumulate` micro-batches, Adam, the evaluation step `eval`
/// where not empty (at the training level with the variant's evalAmp),
/// the data-parallel sums in buckets of 4 KiB (with synchronised batch
/// norms in half of those variants).
inline mlir::mpc::StepPipelineOptions
trainingPipeline(const Variant &v, const std::string &loss,
                 const std::string &step, int accumulate,
                 const std::string &eval) {
  mlir::mpc::StepPipelineOptions o = inferencePipeline(v, step);
  o.train = true;
  o.loss = loss;
  o.accumulate = accumulate;
  o.optimizer = "kind=adam lr=0.001";
  o.eval = eval;
  o.evalPrecision = v.evalAmp ? "amp" : "f32";
  o.dataParallel = v.dataParallel;
  o.dataParallelOptions = v.syncBatchNorm
                              ? "bucket-bytes=4096 sync-batch-norm=true"
                              : "bucket-bytes=4096";
  o.gradStats = v.gradStats;
  return o;
}

/// Adds the passes of `options` to `pm`. A stage the fuzzer cannot add is
/// its bug, not the input's: stop, rather than fuzz nothing.
inline void addPipeline(const mlir::mpc::StepPipelineOptions &options,
                        mlir::PassManager &pm) {
  for (const mlir::mpc::PipelineStage &stage :
       mlir::mpc::stepPipeline(options)) {
    std::string reason;
    if (mlir::failed(mlir::mpc::addPipelineStage(pm, stage, reason)))
      llvm::report_fatal_error(llvm::Twine("mpc fuzzer: --") + stage.pass +
                               " refused the options '" + stage.options +
                               "': " + reason);
  }
}

} // namespace mpc::fuzz

#endif // MPC_TOOLS_MPC_FUZZ_VARIANTS_H
