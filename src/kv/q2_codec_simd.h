// SIMD q2_0 row encoders (internal to the codec and its tests). Each writes
// the same bytes as q2_encode_reference, or declines and writes nothing
// that counts (the caller then runs the reference over the whole row).
#pragma once

#include <cstdint>

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

}  // namespace oscar::kv::detail
