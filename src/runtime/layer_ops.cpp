#include "runtime/layer_ops.h"

#include <cmath>

#include "kernels/fast_math.h"
#include "kernels/ops.h"

namespace oscar::runtime {

OSCAR_CLONES_WIDE void geglu(const float* gate, const float* up, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = kernels::gelu_tanh_approx(gate[i]) * up[i];
}

void rms_norm_plain(const float* x, float* y, int n, float eps) {
  const double ss = kernels::sum_squares(x, n);
  const float inv = (float)(1.0 / std::sqrt(ss / n + eps));
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv;
}

OSCAR_CLONES_WIDE void softcap(float* x, size_t n, float cap) {
  const float inv = 1.0f / cap;
  for (size_t i = 0; i < n; ++i) x[i] = cap * kernels::tanh_approx(x[i] * inv);
}

void scale(float* x, size_t n, float s) {
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

void rope_table_ext(int rope_dim, int pos, float base, float freq_scale, const float* factors, float* cos_sin) {
  const int half = rope_dim / 2;
  for (int i = 0; i < half; ++i) {
    double theta = (double)pos * freq_scale * std::pow((double)base, -2.0 * i / rope_dim);
    if (factors) theta /= factors[i];
    cos_sin[i] = (float)std::cos(theta);
    cos_sin[half + i] = (float)std::sin(theta);
  }
}

}  // namespace oscar::runtime
