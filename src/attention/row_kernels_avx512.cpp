// The row kernels (row_kernels_simd.h) for AVX-512 F/BW/VL/DQ. 32 vector
// registers hold the accumulators of 8 query heads (x 2 rows or 2 chains),
// so a GQA-8 group unpacks each row once per pass and has enough independent
// FMA chains to hide their latency. The main set works on 16 floats per
// vector; the 8-wide set takes the shapes it cannot (head dims that are not
// a multiple of 16, q2 groups of 32).
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, and -Wuninitialized in the
// _mm512_reduce_* helpers; GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "attention/row_kernels_avx512_sums.h"
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

// exp(x) for x <= 0, 16 lanes: the same range reduction and polynomial as
// the 8-lane exp_nonpositive of row_kernels_simd.h, so both give the same
// values; lanes below float's range give 0.
__m512 exp_nonpositive16(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.3365447f);
  const __mmask16 in_range = _mm512_cmp_ps_mask(x, lowest, _CMP_GE_OQ);
  x = _mm512_max_ps(x, lowest);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(in_range, y, _mm512_castsi512_ps(e));
}

// The softmax weights of a block (see exp_shifted in row_kernels.h), 16
// lanes at a time: a decode block of 32 scores is two vectors instead of
// four, and the exponentials were about a tenth of q2_0 attention.
float exp_shifted16(const float* s, float m, float* p, int n, float* m_new) {
  __m512 vmax = _mm512_set1_ps(m);
  int j = 0;
  for (; j + 16 <= n; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
  float mx = _mm512_reduce_max_ps(vmax);
  for (; j < n; ++j) mx = std::max(mx, s[j]);
  *m_new = mx;
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 y = exp_nonpositive16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
    _mm512_storeu_ps(p + j, y);
    sum = _mm512_add_ps(sum, y);
  }
  if (j < n) {  // the tail as masked lanes, not a scalar loop
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
    const __m512 y = _mm512_maskz_mov_ps(k, exp_nonpositive16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vm)));
    _mm512_mask_storeu_ps(p + j, k, y);
    sum = _mm512_add_ps(sum, y);
  }
  return _mm512_reduce_add_ps(sum);
}

}  // namespace

RowKernels avx512_row_kernels() {
  RowKernels k = simd_kernels<Vec16, 8>();
  k.exp_shifted = exp_shifted16;
  return k;
}
RowKernels avx512_narrow_row_kernels() { return simd_kernels<Vec8, 8>(); }

}  // namespace oscar::attention::detail
