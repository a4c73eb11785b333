// What the integer q2_0 kernels share (row_kernels_avx512vnni.cpp,
// row_kernels_avx512vbmi.cpp, row_kernels_amx.cpp; include only where
// AVX512-VNNI is enabled): their dispatch by head count, their vpdpbusd
// step, the unpacking of gathered group headers, and the scores'
// transposition of 16 rows' code words.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "attention/row_kernels_impl.h"

namespace oscar::attention::detail {
namespace {

// acc += codes . (the 4 signed bytes at w, in every lane). With the
// intrinsics GCC loads every broadcast into a register of its own first;
// the embedded broadcast makes it one instruction.
inline __m512i dpbusd_bcast(__m512i acc, __m512i codes, const int8_t* w) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(codes), "m"(*reinterpret_cast<const int32_t*>(w)));
  return acc;
}

// Calls f(std::integral_constant<int, n_heads>) for 1 <= n_heads <=
// kQ2IntCallHeads: the integer kernels are instantiated per head count, so
// their accumulators are arrays of known size that stay in registers.
template <class F>
inline void with_heads(int n_heads, F&& f) {
  static_assert(kQ2IntCallHeads == 8, "one case per head count");
  switch (n_heads) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

// 16 gathered group headers, one per 32-bit lane (the f16 scale in its low
// half, the f16 offset in its high half), as floats.
inline void unpack_headers(__m512i x, __m512& s, __m512& lo) {
  s = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x));
  lo = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)));
}

// 32 bytes of row a in the low half, 32 of row b in the high half.
inline __m512i load_pair(const uint8_t* a, const uint8_t* b) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// Words 0-7 (32 bytes) of 16 rows, transposed: lane L of out[m] holds word m
// of row kLaneRow[L]. in[r] holds row r in its low half and row r + 8 in its
// high half; three rounds of 8 shuffles (32-bit, 64-bit, 128-bit) leave the
// rows in the order the last round gives, [0-3, 8-11, 4-7, 12-15].
constexpr int kLaneRow[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};
inline void transpose_words(const __m512i* in, __m512i* out) {
  __m512i a[8], b[8];
  for (int i = 0; i < 4; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)  // rows 4i .. 4i+3 (and + 8)
    for (int w = 0; w < 2; ++w) {
      b[4 * i + 2 * w] = _mm512_unpacklo_epi64(a[4 * i + w], a[4 * i + 2 + w]);
      b[4 * i + 2 * w + 1] = _mm512_unpackhi_epi64(a[4 * i + w], a[4 * i + 2 + w]);
    }
  // b[v] (v < 4): rows 0-3 of words v and v + 4 in 128-bit lanes 0 and 1,
  // rows 8-11 in lanes 2 and 3; b[4 + v] the same for rows 4-7 and 12-15.
  for (int v = 0; v < 4; ++v) {
    out[v] = _mm512_shuffle_i32x4(b[v], b[4 + v], _MM_SHUFFLE(2, 0, 2, 0));
    out[v + 4] = _mm512_shuffle_i32x4(b[v], b[4 + v], _MM_SHUFFLE(3, 1, 3, 1));
  }
}

}  // namespace
}  // namespace oscar::attention::detail
