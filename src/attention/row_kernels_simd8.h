// The 8-float-wide row kernels of the fused attention (see
// row_kernels_impl.h), written with AVX2 + FMA + F16C intrinsics and
// compiled twice: row_kernels_avx2.cpp (16 vector registers: up to 4 query
// heads per pass) and row_kernels_avx512.cpp (AVX-512VL's 32 registers: up
// to 8 heads per pass, so a GQA-8 group reads and unpacks each row once and
// there are enough independent FMA chains to hide their latency). Everything
// here has internal linkage, so the two copies never meet at link time.
// Rows are read in their stored form and turned into 8
// floats at a time in registers, never into a decoded copy of the row:
//   f32:  the batch's own rows, loaded as they are;
//   f16:  one F16C conversion per 8 values;
//   q2_0: one byte of codes holds the 2-bit codes of values j, j+g/4, j+g/2,
//         j+3g/4 of its group, so 8 code bytes widened to 32-bit lanes give a
//         whole quarter-chunk per shift-and-mask, then x = lo + s*code.
// Scores take two rows per pass (two independent FMA chains per head that
// share the query loads); value sums take the rows innermost with the
// accumulators of one 8-value chunk in registers, and fold each q2 row's
// scale into its weight and its offset into one constant per group.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "attention/row_kernels_impl.h"

namespace oscar::attention::detail {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256 f16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The codes of 8 consecutive code bytes, field `shift` (0, 2, 4, 6), as floats 0..3.
inline __m256 codes8(const uint8_t* p, __m256i shift) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srlv_epi32(c, shift), _mm256_set1_epi32(3)));
}

// Fields k0 .. k0+C-1 (shifts 2*k0, ...) of 8 consecutive code bytes, as floats 0..3.
template <int C>
inline void code_quarters(const uint8_t* p, int k0, __m256* x) {
  const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  #pragma GCC unroll 16
  for (int k = 0; k < C; ++k)
    x[k] = _mm256_cvtepi32_ps(
        _mm256_and_si256(_mm256_srlv_epi32(c, _mm256_set1_epi32(2 * (k0 + k))), _mm256_set1_epi32(3)));
}

// Scores two rows per pass: `chunks(ra, rb, visit)` calls visit(i, xa, xb)
// with values i..i+7 of both rows as floats, in any order.
template <int H, class Chunks>
void score_pairs(const RowBlock& b, const float* q, float scale, float* scores, size_t ss, Chunks chunks) {
  const int d = b.d;
  for (int j = 0; j < b.n; j += 2) {
    const uint8_t* ra = b.rows + (size_t)j * b.stride;
    const uint8_t* rb = j + 1 < b.n ? ra + b.stride : ra;
    __m256 a[H], c[H];
    #pragma GCC unroll 16
    for (int h = 0; h < H; ++h) a[h] = c[h] = _mm256_setzero_ps();
    chunks(ra, rb, [&](int i, __m256 xa, __m256 xb) {
      #pragma GCC unroll 16
      for (int h = 0; h < H; ++h) {
        const __m256 qv = _mm256_loadu_ps(q + (size_t)h * d + i);
        a[h] = _mm256_fmadd_ps(qv, xa, a[h]);
        c[h] = _mm256_fmadd_ps(qv, xb, c[h]);
      }
    });
    #pragma GCC unroll 16
    for (int h = 0; h < H; ++h) {
      scores[(size_t)h * ss + j] = hsum(a[h]) * scale;
      if (j + 1 < b.n) scores[(size_t)h * ss + j + 1] = hsum(c[h]) * scale;
    }
  }
}

// Values i..i+7 of a float row: stored as f16 (cached rows) or f32 (the
// batch's own keys and values, before they are stored).
struct LoadF16 {
  static __m256 at(const uint8_t* row, int i) { return f16x8(row + 2 * i); }
};
struct LoadF32 {
  static __m256 at(const uint8_t* row, int i) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i); }
};

template <int H, class Load>
void score_float_h(const RowBlock& b, const float* q, float scale, float* scores, size_t ss) {
  const int d = b.d;
  score_pairs<H>(b, q, scale, scores, ss, [d](const uint8_t* ra, const uint8_t* rb, auto&& visit) {
    for (int i = 0; i < d; i += 8) visit(i, Load::at(ra, i), Load::at(rb, i));
  });
}

template <int H>
void score_q2_h(const RowBlock& b, const float* q, float scale, float* scores, size_t ss) {
  const int d = b.d, g = b.g, qn = g / 4;
  score_pairs<H>(b, q, scale, scores, ss, [d, g, qn](const uint8_t* ra, const uint8_t* rb, auto&& visit) {
    for (int g0 = 0; g0 < d; g0 += g, ra += 4 + qn, rb += 4 + qn) {
      const __m256 sa = _mm256_set1_ps(f16_at(ra)), la = _mm256_set1_ps(f16_at(ra + 2));
      const __m256 sb = _mm256_set1_ps(f16_at(rb)), lb = _mm256_set1_ps(f16_at(rb + 2));
      for (int k = 0; k < 4; ++k) {
        const __m256i shift = _mm256_set1_epi32(2 * k);
        for (int cb = 0; cb < qn; cb += 8)
          visit(g0 + k * qn + cb, _mm256_fmadd_ps(codes8(ra + 4 + cb, shift), sa, la),
                _mm256_fmadd_ps(codes8(rb + 4 + cb, shift), sb, lb));
      }
    }
  });
}

// Value chunks (8 floats each) one accumulate pass keeps in registers for H
// heads: each broadcast weight then feeds C FMAs instead of one, which is
// what bounds small GQA groups. AVX2 (MaxH 4) has 16 registers, AVX-512VL
// (MaxH 8) 32. Every lane sums its rows in the same order whatever C is, so
// both kernel sets stay bit-identical.
template <int MaxH, int H>
constexpr int chunks_per_pass() {
  const int c = MaxH / H, cap = MaxH > 4 ? 4 : 2;
  return c < 1 ? 1 : (c > cap ? cap : c);
}

// The step both accumulate kernels repeat for two rows: a[h][k] += w0[h] x0[k]
// and c[h][k] += w1[h] x1[k], head h's weights hs floats apart. Two chains
// per (head, chunk) hide the FMA latency.
template <int H, int C>
inline __attribute__((always_inline)) void fma_two_rows(const float* w0, const float* w1, size_t hs, const __m256* x0,
                                                        const __m256* x1, __m256* a, __m256* c) {
#pragma GCC unroll 16
  for (int h = 0; h < H; ++h) {
    const __m256 u = _mm256_broadcast_ss(w0 + (size_t)h * hs), v = _mm256_broadcast_ss(w1 + (size_t)h * hs);
#pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      a[h * C + k] = _mm256_fmadd_ps(u, x0[k], a[h * C + k]);
      c[h * C + k] = _mm256_fmadd_ps(v, x1[k], c[h * C + k]);
    }
  }
}

template <int H, int C, class Load>
inline void accumulate_float_chunks(const RowBlock& b, const float* p, size_t ps, float* acc, int i) {
  const int d = b.d, n = b.n;
  __m256 a[H * C], c[H * C];
  #pragma GCC unroll 16
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      a[h * C + k] = _mm256_loadu_ps(acc + (size_t)h * d + i + 8 * k);
      c[h * C + k] = _mm256_setzero_ps();
    }
  const uint8_t* r = b.rows;
  int j = 0;
  for (; j + 2 <= n; j += 2, r += 2 * b.stride) {
    __m256 x0[C], x1[C];
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) {
      x0[k] = Load::at(r, i + 8 * k);
      x1[k] = Load::at(r + b.stride, i + 8 * k);
    }
    fma_two_rows<H, C>(p + j, p + j + 1, ps, x0, x1, a, c);
  }
  if (j < n) {
    __m256 x0[C];
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) x0[k] = Load::at(r, i + 8 * k);
    #pragma GCC unroll 16
    for (int h = 0; h < H; ++h) {
      const __m256 w0 = _mm256_broadcast_ss(p + (size_t)h * ps + j);
      #pragma GCC unroll 16
      for (int k = 0; k < C; ++k) a[h * C + k] = _mm256_fmadd_ps(w0, x0[k], a[h * C + k]);
    }
  }
  #pragma GCC unroll 16
  for (int h = 0; h < H; ++h)
    #pragma GCC unroll 16
    for (int k = 0; k < C; ++k) _mm256_storeu_ps(acc + (size_t)h * d + i + 8 * k, _mm256_add_ps(a[h * C + k], c[h * C + k]));
}

template <int H, int C, class Load>
void accumulate_float_h(const RowBlock& b, const float* p, size_t ps, float* acc) {
  int i = 0;
  if constexpr (C > 1)
    for (; i + 8 * C <= b.d; i += 8 * C) accumulate_float_chunks<H, C, Load>(b, p, ps, acc, i);
  for (; i < b.d; i += 8) accumulate_float_chunks<H, 1, Load>(b, p, ps, acc, i);
}

template <int H, int C>
void accumulate_q2_h(const RowBlock& b, const float* p, size_t ps, float* acc, float* scratch) {
  static_assert(4 % C == 0, "a pass takes 1, 2 or 4 of a group's quarters");
  const int d = b.d, g = b.g, qn = g / 4, ng = d / g, n = b.n;
  const size_t gb = 4 + (size_t)qn;  // bytes per group
  // Σ_j p_j (lo_j + s_j c_j) = Σ_j p_j lo_j + Σ_j (p_j s_j) c_j: weights with
  // the row scale folded in, and one offset sum per (group, head).
  float* ws = scratch;                    // (ng, n, H)
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
      for (int cb = 0; cb < qn; cb += 8) {
        __m256 a[H * C], c[H * C];
        #pragma GCC unroll 16
        for (int h = 0; h < H; ++h)
          #pragma GCC unroll 16
          for (int k = 0; k < C; ++k) {
            const int i = gi * g + (k0 + k) * qn + cb;
            a[h * C + k] = _mm256_add_ps(_mm256_loadu_ps(acc + (size_t)h * d + i), _mm256_set1_ps(wl[gi * H + h]));
            c[h * C + k] = _mm256_setzero_ps();
          }
        const uint8_t* r = b.rows + gi * gb + 4 + cb;
        const float* w = ws + (size_t)gi * n * H;
        int j = 0;
        for (; j + 2 <= n; j += 2, r += 2 * b.stride, w += 2 * H) {
          __m256 x0[C], x1[C];
          code_quarters<C>(r, k0, x0);
          code_quarters<C>(r + b.stride, k0, x1);
          fma_two_rows<H, C>(w, w + H, 1, x0, x1, a, c);
        }
        if (j < n) {
          __m256 x0[C];
          code_quarters<C>(r, k0, x0);
          #pragma GCC unroll 16
          for (int h = 0; h < H; ++h) {
            const __m256 w0 = _mm256_broadcast_ss(w + h);
            #pragma GCC unroll 16
            for (int k = 0; k < C; ++k) a[h * C + k] = _mm256_fmadd_ps(w0, x0[k], a[h * C + k]);
          }
        }
        #pragma GCC unroll 16
        for (int h = 0; h < H; ++h)
          #pragma GCC unroll 16
          for (int k = 0; k < C; ++k)
            _mm256_storeu_ps(acc + (size_t)h * d + gi * g + (k0 + k) * qn + cb, _mm256_add_ps(a[h * C + k], c[h * C + k]));
      }
}

// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two so r
// is exact), exp(r) by the minimax polynomial of Cephes' expf, times 2^n
// built in the exponent field. Below -87.3 (2^-126) the result is 0, like a
// float exp that has underflowed; within a few ulp of std::exp elsewhere.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.3365447f);
  const __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lowest);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
}

float exp_shifted(const float* s, float m, float* p, int n) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 y = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(p + j, y);
    sum = _mm256_add_ps(sum, y);
  }
  float total = hsum(sum);
  for (; j < n; ++j) total += p[j] = std::exp(s[j] - m);
  return total;
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
template <class Load>
struct ScoreFloat {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* q, float scale, float* s, size_t ss) {
      score_float_h<H, Load>(b, q, scale, s, ss);
    }
  };
};
template <int H>
struct ScoreQ2 {
  static void run(const RowBlock& b, const float* q, float scale, float* s, size_t ss) { score_q2_h<H>(b, q, scale, s, ss); }
};
template <int MaxH, class Load>
struct AccFloat {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* p, size_t ps, float* acc) {
      accumulate_float_h<H, chunks_per_pass<MaxH, H>(), Load>(b, p, ps, acc);
    }
  };
};
template <int MaxH>
struct AccQ2 {
  template <int H>
  struct K {
    static void run(const RowBlock& b, const float* p, size_t ps, float* acc, float* scratch) {
      accumulate_q2_h<H, chunks_per_pass<MaxH, H>()>(b, p, ps, acc, scratch);
    }
  };
};

template <int MaxH, class Load>
void score_float(const RowBlock& b, const float* q, int n_heads, float scale, float* scores, size_t stride) {
  by_heads<MaxH, ScoreFloat<Load>::template K>(n_heads, b, q, scale, scores, stride);
}
template <int MaxH>
void score_q2(const RowBlock& b, const float* q, int n_heads, float scale, float* scores, size_t stride) {
  by_heads<MaxH, ScoreQ2>(n_heads, b, q, scale, scores, stride);
}
template <int MaxH, class Load>
void accumulate_float(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float*) {
  by_heads<MaxH, AccFloat<MaxH, Load>::template K>(n_heads, b, p, stride, acc);
}
template <int MaxH>
void accumulate_q2(const RowBlock& b, const float* p, size_t stride, int n_heads, float* acc, float* scratch) {
  by_heads<MaxH, AccQ2<MaxH>::template K>(n_heads, b, p, stride, acc, scratch);
}

// The kernel set that takes up to MaxH heads per call.
template <int MaxH>
RowKernels simd8_kernels() {
  return {score_float<MaxH, LoadF16>, score_q2<MaxH>, accumulate_float<MaxH, LoadF16>, accumulate_q2<MaxH>,
          score_float<MaxH, LoadF32>, accumulate_float<MaxH, LoadF32>, exp_shifted, MaxH};
}

}  // namespace
}  // namespace oscar::attention::detail
