// The q2_0 row encoder on AVX-512 F/DQ. Every row leaving the recent tier is
// encoded (K and V of every KV head of every layer, once per token), and in
// a long prompt all of them are, on the thread that stores the batch; the
// scalar encoder spent most of its time finding the clipping threshold
// (a branchy top-m list) and in a double division and nearbyint call per
// value.
//
// Bytes are the same as q2_encode_reference's, by doing the same IEEE
// operations: the threshold is the exact m-th largest |x| (found bit by bit
// on the bit patterns, which order like the non-negative floats they are),
// clamping keeps std::clamp's choice for signed zeros, and codes are
// nearbyint((x - lo) / s) in double, rounded to nearest even.
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// _mm512_reduce_* helpers (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kv/q2_codec_simd.h"

namespace oscar::kv::detail {
namespace {

// The m-th largest of the d values a (|x| as bits, d a multiple of 16): the
// largest T with at least m values >= T, built from the top bit down (the
// count only falls as T grows). 1 <= m <= d. Every AVX-512 CPU has POPCNT.
__attribute__((target("popcnt"))) uint32_t mth_largest_bits(const uint32_t* a, int d, int m) {
  uint32_t t = 0;
  for (int b = 30; b >= 0; --b) {  // bit 31 (the sign) is clear in every |x|
    const uint32_t cand = t | (1u << b);
    const __m512i c = _mm512_set1_epi32((int)cand);
    int count = 0;
    for (int i = 0; i < d; i += 16) {
      const __m512i v = _mm512_load_si512(a + i);
      count += _mm_popcnt_u32(_cvtmask16_u32(_mm512_cmp_epu32_mask(v, c, _MM_CMPINT_NLT)));
    }
    t |= (uint32_t)(count >= m) << b;
  }
  return t;
}

// The m-th largest of the N floats at c (N = 16 or 32, 1 <= m <= N): the
// value of a lane with fewer than m values above it and at least m at or
// above it. Each lane's counts come from comparing it with every value
// broadcast in turn: N independent steps, where a bit-by-bit search takes 31
// dependent ones. Such a lane always exists for finite values; false
// otherwise, and the caller searches bit by bit.
template <int N>
bool mth_largest_of(const float* c, int m, float& out) {
  constexpr int V = N / 16;
  const __m512i one = _mm512_set1_epi32(1);
  __m512 v[V];
  __m512i above[V], at_or_above[V];
  for (int k = 0; k < V; ++k) {
    v[k] = _mm512_load_ps(c + 16 * k);
    above[k] = at_or_above[k] = _mm512_setzero_si512();
  }
  for (int j = 0; j < N; ++j) {
    const __m512 b = _mm512_set1_ps(c[j]);
    for (int k = 0; k < V; ++k) {
      above[k] = _mm512_mask_add_epi32(above[k], _mm512_cmp_ps_mask(b, v[k], _CMP_GT_OQ), above[k], one);
      at_or_above[k] = _mm512_mask_add_epi32(at_or_above[k], _mm512_cmp_ps_mask(b, v[k], _CMP_GE_OQ), at_or_above[k], one);
    }
  }
  const __m512i mv = _mm512_set1_epi32(m);
  for (int k = 0; k < V; ++k) {
    const __mmask16 hit = _mm512_cmp_epi32_mask(above[k], mv, _MM_CMPINT_LT) &
                          _mm512_cmp_epi32_mask(at_or_above[k], mv, _MM_CMPINT_NLT);
    if (hit) {
      out = c[16 * k + __builtin_ctz((unsigned)hit)];
      return true;
    }
  }
  return false;
}

// The m-th largest |x| (as bits) of d values (mag: |x| as bits, d a
// multiple of 16, 1 <= m <= d). For m <= 16 the m-th largest of the 16 lane
// maxima is a lower bound that few values reach: when at most 32 do, the
// answer is the m-th largest of them. Otherwise, a search bit by bit.
__attribute__((target("popcnt"))) uint32_t clip_threshold_bits(const uint32_t* mag, int d, int m) {
  if (m <= 16) {
    const auto* a = reinterpret_cast<const float*>(mag);
    alignas(64) float cand[32];
    __m512 lane_max = _mm512_load_ps(a);
    for (int i = 16; i < d; i += 16) lane_max = _mm512_max_ps(lane_max, _mm512_load_ps(a + i));
    _mm512_store_ps(cand, lane_max);
    float lower;
    if (!mth_largest_of<16>(cand, m, lower)) return mth_largest_bits(mag, d, m);
    const __m512 bound = _mm512_set1_ps(lower);
    const __m512 below_all = _mm512_set1_ps(-1.0f);  // below every |x|
    _mm512_store_ps(cand, below_all);
    _mm512_store_ps(cand + 16, below_all);
    int n = 0;
    for (int i = 0; i < d && n <= 32; i += 16) {
      const __m512 v = _mm512_load_ps(a + i);
      const __mmask16 k = _mm512_cmp_ps_mask(v, bound, _CMP_GE_OQ);
      const int c = (int)_mm_popcnt_u32(_cvtmask16_u32(k));
      if (c > 0 && n + c <= 32)
        _mm512_mask_storeu_ps(cand + n, (__mmask16)((1u << c) - 1), _mm512_maskz_compress_ps(k, v));
      n += c;
    }
    float t;
    if (n <= 32 && (n <= 16 ? mth_largest_of<16>(cand, m, t) : mth_largest_of<32>(cand, m, t))) {
      uint32_t bits;
      std::memcpy(&bits, &t, sizeof bits);
      return bits;
    }
  }
  return mth_largest_bits(mag, d, m);
}

}  // namespace

bool q2_encode_avx512(const float* x, uint8_t* out, int d, const Q2Params& p) {
  const int g = q2_group(d, p);
  if (d <= 0 || d > kMaxSimdRow || d % 16 != 0 || g % 16 != 0 || d % g != 0) return false;
  alignas(64) float v[kMaxSimdRow];
  alignas(64) uint32_t mag[kMaxSimdRow];
  const __m512 sign = _mm512_set1_ps(-0.0f), inf = _mm512_set1_ps(INFINITY);
  __mmask16 not_finite = 0;
  for (int i = 0; i < d; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    const __m512 a = _mm512_andnot_ps(sign, xv);
    not_finite |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // inf or NaN
    _mm512_store_ps(v + i, xv);
    _mm512_store_si512(mag + i, _mm512_castps_si512(a));
  }
  if (not_finite) return false;

  if (p.clip_ratio > 0.0f) {
    const uint32_t tb = clip_threshold_bits(mag, d, d - q2_clip_rank(d, p.clip_ratio));
    float tf;
    std::memcpy(&tf, &tb, sizeof tf);
    const __m512 t = _mm512_set1_ps(tf), nt = _mm512_set1_ps(-tf);
    for (int i = 0; i < d; i += 16) {
      // std::clamp(v, -t, t): v < -t ? -t : (t < v ? t : v)
      __m512 r = _mm512_load_ps(v + i);
      const __mmask16 below = _mm512_cmp_ps_mask(r, nt, _CMP_LT_OQ);
      const __mmask16 above = _mm512_cmp_ps_mask(t, r, _CMP_LT_OQ);
      r = _mm512_mask_mov_ps(r, below, nt);
      r = _mm512_mask_mov_ps(r, above, t);
      _mm512_store_ps(v + i, r);
    }
  }

  const int q = g / 4;
  alignas(64) int32_t codes[kMaxSimdRow];
  for (int g0 = 0; g0 < d; g0 += g) {
    const float* xs = v + g0;
    __m512 mn = _mm512_load_ps(xs), mx = mn;
    for (int i = 16; i < g; i += 16) {
      mn = _mm512_min_ps(mn, _mm512_load_ps(xs + i));
      mx = _mm512_max_ps(mx, _mm512_load_ps(xs + i));
    }
    float lo = _mm512_reduce_min_ps(mn), hi = _mm512_reduce_max_ps(mx);
    if (lo == 0.0f || hi == 0.0f) group_range_scalar(xs, g, lo, hi);  // which zero
    float s, l;
    if (!write_group_header(lo, hi, out, s, l)) return false;
    if (s > 0.0f) {
      const __m512d ld = _mm512_set1_pd((double)l), sd = _mm512_set1_pd((double)s);
      const __m512d zero = _mm512_setzero_pd(), three = _mm512_set1_pd(3.0);
      for (int i = 0; i < g; i += 8) {
        const __m512d xv = _mm512_cvtps_pd(_mm256_load_ps(xs + i));
        __m512d c = _mm512_div_pd(_mm512_sub_pd(xv, ld), sd);
        c = _mm512_roundscale_pd(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        c = _mm512_min_pd(_mm512_max_pd(c, zero), three);
        _mm256_store_si256(reinterpret_cast<__m256i*>(codes + i), _mm512_cvttpd_epi32(c));
      }
    } else {
      std::fill(codes, codes + g, 0);
    }
    uint8_t* packed = out + 4;
    int j = 0;
    for (; j + 16 <= q && q % 16 == 0; j += 16) {
      __m512i b = _mm512_load_si512(codes + j);
      b = _mm512_or_si512(b, _mm512_slli_epi32(_mm512_load_si512(codes + j + q), 2));
      b = _mm512_or_si512(b, _mm512_slli_epi32(_mm512_load_si512(codes + j + 2 * q), 4));
      b = _mm512_or_si512(b, _mm512_slli_epi32(_mm512_load_si512(codes + j + 3 * q), 6));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + j), _mm512_cvtepi32_epi8(b));
    }
    for (; j < q; ++j)
      packed[j] = (uint8_t)(codes[j] | codes[j + q] << 2 | codes[j + 2 * q] << 4 | codes[j + 3 * q] << 6);
    out += 4 + q;
  }
  return true;
}

}  // namespace oscar::kv::detail
