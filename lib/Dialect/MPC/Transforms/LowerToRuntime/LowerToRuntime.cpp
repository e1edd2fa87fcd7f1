//===- LowerToRuntime.cpp - mpc ops to calls of the mpcrt C ABI -----------===//
//
// --mpc-lower-to-runtime turns a planned module (after --mpc-plan-memory)
// into functions on raw pointers that call the runtime:
//
//   void <fn>(void *arena, void *state, void *const *inputs,
//             void *const *outputs)
//
// Tensors live at their planned arena offsets; globals live in one state
// buffer laid out here (256-byte aligned, in declaration order); results are
// copied into the caller's output buffers. The module also gets
//
//   void mpc_step(arena, state, inputs, outputs)  the entry function;
//   void mpc_accumulate(arena, state, inputs, outputs)
//                                                 its micro-step (gradient
//                                                 accumulation), or nothing;
//   void mpc_eval(arena, state, inputs, outputs)  the evaluation step (the
//                                                 entry's inputs, scalar
//                                                 outputs), or nothing;
//   void mpc_init_globals(state)                  expands the initialisers;
//   const char mpc_model[]                        a JSON descriptor (inputs,
//                                                 outputs, globals, sizes)
//
// which is what the runner links against. Everything left is func, arith
// and llvm ops, for the upstream lowering to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "../StateLayout.h"
#include "../TrainingStep.h"
#include "../TypeUtils.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Dialect/MPC/Transforms/Passes.h"
#include "mpc/Runtime/mpcrt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace mlir::mpc {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "mpc/Dialect/MPC/Transforms/Passes.h.inc"
} // namespace mlir::mpc

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

RankedTensorType lowering::tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::string lowering::suffix(Type element) {
  if (element.isF16())
    return "f16";
  if (element.isBF16())
    return "bf16";
  if (element.isF32())
    return "f32";
  return "f64";
}

int32_t lowering::dtypeCode(Type element) {
  if (element.isF16())
    return 0;
  if (element.isBF16())
    return 1;
  if (element.isF32())
    return 2;
  return 3;
}

int32_t lowering::activationCode(StringRef activation) {
  return activation == "relu"        ? MPCRT_RELU
         : activation == "gelu_tanh" ? MPCRT_GELU_TANH
                                     : MPCRT_ACTIVATION_NONE;
}

SmallVector<int64_t> lowering::strides(ArrayRef<int64_t> shape) {
  return denseView(shape).strides;
}

int64_t lowering::bytesOf(RankedTensorType type) { return byteSize(type); }

static LLVM::LLVMPointerType ptrType(MLIRContext *ctx) {
  return LLVM::LLVMPointerType::get(ctx);
}

//===----------------------------------------------------------------------===//
// ModuleSymbols
//===----------------------------------------------------------------------===//

func::FuncOp ModuleSymbols::declare(StringRef name, TypeRange args,
                                    TypeRange results) {
  // A map, not module.lookupSymbol (a scan): one lookup per runtime call.
  func::FuncOp &fn = declared[name];
  if (!fn)
    fn = module.lookupSymbol<func::FuncOp>(name);
  if (fn)
    return fn;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  fn = func::FuncOp::create(b, module.getLoc(), name,
                            b.getFunctionType(args, results));
  fn.setPrivate();
  return fn;
}

StringRef ModuleSymbols::constant(StringRef prefix, Attribute data,
                                  Type llvmType) {
  // Attributes are uniqued by the context: equal data is the same
  // attribute (keyed by its text, a large weight cost seconds and its
  // size twice over in hex).
  llvm::DenseMap<Attribute, StringRef> &same = uniqued[prefix];
  auto it = same.find(data);
  if (it != same.end())
    return it->second;
  std::string name = (prefix + Twine(counter++)).str();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto global = LLVM::GlobalOp::create(b, module.getLoc(), llvmType,
                                       /*isConstant=*/true,
                                       LLVM::Linkage::Internal, name, data);
  StringRef symbol = global.getSymName();
  same[data] = symbol;
  return symbol;
}

std::pair<Attribute, Type> lowering::flatConstant(DenseElementsAttr dense,
                                                  RankedTensorType type) {
  Type element = type.getElementType();
  if (element.isInteger(1)) { // bytes, as the runtime stores masks
    auto i8 = IntegerType::get(type.getContext(), 8);
    SmallVector<int8_t> bytes;
    for (bool v : dense.getValues<bool>())
      bytes.push_back(v);
    return {DenseElementsAttr::get(
                RankedTensorType::get({type.getNumElements()}, i8),
                ArrayRef(bytes)),
            i8};
  }
  if (!dense.isSplat() && bytesOf(type) >= kByteArrayFrom) {
    auto i8 = IntegerType::get(type.getContext(), 8);
    return {DenseElementsAttr::getFromRawBuffer(
                RankedTensorType::get({bytesOf(type)}, i8), dense.getRawData()),
            i8};
  }
  return {
      dense.reshape(RankedTensorType::get({type.getNumElements()}, element)),
      element};
}

int64_t ModuleSymbols::stateConstant(StringRef symbol, int64_t bytes) {
  auto [it, inserted] = stateConstantOffsets.try_emplace(symbol, 0);
  if (!inserted)
    return it->second;
  int64_t offset = llvm::alignTo(stateEnd, kStateAlignment);
  it->second = offset;
  stateConstants.push_back({symbol, offset, bytes});
  stateEnd = llvm::alignTo(offset + bytes, kStateAlignment);
  return offset;
}

StringRef ModuleSymbols::i64Array(ArrayRef<int64_t> values) {
  Builder b(module.getContext());
  SmallVector<int64_t> data(values);
  if (data.empty())
    data.push_back(0); // never read; keeps the pointer valid
  auto type = RankedTensorType::get({static_cast<int64_t>(data.size())},
                                    b.getI64Type());
  return constant("__mpc_i64_", DenseElementsAttr::get(type, ArrayRef(data)),
                  LLVM::LLVMArrayType::get(b.getI64Type(), data.size()));
}

StringRef ModuleSymbols::i32Array(ArrayRef<int32_t> values) {
  Builder b(module.getContext());
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI32Type());
  return constant("__mpc_i32_", DenseElementsAttr::get(type, values),
                  LLVM::LLVMArrayType::get(b.getI32Type(), values.size()));
}

StringRef ModuleSymbols::string(StringRef text) {
  Builder b(module.getContext());
  std::string data = (text + Twine('\0')).str();
  return constant("__mpc_str_", b.getStringAttr(data),
                  LLVM::LLVMArrayType::get(b.getI8Type(), data.size()));
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

Value Lowering::i64(int64_t v) {
  return arith::ConstantOp::create(b, loc(), b.getI64IntegerAttr(v));
}
Value Lowering::i32(int32_t v) {
  return arith::ConstantOp::create(b, loc(), b.getI32IntegerAttr(v));
}
Value Lowering::f64(double v) {
  return arith::ConstantOp::create(b, loc(), b.getF64FloatAttr(v));
}
Value Lowering::null() {
  return LLVM::ZeroOp::create(b, loc(), ptrType(b.getContext()));
}
Value Lowering::addressOf(StringRef symbol) {
  return LLVM::AddressOfOp::create(b, loc(), ptrType(b.getContext()), symbol);
}
Value Lowering::offset(Value base, int64_t bytes) {
  if (bytes == 0)
    return base;
  return LLVM::GEPOp::create(b, loc(), ptrType(b.getContext()), b.getI8Type(),
                             base, ValueRange{i64(bytes)});
}

Value Lowering::loadPointer(Value array, int64_t i) {
  Type ptr = ptrType(b.getContext());
  Value slot =
      LLVM::GEPOp::create(b, loc(), ptr, ptr, array, ValueRange{i64(i)});
  return LLVM::LoadOp::create(b, loc(), ptr, slot);
}

Value Lowering::pointerArray(ArrayRef<Value> values) {
  MLIRContext *ctx = b.getContext();
  Value array = LLVM::AllocaOp::create(b, loc(), ptrType(ctx), ptrType(ctx),
                                       i64(std::max<size_t>(values.size(), 1)));
  for (auto [i, v] : llvm::enumerate(values)) {
    Value slot = LLVM::GEPOp::create(b, loc(), ptrType(ctx), ptrType(ctx),
                                     array, ValueRange{i64(i)});
    LLVM::StoreOp::create(b, loc(), v, slot);
  }
  return array;
}

/// The global result #i of `op` is computed in (mpc.in_globals), or null.
static SymbolRefAttr inGlobalOf(Operation *op, unsigned i) {
  auto globals = op->getAttrOfType<ArrayAttr>("mpc.in_globals");
  if (!globals || i >= globals.size())
    return {};
  return dyn_cast<SymbolRefAttr>(globals[i]);
}

Value Lowering::result(Operation *op, unsigned i) {
  // Written into the global it is stored to (--mpc-plan-memory).
  if (SymbolRefAttr global = inGlobalOf(op, i)) {
    Value p = this->global(global.getLeafReference());
    bind(op->getResult(i), p);
    return p;
  }
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>("mpc.offsets");
  if (!offsets || static_cast<int64_t>(i) >= offsets.size() || offsets[i] < 0) {
    op->emitOpError("has no planned buffer for result #")
        << i << "; run --mpc-plan-memory before --mpc-lower-to-runtime";
    return {};
  }
  Value p = offset(arena, offsets[i]);
  bind(op->getResult(i), p);
  return p;
}

Value Lowering::global(StringRef name) {
  // Computed once at the top of the part, so every load of a global shares
  // one pointer value.
  return materialize(
      Address{Kind::State, symbols.globals.lookup(name).offset, {}});
}

std::optional<Lowering::Address>
Lowering::addressOfPointer(Value pointer) const {
  auto constantIndex = [](LLVM::GEPOp gep) -> std::optional<int64_t> {
    auto indices = gep.getIndices();
    if (indices.size() != 1)
      return std::nullopt;
    auto index = *indices.begin();
    IntegerAttr value = dyn_cast_if_present<IntegerAttr>(index);
    if (auto dynamic = dyn_cast_if_present<Value>(index))
      if (auto constant = dynamic.getDefiningOp<arith::ConstantOp>())
        value = dyn_cast<IntegerAttr>(constant.getValue());
    if (!value)
      return std::nullopt;
    return value.getInt();
  };
  if (pointer == arena || pointer == state)
    return Address{pointer == arena ? Kind::Arena : Kind::State, 0, {}};
  if (auto gep = pointer.getDefiningOp<LLVM::GEPOp>()) {
    std::optional<int64_t> bytes = constantIndex(gep);
    if (bytes && gep.getElemType().isInteger(8) &&
        (gep.getBase() == arena || gep.getBase() == state))
      return Address{
          gep.getBase() == arena ? Kind::Arena : Kind::State, *bytes, {}};
    return std::nullopt;
  }
  if (auto symbol = pointer.getDefiningOp<LLVM::AddressOfOp>())
    return Address{Kind::Symbol, 0, symbol.getGlobalName().str()};
  if (pointer.getDefiningOp<LLVM::ZeroOp>())
    return Address{Kind::Null, 0, {}};
  if (auto load = pointer.getDefiningOp<LLVM::LoadOp>()) {
    Value slot = load.getAddr();
    if (slot == inputs)
      return Address{Kind::Input, 0, {}};
    if (auto gep = slot.getDefiningOp<LLVM::GEPOp>();
        gep && gep.getBase() == inputs)
      if (std::optional<int64_t> i = constantIndex(gep))
        return Address{Kind::Input, *i, {}};
  }
  return std::nullopt;
}

Value Lowering::materialize(const Address &a) {
  auto it = partPointers.find(a);
  if (it != partPointers.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(state); // the top of the part
  Value p;
  switch (a.kind) {
  case Kind::Arena:
  case Kind::State:
    p = offset(a.kind == Kind::Arena ? arena : state, a.offset);
    break;
  case Kind::Symbol:
    p = addressOf(a.symbol);
    break;
  case Kind::Null:
    p = null();
    break;
  case Kind::Input:
    p = loadPointer(inputs, a.offset);
    break;
  }
  partPointers[a] = p;
  return p;
}

void Lowering::bind(Value tensor, Value pointer) {
  pointers[tensor] = pointer;
  if (std::optional<Address> a = addressOfPointer(pointer)) {
    addresses[tensor] = *a;
    partPointers.try_emplace(*a, pointer);
  }
}

Value Lowering::ptr(Value tensor) {
  Value p = pointers.lookup(tensor);
  if (!p || p.getParentRegion() == state.getParentRegion())
    return p;
  // Bound in an earlier part of the step: this part's value.
  auto it = addresses.find(tensor);
  return it == addresses.end() ? Value() : materialize(it->second);
}

void Lowering::startPart(Value newArena, Value newState, Value newInputs) {
  arena = newArena;
  state = newState;
  inputs = newInputs;
  partPointers.clear();
}

Value Lowering::call(StringRef name, ArrayRef<Value> args, bool returnsI64) {
  SmallVector<Type> types;
  for (Value a : args)
    types.push_back(a.getType());
  SmallVector<Type> results;
  if (returnsI64)
    results.push_back(b.getI64Type());
  func::FuncOp fn = symbols.declare(name, types, results);
  auto call = func::CallOp::create(b, loc(), fn, args);
  return returnsI64 ? call.getResult(0) : Value();
}

void Lowering::copy(Value to, Value from, RankedTensorType type) {
  if (to != from)
    call("mpcrt_copy", {to, from, i64(bytesOf(type))});
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

std::string dtypeName(Type element) {
  if (element.isInteger(1))
    return "bool";
  return typeName(element);
}

llvm::json::Value tensorJson(std::string name, RankedTensorType type) {
  llvm::json::Array shape;
  for (int64_t d : type.getShape())
    shape.push_back(d);
  return llvm::json::Object{{"name", std::move(name)},
                            {"dtype", dtypeName(type.getElementType())},
                            {"shape", std::move(shape)},
                            {"bytes", byteSize(type)}};
}

/// Whether `user` runs after `op` in their (shared) block.
bool runsAfter(Operation *user, Operation *op) {
  return user != op && user->getBlock() == op->getBlock() &&
         op->isBeforeInBlock(user);
}

/// The loads of each global in a function, gathered once: the in-place
/// check of every update then looks at its own global's loads only.
using LoadsByGlobal =
    llvm::DenseMap<Attribute, SmallVector<ml_program::GlobalLoadOp>>;

/// Ops that write their results into their operands' storage (globals):
/// checks that nothing reads those globals after them.
LogicalResult checkInPlace(Operation *op, ArrayRef<Value> operands,
                           const LoadsByGlobal &loadsOf) {
  for (Value v : operands) {
    auto load = v.getDefiningOp<ml_program::GlobalLoadOp>();
    if (!load)
      return op->emitOpError("updates its state in place, so operand ")
             << "must be loaded from a global (ml_program.global_load)";
    SymbolRefAttr global = load.getGlobal();
    // A snapshot: the global was stored to between the load and this op,
    // so the operand is no longer the global's storage.
    if (load->hasAttr("mpc.offsets")) {
      InFlightDiagnostic d = op->emitOpError("updates ")
                             << global << " in place, but " << global
                             << " is stored to between its load and this op";
      d.attachNote(load.getLoc()) << "loaded here";
      return failure();
    }
    for (ml_program::GlobalLoadOp other : loadsOf.lookup(global))
      for (Operation *user : other.getResult().getUsers())
        if (runsAfter(user, op)) {
          InFlightDiagnostic d = op->emitOpError("updates ")
                                 << global << " in place, but it is read "
                                 << "afterwards by '" << user->getName() << "'";
          d.attachNote(user->getLoc()) << "read here";
          return failure();
        }
  }
  return success();
}

struct LowerToRuntimePass
    : public mpc::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;

  void runOnOperation() override;

  LogicalResult layOutState(ModuleOp module, ModuleSymbols &symbols,
                            llvm::json::Array &globalsJson,
                            int64_t &stateBytes);
  LogicalResult lowerFunction(func::FuncOp func, ModuleSymbols &symbols,
                              bool countsStep);
  void emitInitializers(ModuleOp module, ModuleSymbols &symbols);
  /// mpc_refresh_copies(state): every low-precision copy (a global with
  /// mpc.master) set to its master, rounded to nearest even.
  func::FuncOp emitRefreshCopies(ModuleOp module, ModuleSymbols &symbols);
};

LogicalResult LowerToRuntimePass::layOutState(ModuleOp module,
                                              ModuleSymbols &symbols,
                                              llvm::json::Array &globalsJson,
                                              int64_t &stateBytes) {
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = dyn_cast<RankedTensorType>(global.getType());
    if (!type || !type.hasStaticShape())
      return global.emitOpError("needs a statically shaped tensor type to be "
                                "placed in the state buffer, got ")
             << global.getType();
  }
  StateLayout layout = mpc::layOutState(module);
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = cast<RankedTensorType>(global.getType());
    int64_t offset = layout.offsets.lookup(global.getSymName());
    symbols.globals[global.getSymName()] = {offset, byteSize(type), type};
    llvm::json::Value entry = tensorJson(global.getSymName().str(), type);
    entry.getAsObject()->insert({"offset", offset});
    globalsJson.push_back(std::move(entry));
  }
  // The step counter of dropout, checkpointed with the globals.
  symbols.stepOffset = layout.stepOffset;
  auto stepType =
      RankedTensorType::get({}, IntegerType::get(module.getContext(), 64));
  llvm::json::Value step = tensorJson("mpc.step", stepType);
  step.getAsObject()->insert({"offset", layout.stepOffset});
  globalsJson.push_back(std::move(step));
  symbols.stateSplats = layout.splats;
  stateBytes = layout.bytes;
  symbols.stateEnd = layout.bytes;
  return success();
}

LogicalResult LowerToRuntimePass::lowerFunction(func::FuncOp func,
                                                ModuleSymbols &symbols,
                                                bool countsStep) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("must have a single block to be lowered to the "
                            "runtime");
  if (!func->hasAttr("mpc.arena_bytes"))
    return func.emitOpError("has no memory plan; run --mpc-plan-memory "
                            "before --mpc-lower-to-runtime");
  MLIRContext *ctx = &getContext();
  Type ptr = ptrType(ctx);
  OpBuilder b(func);
  auto lowered =
      func::FuncOp::create(b, func.getLoc(), func.getSymName(),
                           b.getFunctionType({ptr, ptr, ptr, ptr}, {}));
  lowered->setAttr("mpc.arena_bytes", func->getAttr("mpc.arena_bytes"));
  Block *entry = lowered.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value arena = entry->getArgument(0), state = entry->getArgument(1),
        inputs = entry->getArgument(2), outputs = entry->getArgument(3);
  Lowering l(symbols, b, arena, state, inputs);
  l.currentLoc = func.getLoc();
  // A long step is lowered as a chain of functions (each part ends by
  // calling the next): LLVM's code generation of one function of 100k
  // calls is superlinear in its length (its fast register allocator).
  func::FuncOp part = lowered;
  int64_t opsInPart = 0, parts = 0;

  for (BlockArgument arg : func.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      return func.emitOpError("argument #")
             << arg.getArgNumber() << " must be a tensor, got "
             << arg.getType();
    l.bind(arg, l.loadPointer(inputs, arg.getArgNumber()));
  }

  LoadsByGlobal loadsOf;
  func.walk([&](ml_program::GlobalLoadOp load) {
    loadsOf[load.getGlobal()].push_back(load);
  });
  // Stores of zeros to globals that follow each other in the state (a
  // step's resets of its gradient accumulators, which the accumulation
  // lays out together and the plan moves to the end) are one mpcrt_zero
  // over the run, the padding between them included: one kernel instead
  // of one a global. Not with state guards, which the padding then holds.
  bool mergeZeros = stateGuardBytes(func->getParentOfType<ModuleOp>()) == 0;
  struct ZeroRun {
    StringRef first;
    int64_t start = 0, end = 0;
    Location loc;
  };
  std::optional<ZeroRun> zeros;
  auto flushZeros = [&]() {
    if (!zeros)
      return;
    Location here = l.currentLoc;
    l.currentLoc = zeros->loc;
    l.call("mpcrt_zero",
           {l.global(zeros->first), l.i64(zeros->end - zeros->start)});
    l.currentLoc = here;
    zeros.reset();
  };
  // Whether `store` stores zeros (an mpc.constant only stores use).
  auto storesZeros = [](ml_program::GlobalStoreOp store) {
    auto zero = store.getValue().getDefiningOp<ConstantOp>();
    return zero && isStoredZero(zero);
  };
  // Adds the zeroing `store` to the run, or starts a new one.
  auto addZeros = [&](ml_program::GlobalStoreOp store) {
    StringRef name = store.getGlobal().getLeafReference();
    const GlobalSlot &slot = symbols.globals.lookup(name);
    if (zeros && static_cast<int64_t>(llvm::alignTo(
                     zeros->end, kStateAlignment)) == slot.offset) {
      zeros->end = slot.offset + slot.bytes;
      return;
    }
    flushZeros();
    zeros =
        ZeroRun{name, slot.offset, slot.offset + slot.bytes, store.getLoc()};
  };
  // A store to a global: a copy, or zeroes.
  auto lowerStore = [&](ml_program::GlobalStoreOp store) {
    l.currentLoc = store.getLoc();
    Value value = store.getValue();
    // Computed in the global's own storage: nothing to copy.
    if (auto result = dyn_cast<OpResult>(value);
        result && inGlobalOf(result.getOwner(), result.getResultNumber()) ==
                      store.getGlobalAttr())
      return;
    if (storesZeros(store)) {
      l.call("mpcrt_zero", {l.global(store.getGlobal().getLeafReference()),
                            l.i64(byteSize(tensorType(value)))});
      return;
    }
    l.copy(l.global(store.getGlobal().getLeafReference()), l.ptr(value),
           tensorType(value));
  };
  // Optimizer updates (SGD, Adam, LAMB) are held, grouped by what they
  // share, until an op that is not one of them, a load, a
  // store of their results or a numerics check: each group is then one
  // multi-tensor call (one launch on CUDA where there were as many as
  // parameters), the held stores after it. The updates touch only their
  // own parameter and state, so their order among themselves does not
  // matter. Of the held checks' values (--mpc-check-numerics checks
  // before each update what it overwrites), those the updates do not make
  // (state not yet updated, gradients) are checked in one call before the
  // updates, the updates' results in one call after them: nothing else
  // in a run writes memory.
  SmallVector<SmallVector<Operation *>> updateGroups;
  SmallVector<ml_program::GlobalStoreOp> heldStores;
  SmallVector<CheckNumericsOp> heldChecks;
  llvm::SmallPtrSet<Operation *, 16> held;
  // The globals the run's updates and stores write (and those its updates
  // read otherwise: the rate, the step): a load of one of them checked
  // within the run would be checked before or after the updates, not
  // where it was loaded, so such a check ends the run.
  llvm::DenseSet<Attribute> written;
  auto loadsWritten = [&](Value v) {
    auto load = v.getDefiningOp<ml_program::GlobalLoadOp>();
    return load && written.contains(load.getGlobalAttr());
  };
  // What a run holds: updates, loads, stores of updates' results, checks.
  auto holds = [&](Operation &op) {
    if (auto check = dyn_cast<CheckNumericsOp>(op))
      return llvm::none_of(check.getInputs(), loadsWritten);
    if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op))
      return isa_and_nonnull<AdamUpdateOp, SGDUpdateOp>(
          store.getValue().getDefiningOp());
    // A snapshot copies the global where it stands: the held updates are
    // lowered first.
    if (isa<ml_program::GlobalLoadOp>(op))
      return !op.hasAttr("mpc.offsets");
    return isa<AdamUpdateOp, SGDUpdateOp>(op);
  };
  auto release = [&]() -> LogicalResult {
    SmallVector<Value> before, after;
    SmallVector<int64_t> beforeIndices, afterIndices;
    for (CheckNumericsOp check : heldChecks)
      for (auto [value, index] :
           llvm::zip_equal(check.getInputs(), check.getIndices())) {
        bool made = held.contains(value.getDefiningOp());
        (made ? after : before).push_back(value);
        (made ? afterIndices : beforeIndices).push_back(index);
      }
    if (!before.empty() &&
        failed(lowerChecks(heldChecks.front(), before, beforeIndices, l)))
      return failure();
    for (auto &group : updateGroups)
      if (failed(lowerUpdateGroup(group, l)))
        return failure();
    if (!after.empty() &&
        failed(lowerChecks(heldChecks.front(), after, afterIndices, l)))
      return failure();
    for (ml_program::GlobalStoreOp store : heldStores)
      lowerStore(store);
    updateGroups.clear();
    heldStores.clear();
    heldChecks.clear();
    held.clear();
    written.clear();
    return success();
  };
  for (Operation &op : func.getBody().front()) {
    bool newPart = opsInPart + 1 > opsPerPart && opsPerPart > 0 &&
                   !isa<func::ReturnOp>(op);
    auto zeroing = dyn_cast<ml_program::GlobalStoreOp>(op);
    if (zeroing && (!mergeZeros || !storesZeros(zeroing)))
      zeroing = nullptr;
    // A constant runs nothing where it stands (its bytes are the state's
    // or the executable's), so it does not end a run.
    if (newPart || (!zeroing && !isa<ConstantOp>(op)) ||
        l.waitsBefore.count(&op))
      flushZeros();
    if (!held.empty() && (newPart || !holds(op)) && failed(release()))
      return failure();
    l.currentLoc = op.getLoc();
    ++opsInPart;
    if (newPart) {
      OpBuilder module(part);
      module.setInsertionPointAfter(part);
      auto next = func::FuncOp::create(
          module, func.getLoc(),
          (func.getSymName() + ".part" + Twine(++parts)).str(),
          lowered.getFunctionType());
      next.setPrivate();
      func::CallOp::create(b, l.loc(), next,
                           ValueRange{arena, state, inputs, outputs});
      func::ReturnOp::create(b, l.loc());
      Block *body = next.addEntryBlock();
      b.setInsertionPointToStart(body);
      arena = body->getArgument(0);
      state = body->getArgument(1);
      inputs = body->getArgument(2);
      outputs = body->getArgument(3);
      l.startPart(arena, state, inputs);
      part = next;
      opsInPart = 1;
    }
    for (int32_t slot : l.waitsBefore.lookup(&op))
      l.call("mpcrt_comm_all_reduce_wait", {l.i32(slot)});
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        l.copy(l.loadPointer(outputs, i), l.ptr(v), tensorType(v));
      if (countsStep)
        l.call("mpcrt_increment_step", {l.offset(state, symbols.stepOffset)});
      func::ReturnOp::create(b, l.loc());
      continue;
    }
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op)) {
      Value global = l.global(load.getGlobal().getLeafReference());
      // A snapshot (--mpc-plan-memory): the global is overwritten before
      // the value's last reader, so the value is copied where it is
      // loaded; otherwise readers read the global itself.
      if (load->hasAttr("mpc.offsets")) {
        Value copy = l.result(load, 0);
        if (!copy)
          return failure();
        l.copy(copy, global, tensorType(load.getResult()));
        continue;
      }
      l.bind(load.getResult(), global);
      continue;
    }
    if (zeroing) {
      addZeros(zeroing);
      continue;
    }
    if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op)) {
      if (held.contains(store.getValue().getDefiningOp())) {
        heldStores.push_back(store);
        written.insert(store.getGlobalAttr());
      } else
        lowerStore(store);
      continue;
    }
    // Its values may be held updates' results, bound at the release.
    if (auto check = dyn_cast<CheckNumericsOp>(op); check && !held.empty()) {
      heldChecks.push_back(check);
      continue;
    }
    if (isa<func::CallOp>(op))
      return op.emitOpError("calls between graphs are not lowered to the "
                            "runtime yet; inline the callee");
    for (Value operand : op.getOperands())
      if (!l.ptr(operand))
        return op.emitOpError("operand has no buffer (produced by an op the "
                              "lowering does not know)");
    // Ops writing state in place must be the last readers of that state.
    if (auto sgd = dyn_cast<SGDUpdateOp>(op)) {
      SmallVector<Value> state{sgd.getParam()};
      if (sgd.getMomentumBuffer())
        state.push_back(sgd.getMomentumBuffer());
      if (failed(checkInPlace(&op, state, loadsOf)))
        return failure();
    } else if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
      if (failed(checkInPlace(
              &op, {adam.getParam(), adam.getExpAvg(), adam.getExpAvgSq()},
              loadsOf)))
        return failure();
    }
    // Hold the update in its group.
    if (isa<SGDUpdateOp, AdamUpdateOp>(op)) {
      auto group = llvm::find_if(
          updateGroups, [&](auto &g) { return groupsWith(g.front(), &op); });
      if (group != updateGroups.end())
        group->push_back(&op);
      else
        updateGroups.push_back({&op});
      held.insert(&op);
      for (Value operand : op.getOperands())
        if (auto load = operand.getDefiningOp<ml_program::GlobalLoadOp>())
          written.insert(load.getGlobalAttr());
      continue;
    }
    if (auto update = dyn_cast<UpdateLossScaleOp>(op)) {
      if (failed(checkInPlace(&op,
                              {update.getScale(), update.getGrowthTracker(),
                               update.getHysteresisTracker()},
                              loadsOf)))
        return failure();
    }
    std::optional<LogicalResult> done;
    for (auto family :
         {lowerElementwise, lowerLinearAlgebra, lowerNormalization,
          lowerNeuralNet, lowerDataMovement, lowerTraining}) {
      done = family(&op, l);
      if (done)
        break;
    }
    if (!done)
      return op.emitOpError("has no lowering to the runtime");
    if (failed(*done))
      return failure();
  }
  func.erase();
  return success();
}

/// PyTorch's fans for the fan-based initialisers (see #mpc.init).
std::pair<double, double> fans(RankedTensorType type) {
  ArrayRef<int64_t> s = type.getShape();
  if (s.size() == 4) // OHWI
    return {double(s[3] * s[1] * s[2]), double(s[0] * s[1] * s[2])};
  return {double(s[s.size() - 2]), double(s[s.size() - 1])};
}

void LowerToRuntimePass::emitInitializers(ModuleOp module,
                                          ModuleSymbols &symbols) {
  MLIRContext *ctx = &getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), "mpc_init_globals",
                                 b.getFunctionType({ptrType(ctx)}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value state = fn.getArgument(0);
  Lowering l(symbols, b, state, state);
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    l.currentLoc = global.getLoc();
    auto type = cast<RankedTensorType>(global.getType());
    Value p =
        l.offset(state, symbols.globals.lookup(global.getSymName()).offset);
    Type element = type.getElementType();
    int64_t count = type.getNumElements();
    Value dtype = l.i32(dtypeCode(element));
    Attribute value = global.getValueAttr();
    if (auto init = dyn_cast_or_null<InitAttr>(value)) {
      auto get = [](FloatAttr attr, double dflt) {
        return attr ? attr.getValueAsDouble() : dflt;
      };
      auto random = [&](bool normal, double a, double bb) {
        l.call("mpcrt_fill_random",
               {dtype, p, l.i64(count), l.i32(normal), l.f64(a), l.f64(bb),
                l.i64(static_cast<int64_t>(init.getSeed()))});
      };
      switch (init.getKind()) {
      case InitKind::Zeros:
        l.call("mpcrt_zero", {p, l.i64(byteSize(type))});
        break;
      case InitKind::Ones:
        l.call("mpcrt_fill", {dtype, p, l.i64(count), l.f64(1.0)});
        break;
      case InitKind::Constant:
        l.call("mpcrt_fill",
               {dtype, p, l.i64(count), l.f64(get(init.getValue(), 0.0))});
        break;
      case InitKind::Uniform:
        random(false, get(init.getLow(), 0.0), get(init.getHigh(), 1.0));
        break;
      case InitKind::Normal:
        random(true, get(init.getMean(), 0.0), get(init.getStd(), 1.0));
        break;
      case InitKind::XavierUniform:
      case InitKind::XavierNormal: {
        auto [in, out] = fans(type);
        double gain = get(init.getGain(), 1.0);
        if (init.getKind() == InitKind::XavierUniform) {
          double bound = gain * std::sqrt(6.0 / (in + out));
          random(false, -bound, bound);
        } else {
          random(true, 0.0, gain * std::sqrt(2.0 / (in + out)));
        }
        break;
      }
      case InitKind::KaimingUniform:
      case InitKind::KaimingNormal: {
        double gain = get(init.getGain(), std::sqrt(2.0));
        double in = fans(type).first;
        if (init.getKind() == InitKind::KaimingUniform) {
          double bound = gain * std::sqrt(3.0 / in);
          random(false, -bound, bound);
        } else {
          random(true, 0.0, gain / std::sqrt(in));
        }
        break;
      }
      }
      continue;
    }
    auto dense = dyn_cast_or_null<DenseElementsAttr>(value);
    if (!dense) {
      l.call("mpcrt_zero", {p, l.i64(byteSize(type))});
      continue;
    }
    if (dense.isSplat() && isa<FloatType>(element)) {
      double v = dense.getSplatValue<APFloat>().convertToDouble();
      l.call("mpcrt_fill", {dtype, p, l.i64(count), l.f64(v)});
      continue;
    }
    // LLVM arrays are one-dimensional: the data goes flat.
    auto [data, llvmElement] = flatConstant(dense, type);
    StringRef symbol = symbols.constant(
        "__mpc_init_", data,
        LLVM::LLVMArrayType::get(
            llvmElement, cast<DenseElementsAttr>(data).getNumElements()));
    l.call("mpcrt_copy", {p, l.addressOf(symbol), l.i64(byteSize(type))});
  }
  l.call("mpcrt_zero", {l.offset(state, symbols.stepOffset), l.i64(8)});
  // Large splat constants, filled rather than stored expanded.
  for (auto [value, offset] : symbols.stateSplats) {
    auto dense = cast<DenseElementsAttr>(value);
    auto type = cast<RankedTensorType>(dense.getType());
    l.call("mpcrt_fill",
           {l.i32(dtypeCode(type.getElementType())), l.offset(state, offset),
            l.i64(type.getNumElements()),
            l.f64(dense.getSplatValue<APFloat>().convertToDouble())});
  }
  // Tensor constants the steps read from the state (device backends).
  for (const ModuleSymbols::StateConstant &c : symbols.stateConstants)
    l.call("mpcrt_copy",
           {l.offset(state, c.offset), l.addressOf(c.symbol), l.i64(c.bytes)});
  // Low-precision copies start as their masters, rounded.
  func::CallOp::create(b, module.getLoc(), emitRefreshCopies(module, symbols),
                       ValueRange{state});
  func::ReturnOp::create(b, module.getLoc());
}

func::FuncOp LowerToRuntimePass::emitRefreshCopies(ModuleOp module,
                                                   ModuleSymbols &symbols) {
  MLIRContext *ctx = &getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), "mpc_refresh_copies",
                                 b.getFunctionType({ptrType(ctx)}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value state = fn.getArgument(0);
  Lowering l(symbols, b, state, state);
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto master = global->getAttrOfType<FlatSymbolRefAttr>("mpc.master");
    if (!master)
      continue;
    l.currentLoc = global.getLoc();
    const GlobalSlot &from = symbols.globals[master.getValue()];
    const GlobalSlot &to = symbols.globals[global.getSymName()];
    l.call("mpcrt_cast",
           {l.i32(dtypeCode(from.type.getElementType())),
            l.offset(state, from.offset),
            l.i32(dtypeCode(to.type.getElementType())),
            l.offset(state, to.offset), l.i64(to.type.getNumElements())});
  }
  func::ReturnOp::create(b, module.getLoc());
  return fn;
}

void LowerToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (failed(verifyTrainingGraph(module)))
    return signalPassFailure();
  MLIRContext *ctx = &getContext();
  ModuleSymbols symbols(module);
  if (backend != "cpu" && backend != "cuda") {
    module.emitError("mpc-lower-to-runtime: unknown backend '")
        << backend << "' (expected cpu or cuda)";
    return signalPassFailure();
  }
  if (opsPerPart < 0) {
    module.emitError("mpc-lower-to-runtime: ops-per-part must be 0 (one "
                     "function) or positive, got ")
        << static_cast<int64_t>(opsPerPart);
    return signalPassFailure();
  }
  symbols.constantsInState = backend == "cuda";
  // The entry function: `entry`, or the only function there is.
  SmallVector<func::FuncOp> funcs;
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isDeclaration())
      funcs.push_back(fn);
  func::FuncOp entryFunc = module.lookupSymbol<func::FuncOp>(entry);
  if (!entryFunc && funcs.size() == 1)
    entryFunc = funcs.front();
  if (!entryFunc || entryFunc.isDeclaration()) {
    std::string names;
    for (auto fn : funcs)
      names += (names.empty() ? "@" : ", @") + fn.getSymName().str();
    module.emitError("no entry function @")
        << entry << " to lower (functions: " << (names.empty() ? "none" : names)
        << "); name one with entry=NAME (mpc-compile's --entry=NAME)";
    return signalPassFailure();
  }

  // Descriptor: what the runner needs to feed and read the entry function.
  llvm::json::Array inputs, outputs, globals;
  FunctionType entryType = entryFunc.getFunctionType();
  for (auto [i, type] : llvm::enumerate(entryType.getInputs())) {
    auto name = entryFunc.getArgAttrOfType<StringAttr>(i, "mpc.name");
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      entryFunc.emitOpError("argument #") << i << " must be a tensor";
      return signalPassFailure();
    }
    inputs.push_back(tensorJson(
        name ? name.getValue().str() : ("arg" + Twine(i)).str(), tensor));
  }
  for (auto [i, type] : llvm::enumerate(entryType.getResults())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor) {
      entryFunc.emitOpError("result #") << i << " must be a tensor";
      return signalPassFailure();
    }
    outputs.push_back(tensorJson(("result" + Twine(i)).str(), tensor));
  }
  int64_t stateBytes = 0;
  if (failed(layOutState(module, symbols, globals, stateBytes)))
    return signalPassFailure();
  int64_t arenaBytes = 0;
  for (auto fn : funcs)
    if (auto bytes = fn->getAttrOfType<IntegerAttr>("mpc.arena_bytes"))
      arenaBytes = std::max(arenaBytes, bytes.getInt());
  std::string entryName = entryFunc.getSymName().str();
  // The micro-step of gradient accumulation, run K-1 times before the
  // entry on the same inputs; it counts steps too (dropout draws a new mask
  // for every micro-batch).
  func::FuncOp microFunc;
  int64_t accumulateSteps = 1;
  if (auto k = entryFunc->getAttrOfType<IntegerAttr>("mpc.accumulate_steps"))
    accumulateSteps = k.getInt();
  bool dataParallel = entryFunc->hasAttr("mpc.data_parallel");
  if (func::FuncOp micro = findMicroStep(module, entryName);
      micro && !micro.isDeclaration())
    microFunc = micro;
  if (accumulateSteps > 1 &&
      (!microFunc || microFunc.getArgumentTypes() != entryType.getInputs())) {
    entryFunc.emitOpError("accumulates gradients over ")
        << accumulateSteps
        << " micro-batches but has no micro-step with its arguments (a "
           "function marked mpc.accumulates = @"
        << entryName << ")";
    return signalPassFailure();
  }
  std::string microName =
      microFunc ? microFunc.getSymName().str() : std::string();
  // The evaluation step (marked mpc.eval): run on validation batches with
  // the step's inputs; its outputs are described apart.
  func::FuncOp evalFunc;
  llvm::json::Array evalOutputs;
  for (auto fn : funcs)
    if (fn->hasAttr("mpc.eval") && fn != entryFunc) {
      if (evalFunc) {
        fn.emitOpError("is a second evaluation step (mpc.eval); the first is @")
            << evalFunc.getSymName();
        return signalPassFailure();
      }
      evalFunc = fn;
    }
  if (evalFunc) {
    if (evalFunc.getArgumentTypes() != entryType.getInputs()) {
      evalFunc.emitOpError("is an evaluation step whose arguments differ from "
                           "the entry @")
          << entryName << "'s; it must read the same inputs";
      return signalPassFailure();
    }
    for (auto [i, type] :
         llvm::enumerate(evalFunc.getFunctionType().getResults())) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      auto name = evalFunc.getResultAttrOfType<StringAttr>(i, "mpc.name");
      if (!tensor || tensor.getRank() != 0 ||
          !isa<FloatType>(tensor.getElementType())) {
        evalFunc.emitOpError("result #")
            << i << " of an evaluation step must be a scalar float, got "
            << type;
        return signalPassFailure();
      }
      evalOutputs.push_back(tensorJson(
          name ? name.getValue().str() : ("result" + Twine(i)).str(), tensor));
    }
  }
  std::string evalName = evalFunc ? evalFunc.getSymName().str() : std::string();

  // The loss scale's floor, for the runner's loss-scale health.
  std::optional<double> lossScaleMin;
  entryFunc.walk([&](UpdateLossScaleOp update) {
    if (auto floor = update.getMinScaleAttr())
      lossScaleMin = floor.getValueAsDouble();
  });

  // The plan's guards (--mpc-plan-memory guard=N), by the runner's name
  // of the function they belong to.
  llvm::json::Array guards;
  for (auto [role, fn] :
       {std::pair{"step", entryFunc}, std::pair{"accumulate", microFunc},
        std::pair{"eval", evalFunc}}) {
    auto table =
        fn ? fn->getAttrOfType<ArrayAttr>("mpc.arena_guards") : ArrayAttr();
    for (Attribute entry : table ? table.getValue() : ArrayRef<Attribute>()) {
      auto guard = dyn_cast<DictionaryAttr>(entry);
      if (!guard) {
        fn.emitOpError("has a malformed mpc.arena_guards entry: ") << entry;
        return signalPassFailure();
      }
      auto offset = guard.getAs<IntegerAttr>("offset");
      auto bytes = guard.getAs<IntegerAttr>("bytes");
      auto op = guard.getAs<StringAttr>("op");
      auto loc = guard.getAs<StringAttr>("loc");
      if (!offset || !bytes || !op || !loc) {
        fn.emitOpError("has a malformed mpc.arena_guards entry: ") << guard;
        return signalPassFailure();
      }
      guards.push_back(llvm::json::Object{{"function", role},
                                          {"offset", offset.getInt()},
                                          {"bytes", bytes.getInt()},
                                          {"op", op.getValue()},
                                          {"loc", loc.getValue()}});
    }
  }

  for (auto fn : funcs)
    if (failed(lowerFunction(fn, symbols, fn == entryFunc || fn == microFunc)))
      return signalPassFailure();

  emitInitializers(module, symbols);
  if (symbols.constantsInState)
    stateBytes = symbols.stateEnd;

  // mpc_step forwards to the entry function, mpc_accumulate to the
  // micro-step (nothing without one).
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type ptr = ptrType(ctx);
  auto forwarder = [&](StringRef name, StringRef targetName) {
    OpBuilder::InsertionGuard guard(b);
    auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType({ptr, ptr, ptr, ptr}, {}));
    b.setInsertionPointToStart(fn.addEntryBlock());
    if (!targetName.empty())
      func::CallOp::create(b, module.getLoc(),
                           module.lookupSymbol<func::FuncOp>(targetName),
                           fn.getArguments());
    func::ReturnOp::create(b, module.getLoc());
  };
  forwarder("mpc_step", entryName);
  forwarder("mpc_accumulate", microName);
  forwarder("mpc_eval", evalName);

  // The ops --mpc-check-numerics numbered, for the runner's reports.
  llvm::json::Array numericsOps;
  if (auto table = module->getAttrOfType<ArrayAttr>("mpc.numerics_ops"))
    for (Attribute entry : table) {
      auto dict = dyn_cast<DictionaryAttr>(entry);
      if (!dict)
        continue;
      llvm::json::Object o;
      for (NamedAttribute a : dict) {
        if (auto str = dyn_cast<StringAttr>(a.getValue()))
          o[a.getName().getValue()] = str.getValue().str();
        else if (auto num = dyn_cast<IntegerAttr>(a.getValue()))
          o[a.getName().getValue()] = num.getInt();
        else if (auto list = dyn_cast<ArrayAttr>(a.getValue())) {
          llvm::json::Array values;
          for (Attribute v : list)
            if (auto n = dyn_cast<IntegerAttr>(v))
              values.push_back(n.getInt());
          o[a.getName().getValue()] = std::move(values);
        }
      }
      numericsOps.push_back(std::move(o));
    }
  llvm::json::Object descriptor{{"version", 1},
                                {"entry", entryName},
                                {"accumulate_steps", accumulateSteps},
                                {"eval_outputs", std::move(evalOutputs)},
                                {"arena_bytes", arenaBytes},
                                {"state_bytes", stateBytes},
                                {"alignment", 256},
                                {"inputs", std::move(inputs)},
                                {"outputs", std::move(outputs)},
                                {"globals", std::move(globals)}};
  if (lossScaleMin)
    descriptor["loss_scale_min"] = *lossScaleMin;
  // Data parallel (--mpc-data-parallel): the global set to 1/N and those
  // averaged over the ranks at checkpoints.
  if (dataParallel) {
    llvm::json::Object dp;
    llvm::json::Array rankMean;
    for (auto global : module.getOps<ml_program::GlobalOp>()) {
      if (global->hasAttr("mpc.inverse_world_size"))
        dp["inverse_size"] = global.getSymName().str();
      if (global->hasAttr("mpc.rank_mean"))
        rankMean.push_back(global.getSymName().str());
    }
    dp["rank_mean"] = std::move(rankMean);
    descriptor["data_parallel"] = std::move(dp);
  }
  // Only when checked: without --mpc-check-numerics the descriptor is as
  // before it existed.
  if (!numericsOps.empty())
    descriptor["numerics_ops"] = std::move(numericsOps);
  if (!guards.empty())
    descriptor["arena_guards"] = std::move(guards);
  if (int64_t guard = stateGuardBytes(module))
    descriptor["state_guard"] = guard;
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(descriptor));
  b.setInsertionPointToEnd(module.getBody());
  std::string data = json + '\0';
  LLVM::GlobalOp::create(b, module.getLoc(),
                         LLVM::LLVMArrayType::get(b.getI8Type(), data.size()),
                         /*isConstant=*/true, LLVM::Linkage::External,
                         "mpc_model", b.getStringAttr(data));

  // The globals now live in the state buffer.
  for (auto global :
       llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
    global.erase();
}

} // namespace
