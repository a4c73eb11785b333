// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: block layout (hand-built blocks), encoder
// error bounds, activation encoders, the scalar reference dot against a
// double-precision dot, every compiled SIMD kernel against the reference,
// and dispatch.
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

const TensorType kTypes[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                             TensorType::Q5_1, TensorType::Q8_0};

const QuantTable& scalar_table() {
  static const QuantTable t{CpuFeatures{}};
  return t;
}
const QuantTraits& traits(TensorType t) { return scalar_table().get(t); }
size_t rb(TensorType t, int64_t n) { return *row_bytes(t, (uint64_t)n); }

std::vector<float> decode(TensorType t, const std::vector<uint8_t>& bytes) {
  const int64_t n = (int64_t)(bytes.size() / type_info(t).type_size) * 32;
  std::vector<float> out((size_t)n);
  traits(t).dequantize(bytes.data(), out.data(), n);
  return out;
}

// ---- layout: blocks written byte by byte, values worked out by hand ----------

TEST(LegacyLayout, Q4_0) {
  // d = 0.5 (half 0x3800, little-endian). Byte j = (j) | (15 - j) << 4, so
  // value j = 0.5 * (j - 8) and value 16 + j = 0.5 * (7 - j).
  std::vector<uint8_t> b = {0x00, 0x38};
  for (int j = 0; j < 16; ++j) b.push_back((uint8_t)(j | ((15 - j) << 4)));
  const auto v = decode(TensorType::Q4_0, b);
  EXPECT_EQ(v[0], -4.0f);
  EXPECT_EQ(v[15], 3.5f);
  EXPECT_EQ(v[16], 3.5f);
  EXPECT_EQ(v[31], -4.0f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(v[16 + j], 0.5f * (7 - j)) << j;
  }
}

TEST(LegacyLayout, Q4_1) {
  // d = 0.25 (0x3400), m = -1 (0xBC00); byte j = 0xF0 | (j & 15) with j odd -> 3.
  std::vector<uint8_t> b = {0x00, 0x34, 0x00, 0xBC};
  for (int j = 0; j < 16; ++j) b.push_back(j % 2 ? 0x3F : 0xF0);
  const auto v = decode(TensorType::Q4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], j % 2 ? -1.0f + 0.25f * 15 : -1.0f) << j;       // low nibbles: F / 0
    EXPECT_EQ(v[16 + j], j % 2 ? -1.0f + 0.75f : 2.75f) << j;       // high nibbles: 3 / F
  }
}

TEST(LegacyLayout, Q5_0) {
  // d = 1 (0x3C00); qh = 0x80000001 (bytes 01 00 00 80): fifth bit set for
  // value 0 and value 31. All nibbles 0x2 (low) and 0x5 (high).
  std::vector<uint8_t> b = {0x00, 0x3C, 0x01, 0x00, 0x00, 0x80};
  for (int j = 0; j < 16; ++j) b.push_back(0x52);
  const auto v = decode(TensorType::Q5_0, b);
  EXPECT_EQ(v[0], 18.0f - 16.0f);
  for (int j = 1; j < 16; ++j) EXPECT_EQ(v[j], 2.0f - 16.0f) << j;
  for (int j = 16; j < 31; ++j) EXPECT_EQ(v[j], 5.0f - 16.0f) << j;
  EXPECT_EQ(v[31], 21.0f - 16.0f);
}

TEST(LegacyLayout, Q5_1) {
  // d = 0.5 (0x3800), m = 2 (0x4000); qh = 0x00FF0100: value 8 and values
  // 16..23 have the fifth bit. Nibbles: low = 0xF, high = 0x0.
  std::vector<uint8_t> b = {0x00, 0x38, 0x00, 0x40, 0x00, 0x01, 0xFF, 0x00};
  for (int j = 0; j < 16; ++j) b.push_back(0x0F);
  const auto v = decode(TensorType::Q5_1, b);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(v[j], 2.0f + 0.5f * (j == 8 ? 31 : 15)) << j;
  for (int j = 16; j < 32; ++j) EXPECT_EQ(v[j], 2.0f + 0.5f * (j < 24 ? 16 : 0)) << j;
}

TEST(LegacyLayout, Q8_0) {
  // d = -2 (0xC000); qs[j] = j - 16 as int8; also q = -128 and 127.
  std::vector<uint8_t> b = {0x00, 0xC0};
  for (int j = 0; j < 32; ++j) b.push_back((uint8_t)(int8_t)(j - 16));
  b[2] = 0x80;   // -128
  b[33] = 0x7F;  // 127
  const auto v = decode(TensorType::Q8_0, b);
  EXPECT_EQ(v[0], 256.0f);
  EXPECT_EQ(v[31], -254.0f);
  for (int j = 1; j < 31; ++j) EXPECT_EQ(v[j], -2.0f * (j - 16)) << j;
}

TEST(LegacyLayout, BlockSizesMatchTypeTable) {
  EXPECT_EQ(rb(TensorType::Q4_0, 32), sizeof(BlockQ4_0));
  EXPECT_EQ(rb(TensorType::Q4_1, 32), sizeof(BlockQ4_1));
  EXPECT_EQ(rb(TensorType::Q5_0, 32), sizeof(BlockQ5_0));
  EXPECT_EQ(rb(TensorType::Q5_1, 32), sizeof(BlockQ5_1));
  EXPECT_EQ(rb(TensorType::Q8_0, 32), sizeof(BlockQ8_0));
  EXPECT_EQ(rb(TensorType::Q8_1, 32), sizeof(BlockQ8_1));
}

// ---- encoders -----------------------------------------------------------------

// Block scale d and the representable range [lo, hi] of a decoded block.
struct Range {
  float d, lo, hi;
};
Range block_range(TensorType t, const uint8_t* blk) {
  uint16_t h[2];
  std::memcpy(h, blk, 4);
  const float d = fp16_to_f32(h[0]), m = fp16_to_f32(h[1]);
  auto span = [&](float a, float b) { return Range{std::fabs(d), std::min(a, b), std::max(a, b)}; };
  switch (t) {
    case TensorType::Q4_0: return span(-8 * d, 7 * d);
    case TensorType::Q4_1: return span(m, m + 15 * d);
    case TensorType::Q5_0: return span(-16 * d, 15 * d);
    case TensorType::Q5_1: return span(m, m + 31 * d);
    default: return span(-127 * d, 127 * d);
  }
}

// The scale each format should pick, before rounding to f16.
float ideal_scale(TensorType t, const float* x) {
  float mn = x[0], mx = x[0], amax = 0;
  for (int j = 0; j < 32; ++j) {
    mn = std::min(mn, x[j]);
    mx = std::max(mx, x[j]);
    amax = std::max(amax, std::fabs(x[j]));
  }
  switch (t) {
    case TensorType::Q4_0: return amax / 8;
    case TensorType::Q4_1: return (mx - mn) / 15;
    case TensorType::Q5_0: return amax / 16;
    case TensorType::Q5_1: return (mx - mn) / 31;
    default: return amax / 127;
  }
}

// Every value decodes within half a step of itself, or, outside the block's
// representable range (the far side of the _0 formats, f16 rounding of the
// scale and minimum), within half a step of the range end; the stored scale
// is the format's scale rounded to f16.
void check_round_trip(TensorType t, const std::vector<float>& x, const char* what) {
  SCOPED_TRACE(type_name(t) + " " + what);
  const int64_t n = (int64_t)x.size();
  std::vector<uint8_t> q(rb(t, n));
  traits(t).quantize(x.data(), q.data(), n);
  const auto y = decode(t, q);
  const size_t bs = type_info(t).type_size;
  for (int64_t b = 0; b < n / 32; ++b) {
    const Range r = block_range(t, &q[(size_t)b * bs]);
    const float di = ideal_scale(t, &x[(size_t)b * 32]);
    ASSERT_NEAR(r.d, di, di * 0x1p-11f + 0x1p-25f) << "block " << b;
    if (t == TensorType::Q4_0 || t == TensorType::Q5_0) {
      // The largest-magnitude value sits exactly on the extreme code.
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[(size_t)b * 32 + j]));
      ASSERT_NEAR(std::max(std::fabs(r.lo), std::fabs(r.hi)), amax, amax * 0x1p-11f + 0x1p-21f);
    }
    for (int j = 0; j < 32; ++j) {
      const size_t i = (size_t)b * 32 + j;
      const float out = std::max(0.0f, std::max(r.lo - x[i], x[i] - r.hi));
      const float bound = 0.5f * r.d + out + 1e-6f * std::fabs(x[i]) + 1e-30f;
      ASSERT_LE(std::fabs(y[i] - x[i]), bound) << "value " << i << " x=" << x[i] << " d=" << r.d;
      // The range itself covers the data up to f16 rounding of its ends
      // (relative for normal halves; a subnormal scale is off by up to 2^-25,
      // times the largest code).
      ASSERT_LE(out, r.d + std::fabs(x[i]) * 0x1p-10f + 127 * 0x1p-25f) << "value " << i;
    }
  }
}

std::vector<float> random_row(std::mt19937& rng, int64_t n, float scale, int kind) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> x((size_t)n);
  for (auto& v : x) {
    v = kind == 0 ? nd(rng) : kind == 1 ? ud(rng) : ud(rng) + 3.0f;  // 2: all positive
    v *= scale;
  }
  if (kind == 0)  // occasional outliers
    for (int64_t i = 0; i < n; i += 37) x[(size_t)i] *= 6.0f;
  return x;
}

TEST(LegacyQuantize, RandomDataWithinBounds) {
  std::mt19937 rng(7);
  for (TensorType t : kTypes)
    for (int kind = 0; kind < 3; ++kind)
      for (float scale : {1.0f, 1e-3f, 300.0f}) {
        const auto x = random_row(rng, 32 * 40, scale, kind);
        check_round_trip(t, x, ("kind " + std::to_string(kind) + " scale " + std::to_string(scale)).c_str());
      }
}

TEST(LegacyQuantize, EdgeCases) {
  std::mt19937 rng(8);
  for (TensorType t : kTypes) {
    const std::vector<float> zeros(64, 0.0f);
    check_round_trip(t, zeros, "zeros");
    for (float v : decode(t, [&] {
           std::vector<uint8_t> q(rb(t, 64));
           traits(t).quantize(zeros.data(), q.data(), 64);
           return q;
         }()))
      EXPECT_EQ(v, 0.0f);
    for (float c : {1.0f, -2.5f, 1000.0f, 1e-5f}) check_round_trip(t, std::vector<float>(64, c), "constant");
    // Large but representable scales (a _1 minimum must fit in f16).
    check_round_trip(t, random_row(rng, 64, 2e4f, 1), "huge");
    check_round_trip(t, random_row(rng, 64, 1e-6f, 0), "tiny");
    // One value far larger than the rest, and a lone nonzero value.
    auto spike = random_row(rng, 64, 1.0f, 0);
    spike[5] = 500.0f;
    check_round_trip(t, spike, "spike");
    std::vector<float> lone(64, 0.0f);
    lone[40] = -3.0f;
    check_round_trip(t, lone, "lone");
  }
}

TEST(LegacyQuantize, ActivationEncoders) {
  std::mt19937 rng(9);
  for (TensorType t : kTypes) {
    const QuantTraits& q = traits(t);
    const bool q81 = t == TensorType::Q4_1 || t == TensorType::Q5_1;
    EXPECT_EQ(q.act_type, q81 ? TensorType::Q8_1 : TensorType::Q8_0);
    for (float scale : {1.0f, 1e-4f, 1e3f}) {
      const auto x = random_row(rng, 96, scale, 0);
      std::vector<uint8_t> a(rb(q.act_type, 96));
      q.quantize_act(x.data(), a.data(), 96);
      const size_t bs = sizeof(BlockQ8_0) + (q81 ? 2 : 0);
      for (int b = 0; b < 3; ++b) {
        const uint8_t* blk = &a[(size_t)b * bs];
        uint16_t dh, sh;
        std::memcpy(&dh, blk, 2);
        std::memcpy(&sh, blk + 2, 2);
        const auto* qs = reinterpret_cast<const int8_t*>(blk + (q81 ? 4 : 2));
        const float d = fp16_to_f32(dh);
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
          ASSERT_LE(std::abs(qs[j]), 127);
          // Half a step, plus the clamp at +-127 when a subnormal scale
          // rounded down (off by at most 2^-25).
          ASSERT_LE(std::fabs(d * qs[j] - x[(size_t)b * 32 + j]),
                    0.5f * d * (1 + 1e-6f) + (d < 0x1p-14f ? 127 * 0x1p-25f : 0.0f));
          sum += qs[j];
        }
        if (q81) {
          EXPECT_NEAR(fp16_to_f32(sh), d * sum, std::fabs(d * sum) * 0x1p-11f + 1e-30f);
        }
      }
    }
  }
}

// ---- dot kernels -------------------------------------------------------------

// Weight rows of random bytes (every code pattern, including q8 = -128) with
// random but sane f16 scales / minimums, `stride` bytes apart.
std::vector<uint8_t> random_weights(std::mt19937& rng, TensorType t, int64_t n, int rows, size_t stride) {
  std::vector<uint8_t> w(stride * rows);  // exact size: sanitizers see over-reads
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  for (auto& v : w) v = (uint8_t)byte(rng);
  const size_t bs = type_info(t).type_size;
  const bool has_m = t == TensorType::Q4_1 || t == TensorType::Q5_1;
  for (int r = 0; r < rows; ++r)
    for (int64_t b = 0; b < n / 32; ++b) {
      uint8_t* blk = &w[r * stride + b * bs];
      const uint16_t d = f32_to_fp16(ud(rng) * 0.1f), m = f32_to_fp16(ud(rng));
      std::memcpy(blk, &d, 2);
      if (has_m) std::memcpy(blk + 2, &m, 2);
    }
  return w;
}

std::vector<uint8_t> random_acts(std::mt19937& rng, const QuantTraits& q, int64_t n, int cols, size_t stride) {
  std::vector<uint8_t> a(stride * cols);
  for (int c = 0; c < cols; ++c) {
    const auto x = random_row(rng, n, 1.0f, 0);
    q.quantize_act(x.data(), &a[c * stride], n);
  }
  return a;
}

// Decoded activation row (d * q), and the per-block s of Q8_1.
std::vector<float> decode_act(TensorType at, const uint8_t* a, int64_t n, std::vector<float>* s) {
  std::vector<float> out((size_t)n);
  const size_t bs = at == TensorType::Q8_1 ? 36 : 34, off = at == TensorType::Q8_1 ? 4 : 2;
  for (int64_t b = 0; b < n / 32; ++b) {
    uint16_t h[2];
    std::memcpy(h, a + b * bs, 4);
    const auto* qs = reinterpret_cast<const int8_t*>(a + b * bs + off);
    for (int j = 0; j < 32; ++j) out[(size_t)(b * 32 + j)] = fp16_to_f32(h[0]) * qs[j];
    if (s && at == TensorType::Q8_1) s->push_back(fp16_to_f32(h[1]));
  }
  return out;
}

// Minimum m of weight block b (the _1 formats), else 0.
float block_min(TensorType t, const uint8_t* row, int64_t b) {
  if (t != TensorType::Q4_1 && t != TensorType::Q5_1) return 0.0f;
  uint16_t mh;
  std::memcpy(&mh, row + b * type_info(t).type_size + 2, 2);
  return fp16_to_f32(mh);
}

// Sum of |terms| of the dot of a weight row and an activation row, m * s
// terms included: the scale of float rounding in any summation order.
double magnitude(TensorType t, const QuantTraits& q, const uint8_t* w, const uint8_t* a, int64_t n) {
  std::vector<float> wd((size_t)n), s;
  q.dequantize(w, wd.data(), n);
  const auto ad = decode_act(q.act_type, a, n, &s);
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m += std::fabs((double)wd[(size_t)i] * ad[(size_t)i]);
  if (q.act_type == TensorType::Q8_1)
    for (int64_t b = 0; b < n / 32; ++b) m += std::fabs((double)block_min(t, w, b) * s[(size_t)b]);
  return m;
}

TEST(LegacyDot, ReferenceMatchesDoubleDotOfDecodedValues) {
  std::mt19937 rng(10);
  for (TensorType t : kTypes) {
    SCOPED_TRACE(type_name(t));
    const QuantTraits& q = traits(t);
    for (int64_t n : {32, 96, 1024}) {
      const size_t ws = rb(t, n), as = rb(q.act_type, n);
      const auto w = random_weights(rng, t, n, 3, ws);
      const auto a = random_acts(rng, q, n, 2, as);
      float out[6];
      q.dot_ref(n, w.data(), ws, 3, a.data(), as, 2, out, 2);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 2; ++c) {
          std::vector<float> wd((size_t)n), s;
          q.dequantize(&w[r * ws], wd.data(), n);
          const auto ad = decode_act(q.act_type, &a[c * as], n, &s);
          double exact = 0, tol = 0;
          for (int64_t i = 0; i < n; ++i) exact += (double)wd[(size_t)i] * ad[(size_t)i];
          if (!s.empty()) {
            // Q8_1's s is d * sum(q) rounded to f16; the reference uses s as stored.
            for (int64_t b = 0; b < n / 32; ++b) {
              double sum_a = 0;
              for (int j = 0; j < 32; ++j) sum_a += ad[(size_t)(b * 32 + j)];
              tol += std::fabs(block_min(t, &w[r * ws], b)) * std::fabs(s[(size_t)b] - sum_a) * 1.0001;
            }
          }
          tol += 1e-6 * magnitude(t, q, &w[r * ws], &a[c * as], n) + 1e-30;
          EXPECT_NEAR(out[r * 2 + c], exact, tol) << "n=" << n << " r=" << r << " c=" << c;
        }
    }
  }
}

struct Isa {
  const char* name;
  const LegacyKernelSet* set;
};

std::vector<Isa> available_isas() {
  std::vector<Isa> v;
#if defined(OSCAR_X86)
  const CpuFeatures cpu = detect_cpu();
  if (cpu.has_avx2_family()) v.push_back({"avx2", &legacy_kernels_avx2()});
  if (cpu.has_avx512_family()) v.push_back({"avx512", &legacy_kernels_avx512()});
  if (cpu.has_avx512_family() && cpu.avx512vnni)
    v.push_back({"avx512vnni", &legacy_kernels_avx512vnni()});
#elif defined(__aarch64__)
  // Both ARM sets where the CPU has dotprod (QEMU's neoverse-n1), the plain
  // one where it has not (cortex-a53).
  v.push_back({"neon", &legacy_kernels_neon()});
  if (detect_cpu().arm_dotprod) v.push_back({"neon-dotprod", &legacy_kernels_neondot()});
#endif
  return v;
}

TEST(LegacyDot, SimdKernelsMatchReferenceOnAllTileShapes) {
  const auto isas = available_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD kernels for this CPU";
  std::mt19937 rng(11);
  const LegacyKind kinds[] = {kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0};
  for (const Isa& isa : isas)
    for (int k = 0; k < kLegacyKinds; ++k) {
      const TensorType t = kTypes[k];
      const QuantTraits& q = traits(t);
      for (int64_t n : {32, 64, 96, 32 * 33, 32 * 70}) {  // odd block counts, > 1 k chunk
        SCOPED_TRACE(std::string(isa.name) + " " + type_name(t) + " n=" + std::to_string(n));
        // Strides that are not multiples of a block or a vector (2-aligned,
        // like blocks in a file).
        const size_t ws = rb(t, n) + 6, as = rb(q.act_type, n) + 10;
        const auto w = random_weights(rng, t, n, kMaxTile, ws);
        const auto a = random_acts(rng, q, n, kMaxTile, as);
        std::vector<double> mag(kMaxTile * kMaxTile);
        for (int r = 0; r < kMaxTile; ++r)
          for (int c = 0; c < kMaxTile; ++c)
            mag[r * kMaxTile + c] = magnitude(t, q, &w[r * ws], &a[c * as], n);
        constexpr size_t os = 11;
        for (int nr = 1; nr <= kMaxTile; ++nr)
          for (int nc = 1; nc <= kMaxTile; ++nc) {
            float ref[kMaxTile * os], got[kMaxTile * os];
            std::fill(std::begin(got), std::end(got), NAN);
            q.dot_ref(n, w.data(), ws, nr, a.data(), as, nc, ref, os);
            isa.set->dot[kinds[k]](n, w.data(), ws, nr, a.data(), as, nc, got, os);
            for (int r = 0; r < nr; ++r)
              for (int c = 0; c < nc; ++c)
                ASSERT_NEAR(got[r * os + c], ref[r * os + c], 2e-6 * mag[r * kMaxTile + c])
                    << "tile " << nr << "x" << nc << " r=" << r << " c=" << c;
          }
      }
    }
}

TEST(LegacyDispatch, DefaultCpuIsScalarAndDetectedCpuPicksBest) {
  for (TensorType t : kTypes) {
    const QuantTraits& q = traits(t);
    EXPECT_STREQ(q.dot_impl, "scalar");
    EXPECT_EQ(q.dot, q.dot_ref);
    EXPECT_EQ(q.type, t);
  }
  const CpuFeatures cpu = detect_cpu();
  const QuantTable table(cpu);
  const char* want = "scalar";
#if defined(OSCAR_X86)
  if (cpu.has_avx512_family() && cpu.avx512vnni) want = "avx512vnni";
  else if (cpu.has_avx512_family()) want = "avx512";
  else if (cpu.has_avx2_family()) want = "avx2";
#elif defined(__aarch64__)
  // Only Q8_0 has NEON kernels; the other kinds stay scalar.
  EXPECT_STREQ(table.get(TensorType::Q8_0).dot_impl, cpu.arm_dotprod ? "neon-dotprod" : "neon");
  EXPECT_STREQ(table.get(TensorType::Q4_0).dot_impl, "scalar");
  return;
#endif
  for (TensorType t : kTypes) EXPECT_STREQ(table.get(t).dot_impl, want) << type_name(t);
}

}  // namespace
}  // namespace oscar::quant
