// The Gemma elementwise operations (runtime/layer_ops) against
// double-precision formulas: they run on kernels/fast_math.h's branch-free
// exp, vectorised, so lengths around the vector widths check both the
// vector body and the scalar tail.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/layer_ops.h"

namespace oscar::runtime {
namespace {

// 0.5 x (1 + tanh(u)), written as x / (1 + e^(-2u)): the same function, but
// in double 1 + tanh(u) rounds to 0 for u < -19 where the true value is not.
double gelu_tanh_ref(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

TEST(LayerOps, GegluMatchesTheTanhFormula) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::uniform_real_distribution<float> wide(-60.0f, 60.0f);
  for (size_t n : {1, 7, 8, 9, 17, 256, 6144}) {
    std::vector<float> g(n), u(n), out(n);
    for (size_t i = 0; i < n; ++i) g[i] = i % 4 == 0 ? wide(rng) : nd(rng), u[i] = nd(rng);
    geglu(g.data(), u.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double want = gelu_tanh_ref(g[i]) * u[i];
      // Rounding the exponent 2u to float costs ~1e-7 * |2u| relative, so
      // far in the tail the bound widens with it.
      const double arg = 2.0 * std::sqrt(2.0 / M_PI) * std::fabs(g[i] + 0.044715 * g[i] * g[i] * g[i]);
      ASSERT_NEAR(out[i], want, (1e-6 + 2e-7 * arg) * std::fabs(want) + 1e-30) << "n " << n << " g " << g[i];
    }
  }
}

TEST(LayerOps, SoftcapMatchesTanhAndSaturatesAtTheCap) {
  std::mt19937 rng(22);
  std::normal_distribution<float> nd(0.0f, 20.0f);
  for (size_t n : {1, 8, 15, 262144}) {
    std::vector<float> x(n);
    for (auto& v : x) v = nd(rng);
    x[0] = 1e-5f;  // tiny logits keep their relative precision
    std::vector<float> y = x;
    softcap(y.data(), n, 30.0f);
    for (size_t i = 0; i < n; ++i) {
      const double want = 30.0 * std::tanh((double)x[i] / 30.0);
      ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30) << "n " << n << " x " << x[i];
    }
  }
  std::vector<float> big = {1e6f, -1e6f};
  softcap(big.data(), big.size(), 30.0f);
  EXPECT_EQ(big[0], 30.0f);
  EXPECT_EQ(big[1], -30.0f);
}

}  // namespace
}  // namespace oscar::runtime
