//===- PlanMemory.cpp - static arena planning by liveness -----------------===//

#include "GlobalRoles.h"
#include "ReportFile.h"
#include "StateLayout.h"
#include "TypeUtils.h"
#include "Unwritten.h"
#include "Views.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

namespace mlir::mpc {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

static llvm::cl::opt<std::string> clMemoryReport(
    "mpc-memory-report",
    llvm::cl::desc("Write the report of --mpc-plan-memory to FILE ('-' for "
                   "stdout)"),
    llvm::cl::value_desc("FILE"), llvm::cl::init(""));

namespace {

/// Ops that read each operand element once and write the same element of
/// the result: the result may overwrite a dying operand of its size.
bool isElementwise(Operation *op) {
  return isa<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SigmoidOp, ReluOp,
             GeluOp, SinOp, CosOp, AddOp, SubOp, MulOp, DivOp, PowOp,
             ReluGradOp, GeluGradOp, TanhGradOp, SigmoidGradOp,
             DropoutBackwardOp, DropoutAddOp, ScaleLossOp>(op);
}

/// The addend an op accumulates its result `result` into, or null: a
/// GEMM's (or its bias gradient's column sums'), a layer or batch norm
/// backward's parameter gradients', an embedding backward's table, a
/// convolution's (a concatenation's part before). Each element
/// of the addend is read only for the same element of the result.
Value accumulatedAddend(Operation *op, unsigned result) {
  if (auto accumulate = dyn_cast<MatmulAddOp>(op))
    return accumulate.getAddend();
  if (auto grads = dyn_cast<MatmulBiasGradOp>(op))
    return result == 0 ? grads.getAddend() : grads.getBiasAddend();
  if (auto sums = dyn_cast<ColumnSumsOp>(op))
    return sums.getAddends().empty() ? Value() : sums.getAddends()[result];
  if (auto back = dyn_cast<LayerNormBackwardOp>(op))
    return result == 1   ? back.getGammaAddend()
           : result == 2 ? back.getBetaAddend()
                         : Value();
  if (auto back = dyn_cast<AddLayerNormBackwardOp>(op))
    return result == 2   ? back.getGammaAddend()
           : result == 3 ? back.getBetaAddend()
                         : Value();
  if (auto back = dyn_cast<BatchNormBackwardOp>(op))
    return result == 1   ? back.getGammaAddend()
           : result == 2 ? back.getBetaAddend()
                         : Value();
  if (auto back = dyn_cast<EmbeddingBackwardOp>(op))
    return back.getAddend();
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return conv.getAddend();
  return {};
}

/// The operands whose buffer an op's result `result` may take where they
/// die: every operand of an elementwise op, the addend a GEMM accumulates
/// into.
SmallVector<Value> inPlaceOperands(Operation *op, unsigned result) {
  if (isElementwise(op))
    return SmallVector<Value>(op->getOperands());
  if (Value addend = accumulatedAddend(op, result))
    return {addend};
  // Each element is read once, then its result written at the same index.
  if (auto norm = dyn_cast<BatchNormInferenceOp>(op))
    return {norm.getInput()};
  // A row's gradient is read whole before its row of the result is written
  // (both backends' kernels): the scores' gradient over the dropped
  // probabilities' where the types match.
  if (auto back = dyn_cast<SoftmaxDropoutBackwardOp>(op);
      back && result == 0 &&
      back.getGrad().getType() == back.getResult().getType())
    return {back.getGrad()};
  return {};
}

/// The operands whose global a result may be computed in (below): any
/// operand of a one-result elementwise op; the addend a GEMM accumulates
/// into; a batch norm's running mean and variance for its new ones
/// (results 1 and 2), which the kernel updates in place.
SmallVector<Value> globalOperandsOf(Operation *op, unsigned result) {
  if (isElementwise(op) && op->getNumResults() == 1)
    return SmallVector<Value>(op->getOperands());
  if (Value addend = accumulatedAddend(op, result))
    return {addend};
  if (auto norm = dyn_cast<BatchNormOp>(op)) {
    if (result == 1)
      return {norm.getRunningMean()};
    if (result == 2)
      return {norm.getRunningVar()};
  }
  return {};
}

/// Whether an all-reduce reads `v` (it sums its operands in place).
bool readByAllReduce(Value v) {
  return llvm::any_of(v.getUsers(),
                      [](Operation *user) { return isa<AllReduceOp>(user); });
}

/// The global an op may write a result into directly: the global's load
/// (of the result's type) is one of its globalOperandsOf (a gradient
/// accumulator's `acc = acc + g`, a batch norm's running statistics),
/// nothing reads the global after the op, and every store that writes it
/// after the op either stores the result (the result is then the global's
/// value: that store copies nothing) or comes after the result's last
/// reader (the global's old value was dead from the op on, so its storage
/// served the result until then: the step that consumes the accumulated
/// gradients, read by the optimizer before the accumulators are reset).
/// The result then takes no arena buffer. Null otherwise, and where no
/// store follows (the global would keep the result).
SymbolRefAttr globalWrittenInPlace(
    Operation *op, Value result, const DenseMap<Operation *, int64_t> &order,
    const llvm::DenseMap<Attribute, SmallVector<Operation *>> &accessesOf,
    int64_t resultEnd) {
  // An all-reduce sums its operands in place: not in a global.
  if (readByAllReduce(result))
    return {};
  int64_t here = order.lookup(op);
  for (Value operand :
       globalOperandsOf(op, cast<OpResult>(result).getResultNumber())) {
    auto load = operand.getDefiningOp<ml_program::GlobalLoadOp>();
    if (!load || load.getType() != result.getType())
      continue;
    SymbolRefAttr global = load.getGlobalAttr();
    bool storedAfter = false, conflict = false;
    for (Operation *access : accessesOf.lookup(global)) {
      if (auto other = dyn_cast<ml_program::GlobalLoadOp>(access)) {
        for (Operation *reader : other.getResult().getUsers())
          if (reader != op && order.lookup(reader) >= here)
            conflict = true;
        continue;
      }
      if (order.lookup(access) < here)
        continue;
      auto store = cast<ml_program::GlobalStoreOp>(access);
      if (store->getBlock() != op->getBlock() ||
          (store.getValue() != result && order.lookup(store) <= resultEnd))
        conflict = true;
      storedAfter = true;
    }
    if (storedAfter && !conflict)
      return global;
  }
  return {};
}

/// Moves each store of a constant (a gradient accumulator's reset to zero,
/// a loss sum's) down to the end of the function where nothing after it
/// reads or writes its global: the same values, and the value it
/// overwrites stays unread until the end. The step that consumes
/// accumulated gradients resets the accumulators before --mpc-optimizer
/// adds the updates that read the sums; after this, the sums are read
/// before the reset and may be computed in the accumulators' storage
/// (globalWrittenInPlace) instead of the arena.
void sinkConstantStores(func::FuncOp func) {
  Block &block = func.getBody().front();
  Operation *terminator = block.getTerminator();
  llvm::DenseMap<Attribute, Operation *> lastAccess;
  func.walk([&](Operation *op) {
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
      lastAccess[load.getGlobalAttr()] = op;
    else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op))
      lastAccess[store.getGlobalAttr()] = op;
  });
  SmallVector<Operation *> sunk;
  for (Operation &op : block)
    if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op);
        store && store.getValue().getDefiningOp<ConstantOp>() &&
        lastAccess.lookup(store.getGlobalAttr()) == store)
      sunk.push_back(store);
  for (Operation *store : sunk)
    store->moveBefore(terminator);
}

/// Moves each accumulation into a gradient accumulator (a global marked
/// mpc.grad_accumulator) up to where its gradient is computed: `add(load
/// @G, g)` (either side; g perhaps through a cast read only by the add),
/// whose load is @G's only one and is read only by the add, goes with its
/// load and cast to just after g's definition, where no store of @G comes
/// before the add. --mpc-accumulate-gradients adds the gradients to their
/// accumulators at the end of the backward pass; the ops that sum them in
/// their GEMMs and norms (--mpc-fuse's weight-grad-sums) sit where the
/// gradients are computed, and so, after this, do the adds that did not
/// fuse: the gradient dies where it is computed (as PyTorch's autograd
/// accumulates a .grad when it is ready) and the sum takes the
/// accumulator's storage (globalWrittenInPlace). A sum an all-reduce reads
/// stays (it would hold an arena buffer longer).
void hoistAccumulations(func::FuncOp func,
                        const DenseSet<Attribute> &accumulators) {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> order;
  for (Operation &op : block)
    order[&op] = order.size();
  llvm::DenseMap<Attribute, int64_t> loads, firstStore;
  func.walk([&](Operation *op) {
    Operation *top = block.findAncestorOpInBlock(*op);
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op)) {
      ++loads[load.getGlobalAttr()];
    } else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op)) {
      // The walk is in program order: the first store seen is the first.
      firstStore.try_emplace(store.getGlobalAttr(), order.lookup(top));
    }
  });
  SmallVector<AddOp> adds;
  for (Operation &op : block)
    if (auto add = dyn_cast<AddOp>(op))
      adds.push_back(add);
  for (AddOp add : adds) {
    if (readByAllReduce(add.getResult()))
      continue;
    for (int side = 0; side < 2; ++side) {
      auto load =
          add->getOperand(side).getDefiningOp<ml_program::GlobalLoadOp>();
      Value g = add->getOperand(1 - side);
      if (!load || !accumulators.contains(load.getGlobalAttr()) ||
          load->getBlock() != &block || !load->hasOneUse() ||
          g == load.getResult() || loads.lookup(load.getGlobalAttr()) != 1)
        continue;
      auto it = firstStore.find(load.getGlobalAttr());
      if (it != firstStore.end() && it->second < order.lookup(add))
        continue;
      auto widen = g.getDefiningOp<CastOp>();
      if (widen && (widen->getBlock() != &block || !widen->hasOneUse()))
        widen = nullptr;
      // g (or the cast's input) is defined in the block or is an argument
      // of the function (nothing is defined above it).
      Value from = widen ? widen.getInput() : g;
      Operation *def = from.getDefiningOp();
      if (def && def->getBlock() != &block)
        break;
      if (def)
        load->moveAfter(def);
      else
        load->moveBefore(&block.front());
      Operation *last = load;
      if (widen) {
        widen->moveAfter(last);
        last = widen;
      }
      add->moveAfter(last);
      break;
    }
  }
}

/// A buffer of the arena: one or more values sharing storage (in place).
struct Buffer {
  int64_t bytes = 0, start = 0, end = 0, offset = -1;
  Type element;
  bool gradient = false;
  /// A member of an all-reduce bucket: the bucket's buffer and the offset
  /// in it (-1: placed on its own).
  int64_t bucket = -1, inBucket = 0;
};

/// Members of an all-reduce bucket start at multiples of this (vector
/// loads of the kernels that read them).
constexpr int64_t kBucketAlignment = 16;

/// Placed buffers adjacent in offset order, with what placement needs to
/// pass them in one step: the hull of their lifetimes, the latest start and
/// earliest end (all overlap a lifetime within them), the first offset,
/// the highest aligned end, and the widest gap between one buffer's
/// offset and the highest aligned end below it.
struct Run {
  std::vector<int64_t> ids;
  int64_t minStart = 0, maxStart = 0, minEnd = 0, maxEnd = 0;
  int64_t firstOffset = 0, top = 0, widestGap = -1;
};
constexpr size_t kRunLength = 64;

struct FunctionPlan {
  std::string name;
  int64_t arenaBytes = 0, peakLive = 0, ioBytes = 0;
  // Bytes of every intermediate tensor, placed or not at once.
  int64_t bufferBytes = 0;
  // Fused ops by name (and activation: "mpc.fused_matmul relu"): what
  // --mpc-fuse left in the function.
  std::map<std::string, int64_t> fused;
  // Results written straight into the global they are stored to.
  int64_t inGlobals = 0;
  // Loads copied into the arena: their global is overwritten before their
  // last reader.
  int64_t snapshots = 0;
  // Slices read in their operand's buffer (Views.h).
  int64_t sliceViews = 0;
  // Transposes and heads products written into their concatenation's
  // buffer (Views.h).
  int64_t concatWindows = 0;
  // Bytes of gradients and activations live at the peak, by dtype.
  llvm::MapVector<Type, int64_t> gradients, activations;
};

/// Whether `v` is a gradient: produced by a backward op or consumed as the
/// gradient of an optimizer or unscale op.
bool isGradient(Value v) {
  Operation *def = v.getDefiningOp();
  if (def && (def->getName().getStringRef().ends_with("_backward") ||
              def->getName().getStringRef().ends_with("_grad")))
    return true;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<SGDUpdateOp, AdamUpdateOp>(user) && use.getOperandNumber() == 1)
      return true;
    if (isa<UnscaleAndCheckOp>(user) && use.getOperandNumber() > 0)
      return true;
  }
  return false;
}

/// The guards of a plan made with `guard` bytes after every buffer: one
/// entry per placed buffer, in offset order, `{offset, bytes, op, loc}`,
/// naming the op whose result the buffer holds first (for the runner's
/// message when the guard's bytes change).
ArrayAttr guardsAttr(Builder &builder, ArrayRef<Operation *> ops,
                     const DenseMap<Value, int64_t> &bufferOf,
                     ArrayRef<Buffer> buffers, int64_t guard) {
  std::vector<Operation *> owner(buffers.size(), nullptr);
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      auto it = bufferOf.find(result);
      if (it == bufferOf.end())
        continue;
      int64_t id = buffers[it->second].bucket >= 0 ? buffers[it->second].bucket
                                                   : it->second;
      if (!owner[id])
        owner[id] = op;
    }
  SmallVector<int64_t> placed;
  for (size_t id = 0; id < buffers.size(); ++id)
    if (buffers[id].bucket < 0 && owner[id])
      placed.push_back(id);
  llvm::sort(placed, [&](int64_t a, int64_t b) {
    return buffers[a].offset < buffers[b].offset;
  });
  SmallVector<Attribute> guards;
  for (int64_t id : placed) {
    std::string loc;
    llvm::raw_string_ostream os(loc);
    owner[id]->getLoc().print(os);
    guards.push_back(builder.getDictionaryAttr({
        builder.getNamedAttr(
            "offset",
            builder.getI64IntegerAttr(buffers[id].offset + buffers[id].bytes)),
        builder.getNamedAttr("bytes", builder.getI64IntegerAttr(guard)),
        builder.getNamedAttr(
            "op", builder.getStringAttr(owner[id]->getName().getStringRef())),
        builder.getNamedAttr("loc", builder.getStringAttr(loc)),
    }));
  }
  return builder.getArrayAttr(guards);
}

FailureOr<FunctionPlan> planFunction(func::FuncOp func, int64_t alignment,
                                     bool reuse, int64_t guard,
                                     const DenseSet<Attribute> &accumulators) {
  // Nothing moves across a call, whose callee may read or write the
  // globals (the lowering refuses calls; --mpc-plan-memory alone does not).
  bool calls =
      func.walk([](CallOpInterface) { return WalkResult::interrupt(); })
          .wasInterrupted();
  if (reuse && !calls) {
    sinkConstantStores(func);
    hoistAccumulations(func, accumulators);
  }
  // Program order (the graphs are single-block).
  DenseMap<Operation *, int64_t> order;
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func) {
      op->removeAttr("mpc.in_globals"); // a plan made before
      op->removeAttr("mpc.offsets");
      order[op] = ops.size();
      ops.push_back(op);
    }
  });
  int64_t last = ops.size();
  FunctionPlan plan;
  // The loads and stores of each global, for the accumulations written
  // into their globals (globalWrittenInPlace), and where each global is
  // stored, in program order (for the snapshots below).
  llvm::DenseMap<Attribute, SmallVector<Operation *>> accessesOf;
  llvm::DenseMap<Attribute, SmallVector<int64_t>> storedAt;
  for (Operation *op : ops) {
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op)) {
      accessesOf[load.getGlobalAttr()].push_back(op);
    } else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op)) {
      accessesOf[store.getGlobalAttr()].push_back(op);
      storedAt[store.getGlobalAttr()].push_back(order[op]);
    }
  }
  std::vector<Buffer> buffers;
  DenseMap<Value, int64_t> bufferOf;
  DenseSet<int64_t> bucketed; // buffers an all-reduce sums in place
  // Slices read in their operand's buffer, and reshapes of them: where
  // their elements lie in it (Views.h).
  DenseMap<Value, View> views;
  // Transposes and heads products written into their concatenation's
  // buffer, and reshapes of them (concatWindowOf, headsWindowOf).
  DenseSet<Value> windows;
  auto lastUse = [&](Value v) {
    int64_t end = order[v.getDefiningOp()];
    for (Operation *user : v.getUsers())
      end = std::max(end, isa<func::ReturnOp>(user) ? last : order[user]);
    return end;
  };
  // A load reads the global where it stands; the lowering gives it the
  // global's own storage. Where a store overwrites the global before the
  // loaded value's last reader, the value is copied into the arena at the
  // load (a snapshot), so the readers after the store still see what was
  // loaded.
  auto needsSnapshot = [&](ml_program::GlobalLoadOp load) {
    auto it = storedAt.find(load.getGlobalAttr());
    if (it == storedAt.end())
      return false;
    int64_t here = order[load], end = lastUse(load.getResult());
    auto next = llvm::upper_bound(it->second, here);
    return next != it->second.end() && *next < end;
  };
  for (Operation *op : ops) {
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op)) {
      auto type = dyn_cast<RankedTensorType>(load.getType());
      if (type && needsSnapshot(load)) {
        bufferOf[load.getResult()] = buffers.size();
        buffers.push_back({byteSize(type), order[op], lastUse(load.getResult()),
                           -1, type.getElementType(), false});
        ++plan.snapshots;
      }
      continue;
    }
    // Globals, constants, and state updated in place in its globals (the
    // optimizer and loss-scale kernels) are not in the arena.
    if (isa<ConstantOp, SGDUpdateOp, AdamUpdateOp, UpdateLossScaleOp>(op))
      continue;
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      // A result its kernel leaves unwritten has no buffer (Unwritten.h).
      if (isLeftUnwritten(cast<OpResult>(result)))
        continue;
      int64_t here = order[op];
      // Given its buffer before its op: a concatenation a transpose
      // (below) was written into.
      if (bufferOf.count(result))
        continue;
      // An accumulation into a global writes the global itself.
      if (SymbolRefAttr global =
              reuse ? globalWrittenInPlace(op, result, order, accessesOf,
                                           lastUse(result))
                    : SymbolRefAttr()) {
        OpBuilder b(op);
        SmallVector<Attribute> globals(op->getNumResults(), b.getUnitAttr());
        if (auto before = op->getAttrOfType<ArrayAttr>("mpc.in_globals"))
          globals.assign(before.begin(), before.end());
        globals[cast<OpResult>(result).getResultNumber()] = global;
        op->setAttr("mpc.in_globals", b.getArrayAttr(globals));
        ++plan.inGlobals;
        continue;
      }
      // A reshape is a view: the same bytes in the same order, so its
      // result shares its operand's buffer, which then lives as long as
      // either (no copy; an elementwise op writes in place only once both
      // are dead). Not for what an all-reduce sums in place.
      if (auto reshape = dyn_cast<ReshapeOp>(op); reshape && reuse) {
        auto it = bufferOf.find(reshape.getInput());
        if (it != bufferOf.end() && !bucketed.contains(it->second) &&
            !readByAllReduce(reshape.getInput()) && !readByAllReduce(result)) {
          // Inserting may move the map's entries: `it` is read first.
          int64_t id = it->second;
          // A reshape of a view is a view with the strides it composes
          // to, or one whose only readers, transposes, read the view
          // itself as one loop (no strides of its own: Views.h): the
          // slice was made one only where every reshape reading it is
          // either (readersTakeStrides).
          auto view = views.find(reshape.getInput());
          if (view != views.end()) {
            ArrayRef<int64_t> from =
                cast<RankedTensorType>(reshape.getInput().getType()).getShape();
            std::optional<SmallVector<int64_t>> s =
                reshapedStrides(from, view->second.strides, type.getShape());
            if (!s &&
                !regroupedByTransposes(reshape, from, view->second.strides))
              return reshape.emitOpError(
                  "mpc-plan-memory: internal error: a reshape of a view "
                  "whose strides do not compose");
            View reshaped{view->second.offset,
                          s ? std::move(*s) : SmallVector<int64_t>()};
            views[result] = std::move(reshaped);
          }
          if (windows.contains(reshape.getInput()))
            windows.insert(result);
          bufferOf[result] = id;
          Buffer &b = buffers[id];
          b.end = std::max(b.end, lastUse(result));
          b.gradient |= isGradient(result);
          continue;
        }
        if (views.contains(reshape.getInput()))
          return reshape.emitOpError(
              "mpc-plan-memory: internal error: a reshape of a view that "
              "does not share its buffer");
      }
      // A slice that every reader takes through strides is a view too
      // (Views.h): its operand's buffer, read at the slice's offset with
      // the slice's strides, which then lives as long as either. Never
      // written in place (below): its elements are not the buffer's. A
      // slice of a view is a view of the same buffer.
      auto slice = dyn_cast<SliceOp>(op);
      View input;
      if (slice) {
        auto view = views.find(slice.getInput());
        input =
            view != views.end()
                ? view->second
                : denseView(cast<RankedTensorType>(slice.getInput().getType())
                                .getShape());
      }
      if (slice && reuse && readableInPlace(slice, input)) {
        auto it = bufferOf.find(slice.getInput());
        if (it != bufferOf.end() && !bucketed.contains(it->second) &&
            !readByAllReduce(slice.getInput())) {
          int64_t id = it->second;
          bufferOf[result] = id;
          views[result] = windowOf(slice, input);
          Buffer &b = buffers[id];
          b.end = std::max(b.end, lastUse(result));
          ++plan.sliceViews;
          continue;
        }
      }
      // A transpose read only by a concatenation (through reshapes) is
      // written into the concatenation's window (Views.h): it takes the
      // concatenation's buffer, which then lives from the first such
      // transpose on, and the concat copies only its other operands. Not
      // for a transpose of a view (the scatter reads its input dense). A
      // heads product read so writes its matrices there itself, its rows
      // the concatenation's apart (headsWindowOf).
      Value whole;
      if (auto transpose = dyn_cast<TransposeOp>(op);
          transpose && reuse && !views.contains(transpose.getInput())) {
        if (std::optional<ConcatWindow> window = concatWindowOf(transpose))
          whole = window->concat.getResult();
      } else if (auto heads = dyn_cast<HeadsMatmulOp>(op); heads && reuse) {
        if (std::optional<HeadsWindow> window = headsWindowOf(heads))
          whole = window->concat.getResult();
      }
      if (whole && !readByAllReduce(whole)) {
        int64_t id;
        if (auto it = bufferOf.find(whole); it != bufferOf.end()) {
          id = it->second;
        } else {
          auto wholeType = cast<RankedTensorType>(whole.getType());
          id = buffers.size();
          bufferOf[whole] = id;
          buffers.push_back({byteSize(wholeType), here, lastUse(whole), -1,
                             wholeType.getElementType(), isGradient(whole)});
        }
        bufferOf[result] = id;
        windows.insert(result);
        ++plan.concatWindows;
        continue;
      }
      // An all-reduce sums in place: its results are its operands' buffers,
      // unless a buffer is already another bucket's member (a sum summed
      // again, an operand given twice); the lowering then copies.
      if (isa<AllReduceOp>(op)) {
        Value operand =
            op->getOperand(cast<OpResult>(result).getResultNumber());
        auto it = bufferOf.find(operand);
        if (it != bufferOf.end() && bucketed.insert(it->second).second) {
          // Inserting may move the map's entries: `it` is read first.
          int64_t id = it->second;
          bufferOf[result] = id;
          Buffer &b = buffers[id];
          b.end = std::max(b.end, lastUse(result));
          b.gradient = true;
          continue;
        }
      }
      // In place: take a dying operand's buffer of the same size and type.
      bool inPlace = false;
      for (Value operand :
           reuse ? inPlaceOperands(op, cast<OpResult>(result).getResultNumber())
                 : SmallVector<Value>()) {
        auto it = bufferOf.find(operand);
        if (it == bufferOf.end() || views.contains(operand) ||
            windows.contains(operand))
          continue;
        Buffer &b = buffers[it->second];
        if (b.bytes != byteSize(type) || b.end != here ||
            b.element != type.getElementType())
          continue;
        bufferOf[result] = it->second;
        b.end = lastUse(result);
        b.gradient |= isGradient(result);
        inPlace = true;
        break;
      }
      if (inPlace)
        continue;
      if (isa<AllReduceOp>(op))
        bucketed.insert(buffers.size());
      bufferOf[result] = buffers.size();
      buffers.push_back({byteSize(type), here, lastUse(result), -1,
                         type.getElementType(), isGradient(result)});
    }
  }

  // Without reuse every buffer lives through the whole function, so no
  // two share bytes (a plan to compare the reusing one with). So with
  // guards: a guard then belongs to no buffer for the whole call, not
  // only while its own buffer lives.
  if (!reuse || guard > 0)
    for (Buffer &b : buffers) {
      b.start = 0;
      b.end = last;
    }

  // Each all-reduce bucket is one buffer holding its members in operand
  // order, so that the collective covers one contiguous range.
  for (Operation *op : ops) {
    if (!isa<AllReduceOp>(op))
      continue;
    Buffer group;
    group.gradient = true;
    group.start = std::numeric_limits<int64_t>::max();
    int64_t id = buffers.size();
    SmallVector<int64_t> members;
    for (Value result : op->getResults()) {
      int64_t member = bufferOf.lookup(result);
      if (buffers[member].bucket >= 0 || llvm::is_contained(members, member))
        return op->emitOpError("mpc-plan-memory: a gradient of this bucket "
                               "shares its buffer with another bucket's");
      members.push_back(member);
    }
    for (int64_t member : members) {
      Buffer &m = buffers[member];
      m.bucket = id;
      m.inBucket = group.bytes;
      group.bytes += llvm::alignTo(m.bytes, kBucketAlignment);
      group.start = std::min(group.start, m.start);
      group.end = std::max(group.end, m.end);
      group.element = m.element;
    }
    buffers.push_back(group);
  }

  // Greedy by size: largest first, lowest aligned offset that fits.
  SmallVector<int64_t> bySize;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].bucket < 0)
      bySize.push_back(i);
  llvm::sort(bySize, [&](int64_t a, int64_t b) {
    return buffers[a].bytes != buffers[b].bytes
               ? buffers[a].bytes > buffers[b].bytes
               : a < b; // deterministic: definition order breaks ties
  });
  plan.name = func.getSymName().str();
  for (Type t :
       llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (auto tensor = dyn_cast<RankedTensorType>(t))
      plan.ioBytes += byteSize(tensor);
  for (const Buffer &b : buffers)
    if (b.bucket < 0)
      plan.bufferBytes += b.bytes;
  func.walk([&](Operation *op) {
    if (auto fused = dyn_cast<FusedMatmulOp>(op))
      ++plan.fused[("mpc.fused_matmul " + fused.getActivation()).str()];
    else if (auto grad = dyn_cast<MatmulActivationGradOp>(op))
      ++plan.fused[("mpc.matmul_activation_grad " + grad.getActivation())
                       .str()];
    else if (auto norm = dyn_cast<BatchNormOp>(op);
             norm && norm.getActivation() != "none")
      ++plan.fused[("mpc.batch_norm " + norm.getActivation()).str()];
    else if (auto norm = dyn_cast<BatchNormInferenceOp>(op);
             norm && norm.getActivation() != "none")
      ++plan.fused[("mpc.batch_norm_inference " + norm.getActivation()).str()];
    else if (auto back = dyn_cast<BatchNormBackwardOp>(op);
             back && back.getActivation() != "none")
      ++plan.fused[("mpc.batch_norm_backward " + back.getActivation()).str()];
    else if (auto back = dyn_cast<AddLayerNormBackwardOp>(op);
             back && back.getInputSums())
      ++plan.fused["mpc.add_layer_norm_backward input_sums"];
    else if (isa<AttentionOp, AttentionBackwardOp, MatmulBiasGradOp,
                 ColumnSumsOp, MatmulAddOp, DropoutAddOp, AddLayerNormOp,
                 AddLayerNormBackwardOp, SoftmaxDropoutOp,
                 SoftmaxDropoutBackwardOp>(op))
      ++plan.fused[op->getName().getStringRef().str()];
    // A concatenation's part convolved, adding to the part before (its
    // concatenation never written: --mpc-fuse's concat-convs).
    else if (auto conv = dyn_cast<Conv2DOp>(op); conv && conv.getAddend())
      ++plan.fused["mpc.conv2d addend"];
    // Gradients summed into their accumulators by the ops computing them
    // (a batch norm backward also counted above where it took a ReLU).
    if (isa<LayerNormBackwardOp, BatchNormBackwardOp, EmbeddingBackwardOp>(
            op) &&
        llvm::any_of(llvm::seq(op->getNumResults()), [&](unsigned r) {
          return accumulatedAddend(op, r) != nullptr;
        }))
      ++plan.fused[op->getName().getStringRef().str() + " summed"];
    // Moves --mpc-fuse computes again for the backward pass.
    if (op->hasAttr("mpc.recomputed"))
      ++plan.fused[op->getName().getStringRef().str() + " recomputed"];
  });
  // The placed buffers by offset, in runs (Run): each buffer walks them
  // upwards, skipping those whose lifetime it does not overlap, and takes
  // the first gap that fits. A run none of whose buffers overlaps it, or
  // all of whose buffers do and which holds no gap it fits, is passed in
  // one step: when most values live through the step (each buffer then
  // conflicts with every placed one), the walk costs runs, not buffers.
  // Guards: each placed buffer takes `guard` bytes more while placing, so
  // that the bytes right after its end belong to no other buffer.
  for (int64_t id : bySize)
    buffers[id].bytes += guard;
  std::vector<Run> runs;
  auto alignedEnd = [&](const Buffer &o) {
    return static_cast<int64_t>(llvm::alignTo(o.offset + o.bytes, alignment));
  };
  auto summarize = [&](Run &run) {
    const Buffer &first = buffers[run.ids.front()];
    run.minStart = run.maxStart = first.start;
    run.minEnd = run.maxEnd = first.end;
    run.firstOffset = first.offset;
    run.top = alignedEnd(first);
    run.widestGap = -1;
    for (size_t i = 1; i < run.ids.size(); ++i) {
      const Buffer &o = buffers[run.ids[i]];
      run.minStart = std::min(run.minStart, o.start);
      run.maxStart = std::max(run.maxStart, o.start);
      run.minEnd = std::min(run.minEnd, o.end);
      run.maxEnd = std::max(run.maxEnd, o.end);
      run.widestGap = std::max(run.widestGap, o.offset - run.top);
      run.top = std::max(run.top, alignedEnd(o));
    }
  };
  for (int64_t id : bySize) {
    Buffer &b = buffers[id];
    int64_t offset = 0;
    bool placed = false;
    for (const Run &run : runs) {
      if (run.maxEnd < b.start || run.minStart > b.end)
        continue; // no buffer of the run overlaps b's lifetime
      bool allOverlap = run.maxStart <= b.end && run.minEnd >= b.start;
      if (allOverlap && offset + b.bytes > run.firstOffset &&
          run.widestGap < b.bytes) {
        offset = std::max(offset, run.top);
        continue; // every buffer conflicts, and no gap between them fits
      }
      for (int64_t other : run.ids) {
        const Buffer &o = buffers[other];
        if (o.start > b.end || b.start > o.end)
          continue;
        if (offset + b.bytes <= o.offset) {
          placed = true;
          break;
        }
        offset = std::max(offset, alignedEnd(o));
      }
      if (placed)
        break;
    }
    b.offset = offset;
    // Into the run holding its offset (the last whose first buffer starts
    // at or below it), split in two when it grows past 2 * kRunLength.
    auto at = llvm::upper_bound(runs, offset, [&](int64_t x, const Run &run) {
      return x < run.firstOffset;
    });
    if (at != runs.begin())
      --at;
    if (at == runs.end())
      at = runs.insert(at, Run{});
    auto pos = llvm::upper_bound(at->ids, offset, [&](int64_t x, int64_t o) {
      return x < buffers[o].offset;
    });
    at->ids.insert(pos, id);
    if (at->ids.size() > 2 * kRunLength) {
      Run tail;
      tail.ids.assign(at->ids.begin() + kRunLength, at->ids.end());
      at->ids.resize(kRunLength);
      summarize(*at);
      summarize(tail);
      runs.insert(at + 1, std::move(tail));
    } else {
      summarize(*at);
    }
    plan.arenaBytes = std::max(plan.arenaBytes, offset + b.bytes);
  }
  for (int64_t id : bySize)
    buffers[id].bytes -= guard;
  for (Buffer &b : buffers)
    if (b.bucket >= 0)
      b.offset = buffers[b.bucket].offset + b.inBucket;

  // Record offsets on the IR.
  Builder builder(func.getContext());
  for (Operation *op : ops) {
    if (op->getNumResults() == 0)
      continue;
    SmallVector<int64_t> offsets;
    bool any = false;
    for (Value result : op->getResults()) {
      auto it = bufferOf.find(result);
      offsets.push_back(it == bufferOf.end() ? -1 : buffers[it->second].offset);
      any |= it != bufferOf.end();
    }
    if (any)
      op->setAttr("mpc.offsets", builder.getDenseI64ArrayAttr(offsets));
  }
  func->setAttr("mpc.arena_bytes", builder.getI64IntegerAttr(plan.arenaBytes));
  if (guard > 0)
    func->setAttr("mpc.arena_guards",
                  guardsAttr(builder, ops, bufferOf, buffers, guard));

  // The peak of live bytes (a sweep over start/end events), and what is
  // live then.
  SmallVector<std::pair<int64_t, int64_t>> events; // (time, +-bytes)
  for (const Buffer &b : buffers) {
    if (b.bucket >= 0)
      continue; // counted in its bucket
    events.push_back({b.start, b.bytes});
    events.push_back({b.end + 1, -b.bytes});
  }
  llvm::sort(events); // at equal times, frees (negative) come first
  int64_t live = 0, peakTime = 0;
  for (auto [time, delta] : events) {
    live += delta;
    if (live > plan.peakLive) {
      plan.peakLive = live;
      peakTime = time;
    }
  }
  for (const Buffer &b : buffers)
    if (b.bucket < 0 && b.start <= peakTime && peakTime <= b.end)
      (b.gradient ? plan.gradients : plan.activations)[b.element] += b.bytes;
  return plan;
}

/// Globals by role: optimizer state (moments, momentum buffers), parameters
/// (what the optimizer updates, their low-precision copies, and globals
/// only read), other state (what graphs write otherwise: running statistics,
/// loss-scale state, step counters).
struct GlobalTally {
  llvm::MapVector<Type, int64_t> parameters, optimizerState, otherState,
      constants;
};

GlobalTally tallyGlobals(ModuleOp module) {
  llvm::StringMap<GlobalRole> roles = globalRoles(module);
  GlobalTally tally;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = dyn_cast<RankedTensorType>(global.getType());
    if (!type)
      continue;
    GlobalRole role = roles.lookup(global.getSymName());
    auto &bucket = role == GlobalRole::OptimizerState ? tally.optimizerState
                   : role == GlobalRole::OtherState   ? tally.otherState
                   : role == GlobalRole::Constant     ? tally.constants
                                                      : tally.parameters;
    bucket[type.getElementType()] += byteSize(type);
  }
  return tally;
}

int64_t total(const llvm::MapVector<Type, int64_t> &m) {
  int64_t n = 0;
  for (auto &entry : m)
    n += entry.second;
  return n;
}

void writeReport(llvm::raw_ostream &os, const GlobalTally &globals,
                 int64_t stateBytes, ArrayRef<FunctionPlan> plans) {
  llvm::json::OStream json(os, 2);
  auto byType = [&](StringRef key, const llvm::MapVector<Type, int64_t> &m) {
    json.attributeObject(key, [&] {
      json.attribute("total", total(m));
      for (auto &[type, n] : m)
        json.attribute(typeName(type), n);
    });
  };
  json.object([&] {
    byType("parameters", globals.parameters);
    byType("optimizer_state", globals.optimizerState);
    byType("other_state", globals.otherState);
    byType("constants", globals.constants);
    json.attribute("state_buffer_bytes", stateBytes);
    json.attributeArray("functions", [&] {
      for (const FunctionPlan &p : plans)
        json.object([&] {
          json.attribute("function", p.name);
          json.attribute("arena_bytes", p.arenaBytes);
          json.attribute("peak_live_bytes", p.peakLive);
          json.attribute("buffer_bytes", p.bufferBytes);
          json.attributeObject("fused", [&] {
            for (auto &[what, n] : p.fused)
              json.attribute(what, n);
          });
          json.attribute("written_in_globals", p.inGlobals);
          json.attribute("load_snapshots", p.snapshots);
          json.attribute("slice_views", p.sliceViews);
          json.attribute("concat_windows", p.concatWindows);
          byType("gradients_at_peak", p.gradients);
          byType("activations_at_peak", p.activations);
          json.attribute("workspace_bytes", 0);
          json.attribute("peak_bytes", total(globals.parameters) +
                                           total(globals.optimizerState) +
                                           total(globals.otherState) +
                                           p.arenaBytes);
          json.attribute("io_bytes", p.ioBytes);
          json.attribute("allocated_bytes",
                         stateBytes + p.arenaBytes + p.ioBytes);
        });
    });
  });
  os << "\n";
}

} // namespace

namespace mlir::mpc {
namespace {
struct PlanMemoryPass : public impl::PlanMemoryPassBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      emitError(module.getLoc())
          << "mpc-plan-memory: alignment must be a power of two, got "
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    if (guard < 0 || guard > (int64_t(1) << 30)) {
      emitError(module.getLoc())
          << "mpc-plan-memory: guard must be between 0 and 2^30 bytes, got "
          << static_cast<int64_t>(guard);
      return signalPassFailure();
    }
    // The state buffer's globals get guards too (StateLayout.h).
    if (guard > 0)
      module->setAttr("mpc.state_guard",
                      Builder(module).getI64IntegerAttr(guard));
    else
      module->removeAttr("mpc.state_guard");
    // The gradient accumulators (--mpc-accumulate-gradients).
    DenseSet<Attribute> accumulators;
    for (auto global : module.getOps<ml_program::GlobalOp>())
      if (global->hasAttr("mpc.grad_accumulator"))
        accumulators.insert(FlatSymbolRefAttr::get(global.getSymNameAttr()));
    SmallVector<FunctionPlan> plans;
    for (auto func : module.getOps<func::FuncOp>()) {
      func->removeAttr("mpc.arena_guards"); // a plan made before
      if (func.getBody().getBlocks().size() > 1) {
        func.emitError("mpc-plan-memory: graphs with control flow are not "
                       "supported (one block per function)");
        return signalPassFailure();
      }
      if (func.isExternal())
        continue;
      FailureOr<FunctionPlan> plan =
          planFunction(func, alignment, reuse, guard, accumulators);
      if (failed(plan))
        return signalPassFailure();
      plans.push_back(std::move(*plan));
    }
    std::string out =
        report.empty() ? clMemoryReport.getValue() : report.getValue();
    if (out.empty())
      return;
    auto file = openReport(out, module, "mpc-plan-memory");
    if (!file)
      return signalPassFailure();
    writeReport(file->os(), tallyGlobals(module), layOutState(module).bytes,
                plans);
    if (failed(keepReport(*file, out, module, "mpc-plan-memory")))
      return signalPassFailure();
  }
};
} // namespace
} // namespace mlir::mpc
