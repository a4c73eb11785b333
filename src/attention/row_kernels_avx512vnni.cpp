// q2_0 scores with integer dot products (AVX512-VNNI): vpdpbusd multiplies
// 64 unsigned bytes by 64 signed bytes and adds each four products into a
// 32-bit lane. The 2-bit codes are such bytes after one shift and mask per
// quarter of a group (no widening, no conversion to float), and the query is
// held as kQ2IntDigits signed bytes per value (Q2IntQuery, prepared once per
// query by row_kernels.cpp), so an integer dot is exact and the only error
// against the float kernels is the query's rounding to 24 bits.
//
// Two rows go through one register: the 32 code bytes of a chunk of row a in
// the low half and those of row b in the high half, against query digits
// stored twice, in the order the loop reads them at constant offsets
// (row_kernels_impl.h gives the layout). Per group:
//   q . x = s * (q . code) + lo * sum(q),
// with q . code = step * sum_t 256^(T-1-t) (digits_t . code). The lanes of
// each head are summed for eight (head, row) pairs at once at the end.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "attention/row_kernels_avx512_sums.h"
#include "attention/row_kernels_f16.h"
#include "attention/row_kernels_impl.h"

namespace oscar::attention::detail {
namespace {

constexpr int kT = kQ2IntDigits;

// 32 bytes of row a in the low half, 32 of row b in the high half.
inline __m512i load_pair(const uint8_t* a, const uint8_t* b) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// The group scales of rows a and b (group headers at ca and cb) in the
// lanes of their halves, and their offsets in lane 0 of each half (the lane
// sums then add each offset term once).
inline __m512 pair_scales(const uint8_t* ca, const uint8_t* cb) {
  return _mm512_insertf32x8(_mm512_set1_ps(f16_at(ca)), _mm256_set1_ps(f16_at(cb)), 1);
}
inline __m512 pair_offsets(const uint8_t* ca, const uint8_t* cb) {
  return _mm512_insertf32x4(_mm512_castps128_ps512(_mm_set_ss(f16_at(ca + 2))), _mm_set_ss(f16_at(cb + 2)), 2);
}

// x, kept in a register. GCC folds a load used by several vpdpbusd into each
// of them as a memory operand, so the Horner kernel loaded every query digit
// vector once per register pair (96 zmm loads per 4 rows); loaded once, it
// ran 1.4x faster (BM_Scores d128 x 4 heads, bench/RESULTS.md session 12).
inline __m512i in_register(__m512i x) {
  asm("" : "+v"(x));
  return x;
}

// (os0, os0, os1, os1, ...): each head's step * scale, for the two rows of
// a register pair, in the order sum_halves8 leaves their sums.
template <int H>
inline __m256 pair_out_scales(const Q2IntView& q) {
  float os[8] = {};
  for (int h = 0; h < H; ++h) os[2 * h] = os[2 * h + 1] = q.out_scale[h];
  return _mm256_loadu_ps(os);
}

template <int H>
void score_q2_int_h(const RowBlock& b, const Q2IntView& q, float* scores, size_t ss) {
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, nc = qn / 32;
  const size_t gb = 4 + (size_t)qn;
  const __m512i three = _mm512_set1_epi8(3);
  const __m256 out_scale = pair_out_scales<H>(q);

  for (int j = 0; j < b.n; j += 2) {
    prefetch_ahead(b, j, 2);
    const uint8_t* ra = b.rows + (size_t)j * b.stride;
    const uint8_t* rb = j + 1 < b.n ? ra + b.stride : ra;
    __m512 acc[4];
    for (int h = 0; h < 4; ++h) acc[h] = _mm512_setzero_ps();
    for (int gi = 0; gi < ng; ++gi) {
      const uint8_t* ca = ra + gi * gb;
      const uint8_t* cb = rb + gi * gb;
      __m512i dot[H][kT];
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) dot[h][t] = _mm512_setzero_si512();
      const int8_t* qc = q.digits + (size_t)gi * nc * 4 * kQ2IntChunkBytes;
      for (int c = 0; c < nc; ++c, qc += 4 * kQ2IntChunkBytes) {
        const __m512i x = load_pair(ca + 4 + 32 * c, cb + 4 + 32 * c);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i codes = _mm512_and_si512(k == 0 ? x : _mm512_srli_epi16(x, 2 * k), three);
#pragma GCC unroll 8
          for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
            for (int t = 0; t < kT; ++t)
              dot[h][t] = _mm512_dpbusd_epi32(
                  dot[h][t], codes, _mm512_loadu_si512(qc + k * kQ2IntChunkBytes + (h * kT + t) * 64));
        }
      }
      // Per lane: (digit sums in base 256) * s + lo * sum(q) / step in lane 0
      // of each row's half (the lane sums add it once).
      const __m512 s = pair_scales(ca, cb), lo = pair_offsets(ca, cb);
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h) {
        __m512 v = _mm512_cvtepi32_ps(dot[h][0]);
#pragma GCC unroll 4
        for (int t = 1; t < kT; ++t) v = _mm512_fmadd_ps(v, _mm512_set1_ps(256.0f), _mm512_cvtepi32_ps(dot[h][t]));
        acc[h] = _mm512_fmadd_ps(v, s, acc[h]);
        acc[h] = _mm512_fmadd_ps(lo, _mm512_set1_ps(q.lo_weight[(size_t)h * ng + gi]), acc[h]);
      }
    }
    // Lanes 0-7: (h0 a, h0 b, h1 a, h1 b, ...), each acc[h] holding row a in
    // lanes 0-7 and row b in lanes 8-15.
    const __m256 r = _mm256_mul_ps(sum_halves8(acc), out_scale);
    alignas(32) float out[8];
    _mm256_store_ps(out, r);
    const bool pair = j + 1 < b.n;
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h) {
      scores[(size_t)h * ss + j] = out[2 * h];
      if (pair) scores[(size_t)h * ss + j + 1] = out[2 * h + 1];
    }
  }
}

// The same for groups of 128 values (one 32-byte chunk of codes per row),
// with the digits combined in Horner form inside the int32 accumulators:
// each digit's products are added to the accumulator shifted left by 8
// (exact: the sum stays far below 2^31). One accumulator per head instead of
// one per (head, digit) leaves registers for the codes of two register
// pairs (4 rows) per pass, so each query digit loaded feeds two products,
// and the epilogue converts once per head instead of once per digit.
// BM_Scores d128 x 4 heads: 6.6-6.8 ns per row against 7.9-8.7. With fewer
// than 3 heads it has too few independent accumulators (2 heads: no faster),
// and one pair per pass was slower (9.3 ns: dpbusd latency).
template <int H>
void score_q2_int_horner(const RowBlock& b, const Q2IntView& q, float* scores, size_t ss) {
  constexpr int RP = 2;  // register pairs (two rows each) per pass
  const int ng = b.d / b.g;
  const size_t gb = 4 + (size_t)b.g / 4;
  const __m512i three = _mm512_set1_epi8(3);
  const __m256 out_scale = pair_out_scales<H>(q);

  for (int j = 0; j < b.n; j += 2 * RP) {
    prefetch_ahead(b, j, 2 * RP);
    const uint8_t* r[2 * RP];  // rows past the block repeat its last one
    for (int i = 0; i < 2 * RP; ++i) r[i] = b.rows + (size_t)std::min(j + i, b.n - 1) * b.stride;
    __m512 acc[RP][4];
    for (int p = 0; p < RP; ++p)
      for (int h = 0; h < 4; ++h) acc[p][h] = _mm512_setzero_ps();
    for (int gi = 0; gi < ng; ++gi) {
      __m512i codes[RP][4];
#pragma GCC unroll 2
      for (int p = 0; p < RP; ++p) {
        const __m512i x = load_pair(r[2 * p] + gi * gb + 4, r[2 * p + 1] + gi * gb + 4);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) codes[p][k] = _mm512_and_si512(k == 0 ? x : _mm512_srli_epi16(x, 2 * k), three);
      }
      __m512i dot[RP][H];
#pragma GCC unroll 2
      for (int p = 0; p < RP; ++p)
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) dot[p][h] = _mm512_setzero_si512();
      const int8_t* qg = q.digits + (size_t)gi * 4 * kQ2IntChunkBytes;
#pragma GCC unroll 3
      for (int t = 0; t < kT; ++t) {
        if (t > 0)
#pragma GCC unroll 2
          for (int p = 0; p < RP; ++p)
#pragma GCC unroll 4
            for (int h = 0; h < H; ++h) dot[p][h] = _mm512_slli_epi32(dot[p][h], 8);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
#pragma GCC unroll 4
          for (int h = 0; h < H; ++h) {
            const __m512i qd = in_register(_mm512_loadu_si512(qg + (size_t)k * kQ2IntChunkBytes + (h * kT + t) * 64));
#pragma GCC unroll 2
            for (int p = 0; p < RP; ++p) dot[p][h] = _mm512_dpbusd_epi32(dot[p][h], codes[p][k], qd);
          }
      }
#pragma GCC unroll 2
      for (int p = 0; p < RP; ++p) {
        const uint8_t* ca = r[2 * p] + gi * gb;
        const uint8_t* cb = r[2 * p + 1] + gi * gb;
        const __m512 s = pair_scales(ca, cb), lo = pair_offsets(ca, cb);
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
          acc[p][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[p][h]), s, acc[p][h]);
          acc[p][h] = _mm512_fmadd_ps(lo, _mm512_set1_ps(q.lo_weight[(size_t)h * ng + gi]), acc[p][h]);
        }
      }
    }
#pragma GCC unroll 2
    for (int p = 0; p < RP; ++p) {
      alignas(32) float out[8];
      _mm256_store_ps(out, _mm256_mul_ps(sum_halves8(acc[p]), out_scale));
      const int j0 = j + 2 * p;
#pragma GCC unroll 4
      for (int h = 0; h < H; ++h) {
        if (j0 < b.n) scores[(size_t)h * ss + j0] = out[2 * h];
        if (j0 + 1 < b.n) scores[(size_t)h * ss + j0 + 1] = out[2 * h + 1];
      }
    }
  }
}

void score_q2_int(const RowBlock& b, const Q2IntView& q, int n_heads, float* scores, size_t stride) {
  switch (n_heads) {
    case 1: return score_q2_int_h<1>(b, q, scores, stride);
    case 2: return score_q2_int_h<2>(b, q, scores, stride);
    case 3: return b.g == 128 ? score_q2_int_horner<3>(b, q, scores, stride) : score_q2_int_h<3>(b, q, scores, stride);
    default: return b.g == 128 ? score_q2_int_horner<4>(b, q, scores, stride) : score_q2_int_h<4>(b, q, scores, stride);
  }
}

}  // namespace

IntRowKernels avx512vnni_row_kernels() { return {score_q2_int}; }

}  // namespace oscar::attention::detail
