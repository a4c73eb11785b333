// The 16-float vector traits of the AVX-512 row kernels (row_kernels_simd.h
// describes what a traits struct provides), shared by the kernels of
// row_kernels_avx512.cpp and the prompt tiles of tile_kernels_avx512.cpp.
// Include only where AVX-512 F/BW/VL/DQ is enabled, after
// row_kernels_simd.h.
#pragma once

#include <immintrin.h>

#include "attention/row_kernels_avx512_sums.h"

namespace oscar::attention::detail {
namespace {

struct Vec16 {
  using F = __m512;
  using I = __m512i;
  static constexpr int W = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F x) { _mm512_storeu_ps(p, x); }
  static F set1(float f) { return _mm512_set1_ps(f); }
  static F bcast(const float* p) { return _mm512_set1_ps(*p); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  // For exp_nonpositive and exp_shifted (a decode block of 32 scores is two
  // vectors here instead of four).
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F round(F x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // One masked vscalefps (y * 2^n, exact like the multiply by a built
  // power of two it replaces, without building it).
  static F times_pow2_where(F y, F n, F x, float lo) {
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_GE_OQ), y, n);
  }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static float hmax(F v) { return _mm512_reduce_max_ps(v); }
  // Eight lane sums by a transposing tree: halves, then sum_halves8;
  // about 3 shuffles and adds per sum against 8 for a reduction of each
  // vector on its own.
  static void sums8(const F* v, float* out) {
    __m512 p[4];
    for (int i = 0; i < 4; ++i)  // (v[2i] half sums | v[2i+1] half sums)
      p[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                           _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
    _mm256_storeu_ps(out, sum_halves8(p));
  }
  static F f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static I widen(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F quarters(float s, float lo) {
    return _mm512_fmadd_ps(_mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3), _mm512_set1_ps(s),
                           _mm512_set1_ps(lo));
  }
  static F pick(I c, int k, F t) { return _mm512_permutexvar_ps(k ? _mm512_srli_epi32(c, 2 * k) : c, t); }
  static F field(I c, int k) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srlv_epi32(c, _mm512_set1_epi32(2 * k)), _mm512_set1_epi32(3)));
  }
};

}  // namespace
}  // namespace oscar::attention::detail
