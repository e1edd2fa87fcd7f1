//===- CheckNumerics.cpp - device-side checks of every result -------------===//
//
// Numbers every floating-point result of the training step (and of its
// accumulation micro-step) that is read, checks each on the device after
// the op that makes it (several in one check while they live), and
// describes the numbered ops for the training executable's reports.
//
//===----------------------------------------------------------------------===//

#include "TrainingStep.h"
#include "TypeUtils.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>

namespace mlir::mpc {
#define GEN_PASS_DEF_CHECKNUMERICSPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

namespace {

constexpr const char *kPass = "mpc-check-numerics";

/// "file:line:col" of the op (the innermost file location), with the
/// location's name first when it has one ("encoder/attn@bert.mlir:3:5").
std::string locationOf(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  Location inner = loc;
  while (auto name = dyn_cast<NameLoc>(inner)) {
    os << name.getName().getValue() << "@";
    inner = name.getChildLoc();
  }
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ':' << file.getLine() << ':'
       << file.getColumn();
  else
    os << inner;
  return s;
}

/// Whether a dense float value holds an infinity: a splat by its one
/// value (a splat of 16 GiB is one element here), f16, bf16, f32 and f64
/// by the bits of their stored elements (a model's weights pass through
/// here), other types element by element.
bool holdsInfinity(Attribute value) {
  auto dense = dyn_cast_or_null<DenseFPElementsAttr>(value);
  if (!dense)
    return false;
  if (dense.isSplat())
    return dense.getSplatValue<APFloat>().isInfinity();
  auto type = cast<FloatType>(dense.getElementType());
  ArrayRef<char> raw = dense.getRawData();
  auto scan = [&](auto word, uint64_t magnitude, uint64_t infinity) {
    using Word = decltype(word);
    for (size_t at = 0; at + sizeof(Word) <= raw.size(); at += sizeof(Word)) {
      Word bits;
      std::memcpy(&bits, raw.data() + at, sizeof(Word));
      if ((bits & magnitude) == infinity)
        return true;
    }
    return false;
  };
  if (type.isF16())
    return scan(uint16_t(), 0x7fff, 0x7c00);
  if (type.isBF16())
    return scan(uint16_t(), 0x7fff, 0x7f80);
  if (type.isF32())
    return scan(uint32_t(), 0x7fffffff, 0x7f800000);
  if (type.isF64())
    return scan(uint64_t(), 0x7fffffffffffffffULL, 0x7ff0000000000000ULL);
  return llvm::any_of(dense.getValues<APFloat>(),
                      [](const APFloat &x) { return x.isInfinity(); });
}

/// The values that hold infinities by design: constants (and globals'
/// initial values) with an infinity, a causal or padding mask of -inf
/// (torch.triu of -inf, nn.MultiheadAttention's key_padding_mask), and
/// what carries such a value's elements on unchanged where they are
/// infinite (a where choosing it, a sum with it, a move or cast of it):
/// the masked scores. Checked, each would be reported as the step's first
/// non-finite value at every step; they are not checked, and the op that
/// makes them finite (the softmax) is, so a NaN in them is reported
/// there.
/// `globalsWithInfinity` remembers each global's answer across the
/// step's functions (a model's weights are read once).
llvm::DenseSet<Value>
intendedInfinities(func::FuncOp fn, SymbolTable &symbols,
                   DenseMap<Operation *, bool> &globalsWithInfinity) {
  llvm::DenseSet<Value> marked;
  for (Operation &op : fn.getBody().front()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (holdsInfinity(c.getValue()))
        marked.insert(c.getResult());
      continue;
    }
    if (isa<ml_program::GlobalLoadOp, ml_program::GlobalLoadConstOp>(op)) {
      auto name = isa<ml_program::GlobalLoadOp>(op)
                      ? cast<ml_program::GlobalLoadOp>(op).getGlobal()
                      : cast<ml_program::GlobalLoadConstOp>(op).getGlobal();
      auto global =
          symbols.lookup<ml_program::GlobalOp>(name.getLeafReference());
      if (!global)
        continue;
      auto [it, fresh] = globalsWithInfinity.try_emplace(global, false);
      if (fresh && global.getValue())
        it->second = holdsInfinity(*global.getValue());
      if (it->second)
        marked.insert(op.getResult(0));
      continue;
    }
    if (!isa<WhereOp, AddOp, SubOp, MulOp, NegOp, CastOp, ReshapeOp,
             TransposeOp, BroadcastToOp, SliceOp, ConcatOp>(op))
      continue;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return marked.contains(v); }))
      marked.insert(op.getResult(0));
  }
  return marked;
}

bool isOptimizer(Operation *op) {
  return isa<UnscaleAndCheckOp, ClipGradNormOp, GradStatsOp, SGDUpdateOp,
             AdamUpdateOp, UpdateLossScaleOp>(op);
}

/// The forward pass of a step: the ops its loss (the first result) is
/// computed from, and those of the state it writes before the optimizer
/// (running statistics), gradient accumulators excepted. Everything else
/// before the first optimizer op is the backward pass, whatever its ops
/// are called (a loss written out of generic ops has a backward pass of
/// generic ops), wherever canonicalization put them.
llvm::DenseSet<Operation *> forwardOps(func::FuncOp fn, SymbolTable &symbols) {
  Block &body = fn.getBody().front();
  SmallVector<Value> work;
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() > 0)
    work.push_back(ret.getOperand(0));
  for (Operation &op : body) {
    if (isOptimizer(&op))
      break;
    auto store = dyn_cast<ml_program::GlobalStoreOp>(op);
    if (!store)
      continue;
    auto global = symbols.lookup<ml_program::GlobalOp>(
        store.getGlobal().getLeafReference());
    if (global && !global->hasAttr("mpc.grad_accumulator"))
      work.push_back(store.getValue());
  }
  llvm::DenseSet<Operation *> slice;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (def && def->getBlock() == &body && slice.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  return slice;
}

/// Whether `op` may write memory that holds a value of the step: an
/// effect of writing or freeing, or effects it does not declare. Reading
/// (a global's load) is not.
bool mayWrite(Operation *op) {
  return mightHaveEffect<MemoryEffects::Write, MemoryEffects::Free>(op);
}

/// Checks the values of `indexOf` made in `body` in groups: the values made
/// since the last group are checked together right before the first op
/// that reads one of them for the last time (the memory plan may give its
/// result that value's buffer), may write memory, or sums in place (an
/// all-reduce), and before the terminator. No check comes after a value's
/// last reader, so no value lives longer than it would unchecked.
void insertGroupedChecks(Block &body, const DenseMap<Value, int64_t> &indexOf,
                         OpBuilder &b) {
  DenseMap<Value, Operation *> lastReader;
  for (Operation &op : body)
    for (Value v : op.getOperands())
      lastReader[v] = &op;
  SmallVector<Value> pending;
  llvm::DenseSet<Value> isPending;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    bool overwrites =
        op.hasTrait<OpTrait::IsTerminator>() || mayWrite(&op) ||
        isa<AllReduceOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
          return isPending.contains(v) && lastReader.lookup(v) == &op;
        });
    if (overwrites && !pending.empty()) {
      SmallVector<int64_t> indices;
      SmallVector<Location> locs;
      for (Value v : pending) {
        indices.push_back(indexOf.lookup(v));
        locs.push_back(v.getDefiningOp()->getLoc());
      }
      b.setInsertionPoint(&op);
      CheckNumericsOp::create(b, b.getFusedLoc(locs), pending,
                              b.getDenseI64ArrayAttr(indices));
      pending.clear();
      isPending.clear();
    }
    for (Value r : op.getResults())
      if (indexOf.contains(r) && isPending.insert(r).second)
        pending.push_back(r);
  }
}

struct CheckNumericsPass
    : public mpc::impl::CheckNumericsPassBase<CheckNumericsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    llvm::StringSet<> wanted;
    for (StringRef p : llvm::split(phases, ',')) {
      p = p.trim();
      if (p.empty())
        continue;
      if (p != "state" && p != "forward" && p != "backward" &&
          p != "optimizer" && p != "eval") {
        module.emitError(kPass)
            << ": unknown phase '" << p
            << "' (expected state, forward, backward, optimizer or eval)";
        return signalPassFailure();
      }
      wanted.insert(p);
    }
    if (wanted.empty()) {
      module.emitError(kPass) << ": no phase to check (phases=)";
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>(func);
    if (!step || step.isDeclaration()) {
      module.emitError(kPass) << ": no training step @" << func;
      return signalPassFailure();
    }
    if (module->hasAttr("mpc.numerics_ops")) {
      module.emitError(kPass) << ": the module is already instrumented";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs{step};
    if (func::FuncOp micro = findMicroStep(module, func))
      funcs.push_back(micro);
    // The evaluation step (--mpc-eval-step's, marked mpc.eval): all of it
    // is the `eval` phase.
    if (wanted.contains("eval"))
      for (auto fn : module.getOps<func::FuncOp>())
        if (fn->hasAttr("mpc.eval") && !fn.isDeclaration())
          funcs.push_back(fn);

    // Number the checked results, in program order, function by function.
    MLIRContext *ctx = &getContext();
    Builder attrs(ctx);
    struct Checked {
      Value value;
      Operation *op;
    };
    SmallVector<Checked> checked;
    SymbolTable symbols(module);
    SmallVector<Attribute> table;
    DenseMap<Value, int64_t> indexOf;
    SmallVector<std::pair<func::FuncOp, std::pair<int64_t, int64_t>>> ranges;
    DenseMap<Operation *, bool> globalsWithInfinity;
    for (func::FuncOp fn : funcs) {
      if (!fn.getBody().hasOneBlock()) {
        fn.emitOpError(kPass) << ": the step must have a single block";
        return signalPassFailure();
      }
      int64_t begin = checked.size();
      bool eval = fn->hasAttr("mpc.eval");
      llvm::DenseSet<Operation *> forward;
      if (!eval)
        forward = forwardOps(fn, symbols);
      llvm::DenseSet<Value> intended =
          intendedInfinities(fn, symbols, globalsWithInfinity);
      bool optimizer = false;
      for (Operation &op : fn.getBody().front()) {
        optimizer |= isOptimizer(&op);
        if (isa<ConstantOp, func::ReturnOp>(op))
          continue;
        StringRef opPhase = eval                                ? "eval"
                            : isa<ml_program::GlobalLoadOp>(op) ? "state"
                            : optimizer                         ? "optimizer"
                            : forward.contains(&op)             ? "forward"
                                                                : "backward";
        if (!wanted.contains(opPhase))
          continue;
        for (Value r : op.getResults()) {
          if (!floatTensor(r.getType()) || r.use_empty() ||
              intended.contains(r))
            continue;
          // Unscaled gradients nobody reads are not even written.
          if (isa<UnscaleAndCheckOp>(op))
            continue;
          int64_t index = checked.size();
          indexOf[r] = index;
          checked.push_back({r, &op});
          SmallVector<Attribute> inputs;
          for (Value operand : op.getOperands()) {
            auto it = indexOf.find(operand);
            inputs.push_back(
                attrs.getI64IntegerAttr(it == indexOf.end() ? -1 : it->second));
          }
          std::string type;
          llvm::raw_string_ostream os(type);
          os << cast<RankedTensorType>(r.getType()).getElementType();
          table.push_back(attrs.getDictionaryAttr({
              attrs.getNamedAttr(
                  "op", attrs.getStringAttr(op.getName().getStringRef())),
              attrs.getNamedAttr("loc",
                                 attrs.getStringAttr(locationOf(op.getLoc()))),
              attrs.getNamedAttr("phase", attrs.getStringAttr(opPhase)),
              attrs.getNamedAttr("function",
                                 attrs.getStringAttr(fn.getSymName())),
              attrs.getNamedAttr("dtype", attrs.getStringAttr(type)),
              attrs.getNamedAttr(
                  "result",
                  attrs.getI64IntegerAttr(cast<OpResult>(r).getResultNumber())),
              attrs.getNamedAttr("inputs", attrs.getArrayAttr(inputs)),
          }));
        }
      }
      ranges.push_back({fn, {begin, int64_t(checked.size())}});
    }
    int64_t count = checked.size();
    if (count == 0) {
      step.emitOpError(kPass) << ": no floating-point result to check";
      return signalPassFailure();
    }

    // The records, state like any other (checkpointed, in the report).
    OpBuilder b(ctx);
    auto i32 = RankedTensorType::get({}, b.getI32Type());
    auto amaxType = RankedTensorType::get({count, 2}, b.getF32Type());
    auto countsType = RankedTensorType::get({count, 4}, b.getI64Type());
    auto eventsType = RankedTensorType::get({34}, b.getI64Type());
    auto eventAmaxType = RankedTensorType::get({count}, b.getF32Type());
    for (auto [name, type] :
         {std::pair<StringRef, RankedTensorType>{"mpc_numerics_first", i32},
          {"mpc_numerics_amax", amaxType},
          {"mpc_numerics_counts", countsType},
          {"mpc_numerics_events", eventsType},
          {"mpc_numerics_event_amax", eventAmaxType}}) {
      Attribute zero =
          isa<FloatType>(type.getElementType())
              ? Attribute(b.getFloatAttr(type.getElementType(), 0.0))
              : Attribute(b.getIntegerAttr(type.getElementType(), 0));
      if (!createStateGlobal(module, b, kPass, name, type,
                             DenseElementsAttr::get(type, zero), true))
        return signalPassFailure();
    }

    // The checks: each right after the op that makes its value, or
    // grouped while their values live.
    if (group) {
      for (auto &[fn, range] : ranges)
        insertGroupedChecks(fn.getBody().front(), indexOf, b);
    } else {
      for (auto [index, c] : llvm::enumerate(checked)) {
        b.setInsertionPointAfter(c.op);
        CheckNumericsOp::create(b, c.op->getLoc(), ValueRange{c.value},
                                b.getDenseI64ArrayAttr({int64_t(index)}));
      }
    }
    for (auto &[fn, range] : ranges) {
      Block &body = fn.getBody().front();
      b.setInsertionPointToStart(&body);
      NumericsBeginOp::create(b, fn.getLoc(), b.getI64IntegerAttr(count));
      b.setInsertionPoint(body.getTerminator());
      NumericsEndOp::create(b, fn.getLoc(), b.getI64IntegerAttr(count));
    }
    module->setAttr("mpc.numerics_ops", b.getArrayAttr(table));
  }
};

} // namespace
