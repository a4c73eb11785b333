// The rows16 Q6_K GEMV and GEMM tile (kquant_rows16.h) with AVX-512 VNNI.
// Per super-block of 16 rows: each 4-byte-per-row chunk of ql gives two sets
// of 4 nibbles, each joined with its 2 high bits from a qh chunk into 6-bit
// weights (0..63) by one vpternlogd, and fed to vpdpbusd against 4 activation
// bytes broadcast to all lanes. The -32 offset of Q6_K is the starting value
// of each sub-block's sum (-32 times the activations' sum over the sub-block,
// Q8_K's bsums), and the int8 sub-block scales are int32 multiplies.

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

// a | (b & c), bit by bit.
constexpr int kOrAnd = 0xF8;

// Rows 16g .. 16g + 15 against NC activation columns (act + c * act_stride),
// out[c * out_stride + r]. The weights of a chunk are loaded and assembled
// into 6-bit values once for all columns.
template <int NC>
void group_tile(int64_t nb, const BlockQ6_Kx16* wg, const uint8_t* act, size_t act_stride, float* out,
                size_t out_stride) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  __m512 total[NC];
  for (int c = 0; c < NC; ++c) total[c] = _mm512_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_Kx16& b = wg[ib];
    const BlockQ8_K* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = reinterpret_cast<const BlockQ8_K*>(act + c * act_stride) + ib;
    __m512i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm512_setzero_si512();
    // Sub-blocks 8h + 2j + q (j < 4): weights 128h + 32j + 16q + (0..15),
    // the quants at positions l = 16q .. 16q + 15 of ql and qh.
    const auto pass = [&](int h, int q) __attribute__((always_inline)) {
      __m512i acc[NC][4];
      for (int c = 0; c < NC; ++c)
        for (int j = 0; j < 4; ++j) acc[c][j] = _mm512_set1_epi32(-32 * x[c]->bsums[8 * h + 2 * j + q]);
      const auto chunk = [&](int k) __attribute__((always_inline)) {
        // The next super-block, a 16th per chunk: the chunks are read front
        // to back (BlockQ6_Kx16), so every line is asked for one super-block
        // before use. kStreamPrefetchBytes on (2 KiB, less than a super-block
        // of 3360 bytes) the tail of each super-block was asked for only
        // during its own first chunks: 1 thread 12.3-13.0 GB/s against
        // 13.1-13.9 (docs/decisions/0007-rows16-repacks.md). Two super-blocks on was
        // no faster (session 25).
        if (NC == 1) prefetch_part(reinterpret_cast<const uint8_t*>(&b + 1), sizeof(b), 8 * h + k, 8 * h + k + 1, 16);
        const __m512i lo = in_register(_mm512_loadu_si512(b.ql(16 * h + k)));      // weights j = 0 | 2
        const __m512i hi = in_register(_mm512_loadu_si512(b.ql(16 * h + 8 + k)));  // weights j = 1 | 3
        const __m512i top = in_register(_mm512_loadu_si512(b.qh(8 * h + k)));
        // The 32-bit shifts move bits across byte borders; bits45 keeps
        // only the two that belong to each byte.
        __m512i v[4];
        v[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(lo, low4), _mm512_slli_epi32(top, 4), bits45, kOrAnd);
        v[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(hi, low4), _mm512_slli_epi32(top, 2), bits45, kOrAnd);
        v[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi32(lo, 4), low4), top, bits45, kOrAnd);
        v[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 4), low4),
                                         _mm512_srli_epi32(top, 2), bits45, kOrAnd);
        for (int c = 0; c < NC; ++c) {
          const auto* a4 = reinterpret_cast<const int32_t*>(x[c]->qs + 128 * h + 4 * k);
          for (int j = 0; j < 4; ++j) acc[c][j] = _mm512_dpbusd_epi32(acc[c][j], v[j], _mm512_set1_epi32(a4[8 * j]));
        }
      };
      // One column: every loop written out (16% faster from L2); with more
      // columns the accumulators leave too few registers for that.
      if constexpr (NC == 1) {
        chunk(4 * q), chunk(4 * q + 1), chunk(4 * q + 2), chunk(4 * q + 3);
      } else {
        for (int k = 4 * q; k < 4 * q + 4; ++k) chunk(k);
      }
      for (int j = 0; j < 4; ++j) {
        const __m512i s =
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[8 * h + 2 * j + q])));
        for (int c = 0; c < NC; ++c) isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(acc[c][j], s));
      }
    };
    if constexpr (NC == 1) {
      pass(0, 0), pass(0, 1), pass(1, 0), pass(1, 1);
    } else {
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < 2; ++q) pass(h, q);
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.d)));
    for (int c = 0; c < NC; ++c)
      total[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, _mm512_set1_ps(x[c]->d)), total[c]);
  }
  for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out + c * out_stride, total[c]);
}

}  // namespace

void gemv_q6_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act,
                                 float* out) {
  rows16::gemv<BlockQ6_Kx16, group_tile<1>>(cols, w, g0, n, act, out);
}

void gemm_q6_K_rows16_avx512vnni(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride,
                                 int64_t nc, float* out, size_t out_stride) {
  rows16::gemm<BlockQ6_Kx16, group_tile<1>, group_tile<2>, group_tile<4>>(cols, w, g, act, act_stride, nc, out, out_stride);
}

}  // namespace oscar::quant
