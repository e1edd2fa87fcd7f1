//===- MPCBase.td - mpc dialect, enums, type constraints ---*- tablegen -*-===//

#ifndef MPC_BASE
#define MPC_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

def MPC_Dialect : Dialect {
  let name = "mpc";
  let cppNamespace = "::mlir::mpc";
  let summary = "Training graphs for automatic mixed-precision compilation";
  let description = [{
    The `mpc` dialect expresses the forward pass, backward pass and optimizer
    step of a neural network over statically shaped builtin tensors. Model
    state (parameters, optimizer moments, loss-scale state, BatchNorm running
    statistics) lives in `ml_program.global` ops; graphs are `func.func`s.
    Activations are NHWC and convolution filters OHWI, the layout Tensor Core
    convolutions run in.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::ml_program::MLProgramDialect"];
  let hasConstantMaterializer = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def MPC_PrecisionCategory : I32EnumAttr<"PrecisionCategory",
    "how the mixed-precision pass treats an op", [
      I32EnumAttrCase<"Lowp", 0, "lowp">,
      I32EnumAttrCase<"Fp32", 1, "fp32">,
      I32EnumAttrCase<"Promote", 2, "promote">,
      I32EnumAttrCase<"Follow", 3, "follow">]> {
  let cppNamespace = "::mlir::mpc";
  let genSpecializedAttr = 0;
}

def MPC_Reduction : I32EnumAttr<"Reduction", "how a loss reduces over elements", [
      I32EnumAttrCase<"Mean", 0, "mean">,
      I32EnumAttrCase<"Sum", 1, "sum">]> {
  let cppNamespace = "::mlir::mpc";
  let genSpecializedAttr = 0;
}
def MPC_ReductionAttr : EnumAttr<MPC_Dialect, MPC_Reduction, "reduction">;

def MPC_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
      I32EnumAttrCase<"Zeros", 0, "zeros">,
      I32EnumAttrCase<"Ones", 1, "ones">,
      I32EnumAttrCase<"Constant", 2, "constant">,
      I32EnumAttrCase<"Uniform", 3, "uniform">,
      I32EnumAttrCase<"Normal", 4, "normal">,
      I32EnumAttrCase<"XavierUniform", 5, "xavier_uniform">,
      I32EnumAttrCase<"XavierNormal", 6, "xavier_normal">,
      I32EnumAttrCase<"KaimingUniform", 7, "kaiming_uniform">,
      I32EnumAttrCase<"KaimingNormal", 8, "kaiming_normal">]> {
  let cppNamespace = "::mlir::mpc";
  let genSpecializedAttr = 0;
}
def MPC_InitKindAttr : EnumAttr<MPC_Dialect, MPC_InitKind, "init_kind">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def MPC_InitAttr : AttrDef<MPC_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "An initializer the runtime expands into a global's value";
  let description = [{
    Used as the initial value of an `ml_program.global`; the runtime expands
    it deterministically from `seed`. Parameters, with PyTorch's meaning:

    | kind | uses |
    |---|---|
    | `zeros`, `ones` | — |
    | `constant` | `value` |
    | `uniform` | `low`, `high` (default 0, 1) |
    | `normal` | `mean`, `std` (default 0, 1) |
    | `xavier_uniform`, `xavier_normal` | `gain` (default 1) |
    | `kaiming_uniform`, `kaiming_normal` | `gain` (default sqrt(2), ReLU) |

    Fans: for a rank-2 weight `[in, out]` (the right operand of `x @ W`),
    fan_in = in and fan_out = out; for an OHWI filter `[O, kh, kw, I]`,
    fan_in = I*kh*kw and fan_out = O*kh*kw.

    ```mlir
    ml_program.global private mutable @w(#mpc.init<xavier_uniform, seed = 1>) : tensor<784x256xf32>
    ml_program.global private mutable @b(#mpc.init<normal, seed = 2, std = 0.02>) : tensor<256xf32>
    ```
  }];
  let parameters = (ins
    "::mlir::mpc::InitKind":$kind,
    DefaultValuedParameter<"uint64_t", "0">:$seed,
    OptionalParameter<"::mlir::FloatAttr">:$value,
    OptionalParameter<"::mlir::FloatAttr">:$low,
    OptionalParameter<"::mlir::FloatAttr">:$high,
    OptionalParameter<"::mlir::FloatAttr">:$mean,
    OptionalParameter<"::mlir::FloatAttr">:$std,
    OptionalParameter<"::mlir::FloatAttr">:$gain);
  let assemblyFormat = [{
    `<` $kind (`,` struct($seed, $value, $low, $high, $mean, $std, $gain)^)? `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// A statically shaped tensor with no dimension of size 0 and at most 2^48
/// bytes: an empty tensor has no meaning in a training step (a batch of 0,
/// 0 classes, 0 channels) and would divide by zero in means and layouts
/// downstream; a larger one fits no device and would overflow byte counts.
class MPC_TensorOf<list<Type> types> : Type<
    And<[StaticShapeTensorOf<types>.predicate,
         CPred<"::mlir::mpc::isNonEmptyAddressable($_self)">]>,
    StaticShapeTensorOf<types>.summary #
        " with no zero-sized dimension and at most 2^48 bytes",
    "::mlir::RankedTensorType">;

def MPC_FloatTensor : MPC_TensorOf<[F16, BF16, F32, F64]>;
def MPC_IndexTensor : MPC_TensorOf<[I32, I64]>;
def MPC_MaskTensor : MPC_TensorOf<[I1]>;
def MPC_AnyTensor : MPC_TensorOf<[F16, BF16, F32, F64, I1, I32, I64]>;

class MPC_Scalar<Type elt, string build> : 0DTensorOf<[elt]>,
    BuildableType<"::mlir::RankedTensorType::get({}, " # build # ")">;
def MPC_F32Scalar : MPC_Scalar<F32, "$_builder.getF32Type()">;
def MPC_BoolScalar : MPC_Scalar<I1, "$_builder.getI1Type()">;
def MPC_I32Scalar : MPC_Scalar<I32, "$_builder.getI32Type()">;

def MPC_Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;
// The element count of defaulted pairs is checked in C++ (a ConfinedAttr
// would lose the default's builder).
class MPC_PairOr<string dflt> : DefaultValuedAttr<DenseI64ArrayAttr,
    "::llvm::ArrayRef<int64_t>{" # dflt # "}">;

#endif // MPC_BASE
