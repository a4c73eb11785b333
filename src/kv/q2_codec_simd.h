// SIMD q2_0 row encoders (internal to the codec and its tests). Each writes
// the same bytes as q2_encode_reference, or declines and writes nothing
// that counts (the caller then runs the reference over the whole row).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/fp16.h"
#include "kv/q2_codec.h"

namespace oscar::kv::detail {

// AVX-512 F/DQ (q2_codec_avx512.cpp; x86-64 only, call only when the CPU has
// them). Takes rows of d <= kMaxSimdRow values in groups that are multiples
// of 16 whose values, and every group's f16 scale and minimum, are finite;
// returns false for any other row.
constexpr int kMaxSimdRow = 1024;
bool q2_encode_avx512(const float* x, uint8_t* out, int d, const Q2Params& p);
// AArch64 NEON (q2_codec_neon.cpp; every ARMv8 CPU): the same rows.
bool q2_encode_neon(const float* x, uint8_t* out, int d, const Q2Params& p);

// What the SIMD encoders share with each other, written once.

// std::min / std::max over a group as the reference folds them (a later
// equal value does not replace an earlier one, which decides only between
// -0 and +0). The encoders call it when a vector min or max came out zero.
inline void group_range_scalar(const float* v, int g, float& lo, float& hi) {
  lo = hi = v[0];
  for (int i = 1; i < g; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
}

// A group's 4-byte header: the scale (hi - lo) / 3 and the minimum lo as
// little-endian f16. s and l get the f16 values back, which the codes are
// chosen against (as the decoder will use them). False, with nothing
// meaningful written, when either is not finite: the caller declines.
inline bool write_group_header(float lo, float hi, uint8_t* out, float& s, float& l) {
  const uint16_t s16 = f32_to_fp16((hi - lo) / 3.0f), lo16 = f32_to_fp16(lo);
  s = fp16_to_f32(s16);
  l = fp16_to_f32(lo16);
  if (!std::isfinite(s) || !std::isfinite(l)) return false;
  out[0] = (uint8_t)(s16 & 0xff);
  out[1] = (uint8_t)(s16 >> 8);
  out[2] = (uint8_t)(lo16 & 0xff);
  out[3] = (uint8_t)(lo16 >> 8);
  return true;
}

}  // namespace oscar::kv::detail
