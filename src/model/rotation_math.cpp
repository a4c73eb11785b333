#include "model/rotation_math.h"

#include <cmath>

#include "kernels/fast_math.h"

namespace oscar::model {

double orthogonality_error(const float* w, int d) {
  double worst = 0;
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      double s = 0;
      for (int k = 0; k < d; ++k) s += (double)w[i * d + k] * w[j * d + k];
      worst = std::fmax(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

bool is_power_of_two(int d) { return d > 0 && (d & (d - 1)) == 0; }

std::vector<float> hadamard_matrix(int d) {
  std::vector<float> h((size_t)d * d);
  const float v = 1.0f / std::sqrt((float)d);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) h[(size_t)i * d + j] = (__builtin_popcount((unsigned)(i & j)) & 1) ? -v : v;
  return h;
}

void rotate(const float* w, const float* x, float* y, int d) {
  for (int i = 0; i < d; ++i) {
    const float* row = w + (size_t)i * d;
    float s = 0;
    for (int k = 0; k < d; ++k) s += row[k] * x[k];
    y[i] = s;
  }
}

void rotate_back(const float* w, const float* x, float* y, int d) {
  for (int i = 0; i < d; ++i) y[i] = 0;
  for (int k = 0; k < d; ++k) {
    const float* row = w + (size_t)k * d;
    const float xk = x[k];
    for (int i = 0; i < d; ++i) y[i] += row[i] * xk;
  }
}

namespace {

// One butterfly stage of the transform: pairs len apart in blocks of 2*len.
// Inlined with a constant len (the short stages, 1 to 8) the compiler turns
// it into shuffles instead of scalar code.
__attribute__((always_inline)) inline void butterflies(float* x, int d, int len) {
  for (int b = 0; b < d; b += 2 * len)
    for (int j = b; j < b + len; ++j) {
      const float a = x[j], c = x[j + len];
      x[j] = a + c;
      x[j + len] = a - c;
    }
}

}  // namespace

// A q2_0 decode step applies it to every query, key and value head and to
// every output head (48 heads a layer in qwen3-0.6b): with the stride-1..8
// stages unrolled and wide vectors it takes ~140 cycles per d128 head
// against ~460 for the plain loop (docs/decisions/0016-rotations-calibrated-hadamard-fallback.md).
OSCAR_CLONES_WIDE void hadamard_transform(float* x, int d) {
  // Stages of len 1, 2, 4, ...: the Sylvester order of hadamard_matrix.
  int len = 1;
  if (d >= 16) {
    butterflies(x, d, 1);
    butterflies(x, d, 2);
    butterflies(x, d, 4);
    butterflies(x, d, 8);
    len = 16;
  }
  for (; len < d; len *= 2) butterflies(x, d, len);
  const float s = 1.0f / std::sqrt((float)d);
  for (int i = 0; i < d; ++i) x[i] *= s;
}

}  // namespace oscar::model
