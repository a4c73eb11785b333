// q2_0 scores with integer dot products (AVX512-VNNI): vpdpbusd multiplies
// 64 unsigned bytes by 64 signed bytes and adds each four products into a
// 32-bit lane. The 2-bit codes are such bytes after one shift and mask per
// field (no widening, no conversion to float), and the query is held as
// kQ2IntDigits signed bytes per value (Q2IntQuery, prepared once per query by
// row_kernels.cpp), so an integer dot is exact and the error against the
// float kernels is the query's rounding to 24 bits (and a float rounding
// where the digits' sums are combined).
//
// Each 32-bit lane holds one row: the code bytes of 16 rows are transposed
// four bytes (a word) at a time, so lane j of a field's register holds the
// codes of four consecutive values of row j, and one vpdpbusd against those
// values' digits (broadcast to every lane) adds four products per row. The
// sums then need no lane reduction: the epilogue is a conversion and two
// FMAs per (head, 16 rows), and the scores leave in one store. Per group:
//   q . x = s * (q . code) + lo * sum(q),
// with q . code = step * sum_t 256^(T-1-t) (digits_t . code).
// The kernels this replaced kept 32 values of two rows per register and
// summed lanes per row: at d128 x 4 heads that epilogue took about as long
// as the products (docs/decisions/0004-integer-q2_0-kernels-and-amx.md).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "attention/row_kernels_impl.h"
#include "attention/row_kernels_vnni.h"
#include "core/in_register.h"

namespace oscar::attention::detail {
namespace {

constexpr int kT = kQ2IntDigits;
constexpr int kSlotBytes = (int)kQ2IntSlotBytes;

// H heads (up to kQ2IntCallHeads): q[c] holds heads 4c .. 4c + 3. Each
// word's codes are shifted and masked once for all H heads, and the 16 rows
// transposed once: at 8 heads (Gemma-4's groups) one pass instead of two.
template <int H>
void score_q2_int_lanes(const RowBlock& b, const Q2IntView* q, float* scores, size_t ss) {
  static_assert(H <= kQ2IntCallHeads);
  constexpr int kPerView = kQ2IntQueryHeads;
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g;
  const size_t gb = 4 + (size_t)qn;
  const __m512i three = _mm512_set1_epi8(3);
  // Lane L of a result belongs to row kLaneRow[L]; the order is its own
  // inverse, so the same permutation puts the scores back in row order.
  const __m512i lane_row = _mm512_loadu_si512(kLaneRow);
  for (int j0 = 0; j0 < b.n; j0 += 16) {
    prefetch_ahead(b, j0, 16);
    const int left = b.n - j0;
    const __mmask16 m16 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    const uint8_t* r[16];  // rows past the block repeat its last one
    for (int i = 0; i < 16; ++i) r[i] = b.rows + (size_t)std::min(j0 + i, b.n - 1) * b.stride;
    const __m512i hdr_at = _mm512_mullo_epi32(_mm512_min_epi32(lane_row, _mm512_set1_epi32(left - 1)),
                                              _mm512_set1_epi32((int)b.stride));
    __m512 sum[H];
    for (int h = 0; h < H; ++h) sum[h] = _mm512_setzero_ps();
    for (int gi = 0; gi < ng; ++gi) {
      __m512i dot[H][kT];
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h)
#pragma GCC unroll 3
        for (int t = 0; t < kT; ++t) dot[h][t] = _mm512_setzero_si512();
      for (int cb = 0; cb < qn; cb += 32) {
        const size_t at = gi * gb + 4 + cb;
        __m512i in[8];
        alignas(64) __m512i w[8];
        for (int i = 0; i < 8; ++i) in[i] = load_pair(r[i] + at, r[i + 8] + at);
        transpose_words(in, w);
        // The slot of (word m, field k) of each view's digits.
        const size_t slot0 = ((size_t)gi * (qn / 4) + cb / 4) * 4 * kSlotBytes;
#pragma GCC unroll 8
        for (int m = 0; m < 8; ++m)
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            // Past 4 heads the words come back from memory: the 24
            // accumulators leave too few registers to keep all 8.
            const __m512i wm = H > kPerView ? in_register(_mm512_load_si512(&w[m])) : w[m];
            const __m512i codes = _mm512_and_si512(k == 0 ? wm : _mm512_srli_epi16(wm, 2 * k), three);
            const size_t slot = slot0 + ((size_t)m * 4 + k) * kSlotBytes;
#pragma GCC unroll 8
            for (int h = 0; h < H; ++h)
#pragma GCC unroll 3
              for (int t = 0; t < kT; ++t)
                dot[h][t] = dpbusd_bcast(dot[h][t], codes, q[h / kPerView].digits + slot + ((h % kPerView) * kT + t) * 4);
          }
      }
      // Lane L: the f16 scale of its row's group in the low half, the offset in the high half.
      __m512 s, lo;
      unpack_headers(_mm512_i32gather_epi32(hdr_at, b.rows + (size_t)j0 * b.stride + gi * gb, 1), s, lo);
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h) {
        __m512 v = _mm512_cvtepi32_ps(dot[h][0]);
#pragma GCC unroll 3
        for (int t = 1; t < kT; ++t) v = _mm512_fmadd_ps(v, _mm512_set1_ps(256.0f), _mm512_cvtepi32_ps(dot[h][t]));
        sum[h] = _mm512_fmadd_ps(v, s, sum[h]);
        const Q2IntView& qv = q[h / kPerView];
        sum[h] = _mm512_fmadd_ps(lo, _mm512_set1_ps(qv.lo_weight[(size_t)(h % kPerView) * ng + gi]), sum[h]);
      }
    }
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h)
      _mm512_mask_storeu_ps(
          scores + (size_t)h * ss + j0, m16,
          _mm512_permutexvar_ps(lane_row, _mm512_mul_ps(sum[h], _mm512_set1_ps(q[h / kPerView].out_scale[h % kPerView]))));
  }
}

void score_q2_int(const RowBlock& b, const Q2IntView* q, int n_heads, float* scores, size_t stride) {
  with_heads(n_heads, [&](auto h) { score_q2_int_lanes<decltype(h)::value>(b, q, scores, stride); });
}

}  // namespace

IntRowKernels avx512vnni_row_kernels() { return {score_q2_int}; }

}  // namespace oscar::attention::detail
