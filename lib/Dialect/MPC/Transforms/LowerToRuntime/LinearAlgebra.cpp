//===- LinearAlgebra.cpp - matmul and convolutions ------------------------===//

#include "Lowering.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"
#include "mpc/Runtime/mpcrt.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mpc;
using namespace mlir::mpc::lowering;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// The sizes and batch strides of a (fused) matmul's GEMMs.
struct Gemm {
  int64_t aStride, bStride, batch, m, n, k;
};

template <typename Op> FailureOr<Gemm> gemmOf(Op op) {
  auto a = tensorType(op.getA()), b = tensorType(op.getB());
  auto c = tensorType(op->getResult(0));
  int64_t rank = c.getRank();
  int64_t m = c.getDimSize(rank - 2), n = c.getDimSize(rank - 1);
  int64_t k = op.getTransposeA() ? a.getDimSize(a.getRank() - 2)
                                 : a.getDimSize(a.getRank() - 1);
  ArrayRef<int64_t> batch = c.getShape().drop_back(2);
  // Each operand either has the result's batch dimensions or none.
  auto batchStride = [&](RankedTensorType t, int64_t matrix,
                         StringRef which) -> FailureOr<int64_t> {
    ArrayRef<int64_t> own = t.getShape().drop_back(2);
    if (own.empty() || product(own) == 1)
      return int64_t(0);
    if (own == batch)
      return matrix;
    return op.emitOpError("operand ")
           << which << " broadcasts only some batch dimensions (" << t
           << " against " << c << "); the runtime takes all or none";
  };
  FailureOr<int64_t> as = batchStride(a, m * k, "A"),
                     bs = batchStride(b, k * n, "B");
  if (failed(as) || failed(bs))
    return failure();
  // Row-major batches of A against one B (a linear layer over [..., M, K]):
  // one product of batch * M rows, on every backend.
  int64_t count = product(batch);
  if (*bs == 0 && !op.getTransposeA() && *as == m * k && count > 1)
    return Gemm{0, 0, 1, m * count, n, k};
  return Gemm{*as, *bs, count, m, n, k};
}

LogicalResult matmul(MatmulOp op, Lowering &l) {
  Value out = l.result(op, 0);
  FailureOr<Gemm> g = gemmOf(op);
  if (!out || failed(g))
    return failure();
  l.call("mpcrt_matmul_" + suffix(op.getType().getElementType()),
         {l.ptr(op.getA()), l.i64(g->aStride), l.ptr(op.getB()),
          l.i64(g->bStride), out, l.i64(g->batch), l.i64(g->m), l.i64(g->n),
          l.i64(g->k), l.i32(op.getTransposeA()), l.i32(op.getTransposeB())});
  return success();
}

/// mpc.heads_matmul as mpcrt_strided_matmul: each operand's strides of
/// its [B, H] matrices and of its rows (Views.h headsOperandStrides), from
/// the strides it is read with: a dense [B, H, R, C] is (H R C, R C, C);
/// a dense [B, R, H, C] with the middle dimensions swapped (`bshd`) is
/// (R H C, C, H C); a view (a packed projection's third, split into
/// heads) its own, from the projection's buffer. A result the plan put in
/// its concatenation's window (headsWindowOf) is written there, at the
/// window's strides.
LogicalResult headsMatmul(HeadsMatmulOp op, Lowering &l) {
  // Written into its concatenation's window: the concatenation's buffer,
  // at the window's offset, with its rows' strides.
  std::optional<HeadsWindow> window = headsWrittenInConcat(op);
  Value out;
  if (window) {
    Value whole = l.result(window->concat, 0);
    if (!whole)
      return failure();
    l.bind(op.getResult(), whole);
    RankedTensorType type = op.getType();
    out = l.offset(whole,
                   window->offset * (bytesOf(type) / type.getNumElements()));
  } else {
    out = l.result(op, 0);
  }
  if (!out)
    return failure();
  struct Operand {
    Value pointer, strides;
  };
  auto operand = [&](Value pointer, ArrayRef<int64_t> shape,
                     ArrayRef<int64_t> own, bool bshd) -> FailureOr<Operand> {
    std::optional<std::array<int64_t, 3>> s =
        headsOperandStrides(shape, own, bshd);
    // The slice's lowering refuses such a view first (its readers must
    // take it: Views.h takesStrided).
    if (!s)
      return op.emitOpError("internal error: an operand whose matrices are "
                            "not row-major");
    return Operand{pointer, l.i64Array(*s)};
  };
  auto input = [&](Value v, bool bshd) {
    auto [pointer, own] = stridedOperand(v, l);
    return operand(pointer, tensorType(v).getShape(), own, bshd);
  };
  ArrayRef<int64_t> shape = op.getType().getShape();
  FailureOr<Operand> a = input(op.getA(), op.getABshd()),
                     b = input(op.getB(), op.getBBshd()),
                     c = window ? FailureOr<Operand>(
                                      Operand{out, l.i64Array(window->strides)})
                                : operand(out, shape, strides(shape),
                                          op.getResultBshd());
  if (failed(a) || failed(b) || failed(c))
    return failure();
  RankedTensorType aType = tensorType(op.getA());
  int64_t outer = shape[0], inner = op.getResultBshd() ? shape[2] : shape[1];
  int64_t m = op.getResultBshd() ? shape[1] : shape[2], n = shape[3];
  int64_t k = op.getTransposeA() ? aType.getDimSize(op.getABshd() ? 1 : 2)
                                 : aType.getDimSize(3);
  l.call("mpcrt_strided_matmul",
         {l.i32(dtypeCode(aType.getElementType())), a->pointer, a->strides,
          b->pointer, b->strides, out, c->strides, l.i64(outer), l.i64(inner),
          l.i64(m), l.i64(n), l.i64(k), l.i32(op.getTransposeA()),
          l.i32(op.getTransposeB())});
  return success();
}

LogicalResult fusedMatmul(FusedMatmulOp op, Lowering &l) {
  Value out = l.result(op, 0);
  Value pre = op.getPreActivation() ? l.result(op, 1) : l.null();
  FailureOr<Gemm> g = gemmOf(op);
  if (!out || !pre || failed(g))
    return failure();
  l.call("mpcrt_fused_matmul",
         {l.i32(dtypeCode(tensorType(op.getA()).getElementType())),
          l.i32(dtypeCode(op.getResult().getType().getElementType())),
          l.ptr(op.getA()), l.i64(g->aStride), l.ptr(op.getB()),
          l.i64(g->bStride), l.ptr(op.getBias()), out, pre, l.i64(g->batch),
          l.i64(g->m), l.i64(g->n), l.i64(g->k), l.i32(op.getTransposeA()),
          l.i32(op.getTransposeB()),
          l.i32(activationCode(op.getActivation()))});
  return success();
}

LogicalResult matmulAdd(MatmulAddOp op, Lowering &l) {
  Value out = l.result(op, 0);
  FailureOr<Gemm> g = gemmOf(op);
  if (!out || failed(g))
    return failure();
  l.call("mpcrt_matmul_add",
         {l.i32(dtypeCode(tensorType(op.getA()).getElementType())),
          l.i32(dtypeCode(op.getType().getElementType())), l.ptr(op.getA()),
          l.i64(g->aStride), l.ptr(op.getB()), l.i64(g->bStride),
          l.ptr(op.getAddend()), out, l.i64(g->batch), l.i64(g->m), l.i64(g->n),
          l.i64(g->k), l.i32(op.getTransposeA()), l.i32(op.getTransposeB())});
  return success();
}

LogicalResult matmulActivationGrad(MatmulActivationGradOp op, Lowering &l) {
  Value out = l.result(op, 0);
  FailureOr<Gemm> g = gemmOf(op);
  if (!out || failed(g))
    return failure();
  l.call("mpcrt_matmul_activation_grad",
         {l.i32(dtypeCode(tensorType(op.getA()).getElementType())),
          l.i32(dtypeCode(op.getType().getElementType())), l.ptr(op.getA()),
          l.i64(g->aStride), l.ptr(op.getB()), l.i64(g->bStride),
          l.ptr(op.getSaved()), out, l.i64(g->batch), l.i64(g->m), l.i64(g->n),
          l.i64(g->k), l.i32(op.getTransposeA()), l.i32(op.getTransposeB()),
          l.i32(activationCode(op.getActivation()))});
  return success();
}

LogicalResult matmulBiasGrad(MatmulBiasGradOp op, Lowering &l) {
  Value out = l.result(op, 0), biasGrad = l.result(op, 1);
  if (!out || !biasGrad)
    return failure();
  RankedTensorType c = op.getResult().getType();
  int64_t k = tensorType(op.getB()).getDimSize(0);
  Value addend = op.getAddend(), biasAddend = op.getBiasAddend();
  l.call("mpcrt_matmul_bias_grad",
         {l.i32(dtypeCode(tensorType(op.getA()).getElementType())),
          l.i32(dtypeCode(c.getElementType())),
          l.i32(dtypeCode(op.getBiasGrad().getType().getElementType())),
          l.ptr(op.getA()), l.ptr(op.getB()), l.ptrOrNull(addend), out,
          l.ptrOrNull(biasAddend), biasGrad, l.i64(c.getDimSize(0)),
          l.i64(c.getDimSize(1)), l.i64(k), l.i32(op.getTransposeA()),
          l.i32(op.getBiasOfA())});
  return success();
}

LogicalResult columnSums(ColumnSumsOp op, Lowering &l) {
  SmallVector<Value> inputs, addends, sums;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    Value out = l.result(op, i);
    if (!out)
      return failure();
    inputs.push_back(l.ptr(input));
    sums.push_back(out);
  }
  for (Value addend : op.getAddends())
    addends.push_back(l.ptr(addend));
  RankedTensorType type = tensorType(op.getInputs().front());
  l.call("mpcrt_column_sums",
         {l.i32(dtypeCode(type.getElementType())),
          l.i32(dtypeCode(cast<RankedTensorType>(op.getSums().front().getType())
                              .getElementType())),
          l.i64(inputs.size()), l.pointerArray(inputs),
          addends.empty() ? l.null() : l.pointerArray(addends),
          l.pointerArray(sums), l.i64(type.getDimSize(0)),
          l.i64(type.getDimSize(1))});
  return success();
}

/// mpcrt_conv2d_shape of the forward convolution from its input, filter and
/// output shapes.
Value convShape(Lowering &l, ArrayRef<int64_t> x, ArrayRef<int64_t> w,
                ArrayRef<int64_t> y, ArrayRef<int64_t> stride,
                ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                int64_t groups) {
  return l.i64Array({x[0], x[1], x[2], x[3], w[0], w[1], w[2], y[1], y[2],
                     stride[0], stride[1], padding[0], padding[1], dilation[0],
                     dilation[1], groups});
}

template <typename Op>
LogicalResult conv(Op op, StringRef kernel, Value first, Value second,
                   ArrayRef<int64_t> x, ArrayRef<int64_t> w,
                   ArrayRef<int64_t> y, int64_t groups, Lowering &l) {
  Value out = l.result(op, 0);
  if (!out)
    return failure();
  Value shape = convShape(l, x, w, y, op.getStride(), op.getPadding(),
                          op.getDilation(), groups);
  SmallVector<Value> args = {l.ptr(first), l.ptr(second), out, shape};
  std::string name = ("mpcrt_" + kernel).str();
  // A convolution with an addend reads it before writing its result (its
  // buffer, where the addend dies there: PlanMemory).
  if (auto forward = dyn_cast<Conv2DOp>(op.getOperation());
      forward && forward.getAddend()) {
    name += "_add";
    args.insert(args.begin() + 2, l.ptr(forward.getAddend()));
  }
  l.call(name + "_" + suffix(op.getType().getElementType()), args);
  return success();
}

} // namespace

std::optional<LogicalResult> lowering::lowerLinearAlgebra(Operation *op,
                                                          Lowering &l) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](MatmulOp op) { return matmul(op, l); })
      .Case([&](HeadsMatmulOp op) { return headsMatmul(op, l); })
      .Case([&](FusedMatmulOp op) { return fusedMatmul(op, l); })
      .Case([&](MatmulBiasGradOp op) { return matmulBiasGrad(op, l); })
      .Case([&](ColumnSumsOp op) { return columnSums(op, l); })
      .Case([&](MatmulAddOp op) { return matmulAdd(op, l); })
      .Case([&](MatmulActivationGradOp op) {
        return matmulActivationGrad(op, l);
      })
      .Case([&](Conv2DOp op) {
        return conv(op, "conv2d", op.getInput(), op.getFilter(),
                    tensorType(op.getInput()).getShape(),
                    tensorType(op.getFilter()).getShape(),
                    op.getType().getShape(), op.getGroups(), l);
      })
      .Case([&](Conv2DBackwardDataOp op) {
        return conv(op, "conv2d_backward_data", op.getGrad(), op.getFilter(),
                    op.getType().getShape(),
                    tensorType(op.getFilter()).getShape(),
                    tensorType(op.getGrad()).getShape(), op.getGroups(), l);
      })
      .Case([&](Conv2DBackwardFilterOp op) {
        return conv(op, "conv2d_backward_filter", op.getGrad(), op.getInput(),
                    tensorType(op.getInput()).getShape(),
                    op.getType().getShape(),
                    tensorType(op.getGrad()).getShape(), op.getGroups(), l);
      })
      .Case([&](ConvTranspose2DOp op) {
        // The data gradient of the convolution that maps our output back to
        // our input; its OHWI filter is our IHWO filter.
        return conv(op, "conv2d_backward_data", op.getInput(), op.getFilter(),
                    op.getType().getShape(),
                    tensorType(op.getFilter()).getShape(),
                    tensorType(op.getInput()).getShape(), /*groups=*/1, l);
      })
      .Default([](Operation *) { return std::nullopt; });
}
