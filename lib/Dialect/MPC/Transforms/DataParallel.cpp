//===- DataParallel.cpp - gradients summed over ranks in buckets ----------===//
//
// Gathers the gradients the optimizer reads into buckets of one element
// type, each reduced over every rank by one mpc.all_reduce placed right
// after its last gradient, and folds the 1/N of the mean into the gradient
// seed. The memory plan lays each bucket out contiguously.
//
//===----------------------------------------------------------------------===//

#include "TrainingStep.h"
#include "TypeUtils.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr const char *kPass = "mpc-data-parallel";

/// The global the training executable sets to 1/N at start-up.
constexpr llvm::StringLiteral kInverseSize = "data_parallel_inverse_size";

/// `v` through casts: the value they convert.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  return v;
}

struct DataParallelPass
    : public mpc::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (failed(checkOption(module, kPass, "bucket-bytes", double(bucketBytes),
                           {1, double(int64_t(1) << 40)})))
      return signalPassFailure();
    if (bf16Reduce != "f32" && bf16Reduce != "bf16") {
      module.emitError(kPass) << ": option bf16-reduce must be f32 or bf16, "
                                 "got '"
                              << bf16Reduce << "'";
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError(kPass) << ": no training step @" << func;
      return signalPassFailure();
    }
    if (step->hasAttr("mpc.data_parallel")) {
      step.emitOpError(kPass) << ": the step already reduces its gradients "
                                 "(the pass ran twice)";
      return signalPassFailure();
    }
    func::FuncOp micro = findMicroStep(module, func);
    if (!micro && step->hasAttr("mpc.accumulate_steps")) {
      step.emitOpError(kPass) << ": the accumulation micro-step is missing";
      return signalPassFailure();
    }
    FailureOr<OptimizerUpdates> collected =
        collectOptimizerUpdates(step, kPass);
    if (failed(collected))
      return signalPassFailure();
    if (collected->ops.empty()) {
      step.emitOpError(kPass) << ": no optimizer update reads a gradient; "
                                 "run --mpc-optimizer first";
      return signalPassFailure();
    }
    if (step.getBody().getBlocks().size() != 1) {
      step.emitOpError(kPass) << ": the step must have a single block";
      return signalPassFailure();
    }
    Operation *seed = findLossSeed(step);
    if (!seed) {
      step.emitOpError(kPass)
          << ": no loss gradient seed (the constant --mpc-autodiff marks "
             "mpc.loss_seed); run this pass before --mpc-loss-scaling and "
             "canonicalization";
      return signalPassFailure();
    }
    Operation *microSeed = micro ? findLossSeed(micro) : nullptr;
    if (micro && !microSeed) {
      micro.emitOpError(kPass) << ": no loss gradient seed in the micro-step";
      return signalPassFailure();
    }

    OpBuilder b(&getContext());
    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    auto inverse = createStateGlobal(
        module, b, kPass, kInverseSize, f32Scalar,
        DenseElementsAttr::get(f32Scalar, b.getF32FloatAttr(1.0f)), true);
    if (!inverse)
      return signalPassFailure();
    inverse->setAttr("mpc.inverse_world_size", b.getUnitAttr());
    auto inverseRef = FlatSymbolRefAttr::get(inverse.getSymNameAttr());

    // The seed times 1/N (before --mpc-loss-scaling, which multiplies the
    // seed's users by the scale).
    auto foldSeed = [&](Operation *seedOp) {
      Value seedValue = seedOp->getResult(0);
      auto type = cast<RankedTensorType>(seedValue.getType());
      b.setInsertionPointAfter(seedOp);
      Location loc = seedOp->getLoc();
      Value n = ml_program::GlobalLoadOp::create(b, loc, f32Scalar, inverseRef);
      if (type != f32Scalar)
        n = CastOp::create(b, loc, type, n);
      Value folded = MulOp::create(b, loc, seedValue, n);
      seedValue.replaceAllUsesExcept(folded, folded.getDefiningOp());
    };
    foldSeed(seed);
    if (microSeed)
      foldSeed(microSeed);

    // The gradients in production order (each once), with the update
    // operands that read them.
    Block &body = step.getBody().front();
    llvm::MapVector<Value, SmallVector<OpOperand *>> readers;
    for (Operation *u : collected->ops) {
      OpOperand &operand = u->getOpOperand(1);
      Value g = operand.get();
      Operation *def = g.getDefiningOp();
      // Constants are the same on every rank; the others are computed.
      if (!def || def->getBlock() != &body ||
          isa<ConstantOp, ml_program::GlobalLoadOp>(def))
        continue;
      readers[g].push_back(&operand);
    }
    SmallVector<Value> grads;
    for (auto &entry : readers)
      grads.push_back(entry.first);
    llvm::sort(grads, [](Value x, Value y) {
      return x.getDefiningOp()->isBeforeInBlock(y.getDefiningOp());
    });

    // Buckets by element type, closed when the next gradient would take
    // them past bucket-bytes.
    struct Bucket {
      SmallVector<Value> members; // the values reduced
      SmallVector<Value> grads;   // the gradients they stand for
      int64_t bytes = 0;
    };
    llvm::MapVector<Type, Bucket> open;
    int64_t buckets = 0;
    Location loc = step.getLoc();
    auto close = [&](Bucket &bucket) {
      if (bucket.members.empty())
        return;
      Operation *last = bucket.members.front().getDefiningOp();
      for (Value m : bucket.members)
        if (last->isBeforeInBlock(m.getDefiningOp()))
          last = m.getDefiningOp();
      b.setInsertionPointAfter(last);
      auto reduce = AllReduceOp::create(b, loc, ValueRange(bucket.members),
                                        b.getI64IntegerAttr(buckets++));
      for (auto [k, g] : llvm::enumerate(bucket.grads))
        for (OpOperand *use : readers[g])
          use->set(reduce.getResult(k));
      bucket = Bucket();
    };
    for (Value g : grads) {
      auto type = cast<RankedTensorType>(g.getType());
      Value member = g;
      if (type.getElementType().isBF16() && bf16Reduce == "f32") {
        b.setInsertionPointAfterValue(g);
        member = CastOp::create(b, g.getLoc(), type.clone(b.getF32Type()), g);
      }
      auto memberType = cast<RankedTensorType>(member.getType());
      int64_t bytes = byteSize(memberType);
      Bucket &bucket = open[memberType.getElementType()];
      if (!bucket.members.empty() && bucket.bytes + bytes > bucketBytes)
        close(bucket);
      bucket.members.push_back(member);
      bucket.grads.push_back(g);
      bucket.bytes += bytes;
    }
    for (auto &entry : open)
      close(entry.second);
    step->setAttr("mpc.data_parallel", b.getUnitAttr());

    // Synchronised batch norms: the statistics of every rank's samples, in
    // the step and its micro-step, forward and backward alike.
    if (syncBatchNorm) {
      int64_t norms = 0;
      for (func::FuncOp f : {step, micro}) {
        if (!f)
          continue;
        f.walk([&](Operation *op) {
          if (auto bn = dyn_cast<BatchNormOp>(op)) {
            bn.setSync(true);
            ++norms;
          } else if (auto back = dyn_cast<BatchNormBackwardOp>(op)) {
            back.setSync(true);
          }
        });
      }
      if (norms == 0)
        step.emitWarning(kPass)
            << ": sync-batch-norm=true, but the step has no batch norm";
    }

    // Batch norm's running statistics, averaged over ranks at checkpoints
    // (a synchronised one's are the same on every rank already).
    step.walk([&](ml_program::GlobalStoreOp store) {
      Value v = throughCasts(store.getValue());
      auto bn = v.getDefiningOp<BatchNormOp>();
      if (!bn || bn.getSync() ||
          (v != bn.getNewRunningMean() && v != bn.getNewRunningVar()))
        return;
      if (auto global = module.lookupSymbol<ml_program::GlobalOp>(
              store.getGlobal().getLeafReference()))
        global->setAttr("mpc.rank_mean", b.getUnitAttr());
    });
  }
};

} // namespace
