// Super-block header fields of the k-quants unpacked in vector registers,
// shared by the AVX2 and AVX-512 dot kernels (include only in files compiled
// with AVX2 + F16C).
//
// Why not scalar: the scalar unpack (kq_scale_words_k4, _cvtsh_ss) ends in
// moves from general-purpose to vector registers, six per super-block, and
// they were the most expensive part of a Q4_K GEMV step: doing the same work
// in xmm registers made `gemv_cached/q4_K` 8% faster on AVX-512
// (docs/decisions/0008-kquant-loads-in-registers.md).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace oscar::quant {
namespace {

// The four words of kq_scale_words_k4 (scales 0-7 in bytes 0-7, mins 0-7 in
// bytes 8-15) from the 12 packed bytes: with a0, a1, a2 their three 32-bit
// words, (a0 & 3f.., (a2 & 0f..) | (a0 >> 2 & 30..), a1 & 3f..,
// (a2 >> 4 & 0f..) | (a1 >> 2 & 30..)). Reads 16 bytes from `packed` (the
// field is followed by the weights in Q4_K and Q5_K).
inline __m128i k4_scale_bytes(const uint8_t* packed) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  const __m128i low = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
      _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

// The four words of kq_scale_words_q3 (the 16 scales, biased by 32) from the
// 12 packed bytes at `packed`: with a0, a1, a2 their three 32-bit words,
// ((a0 & 0f..) | (a2 << 4 & 30..), (a1 & 0f..) | (a2 << 2 & 30..),
// (a0 >> 4 & 0f..) | (a2 & 30..), (a1 >> 4 & 0f..) | (a2 >> 2 & 30..)).
// Reads the 16 bytes that end with the field (Q3_K's d follows it, and
// nothing may be read past a block).
inline __m128i k3_scale_bytes(const uint8_t* packed) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed - 4));  // (-, a0, a1, a2)
  const __m128i low = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(x, _MM_SHUFFLE(2, 1, 2, 1)), _mm_setr_epi32(0, 0, 4, 4)),
      _mm_set1_epi32(0x0f0f0f0f));
  const __m128i a2 = _mm_shuffle_epi32(x, _MM_SHUFFLE(3, 3, 3, 3));
  const __m128i high = _mm_and_si128(
      _mm_srlv_epi32(_mm_sllv_epi32(a2, _mm_setr_epi32(4, 2, 0, 0)), _mm_setr_epi32(0, 0, 0, 2)),
      _mm_set1_epi32(0x30303030));
  return _mm_or_si128(low, high);
}

// (d, dmin, 0, 0) from two adjacent f16 fields, and (d, d, d, d) from one.
inline __m128 f16_pair(const uint16_t* p) { return _mm_cvtph_ps(_mm_loadu_si32(p)); }
inline __m128 f16_all(const uint16_t* p) { return _mm_cvtph_ps(_mm_set1_epi16(static_cast<short>(*p))); }

// (d * ad, dmin * ad) for one activation block's scale ad: the factors of a
// super-block's weight sum and bias sum.
inline __m128 block_factors(__m128 dm, float ad) { return _mm_mul_ps(dm, _mm_set1_ps(ad)); }

}  // namespace
}  // namespace oscar::quant
