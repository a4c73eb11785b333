// The SIMD row kernels of the fused attention against a reference computed
// here in double precision from rows decoded by the codec (the definition of
// what a stored row means): q2_0 with several group sizes, f16 and f32, head
// dims 32..512, 1..9 query heads (tiles of 4 or 8 plus a remainder) and
// block lengths that are odd, even and longer than one accumulate tile.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention/row_kernels.h"
#include "attention/row_kernels_impl.h"
#include "core/cpu_features.h"
#include "kv/cache_type.h"
#include "quant/quant.h"

namespace oscar::attention {
namespace {

const quant::QuantTable& table() {
  static const quant::QuantTable t(detect_cpu());
  return t;
}

struct Rows {
  kv::RowCodec codec;
  std::vector<uint8_t> bytes;
  std::vector<float> decoded;  // (n, d)
  size_t stride;
};

Rows make_rows(kv::CacheType t, int d, int g, int n, std::mt19937& rng) {
  Rows r{kv::RowCodec(t, d, table(), kv::Q2Params{0.96f, g}), {}, {}, 0};
  r.stride = r.codec.row_bytes() + 3;  // rows need not be packed
  r.bytes.assign(r.stride * (size_t)n, 0xAB);
  r.decoded.resize((size_t)n * d);
  std::normal_distribution<float> nd(0.3f, 1.5f);
  std::vector<float> x((size_t)d);
  for (int j = 0; j < n; ++j) {
    for (auto& v : x) v = nd(rng);
    r.codec.encode(x.data(), &r.bytes[(size_t)j * r.stride]);
    r.codec.decode(&r.bytes[(size_t)j * r.stride], &r.decoded[(size_t)j * d]);
  }
  return r;
}

void check(kv::CacheType t, int d, int g, int heads, int n, std::mt19937& rng) {
  const Rows r = make_rows(t, d, g, n, rng);
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> q((size_t)heads * d);
  for (auto& v : q) v = nd(rng);
  const size_t stride = (size_t)n + 5;
  std::vector<float> scores((size_t)heads * stride, -7.0f), tmp((size_t)d);
  const GroupQuery gq{q.data(), heads, d};
  const float scale = 0.125f;
  score_rows(r.codec, r.bytes.data(), r.stride, n, gq, scale, scores.data(), stride, tmp.data());

  std::vector<float> p((size_t)heads * stride);
  for (auto& v : p) v = std::fabs(nd(rng));
  std::vector<float> acc((size_t)heads * d);
  for (auto& v : acc) v = nd(rng);
  const std::vector<float> acc0 = acc;
  accumulate_rows(r.codec, r.bytes.data(), r.stride, n, p.data(), stride, heads, acc.data(), tmp.data());

  const std::string where = "type " + std::to_string((int)t) + " d=" + std::to_string(d) + " g=" +
                            std::to_string(g) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int i = 0; i < d; ++i) {
        const double term = (double)q[(size_t)h * d + i] * r.decoded[(size_t)j * d + i];
        s += term;
        mag += std::fabs(term);
      }
      ASSERT_NEAR(scores[(size_t)h * stride + j], s * scale, 1e-5 * mag * scale + 1e-7) << where << " h=" << h << " j=" << j;
    }
    EXPECT_EQ(scores[(size_t)h * stride + n], -7.0f) << where << ": wrote past the block";
    for (int i = 0; i < d; ++i) {
      double a = acc0[(size_t)h * d + i], mag = std::fabs(a);
      for (int j = 0; j < n; ++j) {
        const double term = (double)p[(size_t)h * stride + j] * r.decoded[(size_t)j * d + i];
        a += term;
        mag += std::fabs(term);
      }
      ASSERT_NEAR(acc[(size_t)h * d + i], a, 1e-5 * mag + 1e-7) << where << " h=" << h << " i=" << i;
    }
  }
}

TEST(RowKernels, Q2MatchesDecodedRows) {
  std::mt19937 rng(5);
  for (int d : {32, 64, 128, 256, 512})
    for (int g : {4, 32, 64, d})
      if (g <= d && d % g == 0)
        for (int heads : {1, 2, 4, 5, 9})
          for (int n : {1, 2, 7, 32, 70}) check(kv::CacheType::Q2_0, d, g, heads, n, rng);
}

// The same 8-wide kernels are compiled for AVX2 (4 heads per call) and for
// AVX-512VL (8 heads per call). Each head's sums run in the same order in
// both, so every set this CPU has must give bit-identical results to the
// set the dispatch chose (which the tests above check against decoded rows).
TEST(RowKernels, EverySimdSetMatchesTheDispatchedOne) {
#if defined(OSCAR_X86)
  std::vector<std::pair<const char*, detail::RowKernels>> sets;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    sets.emplace_back("avx2", detail::avx2_row_kernels());
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
      sets.emplace_back("avx512", detail::avx512_row_kernels());
  }
  if (sets.empty()) GTEST_SKIP() << "no SIMD row kernels on this CPU";
  std::mt19937 rng(10);
  std::normal_distribution<float> nd(0, 1);
  for (kv::CacheType t : {kv::CacheType::F16, kv::CacheType::Q2_0})
    for (int d : {64, 512})
      for (int heads : {1, 3, 5, 8, 9})
        for (bool whole_row_groups : {false, true}) {
          if (t == kv::CacheType::F16 && whole_row_groups) continue;
          // q2 groups of 32 values, and one group per row (the default).
          const int n = 37, g = t == kv::CacheType::Q2_0 ? (whole_row_groups ? d : 32) : 0;
          const Rows r = make_rows(t, d, g, n, rng);
          std::vector<float> q((size_t)heads * d), p((size_t)heads * n), tmp((size_t)d);
          for (auto& v : q) v = nd(rng);
          for (auto& v : p) v = std::fabs(nd(rng));
          std::vector<float> want_s((size_t)heads * n), want_a((size_t)heads * d, 0.5f);
          const GroupQuery gq{q.data(), heads, d};
          score_rows(r.codec, r.bytes.data(), r.stride, n, gq, 0.25f, want_s.data(), n, tmp.data());
          accumulate_rows(r.codec, r.bytes.data(), r.stride, n, p.data(), n, heads, want_a.data(), tmp.data());
          const detail::RowBlock b{r.bytes.data(), r.stride, n, d, g};
          for (const auto& [name, k] : sets) {
            const auto score = t == kv::CacheType::F16 ? k.score_f16 : k.score_q2;
            const auto acc = t == kv::CacheType::F16 ? k.accumulate_f16 : k.accumulate_q2;
            std::vector<float> s((size_t)heads * n), a((size_t)heads * d, 0.5f);
            std::vector<float> scratch((size_t)detail::kMaxTileHeads * (detail::kMaxTileRows + 1) * detail::kMaxGroups);
            for (int h0 = 0; h0 < heads; h0 += k.max_heads) {
              const int hn = std::min(k.max_heads, heads - h0);
              score(b, q.data() + (size_t)h0 * d, hn, 0.25f, s.data() + (size_t)h0 * n, n);
              acc(b, p.data() + (size_t)h0 * n, n, hn, a.data() + (size_t)h0 * d, scratch.data());
            }
            const std::string where = std::string(name) + " type " + std::to_string((int)t) + " d=" + std::to_string(d) +
                                      " g=" + std::to_string(g) + " heads=" + std::to_string(heads);
            EXPECT_EQ(s, want_s) << where;
            EXPECT_EQ(a, want_a) << where;
          }
        }
  // f32 rows (the batch's own keys and values).
  for (int heads : {1, 5, 8, 9}) {
    const int d = 128, n = 29;
    std::vector<float> rows((size_t)n * d), q((size_t)heads * d), p((size_t)heads * n);
    for (auto& v : rows) v = nd(rng);
    for (auto& v : q) v = nd(rng);
    for (auto& v : p) v = std::fabs(nd(rng));
    std::vector<float> want_s((size_t)heads * n), want_a((size_t)heads * d, 0.5f);
    score_rows_f32(rows.data(), d, n, GroupQuery{q.data(), heads, d}, 0.25f, want_s.data(), n);
    accumulate_rows_f32(rows.data(), d, n, p.data(), n, heads, d, want_a.data());
    const detail::RowBlock b{reinterpret_cast<const uint8_t*>(rows.data()), d * sizeof(float), n, d, 0};
    for (const auto& [name, k] : sets) {
      std::vector<float> s((size_t)heads * n), a((size_t)heads * d, 0.5f);
      for (int h0 = 0; h0 < heads; h0 += k.max_heads) {
        const int hn = std::min(k.max_heads, heads - h0);
        k.score_f32(b, q.data() + (size_t)h0 * d, hn, 0.25f, s.data() + (size_t)h0 * n, n);
        k.accumulate_f32(b, p.data() + (size_t)h0 * n, n, hn, a.data() + (size_t)h0 * d, nullptr);
      }
      EXPECT_EQ(s, want_s) << name << " f32 heads=" << heads;
      EXPECT_EQ(a, want_a) << name << " f32 heads=" << heads;
    }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(RowKernels, F16MatchesDecodedRows) {
  std::mt19937 rng(6);
  for (int d : {8, 64, 128, 256, 512, 20})
    for (int heads : {1, 3, 4, 8})
      for (int n : {1, 2, 33, 65}) check(kv::CacheType::F16, d, 0, heads, n, rng);
}

// f32 rows (the batch's own keys and values) through score_rows_f32 /
// accumulate_rows_f32, rows spaced wider than d like a token's row of all KV
// heads, against double sums of the same floats.
TEST(RowKernels, F32RowsMatchDoubleSums) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.2f, 1.3f);
  for (int d : {8, 64, 128, 512, 20})
    for (int heads : {1, 2, 5, 8, 9})
      for (int n : {1, 2, 31, 32}) {
        const size_t rs = (size_t)d * 3 + 4;  // floats between rows
        std::vector<float> rows(rs * (size_t)n), q((size_t)heads * d), acc((size_t)heads * d);
        for (auto& v : rows) v = nd(rng);
        for (auto& v : q) v = nd(rng);
        for (auto& v : acc) v = nd(rng);
        const size_t stride = (size_t)n + 3;
        std::vector<float> scores((size_t)heads * stride, -7.0f), p((size_t)heads * stride);
        for (auto& v : p) v = std::fabs(nd(rng));
        const std::vector<float> acc0 = acc;
        score_rows_f32(rows.data(), rs, n, GroupQuery{q.data(), heads, d}, 0.5f, scores.data(), stride);
        accumulate_rows_f32(rows.data(), rs, n, p.data(), stride, heads, d, acc.data());
        const std::string where = "d=" + std::to_string(d) + " heads=" + std::to_string(heads) + " n=" + std::to_string(n);
        for (int h = 0; h < heads; ++h) {
          for (int j = 0; j < n; ++j) {
            double sum = 0, mag = 0;
            for (int i = 0; i < d; ++i) {
              const double t = (double)q[(size_t)h * d + i] * rows[(size_t)j * rs + i];
              sum += t;
              mag += std::fabs(t);
            }
            ASSERT_NEAR(scores[(size_t)h * stride + j], 0.5 * sum, 0.5 * 1e-5 * mag + 1e-7) << where;
          }
          EXPECT_EQ(scores[(size_t)h * stride + n], -7.0f) << where << ": wrote past the block";
          for (int i = 0; i < d; ++i) {
            double a = acc0[(size_t)h * d + i], mag = std::fabs(a);
            for (int j = 0; j < n; ++j) {
              const double t = (double)p[(size_t)h * stride + j] * rows[(size_t)j * rs + i];
              a += t;
              mag += std::fabs(t);
            }
            ASSERT_NEAR(acc[(size_t)h * d + i], a, 1e-5 * mag + 1e-7) << where << " h=" << h << " i=" << i;
          }
        }
      }
}

TEST(RowKernels, OtherTypesUseTheGenericPath) {
  std::mt19937 rng(7);
  for (auto t : {kv::CacheType::Q8_0, kv::CacheType::Q4_0, kv::CacheType::BF16, kv::CacheType::F32})
    check(t, 128, 0, 3, 9, rng);
}

TEST(RowKernels, ExpShiftedIsWithinAFewUlpOfStdExp) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-95.0f, 5.0f);
  for (int n : {1, 7, 8, 33, 1000}) {
    std::vector<float> s((size_t)n), p((size_t)n, -1.0f);
    for (auto& v : s) v = u(rng);
    if (n > 1) s[0] = -INFINITY;  // a masked score
    float m = -INFINITY;
    for (float v : s) m = std::max(m, v);
    const float sum = exp_shifted(s.data(), m, p.data(), n);
    double want_sum = 0;
    for (int j = 0; j < n; ++j) {
      const double want = std::exp((double)(s[(size_t)j] - m));  // the float difference, as the kernel forms it
      want_sum += want;
      // Results below float's normal range may flush to 0.
      ASSERT_NEAR(p[(size_t)j], want, 4e-7 * want + 1.2e-38) << "n=" << n << " s-m=" << s[(size_t)j] - m;
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << n;
  }
}

TEST(RowKernels, ShapesTheSimdKernelsTake) {
  EXPECT_TRUE(detail::simd8_q2(128, 128));
  EXPECT_TRUE(detail::simd8_q2(512, 32));
  EXPECT_FALSE(detail::simd8_q2(128, 16));   // quarters of 4 codes: not a whole chunk
  EXPECT_FALSE(detail::simd8_q2(1024, 32));  // more groups than the scratch holds
  EXPECT_TRUE(detail::simd8_float(64));
  EXPECT_FALSE(detail::simd8_float(20));
}

}  // namespace
}  // namespace oscar::attention
