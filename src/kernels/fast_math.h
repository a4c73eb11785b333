// Branch-free float exp and the activations built on it, for the elementwise
// loops of the forward pass (SwiGLU, GeGLU, logit soft-capping). std::exp and
// std::tanh are one library call per element and do not vectorise: a decode
// token of qwen3-0.6b spent ~10 us per layer in SwiGLU's 3072 expf calls, on
// one thread while the other waited. Written as plain scalar code so the loops
// around it auto-vectorise; OSCAR_CLONES (OSCAR_CLONES_WIDE) compiles those
// loops for AVX2 (and AVX-512) beside the portable build and lets the dynamic
// linker pick (GCC function multi-versioning). GCC vectorises the clamps only
// under -fno-trapping-math: a file with such loops sets it
// (src/kernels/CMakeLists.txt). Tested against double-precision formulas in
// tests/kernels/test_ops.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(OSCAR_X86) && defined(__GNUC__) && !defined(__clang__)
#define OSCAR_CLONES __attribute__((target_clones("avx2", "default")))
// For the long elementwise activation loops (thousands of values per token,
// exp in each): AVX-512 where the CPU has it, AVX2 with FMA, else portable.
// SwiGLU over qwen3-0.6b's 3072 values took 0.8-1.1 us against 1.9-2.2 with
// the plain AVX2 clone (best of 5000 calls, in cache). The short per-row
// loops (dot_f32, axpy) stay on OSCAR_CLONES: 16 lanes measured slower there.
#define OSCAR_CLONES_WIDE __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OSCAR_CLONES
#define OSCAR_CLONES_WIDE
#endif

namespace oscar::kernels {

// e^x within a few ulp for x in [-87.3, 88]; x is clamped to that range first,
// so large negative x gives ~1e-38 (not 0) and large positive x ~1.7e38 (not
// inf), which is what the activations below need. NaN propagates. Cody-Waite
// reduction by ln 2 (split in two so n * ln2_hi is exact) and a degree-6
// polynomial for e^r on |r| <= ln2 / 2.
inline float exp_approx(float x) {
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.0f ? 88.0f : x;
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t bits = ((int32_t)n + 127) << 23;  // 2^n, n in [-126, 127]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// x * sigmoid(x), the SiLU of SwiGLU.
inline float silu_approx(float x) { return x / (1.0f + exp_approx(-x)); }

// GELU with the tanh approximation: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
// u = sqrt(2/pi) (x + 0.044715 x^3).
inline float gelu_tanh_approx(float x) {
  constexpr float k2 = 2.0f * 0.7978845608028654f;
  return x / (1.0f + exp_approx(-k2 * (x + 0.044715f * x * x * x)));
}

// tanh(x) = 1 - 2 / (1 + e^(2x)), exact limits +-1 at both ends. Near 0 that
// difference cancels (relative error ~1e-7 / |x|), so |x| < 1/4 takes the
// Taylor series to x^9 instead (truncation below 1e-8 relative).
inline float tanh_approx(float x) {
  const float x2 = x * x;
  float p = 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  const float series = x + x * x2 * p;
  const float wide = 1.0f - 2.0f / (1.0f + exp_approx(2.0f * x));
  return x2 < 1.0f / 16.0f ? series : wide;
}

}  // namespace oscar::kernels
