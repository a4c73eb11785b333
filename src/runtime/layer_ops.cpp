#include "runtime/layer_ops.h"

#include <cmath>

namespace oscar::runtime {

float gelu_tanh(float x) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

void geglu(const float* gate, const float* up, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
}

void rms_norm_plain(const float* x, float* y, int n, float eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += (double)x[i] * x[i];
  const float inv = (float)(1.0 / std::sqrt(ss / n + eps));
  for (int i = 0; i < n; ++i) y[i] = x[i] * inv;
}

void softcap(float* x, size_t n, float cap) {
  for (size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
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
