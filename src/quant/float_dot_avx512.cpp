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
  static inline F set1(float x) { return _mm512_set1_ps(x); }
  static inline void store_f32(float* p, F v) { _mm512_storeu_ps(p, v); }
  static inline F add(F a, F b) { return _mm512_add_ps(a, b); }
  // 16 x 16 transpose: pairs of rows interleaved at 32, 64, 128 and 256 bits.
  static inline void transpose(F* r) {
    F t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8)
      for (int j = 0; j < 4; ++j) {
        t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
        t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xDD);
      }
    for (int j = 0; j < 8; ++j) {
      r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
      r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
    }
  }
};

#include "quant/float_dot_impl.h"
#include "quant/float_panel_impl.h"

// 4 x 4 micro-tiles: 16 accumulators + 4 activations + 1 weight of 32 zmm.
template <FloatKind K>
void dot(int64_t n, const void* w, size_t ws, int nr, const void* a, size_t as, int nc, float* out,
         size_t os) {
  FloatTile<V, K>::template dot<4, 4>(n, w, ws, nr, a, as, nc, out, os);
}

// 32 rows x 8 columns: 16 accumulators + 2 weight vectors + 1 broadcast.
// 32 x 12, 48 x 8 and 64 x 6 (24 accumulators) measured no faster.
constexpr int kPanelCols = 8;
template <FloatKind K>
void panel(int64_t kc, const void* w, size_t ws, int nr, const float* xp, size_t gs, int64_t nc,
           float* y, size_t ys, bool acc) {
  FloatPanel<V, K, 2, kPanelCols>::gemm(kc, w, ws, nr, xp, gs, nc, y, ys, acc);
}

}  // namespace

const FloatKernelSet& float_kernels_avx512() {
  static const FloatKernelSet k = {{dot<kF32>, dot<kF16>, dot<kBF16>},
                                   {panel<kF32>, panel<kF16>, panel<kBF16>},
                                   kPanelCols};
  return k;
}

}  // namespace oscar::quant
