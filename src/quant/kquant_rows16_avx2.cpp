// The rows16 Q4_K and Q6_K GEMVs and GEMM tiles (kquant_rows16.h) for CPUs
// with AVX2 but without AVX-512: the same groups, taken as two halves of 8
// rows (one ymm of 8 int32 lanes each). A 64-byte chunk of a group is two
// 32-byte halves, one per 8 rows; the 4-byte dot products of unsigned weights
// with signed activations are vpmaddubsw + vpmaddwd (no VNNI here: the pair
// sums stay below 2 x 63 x 128, inside int16).

#include <immintrin.h>

#include "core/in_register.h"
#include "core/prefetch.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_rows16.h"
#include "quant/kquant_rows16_tiles.h"

namespace oscar::quant {

namespace {

constexpr int kHalf = 8;  // rows per ymm

// acc + the 4-byte dot products of w (unsigned) and a (signed) per lane.
inline __m256i dot4(__m256i acc, __m256i w, __m256i a) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
}

// Bytes 8h .. 8h + 7 of a 16-byte vector (one per row) as 8 int32 lanes.
inline __m256i half_u8(__m128i v, int h) { return _mm256_cvtepu8_epi32(h ? _mm_srli_si128(v, 8) : v); }

inline __m256i chunk_half(const uint8_t* chunk, int h) {
  return in_register(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32 * h)));
}

// Rows 16g + 8h .. 16g + 8h + 7 of a Q4_K group against NC columns.
template <int NC>
void q4_half_tile(int64_t nb, const BlockQ4_Kx16* wg, int h, const uint8_t* act, size_t act_stride, float* out,
                  size_t out_stride) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256 total[NC];
  for (int c = 0; c < NC; ++c) total[c] = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ4_Kx16& b = wg[ib];
    if (NC == 1 && h == 0) prefetch_lines(reinterpret_cast<const uint8_t*>(&b) + kStreamPrefetchBytes, sizeof(b));
    const BlockQ8_K* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = reinterpret_cast<const BlockQ8_K*>(act + c * act_stride) + ib;
    __m128i sc[8];
    rows16::unpack_q4_K_scales(b, false, sc);
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      // Pair sums of 4-bit weights stay within int16 for a whole sub-block
      // (8 x 2 x 15 x 128 = 30720): one vpmaddwd per sub-block, not per chunk.
      __m256i e[NC], o[NC];
      for (int c = 0; c < NC; ++c) e[c] = o[c] = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        const __m256i wv = chunk_half(b.qs[8 * p + k], h);
        const __m256i lo = _mm256_and_si256(wv, low4), hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), low4);
        for (int c = 0; c < NC; ++c) {
          const auto* q = reinterpret_cast<const int32_t*>(x[c]->qs + 64 * p);
          e[c] = _mm256_add_epi16(e[c], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(q[k])));
          o[c] = _mm256_add_epi16(o[c], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(q[8 + k])));
        }
      }
      const __m256i ones = _mm256_set1_epi16(1);
      for (int c = 0; c < NC; ++c) e[c] = _mm256_madd_epi16(e[c], ones), o[c] = _mm256_madd_epi16(o[c], ones);
      const __m256i se = half_u8(sc[2 * p], h), so = half_u8(sc[2 * p + 1], h);
      for (int c = 0; c < NC; ++c)
        isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_mullo_epi32(e[c], se), _mm256_mullo_epi32(o[c], so)));
    }
    __m128i mn[8];
    rows16::unpack_q4_K_scales(b, true, mn);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d + kHalf * h)));
    const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.dmin + kHalf * h)));
    for (int c = 0; c < NC; ++c) {
      __m256i ibias = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j)
        ibias = _mm256_add_epi32(ibias, _mm256_mullo_epi32(half_u8(mn[j], h),
                                                           _mm256_set1_epi32(x[c]->bsums[2 * j] + x[c]->bsums[2 * j + 1])));
      const __m256 ad = _mm256_set1_ps(x[c]->d);
      total[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, ad), total[c]);
      total[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ibias), _mm256_mul_ps(dm, ad), total[c]);
    }
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + c * out_stride + kHalf * h, total[c]);
}

// a | (b & m): the 2 high bits joined to a nibble (ternary logic is AVX-512).
inline __m256i join(__m256i nib, __m256i top, __m256i m) { return _mm256_or_si256(nib, _mm256_and_si256(top, m)); }

// Rows 16g + 8h .. 16g + 8h + 7 of a Q6_K group against NC columns; see
// kquant_rows16_q6_K_avx512vnni.cpp for the arithmetic.
template <int NC>
void q6_half_tile(int64_t nb, const BlockQ6_Kx16* wg, int h, const uint8_t* act, size_t act_stride, float* out,
                  size_t out_stride) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), bits45 = _mm256_set1_epi8(0x30);
  __m256 total[NC];
  for (int c = 0; c < NC; ++c) total[c] = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < nb; ++ib) {
    const BlockQ6_Kx16& b = wg[ib];
    if (NC == 1 && h == 0) prefetch_lines(reinterpret_cast<const uint8_t*>(&b) + kStreamPrefetchBytes, sizeof(b));
    const BlockQ8_K* x[NC];
    for (int c = 0; c < NC; ++c) x[c] = reinterpret_cast<const BlockQ8_K*>(act + c * act_stride) + ib;
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int hh = 0; hh < 2; ++hh)
      for (int q = 0; q < 2; ++q) {
        __m256i acc[NC][4];
        for (int c = 0; c < NC; ++c)
          for (int j = 0; j < 4; ++j) acc[c][j] = _mm256_set1_epi32(-32 * x[c]->bsums[8 * hh + 2 * j + q]);
        for (int k = 4 * q; k < 4 * q + 4; ++k) {
          const __m256i lo = chunk_half(b.ql(16 * hh + k), h), hi = chunk_half(b.ql(16 * hh + 8 + k), h);
          const __m256i top = chunk_half(b.qh(8 * hh + k), h);
          __m256i v[4];
          v[0] = join(_mm256_and_si256(lo, low4), _mm256_slli_epi32(top, 4), bits45);
          v[1] = join(_mm256_and_si256(hi, low4), _mm256_slli_epi32(top, 2), bits45);
          v[2] = join(_mm256_and_si256(_mm256_srli_epi32(lo, 4), low4), top, bits45);
          v[3] = join(_mm256_and_si256(_mm256_srli_epi32(hi, 4), low4), _mm256_srli_epi32(top, 2), bits45);
          for (int c = 0; c < NC; ++c) {
            const auto* a4 = reinterpret_cast<const int32_t*>(x[c]->qs + 128 * hh + 4 * k);
            for (int j = 0; j < 4; ++j) acc[c][j] = dot4(acc[c][j], v[j], _mm256_set1_epi32(a4[8 * j]));
          }
        }
        for (int j = 0; j < 4; ++j) {
          const __m256i s = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales[8 * hh + 2 * j + q] + kHalf * h)));
          for (int c = 0; c < NC; ++c) isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(acc[c][j], s));
        }
      }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d + kHalf * h)));
    for (int c = 0; c < NC; ++c)
      total[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, _mm256_set1_ps(x[c]->d)), total[c]);
  }
  for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + c * out_stride + kHalf * h, total[c]);
}

// A whole group, one half after the other: the second pass finds the
// group's lines in L1/L2 (a group row of 2560 columns is 23-33 KiB).
template <class Group, void (*Half)(int64_t, const Group*, int, const uint8_t*, size_t, float*, size_t)>
void both_halves(int64_t nb, const Group* wg, const uint8_t* act, size_t act_stride, float* out, size_t out_stride) {
  for (int h = 0; h < 2; ++h) Half(nb, wg, h, act, act_stride, out, out_stride);
}

template <int NC>
constexpr rows16::GroupTileFn<BlockQ4_Kx16> kQ4Tile = both_halves<BlockQ4_Kx16, q4_half_tile<NC>>;
template <int NC>
constexpr rows16::GroupTileFn<BlockQ6_Kx16> kQ6Tile = both_halves<BlockQ6_Kx16, q6_half_tile<NC>>;

}  // namespace

void gemv_q4_K_rows16_avx2(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out) {
  rows16::gemv<BlockQ4_Kx16, kQ4Tile<1>>(cols, w, g0, n, act, out);
}
void gemm_q4_K_rows16_avx2(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride, int64_t nc,
                           float* out, size_t out_stride) {
  rows16::gemm<BlockQ4_Kx16, kQ4Tile<1>, kQ4Tile<2>>(cols, w, g, act, act_stride, nc, out, out_stride);
}
void gemv_q6_K_rows16_avx2(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out) {
  rows16::gemv<BlockQ6_Kx16, kQ6Tile<1>>(cols, w, g0, n, act, out);
}
void gemm_q6_K_rows16_avx2(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride, int64_t nc,
                           float* out, size_t out_stride) {
  rows16::gemm<BlockQ6_Kx16, kQ6Tile<1>, kQ6Tile<2>>(cols, w, g, act, act_stride, nc, out, out_stride);
}

}  // namespace oscar::quant
