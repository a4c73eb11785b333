// What the rows16 SIMD files share (kquant_rows16_*.cpp): the GEMV and GEMM
// drivers over a group tile, and Q4_K's scale unpacking on 16-byte vectors.
// Included only by x86 files built with AVX2 or more; everything here is
// `static` or a template instantiated with the including file's own tile, so
// each file keeps code built with its own target flags (see kquant_blocks.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "quant/kquant_blocks.h"
#include "quant/kquant_rows16.h"

namespace oscar::quant::rows16 {

// A group tile: rows 16g .. 16g + 15 of one group (nb super-blocks) against
// NC activation columns (act + c * act_stride), out[c * out_stride + r].
template <class Group>
using GroupTileFn = void (*)(int64_t nb, const Group* wg, const uint8_t* act, size_t act_stride, float* out,
                             size_t out_stride);

template <class Group, GroupTileFn<Group> Tile1>
void gemv(int64_t cols, const void* w, int64_t g0, int64_t n, const void* act, float* out) {
  const int64_t nb = cols / kQK_K;
  const auto* groups = static_cast<const Group*>(w);
  for (int64_t g = g0; g < g0 + n; ++g)
    Tile1(nb, groups + g * nb, static_cast<const uint8_t*>(act), 0, out + (g - g0) * kRows16, 0);
}

// Tiles of 4 columns (when the file has one), then 2, then 1.
template <class Group, GroupTileFn<Group> Tile1, GroupTileFn<Group> Tile2, GroupTileFn<Group> Tile4 = nullptr>
void gemm(int64_t cols, const void* w, int64_t g, const void* act, size_t act_stride, int64_t nc, float* out,
          size_t out_stride) {
  const int64_t nb = cols / kQK_K;
  const auto* wg = static_cast<const Group*>(w) + g * nb;
  const auto* a = static_cast<const uint8_t*>(act);
  int64_t c = 0;
  if constexpr (Tile4 != nullptr)
    for (; c + 4 <= nc; c += 4) Tile4(nb, wg, a + c * act_stride, act_stride, out + c * out_stride, out_stride);
  for (; c + 2 <= nc; c += 2) Tile2(nb, wg, a + c * act_stride, act_stride, out + c * out_stride, out_stride);
  for (; c < nc; ++c) Tile1(nb, wg, a + c * act_stride, act_stride, out + c * out_stride, out_stride);
}

// The 6-bit scales (mins = false) or mins of sub-blocks 0..7 of a Q4_K group's
// 16 rows: kq_unpack_scales_k4 on 16-byte vectors, one byte per row.
static inline void unpack_q4_K_scales(const BlockQ4_Kx16& b, bool mins, __m128i* out) {
  const auto q = [&](int i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[i])); };
  const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m48 = _mm_set1_epi8(48);
  for (int j = 0; j < 4; ++j) {
    const __m128i lo = q(j + (mins ? 4 : 0)), hi = q(j + 8);
    out[j] = _mm_and_si128(lo, m63);
    // (q >> 6) << 4 per byte: the 16-bit shift by 2 brings bits 6-7 to 4-5;
    // the mask drops what came in from the byte above.
    const __m128i top = _mm_and_si128(_mm_srli_epi16(lo, 2), m48);
    out[j + 4] = _mm_or_si128(_mm_and_si128(mins ? _mm_srli_epi16(hi, 4) : hi, m15), top);
  }
}

}  // namespace oscar::quant::rows16
