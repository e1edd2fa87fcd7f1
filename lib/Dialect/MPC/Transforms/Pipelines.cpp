//===- Pipelines.cpp - named pass pipelines -------------------------------===//

#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct AMPPipelineOptions : public PassPipelineOptions<AMPPipelineOptions> {
  Option<std::string> level{*this, "level",
                            llvm::cl::desc("Mixed-precision level O0..O3"),
                            llvm::cl::init("O2")};
  Option<std::string> dtype{*this, "dtype",
                            llvm::cl::desc("Low-precision type: f16 or bf16"),
                            llvm::cl::init("f16")};
  Option<std::string> loss{*this, "loss", llvm::cl::desc("The loss function"),
                           llvm::cl::init("loss")};
  Option<std::string> name{*this, "name",
                           llvm::cl::desc("The training step to build"),
                           llvm::cl::init("train_step")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("Options of --mpc-optimizer, e.g. {kind=adam lr=1e-3}"),
      llvm::cl::init("kind=sgd lr=0.01")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Options of --mpc-loss-scaling, e.g. {mode=dynamic}"),
      llvm::cl::init("mode=auto")};
  Option<int64_t> accumulate{*this, "accumulate",
                             llvm::cl::desc("Micro-batches per optimizer step "
                                            "(--mpc-accumulate-gradients)"),
                             llvm::cl::init(1)};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Add --mpc-data-parallel (gradients summed over ranks)"),
      llvm::cl::init(false)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Add --mpc-fuse: attention before "
                                   "autodiff, GEMM epilogues after the "
                                   "clean-up"),
                    llvm::cl::init(true)};
  Option<bool> gradStats{
      *this, "grad-stats",
      llvm::cl::desc("Add --mpc-grad-stats (gradient diagnostics)"),
      llvm::cl::init(false)};
};

} // namespace

void mlir::mpc::registerMPCPipelines() {
  // Registered by hand rather than with PassPipelineRegistration: options
  // forwarded to the passes are parsed here, and a bad one must be an error
  // of the command line, not an abort.
  registerPassPipeline(
      "mpc-amp-pipeline",
      "Forward graph + loss to a mixed-precision training step: autodiff, "
      "optimizer, precision assignment, loss scaling, cast clean-up",
      [](OpPassManager &pm, StringRef optionsString,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        AMPPipelineOptions o;
        if (failed(o.parseFromString(optionsString)))
          return failure();
        // Attention fuses in the forward graph, epilogues after the
        // precision assignment (--mpc-fuse); moves are computed again
        // only once the backward pass reads them, and concatenations'
        // convolutions split then (their data gradients stay one each).
        std::string pipeline =
            std::string(o.fuse ? "mpc-fuse{epilogues=false "
                                 "recompute-moves=false concat-convs=false},"
                               : "") +
            "mpc-autodiff{loss=" + o.loss + " name=" + o.name +
            "},mpc-accumulate-gradients{func=" + o.name +
            " steps=" + std::to_string(o.accumulate) +
            "},mpc-optimizer{func=" + o.name + " " + o.optimizer +
            "},mpc-assign-precision{level=" + o.level + " dtype=" + o.dtype +
            "}" +
            (o.dataParallel ? ",mpc-data-parallel{func=" + o.name + "}"
                            : std::string()) +
            ",mpc-loss-scaling{func=" + o.name + " " + o.lossScale + "}";
        if (o.gradStats)
          pipeline += ",mpc-grad-stats{func=" + o.name + "}";
        pipeline += ",canonicalize,cse";
        if (o.fuse)
          pipeline += ",mpc-fuse";
        std::string message;
        llvm::raw_string_ostream os(message);
        if (failed(parsePassPipeline(pipeline, pm, os)))
          return errorHandler("mpc-amp-pipeline: bad options: " + message);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(AMPPipelineOptions());
      });
}
