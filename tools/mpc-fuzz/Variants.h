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
// hash's): a sweep of the seeds through one variant.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_FUZZ_VARIANTS_H
#define MPC_TOOLS_MPC_FUZZ_VARIANTS_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

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
  bool cuda, dataParallel, gradStats, pad, checkNumerics, evalAmp,
      recomputeFirst;
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
  return v;
}

/// mpc-compile's fusion options: on CUDA attention stays unfused; before
/// autodiff (`first`), moves are computed again and concatenations
/// convolved in parts only with the variant's recomputeFirst (mpc-compile
/// never does; mpc-opt may).
inline std::string fuseStep(const Variant &v, bool first) {
  std::string options = first ? "epilogues=false" : "";
  if (first && !v.recomputeFirst)
    options += " recompute-moves=false concat-convs=false";
  if (v.cuda)
    options += " attention=false";
  return options.empty() ? "mpc-fuse," : "mpc-fuse{" + options + "},";
}

inline std::string precisionStep(const Variant &v) {
  return std::string("mpc-assign-precision{level=") + v.level +
         " dtype=" + v.dtype + " alignment-remarks=false},";
}

/// The passes after the second fusion, as mpc-compile orders them, for
/// the step `func` (its memory plan with `planOptions`, e.g. "{guard=32}").
inline std::string tailSteps(const Variant &v, const std::string &func,
                             const std::string &planOptions) {
  std::string passes;
  if (v.pad)
    passes += "mpc-pad-for-tensor-cores,";
  if (v.checkNumerics)
    passes += "mpc-check-numerics{func=" + func + "},";
  return passes + "mpc-plan-memory" + planOptions +
         ",mpc-lower-to-runtime{entry=" + func +
         " backend=" + (v.cuda ? "cuda" : "cpu") + "})";
}

/// mpc-compile without --train: `entry` compiled as it is.
inline std::string inferencePipeline(const Variant &v,
                                     const std::string &entry) {
  return "builtin.module(mpc-verify-graph," + fuseStep(v, true) +
         precisionStep(v) + "canonicalize,cse," + fuseStep(v, false) +
         tailSteps(v, entry, "");
}

/// mpc-compile --train of the loss function `loss` into `step`:
/// `accumulate` micro-batches (1: none), the evaluation step `eval` where
/// not empty, loss scaling with `scaling`'s options.
inline std::string trainingPipeline(const Variant &v, const std::string &loss,
                                    const std::string &step, int accumulate,
                                    const std::string &eval,
                                    const std::string &scaling,
                                    const std::string &planOptions) {
  std::string p = "builtin.module(mpc-verify-graph," + fuseStep(v, true) +
                  "mpc-autodiff{loss=" + loss + " name=" + step + "},";
  if (accumulate > 1)
    p += "mpc-accumulate-gradients{func=" + step +
         " steps=" + std::to_string(accumulate) + "},";
  p += "mpc-optimizer{func=" + step + " kind=adam lr=0.001},";
  if (!eval.empty())
    p += "mpc-eval-step{loss=" + loss + " name=" + eval +
         " precision=" + (v.evalAmp ? "amp" : "f32") + "},";
  p += precisionStep(v);
  if (v.dataParallel)
    p += "mpc-data-parallel{func=" + step + " bucket-bytes=4096},";
  p += "mpc-loss-scaling{func=" + step + scaling + "},";
  if (v.gradStats)
    p += "mpc-grad-stats{func=" + step + "},";
  return p + "canonicalize,cse," + fuseStep(v, false) +
         tailSteps(v, step, planOptions);
}

/// A pipeline of the fuzzer's own that does not parse is its bug, not the
/// input's: stop, rather than fuzz nothing.
inline void parsePipeline(const std::string &pipeline, mlir::PassManager &pm) {
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error(llvm::Twine("mpc fuzzer: the pipeline does not "
                                         "parse: ") +
                             pipeline);
}

} // namespace mpc::fuzz

#endif // MPC_TOOLS_MPC_FUZZ_VARIANTS_H
