//===- RowTransposes.cpp - transposes moved through row-wise ops ----------===//
//
// `nn.MultiheadAttention` with `batch_first=True` exports a transpose of
// its `[B, S, E]` input to `[S, B, E]` before the packed projection, and
// one of the output projection's `[S, B, E]` result back to `[B, S, E]`:
// two strided copies per layer forward, two more in the backward pass,
// next to the heads' own transposes. Each swaps leading dimensions only,
// and the ops between it and the heads' transposes work on rows (a
// product by one weight matrix, a bias add, the thirds' slices), so it
// commutes with them: moved to the heads' transpose, the two compose into
// the one transpose a BERT-style model makes (`[B, S, H, D]` to `[B, H,
// S, D]`), which the memory plan then reads straight out of the
// projection.
//
//===----------------------------------------------------------------------===//

#include "RowTransposes.h"

#include "Views.h"

#include "mpc/Dialect/MPC/IR/MPCOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::mpc;

namespace {

RankedTensorType typeOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

bool staticShaped(Value v) {
  RankedTensorType type = typeOf(v);
  return type && type.hasStaticShape() && type.getNumElements() > 0;
}

/// A transpose of at least three dimensions that keeps the innermost one
/// where it is: it moves rows, not the elements inside them.
bool movesRows(TransposeOp op) {
  ArrayRef<int64_t> perm = op.getPermutation();
  return perm.size() >= 3 && perm.back() == int64_t(perm.size()) - 1 &&
         staticShaped(op.getInput());
}

/// A reshape that regroups leading dimensions only: the innermost size is
/// the same on both sides.
bool regroupsRows(ReshapeOp op) {
  RankedTensorType in = typeOf(op.getInput()), out = op.getType();
  return in && in.hasStaticShape() && out.hasStaticShape() &&
         in.getRank() >= 1 && out.getRank() >= 1 &&
         in.getShape().back() == out.getShape().back() &&
         in.getNumElements() > 0;
}

/// The operand `op` works on by rows, where each row (along the innermost
/// axis) of its one result is made from the same row of that operand
/// alone, at the same leading position, and the result's leading
/// dimensions are the operand's: a product by one rank-2 weight (not
/// transposed on the left), a cast, a slice along the innermost axis
/// only, and an add, sub, mul or div of a vector along the innermost axis
/// (every other dimension 1 or absent). std::nullopt for other ops.
std::optional<unsigned> rowOperand(Operation *op) {
  if (op->getNumResults() != 1 || !staticShaped(op->getResult(0)))
    return std::nullopt;
  RankedTensorType result = typeOf(op->getResult(0));
  auto leadingKept = [&](Value data) {
    RankedTensorType type = typeOf(data);
    return type && type.hasStaticShape() &&
           type.getRank() == result.getRank() &&
           type.getShape().drop_back() == result.getShape().drop_back();
  };
  if (auto product = dyn_cast<MatmulOp>(op)) {
    RankedTensorType w = typeOf(product.getB());
    if (product.getTransposeA() || !w || w.getRank() != 2 ||
        result.getRank() < 2 || !leadingKept(product.getA()))
      return std::nullopt;
    return 0u;
  }
  if (isa<CastOp>(op))
    return leadingKept(op->getOperand(0)) ? std::optional<unsigned>(0u)
                                          : std::nullopt;
  if (auto slice = dyn_cast<SliceOp>(op)) {
    RankedTensorType in = typeOf(slice.getInput());
    if (!in || !in.hasStaticShape() || in.getRank() < 1)
      return std::nullopt;
    ArrayRef<int64_t> offsets = slice.getOffsets(), sizes = slice.getSizes();
    std::optional<ArrayRef<int64_t>> strides = slice.getStrides();
    for (int64_t d = 0; d + 1 < in.getRank(); ++d)
      if (offsets[d] != 0 || sizes[d] != in.getDimSize(d) ||
          (strides && (*strides)[d] != 1))
        return std::nullopt;
    return 0u;
  }
  if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    for (unsigned side : {0u, 1u}) {
      Value data = op->getOperand(side), other = op->getOperand(1 - side);
      RankedTensorType vector = typeOf(other);
      if (!leadingKept(data) || !vector || !vector.hasStaticShape() ||
          vector.getRank() > result.getRank() || data == other)
        continue;
      ArrayRef<int64_t> shape = vector.getShape();
      if (shape.empty())
        return side;
      if (shape.back() != 1 && shape.back() != result.getShape().back())
        continue;
      if (llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; }))
        return side;
    }
  }
  return std::nullopt;
}

/// `op` (row-wise in operand `data`, rowOperand) again on `rows`, rows of
/// other leading dimensions: the result has rows' leading dimensions and
/// op's own innermost size and element type.
Value rebuiltOn(OpBuilder &b, Operation *op, unsigned data, Value rows) {
  RankedTensorType in = typeOf(rows), old = typeOf(op->getResult(0));
  SmallVector<int64_t> shape(in.getShape());
  shape.back() = old.getShape().back();
  auto type = RankedTensorType::get(shape, old.getElementType());
  if (auto slice = dyn_cast<SliceOp>(op)) {
    int64_t rank = in.getRank();
    SmallVector<int64_t> offsets(rank, 0), sizes(in.getShape()),
        strides(rank, 1);
    offsets.back() = slice.getOffsets().back();
    sizes.back() = slice.getSizes().back();
    if (std::optional<ArrayRef<int64_t>> s = slice.getStrides())
      strides.back() = s->back();
    return SliceOp::create(b, slice.getLoc(), type, rows,
                           b.getDenseI64ArrayAttr(offsets),
                           b.getDenseI64ArrayAttr(sizes),
                           slice.getStrides() ? b.getDenseI64ArrayAttr(strides)
                                              : DenseI64ArrayAttr());
  }
  Operation *copy = b.clone(*op);
  copy->setOperand(data, rows);
  copy->getResult(0).setType(type);
  return copy->getResult(0);
}

/// Whether `rows` (a transpose's result) meets another transpose once
/// moved down through its row-wise readers: each reader is a transpose, a
/// reshape read only by a transpose (over shapes with a common
/// refinement), or row-wise in it with a result that does.
bool meetsTransposeBelow(Value rows, unsigned depth) {
  if (depth > 16 || rows.use_empty())
    return false;
  for (OpOperand &use : rows.getUses()) {
    Operation *user = use.getOwner();
    if (isa<TransposeOp>(user))
      continue;
    if (auto reshape = dyn_cast<ReshapeOp>(user)) {
      if (!reshape->hasOneUse() || !isa<TransposeOp>(*reshape->user_begin()) ||
          !reshape.getType().hasStaticShape() ||
          !commonRefinement(typeOf(rows).getShape(),
                            reshape.getType().getShape()))
        return false;
      continue;
    }
    std::optional<unsigned> data = rowOperand(user);
    if (!data || *data != use.getOperandNumber() ||
        !meetsTransposeBelow(user->getResult(0), depth + 1))
      return false;
  }
  return true;
}

/// Moves `t` below each of its row-wise readers (recursively), leaving it
/// on the transposes and reshapes it meets there.
void sink(TransposeOp t) {
  Value rows = t.getInput();
  for (OpOperand &use : llvm::make_early_inc_range(t->getUses())) {
    Operation *user = use.getOwner();
    std::optional<unsigned> data = rowOperand(user);
    if (!data || *data != use.getOperandNumber())
      continue;
    OpBuilder b(user);
    Value made = rebuiltOn(b, user, *data, rows);
    auto below = TransposeOp::create(b, t.getLoc(), made, t.getPermutation());
    user->getResult(0).replaceAllUsesWith(below.getResult());
    user->erase();
    sink(below);
  }
  if (t->use_empty())
    t->erase();
}

/// The reshapes and row-wise ops (each read only by the next) that make
/// `t`'s input, up from it, and the value they start from; std::nullopt
/// unless there is a row-wise op among them and that value is a transpose
/// or a reshape of one (each read once), whose shape has a common
/// refinement with what `t` then reads.
std::optional<std::pair<SmallVector<Operation *>, Value>>
pathToTransposeAbove(TransposeOp t) {
  SmallVector<Operation *> path;
  Value v = t.getInput();
  bool rowWise = false;
  while (Operation *def = v.getDefiningOp()) {
    if (!v.hasOneUse() || path.size() > 16)
      break;
    if (auto reshape = dyn_cast<ReshapeOp>(def);
        reshape && regroupsRows(reshape)) {
      path.push_back(def);
      v = reshape.getInput();
      continue;
    }
    std::optional<unsigned> data = rowOperand(def);
    // Built again at t's rank: a vector operand may not have more.
    if (!data || (def->getNumOperands() == 2 &&
                  typeOf(def->getOperand(1 - *data)).getRank() >
                      typeOf(t.getResult()).getRank()))
      break;
    path.push_back(def);
    v = def->getOperand(*data);
    rowWise = true;
  }
  if (!rowWise || !v.hasOneUse() || !staticShaped(v))
    return std::nullopt;
  Value above = v;
  if (auto reshape = above.getDefiningOp<ReshapeOp>())
    above = reshape.getInput();
  auto transpose = above.getDefiningOp<TransposeOp>();
  if (!transpose || !transpose->hasOneUse() || !staticShaped(above))
    return std::nullopt;
  // What t reads once moved: v's rows regrouped by the path's reshapes.
  SmallVector<int64_t> shape(typeOf(v).getShape());
  for (Operation *op : llvm::reverse(path))
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      int64_t inner = shape.back();
      shape.assign(reshape.getType().getShape().begin(),
                   reshape.getType().getShape().end());
      shape.back() = inner;
    }
  if (!commonRefinement(typeOf(above).getShape(), shape))
    return std::nullopt;
  return std::make_pair(std::move(path), v);
}

/// Moves `t` and the reshapes of leading dimensions on `path` above its
/// row-wise ops, onto `start`.
void hoist(TransposeOp t, ArrayRef<Operation *> path, Value start) {
  OpBuilder b(t);
  Value rows = start;
  for (Operation *op : llvm::reverse(path))
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      SmallVector<int64_t> shape(reshape.getType().getShape());
      shape.back() = typeOf(rows).getShape().back();
      rows = ReshapeOp::create(
          b, reshape.getLoc(),
          RankedTensorType::get(shape, typeOf(rows).getElementType()), rows);
    }
  rows = TransposeOp::create(b, t.getLoc(), rows, t.getPermutation());
  for (Operation *op : llvm::reverse(path))
    if (!isa<ReshapeOp>(op))
      rows = rebuiltOn(b, op, *rowOperand(op), rows);
  t.getResult().replaceAllUsesWith(rows);
  t->erase();
  for (Operation *op : path)
    op->erase();
}

/// `t2(reshape(... reshape(t1(x))))`, each read only by the next, as one
/// transpose of x between reshapes (composedTranspose). The ops it erased
/// are added to `erased`; the transpose made (null where the order is
/// x's own: reshapes only), or std::nullopt where there is no such chain
/// or refinement.
std::optional<Operation *> compose(TransposeOp t2,
                                   DenseSet<Operation *> &erased) {
  Value v = t2.getInput();
  while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    if (!reshape->hasOneUse())
      return std::nullopt;
    v = reshape.getInput();
  }
  auto t1 = v.getDefiningOp<TransposeOp>();
  if (!t1 || !t1->hasOneUse() || !staticShaped(t1.getInput()) ||
      !staticShaped(t2.getResult()))
    return std::nullopt;
  std::optional<ComposedTranspose> composed =
      composedTranspose(typeOf(t1.getInput()).getShape(), t1.getPermutation(),
                        typeOf(t2.getInput()).getShape(), t2.getPermutation());
  if (!composed)
    return std::nullopt;
  OpBuilder b(t2);
  Operation *made = nullptr;
  Value x = buildComposedTranspose(b, t2.getLoc(), t1.getInput(), *composed,
                                   t2.getType(), &made);
  SmallVector<Operation *> dead;
  for (Value link = t2.getInput(); Operation *def = link.getDefiningOp();
       link = def->getOperand(0)) {
    dead.push_back(def);
    if (def == t1)
      break;
  }
  t2.getResult().replaceAllUsesWith(x);
  erased.insert(t2);
  t2->erase();
  for (Operation *op : dead) {
    erased.insert(op);
    op->erase();
  }
  return made;
}

} // namespace

std::optional<ComposedTranspose>
mlir::mpc::composedTranspose(ArrayRef<int64_t> shape, ArrayRef<int64_t> first,
                             ArrayRef<int64_t> reshaped,
                             ArrayRef<int64_t> second) {
  SmallVector<int64_t> s1;
  for (int64_t d : first)
    s1.push_back(shape[d]);
  std::optional<SmallVector<int64_t>> refined = commonRefinement(s1, reshaped);
  if (!refined)
    return std::nullopt;
  SmallVector<std::pair<size_t, size_t>> runs1 = runsOf(s1, *refined),
                                         runs2 = runsOf(reshaped, *refined);
  // The input's dimension j is the first transpose's dimension i where
  // first[i] = j: its runs of the refinement, in the input's order.
  SmallVector<int64_t> of(first.size());
  for (auto [i, j] : llvm::enumerate(first))
    of[j] = i;
  SmallVector<int64_t> source, at(refined->size());
  for (int64_t i : of)
    for (size_t k = runs1[i].first; k < runs1[i].second; ++k) {
      at[k] = source.size();
      source.push_back((*refined)[k]);
    }
  SmallVector<int64_t> order;
  for (int64_t d : second)
    for (size_t k = runs2[d].first; k < runs2[d].second; ++k)
      order.push_back(at[k]);
  // Merge the source dimensions the order keeps together: runs of
  // consecutive entries, numbered by where they start in the source.
  SmallVector<std::pair<int64_t, int64_t>> groups; // (first, count)
  for (int64_t d : order)
    if (!groups.empty() && groups.back().first + groups.back().second == d)
      ++groups.back().second;
    else
      groups.push_back({d, 1});
  SmallVector<std::pair<int64_t, int64_t>> sorted(groups);
  llvm::sort(sorted);
  ComposedTranspose composed;
  for (auto [start, count] : sorted) {
    int64_t size = 1;
    for (int64_t d = start; d < start + count; ++d)
      size *= source[d];
    composed.shape.push_back(size);
  }
  for (auto group : groups)
    composed.permutation.push_back(llvm::find(sorted, group) - sorted.begin());
  return composed;
}

Value mlir::mpc::buildComposedTranspose(OpBuilder &b, Location loc, Value x,
                                        const ComposedTranspose &composed,
                                        RankedTensorType type,
                                        Operation **made) {
  auto element = cast<RankedTensorType>(x.getType()).getElementType();
  if (llvm::equal(composed.permutation,
                  llvm::seq<int64_t>(0, composed.permutation.size())))
    return x.getType() == type ? x : ReshapeOp::create(b, loc, type, x);
  if (ArrayRef<int64_t>(composed.shape) !=
      cast<RankedTensorType>(x.getType()).getShape())
    x = ReshapeOp::create(b, loc,
                          RankedTensorType::get(composed.shape, element), x);
  x = TransposeOp::create(b, loc, x, composed.permutation);
  if (made)
    *made = x.getDefiningOp();
  if (x.getType() != type)
    x = ReshapeOp::create(b, loc, type, x);
  return x;
}

void mlir::mpc::moveRowTransposes(
    Operation *root,
    const std::function<void(Operation *, StringRef)> &remark) {
  SmallVector<TransposeOp> transposes;
  root->walk([&](TransposeOp op) {
    if (movesRows(op))
      transposes.push_back(op);
  });
  for (TransposeOp t : transposes) {
    bool rowReader = llvm::any_of(t->getUses(), [](OpOperand &use) {
      std::optional<unsigned> data = rowOperand(use.getOwner());
      return data && *data == use.getOperandNumber();
    });
    if (rowReader && meetsTransposeBelow(t.getResult(), 0)) {
      remark(t, "moved: mpc.transpose below the row-wise ops that read it");
      sink(t);
      continue;
    }
    if (auto path = pathToTransposeAbove(t)) {
      remark(t, "moved: mpc.transpose above the row-wise ops that make its "
                "input");
      hoist(t, path->first, path->second);
    }
  }
  // Outer transposes first: each erases the inner one of its chain.
  SmallVector<TransposeOp> outer;
  root->walk([&](TransposeOp op) { outer.push_back(op); });
  DenseSet<Operation *> erased;
  for (TransposeOp t : llvm::reverse(outer)) {
    if (erased.contains(t))
      continue;
    if (std::optional<Operation *> made = compose(t, erased); made && *made)
      remark(*made, "composed: mpc.transpose of mpc.reshape of mpc.transpose "
                    "into one mpc.transpose");
  }
}
