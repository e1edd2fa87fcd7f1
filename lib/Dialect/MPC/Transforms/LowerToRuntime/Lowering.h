//===- Lowering.h - shared state of --mpc-lower-to-runtime ------*- C++ -*-===//
//
// The lowering rewrites one function at a time, in program order: every
// tensor value becomes a pointer (into the planned arena, the state buffer
// of the globals, a constant, or the caller's input), and every op becomes
// calls of the mpcrt C ABI (include/mpc/Runtime/mpcrt.h). The op families
// live in their own files and share this context.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_LOWERTORUNTIME_LOWERING_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_LOWERTORUNTIME_LOWERING_H

#include "../Unwritten.h"
#include "../Views.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include <map>
#include <tuple>

#include <optional>

namespace mlir::mpc::lowering {

/// Where each global lives in the state buffer.
struct GlobalSlot {
  int64_t offset = 0, bytes = 0;
  RankedTensorType type;
};

/// Module-wide symbols the lowering creates (runtime declarations, constant
/// arrays and strings), uniqued.
class ModuleSymbols {
public:
  explicit ModuleSymbols(ModuleOp module) : module(module) {}

  /// Declares `name` as a private external function of these types once.
  func::FuncOp declare(StringRef name, TypeRange args, TypeRange results);
  /// An internal constant global holding `data`; returns its symbol.
  StringRef constant(StringRef prefix, Attribute data, Type llvmType);
  StringRef i64Array(ArrayRef<int64_t> values);
  StringRef i32Array(ArrayRef<int32_t> values);
  StringRef string(StringRef text);

  /// With constants in the state (a device backend): the offset of the
  /// constant global `symbol` of `bytes` in the state buffer, assigned at
  /// its first use after everything else the state holds.
  int64_t stateConstant(StringRef symbol, int64_t bytes);

  ModuleOp module;
  llvm::StringMap<GlobalSlot> globals;
  int64_t stepOffset = 0;
  bool constantsInState = false;
  /// Large float splat constants, filled in the state at initialisation
  /// (StateLayout.h): their offsets, by value.
  llvm::MapVector<Attribute, int64_t> stateSplats;
  int64_t stateEnd = 0; // bytes of the state buffer so far
  struct StateConstant {
    StringRef symbol;
    int64_t offset, bytes;
  };
  SmallVector<StateConstant> stateConstants;
  /// Their offsets by symbol (a lookup per use, not a scan).
  llvm::StringMap<int64_t> stateConstantOffsets;

private:
  llvm::StringMap<func::FuncOp> declared;
  /// The constants' symbols by prefix and data.
  llvm::StringMap<llvm::DenseMap<Attribute, StringRef>> uniqued;
  unsigned counter = 0;
};

/// Splats that are not filled in the state (integer ones) are stored
/// expanded in the executable, up to this size.
inline constexpr int64_t kMaxExpandedSplatBytes = 16 << 20;

/// Constants of this many bytes or more (not splats, not booleans) go to
/// the executable as a byte array, written by code generation in one
/// piece; smaller ones as an array of their elements, which it writes
/// element by element (readable in the lowered IR; 6.6 s of the 16 s
/// compile of a model with a 512 MiB weight). The medium code model's
/// threshold for large data, too.
inline constexpr int64_t kByteArrayFrom = 64 << 10;

/// The value of the flat LLVM array holding `dense` (of `type`) and the
/// array's element type: its elements, or its bytes from kByteArrayFrom
/// on (splats: their elements); booleans a byte each, as the runtime
/// stores masks.
std::pair<Attribute, Type> flatConstant(DenseElementsAttr dense,
                                        RankedTensorType type);

/// The rewrite of one function.
class Lowering {
public:
  Lowering(ModuleSymbols &symbols, OpBuilder &builder, Value arena, Value state,
           Value inputs = Value())
      : symbols(symbols), b(builder), arena(arena), state(state),
        inputs(inputs) {}

  /// The pointer of a tensor value; bind sets it. Every pointer is an
  /// address in the arena, the state, a symbol or an input: within one
  /// part of the step it is one value, and a later part computes it again
  /// from its own arguments (see startPart).
  Value ptr(Value tensor);
  /// ptr of an optional operand, or a null pointer where it is absent.
  Value ptrOrNull(Value tensor) { return tensor ? ptr(tensor) : null(); }
  void bind(Value tensor, Value pointer);
  /// Continues the lowering in a new function of the step (its next part),
  /// whose arguments are the arena, state, inputs and outputs.
  void startPart(Value arena, Value state, Value inputs);
  /// The planned arena buffer of result `i` of `op` (from mpc.offsets), or
  /// the global the plan computes it in (mpc.in_globals), bound to the
  /// result; null with an error when the op has no plan.
  Value result(Operation *op, unsigned i);
  /// result, or a null pointer where the op's kernel leaves the result
  /// unwritten (Unwritten.h: the plan gave it no buffer).
  Value resultOrNull(Operation *op, unsigned i) {
    return isLeftUnwritten(op->getResult(i)) ? null() : result(op, i);
  }
  /// The state-buffer pointer of a global.
  Value global(StringRef name);

  // Constants.
  Value i64(int64_t v);
  Value i32(int32_t v);
  Value f64(double v);
  Value null();
  Value addressOf(StringRef symbol);
  Value i64Array(ArrayRef<int64_t> values) {
    return addressOf(symbols.i64Array(values));
  }
  Value string(StringRef text) { return addressOf(symbols.string(text)); }
  /// An array of pointers on the stack.
  Value pointerArray(ArrayRef<Value> pointers);
  /// Pointer `i` of a pointer array (the step's inputs or outputs).
  Value loadPointer(Value array, int64_t i);
  Value offset(Value base, int64_t bytes);

  /// Calls runtime function `name` with `args`; returns the i64 result when
  /// `returnsI64`.
  Value call(StringRef name, ArrayRef<Value> args, bool returnsI64 = false);
  /// Copies the bytes of tensor `from` into `to`.
  void copy(Value to, Value from, RankedTensorType type);

  Location loc() const { return currentLoc; }

  ModuleSymbols &symbols;
  OpBuilder &b;
  Value arena, state, inputs;
  Location currentLoc = UnknownLoc::get(b.getContext());
  /// Collectives started (mpc.all_reduce), by slot: the ops before which
  /// each is waited on, and the next slot.
  DenseMap<Operation *, SmallVector<int32_t>> waitsBefore;
  int32_t nextCommSlot = 0;

private:
  /// Where a pointer points: the arena or the state at `offset`, the
  /// address of `symbol`, input number `offset`, or null.
  enum class Kind { Arena, State, Symbol, Input, Null };
  struct Address {
    Kind kind = Kind::Null;
    int64_t offset = 0;
    std::string symbol;
    bool operator<(const Address &o) const {
      return std::tie(kind, offset, symbol) <
             std::tie(o.kind, o.offset, o.symbol);
    }
  };
  std::optional<Address> addressOfPointer(Value pointer) const;
  Value materialize(const Address &address);

  DenseMap<Value, Value> pointers;
  DenseMap<Value, Address> addresses;
  /// This part's value of each address used in it.
  std::map<Address, Value> partPointers;
};

// Helpers over types.
RankedTensorType tensorType(Value v);
/// The kernel suffix of a float element type ("f16", ...).
std::string suffix(Type element);
/// mpcrt_dtype of a float element type.
int32_t dtypeCode(Type element);
/// The runtime's code of a fused op's `activation` ("none", "relu",
/// "gelu_tanh").
int32_t activationCode(StringRef activation);
/// Row-major strides of a shape, in elements.
SmallVector<int64_t> strides(ArrayRef<int64_t> shape);
int64_t bytesOf(RankedTensorType type);

/// Where the plan made `v` a view (Views.h: a slice in its operand's
/// buffer, a slice or reshape of such a view; every reader takes it
/// through strides, and it is not copied): the value whose buffer it lies
/// in, and where.
std::optional<std::pair<Value, View>> viewOf(Value v);
/// Where the plan wrote `op`'s result into its concatenation's window (the
/// concatenation's buffer, Views.h headsWindowOf): the window.
std::optional<HeadsWindow> headsWrittenInConcat(HeadsMatmulOp op);
/// How a reader that takes strides reads `v`: the pointer to its first
/// element and its strides, in elements (a view's, or its own dense ones).
std::pair<Value, SmallVector<int64_t>> stridedOperand(Value v, Lowering &l);

// The op families. Each returns std::nullopt for ops it does not lower.
std::optional<LogicalResult> lowerElementwise(Operation *op, Lowering &l);
std::optional<LogicalResult> lowerLinearAlgebra(Operation *op, Lowering &l);
std::optional<LogicalResult> lowerNormalization(Operation *op, Lowering &l);
std::optional<LogicalResult> lowerNeuralNet(Operation *op, Lowering &l);
std::optional<LogicalResult> lowerDataMovement(Operation *op, Lowering &l);
std::optional<LogicalResult> lowerTraining(Operation *op, Lowering &l);

/// Whether two optimizer updates (SGD, or Adam that is not LAMB) share
/// what mpcrt_sgd_update_multi / mpcrt_adam_update_multi take once: rate,
/// step, skip flag, unscale factor, hyperparameters.
bool groupsWith(Operation *a, Operation *b);
/// One multi-tensor call for the updates of `group` (one single-tensor
/// call for a single one), their results bound.
LogicalResult lowerUpdateGroup(ArrayRef<Operation *> group, Lowering &l);
/// One mpcrt_check_numerics call for `values`, checked as ops `indices`
/// (all or some of what `check`, an mpc.check_numerics, checks).
LogicalResult lowerChecks(Operation *check, ArrayRef<Value> values,
                          ArrayRef<int64_t> indices, Lowering &l);

} // namespace mlir::mpc::lowering

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_LOWERTORUNTIME_LOWERING_H
