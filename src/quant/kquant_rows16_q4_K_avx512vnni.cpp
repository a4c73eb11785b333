// The rows16 Q4_K GEMV (kquant_rows16.h) with AVX-512 VNNI: per super-block
// of 16 rows, the scales unpacked on xmm vectors, 64 vpdpbusd (16 rows x 4
// weights x 4 activation bytes each), the sub-block scales and mins as int32
// multiplies, and two FMAs into the 16 row totals.

// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "core/in_register.h"
#include "core/prefetch.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_rows16.h"
#include "quant/kquant_rows16_tiles.h"

namespace oscar::quant {

namespace {

// Rows 16g .. 16g + 15 against NC activation columns (act + c * act_stride),
// out[c * out_stride + r]. The weights of a chunk are loaded and split into
// nibbles once for all columns. One column keeps two accumulators per
// sub-block parity so that four vpdpbusd chains run side by side.
template <int NC>
void group_tile(int64_t nb, const BlockQ4_Kx16* wg, const uint8_t* act, size_t act_stride, float* out,
                size_t out_stride) {
  constexpr int kChains = NC == 1 ? 2 : 1;
  const __m512i low4 = _mm512_set1_epi8(0x0f), high4 = _mm512_set1_epi8((char)0xf0);
  __m512 total[NC];
  for (int c = 0; c < NC; ++c) total[c] = _mm512_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ4_Kx16& b = wg[ib];
    const BlockQ8_K* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = reinterpret_cast<const BlockQ8_K*>(act + c * act_stride) + ib;
    __m128i sc[8];
    rows16::unpack_q4_K_scales(b, false, sc);
    __m512i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      __m512i e[NC][kChains], o[NC][kChains];
      for (int c = 0; c < NC; ++c)
        for (int h = 0; h < kChains; ++h) e[c][h] = o[c][h] = _mm512_setzero_si512();
      // Unrolled so that k % kChains is known and the accumulators stay in
      // registers: rolled (the prefetch loop inside kept GCC from unrolling
      // it) they went through the stack, one store and reload per vpdpbusd.
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        // The super-block kStreamPrefetchBytes on, a 32nd per chunk.
        if (NC == 1) prefetch_part(reinterpret_cast<const uint8_t*>(&b) + kStreamPrefetchBytes, sizeof(b), 8 * p + k, 8 * p + k + 1, 32);
        const __m512i wv = in_register(_mm512_loadu_si512(b.qs[8 * p + k]));
        // The high nibbles stay in place (16x their value): one AND instead
        // of a shift and an AND per chunk; the sums are divided by 16 below.
        const __m512i lo = _mm512_and_si512(wv, low4), hi = _mm512_and_si512(wv, high4);
        for (int c = 0; c < NC; ++c) {
          const auto* q = reinterpret_cast<const int32_t*>(x[c]->qs + 64 * p);
          e[c][k % kChains] = _mm512_dpbusd_epi32(e[c][k % kChains], lo, _mm512_set1_epi32(q[k]));
          o[c][k % kChains] = _mm512_dpbusd_epi32(o[c][k % kChains], hi, _mm512_set1_epi32(q[8 + k]));
        }
      }
      const __m512i se = _mm512_cvtepu8_epi32(sc[2 * p]), so = _mm512_cvtepu8_epi32(sc[2 * p + 1]);
      for (int c = 0; c < NC; ++c) {
        __m512i ec = e[c][0], oc = o[c][0];
        if (kChains == 2) ec = _mm512_add_epi32(ec, e[c][kChains - 1]), oc = _mm512_add_epi32(oc, o[c][kChains - 1]);
        oc = _mm512_srai_epi32(oc, 4);  // exact: a multiple of 16, at most 16 x 8 x 4 x 15 x 128 in size
        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(ec, se));
        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(oc, so));
      }
    }
    // The mins meet the activations' sums of each 32 values.
    __m128i mn[8];
    rows16::unpack_q4_K_scales(b, true, mn);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.d)));
    const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.dmin)));
    for (int c = 0; c < NC; ++c) {
      __m512i ibias = _mm512_setzero_si512();
      for (int j = 0; j < 8; ++j)
        ibias = _mm512_add_epi32(ibias, _mm512_mullo_epi32(_mm512_cvtepu8_epi32(mn[j]),
                                                           _mm512_set1_epi32(x[c]->bsums[2 * j] + x[c]->bsums[2 * j + 1])));
      const __m512 ad = _mm512_set1_ps(x[c]->d);
      total[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, ad), total[c]);
      total[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ibias), _mm512_mul_ps(dm, ad), total[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out + c * out_stride, total[c]);
}

}  // namespace

void gemv_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act,
                                 float* out) {
  rows16::gemv<BlockQ4_Kx16, group_tile<1>>(cols, w, g0, n, act, out);
}

void gemm_q4_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                                 int64_t nc, float* out, size_t out_stride) {
  rows16::gemm<BlockQ4_Kx16, group_tile<1>, group_tile<2>, group_tile<4>>(cols, w, g, act, act_stride, nc, out, out_stride);
}

}  // namespace oscar::quant
