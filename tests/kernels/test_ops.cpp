// The RoPE table path used by the forward pass against the one-step rope(),
// and rope() against the closed form on a hand-checked case; the branch-free
// exp and SwiGLU against double-precision formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/fast_math.h"
#include "kernels/ops.h"

namespace oscar::kernels {
namespace {

TEST(Rope, TableMatchesOneStepForBothStyles) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (bool neox : {false, true})
    for (int dim : {8, 64, 128})
      for (int pos : {0, 1, 17, 40000}) {
        std::vector<float> a((size_t)dim), b;
        for (auto& x : a) x = nd(rng);
        b = a;
        rope(a.data(), dim, pos, 1000000.0f, neox);
        std::vector<float> cs((size_t)dim);
        rope_table(dim, pos, 1000000.0f, cs.data());
        rope_apply(b.data(), dim, cs.data(), neox);
        for (int i = 0; i < dim; ++i) ASSERT_EQ(a[(size_t)i], b[(size_t)i]) << neox << " " << dim << " " << pos;
      }
}

TEST(Rope, PairsAndAngleFollowTheDefinition) {
  // pos 3, dim 4, base 100: pair 0 angle 3, pair 1 angle 3 * 100^(-1/2) = 0.3.
  std::vector<float> x = {1, 0, 0, 1};
  rope(x.data(), 4, 3, 100.0f, /*neox=*/false);  // pairs (0,1), (2,3)
  EXPECT_NEAR(x[0], std::cos(3.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(0.3), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.3), 1e-6);
  std::vector<float> y = {1, 0, 0, 1};
  rope(y.data(), 4, 3, 100.0f, /*neox=*/true);  // pairs (0,2), (1,3)
  EXPECT_NEAR(y[0], std::cos(3.0), 1e-6);
  EXPECT_NEAR(y[2], std::sin(3.0), 1e-6);
  EXPECT_NEAR(y[1], -std::sin(0.3), 1e-6);
  EXPECT_NEAR(y[3], std::cos(0.3), 1e-6);
}

// Relative error of `got` against the double `want`, with an absolute floor
// for values that are themselves tiny.
double rel_err(float got, double want) { return std::fabs(got - want) / std::max(std::fabs(want), 1e-30); }

TEST(ExpApprox, WithinAFewUlpOverTheWholeRange) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.001) {
    const float xf = (float)x;
    worst = std::max(worst, rel_err(exp_approx(xf), std::exp((double)xf)));
  }
  EXPECT_LT(worst, 4e-7);  // a few float ulp (2^-23 = 1.2e-7)
  EXPECT_EQ(exp_approx(0.0f), 1.0f);
  // Clamped, not 0 or inf, beyond the range; NaN stays NaN.
  EXPECT_GT(exp_approx(-1000.0f), 0.0f);
  EXPECT_LT(exp_approx(-1000.0f), 1e-37f);
  EXPECT_TRUE(std::isfinite(exp_approx(1000.0f)));
  EXPECT_GT(exp_approx(1000.0f), 1e38f);
  EXPECT_TRUE(std::isnan(exp_approx(NAN)));
}

TEST(ExpApprox, TanhKeepsRelativePrecisionNearZeroAndSaturates) {
  double worst = 0;
  for (double x = -12.0; x <= 12.0; x += 0.0007) worst = std::max(worst, rel_err(tanh_approx((float)x), std::tanh((double)(float)x)));
  for (double x = 1e-6; x < 0.1; x *= 1.01) worst = std::max(worst, rel_err(tanh_approx((float)x), std::tanh((double)(float)x)));
  EXPECT_LT(worst, 1e-6);
  EXPECT_EQ(tanh_approx(100.0f), 1.0f);
  EXPECT_EQ(tanh_approx(-100.0f), -1.0f);
  EXPECT_EQ(tanh_approx(0.0f), 0.0f);
}

TEST(Swiglu, MatchesTheDoubleFormulaAtEveryLength) {
  // Lengths around the vector widths, so the vectorised body and its scalar
  // tail are both checked; values from -100 to 100, where exp(-g) overflows.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> ud(-100.0f, 100.0f);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (size_t n : {1, 7, 8, 9, 16, 31, 3072}) {
    std::vector<float> g(n), u(n), out(n);
    for (size_t i = 0; i < n; ++i) {
      g[i] = i % 3 == 0 ? ud(rng) : nd(rng);
      u[i] = nd(rng);
    }
    swiglu(g.data(), u.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double want = (double)g[i] / (1.0 + std::exp(-(double)g[i])) * u[i];
      ASSERT_NEAR(out[i], want, 1e-6 * std::fabs(want) + 1e-30) << "n " << n << " g " << g[i];
    }
  }
  // In place (out aliases gate), as the forward pass calls it.
  std::vector<float> g = {-3.0f, 0.0f, 2.5f}, u = {1.0f, 5.0f, -2.0f};
  swiglu(g.data(), u.data(), g.data(), g.size());
  EXPECT_NEAR(g[0], -3.0 / (1.0 + std::exp(3.0)), 1e-7);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_NEAR(g[2], 2.5 / (1.0 + std::exp(-2.5)) * -2.0, 1e-6);
}

TEST(RmsNorm, MatchesTheDoubleFormulaAtEveryLength) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (int n : {1, 5, 8, 13, 64, 1023, 1024}) {
    std::vector<float> x((size_t)n), w((size_t)n), y((size_t)n);
    for (int i = 0; i < n; ++i) x[(size_t)i] = nd(rng), w[(size_t)i] = nd(rng);
    double ss = 0;
    for (float v : x) ss += (double)v * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
    for (int i = 0; i < n; ++i) {
      const double want = x[(size_t)i] * inv * w[(size_t)i];
      ASSERT_NEAR(y[(size_t)i], want, 1e-6 * std::fabs(want) + 1e-12) << "n " << n << " i " << i;
    }
    EXPECT_NEAR(sum_squares(x.data(), n), ss, 1e-12 * ss);
  }
}

}  // namespace
}  // namespace oscar::kernels
