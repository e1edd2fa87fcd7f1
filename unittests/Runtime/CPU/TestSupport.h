//===- TestSupport.h - shared helpers of the runtime tests ------*- C++ -*-===//
//
// Fresh random inputs (the seed is kept for failure messages), dot products
// and central differences for the float64 references.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_UNITTESTS_RUNTIME_CPU_TESTSUPPORT_H
#define MPC_UNITTESTS_RUNTIME_CPU_TESTSUPPORT_H

#include <functional>
#include <random>
#include <vector>

namespace mpcrt::test {

struct Rng {
  Rng() : seed(std::random_device()()), engine(seed) {}
  /// Uniform in [lo, hi).
  double uniform(double lo = -1, double hi = 1) {
    return std::uniform_real_distribution<double>(lo, hi)(engine);
  }
  double operator()() { return uniform(); }
  float normal() { return std::normal_distribution<float>(0.f, 1.f)(engine); }
  std::vector<double> vec(size_t n, double lo = -1, double hi = 1) {
    std::vector<double> v(n);
    for (double &x : v)
      x = uniform(lo, hi);
    return v;
  }
  unsigned seed;
  std::mt19937 engine;
};

inline double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Central differences (h = 1e-6) of the scalar f at every element of v;
/// v is restored.
inline std::vector<double> numericGradient(std::vector<double> &v,
                                           const std::function<double()> &f) {
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    double keep = v[i], h = 1e-6;
    v[i] = keep + h;
    double up = f();
    v[i] = keep - h;
    double down = f();
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

} // namespace mpcrt::test

#endif // MPC_UNITTESTS_RUNTIME_CPU_TESTSUPPORT_H
