// F32, F16, BF16 weights: known encodings, conversion error bounds, the
// scalar reference dot against a double-precision dot, every compiled SIMD
// kernel against the reference, and dispatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

const TensorType kTypes[] = {TensorType::F32, TensorType::F16, TensorType::BF16};

const QuantTable& scalar_table() {
  static const QuantTable t{CpuFeatures{}};
  return t;
}
const QuantTraits& traits(TensorType t) { return scalar_table().get(t); }
size_t esize(TensorType t) { return t == TensorType::F32 ? 4 : 2; }

TEST(FloatLayout, KnownEncodings) {
  // Halves and bfloats written by hand (little-endian u16).
  const uint16_t h[4] = {0x3C00, 0xC000, 0x7BFF, 0x0001};  // 1, -2, 65504, 2^-24
  float y[4];
  traits(TensorType::F16).dequantize(h, y, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 65504.0f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -24));
  const uint16_t b[4] = {0x3F80, 0xC040, 0x4120, 0x0000};  // 1, -3, 10, 0
  traits(TensorType::BF16).dequantize(b, y, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[2], 10.0f);
  EXPECT_EQ(y[3], 0.0f);
  const float f[2] = {1.5f, -0.0f};
  traits(TensorType::F32).dequantize(f, y, 2);
  EXPECT_EQ(std::memcmp(f, y, 8), 0);
  for (TensorType t : kTypes) {
    EXPECT_EQ(traits(t).act_type, TensorType::F32);
    EXPECT_EQ(*row_bytes(t, 7), 7 * esize(t));
  }
}

// |x - x'| <= half an ulp of the format: 2^-11 (f16, normal range), 2^-8
// (bf16) relative, 2^-25 absolute for f16 subnormals, exact for f32.
void check_round_trip(TensorType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(x.size() * esize(t));
  std::vector<float> y(x.size());
  traits(t).quantize(x.data(), q.data(), (int64_t)x.size());
  traits(t).dequantize(q.data(), y.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float ax = std::fabs(x[i]);
    const float bound = t == TensorType::F32 ? 0.0f
                        : t == TensorType::F16 ? std::max(ax * 0x1p-11f, 0x1p-25f)
                                               : ax * 0x1p-8f;
    ASSERT_LE(std::fabs(y[i] - x[i]), bound) << type_name(t) << " i=" << i << " x=" << x[i];
  }
}

TEST(FloatQuantize, RoundTripWithinHalfUlp) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (TensorType t : kTypes)
    for (float scale : {1.0f, 1e-6f, 3e3f}) {  // 3e3 * N(0,1) stays inside the f16 range
      std::vector<float> x(1000);
      for (auto& v : x) v = nd(rng) * scale;
      check_round_trip(t, x);
    }
  for (TensorType t : kTypes) {
    check_round_trip(t, std::vector<float>(17, 0.0f));
    check_round_trip(t, std::vector<float>(17, -7.25f));
  }
  // Beyond the f16 range: bf16 and f32 keep it.
  check_round_trip(TensorType::BF16, {1e30f, -3e-30f, 123456.0f});
  check_round_trip(TensorType::F32, {1e30f, -3e-30f, 123456.0f});
}

struct Isa {
  const char* name;
  const FloatKernelSet* set;
};

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
#if defined(OSCAR_X86)
  const CpuFeatures cpu = detect_cpu();
  if (cpu.has_avx2_family()) v.push_back({"avx2", &float_kernels_avx2()});
  if (cpu.has_avx512_family()) v.push_back({"avx512", &float_kernels_avx512()});
#endif
  return v;
}

// `rows` rows of n values in format t, `stride` bytes apart, and their values.
std::vector<uint8_t> make_rows(std::mt19937& rng, TensorType t, int64_t n, int rows, size_t stride,
                               std::vector<float>* values) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint8_t> w(stride * rows, 0xEE);  // exact size: sanitizers see over-reads
  values->assign((size_t)(n * rows), 0.0f);
  std::vector<float> x((size_t)n);
  for (int r = 0; r < rows; ++r) {
    for (auto& v : x) v = nd(rng);
    traits(t).quantize(x.data(), &w[r * stride], n);
    traits(t).dequantize(&w[r * stride], &(*values)[(size_t)(r * n)], n);
  }
  return w;
}

TEST(FloatDot, ReferenceMatchesDoubleDot) {
  std::mt19937 rng(4);
  for (TensorType t : kTypes)
    for (int64_t n : {1, 5, 300}) {
      std::vector<float> wv, av;
      const size_t ws = n * esize(t), as = n * 4;
      const auto w = make_rows(rng, t, n, 2, ws, &wv);
      const auto a = make_rows(rng, TensorType::F32, n, 3, as, &av);
      float out[6];
      traits(t).dot_ref(n, w.data(), ws, 2, a.data(), as, 3, out, 3);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
          double exact = 0;
          for (int64_t i = 0; i < n; ++i) exact += (double)wv[(size_t)(r * n + i)] * av[(size_t)(c * n + i)];
          EXPECT_NEAR(out[r * 3 + c], exact, std::fabs(exact) * 0x1p-24 + 1e-30) << type_name(t);
        }
    }
}

TEST(FloatDot, SimdKernelsMatchReferenceOnAllTileShapes) {
  const auto isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD kernels for this CPU";
  std::mt19937 rng(5);
  for (const Isa& isa : isas)
    for (int k = 0; k < kFloatKinds; ++k) {
      const TensorType t = kTypes[k];
      // Vector tails, exact multiples, and more than one 512-value k chunk.
      for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100, 512, 1100}) {
        SCOPED_TRACE(std::string(isa.name) + " " + type_name(t) + " n=" + std::to_string(n));
        // Row strides an odd number of elements past the row.
        const size_t ws = (n + 3) * esize(t), as = (n + 5) * 4;
        std::vector<float> wv, av;
        const auto w = make_rows(rng, t, n, kMaxTile, ws, &wv);
        const auto a = make_rows(rng, TensorType::F32, n, kMaxTile, as, &av);
        constexpr size_t os = 13;
        for (int nr = 1; nr <= kMaxTile; ++nr)
          for (int nc = 1; nc <= kMaxTile; ++nc) {
            float ref[kMaxTile * os], got[kMaxTile * os];
            std::fill(std::begin(got), std::end(got), NAN);
            traits(t).dot_ref(n, w.data(), ws, nr, a.data(), as, nc, ref, os);
            isa.set->dot[k](n, w.data(), ws, nr, a.data(), as, nc, got, os);
            for (int r = 0; r < nr; ++r)
              for (int c = 0; c < nc; ++c) {
                double mag = 0;
                for (int64_t i = 0; i < n; ++i)
                  mag += std::fabs((double)wv[(size_t)(r * n + i)] * av[(size_t)(c * n + i)]);
                ASSERT_NEAR(got[r * os + c], ref[r * os + c], 1e-6 * mag + 1e-30)
                    << "tile " << nr << "x" << nc << " r=" << r << " c=" << c;
              }
          }
      }
    }
}

// The panel GEMM of every ISA against double sums of the decoded weights:
// row counts around the micro-panel height (tails padded with zero rows),
// column counts around the group width (zero-padded groups), k lengths with
// vector tails, and both the overwrite and the accumulate mode. Outputs
// outside the nr x n_cols block must stay untouched.
TEST(FloatPanel, SimdKernelsMatchDoubleSums) {
  const auto isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD kernels for this CPU";
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Isa& isa : isas)
    for (int k = 0; k < kFloatKinds; ++k) {
      const TensorType t = kTypes[k];
      ASSERT_NE(isa.set->panel[k], nullptr);
      const int nrg = isa.set->panel_cols;
      for (int64_t kc : {(int64_t)1, (int64_t)7, (int64_t)16, (int64_t)33, (int64_t)100, kPanelK})
        for (int nr : {1, 5, 16, 31, 32, 33, kPanelRows})
          for (int64_t n_cols : {1, 3, 8, 13, 20})
            for (bool accumulate : {false, true}) {
              SCOPED_TRACE(std::string(isa.name) + " " + type_name(t) + " kc=" +
                           std::to_string(kc) + " nr=" + std::to_string(nr) + " cols=" +
                           std::to_string(n_cols) + (accumulate ? " acc" : ""));
              const size_t ws = (kc + 3) * esize(t);
              std::vector<float> wv, xv;
              const auto w = make_rows(rng, t, kc, nr, ws, &wv);
              const size_t xs = (size_t)kc + 2;
              std::vector<float> x(xs * (size_t)n_cols);
              for (auto& v : x) v = nd(rng);
              const int64_t groups = (n_cols + nrg - 1) / nrg;
              const size_t gs = (size_t)kc * nrg;
              std::vector<float> xp(gs * (size_t)groups, NAN);
              for (int64_t g = 0; g < groups; ++g)
                pack_panel_act(&x[(size_t)(g * nrg) * xs], xs,
                               (int)std::min<int64_t>(nrg, n_cols - g * nrg), kc, nrg, &xp[g * gs]);
              // y rows are nr + 3 long, and one extra column follows: none
              // of those values may be written.
              const size_t ys = (size_t)nr + 3;
              std::vector<float> y(ys * (size_t)(n_cols + 1));
              for (auto& v : y) v = nd(rng);
              const std::vector<float> y0 = y;
              isa.set->panel[k](kc, w.data(), ws, nr, xp.data(), gs, n_cols, y.data(), ys, accumulate);
              for (int64_t c = 0; c <= n_cols; ++c)
                for (size_t r = 0; r < ys; ++r) {
                  const size_t at = (size_t)c * ys + r;
                  if (r >= (size_t)nr || c == n_cols) {
                    ASSERT_EQ(y[at], y0[at]) << "wrote outside the block, r=" << r << " c=" << c;
                    continue;
                  }
                  double want = accumulate ? y0[at] : 0.0, mag = std::fabs(want);
                  for (int64_t i = 0; i < kc; ++i) {
                    const double p = (double)wv[r * kc + i] * x[(size_t)c * xs + i];
                    want += p;
                    mag += std::fabs(p);
                  }
                  ASSERT_NEAR(y[at], want, 1e-6 * mag + 1e-30) << "r=" << r << " c=" << c;
                }
            }
    }
}

TEST(FloatPanel, PackedActivationLayout) {
  // 3 columns of 4 values into a group of 5: [i][c], zero past column 3.
  const float x[] = {1, 2, 3, 4, 0, 10, 20, 30, 40, 0, 100, 200, 300, 400};
  float dst[20];
  pack_panel_act(x, 5, 3, 4, 5, dst);
  const float want[] = {1, 10, 100, 0, 0, 2, 20, 200, 0, 0, 3, 30, 300, 0, 0, 4, 40, 400, 0, 0};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(dst[i], want[i]) << i;
}

#if defined(OSCAR_X86)
// F32 bit patterns that cover every branch of the scalar conversion: normal
// halves and their rounding ties, overflow to infinity, subnormal results
// and their ties, values that round to zero, infinities and NaNs, both signs.
std::vector<float> f16_conversion_cases() {
  std::vector<uint32_t> bits = {0x00000000u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x33800000u,
                                0x387fffffu, 0x38800000u, 0x38800fffu, 0x38801000u, 0x38803000u,
                                0x3f800000u, 0x3f801000u, 0x3f803000u, 0x477fe000u, 0x477fefffu,
                                0x477ff000u, 0x7f7fffffu, 0x7f800000u};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 20000; ++i) bits.push_back(any(rng) & 0x7fffffffu);
  // Exponents near the half range, where rounding decides the result.
  for (int i = 0; i < 20000; ++i) bits.push_back(((0x66u + any(rng) % 0x30u) << 23) | (any(rng) & 0x7fffffu));
  std::vector<float> x;
  for (uint32_t b : bits) {
    float f, g;
    std::memcpy(&f, &b, 4);
    const uint32_t nb = b | 0x80000000u;
    std::memcpy(&g, &nb, 4);
    x.push_back(f);
    x.push_back(g);
  }
  return x;
}

TEST(FloatConversion, F16cRowsMatchTheScalarConversionBitForBit) {
  if (!detect_cpu().has_avx2_family()) GTEST_SKIP() << "no F16C";
  const std::vector<float> x = f16_conversion_cases();
  const int64_t n = (int64_t)x.size() - 3;  // not a multiple of 8: the scalar tail runs too
  std::vector<uint16_t> want((size_t)n), got((size_t)n);
  for (int64_t i = 0; i < n; ++i) want[(size_t)i] = f32_to_fp16(x[(size_t)i]);
  quantize_f16_f16c(x.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const bool nan = std::isnan(x[(size_t)i]);
    if (nan) EXPECT_TRUE(std::isnan(fp16_to_f32(got[(size_t)i]))) << i;
    else ASSERT_EQ(got[(size_t)i], want[(size_t)i]) << "f32 " << x[(size_t)i];
  }
  // Every half back to f32, also bit for bit.
  std::vector<uint16_t> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i) h[i] = (uint16_t)i;
  std::vector<float> back(h.size());
  dequantize_f16_f16c(h.data(), back.data(), (int64_t)h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    const float r = fp16_to_f32(h[i]);
    if (std::isnan(r)) EXPECT_TRUE(std::isnan(back[i])) << i;
    else ASSERT_EQ(std::memcmp(&back[i], &r, 4), 0) << "half " << i;
  }
  // The traits of a detected CPU use them.
  const QuantTable table(detect_cpu());
  EXPECT_EQ(table.get(TensorType::F16).quantize, &quantize_f16_f16c);
  EXPECT_EQ(table.get(TensorType::F16).dequantize, &dequantize_f16_f16c);
}
#endif

TEST(FloatDispatch, DefaultCpuIsScalarAndDetectedCpuPicksBest) {
  for (TensorType t : kTypes) {
    EXPECT_STREQ(traits(t).dot_impl, "scalar");
    EXPECT_EQ(traits(t).dot, traits(t).dot_ref);
    EXPECT_EQ(traits(t).gemm_panel, nullptr);  // matmul falls back to the dot tiles
  }
  const CpuFeatures cpu = detect_cpu();
  const QuantTable table(cpu);
  const char* want = "scalar";
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family()) want = "avx512";
  else if (cpu.has_avx2_family()) want = "avx2";
#endif
  for (TensorType t : kTypes) EXPECT_STREQ(table.get(t).dot_impl, want) << type_name(t);
}

}  // namespace
}  // namespace oscar::quant
