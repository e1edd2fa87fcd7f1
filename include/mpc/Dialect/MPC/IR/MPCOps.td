//===- MPCOps.td - mpc dialect operations ------------------*- tablegen -*-===//

#ifndef MPC_OPS
#define MPC_OPS

include "mpc/Dialect/MPC/IR/MPCBase.td"
include "mpc/Dialect/MPC/IR/MPCInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Result types inferred from an adaptor, like upstream `InferTypeOpAdaptor`,
/// except that while parsing (no properties yet) the properties are built from
/// the defaults and the attribute dictionary, so inference sees what
/// `attr-dict` parsed (e.g. `transpose_b`).
def MPC_InferTypeOpAdaptor : TraitList<[
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    NativeOpTrait<"InferTypeOpAdaptor", [], [{
      static ::llvm::LogicalResult
      inferReturnTypes(::mlir::MLIRContext *context,
                       std::optional<::mlir::Location> location,
                       Adaptor adaptor,
                       ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes);
    }], [{
      ::llvm::LogicalResult
      $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
          std::optional<::mlir::Location> location,
          ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
          ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
          ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
        $cppClass::Properties props;
        ::mlir::OperationName name($cppClass::getOperationName(), context);
        ::mlir::Location loc =
            location ? *location : ::mlir::UnknownLoc::get(context);
        if (properties)
          props = *properties.as<$cppClass::Properties *>();
        if (attributes && !attributes.empty()) {
          // Parsing: the attributes have not been checked or moved into
          // the properties yet (an op with operand segments has
          // properties holding only those), and inference must not read
          // a missing or mistyped one.
          ::mlir::NamedAttrList list(attributes);
          if (::mlir::failed($cppClass::verifyInherentAttrs(name, list, [&] {
                return ::mlir::emitError(loc)
                       << "'" << name.getStringRef() << "' op ";
              })))
            return ::mlir::failure();
          for (::mlir::NamedAttribute attr : attributes)
            $cppClass::setInherentAttr(props, attr.getName().getValue(),
                                       attr.getValue());
        }
        // Defaults of the attributes not given (only those still unset).
        $cppClass::populateDefaultProperties(name, props);
        $cppClass::Adaptor adaptor(operands, attributes, props, regions);
        // Required attributes present, each of its kind.
        if (::mlir::failed(adaptor.verify(loc)))
          return ::mlir::failure();
        return $cppClass::inferReturnTypes(context, location, adaptor,
                                           inferredReturnTypes);
      }
    }]>]>;

/// Every op carries its default precision category (DESIGN §3).
class MPC_Op<string mnemonic, string category, list<Trait> traits = []> :
    Op<MPC_Dialect, mnemonic, !listconcat([
        MPC_PrecisionCategoryOpInterface,
        ParamNativeOpTrait<"mpc::HasPrecisionCategory",
                           "::mlir::mpc::PrecisionCategory::" # category>],
      traits)>;

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def MPC_ConstantOp : MPC_Op<"constant", "Follow", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A dense tensor constant";
  let description = [{
    ```mlir
    %half = mpc.constant dense<0.5> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def MPC_CastOp : MPC_Op<"cast", "Follow", [Pure, SameOperandsAndResultShape]> {
  let summary = "Converts a tensor to another floating-point type";
  let description = [{
    Rounds to nearest even when narrowing, as the GPU stores values. The
    mixed-precision pass inserts these; users may write them too.

    The input may also be an `i32` tensor (an integer graph input: an
    attention mask given as 0s and 1s, counts): each integer is rounded to
    f32 (nearest even; exact up to 2^24), then to the result type, as
    between float types. Such a cast has no gradient.

    ```mlir
    %h = mpc.cast %x : tensor<64x784xf32> -> tensor<64x784xf16>
    %m = mpc.cast %mask : tensor<8x128xi32> -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins MPC_TensorOf<[F16, BF16, F32, F64, I32]>:$input);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class MPC_UnaryOp<string mnemonic, string category, string math,
                  list<Trait> traits = []> :
    MPC_Op<mnemonic, category,
           !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = "Elementwise " # math;
  let description = [{
    Applies `}] # math # [{` to every element.

    ```mlir
    %y = mpc.}] # mnemonic # [{ %x : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MPC_NegOp : MPC_UnaryOp<"neg", "Follow", "-x">;
def MPC_ExpOp : MPC_UnaryOp<"exp", "Fp32", "exp(x)">;
def MPC_LogOp : MPC_UnaryOp<"log", "Fp32", "log(x)">;
def MPC_SqrtOp : MPC_UnaryOp<"sqrt", "Follow", "sqrt(x)">;
def MPC_RsqrtOp : MPC_UnaryOp<"rsqrt", "Fp32", "1/sqrt(x)">;
def MPC_TanhOp : MPC_UnaryOp<"tanh", "Follow", "tanh(x)">;
def MPC_SigmoidOp : MPC_UnaryOp<"sigmoid", "Follow", "1/(1+exp(-x))">;
def MPC_ReluOp : MPC_UnaryOp<"relu", "Follow", "max(x, 0)">;
// f32 at every level: in f16 an angle of a few thousand radians (rotary
// positions, diffusion timesteps) keeps no fraction at all.
def MPC_SinOp : MPC_UnaryOp<"sin", "Fp32", "sin(x)">;
def MPC_CosOp : MPC_UnaryOp<"cos", "Fp32", "cos(x)">;
def MPC_GeluOp : MPC_UnaryOp<"gelu", "Follow",
    "x*Phi(x) (tanh approximation with `approximate`)"> {
  let arguments = (ins MPC_FloatTensor:$input, UnitAttr:$approximate);
}

class MPC_BinaryOp<string mnemonic, string category, string math,
                   list<Trait> traits = []> :
    MPC_Op<mnemonic, category,
           !listconcat([Pure, MPC_InferTypeOpAdaptor], traits)> {
  let summary = "Elementwise " # math # " with numpy broadcasting";
  let description = [{
    Computes `}] # math # [{`. Shapes broadcast as in numpy (trailing
    dimensions aligned, size-1 dimensions stretched); element types must
    match: casts are explicit.

    ```mlir
    %y = mpc.}] # mnemonic # [{ %x, %b : tensor<64x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$lhs, MPC_FloatTensor:$rhs);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def MPC_AddOp : MPC_BinaryOp<"add", "Promote", "lhs + rhs", [Commutative]>;
def MPC_SubOp : MPC_BinaryOp<"sub", "Promote", "lhs - rhs">;
def MPC_MulOp : MPC_BinaryOp<"mul", "Promote", "lhs * rhs", [Commutative]>;
def MPC_DivOp : MPC_BinaryOp<"div", "Promote", "lhs / rhs">;
def MPC_PowOp : MPC_BinaryOp<"pow", "Fp32", "lhs ^ rhs">;

def MPC_CompareOp : MPC_Op<"compare", "Follow",
    [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison with numpy broadcasting, to a mask";
  let description = [{
    `lhs <predicate> rhs` for each element, `predicate` one of `eq`, `ne`,
    `lt`, `le`, `gt`, `ge`; the result is an `i1` mask. Floats, integers
    and masks compare (both operands of one element type); a NaN compares
    unequal to everything, as in IEEE 754. Masks carry no gradient.

    ```mlir
    %keep = mpc.compare "ne", %ids, %pad : tensor<8x128xi64>, tensor<i64>
    ```
  }];
  let arguments = (ins MPC_AnyTensor:$lhs, MPC_AnyTensor:$rhs,
                       StrAttr:$predicate);
  let results = (outs MPC_MaskTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` "
      "type($lhs) `,` type($rhs)";
}

def MPC_WhereOp : MPC_Op<"where", "Promote", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Elementwise selection by a mask, with numpy broadcasting";
  let description = [{
    `condition ? lhs : rhs` for each element of the three operands'
    broadcast shape (ONNX `Where`, PyTorch's `torch.where` and
    `masked_fill`). The values share a float type; the gradient goes to
    `lhs` where the condition holds and to `rhs` elsewhere.

    ```mlir
    %s = mpc.where %keep, %scores, %minus_inf
        : tensor<8x1x1x128xi1>, tensor<8x12x128x128xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins MPC_MaskTensor:$condition, MPC_FloatTensor:$lhs,
                       MPC_FloatTensor:$rhs);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` "
      "type($condition) `,` type($lhs) `,` type($rhs)";
}

class MPC_ActivationGradOp<string mnemonic, string saved, string math> :
    MPC_Op<mnemonic, "Follow", [Pure, SameOperandsAndResultType]> {
  let summary = "Backward of " # math;
  let description = [{
    Returns `grad * d(}] # math # [{)/dx`, given the forward's }] # saved
    # [{.

    ```mlir
    %dx = mpc.}] # mnemonic # [{ %dy, %saved : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$saved);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $saved attr-dict `:` type($grad)";
}

def MPC_ReluGradOp : MPC_ActivationGradOp<"relu_grad", "input x", "relu">;
def MPC_GeluGradOp : MPC_ActivationGradOp<"gelu_grad", "input x", "gelu"> {
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$saved,
                       UnitAttr:$approximate);
}
def MPC_TanhGradOp : MPC_ActivationGradOp<"tanh_grad", "output y", "tanh">;
def MPC_SigmoidGradOp :
    MPC_ActivationGradOp<"sigmoid_grad", "output y", "sigmoid">;

//===----------------------------------------------------------------------===//
// Matmul and convolutions
//===----------------------------------------------------------------------===//

def MPC_MatmulOp : MPC_Op<"matmul", "Lowp", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Batched matrix product with transpose flags";
  let description = [{
    `a` is `[..., M, K]` (`[..., K, M]` with `transpose_a`), `b` is
    `[..., K, N]` (`[..., N, K]` with `transpose_b`); the result is
    `[..., M, N]`. Batch dimensions broadcast as in numpy, so a rank-3
    activation times a rank-2 weight is a linear layer. Accumulation is
    always f32 (Tensor Cores); the result has the operands' element type.

    ```mlir
    %y = mpc.matmul %x, %w : tensor<8x128x256xf16>, tensor<256x1024xf16>
    %s = mpc.matmul %q, %k {transpose_b} : tensor<32x128x64xf16>, tensor<32x128x64xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` type($a) `,` type($b)";
}

def MPC_HeadsMatmulOp : MPC_Op<"heads_matmul", "Lowp", [Pure]> {
  let summary = "Batched product of rank-4 operands, some stored heads-second";
  let description = [{
    `mpc.matmul` of rank-4 operands whose two batch dimensions (`[B, H]`)
    are the same on `a`, `b` and the result, where any of the three may be
    stored with its two middle dimensions swapped: with `a_bshd` the
    operand `a` is `[B, M, H, K]` (`[B, K, H, M]` with `transpose_a`) and
    the product reads it as `mpc.transpose` `[0, 2, 1, 3]` of it would give
    it; `b_bshd` likewise; with `result_bshd` the result is written as
    `[B, M, H, N]`, the transpose of the product. An attention's heads are
    so read from, and written to, the `[batch, sequence, heads, head size]`
    rows the projections use, with no transpose copied in between: each
    matrix of the batch is `rows` rows `H * columns` elements apart
    (cuBLASLt's leading dimension), the batch two-dimensional.
    Accumulation is f32 (f64 for f64), rounded once to the operands'
    element type, as `mpc.matmul`.

    `--mpc-fuse` (`head-products`, after differentiation) builds it from
    the `mpc.transpose [0, 2, 1, 3]` copies around rank-4 products; it has
    no gradient of its own.

    ```mlir
    %s = mpc.heads_matmul %q, %k {a_bshd, b_bshd, transpose_b}
        : tensor<8x512x12x64xf16>, tensor<8x512x12x64xf16>
          -> tensor<8x12x512x512xf16>
    %o = mpc.heads_matmul %p, %v {b_bshd, result_bshd}
        : tensor<8x12x512x512xf16>, tensor<8x512x12x64xf16>
          -> tensor<8x512x12x64xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$a_bshd, UnitAttr:$b_bshd,
                       UnitAttr:$result_bshd);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` type($a) `,` type($b) `->` "
      "type($result)";
  let hasVerifier = 1;
}

def MPC_FusedMatmulOp : MPC_Op<"fused_matmul", "Lowp", [Pure]> {
  let summary = "Matrix product with a bias and activation epilogue";
  let description = [{
    `activation(matmul(a, b) + bias)`, with `a`, `b` and the transpose
    flags as in `mpc.matmul` and `bias` a vector of `N` (the result's last
    dimension) added to every row. `activation` is `none`, `relu` or
    `gelu_tanh` (GELU's tanh approximation, `mpc.gelu {approximate}`).
    The product accumulates in f32 and the bias and activation are applied
    to the f32 sum before the one rounding to the result type: the
    epilogue of a cuBLASLt GEMM (`CUBLASLT_EPILOGUE_BIAS`, `RELU_BIAS`,
    `GELU_BIAS`). The result has the operands' element type, or f32 when
    the operands are f16 or bf16 (the O1 form of a product whose sum is
    taken in f32); `bias` has the result's element type.

    With a second result, `pre_activation` (of the result's type), the
    op also writes `matmul(a, b) + bias` rounded to the result type, the
    value the activation's gradient reads (cuBLASLt's `GELU_AUX_BIAS`):
    a training graph fuses a GELU whose backward needs its input, and the
    op's VJP reads `pre_activation` instead of recomputing the product.

    `--mpc-fuse` builds it from `matmul` + `add` (+ `relu` / `gelu`);
    it can also be written by hand, and differentiates as its parts.

    ```mlir
    %h = mpc.fused_matmul %x, %w, %b {activation = "relu"}
        : tensor<64x784xf16>, tensor<784x512xf16>, tensor<512xf16>
          -> tensor<64x512xf16>
    %g, %pre = mpc.fused_matmul %x, %w1, %b1 {activation = "gelu_tanh"}
        : tensor<64x784xf16>, tensor<784x512xf16>, tensor<512xf16>
          -> tensor<64x512xf16>, tensor<64x512xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       MPC_FloatTensor:$bias, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation);
  let results = (outs MPC_FloatTensor:$result,
                      Optional<MPC_FloatTensor>:$pre_activation);
  let assemblyFormat = "$a `,` $b `,` $bias attr-dict `:` type($a) `,` "
      "type($b) `,` type($bias) `->` type($result) "
      "(`,` type($pre_activation)^)?";
  let hasVerifier = 1;
}

def MPC_MatmulAddOp : MPC_Op<"matmul_add", "Lowp", [Pure]> {
  let summary = "Matrix product added to a tensor of its shape in the GEMM";
  let description = [{
    `matmul(a, b) + addend`, with `a`, `b` and the transpose flags as in
    `mpc.matmul` and `addend` of the result's type. The product
    accumulates in f32 (f64 for f64), the addend is added to the f32 sum
    and the result is rounded once: a GEMM whose C matrix is the addend
    (cuBLASLt with beta = 1). The result has the operands' element type,
    or f32 for f16/bf16 operands. The memory plan may give the result the
    addend's buffer when the addend dies there (the GEMM then accumulates
    in place).

    `--mpc-fuse` builds it from an `add` of a product and another tensor:
    in the backward pass, a residual gradient plus a linear layer's data
    gradient. It can be written by hand and differentiates as its parts.

    ```mlir
    %g = mpc.matmul_add %dq, %wq, %g0 {transpose_b}
        : tensor<8x128x256xf16>, tensor<256x256xf16>, tensor<8x128x256xf16>
          -> tensor<8x128x256xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       MPC_FloatTensor:$addend, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b `,` $addend attr-dict `:` type($a) `,` "
      "type($b) `,` type($addend) `->` type($result)";
  let hasVerifier = 1;
}

def MPC_MatmulActivationGradOp : MPC_Op<"matmul_activation_grad", "Lowp",
    [Pure]> {
  let summary = "Data-gradient GEMM with the activation's gradient epilogue";
  let description = [{
    `matmul(a, b) * activation'(saved)`, with `a`, `b` and the transpose
    flags as in `mpc.matmul`: the gradient of a linear layer's input
    `matmul(dy, W) {transpose_b}` carried back through the activation
    before it, as `mpc.relu_grad` / `mpc.gelu_grad {approximate}` take it.
    `activation` is `relu` (`saved` the ReLU's input or output, positive
    at the same places) or `gelu_tanh` (`saved` GELU's input). The product
    accumulates in f32 (f64 for f64), is multiplied by the derivative
    there, and is rounded once to the result type (cuBLASLt's `DRELU` and
    `DGELU` epilogues): the operands' element type, or f32 for f16/bf16
    operands; `saved` has the result's type and shape.

    `--mpc-fuse` builds it from a `matmul` read only by an activation's
    gradient; it has no gradient of its own.

    ```mlir
    %dh = mpc.matmul_activation_grad %dy, %w2, %pre {activation = "gelu_tanh", transpose_b}
        : tensor<64x256xf16>, tensor<512x256xf16>, tensor<64x512xf16>
          -> tensor<64x512xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       MPC_FloatTensor:$saved, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, StrAttr:$activation);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b `,` $saved attr-dict `:` type($a) `,` "
      "type($b) `,` type($saved) `->` type($result)";
  let hasVerifier = 1;
}

def MPC_MatmulBiasGradOp : MPC_Op<"matmul_bias_grad", "Lowp",
    [Pure, MPC_InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "Weight and bias gradients of a linear layer in one GEMM";
  let description = [{
    `result = matmul(a, b)` of two matrices (`a` transposed with
    `transpose_a`), and `bias_grad`, the sum of `b` over the contraction
    dimension (its rows): with `a` a linear layer's input `[R, K]` and `b`
    the gradient of its output `[R, N]`, the weight gradient `a^T b` and
    the bias gradient. The product is as `mpc.matmul`'s; the sums
    accumulate in f32 (f64 for f64) and `bias_grad` is f32 for f16/bf16
    operands (the operands' type otherwise), rounded once: the bias
    gradient an O1/O2 graph takes in f32. On CUDA the gradient is never
    widened into an f32 copy: both come from one cuBLASLt GEMM
    (`CUBLASLT_EPILOGUE_BGRADA`) where the bias gradient has the operands'
    type; f32 sums of f16/bf16 operands, which cuBLASLt does not write,
    come from the plain GEMM and a column reduction reading the gradient
    once.

    With an `addend` (of the product's shape; the operands' element type,
    or f32 for f16/bf16 operands), `result` is `matmul(a, b) + addend` as
    `mpc.matmul_add` computes it, of the addend's type: the addend is
    added to the f32 product, rounded once. This is a weight gradient
    summed into an f32 gradient accumulator (gradient accumulation's
    micro-batches) in the GEMM, with no f16 product, widening cast or add;
    the memory plan may give the result the addend's buffer, or the
    accumulator's global, where the addend dies there.

    With a `bias_addend` (of `bias_grad`'s type), `bias_grad` is the sums
    added to it: the sums rounded to their type, the addend added and the
    result rounded again, the values of a separate `add` of the sums bit
    for bit (the bias gradient summed into its accumulator, in the same
    op). On CUDA, sums of the operands' own f16/bf16 type come from
    cuBLASLt's BGRADA epilogue without a bias addend and from the column
    reduction with one, which may round them an ulp apart.

    With `bias_of_a` (and `transpose_a`), `bias_grad` sums `a` over the
    contraction dimension instead: with `a` the gradient of a layer's
    output `[R, N]` and `b` its input `[R, K]`, the weight gradient
    `a^T b` of a weight stored `[N, K]` (a layer written `x @ W^T`, as
    ONNX's `Gemm` with `transB` and PyTorch's `nn.Linear` keep it) and
    its bias gradient `[N]`.

    `--mpc-fuse` builds it from a weight-gradient `matmul` (or
    `matmul_add`) and the `reduce_sum` of the same gradient (through a
    widening `cast`), and takes the `add` of the sums to an accumulator;
    it has no gradient of its own.

    ```mlir
    %dw, %db = mpc.matmul_bias_grad %x, %dy {transpose_a}
        : tensor<1024x256xf16>, tensor<1024x1024xf16>
    %sum, %db2 = mpc.matmul_bias_grad %x, %dy, %acc bias(%bacc) {transpose_a}
        : tensor<1024x256xf16>, tensor<1024x1024xf16>, tensor<256x1024xf32>
          bias(tensor<1024xf32>)
    %dwt, %db3 = mpc.matmul_bias_grad %dy, %x {bias_of_a, transpose_a}
        : tensor<1024x1024xf16>, tensor<1024x256xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$a, MPC_FloatTensor:$b,
                       Optional<MPC_FloatTensor>:$addend,
                       Optional<MPC_FloatTensor>:$bias_addend,
                       UnitAttr:$transpose_a, UnitAttr:$bias_of_a);
  let results = (outs MPC_FloatTensor:$result, MPC_FloatTensor:$bias_grad);
  let assemblyFormat = "$a `,` $b (`,` $addend^)? (`bias` `(` $bias_addend^ "
      "`)`)? attr-dict `:` type($a) `,` type($b) (`,` type($addend)^)? "
      "(`bias` `(` type($bias_addend)^ `)`)?";
  let builders = [
    OpBuilder<(ins "Value":$a, "Value":$b, "UnitAttr":$transpose_a), [{
      build($_builder, $_state, a, b, /*addend=*/Value(),
            /*bias_addend=*/Value(), transpose_a, /*bias_of_a=*/UnitAttr());
    }]>
  ];
}

def MPC_ColumnSumsOp : MPC_Op<"column_sums", "Follow",
    [Pure, MPC_InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "Column sums of several matrices of one type in one reduction";
  let description = [{
    Each result is the sum of the operand of the same position over its
    rows: for `[R, N]` operands, `[N]` results, accumulated in f32 (f64
    for f64) and rounded once to f32 for f16/bf16 operands (the operands'
    type otherwise), the values `mpc.matmul_bias_grad`'s `bias_grad`
    takes. The operands share one type. On CUDA all of them are one
    launch (the bias gradients of sibling linear layers, such as an
    attention's query, key and value projections); each column's sum is
    the one a reduction of that operand alone gives, bit for bit.

    With `addends` (one per operand, each of its result's type), each
    result is its sums rounded to their type, the addend added and the
    result rounded again: a separate `add`'s values, as
    `mpc.matmul_bias_grad`'s `bias_addend` (bias gradients summed into
    their accumulators; the memory plan may give a result its addend's
    buffer).

    `--mpc-fuse`'s `sibling-bias-grads` builds it from the f32 bias
    gradients of `mpc.matmul_bias_grad` ops that read one layer input;
    it has no gradient of its own.

    ```mlir
    %dbq, %dbk, %dbv = mpc.column_sums %dq, %dk, %dv
        : tensor<4096x768xf16>, tensor<4096x768xf16>, tensor<4096x768xf16>
    %sq, %sk = mpc.column_sums %dq, %dk addends(%accq, %acck)
        : tensor<4096x768xf16>, tensor<4096x768xf16>
          addends(tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Variadic<MPC_FloatTensor>:$inputs,
                       Variadic<MPC_FloatTensor>:$addends);
  let results = (outs Variadic<MPC_FloatTensor>:$sums);
  let assemblyFormat = "$inputs (`addends` `(` $addends^ `)`)? attr-dict `:` "
      "type($inputs) (`addends` `(` type($addends)^ `)`)?";
}

def MPC_AttentionOp : MPC_Op<"attention", "Lowp",
    [Pure, MPC_InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "Fused scaled dot-product attention with dropout";
  let description = [{
    `dropout(softmax(scale * query @ key^T)) @ value` over the last two
    dimensions, computed without writing the `[..., Sq, Sk]` scores:
    `query` is `[..., Sq, D]`, `key` `[..., Sk, D]`, `value` `[..., Sk,
    Dv]` (the same leading dimensions and element type); the result is
    `[..., Sq, Dv]`. The scores and the softmax are computed in f32 (f64
    for f64) and the result rounded once; `logsumexp` (`[..., Sq]`, f32 or
    f64) is each row's `max + log(sum(exp(score - max)))`, which
    `mpc.attention_backward` uses to recompute the probabilities.

    With `dropout_p > 0` each probability is kept with probability
    `1 - dropout_p` and scaled by `1/(1 - dropout_p)`; the keep bits are
    those `mpc.dropout {p = dropout_p, seed = seed}` draws for a
    `[..., Sq, Sk]` tensor at the same step (element `i` of the row-major
    probabilities), so the fused op drops exactly what the unfused graph
    drops.

    An optional `mask` (`i1`, of the scores' rank, each dimension 1 or the
    scores') fills: where it holds, the scaled score is replaced by
    `mask_value` before the softmax (PyTorch's `masked_fill`; a padding
    mask is `[B, 1, 1, Sk]`). Filled scores get no gradient.

    An optional `bias` (f32, of the scores' rank, each dimension 1 or the
    scores') is added to the scaled scores (before a mask's fill): Hugging
    Face's padding bias `(1 - mask) * -10000` `[B, 1, 1, Sk]`, relative
    position biases, ALiBi. It gets no gradient: a bias computed from
    model state (a learned relative position bias) is refused by autodiff.

    With `layout = "bshd"` the heads are the next-to-last dimension of
    the operands and the result instead: `query` is `[..., Sq, H, D]`,
    `key` `[..., Sk, H, D]`, `value` `[..., Sk, H, Dv]` and the result
    `[..., Sq, H, Dv]` (the layout the projections write, FlashAttention's
    and cuDNN's), with no head transposes around the op. The scores, the
    mask, the bias, the dropout bits and `logsumexp` are those of the
    default `"bhsd"` op on the operands transposed to `[..., H, S, D]`:
    `[..., H, Sq, Sk]` and `[..., H, Sq]`.

    ```mlir
    %o, %lse = mpc.attention %q, %k, %v {scale = 0.125 : f64, dropout_p = 0.1 : f64, seed = 7 : i64}
        : tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>
    %o, %lse = mpc.attention %q, %k, %v mask(%pad : tensor<8x1x1x128xi1>) {scale = 0.125 : f64, mask_value = -1.0e4 : f64}
        : tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>
    %o, %lse = mpc.attention %q, %k, %v {scale = 0.125 : f64, layout = "bshd"}
        : tensor<8x128x12x64xf16>, tensor<8x128x12x64xf16>, tensor<8x128x12x64xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$query, MPC_FloatTensor:$key,
                       MPC_FloatTensor:$value, Optional<MPC_MaskTensor>:$mask,
                       Optional<MPC_TensorOf<[F32]>>:$bias,
                       F64Attr:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       OptionalAttr<F64Attr>:$mask_value,
                       DefaultValuedStrAttr<StrAttr, "bhsd">:$layout);
  let results = (outs MPC_FloatTensor:$result, MPC_FloatTensor:$logsumexp);
  let assemblyFormat = "$query `,` $key `,` $value "
      "(`mask` `(` $mask^ `:` type($mask) `)`)? "
      "(`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` "
      "type($query) `,` type($key) `,` type($value)";
}

def MPC_AttentionBackwardOp : MPC_Op<"attention_backward", "Lowp",
    [Pure, MPC_InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "Backward of mpc.attention";
  let description = [{
    The gradients of `query`, `key` and `value` from the gradient of the
    forward's result, given the forward's operands, result and
    `logsumexp` and the same attributes. The probabilities and the
    dropout mask are recomputed, never read from memory.

    ```mlir
    %dq, %dk, %dv = mpc.attention_backward %do, %q, %k, %v, %o, %lse {scale = 0.125 : f64}
        : tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>,
          tensor<8x12x128x64xf16>, tensor<8x12x128x64xf16>, tensor<8x12x128xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$query,
                       MPC_FloatTensor:$key, MPC_FloatTensor:$value,
                       MPC_FloatTensor:$result, MPC_FloatTensor:$logsumexp,
                       Optional<MPC_MaskTensor>:$mask,
                       Optional<MPC_TensorOf<[F32]>>:$bias, F64Attr:$scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       OptionalAttr<F64Attr>:$mask_value,
                       DefaultValuedStrAttr<StrAttr, "bhsd">:$layout);
  let results = (outs MPC_FloatTensor:$grad_query, MPC_FloatTensor:$grad_key,
                      MPC_FloatTensor:$grad_value);
  let assemblyFormat = "$grad `,` $query `,` $key `,` $value `,` $result `,` "
      "$logsumexp (`mask` `(` $mask^ `:` type($mask) `)`)? "
      "(`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` "
      "type($grad) `,` type($query) `,` type($key) `,` type($value) `,` "
      "type($result) `,` type($logsumexp)";
}

def MPC_Conv2DOp : MPC_Op<"conv2d", "Lowp", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "2-D convolution, NHWC input, OHWI filter";
  let description = [{
    `input` is `[N, H, W, C]`, `filter` `[O, kh, kw, C/groups]`, the result
    `[N, Ho, Wo, O]` with `Ho = (H + 2*pad - dilation*(kh-1) - 1)/stride + 1`.
    `stride`, `padding` (symmetric) and `dilation` are `[h, w]` pairs.

    With an `addend` (of the result's type), the result is that tensor plus
    the convolution, summed before the one rounding to the result's type.
    `--mpc-fuse` (its `concat-convs`) writes a convolution of a channel
    concatenation as the convolutions of its parts, each after the first
    adding to the one before.

    ```mlir
    %y = mpc.conv2d %x, %w {padding = array<i64: 1, 1>}
        : tensor<8x64x64x3xf32>, tensor<32x3x3x3xf32>
    %y2 = mpc.conv2d %x, %w addend(%y : tensor<8x64x64x32xf32>)
        {padding = array<i64: 1, 1>}
        : tensor<8x64x64x3xf32>, tensor<32x3x3x3xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$filter,
                       MPC_PairOr<"1, 1">:$stride, MPC_PairOr<"0, 0">:$padding,
                       MPC_PairOr<"1, 1">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       Optional<MPC_FloatTensor>:$addend);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $filter (`addend` `(` $addend^ `:` type($addend) `)`)? "
      "attr-dict `:` type($input) `,` type($filter)";
  let hasVerifier = 1;
}

def MPC_Conv2DBackwardDataOp : MPC_Op<"conv2d_backward_data", "Lowp", [Pure]> {
  let summary = "Gradient of conv2d with respect to its input";
  let description = [{
    Given the output gradient `[N, Ho, Wo, O]` and the filter, returns the
    input gradient, whose type is spelled out (several input sizes give the
    same output size). Attributes as on `mpc.conv2d`.

    ```mlir
    %dx = mpc.conv2d_backward_data %dy, %w {padding = array<i64: 1, 1>}
        : tensor<8x64x64x32xf32>, tensor<32x3x3x3xf32> -> tensor<8x64x64x3xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$filter,
                       MPC_PairOr<"1, 1">:$stride, MPC_PairOr<"0, 0">:$padding,
                       MPC_PairOr<"1, 1">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $filter attr-dict `:` type($grad) `,` "
                       "type($filter) `->` type($result)";
  let hasVerifier = 1;
}

def MPC_Conv2DBackwardFilterOp :
    MPC_Op<"conv2d_backward_filter", "Lowp", [Pure]> {
  let summary = "Gradient of conv2d with respect to its filter";
  let description = [{
    Given the output gradient and the forward input, returns the filter
    gradient `[O, kh, kw, C/groups]`; its type is spelled out (it carries the
    kernel size). Attributes as on `mpc.conv2d`.

    ```mlir
    %dw = mpc.conv2d_backward_filter %dy, %x {padding = array<i64: 1, 1>}
        : tensor<8x64x64x32xf32>, tensor<8x64x64x3xf32> -> tensor<32x3x3x3xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       MPC_PairOr<"1, 1">:$stride, MPC_PairOr<"0, 0">:$padding,
                       MPC_PairOr<"1, 1">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($grad) `,` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
}

def MPC_ConvTranspose2DOp :
    MPC_Op<"conv_transpose2d", "Lowp", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "2-D transposed convolution, NHWC input, IHWO filter";
  let description = [{
    The adjoint of `mpc.conv2d`: `input` `[N, H, W, Cin]`, `filter`
    `[Cin, kh, kw, Cout]`, result `[N, Ho, Wo, Cout]` with
    `Ho = (H-1)*stride - 2*pad + dilation*(kh-1) + output_padding + 1`.
    Its gradients are `mpc.conv2d` (data) and `mpc.conv2d_backward_filter`
    with input and gradient swapped (filter).

    ```mlir
    %y = mpc.conv_transpose2d %x, %w {stride = array<i64: 2, 2>}
        : tensor<8x16x16x64xf32>, tensor<64x2x2x32xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$filter,
                       MPC_PairOr<"1, 1">:$stride, MPC_PairOr<"0, 0">:$padding,
                       MPC_PairOr<"1, 1">:$dilation,
                       MPC_PairOr<"0, 0">:$output_padding);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $filter attr-dict `:` type($input) `,` type($filter)";
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

class MPC_ReduceOp<string mnemonic, string category, string what> :
    MPC_Op<mnemonic, category, [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = what # " over the listed dimensions";
  let description = [{
    `dims` lists distinct dimensions in increasing order; they are removed
    from the result unless `keep_dims` is set (then they have size 1).

    ```mlir
    %s = mpc.}] # mnemonic # [{ %x {dims = array<i64: 0>} : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MPC_ReduceSumOp : MPC_ReduceOp<"reduce_sum", "Fp32", "Sum">;
def MPC_ReduceMeanOp : MPC_ReduceOp<"reduce_mean", "Fp32", "Mean">;
def MPC_ReduceMaxOp : MPC_ReduceOp<"reduce_max", "Follow", "Maximum">;

def MPC_ReduceMaxBackwardOp : MPC_Op<"reduce_max_backward", "Follow",
    [Pure, AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["grad", "output"]>]> {
  let summary = "Backward of mpc.reduce_max";
  let description = [{
    Given the gradient of the maximum, the forward input and the forward
    result (with the same `dims` and `keep_dims`), returns the input
    gradient: each maximum's gradient shared evenly by the elements equal
    to it, as `torch.amax`.

    ```mlir
    %dx = mpc.reduce_max_backward %dm, %x, %m {dims = array<i64: 1>}
        : tensor<4xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       MPC_FloatTensor:$output, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input `,` $output attr-dict `:` "
                       "type($grad) `,` type($input)";
  let hasVerifier = 1;
}

class MPC_SoftmaxBase<string mnemonic, string what> :
    MPC_Op<mnemonic, "Fp32", [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = what # " along `axis`";
  let description = [{
    `axis` may be negative (counted from the end); it defaults to the last
    dimension.

    The result may differ in element type from the input where both are
    f16, bf16 or f32 (`: tensor<...xbf16> -> tensor<...xf32>`): the input
    is widened exactly, the op computed in f32 and its result rounded once,
    so that it equals the f32 op with an `mpc.cast` before or after it.
    `--mpc-fuse` folds such casts (its `casts` option).

    `scale` (default 1) multiplies the input first, in the accumulation
    type: `softmax(scale * x)`, an attention's `1/sqrt(d)` without a
    separate `mpc.mul` (`--mpc-fuse`'s `scales` option folds it).

    ```mlir
    %p = mpc.}] # mnemonic # [{ %x {axis = -1 : i64} : tensor<8x4x128x128xf32>
    %q = mpc.}] # mnemonic # [{ %s {scale = 0.125 : f64} : tensor<8x4x128x128xbf16> -> tensor<8x4x128x128xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` custom<ResultType>(type($input), type($result))";
  let builders = [
    OpBuilder<(ins "Value":$input, "IntegerAttr":$axis), [{
      build($_builder, $_state, input.getType(), input, axis,
            $_builder.getF64FloatAttr(1.0));
    }]>
  ];
  let hasVerifier = 1;
}

def MPC_SoftmaxOp : MPC_SoftmaxBase<"softmax", "Softmax">;
def MPC_LogSoftmaxOp : MPC_SoftmaxBase<"log_softmax", "Log-softmax">;

class MPC_SoftmaxBackwardBase<string mnemonic, string what> :
    MPC_Op<mnemonic, "Fp32",
           [Pure, AllShapesMatch<["grad", "output", "result"]>]> {
  let summary = "Backward of " # what # ", from its output";
  let description = [{
    Given the output gradient and the forward's output `y`, returns the input
    gradient.

    The three may differ in element type where each is f16, bf16 or f32
    (`: dy type, y type -> dx type`; a type left out is the gradient's):
    computed in f32 from the inputs widened exactly, the result rounded
    once.

    `scale` (default 1) is the forward's (`softmax(scale * x)`): the
    gradient is multiplied by it before it is rounded.

    ```mlir
    %dx = mpc.}] # mnemonic # [{ %dy, %y {axis = -1 : i64} : tensor<8x128xf32>
    %dx2 = mpc.}] # mnemonic # [{ %dy16, %y {scale = 0.125 : f64} : tensor<8x128xbf16>, tensor<8x128xf32> -> tensor<8x128xbf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$output,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $output attr-dict `:` "
      "custom<OutputAndResultTypes>(type($grad), type($output), type($result))";
  let builders = [
    OpBuilder<(ins "Value":$grad, "Value":$output, "IntegerAttr":$axis), [{
      build($_builder, $_state, grad.getType(), grad, output, axis,
            $_builder.getF64FloatAttr(1.0));
    }]>
  ];
  let hasVerifier = 1;
}

def MPC_SoftmaxBackwardOp :
    MPC_SoftmaxBackwardBase<"softmax_backward", "mpc.softmax">;
def MPC_LogSoftmaxBackwardOp :
    MPC_SoftmaxBackwardBase<"log_softmax_backward", "mpc.log_softmax">;

def MPC_LayerNormOp : MPC_Op<"layer_norm", "Fp32", [Pure, MPC_InferTypeOpAdaptor,
    AllTypesMatch<["gamma", "beta"]>]> {
  let summary = "Layer normalisation over the dimensions from `axis` on";
  let description = [{
    Normalises over `x.shape[axis:]` (`axis` defaults to the last dimension)
    and applies the affine `gamma`, `beta` of that shape. Also returns the
    mean and reciprocal standard deviation of shape `x.shape[:axis]` for
    the backward pass. Statistics are f32 (f64 for f64 input, the
    accumulation type); `gamma`/`beta` may be f32 while `x` is low
    precision.

    ```mlir
    %y, %mean, %rstd = mpc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64}
        : tensor<8x128x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$gamma,
                       MPC_FloatTensor:$beta,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs MPC_FloatTensor:$result, MPC_FloatTensor:$mean,
                      MPC_FloatTensor:$rstd);
  let assemblyFormat = "$input `,` $gamma `,` $beta attr-dict `:` "
                       "type($input) `,` type($gamma)";
}

def MPC_LayerNormBackwardOp : MPC_Op<"layer_norm_backward", "Fp32",
    [Pure, MPC_InferTypeOpAdaptor, AllTypesMatch<["grad", "input"]>,
     AllTypesMatch<["mean", "rstd"]>, AttrSizedOperandSegments]> {
  let summary = "Backward of mpc.layer_norm";
  let description = [{
    Returns the gradients of the input, `gamma` and `beta`, from the output
    gradient, the forward input, its saved mean and rstd, and `gamma`.

    With a `gamma_addend` (of gamma's type), `grad_gamma` is the gradient
    added to it: the gradient rounded to gamma's type, the addend added
    and the sum rounded again, the values a separate `mpc.add` gives; the
    same for `beta_addend` and `grad_beta`. `--mpc-fuse` gives a gradient
    accumulator as the addend (the accumulation of a micro-batch's
    gradients), and the memory plan may compute the sum in the
    accumulator's global.

    ```mlir
    %dx, %dg, %db = mpc.layer_norm_backward %dy, %x, %mean, %rstd, %g
        : tensor<8x128x256xf32>, tensor<8x128xf32>, tensor<256xf32>
    %dx2, %sg, %sb = mpc.layer_norm_backward %dy, %x, %mean, %rstd, %g
        gamma_addend(%ga : tensor<256xf32>) beta_addend(%ba : tensor<256xf32>)
        : tensor<8x128x256xf32>, tensor<8x128xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       MPC_FloatTensor:$mean, MPC_FloatTensor:$rstd,
                       MPC_FloatTensor:$gamma,
                       Optional<MPC_FloatTensor>:$gamma_addend,
                       Optional<MPC_FloatTensor>:$beta_addend,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs MPC_FloatTensor:$grad_input, MPC_FloatTensor:$grad_gamma,
                      MPC_FloatTensor:$grad_beta);
  let assemblyFormat = "$grad `,` $input `,` $mean `,` $rstd `,` $gamma "
      "(`gamma_addend` `(` $gamma_addend^ `:` type($gamma_addend) `)`)? "
      "(`beta_addend` `(` $beta_addend^ `:` type($beta_addend) `)`)? "
      "attr-dict `:` type($grad) `,` type($mean) `,` type($gamma)";
}

def MPC_AddLayerNormOp : MPC_Op<"add_layer_norm", "Promote",
    [Pure, MPC_InferTypeOpAdaptor, AllTypesMatch<["gamma", "beta"]>]> {
  let summary = "Dropout, residual add and layer normalisation in one pass";
  let description = [{
    `sum = dropout(input) + residual` and `result = layer_norm(sum)` over
    the last dimension, with the affine `gamma`, `beta` of that size: a
    transformer block's residual connection and the normalisation after
    it, reading each input once. `sum` and `result` have the type of
    `input`; `mean` and `rstd` (the shape without the last dimension) are
    f32 (f64 for f64), as `mpc.layer_norm`'s. `residual` has the input's
    element type and either its shape or the shape of its last dimensions
    (at least the last one), broadcast over the leading ones as `mpc.add`
    broadcasts it: BERT's position embeddings `[S, E]` added to the token
    embeddings `[B, S, E]`. Its type is then written after the input's.

    The dropout (none with `dropout_p = 0`) keeps exactly the elements
    `mpc.dropout {p = dropout_p, seed = seed}` of `input` keeps at the
    same step, scaled by `1/(1 - dropout_p)` and rounded to the type; the
    sum is rounded to the type, and normalised as `mpc.layer_norm` does
    (f32 statistics and arithmetic, one rounding of the result). So the op
    computes bit for bit what `mpc.dropout`, `mpc.add` and
    `mpc.layer_norm` (with casts to f32 around it) compute. The keep bits
    are not returned: `mpc.add_layer_norm_backward` draws them again.

    Its precision category is `promote` (O2 runs it in low precision; the
    statistics and arithmetic are f32 at every level); `gamma` and `beta`
    keep their type. `--mpc-fuse` builds it from `mpc.dropout` (optional),
    `mpc.add` and `mpc.layer_norm` in forward graphs.

    ```mlir
    %y, %s, %mean, %rstd = mpc.add_layer_norm %h, %x, %g, %b {epsilon = 1.0e-12 : f64, dropout_p = 0.1 : f64, seed = 104 : i64}
        : tensor<8x128x256xf16>, tensor<256xf32>
    %e, %t, %m, %r = mpc.add_layer_norm %tokens, %positions, %g, %b {epsilon = 1.0e-12 : f64}
        : tensor<8x128x256xf16>, tensor<128x256xf16>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$residual,
                       MPC_FloatTensor:$gamma, MPC_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs MPC_FloatTensor:$result, MPC_FloatTensor:$sum,
                      MPC_FloatTensor:$mean, MPC_FloatTensor:$rstd);
  let assemblyFormat = "$input `,` $residual `,` $gamma `,` $beta attr-dict "
      "`:` custom<InputResidualGammaTypes>(type($input), type($residual), "
      "type($gamma))";
}

def MPC_AddLayerNormBackwardOp : MPC_Op<"add_layer_norm_backward", "Promote",
    [Pure, MPC_InferTypeOpAdaptor, AllTypesMatch<["grad", "sum"]>,
     AllTypesMatch<["mean", "rstd"]>, AttrSizedOperandSegments]> {
  let summary = "Backward of mpc.add_layer_norm";
  let description = [{
    From the gradient of the normalised result (and, if the sum has other
    readers, the gradient of the sum, `sum_grad`), the forward's sum,
    statistics and `gamma`: the gradient of the sum `ds =
    layer_norm_backward(grad) + sum_grad`, computed in f32 and rounded
    once, is the residual's gradient; the input's is `ds` through the
    forward's dropout (the same keep bits, drawn again from `seed` and the
    step, scaled by `1/(1 - dropout_p)`); the gradients of `gamma` and
    `beta` are `mpc.layer_norm_backward`'s, in gamma's type, added to
    `gamma_addend` and `beta_addend` where given as that op adds them.

    With `input_sums`, a fifth result `grad_input_sums` holds the input
    gradient's sums over every dimension but the last: each the sum, in
    the accumulation type (f32, f64 for f64), of the rounded `grad_input`
    values, in that type: the values of `mpc.reduce_sum` of the widened
    gradient, or of `mpc.matmul_bias_grad`'s bias gradient of it. That is
    the bias gradient of the linear layer whose output the input is;
    `--mpc-fuse` (`norm-bias-grads`) moves it here from the layer's
    weight-gradient GEMM, so that the column reduction reading the
    gradient for `gamma` and `beta` reads it too, and no reduction of its
    own reads it again.

    With `dropout_p` 0 the input's and the residual's gradients are the
    same values, bit for bit: canonicalization has the residual
    gradient's readers read `grad_input` (so `input_sums` can sum it for
    either operand's bias), and `--mpc-plan-memory` gives a result nobody
    reads no buffer: the kernel does not write it.

    ```mlir
    %dx, %dr, %dg, %db = mpc.add_layer_norm_backward %dy, %s, %mean, %rstd, %g {dropout_p = 0.1 : f64, seed = 104 : i64}
        : tensor<8x128x256xf16>, tensor<8x128xf32>, tensor<256xf32>
    %dx2, %dr2, %dg2, %db2, %dbias = mpc.add_layer_norm_backward %dy, %s, %mean, %rstd, %g {input_sums}
        : tensor<8x128x256xf16>, tensor<8x128xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$sum,
                       MPC_FloatTensor:$mean, MPC_FloatTensor:$rstd,
                       MPC_FloatTensor:$gamma,
                       Optional<MPC_FloatTensor>:$sum_grad,
                       Optional<MPC_FloatTensor>:$gamma_addend,
                       Optional<MPC_FloatTensor>:$beta_addend,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       UnitAttr:$input_sums);
  let results = (outs MPC_FloatTensor:$grad_input,
                      MPC_FloatTensor:$grad_residual,
                      MPC_FloatTensor:$grad_gamma, MPC_FloatTensor:$grad_beta,
                      Optional<MPC_FloatTensor>:$grad_input_sums);
  let assemblyFormat = "$grad `,` $sum `,` $mean `,` $rstd `,` $gamma "
      "(`sum_grad` `(` $sum_grad^ `:` type($sum_grad) `)`)? "
      "(`gamma_addend` `(` $gamma_addend^ `:` type($gamma_addend) `)`)? "
      "(`beta_addend` `(` $beta_addend^ `:` type($beta_addend) `)`)? "
      "attr-dict `:` type($grad) `,` type($mean) `,` type($gamma)";
  let hasCanonicalizeMethod = 1;
}

def MPC_BatchNormOp : MPC_Op<"batch_norm", "Fp32", [Pure, MPC_InferTypeOpAdaptor,
    AllTypesMatch<["gamma", "beta", "running_mean", "running_var"]>]> {
  let summary = "Batch normalisation in training mode (channels last)";
  let description = [{
    Normalises `x` (`[N, C]` or `[N, H, W, C]`) with the batch statistics of
    each channel, applies `gamma`, `beta`, and returns the updated running
    statistics (`new = (1-momentum)*old + momentum*batch`, the unbiased
    variance, as PyTorch) and the saved mean and inverse standard deviation
    for the backward pass. Per-channel tensors are `[C]`: the parameters
    and running statistics of one float type (f32 under AMP's
    `keep-batchnorm-fp32`), the saved mean and inverse standard deviation
    always f32, whatever the parameters' type, as the kernels compute and
    write them.

    `activation` is `none` or `relu`: with `relu` the result is
    `relu(batch_norm(x))`, the normalised value rounded to the result type
    first (what `mpc.relu` of the unfused result computes, bit for bit);
    `--mpc-fuse` builds it from a batch norm whose result only a ReLU (and
    that ReLU's gradients) read.

    With `sync` (PyTorch's `SyncBatchNorm`) the statistics are those of
    every rank of a data-parallel job together: each channel's sum and row
    count, then its squared deviations from that mean, summed over the
    ranks in rank order (every rank computes the same bits), so the
    running statistics are the same on every rank. `--mpc-data-parallel`
    sets it with `sync-batch-norm=true`, on the forward and backward ops;
    in a job of one rank the op computes what it computes without `sync`,
    bit for bit.

    ```mlir
    %y, %rm, %rv, %mean, %invstd = mpc.batch_norm %x, %g, %b, %m, %v
        {momentum = 0.1 : f64, epsilon = 1.0e-5 : f64}
        : tensor<8x32x32x64xf32>, tensor<64xf32>
    %y, %rm, %rv, %mean, %invstd = mpc.batch_norm %x, %g, %b, %m, %v {sync}
        : tensor<8x32x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$gamma,
                       MPC_FloatTensor:$beta, MPC_FloatTensor:$running_mean,
                       MPC_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation,
                       UnitAttr:$sync);
  let results = (outs MPC_FloatTensor:$result,
                      MPC_FloatTensor:$new_running_mean,
                      MPC_FloatTensor:$new_running_var,
                      MPC_FloatTensor:$saved_mean,
                      MPC_FloatTensor:$saved_invstd);
  let assemblyFormat = "$input `,` $gamma `,` $beta `,` $running_mean `,` "
      "$running_var attr-dict `:` type($input) `,` type($gamma)";
}

def MPC_BatchNormInferenceOp : MPC_Op<"batch_norm_inference", "Fp32", [Pure,
    MPC_InferTypeOpAdaptor,
    AllTypesMatch<["gamma", "beta", "running_mean", "running_var"]>]> {
  let summary = "Batch normalisation on running statistics (channels last)";
  let description = [{
    Normalises `x` (`[N, C]` or `[N, H, W, C]`) with the running
    statistics of each channel, as a batch norm in inference mode
    (PyTorch's `model.eval()`): `(x - running_mean) * rsqrt(running_var +
    epsilon) * gamma + beta`, computed in f32 (f64 for f64 data) and
    rounded once to the result type, then `activation` (`none` or `relu`).
    Per-channel tensors are f32 `[C]`. The evaluation step
    (`--mpc-eval-step`) turns each `mpc.batch_norm` of the loss function
    into it; nothing is updated and nothing is saved for a backward pass
    (it has no vector-Jacobian product).

    ```mlir
    %y = mpc.batch_norm_inference %x, %g, %b, %m, %v
        {epsilon = 1.0e-5 : f64, activation = "relu"}
        : tensor<8x32x32x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_FloatTensor:$gamma,
                       MPC_FloatTensor:$beta, MPC_FloatTensor:$running_mean,
                       MPC_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input `,` $gamma `,` $beta `,` $running_mean `,` "
      "$running_var attr-dict `:` type($input) `,` type($gamma)";
}

def MPC_BatchNormBackwardOp : MPC_Op<"batch_norm_backward", "Fp32", [Pure,
    MPC_InferTypeOpAdaptor, AttrSizedOperandSegments,
    AllTypesMatch<["grad", "input"]>,
    TypesMatchWith<"the saved mean is f32 of gamma's shape", "gamma",
                   "saved_mean", "::mlir::mpc::batchNormSavedType($_self)">,
    TypesMatchWith<"the saved invstd is f32 of gamma's shape", "gamma",
                   "saved_invstd", "::mlir::mpc::batchNormSavedType($_self)">]> {
  let summary = "Backward of mpc.batch_norm";
  let description = [{
    `saved_mean` and `saved_invstd` are the forward's f32 `[C]` saved
    statistics, whatever the type of `gamma`.

    With `activation = "relu"`, `grad` is the gradient of the fused
    op's result and `result` that result: the gradient reaching the batch
    norm is `relu_grad(grad, result)` (rounded to the gradient's type, as
    `mpc.relu_grad` computes it), formed on the fly.

    Instead of the result, such a backward may take the forward's `beta`
    (`beta(...)`, of gamma's type): it then forms the result's sign again
    from `input`, the saved statistics, `gamma` and `beta`, as the forward
    computed the result (the same operations in the same order, rounded to
    the input's type), and reads no result. The mask is the forward's bit
    for bit where the saved statistics are the ones the forward applied:
    for f16, bf16 and f32 inputs (an f64 forward applies f64 statistics,
    saved as f32), which the verifier requires. `--mpc-fuse` builds this
    form (its `relu-mask-from-input` option): the backward then reads two
    tensors, not three, in each of its two passes.

    The gradients of gamma and beta are in gamma's type; with
    `gamma_addend(...)` or `beta_addend(...)` (of gamma's type: gradient
    accumulators) each is rounded to that type, the addend's element added
    and the sum rounded again, as a separate `mpc.add` computes it.
    `--mpc-fuse`'s `weight-grad-sums` folds such adds.

    With `sync`, the backward of a `sync` forward: the input's gradient
    takes the means of the gradient and of its product with the
    normalised input over every rank's rows (summed in rank order), while
    gamma's and beta's gradients stay the rank's own sums, which the
    data-parallel reduction sums with the other gradients. The verifier
    requires `sync` on both or neither where the saved statistics come
    from an `mpc.batch_norm`.

    ```mlir
    %dx, %dg, %db = mpc.batch_norm_backward %dy, %x, %g, %mean, %invstd
        : tensor<8x32x32x64xf32>, tensor<64xf32>
    %dx, %dg, %db = mpc.batch_norm_backward %dz, %x, %g, %mean, %invstd
        result(%z : tensor<8x32x32x64xf32>) {activation = "relu"}
        : tensor<8x32x32x64xf32>, tensor<64xf32>
    %dx, %dg, %db = mpc.batch_norm_backward %dz, %x, %g, %mean, %invstd
        beta(%b : tensor<64xf32>) {activation = "relu"}
        : tensor<8x32x32x64xf16>, tensor<64xf32>
    %dx, %dg, %db = mpc.batch_norm_backward %dy, %x, %g, %mean, %invstd
        gamma_addend(%ga : tensor<64xf32>) beta_addend(%ba : tensor<64xf32>)
        : tensor<8x32x32x64xf16>, tensor<64xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       MPC_FloatTensor:$gamma, MPC_FloatTensor:$saved_mean,
                       MPC_FloatTensor:$saved_invstd,
                       Optional<MPC_FloatTensor>:$result,
                       Optional<MPC_FloatTensor>:$beta,
                       Optional<MPC_FloatTensor>:$gamma_addend,
                       Optional<MPC_FloatTensor>:$beta_addend,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation,
                       UnitAttr:$sync);
  let results = (outs MPC_FloatTensor:$grad_input, MPC_FloatTensor:$grad_gamma,
                      MPC_FloatTensor:$grad_beta);
  let assemblyFormat = "$grad `,` $input `,` $gamma `,` $saved_mean `,` "
      "$saved_invstd (`result` `(` $result^ `:` type($result) `)`)? "
      "(`beta` `(` $beta^ `:` type($beta) `)`)? "
      "(`gamma_addend` `(` $gamma_addend^ `:` type($gamma_addend) `)`)? "
      "(`beta_addend` `(` $beta_addend^ `:` type($beta_addend) `)`)? "
      "attr-dict `:` type($grad) `,` type($gamma)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def MPC_ReshapeOp : MPC_Op<"reshape", "Follow", [Pure]> {
  let summary = "Reinterprets a tensor with another shape";
  let description = [{
    The same elements in the same order: a view of its operand's buffer in
    the memory plan. A reshape to the shape of its operand, or of the value
    a short chain of reshapes started from, folds away; where a transpose
    made its operand and a transpose uses it, it may move above the first
    (see `mpc.transpose`).

    ```mlir
    %y = mpc.reshape %x : tensor<8x128x256xf32> -> tensor<1024x256xf32>
    ```
  }];
  let arguments = (ins MPC_AnyTensor:$input);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def MPC_TransposeOp : MPC_Op<"transpose", "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`. The identity
    permutation folds away, and a transpose of a transpose folds into one
    (into none when they cancel). The canonicalizer makes a transpose that
    keeps the order of the dimensions not of size 1 a reshape (a view), and
    lets transposes meet through reshapes: a transpose of a reshape of a
    transpose moves above the reshape where it moves the reshape's groups of
    dimensions whole, and a reshape of a transpose whose user is a transpose
    moves above it where each group reads adjacent dimensions in order (each
    intermediate value with no other user). A channel shuffle between NHWC
    ops, NHWC -> NCHW, `[N, g, C/g, H, W]`, the groups swapped, back, NCHW ->
    NHWC, becomes one transpose of the NHWC value's channels.

    ```mlir
    %y = mpc.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : tensor<8x128x4x64xf32>
    ```
  }];
  let arguments = (ins MPC_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  // The identity permutation folds away; a transpose of a transpose
  // becomes one (none when they cancel, as the NCHW <-> NHWC pairs
  // mpc-import-onnx puts around convolutions do). One that only moves
  // unit dimensions becomes a reshape.
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def MPC_ConcatOp : MPC_Op<"concat", "Promote", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Concatenates tensors along `axis`";
  let description = [{
    All inputs have the same rank, element type and sizes except along
    `axis`.

    ```mlir
    %y = mpc.concat %a, %b {axis = 3 : i64}
        : tensor<8x32x32x64xf32>, tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins Variadic<MPC_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
}

def MPC_SliceOp : MPC_Op<"slice", "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Takes a strided box out of a tensor";
  let description = [{
    Result dimension `i` has `sizes[i]` elements, starting at `offsets[i]`,
    `strides[i]` apart (strides default to 1).

    ```mlir
    %y = mpc.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 8, 128>}
        : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins MPC_AnyTensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MPC_SliceBackwardOp : MPC_Op<"slice_backward", "Follow", [Pure]> {
  let summary = "Scatters a slice's gradient into zeros of the input's shape";
  let description = [{
    ```mlir
    %dx = mpc.slice_backward %dy {offsets = array<i64: 0, 0>}
        : tensor<8x128xf32> -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, DenseI64ArrayAttr:$offsets,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def MPC_BroadcastToOp : MPC_Op<"broadcast_to", "Follow", [Pure]> {
  let summary = "Broadcasts a tensor to a shape, numpy rules";
  let description = [{
    ```mlir
    %y = mpc.broadcast_to %b : tensor<256xf32> -> tensor<64x256xf32>
    ```

    The canonicalizer lets the ops that broadcast their operands
    themselves (`add`, `sub`, `mul`, `div`, `pow`, `compare`, `where`)
    read the input instead, where the shape they broadcast to stays
    their result's (as a reduction's gradient, broadcast back, meets the
    other gradients of its operand), and erases the broadcast once
    nothing else reads it.
  }];
  let arguments = (ins MPC_AnyTensor:$input);
  let results = (outs MPC_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def MPC_EmbeddingOp : MPC_Op<"embedding", "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Gathers rows of a table by index";
  let description = [{
    `table` is `[V, D]`, `indices` any integer shape `S`; the result is
    `[S..., D]`. Indices out of `[0, V)` are a runtime error. With
    `padding_idx` (PyTorch's `nn.Embedding(padding_idx=...)`), that row
    gets no gradient: the forward reads it as any other row.

    ```mlir
    %e = mpc.embedding %table, %ids {padding_idx = 0 : i64}
        : tensor<30522x256xf32>, tensor<8x128xi32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$table, MPC_IndexTensor:$indices,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$table `,` $indices attr-dict `:` type($table) `,` type($indices)";
  let hasVerifier = 1;
}

def MPC_EmbeddingBackwardOp : MPC_Op<"embedding_backward", "Follow", [Pure,
    OptionalTypesMatchWith<"addend has the result's type", "result", "addend",
                           "$_self">]> {
  let summary = "Scatter-adds gradient rows into a zero table or an addend";
  let description = [{
    Rows hit by several indices receive the sum of their gradients
    (accumulated in f32). The table type is spelled out. The row
    `padding_idx`, where given, stays zero.

    With an `addend` (of the table's type), the rows are scattered into
    it instead of a zero table: a row an index hits is the sum of its
    gradients rounded to the type, the addend's row added and rounded
    again, the values a separate `mpc.add` gives; every other row, and
    the padding row, is the addend's (a separate add would turn a -0 there
    into +0). `--mpc-fuse` gives an embedding's gradient accumulator as
    the addend; computed in the accumulator's global, the table is then
    neither zeroed nor read, only the rows the batch hits written.

    ```mlir
    %dt = mpc.embedding_backward %dy, %ids
        : tensor<8x128x256xf32>, tensor<8x128xi32> -> tensor<30522x256xf32>
    %st = mpc.embedding_backward %dy, %ids addend(%acc)
        : tensor<8x128x256xf32>, tensor<8x128xi32> -> tensor<30522x256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_IndexTensor:$indices,
                       Optional<MPC_FloatTensor>:$addend,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $indices (`addend` `(` $addend^ `)`)? "
                       "attr-dict `:` type($grad) `,` type($indices) `->` "
                       "type($result)";
  let hasVerifier = 1;
}

class MPC_Pool2DOp<string mnemonic, string what, dag extra = (ins)> :
    MPC_Op<mnemonic, "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = what # " pooling over H and W of an NHWC tensor";
  let description = [{
    `kernel`, `stride` (default: the kernel) and `padding` are `[h, w]`
    pairs; `Ho = (H + 2*pad - kh)/stride + 1`.

    ```mlir
    %y = mpc.}] # mnemonic # [{ %x {kernel = array<i64: 2, 2>} : tensor<8x64x64x32xf32>
    ```
  }];
  let arguments = !con((ins MPC_FloatTensor:$input, MPC_Pair:$kernel,
                            OptionalAttr<MPC_Pair>:$stride,
                            MPC_PairOr<"0, 0">:$padding), extra);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MPC_MaxPool2DOp : MPC_Pool2DOp<"max_pool2d", "Max">;
def MPC_AvgPool2DOp : MPC_Pool2DOp<"avg_pool2d", "Average",
    (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)>;

class MPC_Pool2DBackwardOp<string mnemonic, string forward,
                           dag extra = (ins)> :
    MPC_Op<mnemonic, "Follow", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Backward of mpc." # forward;
  let description = [{
    Given the output gradient and the forward input, returns the input
    gradient. Attributes as on the forward op.

    ```mlir
    %dx = mpc.}] # mnemonic # [{ %dy, %x {kernel = array<i64: 2, 2>}
        : tensor<8x32x32x32xf32>, tensor<8x64x64x32xf32>
    ```
  }];
  let arguments = !con((ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                            MPC_Pair:$kernel, OptionalAttr<MPC_Pair>:$stride,
                            MPC_PairOr<"0, 0">:$padding), extra);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $input attr-dict `:` type($grad) `,` type($input)";
  let hasVerifier = 1;
}

def MPC_MaxPool2DBackwardOp :
    MPC_Pool2DBackwardOp<"max_pool2d_backward", "max_pool2d",
        (ins Optional<MPC_FloatTensor>:$addend)> {
  let description = [{
    Given the output gradient and the forward input, returns the input
    gradient (each window's gradient goes to its first maximum). Attributes
    as on the forward op. With an `addend` (of the input's type), the
    result is that tensor plus the gradient, each element's gradient
    rounded to the type first, then the sum rounded: what `mpc.add` of the
    two computes. `--mpc-fuse` makes it so where a skip connection's other
    gradient is added to the pool's.

    ```mlir
    %dx = mpc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>}
        : tensor<8x32x32x32xf32>, tensor<8x64x64x32xf32>
    %dx2 = mpc.max_pool2d_backward %dy, %x addend(%g : tensor<8x64x64x32xf32>)
        {kernel = array<i64: 2, 2>} : tensor<8x32x32x32xf32>, tensor<8x64x64x32xf32>
    ```
  }];
  let assemblyFormat =
      "$grad `,` $input (`addend` `(` $addend^ `:` type($addend) `)`)? "
      "attr-dict `:` type($grad) `,` type($input)";
}
def MPC_AvgPool2DBackwardOp :
    MPC_Pool2DBackwardOp<"avg_pool2d_backward", "avg_pool2d",
        (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad)>;

def MPC_UpsampleNearest2DOp : MPC_Op<"upsample_nearest2d", "Follow",
    [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Nearest-neighbour upsampling of an NHWC tensor";
  let description = [{
    Repeats each pixel `scale[0]` times along H and `scale[1]` along W.

    ```mlir
    %y = mpc.upsample_nearest2d %x {scale = array<i64: 2, 2>} : tensor<8x16x16x64xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_Pair:$scale);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MPC_UpsampleNearest2DBackwardOp : MPC_Op<"upsample_nearest2d_backward",
    "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Backward of mpc.upsample_nearest2d: sums each scale block";
  let description = [{
    ```mlir
    %dx = mpc.upsample_nearest2d_backward %dy {scale = array<i64: 2, 2>}
        : tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_Pair:$scale);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad)";
}

def MPC_DropoutOp : MPC_Op<"dropout", "Follow", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Seeded inverted dropout; also returns the keep mask";
  let description = [{
    Zeroes each element with probability `p` and scales the rest by
    `1/(1-p)`. The mask is drawn from `seed` and the step number, so each
    step draws a new mask and a run is reproducible; the backward pass reuses
    the returned mask.

    The result may differ in element type from the input where both are
    f16, bf16 or f32 (`-> tensor<...xbf16>`): the kept values scaled in f32
    and rounded once, so that f32 to f16/bf16 equals the f32 op with an
    `mpc.cast` after it. `--mpc-fuse` folds such casts.

    ```mlir
    %y, %mask = mpc.dropout %x {p = 0.1 : f64, seed = 7 : i64} : tensor<8x128x256xf32>
    %z, %keep = mpc.dropout %x {p = 0.1 : f64, seed = 8 : i64} : tensor<8x128x256xf32> -> tensor<8x128x256xbf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, F64Attr:$p, I64Attr:$seed);
  let results = (outs MPC_FloatTensor:$result, MPC_MaskTensor:$mask);
  let assemblyFormat =
      "$input attr-dict `:` "
      "custom<ResultAndMaskTypes>(type($input), type($result), type($mask))";
  let extraClassDeclaration = [{
    /// The result's element type may differ from the input's (see the
    /// verifier); everything else is as inferred.
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
  let hasVerifier = 1;
}

def MPC_DropoutAddOp : MPC_Op<"dropout_add", "Promote",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Dropout and residual add in one pass, no mask kept";
  let description = [{
    `dropout(input) + residual`: each element of `input` is kept exactly
    when `mpc.dropout {p, seed}` keeps it at the same step (and rank),
    scaled by `1/(1-p)` and rounded to the type, then the residual is added
    and the sum rounded, as the separate ops round them. No mask is
    written: the backward pass draws the same bits again. Without
    `residual`, the dropped input alone: the gradient of the input, which
    the same bits scale.

    `--mpc-fuse` builds it from an `mpc.dropout` whose mask nothing reads
    and the `mpc.add` of its result and a tensor of its type (a residual
    connection after a sublayer, with no norm after it: `norms` takes
    those into `mpc.add_layer_norm`).

    ```mlir
    %h = mpc.dropout_add %attn, %x {p = 0.1 : f64, seed = 7 : i64}
        : tensor<8x128x256xf16>, tensor<8x128x256xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input,
                       Optional<MPC_FloatTensor>:$residual, F64Attr:$p,
                       I64Attr:$seed);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$input (`,` $residual^)? attr-dict `:` type($input) "
      "(`,` type($residual)^)?";
  let hasVerifier = 1;
}

def MPC_DropoutBackwardOp : MPC_Op<"dropout_backward", "Follow", [Pure,
    AllTypesMatch<["grad", "result"]>]> {
  let summary = "Backward of mpc.dropout with the forward's mask";
  let description = [{
    ```mlir
    %dx = mpc.dropout_backward %dy, %mask {p = 0.1 : f64}
        : tensor<8x128x256xf32>, tensor<8x128x256xi1>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_MaskTensor:$mask, F64Attr:$p);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$grad `,` $mask attr-dict `:` type($grad) `,` type($mask)";
  let hasVerifier = 1;
}

def MPC_SoftmaxDropoutOp : MPC_Op<"softmax_dropout", "Fp32",
    [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "Softmax along the last axis and dropout, nothing kept";
  let description = [{
    `dropout(softmax(scale * input))` along the last dimension in one pass,
    bit for bit `mpc.softmax` with an f32 result followed by `mpc.dropout
    {p, seed}`: the probabilities computed in f32 (f64 for f64) as the
    softmax computes them, each kept exactly where the dropout keeps the
    same element at the same step (and rank), scaled by `1/(1-p)` and
    rounded once to the result's type. Neither the probabilities nor the
    mask are written: `mpc.softmax_dropout_backward` computes both again
    from the input, which the backward pass keeps instead (an attention's
    f16 scores: 2 bytes an element where the f32 probabilities and the
    mask took 5).

    Input and result may differ in type among f16, bf16 and f32. `scale`
    is the softmax's (default 1).

    `recompute` marks a copy of an earlier op of the same operands that
    `--mpc-fuse` placed before a late reader of its result (the backward
    pass's product with the dropped probabilities), so that the result is
    computed again there rather than kept; CSE does not merge the two.

    `--mpc-fuse` builds it (its `softmax-dropout` option) from an
    `mpc.softmax` whose f32 result only an `mpc.dropout` and gradients
    through that dropout read.

    ```mlir
    %p = mpc.softmax_dropout %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64}
        : tensor<8x12x128x128xf16>
    %q = mpc.softmax_dropout %s {p = 0.1 : f64, seed = 7 : i64}
        : tensor<8x12x128x128xbf16> -> tensor<8x12x128x128xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale, F64Attr:$p,
                       I64Attr:$seed, UnitAttr:$recompute);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` custom<ResultType>(type($input), type($result))";
  let hasVerifier = 1;
}

def MPC_SoftmaxDropoutBackwardOp : MPC_Op<"softmax_dropout_backward", "Fp32",
    [Pure, AllShapesMatch<["grad", "input", "result"]>]> {
  let summary = "Backward of mpc.softmax_dropout, from its input";
  let description = [{
    Given the gradient of `mpc.softmax_dropout`'s result and its input,
    returns the input's gradient: the probabilities and the dropout's keep
    bits computed again as the forward computed them, the gradient dropped
    as `mpc.dropout_backward` drops it (rounded to the gradient's type),
    then `mpc.softmax_backward`'s `y * (g - sum(g * y))` times `scale` in
    f32, rounded once. Bit for bit `mpc.dropout_backward` and
    `mpc.softmax_backward` of the separate ops.

    The three may differ in element type among f16, bf16 and f32 (`: grad
    type, input type -> result type`; a type left out is the gradient's).

    With a second result, `dropped` (of the gradient's type), it also
    writes the forward's result, computed again from the probabilities and
    keep bits it computes anyway: bit for bit `mpc.softmax_dropout` of the
    same input and attributes. `--mpc-fuse` (its `recompute-in-backward`
    option) takes it there instead of a `recompute` copy of the forward,
    which read the input once more.

    ```mlir
    %dx = mpc.softmax_dropout_backward %dp, %s {p = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64}
        : tensor<8x12x128x128xf16>
    %dx2, %pd = mpc.softmax_dropout_backward %dp, %s {p = 0.1 : f64, seed = 7 : i64}
        : tensor<8x12x128x128xf16> dropped tensor<8x12x128x128xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale, F64Attr:$p,
                       I64Attr:$seed);
  let results = (outs MPC_FloatTensor:$result,
                      Optional<MPC_FloatTensor>:$dropped);
  let assemblyFormat =
      "$grad `,` $input attr-dict `:` "
      "custom<OutputAndResultTypes>(type($grad), type($input), type($result)) "
      "(`dropped` type($dropped)^)?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class MPC_LossOp<string mnemonic, string what, string targetKind,
                 Type targetType, string targetExample> :
    MPC_Op<mnemonic, "Fp32", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = what;
  let description = [{
    Returns a rank-0 loss of the input's element type, reduced by `reduction`
    (`mean`, the default, or `sum`). Targets: }] # targetKind # [{.

    ```mlir
    %loss = mpc.}] # mnemonic # [{ %x, %t : tensor<64x10xf32>, }] # targetExample # [{
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, targetType:$target,
                       DefaultValuedAttr<MPC_ReductionAttr,
                           "::mlir::mpc::Reduction::Mean">:$reduction);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $target attr-dict `:` type($input) `,` type($target)";
}

class MPC_LossBackwardOp<string mnemonic, string forward, Type targetType,
                         string targetExample> :
    MPC_Op<mnemonic, "Fp32", [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Backward of mpc." # forward;
  let description = [{
    Given the rank-0 loss gradient, the forward input and the targets,
    returns the input gradient.

    ```mlir
    %dx = mpc.}] # mnemonic # [{ %dl, %x, %t
        : tensor<f32>, tensor<64x10xf32>, }] # targetExample # [{
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       targetType:$target,
                       DefaultValuedAttr<MPC_ReductionAttr,
                           "::mlir::mpc::Reduction::Mean">:$reduction);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input `,` $target attr-dict `:` "
                       "type($grad) `,` type($input) `,` type($target)";
}

def MPC_CrossEntropyOp : MPC_LossOp<"cross_entropy",
    "Softmax cross-entropy of logits against integer class labels",
    "integer labels with the logits' shape less the last (class) dimension",
    MPC_IndexTensor, "tensor<64xi32>"> {
  let description = [{
    Returns a rank-0 loss of the input's element type: the rows' terms
    `logsumexp(x_r) - x_r[y_r]` (the rows are the logits' leading
    dimensions) reduced by `reduction` (`mean`, the default, or `sum`).
    Targets: integer labels with the logits' shape less the last (class)
    dimension.

    With `ignore_index` (PyTorch's, which defaults to -100 there and is
    absent here unless given), a row whose label is that value adds nothing
    to the loss or its gradient and is not counted by the mean: the mean is
    over the other rows, 0 where there are none (PyTorch's is NaN then). A
    row whose label is neither that value nor in `[0, classes)` stops the
    step with an error naming the op.

    With `label_smoothing` = e in [0, 1] (PyTorch's, 0 by default), the
    target is `1 - e` on the label plus `e / classes` on every class: a
    row's term is `logsumexp(x_r) - (1 - e) x_r[y_r] - e mean(x_r)`.

    ```mlir
    %loss = mpc.cross_entropy %x, %t : tensor<64x10xf32>, tensor<64xi32>
    %masked = mpc.cross_entropy %x, %t {ignore_index = -100 : i64}
        : tensor<64x10xf32>, tensor<64xi32>
    %smooth = mpc.cross_entropy %x, %t {label_smoothing = 1.0e-1 : f64}
        : tensor<64x10xf32>, tensor<64xi32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_IndexTensor:$target,
                       DefaultValuedAttr<MPC_ReductionAttr,
                           "::mlir::mpc::Reduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
}
def MPC_CrossEntropyBackwardOp : MPC_LossBackwardOp<"cross_entropy_backward",
    "cross_entropy", MPC_IndexTensor, "tensor<64xi32>"> {
  let arguments = (ins MPC_FloatTensor:$grad, MPC_FloatTensor:$input,
                       MPC_IndexTensor:$target,
                       DefaultValuedAttr<MPC_ReductionAttr,
                           "::mlir::mpc::Reduction::Mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
}
def MPC_AccuracyOp : MPC_Op<"accuracy", "Fp32", [Pure,
    MPC_InferTypeOpAdaptor]> {
  let summary = "Top-1 accuracy of logits against integer class labels";
  let description = [{
    The fraction of rows (the logits' leading dimensions) whose label is the
    index of the row's largest logit, the first one on ties (PyTorch's
    `(logits.argmax(-1) == labels).float().mean()`), as a rank-0 f32. A NaN
    logit counts as the largest; a label outside `[0, classes)` counts as
    wrong (the loss beside it reports it). With `ignore_index`, the rows
    whose label is that value are not counted (the fraction is of the
    others, 0 where there are none). Evaluation steps compute it next to a
    cross-entropy loss, with its `ignore_index`; it has no gradient.

    ```mlir
    %acc = mpc.accuracy %logits, %labels : tensor<64x10xf32>, tensor<64xi32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$input, MPC_IndexTensor:$target,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs MPC_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $target attr-dict `:` type($input) `,` type($target)";
}
def MPC_MSEOp : MPC_LossOp<"mse", "Mean squared error",
    "floats of the input's type", MPC_FloatTensor, "tensor<64x10xf32>">;
def MPC_MSEBackwardOp :
    MPC_LossBackwardOp<"mse_backward", "mse", MPC_FloatTensor,
    "tensor<64x10xf32>">;
def MPC_BCEWithLogitsOp : MPC_LossOp<"bce_with_logits",
    "Binary cross-entropy on logits (numerically stable)",
    "probabilities in [0, 1] of the input's type", MPC_FloatTensor,
    "tensor<64x10xf32>">;
def MPC_BCEWithLogitsBackwardOp : MPC_LossBackwardOp<
    "bce_with_logits_backward", "bce_with_logits", MPC_FloatTensor,
    "tensor<64x10xf32>">;
def MPC_BinaryCrossEntropyOp : MPC_LossOp<"binary_cross_entropy",
    "Binary cross-entropy on probabilities (refused under AMP: use "
    "bce_with_logits)",
    "probabilities in [0, 1] of the input's type", MPC_FloatTensor,
    "tensor<64x10xf32>">;
def MPC_BinaryCrossEntropyBackwardOp : MPC_LossBackwardOp<
    "binary_cross_entropy_backward", "binary_cross_entropy", MPC_FloatTensor,
    "tensor<64x10xf32>">;

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

def MPC_ScaleLossOp : MPC_Op<"scale_loss", "Fp32", [Pure,
    AllTypesMatch<["loss", "result"]>]> {
  let summary = "Multiplies the loss by the loss scale";
  let description = [{
    ```mlir
    %scaled = mpc.scale_loss %loss, %scale : tensor<f32>
    ```
  }];
  let arguments = (ins MPC_F32Scalar:$loss, MPC_F32Scalar:$scale);
  let results = (outs MPC_F32Scalar:$result);
  let assemblyFormat = "$loss `,` $scale attr-dict `:` type($loss)";
}

def MPC_AllReduceOp : MPC_Op<"all_reduce", "Follow",
    [MemoryEffects<[MemRead, MemWrite]>, MPC_InferTypeOpAdaptor]> {
  let summary = "Sums a bucket of gradients over every rank of the job";
  let description = [{
    Data-parallel training's collective (built by `--mpc-data-parallel`):
    each result is the element-wise sum, over all ranks, of the operand of
    the same position; at world size 1 it is the operand. The operands are
    one bucket: they share an element type, the memory plan lays them out
    contiguously (16-byte aligned) and the results overwrite them, so the
    reduction is one collective over one range with no copies. The
    collective starts where the op stands and is waited on before the first
    reader of a result; every rank computes every element in the same
    order, so all ranks hold bit-identical results. It has effects: it is
    never erased, merged or reordered with another collective.

    ```mlir
    %g0, %g1 = mpc.all_reduce %d0, %d1 {bucket = 0 : i64}
        : tensor<256x784xf16>, tensor<256xf16>
    ```
  }];
  let arguments = (ins Variadic<MPC_FloatTensor>:$inputs,
                       I64Attr:$bucket);
  let results = (outs Variadic<MPC_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
}

def MPC_UnscaleAndCheckOp : MPC_Op<"unscale_and_check", "Fp32",
    [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Unscales all gradients to f32 and flags any inf/NaN";
  let description = [{
    A multi-tensor op (one kernel on the GPU): returns every gradient
    multiplied by `1/scale` in f32, and `found_inf`, true if any input
    element is not finite.

    ```mlir
    %g0, %g1, %found_inf = mpc.unscale_and_check %scale, %d0, %d1
        : tensor<784x256xf16>, tensor<256xf16>
    ```
  }];
  let arguments = (ins MPC_F32Scalar:$scale, Variadic<MPC_FloatTensor>:$grads);
  let results = (outs Variadic<MPC_FloatTensor>:$unscaled,
                      MPC_BoolScalar:$found_inf);
  let assemblyFormat = "$scale `,` $grads attr-dict `:` type($grads)";
}

def MPC_ClipGradNormOp : MPC_Op<"clip_grad_norm", "Fp32", [Pure]> {
  let summary = "Global-norm gradient clipping folded into the unscale factor";
  let description = [{
    A multi-tensor op in one pass over the gradients, which stay as they
    are: `norm` is the 2-norm of all unscaled gradients together
    (`sqrt(sum (g / scale)^2)`, summed in f64), `found_inf` is true if any
    element or the norm is not finite, and `inv_scale` is the factor the
    optimizer updates multiply the raw gradients by: `(1 / scale) *
    min(1, max_norm / (norm + 1e-6))`, PyTorch's `clip_grad_norm_` applied
    to gradients `GradScaler.unscale_` has unscaled. The clipping can only
    ever see unscaled gradients; a non-finite norm skips the step.

    ```mlir
    %inv, %norm, %found_inf = mpc.clip_grad_norm %scale, %d0, %d1
        {max_norm = 1.0} : tensor<784x256xf16>, tensor<256xf16>
    ```
  }];
  let arguments = (ins MPC_F32Scalar:$scale, Variadic<MPC_FloatTensor>:$grads,
                       F64Attr:$max_norm);
  let results = (outs MPC_F32Scalar:$inv_scale, MPC_F32Scalar:$norm,
                      MPC_BoolScalar:$found_inf);
  let assemblyFormat = "$scale `,` $grads attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def MPC_UpdateLossScaleOp : MPC_Op<"update_loss_scale", "Fp32", [Pure,
    AllTypesMatch<["scale", "new_scale"]>,
    AllTypesMatch<["growth_tracker", "new_growth_tracker"]>,
    AllTypesMatch<["hysteresis_tracker", "new_hysteresis_tracker"]>]> {
  let summary = "GradScaler's scale update, with clamps and hysteresis";
  let description = [{
    On `found_inf`: the growth tracker resets and the hysteresis tracker
    counts down; once it reaches zero the scale is multiplied by
    `backoff_factor` (not below `min_scale`). On a clean step the hysteresis
    tracker refills to `hysteresis` and the growth tracker counts up; at
    `growth_interval` the scale grows by `growth_factor` (unless that is not
    finite, and not above `max_scale`) and the tracker resets. This is Apex's
    hysteresis scaler; with `hysteresis = 1` it is exactly PyTorch's
    `torch.amp.GradScaler.update`. Trackers start at 0 and `hysteresis`.

    ```mlir
    %s, %g, %h = mpc.update_loss_scale %scale, %growth, %hyst, %found_inf
        {growth_interval = 2000 : i64}
    ```
  }];
  let arguments = (ins MPC_F32Scalar:$scale, MPC_I32Scalar:$growth_tracker,
                       MPC_I32Scalar:$hysteresis_tracker,
                       MPC_BoolScalar:$found_inf,
                       DefaultValuedAttr<F64Attr, "2.0">:$growth_factor,
                       DefaultValuedAttr<F64Attr, "0.5">:$backoff_factor,
                       DefaultValuedAttr<I64Attr, "2000">:$growth_interval,
                       DefaultValuedAttr<I64Attr, "1">:$hysteresis,
                       OptionalAttr<F64Attr>:$min_scale,
                       OptionalAttr<F64Attr>:$max_scale);
  let results = (outs MPC_F32Scalar:$new_scale,
                      MPC_I32Scalar:$new_growth_tracker,
                      MPC_I32Scalar:$new_hysteresis_tracker);
  let assemblyFormat = "$scale `,` $growth_tracker `,` $hysteresis_tracker "
                       "`,` $found_inf attr-dict";
  let hasVerifier = 1;
}

def MPC_GradStatsOp : MPC_Op<"grad_stats", "Fp32",
    [Pure, MPC_InferTypeOpAdaptor]> {
  let summary = "Counts zero, f16-underflowing and non-finite gradients";
  let description = [{
    A diagnostic over all gradients at once (`--mpc-grad-stats`): returns
    `[elements, zero, underflow, nonfinite]` as `tensor<4xi64>`, where
    `zero` counts elements equal to zero, `nonfinite` those that are inf or
    NaN, and `underflow` the nonzero finite elements whose true value
    `grad / scale` would round to zero in f16 (`|grad / scale| <= 2^-25`):
    the gradients an unscaled f16 backward pass would lose.

    ```mlir
    %stats = mpc.grad_stats %scale, %d0, %d1 : tensor<784x256xf16>, tensor<256xf16>
    ```
  }];
  let arguments = (ins MPC_F32Scalar:$scale, Variadic<MPC_FloatTensor>:$grads);
  let results = (outs StaticShapeTensorOf<[I64]>:$stats);
  let assemblyFormat = "$scale `,` $grads attr-dict `:` type($grads)";
}

//===----------------------------------------------------------------------===//
// Numerics checks (--mpc-check-numerics)
//===----------------------------------------------------------------------===//

def MPC_CheckNumericsOp : MPC_Op<"check_numerics", "Follow",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Records the ranges of values and whether they are finite";
  let description = [{
    Instrumentation of `--mpc-check-numerics`: for each input, the value of
    the checked op number `indices[i]`, records on the device, in the
    globals `@mpc_numerics_amax` (`[N, 2]`: this step's and the run's
    largest finite `|x|`), `@mpc_numerics_counts` (`[N, 4]` over the run:
    values that were not finite, nonzero values below f16's smallest normal
    (2^-14) and below its smallest subnormal (2^-24), all values) and
    `@mpc_numerics_first` (the smallest index of this step whose value held
    an inf or NaN: the first in program order). Nothing is read back by the
    step. One op checks any number of values (one launch on a GPU); the
    records are those of one op per value.

    ```mlir
    mpc.check_numerics %y {indices = array<i64: 3>} : tensor<64x256xf16>
    mpc.check_numerics %a, %b {indices = array<i64: 4, 5>}
        : tensor<64x256xf16>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Variadic<MPC_FloatTensor>:$inputs,
                   DenseI64ArrayAttr:$indices);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def MPC_NumericsBeginOp : MPC_Op<"numerics_begin", "Follow",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Starts a step's numerics checks";
  let description = [{
    Resets `@mpc_numerics_first` (to `count`, the number of checked ops:
    none was non-finite) and this step's column of `@mpc_numerics_amax`.

    ```mlir
    mpc.numerics_begin {count = 120 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$count);
  let assemblyFormat = "attr-dict";
}

def MPC_NumericsEndOp : MPC_Op<"numerics_end", "Follow",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Ends a step's numerics checks";
  let description = [{
    When an op of the step held a non-finite value, appends the event
    (the step counter, the first such op) to `@mpc_numerics_events`
    (`[34]`: the number of events, then a ring of the last 16 (step, op)
    pairs) and keeps the step's ranges in `@mpc_numerics_event_amax`.

    ```mlir
    mpc.numerics_end {count = 120 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$count);
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def MPC_IncrementOp : MPC_Op<"increment", "Follow", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Adds one to an i32 counter";
  let description = [{
    The step count of an optimizer (Adam's bias correction) or a schedule:
    the result is the counter plus one, to be stored back to its global.
    With `unless(%found_inf)` the counter stays when `found_inf` is set, as
    an optimizer's step count does on a step the loss scaler skips.

    ```mlir
    %t1 = mpc.increment %t : tensor<i32>
    %t2 = mpc.increment %t unless(%inf) : tensor<i32>
    ```
  }];
  let arguments = (ins MPC_I32Scalar:$input, Optional<MPC_BoolScalar>:$skip);
  let results = (outs MPC_I32Scalar:$result);
  let assemblyFormat =
      "$input (`unless` `(` $skip^ `)`)? attr-dict `:` type($input)";
}

def MPC_LRScheduleOp : MPC_Op<"lr_schedule", "Fp32", [Pure]> {
  let summary = "The learning rate of step `step` under a schedule";
  let description = [{
    `step` is the 1-based number of the update being made (what
    `mpc.increment` of a step counter gives). `kind`:
    `constant` (`base`); `linear_warmup` (`base * min(1, step / warmup)`);
    `cosine`: the linear warm-up, then from `base` down to `min_lr` along a
    half cosine until `total`, `min_lr` after it. PyTorch's schedulers,
    where update `step` uses the rate after `step - 1` calls of
    `scheduler.step()`: `one_cycle` (`OneCycleLR` with cosine annealing and
    no momentum cycling: `base` is `max_lr`, over `total` steps, with
    `pct_start`, `div_factor`, `final_div_factor` and `three_phase`; held
    at its final rate after `total`, where PyTorch raises); `step`
    (`StepLR`: `base * gamma^floor((step - 1) / step_size)`);
    `exponential` (`ExponentialLR`: `base * gamma^(step - 1)`).

    ```mlir
    %lr = mpc.lr_schedule %t {kind = "cosine", base = 1.0e-3, warmup = 100,
                              total = 1000}
    %lr1 = mpc.lr_schedule %t {kind = "one_cycle", base = 1.0e-2,
                               total = 1000, pct_start = 0.25}
    ```
  }];
  let arguments = (ins MPC_I32Scalar:$step, StrAttr:$kind, F64Attr:$base,
                       DefaultValuedAttr<I64Attr, "0">:$warmup,
                       DefaultValuedAttr<I64Attr, "0">:$total,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_lr,
                       DefaultValuedAttr<F64Attr, "0.1">:$gamma,
                       DefaultValuedAttr<I64Attr, "0">:$step_size,
                       DefaultValuedAttr<F64Attr, "0.3">:$pct_start,
                       DefaultValuedAttr<F64Attr, "25.0">:$div_factor,
                       DefaultValuedAttr<F64Attr, "10000.0">:$final_div_factor,
                       DefaultValuedAttr<BoolAttr, "false">:$three_phase);
  let results = (outs MPC_F32Scalar:$lr);
  let assemblyFormat = "$step attr-dict";
  let hasVerifier = 1;
}

def MPC_SGDUpdateOp : MPC_Op<"sgd_update", "Fp32",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "SGD step, with momentum, Nesterov and weight decay";
  let description = [{
    PyTorch's `torch.optim.SGD` on an f32 master `param` with gradient
    `grad` (any float type, converted to f32; multiplied by `inv_scale` when
    given): `g = grad*inv_scale + weight_decay*param`; with a
    `momentum_buffer`, `buf = momentum*buf + (1-dampening)*g` and
    `g = nesterov ? g + momentum*buf : buf`; `param -= lr*g`. When
    `found_inf` is given and true, nothing changes. With `copy(T)` the op
    also returns the new parameter converted to `T` (the low-precision
    weight copy of O2). Results: the new parameter, then the new momentum
    buffer, then the copy, each when present.

    ```mlir
    %p, %buf, %w16 = mpc.sgd_update %param, %grad lr(%lr)
        momentum_buffer(%m) found_inf(%inf) inv_scale(%inv) copy(f16)
        {momentum = 0.9 : f64} : tensor<256x256xf32>, tensor<256x256xf16>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$param, MPC_FloatTensor:$grad,
                       MPC_F32Scalar:$lr,
                       Optional<MPC_FloatTensor>:$momentum_buffer,
                       Optional<MPC_BoolScalar>:$found_inf,
                       Optional<MPC_F32Scalar>:$inv_scale,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       UnitAttr:$nesterov,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       OptionalAttr<TypeAttr>:$copy_type);
  let results = (outs MPC_FloatTensor:$new_param,
                      Optional<MPC_FloatTensor>:$new_momentum_buffer,
                      Optional<MPC_FloatTensor>:$param_copy);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def MPC_AdamUpdateOp : MPC_Op<"adam_update", "Fp32",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Adam / AdamW step";
  let description = [{
    PyTorch's `torch.optim.Adam` (or `AdamW` with `decoupled`) on an f32
    master `param` with moments `exp_avg`, `exp_avg_sq` and the step number
    `step` (starting at 1): `g = grad*inv_scale`; Adam adds
    `weight_decay*param` to `g`, AdamW multiplies `param` by
    `1 - lr*weight_decay`; `m = beta1*m + (1-beta1)*g`,
    `v = beta2*v + (1-beta2)*g*g`; with `bias_correction` (default on)
    `m^ = m/(1-beta1^step)`, `v^ = v/(1-beta2^step)`;
    `param -= lr*m^/(sqrt(v^) + eps)`. `found_inf`, `inv_scale` and
    `copy(T)` are as on `mpc.sgd_update`. Results: new parameter, new
    moments, then the copy when present.

    With `lamb`, LAMB (Apex's `FusedLAMB`): the same moments give the
    direction `u = m^/(sqrt(v^) + eps)`, plus `weight_decay*param` when
    `decoupled` (Apex's `adam_w_mode`; otherwise the decay is added to `g`
    as for Adam), and `param -= lr * r * u` with the per-tensor trust ratio
    `r = ||param|| / ||u||` (1 when either norm is 0), the norms summed in
    f64. Apex's built-in gradient clipping (`max_grad_norm`) is not part of
    the op: `--mpc-loss-scaling`'s `clip-grad-norm` does it.

    ```mlir
    %p, %m1, %v1 = mpc.adam_update %param, %grad, %m, %v lr(%lr) step(%t)
        {decoupled, weight_decay = 0.01 : f64} : tensor<256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins MPC_FloatTensor:$param, MPC_FloatTensor:$grad,
                       MPC_FloatTensor:$exp_avg, MPC_FloatTensor:$exp_avg_sq,
                       MPC_F32Scalar:$lr, MPC_I32Scalar:$step,
                       Optional<MPC_BoolScalar>:$found_inf,
                       Optional<MPC_F32Scalar>:$inv_scale,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       UnitAttr:$decoupled, UnitAttr:$lamb,
                       DefaultValuedAttr<BoolAttr, "true">:$bias_correction,
                       OptionalAttr<TypeAttr>:$copy_type);
  let results = (outs MPC_FloatTensor:$new_param, MPC_FloatTensor:$new_exp_avg,
                      MPC_FloatTensor:$new_exp_avg_sq,
                      Optional<MPC_FloatTensor>:$param_copy);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

#endif // MPC_OPS
