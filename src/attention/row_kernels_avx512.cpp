// The row kernels (row_kernels_simd.h) for AVX-512 F/BW/VL/DQ. 32 vector
// registers hold the accumulators of 8 query heads (x 2 rows or 2 chains),
// so a GQA-8 group unpacks each row once per pass and has enough independent
// FMA chains to hide their latency. The main set works on 16 floats per
// vector; the 8-wide set takes the shapes it cannot (head dims that are not
// a multiple of 16, q2 groups of 32).
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "attention/row_kernels_simd.h"

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
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static F f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static I widen(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F field(I c, int k) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srlv_epi32(c, _mm512_set1_epi32(2 * k)), _mm512_set1_epi32(3)));
  }
};

}  // namespace

RowKernels avx512_row_kernels() { return simd_kernels<Vec16, 8>(); }
RowKernels avx512_narrow_row_kernels() { return simd_kernels<Vec8, 8>(); }

}  // namespace oscar::attention::detail
