#include "attention/tile_kernels.h"

#include <algorithm>
#include <cmath>

namespace oscar::attention::detail {

namespace {

void gemm_reference(const float* a, size_t sa, size_t sk, int m, int kk, const float* b, size_t ldb, int nv, float* c,
                    size_t ldc, bool accumulate, const uint8_t*, size_t) {
  const int lanes = kTileVectorLanes * nv;
  for (int r = 0; r < m; ++r)
    for (int l = 0; l < lanes; ++l) {
      float sum = accumulate ? c[(size_t)r * ldc + l] : 0.0f;
      for (int k = 0; k < kk; ++k) sum += a[(size_t)r * sa + (size_t)k * sk] * b[(size_t)k * ldb + l];
      c[(size_t)r * ldc + l] = sum;
    }
}

void softmax_reference(float* s, int n, int nv, float* m, float* l, float* acc, int d) {
  const int lanes = kTileVectorLanes * nv;
  for (int x = 0; x < lanes; ++x) {
    float mx = m[x];
    for (int j = 0; j < n; ++j) mx = std::max(mx, s[(size_t)j * lanes + x]);
    const float corr = m[x] == -INFINITY ? 0.0f : std::exp(m[x] - mx);
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      float& v = s[(size_t)j * lanes + x];
      v = v == -INFINITY ? 0.0f : std::exp(v - mx);
      sum += v;
    }
    l[x] = l[x] * corr + sum;
    for (int i = 0; i < d; ++i) acc[(size_t)i * lanes + x] *= corr;
    m[x] = mx;
  }
}

}  // namespace

const TileKernels& reference_tile_kernels() {
  static const TileKernels k{gemm_reference, softmax_reference};
  return k;
}

}  // namespace oscar::attention::detail
