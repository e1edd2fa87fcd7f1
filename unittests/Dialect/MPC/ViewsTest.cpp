//===- ViewsTest.cpp - the strides of a reshaped view ---------------------===//
//
// reshapedStrides (lib/Dialect/MPC/Transforms/Views.h) decides which
// reshapes of a strided view are views themselves. Checked against the
// definition on random windows of random tensors: a reshape has strides
// exactly where, for each dimension of the new shape, one step along it
// moves the address by the same amount from every element; and where it
// has them, they address each element where the view has it.
//
//===----------------------------------------------------------------------===//

#include "Views.h"
#include "RowTransposes.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <numeric>
#include <random>

using namespace mlir;
using namespace mlir::mpc;

namespace {

/// The address of the element at row-major position `linear` of a view of
/// `shape` with `strides`.
int64_t addressOf(int64_t linear, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> strides) {
  int64_t address = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    address += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return address;
}

/// The strides of `to` from the definition: each dimension's step from
/// the first element, where every element of the view agrees with them.
std::optional<SmallVector<int64_t>> bruteForce(ArrayRef<int64_t> shape,
                                               ArrayRef<int64_t> strides,
                                               ArrayRef<int64_t> to) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  SmallVector<int64_t> dense = denseView(to).strides, result;
  for (size_t d = 0; d < to.size(); ++d)
    result.push_back(to[d] == 1 ? 0
                                : addressOf(dense[d], shape, strides) -
                                      addressOf(0, shape, strides));
  for (int64_t i = 0; i < n; ++i)
    if (addressOf(i, shape, strides) != addressOf(i, to, result))
      return std::nullopt;
  return result;
}

/// The sizes of `n` elements split into `rank` random factors.
SmallVector<int64_t> randomShape(int64_t n, int rank, std::mt19937 &rng) {
  SmallVector<int64_t> shape(rank, 1);
  for (int64_t p = 2; n > 1;) {
    if (n % p) {
      ++p;
      continue;
    }
    shape[rng() % rank] *= p;
    n /= p;
  }
  return shape;
}

/// A random window of a random dense tensor: its shape (sizes 1 to
/// `size`), strides (every other element in some dimensions with
/// `steps`), and element count.
struct Window {
  SmallVector<int64_t> shape, strides;
  int64_t elements = 1;
};
Window randomWindow(int rank, int64_t size, bool steps, std::mt19937 &rng) {
  Window w;
  SmallVector<int64_t> base;
  for (int d = 0; d < rank; ++d) {
    w.shape.push_back(1 + rng() % size);
    base.push_back(w.shape.back() * (steps ? 1 + rng() % 2 : 1) + rng() % 3);
    w.elements *= w.shape.back();
  }
  w.strides = denseView(base).strides;
  for (int d = 0; d < rank && steps; ++d)
    if (w.shape[d] * 2 <= base[d] && rng() % 3 == 0)
      w.strides[d] *= 2;
  return w;
}

TEST(Views, ReshapedStridesAreTheDefinitions) {
  std::mt19937 rng(7);
  int composed = 0, refused = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    // A window (every other element in some dimensions, part of others)
    // of a dense tensor, then a reshape of the window's elements.
    Window w = randomWindow(1 + rng() % 4, 4, /*steps=*/true, rng);
    ArrayRef<int64_t> shape = w.shape, strides = w.strides;
    int64_t n = w.elements;
    SmallVector<int64_t> to = randomShape(n, 1 + rng() % 4, rng);
    std::optional<SmallVector<int64_t>> got =
        reshapedStrides(shape, strides, to);
    std::optional<SmallVector<int64_t>> want = bruteForce(shape, strides, to);
    ASSERT_EQ(got.has_value(), want.has_value()) << "trial " << trial;
    if (!got) {
      ++refused;
      continue;
    }
    ++composed;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(addressOf(i, to, *got), addressOf(i, shape, strides))
          << "trial " << trial << ", element " << i;
  }
  // Both outcomes are exercised.
  EXPECT_GT(composed, 1000);
  EXPECT_GT(refused, 200);
}

TEST(Views, RegroupedLoopsVisitTheTransposedElements) {
  // A window of a dense tensor reshaped (the strides need not compose)
  // and transposed: the loop's elements, in its row-major order, are the
  // transposed result's, each at the window's address of its element.
  std::mt19937 rng(11);
  int looped = 0, refused = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    Window w = randomWindow(1 + rng() % 3, 6, /*steps=*/false, rng);
    ArrayRef<int64_t> shape = w.shape, strides = w.strides;
    int64_t n = w.elements;
    SmallVector<int64_t> to = randomShape(n, 1 + rng() % 4, rng);
    SmallVector<int64_t> order(to.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    auto loop = regroupedLoop(shape, strides, to, order);
    if (!loop) {
      ++refused;
      continue;
    }
    ++looped;
    SmallVector<int64_t> result;
    for (int64_t d : order)
      result.push_back(to[d]);
    SmallVector<int64_t> toStrides = denseView(to).strides;
    for (int64_t i = 0; i < n; ++i) {
      // The result's element i: its index in `to`, then in the window.
      int64_t rest = i, linear = 0;
      for (int64_t k = static_cast<int64_t>(order.size()) - 1; k >= 0; --k) {
        linear += (rest % result[k]) * toStrides[order[k]];
        rest /= result[k];
      }
      ASSERT_EQ(addressOf(i, loop->first, loop->second),
                addressOf(linear, shape, strides))
          << "trial " << trial << ", element " << i;
    }
  }
  EXPECT_GT(looped, 2000);
  EXPECT_GT(refused, 100);
}

/// The row-major index in `shape` of element `i` (row-major) of the
/// transpose `perm` of a tensor of `shape`.
int64_t transposedFrom(int64_t i, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> perm) {
  SmallVector<int64_t> strides = denseView(shape).strides;
  int64_t linear = 0;
  for (int64_t k = static_cast<int64_t>(perm.size()) - 1; k >= 0; --k) {
    linear += (i % shape[perm[k]]) * strides[perm[k]];
    i /= shape[perm[k]];
  }
  return linear;
}

SmallVector<int64_t> randomOrder(size_t rank, std::mt19937 &rng) {
  SmallVector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

TEST(Views, ComposedTransposesTakeTheElementsOfTheChain) {
  // transpose(reshape(transpose(x))) against one transpose between
  // reshapes (RowTransposes.h): element for element the same source.
  std::mt19937 rng(13);
  int composed = 0, refused = 0, merged = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    int64_t n = 1;
    SmallVector<int64_t> shape;
    for (int rank = 1 + rng() % 4, d = 0; d < rank; ++d) {
      shape.push_back(1 + rng() % 6);
      n *= shape.back();
    }
    SmallVector<int64_t> first = randomOrder(shape.size(), rng);
    SmallVector<int64_t> middle;
    for (int64_t d : first)
      middle.push_back(shape[d]);
    SmallVector<int64_t> reshaped = randomShape(n, 1 + rng() % 4, rng);
    SmallVector<int64_t> second = randomOrder(reshaped.size(), rng);
    std::optional<ComposedTranspose> c =
        composedTranspose(shape, first, reshaped, second);
    ASSERT_EQ(c.has_value(), commonRefinement(middle, reshaped).has_value())
        << "trial " << trial;
    if (!c) {
      ++refused;
      continue;
    }
    ++composed;
    ASSERT_EQ(c->shape.size(), c->permutation.size());
    int64_t product = 1;
    for (int64_t d : c->shape)
      product *= d;
    ASSERT_EQ(product, n);
    merged += c->shape.size() < std::max(shape.size(), reshaped.size());
    // No two neighbours of the source stay neighbours in the order (they
    // would have been merged).
    for (size_t k = 1; k < c->permutation.size(); ++k)
      ASSERT_NE(c->permutation[k], c->permutation[k - 1] + 1)
          << "trial " << trial;
    for (int64_t i = 0; i < n; ++i) {
      // The chain: element i of the second transpose, its index in the
      // reshaped (= middle) tensor, then the source's.
      int64_t want =
          transposedFrom(transposedFrom(i, reshaped, second), shape, first);
      // transposedFrom of the middle tensor's index reads `shape` through
      // `first`: the first transpose's element j comes from there.
      ASSERT_EQ(transposedFrom(i, c->shape, c->permutation), want)
          << "trial " << trial << ", element " << i;
    }
  }
  EXPECT_GT(composed, 1000);
  EXPECT_GT(refused, 100);
  EXPECT_GT(merged, 500);
}

TEST(Views, BatchFirstHeadsComposeIntoTheHeadsTranspose) {
  // [B, S, E] to [S, B, E], viewed as [S, B H, D], to [B H, S, D]: the
  // [B, S, H, D] to [B, H, S, D] transpose.
  std::optional<ComposedTranspose> c =
      composedTranspose({8, 512, 768}, {1, 0, 2}, {512, 96, 64}, {1, 0, 2});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->shape, (SmallVector<int64_t>{8, 512, 12, 64}));
  EXPECT_EQ(c->permutation, (SmallVector<int64_t>{0, 2, 1, 3}));
  // Back again: the identity, every dimension merged into one.
  c = composedTranspose({8, 512, 768}, {1, 0, 2}, {512, 8, 768}, {1, 0, 2});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->permutation, (SmallVector<int64_t>{0}));
}

TEST(Views, CommonRefinements) {
  EXPECT_EQ(*commonRefinement({512, 8, 768}, {512, 96, 64}),
            (SmallVector<int64_t>{512, 8, 12, 64}));
  EXPECT_EQ(*commonRefinement({6}, {2, 1, 3}), (SmallVector<int64_t>{2, 3}));
  EXPECT_FALSE(commonRefinement({4, 6}, {6, 4}));
  EXPECT_EQ(commonRefinement({1, 1}, {1})->size(), 0u);
}

TEST(Views, HeadsOfAPackedProjection) {
  // [8, 512, 768] in [8, 512, 2304] (a QKV's third), split into 12 heads.
  std::optional<SmallVector<int64_t>> s =
      reshapedStrides({8, 512, 768}, {512 * 2304, 2304, 1}, {8, 512, 12, 64});
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (SmallVector<int64_t>{512 * 2304, 2304, 64, 1}));
  // Batch and sequence merged: evenly apart, one stride.
  EXPECT_EQ(*reshapedStrides({8, 512, 768}, {512 * 2304, 2304, 1}, {4096, 768}),
            (SmallVector<int64_t>{2304, 1}));
  // Each row's features merged with the sequence: 768 of every 2304
  // elements, no stride.
  EXPECT_FALSE(
      reshapedStrides({8, 512, 768}, {512 * 2304, 2304, 1}, {8, 512 * 768}));
  // Scalars and size-1 dimensions.
  EXPECT_EQ(*reshapedStrides({1, 1}, {5, 3}, {}), SmallVector<int64_t>{});
  EXPECT_EQ(reshapedStrides({3}, {2}, {1, 3, 1})->size(), 3u);
}

} // namespace
