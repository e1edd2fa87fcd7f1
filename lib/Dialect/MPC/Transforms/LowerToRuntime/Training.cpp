//===- Training.cpp - loss-scale ops and optimizer updates ----------------===//
//
// These kernels update their state in place: their results are the
// storage of the globals their state operands were loaded from (the planner
// leaves them out of the arena, and the driver checks that nothing reads
// that state afterwards).
//
//===----------------------------------------------------------------------===//

#include "../TypeUtils.h"
#include "Lowering.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

/// The multi-tensor ABI's description of `grads`, in its order: the count,
/// the dtype codes, the pointers and the element counts.
SmallVector<Value, 4> tensorListArgs(ValueRange grads, Lowering &l) {
  SmallVector<Value> pointers;
  SmallVector<int32_t> dtypes;
  SmallVector<int64_t> sizes;
  for (Value grad : grads) {
    pointers.push_back(l.ptr(grad));
    auto type = tensorType(grad);
    dtypes.push_back(dtypeCode(type.getElementType()));
    sizes.push_back(type.getNumElements());
  }
  return {l.i64(grads.size()), l.addressOf(l.symbols.i32Array(dtypes)),
          l.pointerArray(pointers), l.i64Array(sizes)};
}

LogicalResult unscaleAndCheck(UnscaleAndCheckOp op, Lowering &l) {
  SmallVector<Value> unscaled;
  for (auto [i, grad] : llvm::enumerate(op.getGrads())) {
    if (!cast<RankedTensorType>(op.getUnscaled()[i].getType())
             .getElementType()
             .isF32())
      return op.emitOpError("is lowered with f32 unscaled gradients only");
    // An unscaled gradient nobody reads is not written: check only.
    Value out = l.resultOrNull(op, i);
    if (!out)
      return failure();
    unscaled.push_back(out);
  }
  Value foundInf = l.result(op, op.getGrads().size());
  if (!foundInf)
    return failure();
  SmallVector<Value> args{l.ptr(op.getScale())};
  args.append(tensorListArgs(op.getGrads(), l));
  args.append({l.pointerArray(unscaled), foundInf});
  l.call("mpcrt_unscale_and_check", args);
  return success();
}

/// The planned offset of `v` in the arena, or -1 (a global, a constant, an
/// input).
int64_t arenaOffset(Value v) {
  auto result = dyn_cast<OpResult>(v);
  if (!result)
    return -1;
  auto offsets =
      result.getOwner()->getAttrOfType<DenseI64ArrayAttr>("mpc.offsets");
  if (!offsets || result.getResultNumber() >= offsets.size())
    return -1;
  return offsets[result.getResultNumber()];
}

/// One collective over the bucket's range of the arena (its members and
/// the alignment gaps between them), started here and waited on before the
/// first reader of a result.
LogicalResult allReduce(AllReduceOp op, Lowering &l) {
  int64_t begin = std::numeric_limits<int64_t>::max(), end = 0;
  for (auto [input, result] : llvm::zip(op.getInputs(), op.getResults())) {
    Value out = l.result(op, result.getResultNumber());
    if (!out)
      return failure();
    int64_t at = arenaOffset(result);
    if (arenaOffset(input) != at)
      l.copy(out, l.ptr(input), tensorType(input));
    begin = std::min(begin, at);
    end = std::max(end, at + bytesOf(tensorType(result)));
  }
  Type element = tensorType(op.getResult(0)).getElementType();
  int64_t elementBytes = bytesOf(RankedTensorType::get({}, element));
  if (end <= begin || (end - begin) % elementBytes != 0)
    return op.emitOpError("has no contiguous bucket in the memory plan");
  int32_t slot = l.nextCommSlot++;
  l.call("mpcrt_comm_all_reduce_start",
         {l.i32(slot), l.i32(dtypeCode(element)), l.offset(l.arena, begin),
          l.i64((end - begin) / elementBytes)});
  Operation *first = nullptr;
  for (Value result : op.getResults())
    for (Operation *user : result.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
  if (first)
    l.waitsBefore[first].push_back(slot);
  else
    l.call("mpcrt_comm_all_reduce_wait", {l.i32(slot)});
  return success();
}

LogicalResult clipGradNorm(ClipGradNormOp op, Lowering &l) {
  Value inv = l.result(op, 0), norm = l.result(op, 1),
        foundInf = l.result(op, 2);
  if (!inv || !norm || !foundInf)
    return failure();
  SmallVector<Value> args{l.ptr(op.getScale())};
  args.append(tensorListArgs(op.getGrads(), l));
  args.append({l.f64(op.getMaxNorm().convertToDouble()), inv, norm, foundInf});
  l.call("mpcrt_clip_grad_norm", args);
  return success();
}

LogicalResult gradStats(GradStatsOp op, Lowering &l) {
  Value stats = l.result(op, 0);
  if (!stats)
    return failure();
  SmallVector<Value> args{l.ptr(op.getScale())};
  args.append(tensorListArgs(op.getGrads(), l));
  args.push_back(stats);
  l.call("mpcrt_grad_stats", args);
  return success();
}

LogicalResult updateLossScale(UpdateLossScaleOp op, Lowering &l) {
  Value scale = l.ptr(op.getScale()), growth = l.ptr(op.getGrowthTracker()),
        hysteresis = l.ptr(op.getHysteresisTracker());
  double minScale =
      op.getMinScale() ? op.getMinScale()->convertToDouble() : 0.0;
  double maxScale = op.getMaxScale() ? op.getMaxScale()->convertToDouble()
                                     : std::numeric_limits<double>::infinity();
  l.call("mpcrt_update_loss_scale",
         {scale, growth, hysteresis, l.ptr(op.getFoundInf()),
          l.f64(op.getGrowthFactor().convertToDouble()),
          l.f64(op.getBackoffFactor().convertToDouble()),
          l.i64(op.getGrowthInterval()), l.i64(op.getHysteresis()),
          l.f64(minScale), l.f64(maxScale)});
  l.bind(op.getNewScale(), scale);
  l.bind(op.getNewGrowthTracker(), growth);
  l.bind(op.getNewHysteresisTracker(), hysteresis);
  return success();
}

/// The buffer of the low-precision copy: the global it is stored to.
FailureOr<Value> copyBuffer(Operation *op, Value copy, Lowering &l) {
  if (!copy)
    return l.null();
  for (Operation *user : copy.getUsers())
    if (auto store = dyn_cast<ml_program::GlobalStoreOp>(user))
      return l.global(store.getGlobal().getLeafReference());
  if (copy.use_empty())
    return l.null();
  return op->emitOpError("is lowered with its parameter copy stored to a "
                         "global (ml_program.global_store), the storage the "
                         "kernel writes");
}

FailureOr<std::string> optimizerSuffix(Operation *op, Type param, Type grad) {
  if (updateTakes(param, grad))
    return suffix(param) + "_" + suffix(grad);
  return op->emitOpError("has no runtime kernel for ")
         << param << " parameters with " << grad << " gradients";
}

LogicalResult sgd(SGDUpdateOp op, Lowering &l) {
  auto param = tensorType(op.getParam());
  auto s = optimizerSuffix(op, param.getElementType(),
                           tensorType(op.getGrad()).getElementType());
  FailureOr<Value> copy = copyBuffer(op, op.getParamCopy(), l);
  if (failed(s) || failed(copy))
    return failure();
  Type copyType = op.getCopyType() ? *op.getCopyType() : param.getElementType();
  l.call("mpcrt_sgd_update_" + *s,
         {l.ptr(op.getParam()), l.ptr(op.getGrad()), l.ptr(op.getLr()),
          l.ptrOrNull(op.getMomentumBuffer()), l.ptrOrNull(op.getFoundInf()),
          l.ptrOrNull(op.getInvScale()), l.i32(dtypeCode(copyType)), *copy,
          l.i64(param.getNumElements()),
          l.f64(op.getMomentum().convertToDouble()),
          l.f64(op.getDampening().convertToDouble()), l.i32(op.getNesterov()),
          l.f64(op.getWeightDecay().convertToDouble())});
  l.bind(op.getNewParam(), l.ptr(op.getParam()));
  if (op.getNewMomentumBuffer())
    l.bind(op.getNewMomentumBuffer(), l.ptr(op.getMomentumBuffer()));
  if (op.getParamCopy())
    l.bind(op.getParamCopy(), *copy);
  return success();
}

LogicalResult adam(AdamUpdateOp op, Lowering &l) {
  auto param = tensorType(op.getParam());
  auto s = optimizerSuffix(op, param.getElementType(),
                           tensorType(op.getGrad()).getElementType());
  FailureOr<Value> copy = copyBuffer(op, op.getParamCopy(), l);
  if (failed(s) || failed(copy))
    return failure();
  Type copyType = op.getCopyType() ? *op.getCopyType() : param.getElementType();
  l.call("mpcrt_adam_update_" + *s,
         {l.ptr(op.getParam()), l.ptr(op.getGrad()), l.ptr(op.getExpAvg()),
          l.ptr(op.getExpAvgSq()), l.ptr(op.getLr()), l.ptr(op.getStep()),
          l.ptrOrNull(op.getFoundInf()), l.ptrOrNull(op.getInvScale()),
          l.i32(dtypeCode(copyType)), *copy, l.i64(param.getNumElements()),
          l.f64(op.getBeta1().convertToDouble()),
          l.f64(op.getBeta2().convertToDouble()),
          l.f64(op.getEps().convertToDouble()),
          l.f64(op.getWeightDecay().convertToDouble()),
          l.i32(op.getDecoupled()), l.i32(op.getBiasCorrection()),
          l.i32(op.getLamb())});
  l.bind(op.getNewParam(), l.ptr(op.getParam()));
  l.bind(op.getNewExpAvg(), l.ptr(op.getExpAvg()));
  l.bind(op.getNewExpAvgSq(), l.ptr(op.getExpAvgSq()));
  if (op.getParamCopy())
    l.bind(op.getParamCopy(), *copy);
  return success();
}

} // namespace

namespace {

bool sameUpdate(AdamUpdateOp a, AdamUpdateOp b) {
  return a.getLamb() == b.getLamb() && a.getLr() == b.getLr() &&
         a.getStep() == b.getStep() && a.getFoundInf() == b.getFoundInf() &&
         a.getInvScale() == b.getInvScale() && a.getBeta1() == b.getBeta1() &&
         a.getBeta2() == b.getBeta2() && a.getEps() == b.getEps() &&
         a.getWeightDecay() == b.getWeightDecay() &&
         a.getDecoupled() == b.getDecoupled() &&
         a.getBiasCorrection() == b.getBiasCorrection();
}

bool sameUpdate(SGDUpdateOp a, SGDUpdateOp b) {
  return a.getLr() == b.getLr() && a.getFoundInf() == b.getFoundInf() &&
         a.getInvScale() == b.getInvScale() &&
         bool(a.getMomentumBuffer()) == bool(b.getMomentumBuffer()) &&
         a.getMomentum() == b.getMomentum() &&
         a.getDampening() == b.getDampening() &&
         a.getNesterov() == b.getNesterov() &&
         a.getWeightDecay() == b.getWeightDecay();
}

/// The arrays every multi-tensor update takes: dtypes, pointers, sizes.
struct UpdateArrays {
  SmallVector<int32_t> paramDtypes, gradDtypes, copyDtypes;
  SmallVector<Value> params, grads, copies;
  SmallVector<int64_t> sizes;

  LogicalResult add(Operation *op, Value param, Value grad, Value paramCopy,
                    std::optional<Type> copyType, Lowering &l) {
    auto type = tensorType(param);
    Type gradType = tensorType(grad).getElementType();
    FailureOr<Value> copy = copyBuffer(op, paramCopy, l);
    if (failed(optimizerSuffix(op, type.getElementType(), gradType)) ||
        failed(copy))
      return failure();
    paramDtypes.push_back(dtypeCode(type.getElementType()));
    gradDtypes.push_back(dtypeCode(gradType));
    copyDtypes.push_back(
        dtypeCode(copyType ? *copyType : type.getElementType()));
    params.push_back(l.ptr(param));
    grads.push_back(l.ptr(grad));
    copies.push_back(*copy);
    sizes.push_back(type.getNumElements());
    return success();
  }
  Value dtypes(ArrayRef<int32_t> codes, Lowering &l) {
    return l.addressOf(l.symbols.i32Array(codes));
  }
};

LogicalResult adamGroup(ArrayRef<Operation *> group, Lowering &l) {
  auto first = cast<AdamUpdateOp>(group.front());
  UpdateArrays arrays;
  SmallVector<Value> expAvgs, expAvgSqs;
  for (Operation *o : group) {
    auto op = cast<AdamUpdateOp>(o);
    if (failed(arrays.add(op, op.getParam(), op.getGrad(), op.getParamCopy(),
                          op.getCopyType(), l)))
      return failure();
    expAvgs.push_back(l.ptr(op.getExpAvg()));
    expAvgSqs.push_back(l.ptr(op.getExpAvgSq()));
  }
  l.call("mpcrt_adam_update_multi",
         {l.i64(group.size()),
          arrays.dtypes(arrays.paramDtypes, l),
          arrays.dtypes(arrays.gradDtypes, l),
          l.pointerArray(arrays.params),
          l.pointerArray(arrays.grads),
          l.pointerArray(expAvgs),
          l.pointerArray(expAvgSqs),
          arrays.dtypes(arrays.copyDtypes, l),
          l.pointerArray(arrays.copies),
          l.i64Array(arrays.sizes),
          l.ptr(first.getLr()),
          l.ptr(first.getStep()),
          l.ptrOrNull(first.getFoundInf()),
          l.ptrOrNull(first.getInvScale()),
          l.f64(first.getBeta1().convertToDouble()),
          l.f64(first.getBeta2().convertToDouble()),
          l.f64(first.getEps().convertToDouble()),
          l.f64(first.getWeightDecay().convertToDouble()),
          l.i32(first.getDecoupled()),
          l.i32(first.getBiasCorrection()),
          l.i32(first.getLamb())});
  for (auto [index, o] : llvm::enumerate(group)) {
    auto op = cast<AdamUpdateOp>(o);
    l.bind(op.getNewParam(), l.ptr(op.getParam()));
    l.bind(op.getNewExpAvg(), l.ptr(op.getExpAvg()));
    l.bind(op.getNewExpAvgSq(), l.ptr(op.getExpAvgSq()));
    if (op.getParamCopy())
      l.bind(op.getParamCopy(), arrays.copies[index]);
  }
  return success();
}

LogicalResult sgdGroup(ArrayRef<Operation *> group, Lowering &l) {
  auto first = cast<SGDUpdateOp>(group.front());
  UpdateArrays arrays;
  SmallVector<Value> buffers;
  for (Operation *o : group) {
    auto op = cast<SGDUpdateOp>(o);
    if (failed(arrays.add(op, op.getParam(), op.getGrad(), op.getParamCopy(),
                          op.getCopyType(), l)))
      return failure();
    buffers.push_back(l.ptrOrNull(op.getMomentumBuffer()));
  }
  l.call("mpcrt_sgd_update_multi",
         {l.i64(group.size()), arrays.dtypes(arrays.paramDtypes, l),
          arrays.dtypes(arrays.gradDtypes, l), l.pointerArray(arrays.params),
          l.pointerArray(arrays.grads), l.pointerArray(buffers),
          arrays.dtypes(arrays.copyDtypes, l), l.pointerArray(arrays.copies),
          l.i64Array(arrays.sizes), l.ptr(first.getLr()),
          l.ptrOrNull(first.getFoundInf()), l.ptrOrNull(first.getInvScale()),
          l.f64(first.getMomentum().convertToDouble()),
          l.f64(first.getDampening().convertToDouble()),
          l.i32(first.getNesterov()),
          l.f64(first.getWeightDecay().convertToDouble())});
  for (auto [index, o] : llvm::enumerate(group)) {
    auto op = cast<SGDUpdateOp>(o);
    l.bind(op.getNewParam(), l.ptr(op.getParam()));
    if (op.getNewMomentumBuffer())
      l.bind(op.getNewMomentumBuffer(), l.ptr(op.getMomentumBuffer()));
    if (op.getParamCopy())
      l.bind(op.getParamCopy(), arrays.copies[index]);
  }
  return success();
}

} // namespace

bool lowering::groupsWith(Operation *a, Operation *b) {
  if (auto adamA = dyn_cast<AdamUpdateOp>(a))
    if (auto adamB = dyn_cast<AdamUpdateOp>(b))
      return sameUpdate(adamA, adamB);
  if (auto sgdA = dyn_cast<SGDUpdateOp>(a))
    if (auto sgdB = dyn_cast<SGDUpdateOp>(b))
      return sameUpdate(sgdA, sgdB);
  return false;
}

LogicalResult lowering::lowerUpdateGroup(ArrayRef<Operation *> group,
                                         Lowering &l) {
  l.currentLoc = group.front()->getLoc();
  if (group.size() == 1) {
    if (auto op = dyn_cast<AdamUpdateOp>(group.front()))
      return adam(op, l);
    return sgd(cast<SGDUpdateOp>(group.front()), l);
  }
  if (isa<AdamUpdateOp>(group.front()))
    return adamGroup(group, l);
  return sgdGroup(group, l);
}

namespace {

/// The pointers of the numerics globals, or an error on `op` naming the
/// one missing.
FailureOr<SmallVector<Value>> numericsGlobals(Operation *op, Lowering &l,
                                              ArrayRef<StringRef> names) {
  SmallVector<Value> pointers;
  for (StringRef name : names) {
    if (!l.symbols.globals.count(name))
      return op->emitOpError("needs the global @")
             << name << "; run --mpc-check-numerics, which makes it";
    pointers.push_back(l.global(name));
  }
  return pointers;
}

} // namespace

LogicalResult lowering::lowerChecks(Operation *check, ArrayRef<Value> values,
                                    ArrayRef<int64_t> indices, Lowering &l) {
  auto g = numericsGlobals(
      check, l,
      {"mpc_numerics_first", "mpc_numerics_amax", "mpc_numerics_counts"});
  if (failed(g))
    return failure();
  SmallVector<Value> args = tensorListArgs(values, l);
  args.append({l.i64Array(indices), (*g)[0], (*g)[1], (*g)[2]});
  l.call("mpcrt_check_numerics", args);
  return success();
}

std::optional<LogicalResult> lowering::lowerTraining(Operation *op,
                                                     Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](UnscaleAndCheckOp op) { return unscaleAndCheck(op, l); })
      .Case([&](AllReduceOp op) { return allReduce(op, l); })
      .Case([&](UpdateLossScaleOp op) { return updateLossScale(op, l); })
      .Case([&](GradStatsOp op) { return gradStats(op, l); })
      .Case([&](ClipGradNormOp op) { return clipGradNorm(op, l); })
      .Case([&](IncrementOp op) -> LogicalResult {
        Value out = l.result(op, 0);
        if (!out)
          return failure();
        l.call("mpcrt_increment_i32",
               {l.ptr(op.getInput()), out, l.ptrOrNull(op.getSkip())});
        return success();
      })
      .Case([&](LRScheduleOp op) -> LogicalResult {
        Value out = l.result(op, 0);
        if (!out)
          return failure();
        int32_t kind = llvm::StringSwitch<int32_t>(op.getKind())
                           .Case("constant", 0)
                           .Case("linear_warmup", 1)
                           .Case("cosine", 2)
                           .Case("one_cycle", 3)
                           .Case("step", 4)
                           .Case("exponential", 5)
                           .Default(-1);
        if (kind < 0)
          return op.emitOpError("unknown schedule kind");
        l.call("mpcrt_lr_schedule",
               {l.ptr(op.getStep()), out, l.i32(kind),
                l.f64(op.getBase().convertToDouble()),
                l.i64(static_cast<int64_t>(op.getWarmup())),
                l.i64(static_cast<int64_t>(op.getTotal())),
                l.f64(op.getMinLr().convertToDouble()),
                l.f64(op.getGamma().convertToDouble()),
                l.i64(static_cast<int64_t>(op.getStepSize())),
                l.f64(op.getPctStart().convertToDouble()),
                l.f64(op.getDivFactor().convertToDouble()),
                l.f64(op.getFinalDivFactor().convertToDouble()),
                l.i32(op.getThreePhase() ? 1 : 0)});
        return success();
      })
      .Case([&](NumericsBeginOp op) -> LogicalResult {
        auto g =
            numericsGlobals(op, l, {"mpc_numerics_first", "mpc_numerics_amax"});
        if (failed(g))
          return failure();
        l.call("mpcrt_numerics_begin",
               {(*g)[0], (*g)[1], l.i64(static_cast<int64_t>(op.getCount()))});
        return success();
      })
      .Case([&](CheckNumericsOp op) {
        return lowerChecks(op, SmallVector<Value>(op.getInputs()),
                           op.getIndices(), l);
      })
      .Case([&](NumericsEndOp op) -> LogicalResult {
        auto g =
            numericsGlobals(op, l,
                            {"mpc_numerics_first", "mpc_numerics_events",
                             "mpc_numerics_amax", "mpc_numerics_event_amax"});
        if (failed(g))
          return failure();
        l.call("mpcrt_numerics_end",
               {(*g)[0], l.i64(static_cast<int64_t>(op.getCount())),
                l.offset(l.state, l.symbols.stepOffset), (*g)[1], (*g)[2],
                (*g)[3]});
        return success();
      })
      .Case([&](SGDUpdateOp op) { return sgd(op, l); })
      .Case([&](AdamUpdateOp op) { return adam(op, l); })
      .Default([](Operation *) { return std::nullopt; });
}
