// The row kernels of the fused attention (see row_kernels_impl.h), written
// once over a vector-traits struct V and compiled per ISA:
//   Vec8 (here): 8 floats per __m256, with AVX2 + FMA + F16C. Compiled by
//     row_kernels_avx2.cpp (16 vector registers: up to 4 query heads per
//     pass) and by row_kernels_avx512.cpp for AVX-512VL's 32 registers (up to
//     8 heads per pass) for the shapes the wide set does not take;
//   Vec16 (row_kernels_avx512.cpp): 16 floats per __m512. Cores with full
//     512-bit units run twice the FMAs per cycle on it.
// Everything here has internal linkage, so the copies never meet at link time.
// Rows are read in their stored form and turned into W floats at a time in
// registers, never into a decoded copy of the row:
//   f32:  the batch's own rows, loaded as they are;
//   f16:  one conversion per W values;
//   q2_0: one byte of codes holds the 2-bit codes of values j, j+g/4, j+g/2,
//         j+3g/4 of its group, so W code bytes widened to 32-bit lanes give W
//         values of each quarter: scores look each code up in the row's
//         table lo + s * {0, 1, 2, 3} (one shift and one permute), value
//         sums shift and mask it into a float 0..3.
// Scores take R rows per pass (4 with 32 registers, 2 with 16: each query
// load feeds R FMAs), at most 4 heads per pass, and sum the lanes of 8
// accumulators at once; value sums take the rows innermost with the
// accumulators of C W-value chunks in registers, and fold each q2 row's
// scale into its weight and its offset into one constant per group.
//
// V provides: F, I (float and int32 vectors of W lanes), W, zero(), load(p),
// store(p, x), set1(f), bcast(p) (*p in every lane), fma(a, b, c), add(a, b),
// sums8(v, out) (out[i] = the lane sum of v[i], i < 8), f16(p) (W halves at
// p as floats), widen(p) (W bytes at p as int32 lanes), field(c, k) (bits 2k,
// 2k+1 of every lane of c, as floats), quarters(s, lo) (lo + s * (i & 3) in
// lane i) and pick(c, k, t) (field k of every lane of c looked up in t, a
// table of 4 values repeated across the lanes).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "attention/row_kernels_f16.h"
#include "attention/row_kernels_impl.h"

namespace oscar::attention::detail {
namespace {

#if defined(__x86_64__)
struct Vec8 {
  using F = __m256;
  using I = __m256i;
  static constexpr int W = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F x) { _mm256_storeu_ps(p, x); }
  static F set1(float f) { return _mm256_set1_ps(f); }
  static F bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  // For exp_nonpositive and exp_shifted:
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a * b
  static F round(F x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // y * 2^n (n integral, in the normal exponent range) where x >= lo, else
  // (and where x is NaN) 0.
  static F times_pow2_where(F y, F n, F x, float lo) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_GE_OQ), _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
  }
  static float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static float hmax(F v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
  }
  // Eight lane sums by a transposing tree: far fewer shuffles than eight hsums.
  static void sums8(const F* v, float* out) {
    const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31)));
  }
  static F f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I widen(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static F quarters(float s, float lo) {
    return _mm256_fmadd_ps(_mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3), _mm256_set1_ps(s), _mm256_set1_ps(lo));
  }
  static F pick(I c, int k, F t) { return _mm256_permutevar8x32_ps(t, k ? _mm256_srli_epi32(c, 2 * k) : c); }
  static F field(I c, int k) {
    return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(c, _mm256_set1_epi32(2 * k)), _mm256_set1_epi32(3)));
  }
};
#endif  // __x86_64__; NEON's 4-float traits: row_kernels_neon.cpp

// Fields k0 .. k0+C-1 (shifts 2*k0, ...) of W consecutive code bytes, as floats 0..3.
template <class V, int C>
inline void code_quarters(const uint8_t* p, int k0, typename V::F* x) {
  const typename V::I c = V::widen(p);
  #pragma GCC unroll 16
  for (int k = 0; k < C; ++k) x[k] = V::field(c, k0 + k);
}

// Scores R rows per pass: `chunks(r, visit)` calls visit(i, x) with x[k] the
// values i..i+W-1 of row r[k] (k < R) as floats, in any order. Each query
// load then feeds R FMAs; past the end of the block the last row repeats.
template <class V, int H, int R, class Chunks>
void score_rows_r(const RowBlock& b, const float* q, float scale, float* scores, size_t ss, Chunks chunks) {
  const int d = b.d;
  for (int j = 0; j < b.n; j += R) {
    const uint8_t* r[R];
    #pragma GCC unroll 4
    for (int k = 0; k < R; ++k) r[k] = b.rows + (size_t)std::min(j + k, b.n - 1) * b.stride;
    prefetch_ahead(b, j, R);
    typename V::F a[H * R];  // head h, row k at h * R + k
    #pragma GCC unroll 16
    for (int i = 0; i < H * R; ++i) a[i] = V::zero();
    chunks(r, [&](int i, const typename V::F* x) {
      #pragma GCC unroll 8
      for (int h = 0; h < H; ++h) {
        const typename V::F qv = V::load(q + (size_t)h * d + i);
        #pragma GCC unroll 4
        for (int k = 0; k < R; ++k) a[h * R + k] = V::fma(qv, x[k], a[h * R + k]);
      }
    });
    // Lane sums of eight accumulators at a time.
    #pragma GCC unroll 4
    for (int i0 = 0; i0 < H * R; i0 += 8) {
      typename V::F v[8];
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) v[i] = i0 + i < H * R ? a[i0 + i] : V::zero();
      alignas(32) float sum[8];
      V::sums8(v, sum);
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const int h = (i0 + i) / R, k = (i0 + i) % R;
        if (h < H && j + k < b.n) scores[(size_t)h * ss + j + k] = sum[i] * scale;
      }
    }
  }
}

// Values i..i+W-1 of a float row: stored as f16 (cached rows) or f32 (the
// batch's own keys and values, before they are stored).
struct LoadF16 {
  template <class V>
  static typename V::F at(const uint8_t* row, int i) { return V::f16(row + 2 * i); }
};
struct LoadF32 {
  template <class V>
  static typename V::F at(const uint8_t* row, int i) { return V::load(reinterpret_cast<const float*>(row) + i); }
};

template <class V, int H, int R, class Load>
void score_float_h(const RowBlock& b, const float* q, float scale, float* scores, size_t ss) {
  const int d = b.d;
  score_rows_r<V, H, R>(b, q, scale, scores, ss, [d](const uint8_t* const* r, auto&& visit) {
    for (int i = 0; i < d; i += V::W) {
      typename V::F x[R];
      #pragma GCC unroll 4
      for (int k = 0; k < R; ++k) x[k] = Load::template at<V>(r[k], i);
      visit(i, x);
    }
  });
}

template <class V, int H, int R>
void score_q2_h(const RowBlock& b, const float* q, float scale, float* scores, size_t ss) {
  const int d = b.d, g = b.g, qn = g / 4;
  score_rows_r<V, H, R>(b, q, scale, scores, ss, [d, g, qn](const uint8_t* const* rows, auto&& visit) {
    for (int g0 = 0; g0 < d; g0 += g) {
      const size_t at = (size_t)(g0 / g) * (4 + qn);
      // The four values a code can stand for, looked up by the code.
      typename V::F t[R];
      #pragma GCC unroll 4
      for (int k = 0; k < R; ++k) t[k] = V::quarters(f16_at(rows[k] + at), f16_at(rows[k] + at + 2));
      for (int cb = 0; cb < qn; cb += V::W) {
        typename V::I c[R];
        #pragma GCC unroll 4
        for (int k = 0; k < R; ++k) c[k] = V::widen(rows[k] + at + 4 + cb);
        #pragma GCC unroll 4
        for (int f = 0; f < 4; ++f) {
          typename V::F x[R];
          #pragma GCC unroll 4
          for (int k = 0; k < R; ++k) x[k] = V::pick(c[k], f, t[k]);
          visit(g0 + f * qn + cb, x);
        }
      }
    }
  });
}

// Value chunks (W floats each) one accumulate pass keeps in registers for H
// heads: each broadcast weight then feeds C FMAs instead of one, which is
// what bounds the value sums (a broadcast load per FMA at C = 1). AVX2
// (MaxH 4) has 16 registers, AVX-512 (MaxH 8) 32.
template <int MaxH, int H>
constexpr int chunks_per_pass() {
  if constexpr (MaxH > 4) {  // 16 accumulators (1, 2 or 4 chunks: q2 passes split a group's 4 quarters)
    const int c = 16 / H;
    return c >= 4 ? 4 : (c >= 2 ? 2 : 1);
  }
  const int c = MaxH / H;
  return c < 1 ? 1 : (c > 2 ? 2 : c);
}
// Independent FMA chains per (head, chunk): two where there are too few
// accumulators to hide the FMA latency, else one (c aliases a), which keeps
// the registers for more chunks per broadcast weight.
template <int H, int C>
constexpr int chains_per_sum() {
  return H * C < 8 ? 2 : 1;
}

// The step both accumulate kernels repeat for two rows: a[h][k] += w0[h] x0[k]
// and c[h][k] += w1[h] x1[k], head h's weights hs floats apart. c is a second
// chain per (head, chunk), or a itself (chains_per_sum).
template <class V, int H, int C>
inline __attribute__((always_inline)) void fma_two_rows(const float* w0, const float* w1, size_t hs,
                                                        const typename V::F* x0, const typename V::F* x1,
                                                        typename V::F* a, typename V::F* c) {
#pragma GCC unroll 16
  for (int h = 0; h < H; ++h) {
    const typename V::F u = V::bcast(w0 + (size_t)h * hs), v = V::bcast(w1 + (size_t)h * hs);
#pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      a[h * C + k] = V::fma(u, x0[k], a[h * C + k]);
      c[h * C + k] = V::fma(v, x1[k], c[h * C + k]);
    }
  }
}

template <class V, int H, int C, class Load>
inline void accumulate_float_chunks(const RowBlock& b, const float* p, size_t ps, float* acc, int i) {
  constexpr int W = V::W;
  const int d = b.d, n = b.n;
  constexpr bool two = chains_per_sum<H, C>() == 2;
  typename V::F a[H * C], c2[two ? H * C : 1];
  typename V::F* c = two ? c2 : a;
  #pragma GCC unroll 16
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      a[h * C + k] = V::load(acc + (size_t)h * d + i + W * k);
      if constexpr (two) c[h * C + k] = V::zero();
    }
  const uint8_t* r = b.rows;
  int j = 0;
  for (; j + 2 <= n; j += 2, r += 2 * b.stride) {
    if (i == 0) prefetch_ahead(b, j, 2);  // later column chunks find the rows in cache
    typename V::F x0[C], x1[C];
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      x0[k] = Load::template at<V>(r, i + W * k);
      x1[k] = Load::template at<V>(r + b.stride, i + W * k);
    }
    fma_two_rows<V, H, C>(p + j, p + j + 1, ps, x0, x1, a, c);
  }
  if (j < n) {
    typename V::F x0[C];
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) x0[k] = Load::template at<V>(r, i + W * k);
    #pragma GCC unroll 16
    for (int h = 0; h < H; ++h) {
      const typename V::F w0 = V::bcast(p + (size_t)h * ps + j);
      #pragma GCC unroll 16
      for (int k = 0; k < C; ++k) a[h * C + k] = V::fma(w0, x0[k], a[h * C + k]);
    }
  }
  #pragma GCC unroll 16
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) V::store(acc + (size_t)h * d + i + W * k, two ? V::add(a[h * C + k], c[h * C + k]) : a[h * C + k]);
}

template <class V, int H, int C, class Load>
void accumulate_float_h(const RowBlock& b, const float* p, size_t ps, float* acc) {
  int i = 0;
  if constexpr (C > 1)
    for (; i + V::W * C <= b.d; i += V::W * C) accumulate_float_chunks<V, H, C, Load>(b, p, ps, acc, i);
  for (; i < b.d; i += V::W) accumulate_float_chunks<V, H, 1, Load>(b, p, ps, acc, i);
}

template <class V, int H, int C>
void accumulate_q2_h(const RowBlock& b, const float* p, size_t ps, float* acc, float* scratch) {
  static_assert(4 % C == 0, "a pass takes 1, 2 or 4 of a group's quarters");
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, n = b.n;
  const size_t gb = 4 + (size_t)qn;  // bytes per group
  // sum_j p_j (lo_j + s_j c_j) = sum_j p_j lo_j + sum_j (p_j s_j) c_j: weights
  // with the row scale folded in, and one offset sum per (group, head).
  float* ws = scratch;                       // (ng, n, H)
  float* wl = scratch + (size_t)ng * n * H;  // (ng, H)
  for (int i = 0; i < ng * H; ++i) wl[i] = 0.0f;
  for (int j = 0; j < n; ++j) {
    const uint8_t* row = b.rows + (size_t)j * b.stride;
    for (int gi = 0; gi < ng; ++gi) {
      const float s = f16_at(row + gi * gb), lo = f16_at(row + gi * gb + 2);
      #pragma GCC unroll 16
      for (int h = 0; h < H; ++h) {
        const float w = p[(size_t)h * ps + j];
        ws[((size_t)gi * n + j) * H + h] = w * s;
        wl[gi * H + h] += w * lo;
      }
    }
  }
  // C quarters of a group per pass: their codes are the 2-bit fields of the
  // same code bytes, so one load and widening serves C chunks of values.
  for (int gi = 0; gi < ng; ++gi)
    for (int k0 = 0; k0 < 4; k0 += C)
      for (int cb = 0; cb < qn; cb += V::W) {
        constexpr bool two = chains_per_sum<H, C>() == 2;
        typename V::F a[H * C], c2[two ? H * C : 1];
        typename V::F* c = two ? c2 : a;
        #pragma GCC unroll 16
        for (int h = 0; h < H; ++h)
          #pragma GCC unroll 16
          for (int k = 0; k < C; ++k) {
            const int i = gi * g + (k0 + k) * qn + cb;
            a[h * C + k] = V::add(V::load(acc + (size_t)h * d + i), V::set1(wl[gi * H + h]));
            if constexpr (two) c[h * C + k] = V::zero();
          }
        const uint8_t* r = b.rows + gi * gb + 4 + cb;
        const float* w = ws + (size_t)gi * n * H;
        int j = 0;
        for (; j + 2 <= n; j += 2, r += 2 * b.stride, w += 2 * H) {
          typename V::F x0[C], x1[C];
          code_quarters<V, C>(r, k0, x0);
          code_quarters<V, C>(r + b.stride, k0, x1);
          fma_two_rows<V, H, C>(w, w + H, 1, x0, x1, a, c);
        }
        if (j < n) {
          typename V::F x0[C];
          code_quarters<V, C>(r, k0, x0);
          #pragma GCC unroll 16
          for (int h = 0; h < H; ++h) {
            const typename V::F w0 = V::bcast(w + h);
            #pragma GCC unroll 16
            for (int k = 0; k < C; ++k) a[h * C + k] = V::fma(w0, x0[k], a[h * C + k]);
          }
        }
        #pragma GCC unroll 16
        for (int h = 0; h < H; ++h)
          #pragma GCC unroll 16
          for (int k = 0; k < C; ++k)
            V::store(acc + (size_t)h * d + gi * g + (k0 + k) * qn + cb,
                     two ? V::add(a[h * C + k], c[h * C + k]) : a[h * C + k]);
      }
}

// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so r
// is exact), exp(r) by the minimax polynomial of Cephes' expf, times 2^n
// built in the exponent field. Below -87.3 (2^-126) the result is 0, like a
// float exp that has underflowed (and so is a NaN); within a few ulp of
// std::exp elsewhere.
template <class V>
inline typename V::F exp_nonpositive(typename V::F x) {
  using F = typename V::F;
  constexpr float kLowest = -87.3365447f;
  const F xc = V::max(x, V::set1(kLowest));
  const F n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  F r = V::fnma(n, V::set1(0.693359375f), xc);
  r = V::fnma(n, V::set1(-2.12194440e-4f), r);
  F y = V::set1(1.9875691500e-4f);
  y = V::fma(y, r, V::set1(1.3981999507e-3f));
  y = V::fma(y, r, V::set1(8.3334519073e-3f));
  y = V::fma(y, r, V::set1(4.1665795894e-2f));
  y = V::fma(y, r, V::set1(1.6666665459e-1f));
  y = V::fma(y, r, V::set1(5.0000001201e-1f));
  y = V::fma(y, V::mul(r, r), V::add(r, V::set1(1.0f)));
  return V::times_pow2_where(y, n, x, kLowest);
}

// The softmax weights of a block for H heads at once (exp_shifted_heads in
// row_kernels.h; head h's scores and weights h * stride apart), W lanes at
// a time: the block's maxima first, vectorised too (a scalar max chain cost
// as much as the exponentials). The heads' chains are interleaved: one head
// at a time, a block of 128 decode rows waited mostly on the latency of its
// max and sum chains. Each head's arithmetic is that of a one-head call.
template <class V, int H>
void exp_shifted_h(const float* s, size_t stride, const float* m, float* p, int n, float* m_new, float* sums) {
  using F = typename V::F;
  F vmax[H], vm[H], sum[H];
  #pragma GCC unroll 8
  for (int h = 0; h < H; ++h) vmax[h] = V::set1(m[h]);
  int j = 0;
  for (; j + V::W <= n; j += V::W)
    #pragma GCC unroll 8
    for (int h = 0; h < H; ++h) vmax[h] = V::max(vmax[h], V::load(s + (size_t)h * stride + j));
  const int tail = j;
  for (int h = 0; h < H; ++h) {
    float mx = V::hmax(vmax[h]);
    for (int t = tail; t < n; ++t) mx = std::max(mx, s[(size_t)h * stride + t]);
    m_new[h] = mx;
    vm[h] = V::set1(mx);
    sum[h] = V::zero();
  }
  for (j = 0; j + V::W <= n; j += V::W)
    #pragma GCC unroll 8
    for (int h = 0; h < H; ++h) {
      const F y = exp_nonpositive<V>(V::sub(V::load(s + (size_t)h * stride + j), vm[h]));
      V::store(p + (size_t)h * stride + j, y);
      sum[h] = V::add(sum[h], y);
    }
  for (int h = 0; h < H; ++h) {
    float total = V::hsum(sum[h]);
    for (int t = tail; t < n; ++t)
      total += p[(size_t)h * stride + t] = std::exp(s[(size_t)h * stride + t] - m_new[h]);
    sums[h] = total;
  }
}

template <class V>
float exp_shifted(const float* s, float m, float* p, int n, float* m_new) {
  float sum;
  exp_shifted_h<V, 1>(s, 0, &m, p, n, m_new, &sum);
  return sum;
}

// Up to kExpHeads heads a pass: the chains of 4 heads fill the FMA pipes.
template <class V>
void exp_shifted_heads(const float* s, size_t stride, int heads, const float* m, float* p, int n, float* m_new,
                       float* sums) {
  for (int h0 = 0; h0 < heads; h0 += kExpHeads) {
    const size_t o = (size_t)h0 * stride;
    switch (std::min(kExpHeads, heads - h0)) {
      case 1: exp_shifted_h<V, 1>(s + o, stride, m + h0, p + o, n, m_new + h0, sums + h0); break;
      case 2: exp_shifted_h<V, 2>(s + o, stride, m + h0, p + o, n, m_new + h0, sums + h0); break;
      case 3: exp_shifted_h<V, 3>(s + o, stride, m + h0, p + o, n, m_new + h0, sums + h0); break;
      default: exp_shifted_h<V, 4>(s + o, stride, m + h0, p + o, n, m_new + h0, sums + h0); break;
    }
  }
}

// Head counts as compile-time constants so the accumulators stay in
// registers; MaxH is the most heads one call takes (4 or 8).
template <int MaxH, template <int> class K, class... A>
void by_heads(int n_heads, A... args) {
  switch (n_heads) {
    case 1: return K<1>::run(args...);
    case 2: return K<2>::run(args...);
    case 3: return K<3>::run(args...);
    case 4: return K<4>::run(args...);
  }
  if constexpr (MaxH > 4) {
    switch (n_heads) {
      case 5: return K<5>::run(args...);
      case 6: return K<6>::run(args...);
      case 7: return K<7>::run(args...);
      default: return K<8>::run(args...);
    }
  }
}

// The kernels as by_heads wants them: a template over the head count.
// Rows per score pass: 4 with 32 registers (H <= 4 heads x 4 rows of
// accumulators), 2 with 16 (AVX2: 4 x 2).
template <int MaxH>
constexpr int score_rows_per_pass() {
  return MaxH > 4 ? 4 : 2;
}
// Calls kernel(heads, q, scores) for H heads in tiles of at most 4, heads
// a std::integral_constant: the accumulators of 4 heads x 4 rows fill half
// the AVX-512 registers, so larger groups pass over the rows once per tile.
template <int H, class Kernel>
void score_in_tiles(const float* q, float* s, size_t ss, int d, Kernel kernel) {
  if constexpr (H > 4) {
    kernel(std::integral_constant<int, 4>{}, q, s);
    kernel(std::integral_constant<int, H - 4>{}, q + (size_t)4 * d, s + 4 * ss);
  } else {
    kernel(std::integral_constant<int, H>{}, q, s);
  }
}

template <class V, int MaxH, class Load>
struct ScoreFloat {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* q, float scale, float* s, size_t ss) {
      score_in_tiles<H>(q, s, ss, b.d, [&](auto heads, const float* qt, float* st) {
        score_float_h<V, decltype(heads)::value, score_rows_per_pass<MaxH>(), Load>(b, qt, scale, st, ss);
      });
    }
  };
};
template <class V, int MaxH>
struct ScoreQ2 {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* q, float scale, float* s, size_t ss) {
      score_in_tiles<H>(q, s, ss, b.d, [&](auto heads, const float* qt, float* st) {
        score_q2_h<V, decltype(heads)::value, score_rows_per_pass<MaxH>()>(b, qt, scale, st, ss);
      });
    }
  };
};
template <class V, int MaxH, class Load>
struct AccFloat {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* p, size_t ps, float* acc) {
      accumulate_float_h<V, H, chunks_per_pass<MaxH, H>(), Load>(b, p, ps, acc);
    }
  };
};
template <class V, int MaxH>
struct AccQ2 {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* p, size_t ps, float* acc, float* scratch) {
      accumulate_q2_h<V, H, chunks_per_pass<MaxH, H>()>(b, p, ps, acc, scratch);
    }
  };
};

template <class V, int MaxH, class Load>
void score_float(const RowBlock& b, const float* q, int n_heads, float scale, float* scores, size_t stride) {
  by_heads<MaxH, ScoreFloat<V, MaxH, Load>::template K>(n_heads, b, q, scale, scores, stride);
}
template <class V, int MaxH>
void score_q2(const RowBlock& b, const float* q, int n_heads, float scale, float* scores, size_t stride) {
  by_heads<MaxH, ScoreQ2<V, MaxH>::template K>(n_heads, b, q, scale, scores, stride);
}
template <class V, int MaxH, class Load>
void accumulate_float(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float*) {
  by_heads<MaxH, AccFloat<V, MaxH, Load>::template K>(n_heads, b, p, stride, acc);
}
template <class V, int MaxH>
void accumulate_q2(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float* scratch) {
  by_heads<MaxH, AccQ2<V, MaxH>::template K>(n_heads, b, p, stride, acc, scratch);
}

// The kernel set of W = V::W floats per vector that takes up to MaxH heads per call.
template <class V, int MaxH>
RowKernels simd_kernels() {
  return {score_float<V, MaxH, LoadF16>, score_q2<V, MaxH>, accumulate_float<V, MaxH, LoadF16>,
          accumulate_q2<V, MaxH>, score_float<V, MaxH, LoadF32>, accumulate_float<V, MaxH, LoadF32>,
          exp_shifted<V>, exp_shifted_heads<V>, MaxH, V::W};
}

}  // namespace
}  // namespace oscar::attention::detail
