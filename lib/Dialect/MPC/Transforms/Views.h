//===- Views.h - values the memory plan reads inside another's buffer -----===//
//
// A slice whose every reader takes its operands with strides (the
// broadcasting elementwise ops, each operand a pointer and a stride per
// dimension; the strided copies of transposes, slices and broadcasts)
// needs no copy: --mpc-plan-memory gives it its operand's buffer, and the
// lowering hands those readers the operand's pointer at the slice's offset
// with the slice's strides. A reshape of such a view is a view too where
// its strides compose (a dimension split, or merged dimensions that lie
// evenly apart), or where only transposes read it, each taking the view
// as one loop over the two shapes' common refinement; so a packed
// projection's slice, split into heads and transposed, is one strided
// copy out of the projection. A transpose read only by a concatenation
// is written into its window the same way back. This header is what both
// passes decide these from.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H
#define MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "llvm/ADT/STLExtras.h"

#include <array>
#include <optional>

namespace mlir::mpc {

/// Where a value's elements lie in the buffer it is read in: the first
/// `offset` elements in, then a stride per dimension of its shape.
struct View {
  int64_t offset = 0;
  SmallVector<int64_t> strides;
};

/// The view of a dense tensor of `shape` in its own buffer.
inline View denseView(ArrayRef<int64_t> shape) {
  View v;
  v.strides.assign(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    v.strides[d] = v.strides[d + 1] * shape[d + 1];
  return v;
}

/// The view of a window (from `offsets`, in `steps` where given) into a
/// tensor read as `input`: a slice's, or a slice gradient's into its
/// input's shape.
inline View windowOf(ArrayRef<int64_t> offsets,
                     std::optional<ArrayRef<int64_t>> steps,
                     const View &input) {
  View v{input.offset, {}};
  for (size_t d = 0; d < offsets.size(); ++d) {
    v.offset += offsets[d] * input.strides[d];
    v.strides.push_back(input.strides[d] * (steps ? (*steps)[d] : 1));
  }
  return v;
}

/// The view of `slice`'s window into its input, read as `input`.
inline View windowOf(SliceOp slice, const View &input) {
  return windowOf(slice.getOffsets(), slice.getStrides(), input);
}

/// The strides of a view of `shape` with `strides` reshaped to `to`: the
/// same elements in the same order, each dimension of `to` a stride of
/// its own (PyTorch's rule for Tensor.view). Dimensions are split freely;
/// merged ones must lie evenly apart (each stride the next one's times
/// its size). std::nullopt where they do not.
inline std::optional<SmallVector<int64_t>>
reshapedStrides(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> to) {
  SmallVector<int64_t> result(to.size(), 1);
  if (shape.empty())
    return result;
  int64_t viewDim = static_cast<int64_t>(to.size()) - 1;
  int64_t base = strides.back(), elements = 1, viewElements = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    elements *= shape[d];
    // The end of a chunk of dimensions evenly apart.
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != elements * base)) {
      while (viewDim >= 0 && (viewElements < elements || to[viewDim] == 1)) {
        result[viewDim] = viewElements * base;
        viewElements *= to[viewDim];
        --viewDim;
      }
      if (viewElements != elements)
        return std::nullopt;
      if (d > 0) {
        base = strides[d - 1];
        elements = viewElements = 1;
      }
    }
  }
  if (viewDim != -1)
    return std::nullopt;
  return result;
}

/// The most dimensions a strided copy takes (the runtimes' layouts).
constexpr size_t kMaxCopyRank = 8;

/// The coarsest shape that both `a` and `b` (of the same elements) are
/// merges of: each dimension of either a run of its dimensions (`[512, 8,
/// 768]` and `[512, 96, 64]`: `[512, 8, 12, 64]`). std::nullopt where a
/// dimension of one ends inside a dimension of the other that its part
/// does not divide (`[4, 6]` and `[6, 4]`). Dimensions of size 1 take
/// none of its dimensions.
inline std::optional<SmallVector<int64_t>>
commonRefinement(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  // The element counts inside each dimension's boundary, innermost first.
  SmallVector<int64_t> bounds;
  for (ArrayRef<int64_t> shape : {a, b}) {
    int64_t inner = 1;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d)
      if (shape[d] != 1)
        bounds.push_back(inner *= shape[d]);
  }
  llvm::sort(bounds);
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  SmallVector<int64_t> refined;
  int64_t inner = 1;
  for (int64_t bound : bounds) {
    if (bound % inner != 0)
      return std::nullopt;
    refined.insert(refined.begin(), bound / inner);
    inner = bound;
  }
  return refined;
}

/// For each dimension of `shape`, the run [first, last) of the dimensions
/// of `refined` (a commonRefinement of it) it spans.
inline SmallVector<std::pair<size_t, size_t>>
runsOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> refined) {
  SmallVector<std::pair<size_t, size_t>> runs(shape.size());
  size_t at = refined.size();
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    size_t last = at;
    for (int64_t n = shape[d]; n > 1; n /= refined[--at])
      ;
    runs[d] = {at, last};
  }
  return runs;
}

/// A view of `shape` with `strides`, reshaped to `to` and its dimensions
/// then taken in `order` (dimension k of the result is dimension
/// `order[k]` of `to`: a transpose's permutation), as one strided loop:
/// its shape and strides (the result's dimensions split into runs of the
/// common refinement, each at the view's stride). The view's strides need
/// not compose with `to` (reshapedStrides): a packed projection's third
/// `[S, B, 3 E]` read as `[S, B H, D]` and transposed to `[B H, S, D]` is
/// the loop `[B, H, S, D]`. std::nullopt where the shapes have no common
/// refinement or the loop would pass kMaxCopyRank.
inline std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
regroupedLoop(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
              ArrayRef<int64_t> to, ArrayRef<int64_t> order) {
  std::optional<SmallVector<int64_t>> refined = commonRefinement(shape, to);
  if (!refined || refined->size() > kMaxCopyRank)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> fine =
      reshapedStrides(shape, strides, *refined); // splits only
  if (!fine)
    return std::nullopt;
  SmallVector<std::pair<size_t, size_t>> runs = runsOf(to, *refined);
  std::pair<SmallVector<int64_t>, SmallVector<int64_t>> loop;
  for (int64_t d : order)
    for (size_t k = runs[d].first; k < runs[d].second; ++k) {
      loop.first.push_back((*refined)[k]);
      loop.second.push_back((*fine)[k]);
    }
  return loop;
}

/// Ops whose lowering reads every tensor operand through strides over its
/// shape: mpcrt_binary_*, mpcrt_compare, mpcrt_where (over the result's
/// shape), and the strided copies of a transpose, a slice or a broadcast.
inline bool readsOperandsStrided(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, ScaleLossOp, CompareOp, WhereOp,
             TransposeOp, SliceOp, BroadcastToOp>(op);
}

/// The distance between consecutive rows (every dimension but the last)
/// of a view of `shape` with `strides`, where its rows lie evenly apart and
/// each row is contiguous: a channel slice of an NHWC tensor, its pixels
/// the whole tensor's channel count apart. std::nullopt otherwise.
inline std::optional<int64_t> rowStrideOf(ArrayRef<int64_t> shape,
                                          ArrayRef<int64_t> strides) {
  if (shape.empty() || (shape.back() != 1 && strides.back() != 1))
    return std::nullopt;
  std::optional<int64_t> row;
  int64_t inner = 1; // rows spanned by one step of dimension d
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    if (shape[d] != 1) {
      if (!row) {
        if (strides[d] % inner != 0)
          return std::nullopt;
        row = strides[d] / inner;
      } else if (strides[d] != *row * inner) {
        return std::nullopt;
      }
    }
    inner *= shape[d];
  }
  return row ? row : std::optional<int64_t>(shape.back());
}

/// The strides mpcrt_strided_matmul takes for an operand of
/// mpc.heads_matmul of `shape` (rank 4) read with `strides`: along B, along
/// H, and between the matrices' rows; `bshd` where it is stored `[B, R, H,
/// C]`. std::nullopt where its matrices are not row-major with rows at
/// least a row apart (what BLAS's and cuBLASLt's leading dimension
/// takes): its last stride 1 (or one column), and nothing negative.
inline std::optional<std::array<int64_t, 3>>
headsOperandStrides(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                    bool bshd) {
  if (shape.size() != 4 || strides.size() != 4 ||
      (shape[3] != 1 && strides[3] != 1) ||
      llvm::any_of(strides, [](int64_t s) { return s < 0; }))
    return std::nullopt;
  std::array<int64_t, 3> s =
      bshd ? std::array<int64_t, 3>{strides[0], strides[2], strides[1]}
           : std::array<int64_t, 3>{strides[0], strides[1], strides[2]};
  if (s[2] < shape[3])
    return std::nullopt;
  return s;
}

/// Whether `use` is read through `strides` by an op that takes that
/// operand with strides: every operand of readsOperandsStrided's ops; a
/// max pool gradient's addend whose rows lie evenly apart (rowStrideOf);
/// an operand of mpc.heads_matmul whose matrices are row-major
/// (headsOperandStrides: a packed projection's third, split into heads).
inline bool takesStrided(OpOperand &use, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> strides) {
  Operation *user = use.getOwner();
  if (readsOperandsStrided(user))
    return true;
  if (auto heads = dyn_cast<HeadsMatmulOp>(user))
    return use.getOperandNumber() < 2 &&
           headsOperandStrides(shape, strides,
                               use.getOperandNumber() == 0 ? heads.getABshd()
                                                           : heads.getBBshd())
               .has_value();
  auto pool = dyn_cast<MaxPool2DBackwardOp>(user);
  return pool && pool.getAddend() && &use == &pool.getAddendMutable()[0] &&
         rowStrideOf(shape, strides).has_value();
}

/// Whether `reshape` of a view of `shape` with `strides`, whose strides do
/// not compose (reshapedStrides), is read only by transposes, each of
/// which can read the view as one loop (regroupedLoop): the reshape is
/// then a view its transposes read through.
inline bool regroupedByTransposes(ReshapeOp reshape, ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> strides) {
  return !reshape->use_empty() &&
         llvm::all_of(reshape->getUsers(), [&](Operation *user) {
           auto transpose = dyn_cast<TransposeOp>(user);
           return transpose &&
                  regroupedLoop(shape, strides, reshape.getType().getShape(),
                                transpose.getPermutation());
         });
}

/// Whether `v`, read with `strides`, can be read where it lies: it has
/// readers, and each takes its operands through strides or is a reshape
/// whose strides compose (reshapedStrides) and whose own readers can, or
/// one read only by transposes that take the view as one loop
/// (regroupedByTransposes).
inline bool readersTakeStrides(Value v, ArrayRef<int64_t> strides) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || v.use_empty())
    return false;
  return llvm::all_of(v.getUses(), [&](OpOperand &use) {
    if (takesStrided(use, type.getShape(), strides))
      return true;
    auto reshape = dyn_cast<ReshapeOp>(use.getOwner());
    if (!reshape)
      return false;
    ArrayRef<int64_t> to = reshape.getType().getShape();
    if (std::optional<SmallVector<int64_t>> s =
            reshapedStrides(type.getShape(), strides, to))
      return readersTakeStrides(reshape.getResult(), *s);
    return regroupedByTransposes(reshape, type.getShape(), strides);
  });
}

/// Whether `slice`, its input read as `input`, may be read in its input's
/// buffer: it has elements, and its readers take it where it lies
/// (readersTakeStrides). Where its input has an arena buffer the plan then
/// makes it a view of it (PlanMemory.cpp).
inline bool readableInPlace(SliceOp slice, const View &input) {
  auto type = dyn_cast<RankedTensorType>(slice.getType());
  return type && type.hasStaticShape() && type.getNumElements() > 0 &&
         readersTakeStrides(slice.getResult(), windowOf(slice, input).strides);
}

/// A transpose written into a window of the concatenation that reads it:
/// the scatter of the transpose's input there (its offset in the
/// concatenation, and the loop over the input: shape and strides).
struct ConcatWindow {
  ConcatOp concat;
  int64_t offset;
  SmallVector<int64_t> shape, strides;
};

/// Where `v` (of static shape, with elements) lands in a concatenation:
/// its one reader, through reshapes each with one reader, one operand of
/// a concat of static shape. The concat, the piece it reads (`v` or the
/// last reshape), and the window's view of the concatenation's buffer (the
/// piece's offset along the axis and the concatenation's dense strides).
/// std::nullopt otherwise.
struct PieceWindow {
  ConcatOp concat;
  Value piece;
  View window;
};
inline std::optional<PieceWindow> windowIn(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() == 0)
    return std::nullopt;
  Value piece = v;
  while (piece.hasOneUse())
    if (auto reshape = dyn_cast<ReshapeOp>(*piece.getUsers().begin()))
      piece = reshape.getResult();
    else
      break;
  if (!piece.hasOneUse())
    return std::nullopt;
  OpOperand &use = *piece.getUses().begin();
  auto concat = dyn_cast<ConcatOp>(use.getOwner());
  auto whole = concat ? dyn_cast<RankedTensorType>(concat.getType())
                      : RankedTensorType();
  if (!whole || !whole.hasStaticShape())
    return std::nullopt;
  int64_t axis = concat.getAxis();
  if (axis < 0)
    axis += whole.getRank();
  int64_t position = 0;
  for (Value before : concat->getOperands().take_front(use.getOperandNumber()))
    position += cast<RankedTensorType>(before.getType()).getDimSize(axis);
  View window = denseView(whole.getShape());
  window.offset = position * window.strides[axis];
  return PieceWindow{concat, piece, std::move(window)};
}

/// The window of the concatenation a transpose is written into, when its
/// one reader (through reshapes, each with one reader) is one operand of
/// a concat (windowIn): the scatter of its input into the concatenation's
/// buffer, the operand's window taken back through the reshapes and the
/// transpose (regroupedLoop: the input's dimensions, each split into
/// runs of the refinement of the operand's and the transpose's shapes,
/// at the window's strides). The plan then gives the transpose the
/// concatenation's buffer and the lowering scatters the transpose's
/// input straight into the window, which the concat does not copy again:
/// a packed projection's three gradients, transposed back from heads,
/// are written once. std::nullopt otherwise.
inline std::optional<ConcatWindow> concatWindowOf(TransposeOp transpose) {
  std::optional<PieceWindow> in = windowIn(transpose.getResult());
  if (!in)
    return std::nullopt;
  // The input's dimension j is the result's dimension d where
  // permutation[d] = j.
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  SmallVector<int64_t> inputOrder(permutation.size());
  for (auto [d, j] : llvm::enumerate(permutation))
    inputOrder[j] = d;
  std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>> loop =
      regroupedLoop(cast<RankedTensorType>(in->piece.getType()).getShape(),
                    in->window.strides, transpose.getType().getShape(),
                    inputOrder);
  if (!loop)
    return std::nullopt;
  return ConcatWindow{in->concat, in->window.offset, std::move(loop->first),
                      std::move(loop->second)};
}

/// The window of the concatenation an mpc.heads_matmul writes its result
/// into, when the result's one reader (through reshapes, each with one
/// reader) is one operand of a concat (windowIn) and the window's rows
/// take the result's matrices (headsOperandStrides): a packed
/// projection's three gradients, each written heads-second by its
/// product into its third of the packed gradient (rows 3 H D apart). The
/// window's offset in the concatenation and the result's three strides.
struct HeadsWindow {
  ConcatOp concat;
  int64_t offset;
  std::array<int64_t, 3> strides;
};
inline std::optional<HeadsWindow> headsWindowOf(HeadsMatmulOp op) {
  RankedTensorType type = op.getType();
  std::optional<PieceWindow> in = windowIn(op.getResult());
  if (!in)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> s =
      reshapedStrides(cast<RankedTensorType>(in->piece.getType()).getShape(),
                      in->window.strides, type.getShape());
  if (!s)
    return std::nullopt;
  std::optional<std::array<int64_t, 3>> strides =
      headsOperandStrides(type.getShape(), *s, op.getResultBshd());
  if (!strides)
    return std::nullopt;
  return HeadsWindow{in->concat, in->window.offset, *strides};
}

} // namespace mlir::mpc

#endif // MPC_LIB_DIALECT_MPC_TRANSFORMS_VIEWS_H
