// Legacy-format dot tiles for AVX-512 F/BW/VL/DQ: two 32-value blocks per
// 512-bit vector. Compiled a second time with VNNI by
// legacy_dot_avx512vnni.cpp (OSCAR_LEGACY_VNNI), which only changes the
// u8 x s8 -> int32 step.
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "quant/blocks_legacy.h"

#if defined(OSCAR_LEGACY_VNNI)
#define OSCAR_LEGACY_SET legacy_kernels_avx512vnni
#else
#define OSCAR_LEGACY_SET legacy_kernels_avx512
#endif

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

template <size_t WB>
struct Pair {
  // Nibbles of blocks at qs and qs + WB -> lanes [lo0 hi0 lo1 hi1] (value order).
  static inline __m512i nibbles(const uint8_t* qs) {
    const __m256i x = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(qs + WB),
                                          reinterpret_cast<const __m128i*>(qs));
    const __m512i z = _mm512_permutexvar_epi64(_mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0),
                                                _mm512_zextsi256_si512(x));
    return _mm512_and_si512(_mm512_srlv_epi64(z, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)),
                            _mm512_set1_epi8(0x0F));
  }
  // Fifth bits of both blocks as one byte mask (bit j <-> byte j).
  static inline __mmask64 bits(const uint8_t* qh) {
    return (__mmask64)load_u32(qh) | ((__mmask64)load_u32(qh + WB) << 32);
  }
  // Unsigned 5-bit codes 0..31 of both blocks: the fifth bits (4 bytes at qh)
  // over the nibbles that follow them.
  static inline __m512i codes5(const uint8_t* qh) {
    const __m512i nib = nibbles(qh + 4);
    return _mm512_mask_add_epi8(nib, bits(qh), nib, _mm512_set1_epi8(0x10));
  }
  static inline __m512i bytes32(const uint8_t* qs) {
    return _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + WB)), 1);
  }
};

struct T {
  static constexpr int G = 2;
  using I = __m512i;
  using F = __m512;

  // The codes of the formats that have no bias<K>(): Q4_1 / Q5_1 (unsigned)
  // and, without VNNI, Q8_0 (signed).
  template <LegacyKind K>
  static inline I load_w(const uint8_t* p) {
    if constexpr (K == kQ4_1) {
      return Pair<20>::nibbles(p + 4);
    } else if constexpr (K == kQ5_1) {
      return Pair<24>::codes5(p + 4);
    } else {
      return Pair<34>::bytes32(p + 2);
    }
  }
  // The signed codes plus bias<K>() as unsigned bytes (see legacy_dot_impl.h).
  // Q8_0's bytes + 128 need vpdpbusd: vpmaddubsw's int16 pair sums would
  // saturate at 255 * 127 * 2.
  template <LegacyKind K>
  static constexpr int bias() {
#if defined(OSCAR_LEGACY_VNNI)
    if (K == kQ8_0) return 128;
#endif
    return K == kQ4_0 ? 8 : K == kQ5_0 ? 16 : 0;
  }
  template <LegacyKind K>
  static inline I load_w_biased(const uint8_t* p) {
    if constexpr (K == kQ4_0) {
      return Pair<18>::nibbles(p + 2);
    } else if constexpr (K == kQ5_0) {
      return Pair<22>::codes5(p + 2);
    } else {
      return _mm512_xor_si512(Pair<34>::bytes32(p + 2), _mm512_set1_epi8((char)0x80));
    }
  }
  // -B * (sum of each lane's 4 activations); |a| <= 127 keeps B * a pairs in int16.
  static inline I neg_bias_sum(I a, int b) {
    return _mm512_sub_epi32(_mm512_setzero_si512(), dot_us(_mm512_set1_epi8((char)b), a));
  }
  static inline I load_a(const uint8_t* qs, size_t stride) {
    return _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + stride)), 1);
  }
  // f16 at p and p + stride -> 8 lanes each (two broadcasts, the second
  // masked onto the upper half).
  static inline F scale(const uint8_t* p, size_t stride) {
    const __m256i h = _mm256_mask_set1_epi16(_mm256_set1_epi16((short)load_u16(p)), 0xFF00,
                                             (short)load_u16(p + stride));
    return _mm512_cvtph_ps(h);
  }
  static inline I abs8(I x) { return _mm512_abs_epi8(x); }
  // AVX-512 has no vpsignb: negate a where q < 0 (where q == 0, |q| = 0
  // already zeroes the product). The mask depends on q only, once per row.
  using S = __mmask64;
  static inline S sign_of(I q) { return _mm512_movepi8_mask(q); }
  static inline I apply_sign(I a, S neg) {
    return _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
  }
  static inline I dot_us(I u, I s) {
#if defined(OSCAR_LEGACY_VNNI)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
#endif
  }
  static inline I dot_us_acc(I acc, I u, I s) {
#if defined(OSCAR_LEGACY_VNNI)
    return _mm512_dpbusd_epi32(acc, u, s);
#else
    return _mm512_add_epi32(acc, dot_us(u, s));
#endif
  }
  static inline F cvt(I x) { return _mm512_cvtepi32_ps(x); }
  static inline F set1(float f) { return _mm512_set1_ps(f); }
  static inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static inline F zero() { return _mm512_setzero_ps(); }
  static inline float hsum(F v) { return _mm512_reduce_add_ps(v); }
};

#include "quant/legacy_dot_impl.h"

}  // namespace

// 4 x 4 micro-tiles: 16 accumulators plus 4 activation blocks and their
// scales fit the 32 zmm registers.
const LegacyKernelSet& OSCAR_LEGACY_SET() {
  static const LegacyKernelSet k = LegacySet<T, 4, 4>::make();
  return k;
}

}  // namespace oscar::quant
