// Lane sums of the AVX-512 float row kernels (row_kernels_avx512.cpp;
// include only where AVX-512 F is enabled).
#pragma once

#include <immintrin.h>

namespace oscar::attention::detail {
namespace {

// p[i] holds the 8-lane partial sums of two vectors: v[2i] in lanes 0-7,
// v[2i+1] in lanes 8-15. Returns the full sums of v[0..7] in lanes 0-7,
// in order: quarters, then the four lanes of each quarter, about 2 shuffles
// and adds per sum.
inline __m256 sum_halves8(const __m512* p) {
  __m512 q[2];
  for (int i = 0; i < 2; ++i)  // quarter k: 4 partial sums of v[4i + k]
    q[i] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 t = _mm512_add_ps(_mm512_unpacklo_ps(q[0], q[1]), _mm512_unpackhi_ps(q[0], q[1]));
  // Quarter k, lanes 4k and 4k+1: the sums of v[k] and v[4 + k].
  const __m512 w = _mm512_add_ps(t, _mm512_permute_ps(t, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, w));
}

}  // namespace
}  // namespace oscar::attention::detail
