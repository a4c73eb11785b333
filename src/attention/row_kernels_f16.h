// One stored f16 (unaligned) as a float, by F16C (x86) or fcvt (AArch64): the q2_0 group headers
// (scale, offset) and f16 rows. Include only in the SIMD row kernel files,
// which are compiled with F16C enabled.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <cstdint>
#include <cstring>

namespace oscar::attention::detail {
namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#if defined(__x86_64__)
  return _cvtsh_ss(h);
#else
  __fp16 f;  // AArch64 converts half to single in its base ISA (fcvt)
  std::memcpy(&f, &h, 2);
  return (float)f;
#endif
}

}  // namespace
}  // namespace oscar::attention::detail
