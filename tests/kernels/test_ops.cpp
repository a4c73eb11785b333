// The RoPE table path used by the forward pass against the one-step rope(),
// and rope() against the closed form on a hand-checked case.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace oscar::kernels
