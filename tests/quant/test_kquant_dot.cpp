// Every SIMD k-quant dot kernel the CPU supports, called directly, against
// the scalar reference: every tile shape 1..kMaxTile x 1..kMaxTile, odd and
// misaligned strides, several super-blocks, quantized rows and raw random
// bit patterns (including extreme weights and activations).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/kquant_blocks.h"

namespace oscar::quant {
namespace {

struct Kernel {
  std::string name;
  DotTileFn fn;
  bool paired = false;  // takes Q8_K in the paired order (pair_q8_K_chunks)
};

struct KType {
  const char* name;
  size_t bytes;
  QuantizeRowFn q;
  DequantizeRowFn dq;
  DotTileFn ref;
  // Offsets of the f16 scale fields (patched to sane values in random blocks).
  int d_off, dmin_off;
  std::vector<Kernel> simd;
};

std::vector<KType> types() {
  std::vector<KType> t = {
      {"q2_K", sizeof(BlockQ2_K), quantize_q2_K, dequantize_q2_K, dot_q2_K_ref, 80, 82, {}},
      {"q3_K", sizeof(BlockQ3_K), quantize_q3_K, dequantize_q3_K, dot_q3_K_ref, 108, -1, {}},
      {"q4_K", sizeof(BlockQ4_K), quantize_q4_K, dequantize_q4_K, dot_q4_K_ref, 0, 2, {}},
      {"q5_K", sizeof(BlockQ5_K), quantize_q5_K, dequantize_q5_K, dot_q5_K_ref, 0, 2, {}},
      {"q6_K", sizeof(BlockQ6_K), quantize_q6_K, dequantize_q6_K, dot_q6_K_ref, 208, -1, {}},
  };
#if defined(OSCAR_X86)
  const CpuFeatures cpu = detect_cpu();
  const DotTileFn avx2[] = {dot_q2_K_avx2, dot_q3_K_avx2, dot_q4_K_avx2, dot_q5_K_avx2, dot_q6_K_avx2};
  const KQuantDots a5 = kquant_dots_avx512(), vn = kquant_dots_avx512vnni();
  const DotTileFn avx512[] = {a5.q2_K, a5.q3_K, a5.q4_K, a5.q5_K, a5.q6_K};
  const DotTileFn avx512vnni[] = {vn.q2_K, vn.q3_K, vn.q4_K, vn.q5_K, vn.q6_K};
  for (size_t i = 0; i < t.size(); ++i) {
    const bool paired = i == 2 || i == 3;  // q4_K, q5_K
    if (cpu.has_avx2_family()) t[i].simd.push_back({"avx2", avx2[i]});
    if (cpu.has_avx512_family()) t[i].simd.push_back({"avx512", avx512[i], paired});
    if (cpu.has_avx512_family() && cpu.avx512vnni) t[i].simd.push_back({"avx512vnni", avx512vnni[i], paired});
  }
#elif defined(__aarch64__)
  // The plain NEON set on every AArch64 CPU, the sdot one where the CPU has it.
  const KQuantDots ne = kquant_dots_neon(), nd = kquant_dots_neondot();
  const DotTileFn neon[] = {ne.q2_K, ne.q3_K, ne.q4_K, ne.q5_K, ne.q6_K};
  const DotTileFn neondot[] = {nd.q2_K, nd.q3_K, nd.q4_K, nd.q5_K, nd.q6_K};
  const bool dotprod = detect_cpu().arm_dotprod;
  for (size_t i = 0; i < t.size(); ++i) {
    t[i].simd.push_back({"neon", neon[i]});
    if (dotprod) t[i].simd.push_back({"neon-dotprod", neondot[i]});
  }
#endif
  return t;
}

// A weight matrix of `rows` rows of n values at `stride` bytes (>= row size).
struct Rows {
  std::vector<uint8_t> buf;
  size_t stride;
  const uint8_t* at(size_t off) const { return buf.data() + off; }
};

// Rows alternate between quantized Gaussian data and raw random bytes (every
// bit pattern, with the f16 scale fields forced to moderate values).
Rows make_weights(const KType& t, int64_t n, int rows, size_t pad, std::mt19937& rng) {
  const size_t rb = (size_t)(n / 256) * t.bytes;
  Rows w{std::vector<uint8_t>(2 + rb + (rb + pad) * rows), rb + pad};
  std::normal_distribution<float> nd(0, 1);
  std::uniform_real_distribution<float> ud(0.001f, 0.05f);
  std::vector<float> x((size_t)n);
  for (int r = 0; r < rows; ++r) {
    // +2: rows off any cache-line or vector alignment (blocks keep the 2-byte
    // alignment of their f16 fields, as in a GGUF file).
    uint8_t* row = w.buf.data() + 2 + r * w.stride;
    if (r % 2 == 0) {
      for (auto& v : x) v = nd(rng);
      t.q(x.data(), row, n);
    } else {
      for (size_t i = 0; i < rb; ++i) row[i] = (uint8_t)rng();
      for (int64_t b = 0; b < n / 256; ++b) {
        uint8_t* blk = row + b * t.bytes;
        const uint16_t d = f32_to_fp16(ud(rng)), m = f32_to_fp16(ud(rng));
        std::memcpy(blk + t.d_off, &d, 2);
        if (t.dmin_off >= 0) std::memcpy(blk + t.dmin_off, &m, 2);
      }
    }
  }
  return w;
}

Rows make_acts(int64_t n, int cols, size_t pad, std::mt19937& rng, bool extreme = false) {
  const size_t rb = (size_t)(n / 256) * sizeof(BlockQ8_K);
  Rows a{std::vector<uint8_t>(4 + (rb + pad) * cols), rb + pad};
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x((size_t)n);
  for (int c = 0; c < cols; ++c) {
    for (auto& v : x) v = nd(rng);
    if (extreme)  // every value at +-max: qs are all +-127
      for (auto& v : x) v = v < 0 ? -1.0f : 1.0f;
    std::vector<BlockQ8_K> blocks((size_t)(n / 256));
    quantize_q8_K(x.data(), blocks.data(), n);
    std::memcpy(a.buf.data() + 4 + c * a.stride, blocks.data(), rb);
  }
  return a;
}

// The activations a kernel takes: the natural rows, or a copy in the paired order.
Rows kernel_acts(const Rows& a, const Kernel& k, int64_t n, int cols, size_t first) {
  Rows p = a;
  if (k.paired)
    for (int c = 0; c < cols; ++c) pair_q8_K_chunks(p.buf.data() + first + c * p.stride, n);
  return p;
}

void compare_all_tiles(const KType& t, const Kernel& k, int64_t n, bool extreme, uint32_t seed) {
  std::mt19937 rng(seed);
  const Rows w = make_weights(t, n, kMaxTile, 6, rng);
  const Rows a = make_acts(n, kMaxTile, 12, rng, extreme);
  const Rows ak = kernel_acts(a, k, n, kMaxTile, 4);
  // |w| . |a| per pair bounds the rounding error of either summation order.
  std::vector<float> wf((size_t)n), af((size_t)n);
  std::vector<double> mag(kMaxTile * kMaxTile, 0.0);
  for (int r = 0; r < kMaxTile; ++r) {
    t.dq(w.at(2 + r * w.stride), wf.data(), n);
    for (int c = 0; c < kMaxTile; ++c) {
      std::vector<BlockQ8_K> blocks((size_t)(n / 256));
      std::memcpy(blocks.data(), a.at(4 + c * a.stride), blocks.size() * sizeof(BlockQ8_K));
      dequantize_q8_K(blocks.data(), af.data(), n);
      for (int64_t i = 0; i < n; ++i) mag[r * kMaxTile + c] += std::fabs((double)wf[i] * af[i]);
    }
  }
  const size_t os = 11;
  for (int nr = 1; nr <= kMaxTile; ++nr)
    for (int nc = 1; nc <= kMaxTile; ++nc) {
      std::vector<float> want(os * kMaxTile, -1.0f), got(os * kMaxTile, -2.0f);
      t.ref(n, w.at(2), w.stride, nr, a.at(4), a.stride, nc, want.data(), os);
      k.fn(n, w.at(2), w.stride, nr, ak.at(4), ak.stride, nc, got.data(), os);
      for (int r = 0; r < kMaxTile; ++r)
        for (int c = 0; c < (int)os; ++c) {
          const size_t i = r * os + c;
          if (r < nr && c < nc) {
            ASSERT_NEAR(got[i], want[i], 2e-6 * mag[r * kMaxTile + c] + 1e-30)
                << t.name << " " << k.name << " tile " << nr << "x" << nc << " at " << r << "," << c;
          } else {
            ASSERT_EQ(got[i], -2.0f) << "wrote outside the tile: " << nr << "x" << nc;
          }
        }
    }
}

TEST(KQuantSimd, MatchesScalarOnAllTiles) {
  for (const KType& t : types())
    for (const Kernel& k : t.simd) {
      compare_all_tiles(t, k, 256, false, 1);
      compare_all_tiles(t, k, 256 * 5, false, 2);
    }
}

TEST(KQuantSimd, ExtremeActivations) {
  for (const KType& t : types())
    for (const Kernel& k : t.simd) compare_all_tiles(t, k, 256 * 3, true, 3);
}

TEST(KQuantSimd, ExtremeWeights) {
  // All weight bits set: u = max for every type, with the largest scales.
  for (const KType& t : types())
    for (const Kernel& k : t.simd) {
      const int64_t n = 512;
      std::vector<uint8_t> w((size_t)(n / 256) * t.bytes, 0xff);
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint16_t d = f32_to_fp16(0.01f);
        std::memcpy(w.data() + b * t.bytes + t.d_off, &d, 2);
        if (t.dmin_off >= 0) std::memcpy(w.data() + b * t.bytes + t.dmin_off, &d, 2);
      }
      std::mt19937 rng(4);
      const Rows a = make_acts(n, 1, 0, rng, true);
      const Rows ak = kernel_acts(a, k, n, 1, 4);
      float want = 0, got = 1;
      t.ref(n, w.data(), 0, 1, a.at(4), a.stride, 1, &want, 1);
      k.fn(n, w.data(), 0, 1, ak.at(4), ak.stride, 1, &got, 1);
      EXPECT_NEAR(got, want, 1e-5 * std::fabs(want) + 1e-6) << t.name << " " << k.name;
    }
}

TEST(KQuantPaired, PairingSwapsChunksAndIsItsOwnInverse) {
  std::mt19937 rng(11);
  std::vector<BlockQ8_K> a(3), b;
  for (auto& blk : a) {
    blk.d = 0.5f;
    for (int i = 0; i < 256; ++i) blk.qs[i] = (int8_t)(rng() % 255 - 127);
    for (int g = 0; g < 16; ++g) blk.bsums[g] = (int16_t)(rng() % 1000);
  }
  b = a;
  pair_q8_K_chunks(b.data(), 256 * 3);
  const int order[8] = {0, 2, 1, 3, 4, 6, 5, 7};  // natural chunk at each paired position
  for (int ib = 0; ib < 3; ++ib) {
    EXPECT_EQ(b[ib].d, a[ib].d);
    EXPECT_EQ(std::memcmp(b[ib].bsums, a[ib].bsums, sizeof a[ib].bsums), 0);
    for (int c = 0; c < 8; ++c)
      EXPECT_EQ(std::memcmp(b[ib].qs + 32 * c, a[ib].qs + 32 * order[c], 32), 0) << ib << " " << c;
  }
  pair_q8_K_chunks(b.data(), 256 * 3);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_K)), 0);
}

TEST(KQuantPaired, PairedReferencesEqualTheNaturalOnes) {
  const int64_t n = 512;
  std::mt19937 rng(12);
  for (const KType& t : types()) {
    if (std::string(t.name) != "q4_K" && std::string(t.name) != "q5_K") continue;
    const DotTileFn paired = std::string(t.name) == "q4_K" ? dot_q4_K_paired_ref : dot_q5_K_paired_ref;
    const Rows w = make_weights(t, n, 3, 0, rng);
    const Rows a = make_acts(n, 2, 0, rng);
    const Rows ap = kernel_acts(a, Kernel{"paired", nullptr, true}, n, 2, 4);
    float want[6], got[6];
    t.ref(n, w.at(2), w.stride, 3, a.at(4), a.stride, 2, want, 2);
    paired(n, w.at(2), w.stride, 3, ap.at(4), ap.stride, 2, got, 2);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i], want[i]) << t.name << " " << i;
  }
}

TEST(KQuantSimd, Q8KEncoderMatchesScalarBitForBit) {
#if defined(OSCAR_X86)
  if (!detect_cpu().has_avx2_family()) GTEST_SKIP() << "no AVX2";
  std::mt19937 rng(9);
  for (float scale : {1.0f, 1e-3f, 250.0f}) {
    std::normal_distribution<float> nd(0, scale);
    std::vector<float> x(256 * 6);
    for (auto& v : x) v = nd(rng);
    for (int i = 0; i < 256; ++i) x[256 + i] = 0.0f;           // an all-zero block
    for (int i = 0; i < 256; ++i) x[512 + i] = (i % 2) ? 3.0f : -3.0f;  // at +-max
    x[1000] = 1e4f * scale;                                     // an outlier
    std::vector<BlockQ8_K> want(6), got(6);
    quantize_q8_K(x.data(), want.data(), (int64_t)x.size());
    quantize_q8_K_avx2(x.data(), got.data(), (int64_t)x.size());
    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(BlockQ8_K)), 0) << scale;
  }
#else
  GTEST_SKIP() << "x86 only";
#endif
}

}  // namespace
}  // namespace oscar::quant
