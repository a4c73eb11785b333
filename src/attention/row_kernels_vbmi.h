// What the integer q2_0 value-sum kernels share (row_kernels_avx512vbmi.cpp,
// row_kernels_amx.cpp; include only where AVX512-VBMI is enabled): the
// transposition of four rows' code bytes, the group headers of a block, and
// each row's weight as signed-byte digits.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "attention/row_kernels_impl.h"
#include "attention/row_kernels_vnni.h"

namespace oscar::attention::detail {
namespace {

// The largest weight in steps: 127 in the top digit, 256^(T-1) steps each
// (T = kQ2IntWeightDigits).
constexpr float kTopDigitUnit = [] {
  float u = 127.0f;
  for (int t = 1; t < kQ2IntWeightDigits; ++t) u *= 256.0f;
  return u;
}();

// Byte 4i + k of a quad's four 16-byte loads: byte i of row k.
alignas(64) constexpr uint8_t kQuadOrder[64] = {
    0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51, 4, 20, 36, 52, 5, 21, 37, 53,
    6, 22, 38, 54, 7, 23, 39, 55, 8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
    12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};

// Bytes at offset `at` of the four rows r[0..3], 16 each, transposed: lane
// i (32 bits) holds byte i of row 0, 1, 2, 3 from low to high. order:
// kQuadOrder.
inline __m512i quad_codes(const uint8_t* const* r, size_t at, __m512i order) {
  __m512i x = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + at)));
  x = _mm512_inserti32x4(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + at)), 1);
  x = _mm512_inserti32x4(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + at)), 2);
  x = _mm512_inserti32x4(x, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + at)), 3);
  return _mm512_permutexvar_epi8(order, x);
}

// The group headers (scale s_j, offset lo_j) of rows j < n of a block, 16
// rows per vector (lanes past n zero, and not read), by one gather per 16
// rows: the rows are evenly spaced, and a scalar load and conversion per
// header cost about a tenth of this kernel in decode.
struct GroupHeaders {
  __m512 s[kMaxTileRows / 16], lo[kMaxTileRows / 16];
};
inline void group_headers(const RowBlock& b, size_t at, GroupHeaders& hd) {
  const __m512i step = _mm512_set1_epi32((int)(16 * b.stride));
  __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                   _mm512_set1_epi32((int)b.stride));
  for (int v = 0; 16 * v < b.n; ++v, idx = _mm512_add_epi32(idx, step)) {
    const int left = b.n - 16 * v;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    unpack_headers(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, b.rows + at, 1), hd.s[v], hd.lo[v]);
  }
}

// Head h's weights w_j = p_j * s_j of one group (rows j < n, zero beyond, up
// to kMaxTileRows) as T = 3 digits, most significant first: w_j = step *
// sum_t D_t[j] 256^(T-1-t) up to rounding, with step = max |w| / (127 *
// 256^(T-1)).
// Hands rows 16v .. 16v+15 to store(v, x), digit t of row 16v + i in byte
// 16t + i of x (one vpermb per 16 rows), and returns step; *lo_sum = sum_j
// p_j lo_j.
template <class Store>
inline float weight_digits(const float* p, const GroupHeaders& hd, int n, float* lo_sum, Store store) {
  static_assert(kQ2IntWeightDigits == 3, "the digits are the three low bytes of one int32");
  __m512 w[kMaxTileRows / 16], mx = _mm512_setzero_ps(), wl = _mm512_setzero_ps();
  const int nv = (n + 15) / 16;
  for (int v = 0; v < nv; ++v) {
    const int left = n - 16 * v;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    const __m512 pv = _mm512_maskz_loadu_ps(m, p + 16 * v);
    w[v] = _mm512_mul_ps(pv, hd.s[v]);
    mx = _mm512_max_ps(mx, _mm512_abs_ps(w[v]));
    wl = _mm512_fmadd_ps(pv, hd.lo[v], wl);
  }
  *lo_sum = _mm512_reduce_add_ps(wl);
  const float top = _mm512_reduce_max_ps(mx);
  const float step = top > 0.0f ? top / kTopDigitUnit : 1.0f;
  const __m512 inv = _mm512_set1_ps(1.0f / step);
  // |r| <= 127 * 65536, so r + 0x808080 lies in [0, 2^24) and its bytes are
  // the balanced digits plus 128 each; the xor turns each into the signed
  // byte of its digit. Rows past n in the last quad get zero digits (their
  // p is zero), and no quad reaches past the last vector.
  const __m512i bias = _mm512_set1_epi32(0x808080);
  // Bytes 16t + i: digit t of lane i, the byte 2 - t of its int32.
  const __m512i digit_order = _mm512_set_epi8(
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0,
      61, 57, 53, 49, 45, 41, 37, 33, 29, 25, 21, 17, 13, 9, 5, 1, 62, 58, 54, 50, 46, 42, 38, 34, 30, 26, 22, 18, 14,
      10, 6, 2);
  for (int v = 0; v < nv; ++v) {
    const __m512i r = _mm512_cvtps_epi32(_mm512_mul_ps(w[v], inv));
    const __m512i u = _mm512_xor_si512(_mm512_add_epi32(r, bias), bias);
    store(v, _mm512_permutexvar_epi8(digit_order, u));
  }
  return step;
}

}  // namespace
}  // namespace oscar::attention::detail
