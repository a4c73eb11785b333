// AVX-512 loops for the roofline probes (compiled with -mavx512f).
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/roofline.h"

namespace oscar::kernels {

double sum_bytes_avx512(const float* p, size_t n, bool prefetch) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // As far ahead as the streaming kernels, so the probe streams at least as well as they can.
    if (prefetch) prefetch_lines(p + i + kStreamPrefetchBytes / sizeof(float), 64 * sizeof(float));
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
  float out[16];
  _mm512_storeu_ps(out, s);
  double t = 0;
  for (float v : out) t += v;
  return t;
}

double fma_chains_avx512(long iters) {
  // 12 independent chains cover the FMA latency x throughput of current cores.
  __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  __m512 a[12];
  for (auto& v : a) v = _mm512_set1_ps(1.0f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  }
  __m512 s = a[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

}  // namespace oscar::kernels
