// The SIMD q2_0 encoders (src/kv/q2_codec_simd.h) against the scalar
// reference encoder, byte for byte. The reference itself is checked against
// the independent model in q2_ref.h (test_q2_codec.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kv/q2_codec.h"
#include "kv/q2_codec_simd.h"

namespace oscar::kv {
namespace {

using Encoder = bool (*)(const float*, uint8_t*, int, const Q2Params&);

// The SIMD encoders this CPU can run.
std::vector<std::pair<std::string, Encoder>> simd_encoders() {
  std::vector<std::pair<std::string, Encoder>> r;
#if defined(OSCAR_X86)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    r.emplace_back("avx512", detail::q2_encode_avx512);
#elif defined(__aarch64__)
  r.emplace_back("neon", detail::q2_encode_neon);
#endif
  return r;
}

// Rows of several kinds: the encoder's hard cases are ties at the clipping
// rank, signed zeros at a group's minimum or maximum, values on a code's
// halfway point, constant groups (scale 0) and subnormal scales.
std::vector<float> make_row(std::mt19937& rng, int d, int kind) {
  std::vector<float> x((size_t)d);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-3, 3), pick(0, d - 1);
  switch (kind) {
    case 0:  // gaussian
      for (float& v : x) v = n(rng);
      break;
    case 1:  // outlier channels, as real keys have
      for (float& v : x) v = n(rng);
      for (int i = 0; i < 4; ++i) x[(size_t)pick(rng)] *= 40.0f;
      break;
    case 2:  // small integers: ties everywhere, halfway points of the codes
      for (float& v : x) v = (float)small(rng);
      break;
    case 3:  // zeros of both signs among small values
      for (float& v : x) v = small(rng) == 0 ? 0.5f : (small(rng) > 0 ? 0.0f : -0.0f);
      break;
    case 4:  // constant
      for (float& v : x) v = 0.25f;
      break;
    case 5:  // tiny values: subnormal f16 scales
      for (float& v : x) v = n(rng) * 1e-6f;
      break;
    default:  // large values, below the f16 range
      for (float& v : x) v = n(rng) * 3000.0f;
      break;
  }
  return x;
}

TEST(Q2CodecSimd, EncodersWriteTheReferenceBytes) {
  const auto encoders = simd_encoders();
  if (encoders.empty()) GTEST_SKIP() << "no SIMD q2_0 encoder for this CPU";
  std::mt19937 rng(11);
  const float ratios[] = {0.0f, 0.5f, 0.875f, 0.92f, 0.96f, 0.999f, 1.0f};
  int rows = 0;
  for (const auto& [name, encode] : encoders)
    for (int d : {16, 64, 128, 256, 512, 1024})
      for (int g : {0, 16, 32, 64, 128, 256}) {
        const Q2Params base{0.0f, g};
        if (g > d || !q2_valid(d, base)) continue;
        for (float ratio : ratios)
          for (int kind = 0; kind < 7; ++kind)
            for (int rep = 0; rep < 3; ++rep) {
              const Q2Params p{ratio, g};
              const std::vector<float> x = make_row(rng, d, kind);
              std::vector<uint8_t> want(q2_row_bytes(d, p), 0xCD), got(want.size(), 0x5A);
              q2_encode_reference(x.data(), want.data(), d, p);
              ASSERT_TRUE(encode(x.data(), got.data(), d, p)) << name << " declined d " << d << " g " << g;
              ASSERT_EQ(got, want) << name << " d " << d << " g " << g << " ratio " << ratio << " kind " << kind;
              ++rows;
            }
      }
  EXPECT_GT(rows, 1000);
}

TEST(Q2CodecSimd, EncodersDeclineRowsTheyDoNotTake) {
  const auto encoders = simd_encoders();
  if (encoders.empty()) GTEST_SKIP() << "no SIMD q2_0 encoder for this CPU";
  std::vector<uint8_t> out(4096);
  std::vector<float> x(2048, 1.0f);
  for (const auto& [name, encode] : encoders) {
    EXPECT_FALSE(encode(x.data(), out.data(), 8, {0.96f, 0})) << name;              // not whole vectors
    EXPECT_FALSE(encode(x.data(), out.data(), 64, {0.96f, 8})) << name;             // groups of 8
    EXPECT_FALSE(encode(x.data(), out.data(), 2048, {0.96f, 0})) << name;           // longer than kMaxSimdRow
    std::vector<float> bad(128, 1.0f);
    bad[77] = NAN;
    EXPECT_FALSE(encode(bad.data(), out.data(), 128, {0.96f, 0})) << name;
    bad[77] = -INFINITY;
    EXPECT_FALSE(encode(bad.data(), out.data(), 128, {0.0f, 0})) << name;
    bad[77] = 1e6f;  // finite, but the group's f16 scale is not
    EXPECT_FALSE(encode(bad.data(), out.data(), 128, {0.0f, 0})) << name;
  }
}

// The encoders of every ISA this host has, side by side in one process:
// CpuFeatures{} (the reference alone) and what the CPU detects.
std::vector<Q2Encoder> host_encoders() {
  std::vector<Q2Encoder> e = {Q2Encoder(CpuFeatures{}), Q2Encoder(detect_cpu())};
  EXPECT_STREQ(e[0].name(), "scalar");
  return e;
}

// An encoder takes the SIMD path where it can and the reference elsewhere:
// the bytes never depend on which.
TEST(Q2CodecSimd, DispatchedEncoderMatchesTheReference) {
  const std::vector<Q2Encoder> encoders = host_encoders();
  std::mt19937 rng(5);
  for (int d : {8, 64, 128, 512})
    for (int g : {0, 4, 16, 32}) {
      const Q2Params p{0.92f, g};
      if (!q2_valid(d, p)) continue;
      for (int kind = 0; kind < 7; ++kind) {
        const std::vector<float> x = make_row(rng, d, kind);
        std::vector<uint8_t> want(q2_row_bytes(d, p)), got(want.size());
        q2_encode_reference(x.data(), want.data(), d, p);
        for (const Q2Encoder& encode : encoders) {
          encode(x.data(), got.data(), d, p);
          EXPECT_EQ(got, want) << encode.name() << " d " << d << " g " << g << " kind " << kind;
        }
      }
    }
  // A row the SIMD encoder declines after writing part of its output (a
  // later group's scale overflows f16) still gets the reference's bytes.
  std::vector<float> x(256, 0.5f);
  x[200] = 1e6f;
  const Q2Params p{0.0f, 128};
  std::vector<uint8_t> want(q2_row_bytes(256, p)), got(want.size());
  q2_encode_reference(x.data(), want.data(), 256, p);
  for (const Q2Encoder& encode : encoders) {
    encode(x.data(), got.data(), 256, p);
    EXPECT_EQ(got, want) << encode.name();
  }
}

}  // namespace
}  // namespace oscar::kv
