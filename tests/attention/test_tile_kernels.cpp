// The prompt-tile kernels (tile_kernels.h): the SIMD set against the scalar
// reference set, and the reference against sums in double computed here, on
// the shapes prompt tiles use (block rows x head dim, 16 or 32 lanes) and on
// odd ones (row counts that leave every pass remainder, strided operands).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention/attention_kernels.h"
#include "attention/tile_kernels.h"
#include "core/cpu_features.h"

namespace oscar::attention::detail {
namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  return x;
}

// c = (acc ? c : 0) + A b with A(r, k) = a[r * sa + k * sk], in double.
std::vector<double> gemm_double(const std::vector<float>& a, size_t sa, size_t sk, int m, int kk,
                                const std::vector<float>& b, size_t ldb, int lanes, const std::vector<float>& c,
                                size_t ldc, bool acc) {
  std::vector<double> out((size_t)m * ldc, 0.0);
  for (int r = 0; r < m; ++r)
    for (int l = 0; l < lanes; ++l) {
      double s = acc ? c[(size_t)r * ldc + l] : 0.0;
      for (int k = 0; k < kk; ++k) s += (double)a[(size_t)r * sa + (size_t)k * sk] * b[(size_t)k * ldb + l];
      out[(size_t)r * ldc + l] = s;
    }
  return out;
}

TEST(TileKernels, GemmMatchesDoubleForEveryShape) {
  const TileKernels* simd = AttentionKernels(detect_cpu()).tile;  // null without AVX-512
  std::mt19937 rng(7);
  for (int nv : {1, 2})
    for (int m : {1, 7, 8, 12, 13, 32, 128})
      for (int kk : {1, 5, 32, 128})
        for (bool transposed : {false, true})  // A read along rows (scores) or down columns (value sums)
          for (bool acc : {false, true}) {
            const int lanes = 16 * nv;
            const size_t ldb = (size_t)lanes + 16, ldc = (size_t)lanes + 16;  // padded rows
            const size_t sa = transposed ? 1 : (size_t)kk + 3, sk = transposed ? (size_t)m + 5 : 1;
            const auto a = random_floats((size_t)std::max((size_t)m * sa, (size_t)kk * sk) + 8, rng);
            const auto b = random_floats((size_t)kk * ldb, rng);
            const auto c0 = random_floats((size_t)m * ldc, rng);
            const auto want = gemm_double(a, sa, sk, m, kk, b, ldb, lanes, c0, ldc, acc);
            std::vector<const TileKernels*> sets = {&reference_tile_kernels()};
            if (simd) sets.push_back(simd);
            for (const TileKernels* k : sets) {
              std::vector<float> c = c0;
              k->gemm(a.data(), sa, sk, m, kk, b.data(), ldb, nv, c.data(), ldc, acc,
                      reinterpret_cast<const uint8_t*>(b.data()), b.size() * sizeof(float));
              for (int r = 0; r < m; ++r)
                for (size_t l = 0; l < ldc; ++l) {
                  const size_t i = (size_t)r * ldc + l;
                  if ((int)l >= lanes) {  // padding past the lanes is never written
                    ASSERT_EQ(c[i], c0[i]);
                    continue;
                  }
                  ASSERT_NEAR(c[i], want[i], 1e-5 * (1.0 + std::sqrt((double)kk)) * 4)
                      << (k == simd ? "simd" : "reference") << " nv " << nv << " m " << m << " kk " << kk
                      << " transposed " << transposed << " acc " << acc << " r " << r << " l " << l;
                }
            }
          }
}

// One softmax step on lanes in every state: seen nothing yet, scores all
// masked (-inf), a maximum that moves, one that stays.
TEST(TileKernels, SoftmaxStepMatchesDoubleAndKeepsEmptyLanesZero) {
  const TileKernels* simd = AttentionKernels(detect_cpu()).tile;  // null without AVX-512
  std::mt19937 rng(11);
  for (int nv : {1, 2})
    for (int n : {1, 9, 32}) {
      const int lanes = 16 * nv, d = 24;
      auto s0 = random_floats((size_t)n * lanes, rng);
      std::vector<float> m0((size_t)lanes), l0((size_t)lanes);
      auto acc0 = random_floats((size_t)d * lanes, rng);
      for (int x = 0; x < lanes; ++x) {
        switch (x % 4) {
          case 0:  // nothing seen: m -inf, l 0, acc 0
            m0[(size_t)x] = -INFINITY, l0[(size_t)x] = 0.0f;
            for (int i = 0; i < d; ++i) acc0[(size_t)i * lanes + x] = 0.0f;
            break;
          case 1:  // the whole block masked too
            m0[(size_t)x] = -INFINITY, l0[(size_t)x] = 0.0f;
            for (int i = 0; i < d; ++i) acc0[(size_t)i * lanes + x] = 0.0f;
            for (int j = 0; j < n; ++j) s0[(size_t)j * lanes + x] = -INFINITY;
            break;
          case 2:  // the block raises the maximum
            m0[(size_t)x] = -3.0f, l0[(size_t)x] = 2.5f;
            break;
          default:  // the maximum stays; some rows masked
            m0[(size_t)x] = 9.0f, l0[(size_t)x] = 1.5f;
            s0[(size_t)x] = -INFINITY;
        }
      }
      std::vector<const TileKernels*> sets = {&reference_tile_kernels()};
      if (simd) sets.push_back(simd);
      for (const TileKernels* k : sets) {
        auto s = s0, m = m0, l = l0, acc = acc0;
        k->softmax(s.data(), n, nv, m.data(), l.data(), acc.data(), d);
        for (int x = 0; x < lanes; ++x) {
          double mx = m0[(size_t)x];
          for (int j = 0; j < n; ++j) mx = std::max(mx, (double)s0[(size_t)j * lanes + x]);
          const double corr = std::isinf(mx) ? 0.0 : std::exp((double)m0[(size_t)x] - mx);
          double sum = 0;
          for (int j = 0; j < n; ++j) {
            const double sv = s0[(size_t)j * lanes + x];
            const double p = std::isinf(sv) ? 0.0 : std::exp(sv - mx);
            ASSERT_NEAR(s[(size_t)j * lanes + x], p, 1e-6 * (1 + p)) << "lane " << x << " row " << j;
            sum += p;
          }
          ASSERT_EQ(m[(size_t)x], (float)mx) << "lane " << x;
          ASSERT_NEAR(l[(size_t)x], l0[(size_t)x] * corr + sum, 1e-5 * (1 + sum)) << "lane " << x;
          for (int i = 0; i < d; ++i) {
            const double want = acc0[(size_t)i * lanes + x] * corr;
            ASSERT_FALSE(std::isnan(acc[(size_t)i * lanes + x])) << "lane " << x;
            ASSERT_NEAR(acc[(size_t)i * lanes + x], want, 1e-6 * (1 + std::fabs(want))) << "lane " << x;
          }
        }
      }
    }
}

}  // namespace
}  // namespace oscar::attention::detail
