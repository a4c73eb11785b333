// AVX-512 (F/BW/VL/DQ, optionally VNNI) dot kernels for the k-quants against
// Q8_K, included by kquant_dot_avx512.cpp and kquant_dot_avx512vnni.cpp (each
// compiles it with its own target flags and instantiates `dot<Dec, kVnni>`).
//
// Every format is first decoded, per super-block, into the common form of
// kquant_blocks.h: 256 unsigned weights u (< 64) in four zmm registers laid
// out exactly like the 256 activation bytes, 16 int16 scales s and 16 int16
// bias factors t. The product of one super-block with one activation block is
//   a.d * (d * sum_g s_g * sum_i u_i a_i  -  m * sum_g t_g * bsum_g)
// where sum_i u_i a_i comes from vpmaddubsw (u unsigned <= 63 and a in
// [-127, 127] cannot saturate: 2 * 63 * 127 < 32767) and the per-16 scales are
// applied by vpmaddwd (or, with VNNI, vpdpwssd, which also does the adds).
// Mins / the constant offsets of Q3_K and Q6_K never touch the weights: they
// go through Q8_K's block sums.
//
// Q4_K and Q5_K take their activations in the paired order of
// pair_q8_K_chunks (kquant_blocks.h): one 64-byte load of codes then gives two
// registers (low and high nibbles) that line up with 64 activation bytes,
// instead of a broadcast, a masked shift and a mask per 32 bytes.
//
// A tile decodes each weight super-block once and multiplies it with all nc
// activation columns (accumulators in registers, nc <= 8), so in a GEMM the
// unpacking cost is shared by the columns and in a GEMV (nc = 1) the kernel is
// a straight stream over the weight rows.
#pragma once

// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "core/in_register.h"
#include "core/prefetch.h"
#include "quant/kquant_blocks.h"
#include "quant/kquant_simd_fields.h"

namespace oscar::quant {
namespace {

#define KQ_INLINE inline __attribute__((always_inline))

struct Dec {
  __m512i u[4];  // the weights of activation bytes 64g .. 64g+63
  __m512i s[4];  // int16 scale of each int16 lane of maddubs(u[g], a)
  __m256i t;     // int16 bias factor per 16-value group
  __m128 dm;     // (d, m, ...): the super-block scale and min scale
};

// permutexvar indices that spread 16 int16 scales (one per 16 values) over
// the 32 int16 lanes of a maddubs result: lane L of group g gets 4g + L/8.
struct ScaleIdx {
  alignas(64) int16_t v[4][32];
  constexpr ScaleIdx() : v{} {
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) v[g][l] = (int16_t)(4 * g + l / 8);
  }
};
constexpr ScaleIdx kScaleIdx;

KQ_INLINE void spread_scales(__m256i s16, Dec& D) {
  const __m512i s = _mm512_castsi256_si512(s16);
  for (int g = 0; g < 4; ++g)
    D.s[g] = _mm512_permutexvar_epi16(_mm512_load_si512(kScaleIdx.v[g]), s);
}

// vpshufb indices (per 128-bit lane, each holding a copy of the 16 bytes
// of k4_scale_bytes) that put the scale of the 32 values in int16 lane L of
// register g in that lane's low byte and zero (0x80) in its high byte: in the
// paired order register g holds sub-blocks a = 4 (g / 2) + g % 2 (lanes 0-15)
// and a + 2 (lanes 16-31). [4]: byte 8 + L / 2 (the min of natural 16-value
// group L) for the bias factors. One in-lane vpshufb per register instead of
// a widening and a cross-lane vpermw: gemv_cached/q4_K 4% faster
// (docs/decisions/0008-kquant-loads-in-registers.md).
struct K4ShuffleIdx {
  alignas(64) int8_t v[5][64];
  constexpr K4ShuffleIdx() : v{} {
    for (int g = 0; g < 4; ++g)
      for (int L = 0; L < 32; ++L)
        v[g][2 * L] = (int8_t)(4 * (g / 2) + g % 2 + (L < 16 ? 0 : 2)), v[g][2 * L + 1] = (int8_t)0x80;
    for (int L = 0; L < 16; ++L) v[4][2 * L] = (int8_t)(8 + L / 2), v[4][2 * L + 1] = (int8_t)0x80;
  }
};
constexpr K4ShuffleIdx kK4Idx;

// Q4_K/Q5_K scales and mins: 8 of each, one per 32 values -> 16 int16 each
// (every value repeated for its two groups of 16).
KQ_INLINE void k4_scales(const uint8_t* packed, Dec& D) {
  const __m512i b = _mm512_broadcast_i32x4(k4_scale_bytes(packed));
  for (int g = 0; g < 4; ++g) D.s[g] = _mm512_shuffle_epi8(b, _mm512_load_si512(kK4Idx.v[g]));
  D.t = _mm256_shuffle_epi8(_mm512_castsi512_si256(b), _mm256_load_si256((const __m256i*)kK4Idx.v[4]));
}

// Low and high nibbles of 64 code bytes (32-byte chunks 2c and 2c + 1): in
// the paired order they are registers 2c and 2c + 1.
KQ_INLINE void nibble_pair(const uint8_t* qs, int c, __m512i* u) {
  const __m512i q = in_register(_mm512_loadu_si512(qs + 64 * c));
  const __m512i m = _mm512_set1_epi8(15);
  u[2 * c] = _mm512_and_si512(q, m);
  u[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m);
}

struct DecQ4 {
  using Block = BlockQ4_K;
  static KQ_INLINE void run(const Block& b, Dec& D) {
    k4_scales(b.scales, D);
    for (int c = 0; c < 2; ++c) nibble_pair(b.qs, c, D.u);
    D.dm = f16_pair(&b.d);
  }
};

struct DecQ5 {
  using Block = BlockQ5_K;
  static KQ_INLINE void run(const Block& b, Dec& D) {
    k4_scales(b.scales, D);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)b.qh));
    const __m512i sixteen = _mm512_set1_epi8(16);
    for (int c = 0; c < 2; ++c) nibble_pair(b.qs, c, D.u);
    for (int g = 0; g < 4; ++g) {
      // The fifth bit of sub-block j's value l is bit j of qh[l]; register g
      // holds sub-blocks a (low half) and a + 2 (high half).
      const int a = 4 * (g / 2) + g % 2;
      const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << a)), _mm256_set1_epi8((char)(1 << (a + 2))), 1);
      D.u[g] = _mm512_mask_add_epi8(D.u[g], _mm512_test_epi8_mask(qh, sel), D.u[g], sixteen);
    }
    D.dm = f16_pair(&b.d);
  }
};

struct DecQ6 {
  using Block = BlockQ6_K;
  static KQ_INLINE void run(const Block& b, Dec& D) {
    const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m512i L = in_register(_mm512_loadu_si512(b.ql + 64 * h));
      const __m256i H = in_register(_mm256_loadu_si256((const __m256i*)(b.qh + 32 * h)));
      // Low half: qh bits 0-1 (values 0..31), high half: bits 2-3 (32..63);
      // after >> 4 the same register gives bits 4-5 and 6-7 (64..127).
      const __m512i Hz = _mm512_inserti64x4(_mm512_castsi256_si512(H), _mm256_srli_epi16(H, 2), 1);
      D.u[2 * h] = _mm512_or_si512(_mm512_and_si512(L, m0f),
                                   _mm512_and_si512(_mm512_slli_epi16(Hz, 4), m30));
      D.u[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m0f),
                                       _mm512_and_si512(Hz, m30));
    }
    const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)b.scales));
    spread_scales(s16, D);
    D.t = _mm256_slli_epi16(s16, 5);  // 32 * s: values are u - 32
    D.dm = f16_all(&b.d);
  }
};

// Two-bit fields of 32 bytes: zmm 2h gets shifts 0 and 2, zmm 2h+1 shifts 4 and 6.
KQ_INLINE void crumbs(const uint8_t* qs, __m512i* u) {
  const __m512i m3 = _mm512_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m256i Q = in_register(_mm256_loadu_si256((const __m256i*)(qs + 32 * h)));
    const __m512i Qz = _mm512_inserti64x4(_mm512_castsi256_si512(Q), _mm256_srli_epi16(Q, 2), 1);
    u[2 * h] = _mm512_and_si512(Qz, m3);
    u[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(Qz, 4), m3);
  }
}

struct DecQ2 {
  using Block = BlockQ2_K;
  static KQ_INLINE void run(const Block& b, Dec& D) {
    crumbs(b.qs, D.u);
    const __m128i sc = _mm_loadu_si128((const __m128i*)b.scales);
    const __m128i m0f = _mm_set1_epi8(0x0f);
    spread_scales(_mm256_cvtepu8_epi16(_mm_and_si128(sc, m0f)), D);
    D.t = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m0f));
    D.dm = f16_pair(&b.d);
  }
};

struct DecQ3 {
  using Block = BlockQ3_K;
  static KQ_INLINE void run(const Block& b, Dec& D) {
    crumbs(b.qs, D.u);
    const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)b.hmask));
    const __m512i four = _mm512_set1_epi8(4);
    for (int g = 0; g < 4; ++g) {
      // Value 128h + 32j + l has its high bit at bit 4h + j of hmask[l].
      const int bit = 4 * (g / 2) + 2 * (g % 2);
      const __m512i sel = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << bit)),
                                             _mm256_set1_epi8((char)(1 << (bit + 1))), 1);
      D.u[g] = _mm512_mask_add_epi8(D.u[g], _mm512_test_epi8_mask(hm, sel), D.u[g], four);
    }
    const __m256i s16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(k3_scale_bytes(b.scales), _mm_set1_epi8(32)));
    spread_scales(s16, D);
    D.t = _mm256_slli_epi16(s16, 2);  // 4 * s: values are u - 4
    D.dm = f16_all(&b.d);
  }
};

// The weight sums and the bias sums go to separate accumulators so that the
// loop-carried chain is one FMA per super-block, not two.
struct Acc {
  __m512 sum, bias;
};

template <bool kVnni>
KQ_INLINE void step(const Dec& D, const BlockQ8_K& a, Acc& acc) {
  const auto prod = [&](int g) { return _mm512_maddubs_epi16(D.u[g], _mm512_loadu_si512(a.qs + 64 * g)); };
  __m512i isum;
  if constexpr (kVnni) {
    isum = _mm512_madd_epi16(prod(0), D.s[0]);
    for (int g = 1; g < 4; ++g) isum = _mm512_dpwssd_epi32(isum, prod(g), D.s[g]);
  } else {
    __m512i p[4];
    for (int g = 0; g < 4; ++g) p[g] = _mm512_madd_epi16(prod(g), D.s[g]);
    isum = _mm512_add_epi32(_mm512_add_epi32(p[0], p[1]), _mm512_add_epi32(p[2], p[3]));
  }
  const __m256i bias = _mm256_madd_epi16(D.t, _mm256_loadu_si256((const __m256i*)a.bsums));
  const __m128 f = block_factors(D.dm, a.d);
  acc.sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_broadcastss_ps(f), acc.sum);
  acc.bias = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(bias)),
                             _mm512_broadcastss_ps(_mm_movehdup_ps(f)), acc.bias);
}

template <class T, bool kVnni, int NC>
void tile(int64_t nb, const uint8_t* w, size_t ws, int nr, const uint8_t* act, size_t as, float* out,
          size_t os) {
  const BlockQ8_K* a[NC];
  for (int c = 0; c < NC; ++c) a[c] = reinterpret_cast<const BlockQ8_K*>(act + c * as);
  for (int r = 0; r < nr; ++r) {
    const auto* wr = reinterpret_cast<const typename T::Block*>(w + r * ws);
    Acc acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t ib = 0; ib < nb; ++ib) {
      if (NC == 1) prefetch_lines(reinterpret_cast<const uint8_t*>(&wr[ib]) + kStreamPrefetchBytes, sizeof(wr[ib]));
      Dec D;
      T::run(wr[ib], D);
      for (int c = 0; c < NC; ++c) step<kVnni>(D, a[c][ib], acc[c]);
    }
    for (int c = 0; c < NC; ++c) out[r * os + c] = _mm512_reduce_add_ps(_mm512_sub_ps(acc[c].sum, acc[c].bias));
  }
}

template <class T, bool kVnni>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* act, size_t as, int nc, float* out,
         size_t os) {
  const int64_t nb = n / kQK_K;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(act);
  switch (nc) {
    case 1: return tile<T, kVnni, 1>(nb, wb, ws, nr, ab, as, out, os);
    case 2: return tile<T, kVnni, 2>(nb, wb, ws, nr, ab, as, out, os);
    case 3: return tile<T, kVnni, 3>(nb, wb, ws, nr, ab, as, out, os);
    case 4: return tile<T, kVnni, 4>(nb, wb, ws, nr, ab, as, out, os);
    case 5: return tile<T, kVnni, 5>(nb, wb, ws, nr, ab, as, out, os);
    case 6: return tile<T, kVnni, 6>(nb, wb, ws, nr, ab, as, out, os);
    case 7: return tile<T, kVnni, 7>(nb, wb, ws, nr, ab, as, out, os);
    default: return tile<T, kVnni, 8>(nb, wb, ws, nr, ab, as, out, os);
  }
}

}  // namespace
}  // namespace oscar::quant
