// F32 / F16 / BF16 dot tiles for AVX-512 F/BW/VL/DQ (16 floats per vector).
// GCC 12 warns falsely about the _mm512_undefined_* placeholders inside the
// AVX-512 intrinsics (-Wmaybe-uninitialized, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
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
  using F = __m512;
  static constexpr int W = 16;
  static inline F zero() { return _mm512_setzero_ps(); }
  static inline F load_f32(const float* p) { return _mm512_loadu_ps(p); }
  static inline F load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static inline F load_bf16(const uint16_t* p) {
    const __m512i x =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  }
  static inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static inline float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static inline float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
};

#include "quant/float_dot_impl.h"

// 4 x 4 micro-tiles: 16 accumulators + 4 activations + 1 weight of 32 zmm.
template <FloatKind K>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc, float* out,
         size_t os) {
  FloatTile<V, K>::template dot<4, 4>(n, w, ws, nr, a, as, nc, out, os);
}

}  // namespace

const FloatKernelSet& float_kernels_avx512() {
  static const FloatKernelSet k = {{dot<kF32>, dot<kF16>, dot<kBF16>}};
  return k;
}

}  // namespace oscar::quant
