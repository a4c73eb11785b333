// What both integer q2_0 kernels share (row_kernels_avx512vnni.cpp,
// row_kernels_avx512vbmi.cpp; include only where AVX512-VNNI is enabled):
// their vpdpbusd step and the unpacking of gathered group headers.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace oscar::attention::detail {
namespace {

// acc += codes . (the 4 signed bytes at w, in every lane). With the
// intrinsics GCC loads every broadcast into a register of its own first;
// the embedded broadcast makes it one instruction.
inline __m512i dpbusd_bcast(__m512i acc, __m512i codes, const int8_t* w) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(codes), "m"(*reinterpret_cast<const int32_t*>(w)));
  return acc;
}

// 16 gathered group headers, one per 32-bit lane (the f16 scale in its low
// half, the f16 offset in its high half), as floats.
inline void unpack_headers(__m512i x, __m512& s, __m512& lo) {
  s = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x));
  lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)));
}

}  // namespace
}  // namespace oscar::attention::detail
