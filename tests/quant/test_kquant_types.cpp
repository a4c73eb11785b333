// k-quant formats: hand-built super-blocks decode to hand-computed values
// (an independent check of the bit layouts), quantize -> dequantize error
// bounds, the Q8_K activation format, the scalar dot against a
// double-precision dot of the decoded rows, and the table rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {
namespace {

std::vector<float> deq(DequantizeRowFn f, const void* b, int n = 256) {
  std::vector<float> y((size_t)n);
  f(b, y.data(), n);
  return y;
}

// ---------------------------------------------------------------------------
// Hand-built blocks. Byte values of the packed scale fields were worked out
// by hand from the layout description, not by calling the packer.

TEST(KQuantLayout, Q4_K) {
  BlockQ4_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  // scales {1,2,3,4,33,45,50,63}, mins {0,1,2,3,17,20,40,63}
  const uint8_t packed[12] = {0x81, 0x82, 0xC3, 0xC4, 0x40, 0x41, 0x82, 0xC3, 0x11, 0x4D, 0x82, 0xFF};
  std::memcpy(b.scales, packed, 12);
  for (int x = 0; x < 128; ++x) b.qs[x] = (uint8_t)((x % 16) | ((15 - x % 16) << 4));
  const int sc[8] = {1, 2, 3, 4, 33, 45, 50, 63}, mn[8] = {0, 1, 2, 3, 17, 20, 40, 63};
  const auto y = deq(dequantize_q4_K, &b);
  for (int i = 0; i < 256; ++i) {
    const int c = i / 64, k = (i % 64) / 32, l = i % 32, byte = 32 * c + l;
    const int q = k == 0 ? byte % 16 : 15 - byte % 16;
    ASSERT_EQ(y[i], 1.0f * sc[2 * c + k] * q - 0.5f * mn[2 * c + k]) << i;
  }
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[33], 27.5f);
  EXPECT_EQ(y[100], 42.5f);
  EXPECT_EQ(y[150], 189.5f);
  EXPECT_EQ(y[200], 380.0f);
  EXPECT_EQ(y[255], -31.5f);
}

TEST(KQuantLayout, Q5_K) {
  BlockQ5_K b{};
  b.d = 0x3C00;
  b.dmin = 0x3800;
  const uint8_t packed[12] = {0x81, 0x82, 0xC3, 0xC4, 0x40, 0x41, 0x82, 0xC3, 0x11, 0x4D, 0x82, 0xFF};
  std::memcpy(b.scales, packed, 12);
  for (int x = 0; x < 128; ++x) b.qs[x] = (uint8_t)((x % 16) | ((15 - x % 16) << 4));
  for (int l = 0; l < 32; ++l) b.qh[l] = (uint8_t)(l * 37);
  const int sc[8] = {1, 2, 3, 4, 33, 45, 50, 63}, mn[8] = {0, 1, 2, 3, 17, 20, 40, 63};
  const auto y = deq(dequantize_q5_K, &b);
  for (int i = 0; i < 256; ++i) {
    const int c = i / 64, k = (i % 64) / 32, l = i % 32, byte = 32 * c + l;
    const int q = (k == 0 ? byte % 16 : 15 - byte % 16) + 16 * ((b.qh[l] >> (2 * c + k)) & 1);
    ASSERT_EQ(y[i], 1.0f * sc[2 * c + k] * q - 0.5f * mn[2 * c + k]) << i;
  }
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(y[33], 27.5f);
  EXPECT_EQ(y[34], 57.5f);
  EXPECT_EQ(y[200], 380.0f);
  EXPECT_EQ(y[228], 1669.5f);
  EXPECT_EQ(y[255], -31.5f);
}

TEST(KQuantLayout, Q6_K) {
  BlockQ6_K b{};
  b.d = 0x3400;  // 0.25
  for (int g = 0; g < 16; ++g) b.scales[g] = (int8_t)(g - 8);
  for (int x = 0; x < 128; ++x) b.ql[x] = (uint8_t)x;
  for (int x = 0; x < 64; ++x) b.qh[x] = (uint8_t)(3 * x);
  const auto y = deq(dequantize_q6_K, &b);
  EXPECT_EQ(y[0], 64.0f);
  EXPECT_EQ(y[40], -12.0f);
  EXPECT_EQ(y[70], 16.0f);
  EXPECT_EQ(y[127], 3.25f);
  EXPECT_EQ(y[200], 20.0f);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    const int lb = b.ql[64 * h + 32 * (j % 2) + l];
    const int q = (j < 2 ? lb % 16 : lb / 16) + 16 * ((b.qh[32 * h + l] >> (2 * j)) % 4);
    ASSERT_EQ(y[i], 0.25f * (float)(i / 16 - 8) * (float)(q - 32)) << i;
  }
}

TEST(KQuantLayout, Q3_K) {
  BlockQ3_K b{};
  b.d = 0x3800;  // 0.5
  // scales {-32,-31,-20,-1,0,1,2,3,5,7,11,13,17,19,29,31}, stored + 32
  const int s[16] = {-32, -31, -20, -1, 0, 1, 2, 3, 5, 7, 11, 13, 17, 19, 29, 31};
  const uint8_t packed[12] = {0x50, 0x71, 0xBC, 0xDF, 0x10, 0x31, 0xD2, 0xF3, 0xE8, 0xE8, 0xE8, 0xE9};
  std::memcpy(b.scales, packed, 12);
  for (int x = 0; x < 64; ++x) b.qs[x] = (uint8_t)(7 * x);
  for (int l = 0; l < 32; ++l) b.hmask[l] = (uint8_t)(11 * l);
  int8_t unpacked[16];
  kq_unpack_scales_q3(b.scales, unpacked);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(unpacked[j], s[j]) << j;
  const auto y = deq(dequantize_q3_K, &b);
  EXPECT_EQ(y[0], 64.0f);
  EXPECT_EQ(y[50], -1.5f);
  EXPECT_EQ(y[170], 5.5f);
  EXPECT_EQ(y[255], -31.0f);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, j = (i % 128) / 32, l = i % 32;
    const int q2 = (b.qs[32 * h + l] >> (2 * j)) & 3;
    const int hb = (b.hmask[l] >> (4 * h + j)) & 1;
    ASSERT_EQ(y[i], 0.5f * (float)s[i / 16] * (float)(q2 - (hb ? 0 : 4))) << i;
  }
}

TEST(KQuantLayout, Q2_K) {
  BlockQ2_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3400;  // 0.25
  for (int g = 0; g < 16; ++g) b.scales[g] = (uint8_t)(g | ((15 - g) << 4));
  for (int x = 0; x < 64; ++x) b.qs[x] = (uint8_t)(5 * x);
  const auto y = deq(dequantize_q2_K, &b);
  EXPECT_EQ(y[0], -3.75f);
  EXPECT_EQ(y[99], -2.25f);
  EXPECT_EQ(y[130], 14.25f);
  EXPECT_EQ(y[181], 21.0f);
  EXPECT_EQ(y[230], 27.75f);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, j = (i % 128) / 32, l = i % 32, g = i / 16;
    const int q = (b.qs[32 * h + l] >> (2 * j)) & 3;
    ASSERT_EQ(y[i], (float)g * q - 0.25f * (float)(15 - g)) << i;
  }
}

// The common decoded form used by every dot kernel must agree with the
// dequantizers on every value.
template <class Block>
void check_decoded_form(void (*decode)(const Block&, KqDecoded&), DequantizeRowFn dq, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> raw(sizeof(Block));
  for (auto& v : raw) v = (uint8_t)rng();
  Block b;
  std::memcpy(&b, raw.data(), sizeof b);
  // Keep the f16 scales finite and moderate.
  std::memcpy(&b, raw.data(), sizeof b);
  KqDecoded o;
  decode(b, o);
  if (!std::isfinite(o.d) || !std::isfinite(o.m)) return;
  const auto y = deq(dq, &b);
  for (int i = 0; i < 256; ++i) {
    const double want = (double)o.d * o.s[i / 16] * o.u[i] - (double)o.m * o.t[i / 16];
    ASSERT_NEAR(y[i], want, 1e-5 * (std::fabs(want) + std::fabs((double)o.m * o.t[i / 16]) + 1e-30))
        << i;
  }
}

TEST(KQuantLayout, DecodedFormMatchesDequantizer) {
  for (uint32_t seed = 1; seed < 40; ++seed) {
    check_decoded_form<BlockQ2_K>(kq_decode_q2_K, dequantize_q2_K, seed);
    check_decoded_form<BlockQ3_K>(kq_decode_q3_K, dequantize_q3_K, seed);
    check_decoded_form<BlockQ4_K>(kq_decode_q4_K, dequantize_q4_K, seed);
    check_decoded_form<BlockQ5_K>(kq_decode_q5_K, dequantize_q5_K, seed);
    check_decoded_form<BlockQ6_K>(kq_decode_q6_K, dequantize_q6_K, seed);
  }
}

// ---------------------------------------------------------------------------
// Round trips.

struct KType {
  const char* name;
  size_t bytes;
  QuantizeRowFn q;
  DequantizeRowFn dq;
  double max_rel_rmse;  // bound on rmse / rms for Gaussian data
};

const KType kTypes[] = {
    {"q2_K", sizeof(BlockQ2_K), quantize_q2_K, dequantize_q2_K, 0.40},
    {"q3_K", sizeof(BlockQ3_K), quantize_q3_K, dequantize_q3_K, 0.20},
    {"q4_K", sizeof(BlockQ4_K), quantize_q4_K, dequantize_q4_K, 0.11},
    {"q5_K", sizeof(BlockQ5_K), quantize_q5_K, dequantize_q5_K, 0.055},
    {"q6_K", sizeof(BlockQ6_K), quantize_q6_K, dequantize_q6_K, 0.025},
};

// Relative RMSE of the round trip of x.
double round_trip(const KType& t, const std::vector<float>& x, std::vector<float>* out = nullptr) {
  const int64_t n = (int64_t)x.size();
  std::vector<uint8_t> buf((size_t)(n / 256) * t.bytes);
  t.q(x.data(), buf.data(), n);
  std::vector<float> y((size_t)n);
  t.dq(buf.data(), y.data(), n);
  double se = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << t.name << " " << i;
    se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
    ss += (double)x[i] * x[i];
  }
  if (out) *out = y;
  return ss > 0 ? std::sqrt(se / ss) : std::sqrt(se / n);
}

std::vector<float> gaussian(int n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, scale);
  std::vector<float> x((size_t)n);
  for (auto& v : x) v = nd(rng);
  return x;
}

TEST(KQuantRoundTrip, GaussianWithinBoundAndOrdered) {
  const auto x = gaussian(256 * 64, 11);
  double prev = 1e9;
  for (const KType& t : kTypes) {
    const double e = round_trip(t, x);
    EXPECT_LT(e, t.max_rel_rmse) << t.name;
    EXPECT_LT(e, prev) << t.name << " should beat the type with fewer bits";
    prev = e;
    std::printf("%s: relative rmse %.4f\n", t.name, e);
  }
}

TEST(KQuantRoundTrip, EdgeCases) {
  for (const KType& t : kTypes) {
    SCOPED_TRACE(t.name);
    std::vector<float> y;
    // Zeros decode to exact zeros.
    EXPECT_EQ(round_trip(t, std::vector<float>(512, 0.0f), &y), 0.0);
    for (float v : y) EXPECT_EQ(v, 0.0f);
    // Constants (positive, negative) come back close.
    for (float c : {0.37f, -2.5f}) {
      EXPECT_LT(round_trip(t, std::vector<float>(512, c)), 0.02) << c;
    }
    // Large and small magnitudes: the error bound is relative.
    EXPECT_LT(round_trip(t, gaussian(1024, 5, 3000.0f)), t.max_rel_rmse);
    EXPECT_LT(round_trip(t, gaussian(1024, 6, 1e-3f)), t.max_rel_rmse);
    // All-positive data (mins at zero) and a skewed range.
    auto pos = gaussian(1024, 7);
    for (auto& v : pos) v = std::fabs(v) + 1.0f;
    EXPECT_LT(round_trip(t, pos), t.max_rel_rmse);
    // An outlier 100x the rest: it is kept, the rest stays finite.
    auto x = gaussian(512, 8);
    x[77] = 300.0f;
    round_trip(t, x, &y);
    EXPECT_NEAR(y[77], 300.0f, 300.0f * t.max_rel_rmse);
  }
}

// ---------------------------------------------------------------------------
// Q8_K activations.

TEST(KQuantQ8K, RoundTripAndBsums) {
  const auto x = gaussian(512, 3, 2.0f);
  std::vector<BlockQ8_K> a(2);
  quantize_q8_K(x.data(), a.data(), 512);
  std::vector<float> y(512);
  dequantize_q8_K(a.data(), y.data(), 512);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[256 * b + i]));
    EXPECT_FLOAT_EQ(a[b].d, amax / 127);
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += a[b].qs[16 * g + i];
      EXPECT_EQ(a[b].bsums[g], s);
    }
    for (int i = 0; i < 256; ++i) {
      EXPECT_GE(a[b].qs[i], -127);
      EXPECT_NEAR(y[256 * b + i], x[256 * b + i], 0.5f * a[b].d * 1.0001f);
    }
  }
  std::vector<float> z(256, 0.0f);
  quantize_q8_K(z.data(), a.data(), 256);
  EXPECT_EQ(a[0].d, 0.0f);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(a[0].qs[i], 0);
}

// ---------------------------------------------------------------------------
// Scalar dot against a double dot of the decoded rows.

struct DotCase {
  const char* name;
  size_t bytes;
  QuantizeRowFn q;
  DequantizeRowFn dq;
  DotTileFn dot;
};

const DotCase kDots[] = {
    {"q2_K", sizeof(BlockQ2_K), quantize_q2_K, dequantize_q2_K, dot_q2_K_ref},
    {"q3_K", sizeof(BlockQ3_K), quantize_q3_K, dequantize_q3_K, dot_q3_K_ref},
    {"q4_K", sizeof(BlockQ4_K), quantize_q4_K, dequantize_q4_K, dot_q4_K_ref},
    {"q5_K", sizeof(BlockQ5_K), quantize_q5_K, dequantize_q5_K, dot_q5_K_ref},
    {"q6_K", sizeof(BlockQ6_K), quantize_q6_K, dequantize_q6_K, dot_q6_K_ref},
};

TEST(KQuantDotRef, MatchesDoubleDotOfDecodedRows) {
  const int n = 256 * 5, nr = 3, nc = 4;
  for (const DotCase& t : kDots) {
    SCOPED_TRACE(t.name);
    const size_t wrow = (size_t)(n / 256) * t.bytes, arow = (n / 256) * sizeof(BlockQ8_K);
    std::vector<uint8_t> w(wrow * nr), a(arow * nc);
    std::vector<float> wf((size_t)n * nr), af((size_t)n * nc);
    for (int r = 0; r < nr; ++r) {
      const auto x = gaussian(n, 100 + r);
      t.q(x.data(), w.data() + r * wrow, n);
      t.dq(w.data() + r * wrow, wf.data() + (size_t)r * n, n);
    }
    for (int c = 0; c < nc; ++c) {
      const auto x = gaussian(n, 200 + c, 0.5f);
      quantize_q8_K(x.data(), a.data() + c * arow, n);
      dequantize_q8_K(a.data() + c * arow, af.data() + (size_t)c * n, n);
    }
    float out[nr * nc];
    t.dot(n, w.data(), wrow, nr, a.data(), arow, nc, out, nc);
    for (int r = 0; r < nr; ++r)
      for (int c = 0; c < nc; ++c) {
        double want = 0, mag = 0;
        for (int i = 0; i < n; ++i) {
          want += (double)wf[(size_t)r * n + i] * af[(size_t)c * n + i];
          mag += std::fabs((double)wf[(size_t)r * n + i] * af[(size_t)c * n + i]);
        }
        EXPECT_NEAR(out[r * nc + c], want, 1e-5 * mag) << r << "," << c;
      }
  }
}

// ---------------------------------------------------------------------------
// Table rows and dispatch.

TEST(KQuantTable, RowsAndScalarDefault) {
  const QuantTable scalar(CpuFeatures{});
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K}) {
    const QuantTraits* q = scalar.find(t);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, t);
    EXPECT_EQ(q->act_type, TensorType::Q8_K);
    EXPECT_STREQ(q->dot_impl, "scalar");
    EXPECT_EQ(q->dot, q->dot_ref);
    ASSERT_NE(q->dequantize, nullptr);
    ASSERT_NE(q->quantize, nullptr);
    ASSERT_NE(q->quantize_act, nullptr);
  }
  const CpuFeatures cpu = detect_cpu();
  const QuantTable best(cpu);
  const char* want = "scalar";
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family() && cpu.avx512vnni)
    want = "avx512vnni";
  else if (cpu.has_avx512_family())
    want = "avx512";
  else if (cpu.has_avx2_family())
    want = "avx2";
#elif defined(__aarch64__)
  want = cpu.arm_dotprod ? "neon-dotprod" : "neon";
#endif
  for (TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K})
    EXPECT_STREQ(best.get(t).dot_impl, want) << type_name(t);
}

}  // namespace
}  // namespace oscar::quant
