// AVX2 loops for the roofline probes (compiled with -mavx2 -mfma).
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/roofline.h"

namespace oscar::kernels {

double sum_bytes_avx2(const float* p, size_t n, bool prefetch) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // As far ahead as the streaming kernels, so the probe streams at least as well as they can.
    if (prefetch) prefetch_lines(p + i + kStreamPrefetchBytes / sizeof(float), 32 * sizeof(float));
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float out[8];
  _mm256_storeu_ps(out, s);
  double t = 0;
  for (float v : out) t += v;
  return t;
}

double fma_chains_avx2(long iters) {
  // 12 independent chains cover the FMA latency x throughput of current cores.
  __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  __m256 a[12];
  for (auto& v : a) v = _mm256_set1_ps(1.0f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], m, c);
  }
  __m256 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

}  // namespace oscar::kernels
