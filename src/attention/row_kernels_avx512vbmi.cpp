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
#include "attention/row_kernels_vbmi.h"
#include "attention/row_kernels_vnni.h"
#include "core/in_register.h"

namespace oscar::attention::detail {
namespace {

constexpr int kT = kQ2IntWeightDigits;
constexpr int kMaxGroupBytes = kQ2IntMaxValueGroup / 4;  // code bytes of the largest group

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
  GroupHeaders hd;
  alignas(64) int8_t digits[H][kMaxTileRows * 4];  // 64 bytes per 16 rows (weight_digits)
  float step[H], lo_sum[H];
  alignas(64) uint8_t quads[kMaxGroupBytes / 16 * (kMaxTileRows / 4) * 64];  // (code block, quad) -> 64 bytes
  const __m512i order = _mm512_load_si512(kQuadOrder);
  const __m512i three = _mm512_set1_epi8(3);

  for (int gi = 0; gi < ng; ++gi) {
    group_headers(b, gi * gb, hd);
    for (int h = 0; h < H; ++h)
      step[h] = weight_digits(p + (size_t)h * ps, hd, n, &lo_sum[h],
                              [&](int v, __m512i x) { _mm512_store_si512(digits[h] + 64 * v, x); });
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
          if (gi == 0 && cb == 0 && k0 == 0) prefetch_ahead(b, 4 * q, 4);  // a quad's share, on the first pass
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
  with_heads(n_heads, [&](auto h) { accumulate_q2_int_h<decltype(h)::value>(b, p, stride, acc); });
}

}  // namespace

AccumulateKernel avx512vbmi_q2_accumulate_kernel() { return accumulate_q2_int; }

}  // namespace oscar::attention::detail
