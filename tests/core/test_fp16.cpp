#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oscar {
namespace {

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_f32((uint16_t)h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(f)))) << h;
      continue;
    }
    EXPECT_EQ(f32_to_fp16(f), (uint16_t)h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -26)), 0x0000);  // below half of min subnormal
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hw_f32_to_fp16(float f) {
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) float hw_fp16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

TEST(Fp16, MatchesF16cOnRandomFloats) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C";
  std::mt19937 rng(1);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = bits(rng);
    // Concentrate on the half range too.
    if (i & 1) u = (u & 0x8fffffffu) | 0x30000000u;
    const float f = bits_f32(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_fp16(f), hw_f32_to_fp16(f)) << std::hexfloat << f;
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = fp16_to_f32((uint16_t)h), b = hw_fp16_to_f32((uint16_t)h);
    if (std::isnan(a)) {
      EXPECT_TRUE(std::isnan(b));
    } else {
      EXPECT_EQ(a, b) << h;
    }
  }
}
#endif

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even.
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32((uint16_t)h);
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16(f), h);
    }
  }
}

}  // namespace
}  // namespace oscar
