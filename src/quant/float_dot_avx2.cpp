// F32 / F16 / BF16 dot tiles for AVX2 + FMA + F16C (8 floats per vector).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "quant/blocks_legacy.h"

namespace oscar::quant {
namespace {

struct V {
  using F = __m256;
  static constexpr int W = 8;
  static inline F zero() { return _mm256_setzero_ps(); }
  static inline F load_f32(const float* p) { return _mm256_loadu_ps(p); }
  static inline F load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static inline F load_bf16(const uint16_t* p) {
    // bf16 is the top half of an f32: widen to 32 bits and shift into place.
    const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  }
  static inline F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static inline float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static inline float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
};

#include "quant/float_dot_impl.h"

// 4 x 3 micro-tiles: 12 accumulators + 3 activations + 1 weight = 16 ymm.
template <FloatKind K>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc, float* out,
         size_t os) {
  FloatTile<V, K>::template dot<4, 3>(n, w, ws, nr, a, as, nc, out, os);
}

}  // namespace

const FloatKernelSet& float_kernels_avx2() {
  static const FloatKernelSet k = {{dot<kF32>, dot<kF16>, dot<kBF16>}};
  return k;
}

}  // namespace oscar::quant
