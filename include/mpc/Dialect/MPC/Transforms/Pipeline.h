//===- Pipeline.h - the passes of a compiled step, in order -----*- C++ -*-===//
//
// The one place that orders mpc's passes for a compiled step: mpc-compile,
// --mpc-amp-pipeline and the fuzzers build their pipelines here, so that
// what is fuzzed and what mpc-opt's pipeline runs is what mpc-compile
// runs.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_DIALECT_MPC_TRANSFORMS_PIPELINE_H
#define MPC_DIALECT_MPC_TRANSFORMS_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mpc {

/// One pass of a pipeline: its registered name and its options as
/// KEY=VALUE words (values quoted where they hold a space). `role` tells
/// the two fusions apart, and a tool which of its options fed the stage.
struct PipelineStage {
  enum class Role {
    Verify,
    ForwardFuse,
    Autodiff,
    Accumulate,
    Optimizer,
    EvalStep,
    Precision,
    DataParallel,
    LossScaling,
    GradStats,
    Cleanup,
    Fuse,
    Pad,
    CheckNumerics,
    PlanMemory,
    Lower,
  };
  Role role;
  std::string pass;
  std::string options;
};

/// What a compiled step goes through. Words are the passes' own options
/// (`mpc-opt --help`); `step` is the training step's name with `train`,
/// the function compiled without it.
struct StepPipelineOptions {
  /// --mpc-verify-graph first.
  bool verify = true;

  /// The training passes: autodiff of `loss` into `step`, accumulation of
  /// `accumulate` micro-batches, the optimizer (`optimizer`'s words), the
  /// evaluation step `eval` (none where empty) in `evalPrecision`, loss
  /// scaling (`lossScaling`'s words, clipping at `clipGradNorm` where not
  /// empty).
  bool train = false;
  std::string loss = "loss";
  std::string step = "train_step";
  int64_t accumulate = 1;
  std::string optimizer = "kind=sgd lr=0.01";
  std::string eval;
  std::string evalPrecision = "f32";
  std::string lossScaling = "mode=auto";
  std::string clipGradNorm;

  /// Precision assignment at `level` (none where empty) in `dtype`, with
  /// `precisionOptions`' words besides.
  std::string level;
  std::string dtype = "f16";
  std::string precisionOptions;

  /// --mpc-data-parallel of the step with `dataParallelOptions`' words.
  bool dataParallel = false;
  std::string dataParallelOptions;
  /// --mpc-grad-stats of the step.
  bool gradStats = false;

  /// The two fusions: the forward graph's before autodiff (without the
  /// GEMM epilogues, which wait for precision assignment; without moves
  /// computed again or concatenations' convolutions split unless
  /// `recomputeBeforeAutodiff`: both need the backward pass's readers)
  /// and the whole step's after the clean-up. `fuseOptions`' words go to
  /// both, `laterFuseOptions`' to the second only.
  bool fuse = true;
  std::string fuseOptions;
  std::string laterFuseOptions;
  bool recomputeBeforeAutodiff = false;

  /// After the second fusion: --mpc-pad-for-tensor-cores and
  /// --mpc-check-numerics of the step where set (their words), then,
  /// where `backend` is not empty, the memory plan (`planOptions`' words)
  /// and the lowering for `backend` (`lowerOptions`' words besides).
  std::optional<std::string> pad;
  std::optional<std::string> checkNumerics;
  std::string planOptions;
  std::string backend;
  std::string lowerOptions;
};

/// The passes of `options`, in the order mpc-compile runs them.
std::vector<PipelineStage> stepPipeline(const StepPipelineOptions &options);

/// Adds `stage`'s pass with its options to `pm`; on failure `reason` holds
/// why (empty where the options parser printed it itself).
LogicalResult addPipelineStage(OpPassManager &pm, const PipelineStage &stage,
                               std::string &reason);

} // namespace mlir::mpc

#endif // MPC_DIALECT_MPC_TRANSFORMS_PIPELINE_H
