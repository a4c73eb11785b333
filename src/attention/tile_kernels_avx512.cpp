// The prompt-tile kernels (tile_kernels.h) for AVX-512 (F/BW/VL/DQ, as the
// file is compiled): 16 lanes (heads)
// per vector, 1 or 2 vectors per tile.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "attention/row_kernels_simd.h"
#include "attention/row_kernels_vec16.h"
#include "attention/tile_kernels.h"

#include <algorithm>

#include "core/prefetch.h"

namespace oscar::attention::detail {
namespace {

// R rows of c at once: R * NV accumulators, each b vector loaded once per k
// for R FMAs and each A value broadcast once for NV. 8 x 2 and 12 x 1 keep
// 16 and 12 chains (enough to hide the FMA latency at two per cycle) and
// leave registers for the b vectors and broadcasts.
template <int NV>
constexpr int rows_per_pass() {
  return NV == 2 ? 8 : 12;
}

template <int NV, int R>
inline void gemm_rows(const float* a, size_t sa, size_t sk, int kk, const float* b, size_t ldb, float* c, size_t ldc,
                      bool accumulate) {
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(c + (size_t)r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int k = 0; k < kk; ++k, a += sk, b += ldb) {
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[(size_t)r * sa]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + (size_t)r * ldc + 16 * v, acc[r][v]);
}

// The rows left after whole passes, R - 1 at most, as a compile-time count.
template <int NV, int R>
void gemm_tail(int left, const float* a, size_t sa, size_t sk, int kk, const float* b, size_t ldb, float* c,
               size_t ldc, bool accumulate) {
  if constexpr (R > 1) {
    if (left == R - 1) return gemm_rows<NV, R - 1>(a, sa, sk, kk, b, ldb, c, ldc, accumulate);
    gemm_tail<NV, R - 1>(left, a, sa, sk, kk, b, ldb, c, ldc, accumulate);
  }
}

template <int NV>
void gemm_nv(const float* a, size_t sa, size_t sk, int m, int kk, const float* b, size_t ldb, float* c, size_t ldc,
             bool accumulate, const uint8_t* ahead, size_t ahead_bytes) {
  constexpr int R = rows_per_pass<NV>();
  // The lines to ask for, spread over the passes.
  const size_t per_pass = (ahead_bytes / (size_t)std::max(1, m / R) + 63) & ~(size_t)63;
  int r = 0;
  for (; r + R <= m; r += R, ahead += per_pass) {
    if (ahead_bytes > 0) prefetch_lines(ahead, std::min(per_pass, ahead_bytes)), ahead_bytes -= std::min(per_pass, ahead_bytes);
    gemm_rows<NV, R>(a + (size_t)r * sa, sa, sk, kk, b, ldb, c + (size_t)r * ldc, ldc, accumulate);
  }
  if (ahead_bytes > 0) prefetch_lines(ahead, ahead_bytes);
  if (r < m) gemm_tail<NV, R>(m - r, a + (size_t)r * sa, sa, sk, kk, b, ldb, c + (size_t)r * ldc, ldc, accumulate);
}

void gemm(const float* a, size_t sa, size_t sk, int m, int kk, const float* b, size_t ldb, int nv, float* c,
          size_t ldc, bool accumulate, const uint8_t* ahead, size_t ahead_bytes) {
  if (nv == 1) gemm_nv<1>(a, sa, sk, m, kk, b, ldb, c, ldc, accumulate, ahead, ahead_bytes);
  else gemm_nv<2>(a, sa, sk, m, kk, b, ldb, c, ldc, accumulate, ahead, ahead_bytes);
}

void softmax(float* s, int n, int nv, float* m, float* l, float* acc, int d) {
  const int lanes = 16 * nv;
  for (int v = 0; v < nv; ++v) {
    const __m512 m_old = _mm512_loadu_ps(m + 16 * v);
    __m512 mx = m_old;
    for (int j = 0; j < n; ++j) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + (size_t)j * lanes + 16 * v));
    // exp_nonpositive gives 0 for -inf and for NaN (-inf - -inf): a lane
    // that has seen nothing visible keeps l = 0 and acc = 0.
    const __m512 corr = exp_nonpositive<Vec16>(_mm512_sub_ps(m_old, mx));
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < n; ++j) {
      float* sj = s + (size_t)j * lanes + 16 * v;
      const __m512 p = exp_nonpositive<Vec16>(_mm512_sub_ps(_mm512_loadu_ps(sj), mx));
      _mm512_storeu_ps(sj, p);
      sum = _mm512_add_ps(sum, p);
    }
    _mm512_storeu_ps(l + 16 * v, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * v), corr, sum));
    _mm512_storeu_ps(m + 16 * v, mx);
    // Deep in a prompt the running maxima seldom move: then every corr is 1
    // and the accumulators (d vectors) stay as they are.
    if (_mm512_cmp_ps_mask(mx, m_old, _CMP_NEQ_UQ) == 0) continue;
    for (int i = 0; i < d; ++i) {
      float* ai = acc + (size_t)i * lanes + 16 * v;
      _mm512_storeu_ps(ai, _mm512_mul_ps(_mm512_loadu_ps(ai), corr));
    }
  }
}

}  // namespace

const TileKernels& avx512_tile_kernels() {
  static const TileKernels k{gemm, softmax};
  return k;
}

}  // namespace oscar::attention::detail
