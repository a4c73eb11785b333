// q2_0 value sums with integer dot products (AVX512-VNNI, plus VBMI for one
// byte permute). The float kernel widens every code to a float and spends
// one FMA per value, row and head; here vpdpbusd sums four rows at once:
//
//   sum_j w_j c_j[i] for the rows j of a quad = one 32-bit lane of
//   vpdpbusd(codes, weights), when lane i holds the codes c_j[i] of the four
//   rows (unsigned bytes) and the weights w_j are broadcast as signed bytes.
//
// So the codes of four rows are transposed once per 16 code bytes (one
// vpermb), and each 2-bit field of them is one shift and mask away. The
// weights p_j * s_j (softmax weight times the row's group scale) become
// kQ2IntWeightDigits balanced signed-byte digits per (group, head), scaled
// to the group's largest weight, so the only error against the float kernel
// is that rounding (2^-23 of the largest weight per row). The offsets lo_j
// are summed in float, once per (group, head): sum_j p_j lo_j.
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

constexpr int kT = kQ2IntWeightDigits;
constexpr int kMaxGroupBytes = kQ2IntMaxValueGroup / 4;  // code bytes of the largest group
// The largest weight in steps: 127 in the top digit, 256^(kT-1) steps each.
constexpr float kTopDigitUnit = [] {
  float u = 127.0f;
  for (int t = 1; t < kT; ++t) u *= 256.0f;
  return u;
}();

// Bytes at offset `at` of the four rows r[0..3], 16 each, transposed: lane
// i (32 bits) holds byte i of row 0, 1, 2, 3 from low to high.
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
// to kMaxTileRows) as kT = 3 digits, most significant first: w_j = step * sum_t D_t[j]
// 256^(kT-1-t) up to rounding, with step = max |w| / (127 * 256^(kT-1)).
// Writes digit t of rows 16v .. 16v+15 to digits[64 v + 16 t ..] (one vpermb
// and one store per 16 rows) and returns step; *lo_sum = sum_j p_j lo_j.
inline float weight_digits(const float* p, const GroupHeaders& hd, int n, int8_t* digits, float* lo_sum) {
  static_assert(kT == 3, "the digits are the three low bytes of one int32");
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
    _mm512_store_si512(digits + 64 * v, _mm512_permutexvar_epi8(digit_order, u));
  }
  return step;
}

// Fields (of a group's four) per pass over its quads: as many as keep the
// H x K x kT accumulators within 24 of the 32 registers.
template <int H>
constexpr int fields_per_pass() {
  return H * 4 * kT <= 24 ? 4 : (H * 2 * kT <= 24 ? 2 : 1);
}

template <int H>
void accumulate_q2_int_h(const RowBlock& b, const float* p, size_t ps, float* acc) {
  constexpr int K = fields_per_pass<H>();
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, n = b.n, nq = (n + 3) / 4;
  const size_t gb = 4 + (size_t)qn;
  // Rows of the last quad past the block repeat the last row (weight 0).
  const uint8_t* rows[kMaxTileRows];
  for (int j = 0; j < 4 * nq; ++j) rows[j] = b.rows + (size_t)std::min(j, n - 1) * b.stride;
  prefetch_ahead(b, 0, n);
  GroupHeaders hd;
  alignas(64) int8_t digits[H][kMaxTileRows * 4];  // 64 bytes per 16 rows (weight_digits)
  float step[H], lo_sum[H];
  alignas(64) uint8_t quads[kMaxGroupBytes / 16 * (kMaxTileRows / 4) * 64];  // (code block, quad) -> 64 bytes
  // Byte 4i + k of a quad's four 16-byte loads: byte i of row k.
  alignas(64) static constexpr uint8_t kOrder[64] = {
      0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51, 4, 20, 36, 52, 5, 21, 37, 53,
      6, 22, 38, 54, 7, 23, 39, 55, 8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
      12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
  const __m512i order = _mm512_load_si512(kOrder);
  const __m512i three = _mm512_set1_epi8(3);

  for (int gi = 0; gi < ng; ++gi) {
    group_headers(b, gi * gb, hd);
    for (int h = 0; h < H; ++h) step[h] = weight_digits(p + (size_t)h * ps, hd, n, digits[h], &lo_sum[h]);
    // The group's codes, transposed once for all passes over its fields.
    for (int cb = 0; cb < qn; cb += 16)
      for (int q = 0; q < nq; ++q)
        _mm512_store_si512(quads + ((size_t)(cb / 16) * nq + q) * 64, quad_codes(rows + 4 * q, gi * gb + 4 + cb, order));
    for (int cb = 0; cb < qn; cb += 16)
      // Unrolled, so every field's shift is a constant and the accumulators
      // stay in registers.
#pragma GCC unroll 4
      for (int k0 = 0; k0 < 4; k0 += K) {
        __m512i a[H][K][kT];
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
          for (int k = 0; k < K; ++k)
#pragma GCC unroll 4
            for (int t = 0; t < kT; ++t) a[h][k][t] = _mm512_setzero_si512();
        const uint8_t* tq = quads + (size_t)(cb / 16) * nq * 64;
        for (int q = 0; q < nq; ++q) {
          const __m512i x = in_register(_mm512_load_si512(tq + (size_t)q * 64));
          const int dq = (q >> 2) * 64 + (q & 3) * 4;  // quad q's 4 bytes of digit 0
          __m512i codes[K];
#pragma GCC unroll 4
          for (int k = 0; k < K; ++k) {
            const int f = k0 + k;
            codes[k] = _mm512_and_si512(f == 0 ? x : _mm512_srli_epi16(x, 2 * f), three);
          }
#pragma GCC unroll 8
          for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
            for (int t = 0; t < kT; ++t)
#pragma GCC unroll 4
              for (int k = 0; k < K; ++k) a[h][k][t] = dpbusd_bcast(a[h][k][t], codes[k], digits[h] + dq + 16 * t);
        }
        // Values gi*g + f*qn + cb .. +15 of each head: the digit sums in
        // base 256, times the step, plus the group's offset sum.
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
          for (int k = 0; k < K; ++k) {
            __m512 v = _mm512_cvtepi32_ps(a[h][k][0]);
#pragma GCC unroll 4
            for (int t = 1; t < kT; ++t) v = _mm512_fmadd_ps(v, _mm512_set1_ps(256.0f), _mm512_cvtepi32_ps(a[h][k][t]));
            float* out = acc + (size_t)h * d + gi * g + (k0 + k) * qn + cb;
            _mm512_storeu_ps(out, _mm512_fmadd_ps(v, _mm512_set1_ps(step[h]),
                                                  _mm512_add_ps(_mm512_loadu_ps(out), _mm512_set1_ps(lo_sum[h]))));
          }
      }
  }
}

void accumulate_q2_int(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float*) {
  switch (n_heads) {
    case 1: return accumulate_q2_int_h<1>(b, p, stride, acc);
    case 2: return accumulate_q2_int_h<2>(b, p, stride, acc);
    case 3: return accumulate_q2_int_h<3>(b, p, stride, acc);
    case 4: return accumulate_q2_int_h<4>(b, p, stride, acc);
    case 5: return accumulate_q2_int_h<5>(b, p, stride, acc);
    case 6: return accumulate_q2_int_h<6>(b, p, stride, acc);
    case 7: return accumulate_q2_int_h<7>(b, p, stride, acc);
    default: return accumulate_q2_int_h<8>(b, p, stride, acc);
  }
}

}  // namespace

AccumulateKernel avx512vbmi_q2_accumulate_kernel() { return accumulate_q2_int; }

}  // namespace oscar::attention::detail
