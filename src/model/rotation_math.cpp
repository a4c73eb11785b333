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

// One butterfly stage of the transform, pairs len apart. The pair distance
// as a constant lets the compiler turn the short stages (1 to 8) into
// shuffles instead of scalar code.
template <int L>
inline void butterflies(float* x, int d) {
  for (int b = 0; b < d; b += 2 * L)
    for (int j = 0; j < L; ++j) {
      const float a = x[b + j], c = x[b + j + L];
      x[b + j] = a + c;
      x[b + j + L] = a - c;
    }
}

}  // namespace

// A q2_0 decode step applies it to every query, key and value head and to
// every output head (48 heads a layer in qwen3-0.6b): with the stride-1..8
// stages unrolled and wide vectors it takes ~140 cycles per d128 head
// against ~460 for the plain loop (bench/RESULTS.md, session 17).
OSCAR_CLONES_WIDE void hadamard_transform(float* x, int d) {
  // Butterflies over blocks of 2*len: the Sylvester order of hadamard_matrix.
  if (d >= 16) {
    butterflies<1>(x, d);
    butterflies<2>(x, d);
    butterflies<4>(x, d);
    butterflies<8>(x, d);
  }
  for (int len = d >= 16 ? 16 : 1; len < d; len *= 2)
    for (int b = 0; b < d; b += 2 * len)
      for (int j = b; j < b + len; ++j) {
        const float a = x[j], c = x[j + len];
        x[j] = a + c;
        x[j + len] = a - c;
      }
  const float s = 1.0f / std::sqrt((float)d);
  for (int i = 0; i < d; ++i) x[i] *= s;
}

}  // namespace oscar::model
