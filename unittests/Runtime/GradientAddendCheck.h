//===- GradientAddendCheck.h - gradients added to addends ------*- C++ -*-===//
//
// One check for every backend of the parameter-gradient ops that add their
// results to addends (gradient accumulation's sums, folded by --mpc-fuse):
// the layer and batch norms' gamma and beta gradients
// (mpcrt_layer_norm_backward_*, mpcrt_add_layer_norm_backward,
// mpcrt_batch_norm_backward_*) and the embedding's table gradient
// (mpcrt_embedding_backward_*). With an addend, apart from the result or
// in place (the result's buffer holding the addend), each result must be
// bit for bit what the backend's own result without one, added to the
// addend by a separate add, gives: the gradient rounded to its type, the
// exact sum with the addend rounded once. Fresh random inputs each run;
// the addends have no -0 (which only a separate add turns into +0).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_GRADIENTADDENDCHECK_H
#define MPC_UNITTESTS_RUNTIME_GRADIENTADDENDCHECK_H

#include "AddLayerNormCheck.h"

namespace mpcrt::test {

/// `sums + addend` of type `d` as a separate add computes it: exactly (in
/// f64, exact for two values of f32 or narrower) and rounded once.
inline std::vector<uint8_t> separateAdd(mpcrt_dtype d,
                                        const std::vector<uint8_t> &sums,
                                        const std::vector<uint8_t> &addend) {
  int64_t n = static_cast<int64_t>(sums.size()) / elementBytes(d);
  std::vector<double> s(n), a(n);
  mpcrt_cast(d, sums.data(), MPCRT_F64, s.data(), n);
  mpcrt_cast(d, addend.data(), MPCRT_F64, a.data(), n);
  for (int64_t i = 0; i < n; ++i)
    s[i] += a[i];
  std::vector<uint8_t> out(sums.size());
  mpcrt_cast(MPCRT_F64, s.data(), d, out.data(), n);
  return out;
}

/// Where a run's addends go.
enum class Addends { None, Apart, InPlace, BetaOnly };

/// The norm whose backward adds its parameter gradients: a layer norm, a
/// fused residual one (mpcrt_add_layer_norm: the input and a residual, no
/// dropout), a batch norm (training mode, channels last).
enum class NormKind { Layer, AddLayer, Batch };

/// A norm backward's inputs: `rows` x `cols` of `dt` (a batch norm's
/// `cols` channels) with `param` gamma and beta.
struct LayerNormAddendCase {
  mpcrt_dtype dt, param;
  NormKind kind;
  int64_t rows, cols;
  std::vector<uint8_t> x, residual, dy, gamma, beta;
};

/// Runs the backend's forward, then its backward with gammaAddend and
/// betaAddend (null: none) into dg and db; with inPlace the addends are
/// dg's and db's own bytes on entry (each passed as addend and result).
using LayerNormAddendRun = std::function<void(
    const LayerNormAddendCase &c, const std::vector<uint8_t> *gammaAddend,
    const std::vector<uint8_t> *betaAddend, bool inPlace,
    std::vector<uint8_t> &dg, std::vector<uint8_t> &db)>;

inline void checkLayerNormAddends(std::mt19937 &rng,
                                  const LayerNormAddendRun &run) {
  struct Shape {
    int64_t rows, cols;
  };
  for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
    for (NormKind kind : {NormKind::Layer, NormKind::AddLayer, NormKind::Batch})
      for (Shape s : {Shape{7, 33}, Shape{64, 256}, Shape{0, 40}}) {
        mpcrt_dtype param = dt == MPCRT_F64 ? MPCRT_F64 : MPCRT_F32;
        // f16 parameters too (O3's): the sums rounded to f16 twice.
        for (mpcrt_dtype pd :
             {param, dt == MPCRT_F16 ? MPCRT_F16 : MPCRT_BF16}) {
          if (pd == MPCRT_BF16 && dt != MPCRT_BF16)
            continue;
          SCOPED_TRACE(
              "dtype " + std::to_string(dt) + " params " + std::to_string(pd) +
              " kind " + std::to_string(int(kind)) + " rows " +
              std::to_string(s.rows) + " cols " + std::to_string(s.cols));
          std::vector<double> unused;
          int64_t n = s.rows * s.cols;
          LayerNormAddendCase c{dt,
                                pd,
                                kind,
                                s.rows,
                                s.cols,
                                randomOf(dt, n, rng, unused),
                                randomOf(dt, n, rng, unused),
                                randomOf(dt, n, rng, unused),
                                uniformOf(pd, s.cols, 0.5, 1.5, rng),
                                uniformOf(pd, s.cols, -1, 1, rng)};
          auto ga = randomOf(pd, s.cols, rng, unused),
               ba = randomOf(pd, s.cols, rng, unused);
          size_t bytes = s.cols * elementBytes(pd);
          std::vector<uint8_t> dg(bytes), db(bytes);
          run(c, nullptr, nullptr, false, dg, db);
          auto wantG = separateAdd(pd, dg, ga), wantB = separateAdd(pd, db, ba);
          for (Addends a :
               {Addends::Apart, Addends::InPlace, Addends::BetaOnly}) {
            SCOPED_TRACE("addends " + std::to_string(int(a)));
            std::vector<uint8_t> sg(bytes), sb(bytes);
            if (a == Addends::InPlace) {
              sg = ga;
              sb = ba;
            }
            run(c, a == Addends::BetaOnly ? nullptr : &ga, &ba,
                a == Addends::InPlace, sg, sb);
            EXPECT_EQ(sg, a == Addends::BetaOnly ? dg : wantG) << "dgamma";
            EXPECT_EQ(sb, wantB) << "dbeta";
          }
          if (::testing::Test::HasFailure())
            return;
        }
      }
}

/// An embedding backward's inputs: `count` 32-bit indices into `v` rows
/// of `d` elements of `dt`, some repeated, some the padding row.
struct EmbeddingAddendCase {
  mpcrt_dtype dt;
  int64_t count, v, d, padding;
  std::vector<int32_t> indices;
  std::vector<uint8_t> dy;
};

/// Runs the backend's embedding backward of `c` into `table` with
/// `addend` (null: none); with inPlace the addend is table's own bytes on
/// entry.
using EmbeddingAddendRun = std::function<void(
    const EmbeddingAddendCase &c, const std::vector<uint8_t> *addend,
    bool inPlace, std::vector<uint8_t> &table)>;

inline void checkEmbeddingAddend(std::mt19937 &rng,
                                 const EmbeddingAddendRun &run) {
  for (mpcrt_dtype dt : {MPCRT_F16, MPCRT_BF16, MPCRT_F32, MPCRT_F64})
    for (int64_t padding : {int64_t(-1), int64_t(3)}) {
      SCOPED_TRACE("dtype " + std::to_string(dt) + " padding " +
                   std::to_string(padding));
      const int64_t v = 50, d = 37, count = 300;
      std::uniform_int_distribution<int32_t> row(0, v / 2); // rows repeat
      EmbeddingAddendCase c{dt, count, v, d, padding, {}, {}};
      for (int64_t i = 0; i < count; ++i)
        c.indices.push_back(i % 7 == 0 ? 3 : row(rng));
      std::vector<double> unused;
      c.dy = randomOf(dt, count * d, rng, unused);
      auto addend = randomOf(dt, v * d, rng, unused);
      size_t bytes = v * d * elementBytes(dt);
      std::vector<uint8_t> plain(bytes);
      run(c, nullptr, false, plain);
      auto want = separateAdd(dt, plain, addend);
      // The padding row (and any row nothing hits) is the addend's.
      if (padding >= 0) {
        size_t rowBytes = d * elementBytes(dt);
        EXPECT_EQ(
            std::vector<uint8_t>(plain.begin() + padding * rowBytes,
                                 plain.begin() + (padding + 1) * rowBytes),
            std::vector<uint8_t>(rowBytes, 0))
            << "the padding row without an addend";
      }
      for (bool inPlace : {false, true}) {
        std::vector<uint8_t> table(bytes);
        if (inPlace)
          table = addend;
        run(c, &addend, inPlace, table);
        EXPECT_EQ(table, want) << (inPlace ? "in place" : "apart");
      }
      if (::testing::Test::HasFailure())
        return;
    }
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_GRADIENTADDENDCHECK_H
