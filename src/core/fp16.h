// IEEE half and bfloat16 conversions (scalar, exact). SIMD kernels use F16C or
// NEON for bulk conversion; these are the reference and the fallback.
#pragma once

#include <cstdint>
#include <cstring>

namespace oscar {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// half -> float, exact for every input including subnormals, inf and NaN.
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    // Subnormal: value = mant * 2^-24.
    float v = (float)mant * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> half with round-to-nearest-even; overflow goes to inf, NaN stays NaN.
inline uint16_t f32_to_fp16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf or NaN
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  }
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520 -> inf
  if (ax < 0x38800000u) {
    // Result is subnormal or zero: scale so the integer part is the half mantissa.
    if (ax < 0x33000000u) return sign;  // < 2^-25 rounds to 0
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14..24 ... value = m * 2^(e-150); half ulp = 2^-24
    uint32_t q = m >> (shift - 0);
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = ax - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t lsb = (r >> 13) & 1u;
  r += 0xfffu + lsb;  // round to nearest even
  return (uint16_t)(sign | (r >> 13));
}

inline float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

// float -> bfloat16 with round-to-nearest-even; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

}  // namespace oscar
