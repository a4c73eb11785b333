// AVX2+FMA dot kernels for the k-quants against Q8_K.
//
// Same arithmetic as the AVX-512 kernels (see kquant_dot_avx512_impl.h and
// kquant_blocks.h): per super-block, unsigned weights u (< 64) times int8
// activations via vpmaddubsw, int16 scales per 16 values via vpmaddwd, and
// the mins / constant offsets applied through Q8_K's block sums.
//
// With 16 ymm registers a whole decoded super-block (8 x u, 8 x scales) does
// not fit, so the decoders here are lazy: they keep the per-block scales and
// produce the 32 weights of part h on demand, and the tile multiplies each
// part with all nc columns before decoding the next. Columns are handled four
// at a time so the per-column int32 sums stay in registers.
#include <immintrin.h>

#include "core/prefetch.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_simd_fields.h"

namespace oscar::quant {
namespace {

#define KQ_INLINE inline __attribute__((always_inline))

// Bits shifted from position `from` to position `to` of every byte (the
// 16-bit shift cannot carry a bit across bytes as long as |to - from| < 8
// and only bit `to` is kept by the mask that follows).
KQ_INLINE __m256i move_bit(__m256i v, int from, int to) {
  return from >= to ? _mm256_srli_epi16(v, from - to) : _mm256_slli_epi16(v, to - from);
}

// Scales of part h (values 32h..32h+31): int16 lanes 0-7 (the first 16
// values) get s[2h], lanes 8-15 get s[2h+1].
KQ_INLINE __m256i part_scales(__m256i s16, int h) {
  const __m256i pair = _mm256_permutevar8x32_epi32(s16, _mm256_set1_epi32(h));
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(pair, pick);
}

// Q4_K/Q5_K scales and mins: 8 of each, one per 32 values -> 16 int16 each
// (every value repeated for its two groups of 16).
KQ_INLINE void k4_scales(const uint8_t* packed, __m256i& s16, __m256i& t) {
  const __m128i b = k4_scale_bytes(packed);
  s16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(b, b));
  t = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(b, b));
}

KQ_INLINE __m256i load(const void* p) { return _mm256_loadu_si256((const __m256i*)p); }

struct DecQ4 {
  using Block = BlockQ4_K;
  const Block& b;
  __m256i s16, t;
  __m128 dm;  // (d, dmin, ...)
  KQ_INLINE explicit DecQ4(const Block& blk) : b(blk) {
    k4_scales(b.scales, s16, t);
    dm = f16_pair(&b.d);
  }
  KQ_INLINE __m256i u(int h) const {
    const __m256i q = load(b.qs + 32 * (h / 2));
    return _mm256_and_si256(h % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(15));
  }
};

struct DecQ5 {
  using Block = BlockQ5_K;
  const Block& b;
  __m256i s16, t, qh;
  __m128 dm;  // (d, dmin, ...)
  KQ_INLINE explicit DecQ5(const Block& blk) : b(blk) {
    k4_scales(b.scales, s16, t);
    qh = load(b.qh);
    dm = f16_pair(&b.d);
  }
  KQ_INLINE __m256i u(int h) const {
    const __m256i q = load(b.qs + 32 * (h / 2));
    const __m256i lo = _mm256_and_si256(h % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(15));
    // Fifth bit of part h (= 2c + k) is bit h of qh[l].
    return _mm256_or_si256(lo, _mm256_and_si256(move_bit(qh, h, 4), _mm256_set1_epi8(16)));
  }
};

struct DecQ6 {
  using Block = BlockQ6_K;
  const Block& b;
  __m256i s16, t;
  __m128 dm;  // (d, dmin, ...)
  KQ_INLINE explicit DecQ6(const Block& blk) : b(blk) {
    s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)b.scales));
    t = _mm256_slli_epi16(s16, 5);  // values are u - 32
    dm = f16_all(&b.d);
  }
  KQ_INLINE __m256i u(int p) const {
    const int h = p / 4, j = p % 4;
    const __m256i L = load(b.ql + 64 * h + 32 * (j % 2));
    const __m256i lo = _mm256_and_si256(j < 2 ? L : _mm256_srli_epi16(L, 4), _mm256_set1_epi8(15));
    const __m256i H = load(b.qh + 32 * h);
    return _mm256_or_si256(lo, _mm256_and_si256(move_bit(H, 2 * j, 4), _mm256_set1_epi8(0x30)));
  }
};

struct DecQ2 {
  using Block = BlockQ2_K;
  const Block& b;
  __m256i s16, t;
  __m128 dm;  // (d, dmin, ...)
  KQ_INLINE explicit DecQ2(const Block& blk) : b(blk) {
    const __m128i sc = _mm_loadu_si128((const __m128i*)b.scales);
    const __m128i m0f = _mm_set1_epi8(0x0f);
    s16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc, m0f));
    t = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m0f));
    dm = f16_pair(&b.d);
  }
  KQ_INLINE __m256i u(int p) const {
    const __m256i q = load(b.qs + 32 * (p / 4));
    return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (p % 4)), _mm256_set1_epi8(3));
  }
};

struct DecQ3 {
  using Block = BlockQ3_K;
  const Block& b;
  __m256i s16, t, hm;
  __m128 dm;  // (d, dmin, ...)
  KQ_INLINE explicit DecQ3(const Block& blk) : b(blk) {
    s16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(k3_scale_bytes(b.scales), _mm_set1_epi8(32)));
    t = _mm256_slli_epi16(s16, 2);  // values are u - 4
    hm = load(b.hmask);
    dm = f16_all(&b.d);
  }
  KQ_INLINE __m256i u(int p) const {
    const __m256i q = load(b.qs + 32 * (p / 4));
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (p % 4)), _mm256_set1_epi8(3));
    // High bit of part p = 4h + j is bit p of hmask[l].
    return _mm256_or_si256(lo, _mm256_and_si256(move_bit(hm, p, 2), _mm256_set1_epi8(4)));
  }
};

KQ_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Rows r < nr against NC columns a[0..NC).
template <class T, int NC>
void tile(int64_t nb, const uint8_t* w, size_t ws, int nr, const BlockQ8_K* const* a, float* out,
          size_t os) {
  for (int r = 0; r < nr; ++r) {
    const auto* wr = reinterpret_cast<const typename T::Block*>(w + r * ws);
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    for (int64_t ib = 0; ib < nb; ++ib) {
      if (NC == 1) prefetch_lines(reinterpret_cast<const uint8_t*>(&wr[ib]) + kStreamPrefetchBytes, sizeof(wr[ib]));
      const T D(wr[ib]);
      __m256i isum[NC];
      for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
      for (int h = 0; h < 8; ++h) {
        const __m256i u = D.u(h), s = part_scales(D.s16, h);
        for (int c = 0; c < NC; ++c) {
          const __m256i p = _mm256_maddubs_epi16(u, load(a[c][ib].qs + 32 * h));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, s));
        }
      }
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_K& ac = a[c][ib];
        const __m256i bias = _mm256_madd_epi16(D.t, load(ac.bsums));
        const __m128 f = block_factors(D.dm, ac.d);
        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_broadcastss_ps(f), acc[c]);
        acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(bias), _mm256_broadcastss_ps(_mm_movehdup_ps(f)), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[r * os + c] = hsum(acc[c]);
  }
}

template <class T>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* act, size_t as, int nc, float* out,
         size_t os) {
  const int64_t nb = n / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  for (int c0 = 0; c0 < nc; c0 += 4) {
    const BlockQ8_K* a[4];
    const int k = nc - c0 < 4 ? nc - c0 : 4;
    for (int c = 0; c < k; ++c) a[c] = reinterpret_cast<const BlockQ8_K*>(ab + (c0 + c) * as);
    switch (k) {
      case 1: tile<T, 1>(nb, wb, ws, nr, a, out + c0, os); break;
      case 2: tile<T, 2>(nb, wb, ws, nr, a, out + c0, os); break;
      case 3: tile<T, 3>(nb, wb, ws, nr, a, out + c0, os); break;
      default: tile<T, 4>(nb, wb, ws, nr, a, out + c0, os); break;
    }
  }
}

}  // namespace

// Q8_K activation encoder, bit-identical to quantize_q8_K: the same float
// products rounded to nearest even by vcvtps2dq (MXCSR default) as lrintf.
// A GEMV quantizes its input row on one thread, so this is on the decode path.
void quantize_q8_K_avx2(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, ++b, src += kQK_K) {
    __m256 vmax = _mm256_setzero_ps();
    // max(x, vmax) keeps vmax when x is NaN, as std::max does in the scalar code.
    for (int i = 0; i < 256; i += 8)
      vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(src + i), abs_mask), vmax);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    if (!(amax > 0) || !(amax <= 3.402823466e38f)) {
      quantize_q8_K(src, b, kQK_K);  // zeros / non-finite: the scalar rules
      continue;
    }
    const __m256 id = _mm256_set1_ps(127.0f / amax);
    b->d = amax / 127.0f;
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0; i < 256; i += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k)
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + i + 8 * k), id));
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      // Saturation cannot trigger (|x * id| <= 127), but clamp -128 away anyway.
      const __m256i c = _mm256_max_epi8(_mm256_permutevar8x32_epi32(p, order), _mm256_set1_epi8(-127));
      _mm256_storeu_si256((__m256i*)(b->qs + i), c);
    }
    // Block sums: bytes -> sums of 4 (maddubs + madd with ones), then two
    // rounds of hadd give sums of 16 in the lane order fixed by `order`.
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i s4[8];
    for (int k = 0; k < 8; ++k)
      s4[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, load(b->qs + 32 * k)), ones16);
    __m256i g[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i a = _mm256_hadd_epi32(s4[4 * h], s4[4 * h + 1]);
      const __m256i c = _mm256_hadd_epi32(s4[4 * h + 2], s4[4 * h + 3]);
      g[h] = _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(a, c), order);
    }
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_packs_epi32(g[0], g[1]), 0xd8);
    _mm256_storeu_si256((__m256i*)b->bsums, sums);
  }
}

void dot_q2_K_avx2(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                   float* o, size_t os) {
  dot<DecQ2>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q3_K_avx2(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                   float* o, size_t os) {
  dot<DecQ3>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q4_K_avx2(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                   float* o, size_t os) {
  dot<DecQ4>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q5_K_avx2(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                   float* o, size_t os) {
  dot<DecQ5>(n, w, ws, nr, a, as, nc, o, os);
}
void dot_q6_K_avx2(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc,
                   float* o, size_t os) {
  dot<DecQ6>(n, w, ws, nr, a, as, nc, o, os);
}

}  // namespace oscar::quant
