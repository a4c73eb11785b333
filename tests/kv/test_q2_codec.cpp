// The q2_0 KV row codec against docs/OSCAR.md (§2, "The q2_0 row codec") and the
// layout of src/kv/q2_codec.h. Expected values come from the independent
// reference in q2_ref.h or are worked out by hand, never from the codec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "kv/cache_type.h"
#include "kv/q2_codec.h"
#include "q2_ref.h"
#include "quant/quant.h"

namespace oscar::kv {
namespace {

using kvtest::f16r;
using kvtest::q2_row_mismatch;
using kvtest::ref_from_f16;
using kvtest::ref_to_f16;

std::vector<float> random_row(std::mt19937& rng, int d, float scale = 1.0f, int outliers = 0) {
  std::normal_distribution<float> n(0.0f, scale);
  std::vector<float> x((size_t)d);
  for (float& v : x) v = n(rng);
  std::uniform_int_distribution<int> pick(0, d - 1);
  for (int i = 0; i < outliers; ++i) x[(size_t)pick(rng)] *= 25.0f;
  return x;
}

std::vector<uint8_t> encode(const std::vector<float>& x, Q2Params p) {
  std::vector<uint8_t> out(q2_row_bytes((int)x.size(), p), 0xCD);
  static const Q2Encoder encoder(detect_cpu());  // this CPU's, as a cache built at startup has
  encoder(x.data(), out.data(), (int)x.size(), p);
  return out;
}

std::vector<float> decode(const std::vector<uint8_t>& row, int d, Q2Params p) {
  std::vector<float> out((size_t)d, NAN);
  q2_decode(row.data(), out.data(), d, p);
  return out;
}

// ---- sizes ---------------------------------------------------------------

TEST(Q2Codec, RowBytesAndBitsPerValue) {
  EXPECT_EQ(q2_row_bytes(128, {}), 36u);  // 2 + 2 + 32
  EXPECT_DOUBLE_EQ(8.0 * (double)q2_row_bytes(128, {}) / 128.0, 2.25);
  EXPECT_EQ(q2_row_bytes(128, {0.0f, 128}), 36u);
  EXPECT_EQ(q2_row_bytes(128, {0.0f, 32}), 4u * (4 + 8));
  EXPECT_EQ(q2_row_bytes(64, {}), 4u + 16);
  EXPECT_EQ(q2_row_bytes(512, {}), 4u + 128);
  EXPECT_EQ(q2_row_bytes(8, {0.0f, 4}), 2u * (4 + 1));
  EXPECT_EQ(q2_group(128, {}), 128);
  EXPECT_EQ(q2_group(128, {0.0f, 16}), 16);
}

TEST(Q2Codec, GroupValidity) {
  EXPECT_TRUE(q2_valid(128, {}));
  for (int g : {4, 8, 16, 32, 64, 128}) EXPECT_TRUE(q2_valid(128, {0.0f, g})) << g;
  EXPECT_FALSE(q2_valid(128, {0.0f, 2}));   // < 4
  EXPECT_FALSE(q2_valid(128, {0.0f, 6}));   // not a multiple of 4
  EXPECT_FALSE(q2_valid(128, {0.0f, 48}));  // does not divide d
  EXPECT_FALSE(q2_valid(128, {0.0f, 256})); // larger than d
  EXPECT_FALSE(q2_valid(6, {}));            // g = d = 6
  const quant::QuantTable table(detect_cpu());
  EXPECT_THROW(RowCodec(CacheType::Q2_0, 128, table, {0.0f, 48}), Error);
  EXPECT_THROW(RowCodec(CacheType::Q2_0, 130, table, {}), Error);
  const RowCodec c(CacheType::Q2_0, 128, table, {0.96f, 32});
  EXPECT_EQ(c.row_bytes(), 48u);
  EXPECT_EQ(c.q2_group_size(), 32);
}

// ---- byte layout -----------------------------------------------------------

// d = g = 8: [s=0.5 as f16 0x3800][lo=-1 as f16 0xBC00][2 code bytes]. Byte j
// holds values j, j+2, j+4, j+6 in bits 0-1, 2-3, 4-5, 6-7.
TEST(Q2Codec, HandBuiltRowDecodes) {
  const uint8_t row[6] = {0x00, 0x38, 0x00, 0xBC,
                          (uint8_t)(1 | 2 << 2 | 3 << 4 | 0 << 6),   // v0=1 v2=2 v4=3 v6=0
                          (uint8_t)(3 | 0 << 2 | 1 << 4 | 2 << 6)};  // v1=3 v3=0 v5=1 v7=2
  const float want[8] = {-0.5f, 0.5f, 0.0f, -1.0f, 0.5f, -0.5f, -1.0f, 0.0f};
  float got[8];
  q2_decode(row, got, 8, {});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], want[i]) << i;
  // Encoding those values gives back the same bytes.
  const auto enc = encode(std::vector<float>(want, want + 8), {});
  EXPECT_EQ(std::vector<uint8_t>(enc.begin(), enc.end()), std::vector<uint8_t>(row, row + 6));
}

// Two groups of 8 at d = 16: the second group's header follows the first
// group's codes; codes are per group.
TEST(Q2Codec, HandBuiltTwoGroups) {
  // group 0: s = 2 (0x4000), lo = 1 (0x3C00); group 1: s = 0.25 (0x3400), lo = -3 (0xC200)
  const uint8_t row[12] = {0x00, 0x40, 0x00, 0x3C, 0xE4 /*0,1,2,3*/, 0x1B /*3,2,1,0*/,
                           0x00, 0x34, 0x00, 0xC2, 0x55 /*1,1,1,1*/, 0xFF /*3,3,3,3*/};
  const float want[16] = {1, 7, 3, 5, 5, 3, 7, 1,                       // lo + 2*code
                          -2.75f, -2.25f, -2.75f, -2.25f, -2.75f, -2.25f, -2.75f, -2.25f};
  float got[16];
  q2_decode(row, got, 16, {0.0f, 8});
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], want[i]) << i;
  const auto enc = encode(std::vector<float>(want, want + 16), {0.0f, 8});
  // Group 1's min is -2.75 (not -3) once encoded from its values, so compare group 0 only.
  EXPECT_EQ(std::vector<uint8_t>(enc.begin(), enc.begin() + 6), std::vector<uint8_t>(row, row + 6));
}

// Value i of a group of 128 lands in byte i % 32 at bits 2*(i / 32).
TEST(Q2Codec, QuarterInterleavingAtD128) {
  std::vector<float> x(128);
  // lo = 0, hi = 3: s = 1, codes = the values.
  for (int i = 0; i < 128; ++i) x[(size_t)i] = (float)((i * 7 + i / 32) % 4);
  x[0] = 0.0f;
  x[1] = 3.0f;
  const auto row = encode(x, {});
  ASSERT_EQ(row.size(), 36u);
  EXPECT_EQ(row[0] | row[1] << 8, 0x3C00);  // s = 1
  EXPECT_EQ(row[2] | row[3] << 8, 0x0000);  // lo = 0
  for (int i = 0; i < 128; ++i) EXPECT_EQ((row[4 + i % 32] >> (2 * (i / 32))) & 3, (int)x[(size_t)i]) << i;
}

// ---- code boundaries ----------------------------------------------------

// lo = 0, hi = 3 gives s = 1 exactly: values at k are code k, halfway points
// round half to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2), one ulp either side of a
// halfway point goes to the nearer code.
TEST(Q2Codec, ExactBoundariesUnitStep) {
  const float probe[] = {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, 1.5f, 2.5f,
                         std::nextafter(0.5f, 0.0f), std::nextafter(0.5f, 1.0f),
                         std::nextafter(1.5f, 0.0f), std::nextafter(1.5f, 2.0f),
                         std::nextafter(2.5f, 0.0f), std::nextafter(2.5f, 3.0f)};
  const int want[] = {0, 1, 2, 3, 0, 2, 2, 0, 1, 1, 2, 2, 3};
  for (size_t t = 0; t < std::size(probe); ++t) {
    std::vector<float> x(8, 0.0f);
    x[1] = 3.0f;
    x[5] = probe[t];
    const auto row = encode(x, {});
    EXPECT_EQ(row[4 + 5 % 2] >> (2 * (5 / 2)) & 3, want[t]) << "value " << probe[t];
    EXPECT_EQ(decode(row, 8, {})[5], (float)want[t]);
  }
}

// The same with a non-power-of-two step and an offset lo: every value
// lo + k*s, lo + (k+1/2)*s and the floats either side of those, against the
// rule computed in double with the stored f16 s and lo.
TEST(Q2Codec, ExactBoundariesManySteps) {
  int checked = 0;
  for (uint16_t sh = 0x0400; sh < 0x7400; sh += 37) {
    const float s = ref_from_f16(sh);
    for (float lo : {0.0f, -1.5f * s, 2.0f * s, -100.0f * s}) {
      if (f16r(lo) != lo || !std::isfinite(lo + 3 * s)) continue;
      // Only groups whose stored s is exactly s: (hi - lo)/3 must round back to s.
      const float hi = lo + 3 * s;
      if ((double)hi - lo != 3.0 * s) continue;
      for (int k = 0; k <= 3; ++k)
        for (double frac : {0.0, 0.5}) {
          const float c = (float)(lo + (k + frac) * (double)s);
          if ((double)c != lo + (k + frac) * (double)s || c > hi) continue;
          for (float v : {c, std::nextafter(c, -INFINITY), std::nextafter(c, INFINITY)}) {
            std::vector<float> x(8, lo);
            x[2] = hi;
            x[7] = v;
            if (v < lo || v > hi) continue;
            const auto row = encode(x, {});
            ASSERT_EQ(row[0] | row[1] << 8, sh);
            const std::string bad = q2_row_mismatch(row.data(), x, 8);
            EXPECT_EQ(bad, "") << "s=" << s << " lo=" << lo << " v=" << v;
            if (!bad.empty()) return;
            ++checked;
          }
        }
    }
  }
  EXPECT_GT(checked, 1000);
}

// One float ulp below lo + (k + 1/2) s is nearer to code k, one above to
// code k + 1, for every normal f16 step s (a reciprocal-multiply shortcut
// rounds some of the values just below up).
TEST(Q2Codec, JustBelowHalfwayRoundsDown) {
  int checked = 0;
  for (uint16_t sh = 0x0400; sh < 0x7000; ++sh) {
    const float s = ref_from_f16(sh);
    for (int k = 0; k < 3; ++k) {
      const float half = (float)((k + 0.5) * s);  // exact: 14 significant bits
      const float below = std::nextafter(half, 0.0f), above = std::nextafter(half, INFINITY);
      std::vector<float> x = {0.0f, 3 * s, below, above, half, 0.0f, 0.0f, 0.0f};
      const auto row = encode(x, {});
      const int c_below = row[4 + 0] >> 2 & 3;  // value 2: byte 0, bits 2-3
      const int c_above = row[4 + 1] >> 2 & 3;  // value 3: byte 1, bits 2-3
      const int c_half = row[4 + 0] >> 4 & 3;   // value 4: byte 0, bits 4-5
      ASSERT_EQ(c_below, k) << "s=" << s << " x=" << below;
      ASSERT_EQ(c_above, k + 1) << "s=" << s << " x=" << above;
      ASSERT_EQ(c_half, (k % 2 == 0) ? k : k + 1) << "s=" << s;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// ---- round trip -------------------------------------------------------------

// Error per value <= s/2 (s the stored f16 step of the clipped group), plus the
// f16 rounding of lo and s at the ends of the range.
void check_round_trip(const std::vector<float>& x, Q2Params p, int rank) {
  const int d = (int)x.size(), g = q2_group(d, p);
  const auto row = encode(x, p);
  const auto y = decode(row, d, p);
  const std::vector<float> xc = rank < 0 ? x : kvtest::ref_clip(x, rank);
  ASSERT_EQ(q2_row_mismatch(row.data(), xc, g), "");
  const uint8_t* gr = row.data();
  for (int g0 = 0; g0 < d; g0 += g, gr += 4 + g / 4) {
    const double s = ref_from_f16((uint16_t)(gr[0] | gr[1] << 8)), l = ref_from_f16((uint16_t)(gr[2] | gr[3] << 8));
    double lo = xc[(size_t)g0], hi = lo;
    for (int i = 0; i < g; ++i) {
      lo = std::min(lo, (double)xc[(size_t)(g0 + i)]);
      hi = std::max(hi, (double)xc[(size_t)(g0 + i)]);
    }
    const double bound = s / 2 + std::fabs(lo - l) + 3 * std::fabs((hi - lo) / 3 - s) + 1e-6 * std::max(std::fabs(lo), std::fabs(hi));
    EXPECT_LE(s, (hi - lo) / 3 * (1 + 1.0 / 1024) + 1e-7);
    for (int i = g0; i < g0 + g; ++i) {
      ASSERT_LE(std::fabs((double)y[(size_t)i] - xc[(size_t)i]), bound) << "i=" << i << " g=" << g;
      // Decoded values are lo + s*code.
      const int code = (gr[4 + (i - g0) % (g / 4)] >> (2 * ((i - g0) / (g / 4)))) & 3;
      ASSERT_NEAR(y[(size_t)i], l + s * code, 1e-6 * (std::fabs(l) + 3 * s));
    }
  }
}

TEST(Q2Codec, RoundTripAllGroupSizes) {
  std::mt19937 rng(1234);
  for (int d : {64, 128, 256, 512})
    for (int g = 4; g <= d; g *= 2)
      for (int trial = 0; trial < 4; ++trial) {
        const auto x = random_row(rng, d, trial == 3 ? 1e-3f : 2.0f, trial);
        check_round_trip(x, {0.0f, g}, -1);
      }
  // Non power-of-two group sizes and dims.
  for (auto [d, g] : {std::pair{96, 12}, {96, 24}, {80, 20}, {12, 12}, {4, 4}}) {
    const auto x = random_row(rng, d);
    check_round_trip(x, {0.0f, g}, -1);
  }
}

TEST(Q2Codec, RoundTripWithClipping) {
  std::mt19937 rng(99);
  for (int d : {64, 128, 256, 512})
    for (int permille : {960, 920, 500, 1000})
      for (int g : {32, d}) {
        const auto x = random_row(rng, d, 1.0f, 4);
        check_round_trip(x, {permille / 1000.0f, g}, kvtest::rank_permille(permille, d));
      }
}

TEST(Q2Codec, ConstantRows) {
  for (float c : {0.0f, 1.0f, -3.25f, 0.1f, 1000.3f, -1e-6f}) {
    for (auto p : {Q2Params{}, Q2Params{0.96f, 0}, Q2Params{0.0f, 4}}) {
      const std::vector<float> x(128, c);
      const auto row = encode(x, p);
      const auto y = decode(row, 128, p);
      for (int i = 0; i < 128; ++i) ASSERT_EQ(y[(size_t)i], f16r(c)) << c;
      EXPECT_EQ(row[0] | row[1] << 8, 0);  // s = 0
      EXPECT_EQ(q2_row_mismatch(row.data(), x, q2_group(128, p)), "");
    }
  }
  // A group constant inside a non-constant row.
  std::vector<float> x(16, 2.0f);
  for (int i = 8; i < 16; ++i) x[(size_t)i] = (float)(i - 8);
  const auto y = decode(encode(x, {0.0f, 8}), 16, {0.0f, 8});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[(size_t)i], 2.0f);
}

// ---- clipping rank ----------------------------------------------------------

TEST(Q2Codec, ClipThresholdRank) {
  // |x| sorted: 0 0.5 1 1 2 3 3 3 4 7 (0-based ranks 0..9); signs mixed.
  const std::vector<float> x = {3, -1, 0.5f, -3, 7, 1, -0.0f, 2, 3, -4};
  const float want_by_rank[] = {0, 0.5f, 1, 1, 2, 3, 3, 3, 4, 7};
  for (int r = 0; r < 10; ++r) {
    // ratio chosen so that floor(ratio * 10) = r unambiguously
    EXPECT_EQ(q2_clip_threshold(x.data(), 10, (r + 0.5f) / 10.0f), want_by_rank[r]) << r;
  }
  EXPECT_EQ(q2_clip_threshold(x.data(), 10, 1.0f), 7.0f);   // rank d capped at d-1
  EXPECT_EQ(q2_clip_threshold(x.data(), 10, 0.0f), 0.0f);   // rank 0 (encode skips clipping at 0)
  EXPECT_EQ(q2_clip_threshold(x.data(), 10, 0.59f), 3.0f);  // floor(5.9) = 5, a tie of three 3s
}

// floor(ratio * d) of the ratio the user wrote, not of its float rounding:
// 0.35 * 20 = 7 (0.35f is 0.3499999940..., whose product with 20 is just
// under 7), 0.9 * 80 = 72, 0.96 * 100 = 96; 0.96 * 128 = 122.88 -> 122.
TEST(Q2Codec, ClipRankRoundingOfRatioTimesD) {
  struct Case {
    int d, permille;
  };
  for (Case c : {Case{20, 350}, {80, 900}, {100, 960}, {128, 960}, {128, 920}, {64, 960}, {96, 920},
                 {40, 700}, {10, 700}, {30, 100}, {60, 300}}) {
    std::vector<float> x((size_t)c.d);
    for (int i = 0; i < c.d; ++i) x[(size_t)i] = (float)((i * 37) % c.d + 1) * (i % 2 ? -1.0f : 1.0f);
    // |x| is a permutation of 1..d: the rank-r value is r + 1.
    const int r = std::min(c.permille * c.d / 1000, c.d - 1);
    EXPECT_EQ(q2_clip_threshold(x.data(), c.d, (float)c.permille / 1000.0f), (float)(r + 1))
        << "d=" << c.d << " ratio=" << c.permille / 1000.0;
  }
}

// Against a full sort, over random rows with many ties and every rank the
// ratio can give (the kept-top list for the high ranks, a selection below).
TEST(Q2Codec, ClipThresholdMatchesSortedRank) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 2000; ++trial) {
    const int d = 4 + (int)(rng() % 253);
    std::vector<float> x((size_t)d);
    const int levels = 1 + (int)(rng() % 20);  // few levels: ties everywhere
    for (auto& v : x) v = (float)((int)(rng() % (2 * levels + 1)) - levels) * 0.25f;
    const float ratio = (float)(rng() % 1001) / 1000.0f;
    std::vector<float> a((size_t)d);
    for (int i = 0; i < d; ++i) a[(size_t)i] = std::fabs(x[(size_t)i]);
    std::sort(a.begin(), a.end());
    const int k = std::clamp((int)std::floor((double)ratio * d * (1.0 + 1e-6)), 0, d - 1);
    ASSERT_EQ(q2_clip_threshold(x.data(), d, ratio), a[(size_t)k]) << "d " << d << " ratio " << ratio;
  }
}

TEST(Q2Codec, ClippingClampsBothSides) {
  // |x| = 1..128 in some order with alternating signs: at 0.96 the rank is
  // 122, t = 123, so |x| > 123 is clamped to ±123 before the range is taken.
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i) x[(size_t)i] = (float)((i * 45) % 128 + 1) * (i % 2 ? -1.0f : 1.0f);
  const auto row = encode(x, {0.96f, 0});
  const float lo = ref_from_f16((uint16_t)(row[2] | row[3] << 8));
  const float s = ref_from_f16((uint16_t)(row[0] | row[1] << 8));
  EXPECT_EQ(lo, -123.0f);
  EXPECT_EQ(s, f16r(246.0f / 3.0f));
  EXPECT_EQ(q2_row_mismatch(row.data(), kvtest::ref_clip(x, 122), 128), "");
  // ratio 0: no clipping, the full range.
  const auto row0 = encode(x, {0.0f, 0});
  EXPECT_EQ(ref_from_f16((uint16_t)(row0[2] | row0[3] << 8)), -128.0f);  // |x| = 128 sits at an odd i
  EXPECT_EQ(q2_row_mismatch(row0.data(), x, 128), "");
  // ratio 1: rank d capped at d-1 = the max |x|, nothing changes.
  EXPECT_EQ(encode(x, {1.0f, 0}), row0);
}

TEST(Q2Codec, ClippingWithTiesAndGroups) {
  // Many equal magnitudes: the threshold is the tied value, the clamp keeps them.
  std::vector<float> x(64, 0.25f);
  for (int i = 0; i < 64; i += 3) x[(size_t)i] = -0.25f;
  x[5] = 9.0f;
  x[40] = -8.0f;
  const auto row = encode(x, {0.92f, 16});
  EXPECT_EQ(q2_row_mismatch(row.data(), kvtest::ref_clip(x, kvtest::rank_permille(920, 64)), 16), "");
  const auto y = decode(row, 64, {0.92f, 16});
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(std::fabs(y[(size_t)i]), 0.25f, 1e-3f) << i;
}

// ---- the RowCodec wrapper -------------------------------------------------

TEST(Q2Codec, RowCodecUsesTheQ2Codec) {
  const quant::QuantTable table(detect_cpu());
  std::mt19937 rng(5);
  const auto x = random_row(rng, 128, 1.0f, 3);
  const RowCodec c(CacheType::Q2_0, 128, table, {0.92f, 64});
  std::vector<uint8_t> row(c.row_bytes());
  c.encode(x.data(), row.data());
  EXPECT_EQ(q2_row_mismatch(row.data(), kvtest::ref_clip(x, kvtest::rank_permille(920, 128)), 64), "");
  std::vector<float> y(128);
  c.decode(row.data(), y.data());
  const auto yr = kvtest::ref_decode(row.data(), 128, 64);
  for (int i = 0; i < 128; ++i) EXPECT_NEAR(y[(size_t)i], yr[(size_t)i], 1e-6f * (1 + std::fabs(yr[(size_t)i])));
  // f16 rows are exact f16 of the input.
  const RowCodec h(CacheType::F16, 128, table, {});
  EXPECT_EQ(h.row_bytes(), 256u);
  std::vector<uint8_t> hr(h.row_bytes());
  h.encode(x.data(), hr.data());
  for (int i = 0; i < 128; ++i) EXPECT_EQ(hr[(size_t)2 * i] | hr[(size_t)2 * i + 1] << 8, ref_to_f16(x[(size_t)i]));
}

TEST(Q2Codec, CacheTypeNames) {
  EXPECT_EQ(parse_cache_type("q2_0"), CacheType::Q2_0);
  EXPECT_EQ(parse_cache_type("Q2_0"), CacheType::Q2_0);
  EXPECT_EQ(parse_cache_type("bf16"), CacheType::BF16);
  EXPECT_STREQ(cache_type_name(CacheType::Q8_0), "q8_0");
  EXPECT_THROW(parse_cache_type("q3_0"), Error);
  EXPECT_THROW(parse_cache_type(""), Error);
  EXPECT_TRUE(is_quantized(CacheType::Q2_0));
  EXPECT_TRUE(is_quantized(CacheType::Q4_0));
  EXPECT_FALSE(is_quantized(CacheType::F16));
  EXPECT_FALSE(is_quantized(CacheType::BF16));
  EXPECT_FALSE(is_quantized(CacheType::F32));
}

}  // namespace
}  // namespace oscar::kv
