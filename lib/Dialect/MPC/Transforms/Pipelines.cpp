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
};

} // namespace

void mlir::mpc::registerMPCPipelines() {
  PassPipelineRegistration<AMPPipelineOptions>(
      "mpc-amp-pipeline",
      "Forward graph + loss to a mixed-precision training step: autodiff, "
      "optimizer, precision assignment, loss scaling, cast clean-up",
      [](OpPassManager &pm, const AMPPipelineOptions &o) {
        std::string pipeline =
            "mpc-autodiff{loss=" + o.loss + " name=" + o.name +
            "},mpc-optimizer{func=" + o.name + " " + o.optimizer +
            "},mpc-assign-precision{level=" + o.level + " dtype=" + o.dtype +
            "},mpc-loss-scaling{func=" + o.name + " " + o.lossScale +
            "},canonicalize,cse";
        if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
          llvm::report_fatal_error("mpc-amp-pipeline: bad options");
      });
}
