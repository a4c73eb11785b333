// F32 / F16 / BF16 dot tiles for AVX2 + FMA + F16C (8 floats per vector).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/fp16.h"
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
  static inline F set1(float x) { return _mm256_set1_ps(x); }
  static inline void store_f32(float* p, F v) { _mm256_storeu_ps(p, v); }
  static inline F add(F a, F b) { return _mm256_add_ps(a, b); }
  // 8 x 8 transpose: pairs of rows interleaved at 32, 64 and 128 bits.
  static inline void transpose(F* r) {
    F t[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
      t[j] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x20);
      t[j + 4] = _mm256_permute2f128_ps(r[j], r[j + 4], 0x31);
    }
    for (int j = 0; j < 8; ++j) r[j] = t[j];
  }
};

#include "quant/float_dot_impl.h"
#include "quant/float_panel_impl.h"

// 4 x 3 micro-tiles: 12 accumulators + 3 activations + 1 weight = 16 ymm.
template <FloatKind K>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc, float* out,
         size_t os) {
  FloatTile<V, K>::template dot<4, 3>(n, w, ws, nr, a, as, nc, out, os);
}

// 16 rows x 6 columns: 12 accumulators + 2 weight vectors + 1 broadcast.
constexpr int kPanelCols = 6;
template <FloatKind K>
void panel(int64_t kc, const void* w, size_t ws, int nr, const float* xp, size_t gs, int64_t nc,
           float* y, size_t ys, bool acc) {
  FloatPanel<V, K, 2, kPanelCols>::gemm(kc, w, ws, nr, xp, gs, nc, y, ys, acc);
}

}  // namespace

void quantize_f16_f16c(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = f32_to_fp16(src[i]);
}

void dequantize_f16_f16c(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, V::load_f16(x + i));
  for (; i < n; ++i) dst[i] = fp16_to_f32(x[i]);
}

const FloatKernelSet& float_kernels_avx2() {
  static const FloatKernelSet k = {{dot<kF32>, dot<kF16>, dot<kBF16>},
                                   {panel<kF32>, panel<kF16>, panel<kBF16>},
                                   kPanelCols};
  return k;
}

}  // namespace oscar::quant
