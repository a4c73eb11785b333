// One stored f16 (unaligned) as a float, by F16C: the q2_0 group headers
// (scale, offset) and f16 rows. Include only in the SIMD row kernel files,
// which are compiled with F16C enabled.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace oscar::attention::detail {
namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

}  // namespace
}  // namespace oscar::attention::detail
