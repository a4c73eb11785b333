// Legacy-format dot tiles for AVX2 + FMA + F16C: one 32-value block per
// 256-bit vector.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

struct T {
  static constexpr int G = 1;
  using I = __m256i;
  using F = __m256;

  // 16 bytes of nibbles -> 32 codes 0..15 (low nibbles first, then high).
  static inline I nibbles(const uint8_t* qs) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(x, 4), x), _mm256_set1_epi8(0x0F));
  }
  // qh bit j -> byte j = 0xFF, else 0.
  static inline I bitmask(const uint8_t* qh) {
    const __m256i v = _mm256_set1_epi32((int)load_u32(qh));
    // Every 128-bit lane holds qh: lane 0 spreads bytes 0, 1, lane 1 bytes 2, 3.
    const __m256i idx = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                          0x0101010101010101, 0x0000000000000000);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, idx), bit), bit);
  }

  // Unsigned 5-bit codes 0..31: the fifth bits (4 bytes at qh) over the
  // nibbles that follow them.
  static inline I codes5(const uint8_t* qh) {
    return _mm256_or_si256(nibbles(qh + 4), _mm256_and_si256(bitmask(qh), _mm256_set1_epi8(0x10)));
  }

  // The codes of the formats that have no bias<K>(): Q4_1 / Q5_1 (unsigned)
  // and Q8_0 (signed).
  template <LegacyKind K>
  static inline I load_w(const uint8_t* p) {
    if constexpr (K == kQ4_1) {
      return nibbles(p + 4);
    } else if constexpr (K == kQ5_1) {
      return codes5(p + 4);
    } else {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    }
  }
  // The signed codes plus bias<K>() as unsigned bytes (see legacy_dot_impl.h);
  // Q8_0 keeps the sign trick (its bytes + 128 would saturate vpmaddubsw).
  template <LegacyKind K>
  static constexpr int bias() {
    return K == kQ4_0 ? 8 : K == kQ5_0 ? 16 : 0;
  }
  template <LegacyKind K>
  static inline I load_w_biased(const uint8_t* p) {
    if constexpr (K == kQ4_0) {
      return nibbles(p + 2);
    } else {
      return codes5(p + 2);
    }
  }
  static inline I neg_bias_sum(I a, int b) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), dot_us(_mm256_set1_epi8((char)b), a));
  }
  static inline I dot_us_acc(I acc, I u, I s) { return _mm256_add_epi32(acc, dot_us(u, s)); }
  static inline I load_a(const uint8_t* qs, size_t) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
  }
  static inline F scale(const uint8_t* p, size_t) { return _mm256_set1_ps(_cvtsh_ss(load_u16(p))); }
  static inline I abs8(I x) { return _mm256_abs_epi8(x); }
  using S = __m256i;
  static inline S sign_of(I q) { return q; }
  static inline I apply_sign(I a, S q) { return _mm256_sign_epi8(a, q); }
  // u8 x s8 pairs -> int16 (no saturation: |u| <= 128, |s| <= 127), -> int32.
  static inline I dot_us(I u, I s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static inline F cvt(I x) { return _mm256_cvtepi32_ps(x); }
  static inline F set1(float f) { return _mm256_set1_ps(f); }
  static inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static inline F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static inline F zero() { return _mm256_setzero_ps(); }
  static inline float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

#include "quant/legacy_dot_impl.h"

}  // namespace

// 4 x 2 micro-tiles (8 accumulators) keep the 16 ymm registers mostly free of spills.
const LegacyKernelSet& legacy_kernels_avx2() {
  static const LegacyKernelSet k = LegacySet<T, 4, 2>::make();
  return k;
}

}  // namespace oscar::quant
