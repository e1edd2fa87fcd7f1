//===- AssignPrecision.cpp - automatic mixed precision at compile time ----===//
//
// Decides the precision each op runs in from its category, the level and
// the overrides, then inserts casts. One walk per function in program order:
// operands are cast to the op's compute type (each value cast to a type at
// most once, right after its definition, so a weight cast is shared by the
// forward and backward pass), and result types are re-inferred from the new
// operands.
//
//===----------------------------------------------------------------------===//

#include "GlobalRoles.h"
#include "ReportFile.h"
#include "TrainingStep.h"
#include "TypeUtils.h"

#include "mpc/Dialect/MPC/IR/InputLimits.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Dialect/MPC/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::mpc {
#define GEN_PASS_DEF_ASSIGNPRECISIONPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;

static llvm::cl::opt<std::string> clPrecisionReport(
    "mpc-precision-report",
    llvm::cl::desc("Write the report of --mpc-assign-precision to FILE "
                   "('-' for stdout: a table on a terminal, else JSON)"),
    llvm::cl::value_desc("FILE"), llvm::cl::init(""));

namespace {

enum class Level { O0, O1, O2, O3 };

/// Reductions over at least this many elements per output are "large": in
/// f16 the running sum stops growing (2048 + 1 == 2048).
constexpr int64_t kLargeReduction = 1024;

/// One line of the precision report.
struct OpRecord {
  std::string location, function, op, category, rule;
  SmallVector<std::string> inputs, outputs;
};

std::string locationName(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                         file.getLine(), file.getColumn());
  std::string s;
  llvm::raw_string_ostream os(s);
  loc.print(os);
  return s;
}

/// The wider of two float types; two different 16-bit types meet at f32.
Type widest(Type a, Type b) {
  if (!a || a == b)
    return b;
  unsigned wa = a.getIntOrFloatBitWidth(), wb = b.getIntOrFloatBitWidth();
  if (wa != wb)
    return wa > wb ? a : b;
  return Float32Type::get(a.getContext());
}

bool isLoss(Operation *op) {
  return isa<CrossEntropyOp, CrossEntropyBackwardOp, MSEOp, MSEBackwardOp,
             BCEWithLogitsOp, BCEWithLogitsBackwardOp, BinaryCrossEntropyOp,
             BinaryCrossEntropyBackwardOp>(op);
}

bool isBatchNorm(Operation *op) {
  return isa<BatchNormOp, BatchNormInferenceOp, BatchNormBackwardOp>(op);
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Elements summed per output element, for ops that reduce.
std::optional<int64_t> reducedElements(Operation *op) {
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  auto alongAxis = [&](Value v, int64_t axis) {
    ArrayRef<int64_t> shape = shapeOf(v);
    return shape[axis < 0 ? axis + shape.size() : axis];
  };
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
      .Case<ReduceSumOp, ReduceMeanOp>([&](auto r) {
        int64_t n = 1;
        for (int64_t d : r.getDims())
          n *= shapeOf(r.getInput())[d];
        return n;
      })
      .Case<SoftmaxOp, LogSoftmaxOp>(
          [&](auto s) { return alongAxis(s.getInput(), s.getAxis()); })
      .Case<SoftmaxBackwardOp, LogSoftmaxBackwardOp>(
          [&](auto s) { return alongAxis(s.getGrad(), s.getAxis()); })
      .Case<SoftmaxDropoutOp, SoftmaxDropoutBackwardOp>(
          [&](auto s) { return alongAxis(s.getResult(), -1); })
      .Case<LayerNormOp, LayerNormBackwardOp>(
          [&](auto l) -> int64_t { return product(shapeOf(l.getGamma())); })
      .Case<BatchNormOp, BatchNormBackwardOp>([&](auto b) {
        ArrayRef<int64_t> shape = shapeOf(b.getInput());
        return product(shape.drop_back());
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Whether one of `op`'s float tensor operands or results is f64.
bool readsOrWritesF64(Operation *op) {
  auto isF64 = [](Value v) {
    RankedTensorType t = floatTensor(v.getType());
    return t && t.getElementType().isF64();
  };
  return llvm::any_of(op->getOperands(), isF64) ||
         llvm::any_of(op->getResults(), isF64);
}

/// Ops whose operands keep their types whatever the op's compute type: they
/// take gradients of any float type and convert them inside.
bool keepsOperandTypes(Operation *op) {
  return isa<UnscaleAndCheckOp, SGDUpdateOp, AdamUpdateOp>(op);
}

/// Whether `operand` is one of `range` (an operand of an op with optional
/// or variadic operands).
bool isIn(OpOperand &operand, MutableOperandRange range) {
  return llvm::any_of(range, [&](OpOperand &o) { return &o == &operand; });
}

/// Operands that keep their type whatever their op's compute type:
/// statistics, f32 (f64), and a fused layer norm's parameters (as
/// mpc.layer_norm's f32 parameters beside low-precision activations).
/// Operands that are f32 whatever the op computes in: attention's additive
/// bias of the scores (its producers may have run in low precision).
bool f32Operand(OpOperand &operand) {
  if (auto attention = dyn_cast<AttentionOp>(operand.getOwner()))
    return isIn(operand, attention.getBiasMutable());
  if (auto back = dyn_cast<AttentionBackwardOp>(operand.getOwner()))
    return isIn(operand, back.getBiasMutable());
  return false;
}

bool keepsItsType(OpOperand &operand) {
  Operation *op = operand.getOwner();
  if (auto back = dyn_cast<AttentionBackwardOp>(op))
    return &operand == &back.getLogsumexpMutable();
  if (auto norm = dyn_cast<AddLayerNormOp>(op))
    return &operand == &norm.getGammaMutable() ||
           &operand == &norm.getBetaMutable();
  // A layer norm's statistics are f32 (f64 for f64) whatever the level, a
  // batch norm's f32.
  if (auto back = dyn_cast<BatchNormBackwardOp>(op))
    return &operand == &back.getSavedMeanMutable() ||
           &operand == &back.getSavedInvstdMutable();
  if (auto back = dyn_cast<LayerNormBackwardOp>(op))
    return isIn(operand, back.getMeanMutable()) ||
           isIn(operand, back.getRstdMutable());
  if (auto back = dyn_cast<AddLayerNormBackwardOp>(op))
    return isIn(operand, back.getMeanMutable()) ||
           isIn(operand, back.getRstdMutable()) ||
           isIn(operand, back.getGammaMutable()) ||
           isIn(operand, back.getGammaAddendMutable()) ||
           isIn(operand, back.getBetaAddendMutable());
  return false;
}

/// Re-derives result types after operands changed type: through type
/// inference where the op has it, else float results take `element`.
void refreshResultTypes(Operation *op, Type element) {
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (succeeded(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types))) {
      for (auto [result, type] : llvm::zip_equal(op->getResults(), types))
        result.setType(type);
      return;
    }
  }
  if (!element)
    return;
  for (Value result : op->getResults())
    if (auto tensor = floatTensor(result.getType()))
      result.setType(tensor.clone(element));
}

class Assigner {
public:
  Assigner(ModuleOp module, Level level, FloatType lowp, bool keepBatchNorm,
           bool allowUnsafe, bool alignmentRemarks,
           const PrecisionPolicy &policy)
      : module(module), symbols(module), level(level), lowp(lowp),
        f32(Float32Type::get(module.getContext())),
        keepBatchNorm(keepBatchNorm), allowUnsafe(allowUnsafe),
        alignmentRemarks(alignmentRemarks), policy(policy) {}

  LogicalResult run();

  std::vector<OpRecord> records;
  int64_t castsInserted = 0;
  llvm::MapVector<Type, int64_t> activationsBefore, activationsAfter;
  llvm::MapVector<Type, int64_t> weightsBefore, weightsAfter;

private:
  Value castTo(Value value, Type element);
  Value weightCopy(ml_program::GlobalLoadOp load);
  LogicalResult assign(Operation *op, StringRef function);
  void addWeightCopyUpdate(Operation *optimizer);
  void refreshCopiesOnStore(func::FuncOp func);
  bool writesF32State(Operation *op);
  void record(Operation *op, StringRef function, StringRef category,
              StringRef rule);
  void lowerGlobalsForO3();
  void alignmentRemark(Operation *op);
  void tally(llvm::MapVector<Type, int64_t> &activations,
             llvm::MapVector<Type, int64_t> &weights);

  ModuleOp module;
  SymbolTable symbols;
  Level level;
  FloatType lowp;
  FloatType f32;
  bool keepBatchNorm, allowUnsafe, alignmentRemarks;
  const PrecisionPolicy &policy;

  DenseMap<std::pair<Value, Type>, Value> castCache;
  /// O2: master global name -> its low-precision copy.
  llvm::StringMap<ml_program::GlobalOp> copies;
  /// O2: a load of a master -> the load of its copy beside it.
  DenseMap<Value, Value> copyLoads;
  /// O3: the globals stored in low precision, and the element type each
  /// had (which a function kept as written casts its loads back to).
  llvm::DenseMap<StringRef, Type> loweredGlobals;
};

Value Assigner::castTo(Value value, Type element) {
  RankedTensorType type = floatTensor(value.getType());
  if (!type || type.getElementType() == element)
    return value;
  if (level == Level::O2 && element == lowp)
    if (auto load = value.getDefiningOp<ml_program::GlobalLoadOp>())
      if (Value copy = weightCopy(load))
        return copy;
  Value &cached = castCache[{value, element}];
  if (cached)
    return cached;
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  cached = CastOp::create(builder, value.getLoc(), type.clone(element), value);
  ++castsInserted;
  return cached;
}

/// O2 keeps a persistent low-precision copy of each f32 weight that feeds
/// low-precision compute: `@<name>_<dtype>`, marked with `mpc.master`, so the
/// runtime initializes it from the master and the optimizer rewrites it.
Value Assigner::weightCopy(ml_program::GlobalLoadOp load) {
  auto master =
      symbols.lookup<ml_program::GlobalOp>(load.getGlobal().getLeafReference());
  RankedTensorType type = master ? floatTensor(master.getType()) : nullptr;
  if (!type || type.getElementType() != f32)
    return {};
  Value &cached = copyLoads[load.getResult()];
  if (cached)
    return cached;
  ml_program::GlobalOp &copy = copies[master.getSymName()];
  if (!copy) {
    OpBuilder builder(master);
    builder.setInsertionPointAfter(master);
    std::string name = (master.getSymName() + "_" + typeName(lowp)).str();
    copy = ml_program::GlobalOp::create(
        builder, master.getLoc(), builder.getStringAttr(name),
        TypeAttr::get(type.clone(lowp)),
        /*is_mutable=*/builder.getUnitAttr(), /*value=*/nullptr,
        builder.getStringAttr("private"));
    copy->setAttr("mpc.master",
                  FlatSymbolRefAttr::get(master.getSymNameAttr()));
    symbols.insert(copy);
  }
  OpBuilder builder(load);
  builder.setInsertionPointAfter(load);
  cached = ml_program::GlobalLoadOp::create(
      builder, load.getLoc(), copy.getType(),
      FlatSymbolRefAttr::get(copy.getSymNameAttr()));
  return cached;
}

/// O2: an optimizer step on a master that has a low-precision copy also
/// writes the copy, in the same op (the master-weight update kernel).
void Assigner::addWeightCopyUpdate(Operation *optimizer) {
  Value param = optimizer->getOperand(0);
  auto load = param.getDefiningOp<ml_program::GlobalLoadOp>();
  if (!load)
    return;
  ml_program::GlobalOp copy =
      copies.lookup(load.getGlobal().getLeafReference());
  if (!copy || optimizer->hasAttr("copy_type"))
    return;
  OpBuilder builder(optimizer);
  NamedAttrList attrs(optimizer->getAttrDictionary());
  attrs.set("copy_type", TypeAttr::get(lowp));
  if (auto sgd = dyn_cast<SGDUpdateOp>(optimizer))
    attrs.set(
        "resultSegmentSizes",
        builder.getDenseI32ArrayAttr({1, sgd.getMomentumBuffer() ? 1 : 0, 1}));
  SmallVector<Type> types(optimizer->getResultTypes());
  types.push_back(copy.getType());
  OperationState state(optimizer->getLoc(), optimizer->getName(),
                       optimizer->getOperands(), types, attrs);
  Operation *updated = builder.create(state);
  optimizer->replaceAllUsesWith(
      updated->getResults().take_front(optimizer->getNumResults()));
  optimizer->erase();
  builder.setInsertionPointAfter(updated);
  ml_program::GlobalStoreOp::create(
      builder, updated->getLoc(), FlatSymbolRefAttr::get(copy.getSymNameAttr()),
      updated->getResults().back());
}

/// O2: any other write of a master (a hand-written update) also writes its
/// copy, so the copy never goes stale.
void Assigner::refreshCopiesOnStore(func::FuncOp func) {
  SmallVector<ml_program::GlobalStoreOp> stores;
  func.walk([&](ml_program::GlobalStoreOp store) { stores.push_back(store); });
  for (ml_program::GlobalStoreOp store : stores) {
    ml_program::GlobalOp copy =
        copies.lookup(store.getGlobal().getLeafReference());
    Operation *def = store.getValue().getDefiningOp();
    if (!copy || (isa_and_nonnull<SGDUpdateOp, AdamUpdateOp>(def) &&
                  def->hasAttr("copy_type")))
      continue;
    OpBuilder builder(store);
    builder.setInsertionPointAfter(store);
    auto type = cast<RankedTensorType>(store.getValue().getType());
    Value lowered = CastOp::create(builder, store.getLoc(), type.clone(lowp),
                                   store.getValue());
    ++castsInserted;
    ml_program::GlobalStoreOp::create(
        builder, store.getLoc(), FlatSymbolRefAttr::get(copy.getSymNameAttr()),
        lowered);
  }
}

/// O3: every float tensor global is stored in low precision (no masters).
/// Scalars (learning rate, step counts, loss-scale state) stay as they are:
/// they are hyper-parameters, not weights.
void Assigner::lowerGlobalsForO3() {
  llvm::DenseMap<StringRef, Type> &lowered = loweredGlobals;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    RankedTensorType type = floatTensor(global.getType());
    // Gradient accumulators stay f32 (they sum many low-precision terms).
    if (!type || type.getRank() == 0 || type.getElementType() == lowp ||
        global->hasAttr("mpc.grad_accumulator"))
      continue;
    global.setType(type.clone(lowp));
    if (auto dense =
            dyn_cast_or_null<DenseFPElementsAttr>(global.getValueAttr())) {
      const llvm::fltSemantics &semantics = lowp.getFloatSemantics();
      global.setValueAttr(dense.mapValues(lowp, [&](const APFloat &value) {
        APFloat rounded = value;
        bool lost;
        rounded.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
        return rounded.bitcastToAPInt();
      }));
    }
    lowered[global.getSymName()] = type.getElementType();
  }
  module.walk([&](ml_program::GlobalLoadOp load) {
    if (lowered.contains(load.getGlobal().getLeafReference()))
      load.getResult().setType(
          cast<RankedTensorType>(load.getType()).clone(lowp));
  });
}

void Assigner::alignmentRemark(Operation *op) {
  SmallVector<std::pair<StringRef, int64_t>> dims;
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    ArrayRef<int64_t> a = shape(mm.getA()), b = shape(mm.getB());
    int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
    if (mm.getTransposeA())
      std::swap(m, k);
    if (mm.getTransposeB())
      n = b[b.size() - 2];
    dims = {{"M", m}, {"N", n}, {"K", k}};
  } else if (isa<Conv2DOp, Conv2DBackwardDataOp>(op)) {
    ArrayRef<int64_t> f = shape(op->getOperand(1));
    dims = {{"output channels", f[0]}, {"input channels", f[3]}};
  } else if (isa<Conv2DBackwardFilterOp>(op)) {
    ArrayRef<int64_t> f = shape(op->getResult(0));
    dims = {{"output channels", f[0]}, {"input channels", f[3]}};
  } else if (auto ct = dyn_cast<ConvTranspose2DOp>(op)) {
    ArrayRef<int64_t> f = shape(ct.getFilter());
    dims = {{"input channels", f[0]}, {"output channels", f[3]}};
  }
  std::string misaligned;
  for (auto [name, size] : dims)
    if (size % 8 != 0)
      misaligned += llvm::formatv("{0}{1} = {2} (pad to {3})",
                                  misaligned.empty() ? "" : ", ", name, size,
                                  llvm::alignTo(size, 8));
  if (!misaligned.empty())
    emitRemark(op->getLoc())
        << "'" << op->getName() << "': Tensor Cores need " << typeName(lowp)
        << " GEMM dimensions that are multiples of 8: " << misaligned;
}

/// Whether a result of `op` is stored into an f32 global: an update of f32
/// state (a master weight, a running statistic) must not round to low
/// precision on the way.
bool Assigner::writesF32State(Operation *op) {
  for (Operation *user : op->getUsers())
    if (auto store = dyn_cast<ml_program::GlobalStoreOp>(user))
      if (auto global = symbols.lookup<ml_program::GlobalOp>(
              store.getGlobal().getLeafReference()))
        if (RankedTensorType t = floatTensor(global.getType()))
          if (t.getElementType() == f32)
            return true;
  return false;
}

LogicalResult Assigner::assign(Operation *op, StringRef function) {
  std::string lookupError;
  FailureOr<std::optional<CategoryChoice>> found =
      policy.lookup(op, lookupError);
  if (failed(found))
    return op->emitError() << lookupError;
  std::optional<CategoryChoice> choice = *found;
  if (!choice || isa<CastOp, ConstantOp>(op))
    return success();

  if (isa<BinaryCrossEntropyOp, BinaryCrossEntropyBackwardOp>(op))
    return op->emitError()
           << "'" << op->getName()
           << "' is unsafe to run under mixed precision: probabilities "
              "saturate in low precision; compute logits and use "
              "mpc.bce_with_logits, which combines the sigmoid with the loss";

  StringRef category = stringifyPrecisionCategory(choice->category);
  std::string rule;
  Type compute; // The element type float operands are cast to, if any.
  auto floatOperandTypes = [&](bool weightsAreLowp = false) {
    Type wide;
    for (Value v : op->getOperands()) {
      RankedTensorType t = floatTensor(v.getType());
      if (!t)
        continue;
      bool weight = weightsAreLowp &&
                    v.getDefiningOp<ml_program::GlobalLoadOp>() &&
                    t.getRank() > 0;
      wide = widest(wide, weight ? Type(lowp) : t.getElementType());
    }
    return wide;
  };
  auto describe = [&](StringRef what) {
    return llvm::formatv("{0} ({1})", what, choice->source).str();
  };

  if (isa<ScaleLossOp, UnscaleAndCheckOp, UpdateLossScaleOp>(op)) {
    compute = f32;
    rule = "loss-scale ops always run in f32";
  } else if (isa<SGDUpdateOp, AdamUpdateOp>(op)) {
    rule = level == Level::O3
               ? "O3: the optimizer updates the low-precision weights"
               : "optimizer updates run in f32 on the f32 masters";
  } else if (level != Level::O3 && !choice->instance && readsOrWritesF64(op)) {
    // As autocast, which casts no float64 tensor: an f64 op runs as
    // written, not rounded to low precision nor to f32 (an fp32 op would
    // lose precision). O3 stores every weight low, f64 ones too.
    compute = Float64Type::get(op->getContext());
    rule = "f64: runs as written (mixed precision casts no f64 value)";
  } else if (isBatchNorm(op) && level >= Level::O2 && !choice->instance) {
    if (keepBatchNorm) {
      // Apex's O2 and cuDNN: f32 parameters and statistics (accumulated in
      // f32 inside the op), low-precision activations: no casts around it.
      // Activations: the input, and in the backward the gradient, the
      // input and a fused ReLU's output (`result`).
      auto back = dyn_cast<BatchNormBackwardOp>(op);
      unsigned activations = back ? 2 : 1;
      for (OpOperand &operand : op->getOpOperands()) {
        bool activation = operand.getOperandNumber() < activations ||
                          (back && operand.get() == back.getResult());
        operand.set(castTo(operand.get(), activation ? Type(lowp) : Type(f32)));
      }
      refreshResultTypes(op, /*element=*/nullptr);
      record(op, function, category,
             "keep-batchnorm-fp32: f32 parameters and statistics, "
             "low-precision activations");
      return success();
    }
    compute = lowp;
    rule = "keep-batchnorm-fp32=false";
  } else if (level == Level::O3 && !choice->instance) {
    compute = lowp;
    rule = "O3: every op in low precision";
  } else {
    switch (choice->category) {
    case PrecisionCategory::Lowp:
      compute = lowp;
      rule = describe("lowp: low precision, f32 accumulation");
      break;
    case PrecisionCategory::Fp32:
      compute = f32;
      rule = describe("fp32: numerically sensitive");
      break;
    case PrecisionCategory::Promote:
      if (level == Level::O2 && !writesF32State(op)) {
        compute = lowp;
        rule = describe("promote: O2 runs it low");
      } else {
        compute = floatOperandTypes();
        rule = level == Level::O2
                   ? describe("promote: widest input, it writes f32 state")
                   : describe("promote: widest input");
      }
      break;
    case PrecisionCategory::Follow:
      // Several float inputs must agree: they meet at the widest. At O2 a
      // weight counts as low precision (its copy costs nothing per step),
      // unless the op writes f32 state.
      compute = floatOperandTypes(
          /*weightsAreLowp=*/level == Level::O2 && !writesF32State(op));
      rule = describe("follow: input type");
      break;
    }
  }

  if (compute == lowp && level != Level::O3 && !allowUnsafe &&
      choice->source != "default") {
    std::optional<int64_t> reduced = reducedElements(op);
    if (isLoss(op) || (reduced && *reduced >= kLargeReduction))
      return op->emitError()
             << "'" << op->getName() << "' would run in " << typeName(lowp)
             << " because of " << choice->source << ": "
             << (isLoss(op)
                     ? std::string("a loss")
                     : llvm::formatv("a reduction over {0} elements", *reduced)
                           .str())
             << " loses precision there; pass allow-unsafe to force it";
  }

  if (compute && !keepsOperandTypes(op))
    for (OpOperand &operand : op->getOpOperands()) {
      if (keepsItsType(operand))
        continue;
      operand.set(castTo(operand.get(), f32Operand(operand) ? f32 : compute));
    }

  // An optimizer update takes its gradient as it comes, where the runtime
  // has a kernel for the pair; otherwise (a 16-bit parameter of the other
  // 16-bit type, an f64 parameter of a low-precision op) the gradient is
  // widened first: to f32, or to f64 for an f64 parameter, as autograd
  // casts a gradient back to its parameter's type.
  if (isa<SGDUpdateOp, AdamUpdateOp>(op)) {
    OpOperand &grad = isa<SGDUpdateOp>(op)
                          ? cast<SGDUpdateOp>(op).getGradMutable()
                          : cast<AdamUpdateOp>(op).getGradMutable();
    Type param = floatTensor(op->getOperand(0).getType()).getElementType();
    RankedTensorType gradType = floatTensor(grad.get().getType());
    if (gradType && !updateTakes(param, gradType.getElementType()))
      grad.set(
          castTo(grad.get(), param.isF64() ? param : static_cast<Type>(f32)));
  }

  // Optimizer results follow their parameter and state (low precision at
  // O3); the copy keeps its type.
  if (auto sgd = dyn_cast<SGDUpdateOp>(op)) {
    sgd.getNewParam().setType(sgd.getParam().getType());
    if (Value buffer = sgd.getNewMomentumBuffer())
      buffer.setType(sgd.getMomentumBuffer().getType());
  } else if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
    adam.getNewParam().setType(adam.getParam().getType());
    adam.getNewExpAvg().setType(adam.getExpAvg().getType());
    adam.getNewExpAvgSq().setType(adam.getExpAvgSq().getType());
  } else {
    refreshResultTypes(op, compute);
  }

  if (alignmentRemarks && compute == lowp &&
      choice->category == PrecisionCategory::Lowp)
    alignmentRemark(op);

  record(op, function, category, rule);
  return success();
}

void Assigner::record(Operation *op, StringRef function, StringRef category,
                      StringRef rule) {
  OpRecord r{locationName(op->getLoc()),
             function.str(),
             op->getName().getStringRef().str(),
             category.str(),
             rule.str(),
             {},
             {}};
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      r.inputs.push_back(typeName(t.getElementType()));
  for (Value v : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      r.outputs.push_back(typeName(t.getElementType()));
  records.push_back(std::move(r));
}

void Assigner::tally(llvm::MapVector<Type, int64_t> &activations,
                     llvm::MapVector<Type, int64_t> &weights) {
  // The weights: the globals GlobalRoles.h calls parameters (not the
  // optimizer state, running statistics or constants of a graph that has
  // them).
  llvm::StringMap<GlobalRole> roles = globalRoles(module);
  for (auto global : module.getOps<ml_program::GlobalOp>())
    if (RankedTensorType t = floatTensor(global.getType());
        t && roles.lookup(global.getSymName()) == GlobalRole::Parameter)
      weights[t.getElementType()] += byteSize(t);
  module.walk([&](Operation *op) {
    if (isa<ml_program::GlobalLoadOp, ModuleOp, func::FuncOp>(op))
      return;
    for (Value v : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        activations[t.getElementType()] += byteSize(t);
  });
}

LogicalResult Assigner::run() {
  tally(activationsBefore, weightsBefore);
  if (level == Level::O3) {
    emitWarning(module.getLoc())
        << "level O3 runs every op in " << typeName(lowp)
        << " without f32 master weights: a speed baseline, "
           "not a training recipe";
    // Adam's second moment in f16 flushes to 0 for gradients below 2^-12
    // (their square is below f16's smallest subnormal, 2^-24); the step is
    // then |m| / eps, and a tiny eps sends the weights to inf and NaN on
    // steps loss scaling does not skip (the gradients are finite).
    if (lowp.isF16())
      module.walk([&](AdamUpdateOp adam) {
        double eps = adam.getEps().convertToDouble();
        if (eps < 0x1p-14)
          adam.emitWarning()
              << "at O3 the moments are f16, where the second moment is 0 "
                 "for gradients below 2^-12, and eps "
              << optionNumber(eps)
              << " then makes steps of |m| / eps (the weights overflow to "
                 "inf and NaN): use eps >= 1e-4, bf16, or O2";
      });
    lowerGlobalsForO3();
  }
  for (auto func : module.getOps<func::FuncOp>()) {
    // A function kept in f32 (an f32 evaluation step): untouched, but at
    // O3 the weights it reads are low precision now and are cast back up
    // to the type each had (f32, or f64).
    if (func->hasAttr("mpc.keep_f32")) {
      func.walk([&](ml_program::GlobalLoadOp load) {
        auto lowered = loweredGlobals.find(load.getGlobal().getLeafReference());
        if (lowered == loweredGlobals.end())
          return;
        auto type = cast<RankedTensorType>(load.getType());
        OpBuilder builder(load.getContext());
        builder.setInsertionPointAfter(load);
        auto up = CastOp::create(builder, load.getLoc(),
                                 type.clone(lowered->second), load.getResult());
        load.getResult().replaceAllUsesExcept(up, up);
        ++castsInserted;
      });
      continue;
    }
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op != func)
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (level != Level::O0 && failed(assign(op, func.getSymName())))
        return failure();
      if (level == Level::O0)
        if (std::optional<CategoryChoice> choice = policy.lookup(op))
          if (!isa<CastOp, ConstantOp>(op))
            record(op, func.getSymName(),
                   stringifyPrecisionCategory(choice->category),
                   "O0: every op in f32");
    }
    if (level == Level::O0)
      continue;
    // State keeps its global's type; the step keeps its signature.
    func.walk([&](Operation *op) {
      if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op)) {
        auto global = symbols.lookup<ml_program::GlobalOp>(
            store.getGlobal().getLeafReference());
        if (RankedTensorType t =
                global ? floatTensor(global.getType()) : nullptr)
          store.getValueMutable().assign(
              castTo(store.getValue(), t.getElementType()));
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [operand, type] : llvm::zip_equal(
                 ret->getOpOperands(), func.getFunctionType().getResults()))
          if (RankedTensorType t = floatTensor(type))
            operand.set(castTo(operand.get(), t.getElementType()));
      }
    });
    if (level == Level::O2) {
      for (Operation *op : ops)
        if (isa<SGDUpdateOp, AdamUpdateOp>(op))
          addWeightCopyUpdate(op);
      refreshCopiesOnStore(func);
    }
  }
  tally(activationsAfter, weightsAfter);
  return success();
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

void writeJson(llvm::raw_ostream &os, const Assigner &a, StringRef level,
               StringRef dtype) {
  llvm::json::OStream json(os, /*IndentSize=*/2);
  auto bytesByType = [&](const llvm::MapVector<Type, int64_t> &bytes) {
    json.object([&] {
      for (auto &[type, n] : bytes)
        json.attribute(typeName(type), n);
    });
  };
  json.object([&] {
    json.attribute("level", level);
    json.attribute("dtype", dtype);
    json.attributeArray("ops", [&] {
      for (const OpRecord &r : a.records)
        json.object([&] {
          json.attribute("location", r.location);
          json.attribute("function", r.function);
          json.attribute("op", r.op);
          json.attribute("category", r.category);
          json.attributeArray("inputs", [&] {
            for (const std::string &t : r.inputs)
              json.value(t);
          });
          json.attributeArray("outputs", [&] {
            for (const std::string &t : r.outputs)
              json.value(t);
          });
          json.attribute("rule", r.rule);
        });
    });
    json.attributeObject("totals", [&] {
      json.attributeObject("ops_by_dtype", [&] {
        llvm::MapVector<StringRef, int64_t> counts;
        for (const OpRecord &r : a.records)
          ++counts[r.outputs.empty() ? "none" : StringRef(r.outputs.front())];
        for (auto &[t, n] : counts)
          json.attribute(t, n);
      });
      json.attribute("casts_inserted", a.castsInserted);
      json.attributeObject("activation_bytes", [&] {
        json.attributeBegin("before");
        bytesByType(a.activationsBefore);
        json.attributeEnd();
        json.attributeBegin("after");
        bytesByType(a.activationsAfter);
        json.attributeEnd();
      });
      json.attributeObject("weight_bytes", [&] {
        json.attributeBegin("before");
        bytesByType(a.weightsBefore);
        json.attributeEnd();
        json.attributeBegin("after");
        bytesByType(a.weightsAfter);
        json.attributeEnd();
      });
    });
  });
  os << "\n";
}

void writeTable(llvm::raw_ostream &os, const Assigner &a, StringRef level,
                StringRef dtype) {
  os << llvm::formatv("mixed precision: level {0}, dtype {1}\n", level, dtype);
  os << llvm::formatv("{0,-28} {1,-26} {2,-8} {3,-16} {4,-8} {5}\n", "location",
                      "op", "category", "inputs", "output", "rule");
  for (const OpRecord &r : a.records) {
    // The file's base name keeps the column narrow; JSON has the full path.
    StringRef location = StringRef(r.location).rsplit('/').second;
    if (location.empty())
      location = r.location;
    os << llvm::formatv("{0,-28} {1,-26} {2,-8} {3,-16} {4,-8} {5}\n", location,
                        r.op, r.category, llvm::join(r.inputs, ","),
                        r.outputs.empty() ? "-" : r.outputs.front(), r.rule);
  }
  auto bytes = [](const llvm::MapVector<Type, int64_t> &m) {
    std::string s;
    for (auto &[type, n] : m)
      s +=
          llvm::formatv("{0}{1} {2}", s.empty() ? "" : ", ", typeName(type), n);
    return s.empty() ? std::string("none") : s;
  };
  os << llvm::formatv("casts inserted: {0}\n", a.castsInserted);
  os << "activation bytes: before " << bytes(a.activationsBefore) << "; after "
     << bytes(a.activationsAfter) << "\n";
  os << "weight bytes: before " << bytes(a.weightsBefore) << "; after "
     << bytes(a.weightsAfter) << "\n";
}

} // namespace

namespace mlir::mpc {
namespace {

struct AssignPrecisionPass
    : public impl::AssignPrecisionPassBase<AssignPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(verifyTrainingGraph(getOperation())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto fail = [&](const Twine &message) {
      emitError(module.getLoc()) << message;
      signalPassFailure();
    };

    std::optional<Level> lvl = llvm::StringSwitch<std::optional<Level>>(level)
                                   .Case("O0", Level::O0)
                                   .Case("O1", Level::O1)
                                   .Case("O2", Level::O2)
                                   .Case("O3", Level::O3)
                                   .Default(std::nullopt);
    if (!lvl)
      return fail("mpc-assign-precision: unknown level '" + level +
                  "' (expected O0, O1, O2 or O3)");
    FloatType lowp;
    if (dtype == "f16")
      lowp = Float16Type::get(context);
    else if (dtype == "bf16")
      lowp = BFloat16Type::get(context);
    else
      return fail("mpc-assign-precision: unknown dtype '" + dtype +
                  "' (expected f16 or bf16)");
    bool keepBN;
    if (keepBatchNormFp32 == "auto")
      keepBN = *lvl != Level::O3;
    else if (keepBatchNormFp32 == "true")
      keepBN = true;
    else if (keepBatchNormFp32 == "false")
      keepBN = false;
    else
      return fail("mpc-assign-precision: keep-batchnorm-fp32 must be true, "
                  "false or auto, got '" +
                  keepBatchNormFp32 + "'");

    PrecisionPolicy overrides;
    std::string error;
    if (!policy.empty()) {
      std::string errorMessage;
      auto file = openSourceFile(policy, &errorMessage);
      if (!file)
        return fail("mpc-assign-precision: cannot read policy file: " +
                    errorMessage);
      if (failed(overrides.addPolicyFile(context, policy, file->getBuffer(),
                                         error)))
        return fail(error);
    }
    struct {
      StringRef option;
      ArrayRef<std::string> ops;
      PrecisionCategory category;
    } lists[] = {{"lowp-ops", lowpOps, PrecisionCategory::Lowp},
                 {"fp32-ops", fp32Ops, PrecisionCategory::Fp32},
                 {"promote-ops", promoteOps, PrecisionCategory::Promote},
                 {"follow-ops", followOps, PrecisionCategory::Follow}};
    for (const auto &list : lists)
      for (const std::string &name : list.ops)
        if (failed(overrides.addOverride(context, name, list.category,
                                         ("option " + list.option).str(),
                                         error)))
          return fail("mpc-assign-precision: " + list.option + ": " + error);

    Assigner assigner(module, *lvl, lowp, keepBN, allowUnsafe, alignmentRemarks,
                      overrides);
    if (failed(assigner.run()))
      return signalPassFailure();
    // A name entry that matched nothing is most likely a misspelt layer
    // name: said, not fatal (one policy file may serve several models).
    for (const std::string &source : overrides.unusedNameRules())
      module.emitWarning("mpc-assign-precision: ")
          << source << " matched no op";
    module->setAttr(
        "mpc.precision",
        DictionaryAttr::get(context,
                            {NamedAttribute(StringAttr::get(context, "level"),
                                            StringAttr::get(context, level)),
                             NamedAttribute(StringAttr::get(context, "dtype"),
                                            StringAttr::get(context, dtype))}));

    std::string out =
        report.empty() ? clPrecisionReport.getValue() : report.getValue();
    if (out.empty())
      return;
    // Checked before the file is opened, which would empty it.
    if (reportFormat != "auto" && reportFormat != "table" &&
        reportFormat != "json")
      return fail("mpc-assign-precision: report-format must be json, table "
                  "or auto, got '" +
                  reportFormat + "'");
    if (!policy.empty() && out != "-" && sameFile(out, policy))
      return fail("mpc-assign-precision: the report " + out +
                  " is the policy file: writing it would lose the policy; "
                  "name another file");
    auto file = openReport(out, module, "mpc-assign-precision");
    if (!file)
      return signalPassFailure();
    bool table =
        reportFormat == "table" ||
        (reportFormat == "auto" && out == "-" && file->os().is_displayed());
    if (table)
      writeTable(file->os(), assigner, level, dtype);
    else
      writeJson(file->os(), assigner, level, dtype);
    if (failed(keepReport(*file, out, module, "mpc-assign-precision")))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::mpc
