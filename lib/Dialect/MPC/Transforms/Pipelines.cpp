//===- Pipelines.cpp - named pass pipelines -------------------------------===//

#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Dialect/MPC/Transforms/Pipeline.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using mlir::mpc::PipelineStage;
using Role = PipelineStage::Role;

/// The words of `parts` that are not empty, one space between each.
static std::string words(std::initializer_list<StringRef> parts) {
  std::string joined;
  for (StringRef part : parts) {
    part = part.trim(' ');
    if (part.empty())
      continue;
    if (!joined.empty())
      joined += ' ';
    joined += part.str();
  }
  return joined;
}

std::vector<PipelineStage>
mlir::mpc::stepPipeline(const StepPipelineOptions &o) {
  std::vector<PipelineStage> stages;
  auto add = [&](Role role, StringRef pass, std::string options = "") {
    stages.push_back({role, pass.str(), std::move(options)});
  };
  const std::string func = "func=" + o.step;
  if (o.verify)
    add(Role::Verify, "mpc-verify-graph");
  // Attention fuses in the forward graph, before autodiff takes its
  // gradient as the fused op's (its intermediates have no other reader
  // there); the GEMM epilogues after precision assignment. Without
  // training too, so that what fuses in the forward graph (a layer norm
  // written out of its steps) fuses before precision assignment puts
  // casts between its parts. Moves computed again need the backward
  // pass's readers, and concatenations' convolutions split after autodiff
  // keep their data gradient one convolution (its parts' gradients
  // views).
  if (o.fuse)
    add(Role::ForwardFuse, "mpc-fuse",
        words({"epilogues=false head-products=false",
               o.recomputeBeforeAutodiff
                   ? ""
                   : "recompute-moves=false concat-convs=false",
               o.fuseOptions}));
  if (o.train) {
    add(Role::Autodiff, "mpc-autodiff", "loss=" + o.loss + " name=" + o.step);
    add(Role::Accumulate, "mpc-accumulate-gradients",
        func + " steps=" + std::to_string(o.accumulate));
    // The user's words verbatim after the step's: an error quotes them.
    add(Role::Optimizer, "mpc-optimizer", func + " " + o.optimizer);
    if (!o.eval.empty())
      add(Role::EvalStep, "mpc-eval-step",
          "loss=" + o.loss + " name=" + o.eval +
              " precision=" + o.evalPrecision);
  }
  if (!o.level.empty())
    add(Role::Precision, "mpc-assign-precision",
        words({"level=" + o.level, "dtype=" + o.dtype, o.precisionOptions}));
  if (o.dataParallel)
    add(Role::DataParallel, "mpc-data-parallel",
        func + " " + o.dataParallelOptions);
  if (o.train)
    add(Role::LossScaling, "mpc-loss-scaling",
        func + " " + o.lossScaling +
            (o.clipGradNorm.empty() ? ""
                                    : " clip-grad-norm=" + o.clipGradNorm));
  if (o.gradStats)
    add(Role::GradStats, "mpc-grad-stats", func);
  add(Role::Cleanup, "canonicalize");
  add(Role::Cleanup, "cse");
  if (o.fuse)
    add(Role::Fuse, "mpc-fuse", words({o.fuseOptions, o.laterFuseOptions}));
  // After fusion: a fused product is padded with its bias.
  if (o.pad)
    add(Role::Pad, "mpc-pad-for-tensor-cores", *o.pad);
  if (o.checkNumerics)
    add(Role::CheckNumerics, "mpc-check-numerics",
        words({func, *o.checkNumerics}));
  if (!o.backend.empty()) {
    add(Role::PlanMemory, "mpc-plan-memory", o.planOptions);
    add(Role::Lower, "mpc-lower-to-runtime",
        words({"entry=" + o.step, "backend=" + o.backend, o.lowerOptions}));
  }
  return stages;
}

LogicalResult mlir::mpc::addPipelineStage(OpPassManager &pm,
                                          const PipelineStage &stage,
                                          std::string &reason) {
  reason.clear();
  const PassInfo *info = PassInfo::lookup(stage.pass);
  if (!info) {
    reason = "no pass is registered as --" + stage.pass;
    return failure();
  }
  if (succeeded(
          info->addToPipeline(pm, stage.options, [&](const Twine &message) {
            reason = message.str();
            return failure();
          })))
    return success();
  StringRef why = StringRef(reason).trim();
  why.consume_front("<Pass-Options-Parser>: ");
  reason = why.str();
  return failure();
}

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
        mpc::StepPipelineOptions step;
        step.verify = false;
        step.train = true;
        step.loss = o.loss;
        step.step = o.name;
        step.accumulate = o.accumulate;
        step.optimizer = o.optimizer;
        step.level = o.level;
        step.dtype = o.dtype;
        step.dataParallel = o.dataParallel;
        step.lossScaling = o.lossScale;
        step.gradStats = o.gradStats;
        step.fuse = o.fuse;
        for (const PipelineStage &stage : mpc::stepPipeline(step)) {
          std::string reason;
          if (failed(mpc::addPipelineStage(pm, stage, reason)))
            return errorHandler("mpc-amp-pipeline: bad options: --" +
                                stage.pass + "{" + stage.options + "}" +
                                (reason.empty() ? "" : ": " + reason));
        }
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(AMPPipelineOptions());
      });
}
