#include "kernels/ops.h"

#include <cmath>

#include "kernels/fast_math.h"

namespace oscar::kernels {

OSCAR_CLONES double sum_squares(const float* x, int n) {
  // Eight partial sums, so the loop vectorises: one chain of n dependent
  // double adds (4 cycles each) made the norms the largest serial part of a
  // decode step.
  double part[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += (double)x[i + j] * x[i + j];
  double ss = 0;
  for (; i < n; ++i) ss += (double)x[i] * x[i];
  for (double p : part) ss += p;
  return ss;
}

OSCAR_CLONES void rms_norm(const float* x, const float* w, float* y, int n, float eps) {
  const double ss = sum_squares(x, n);
  const float scale = (float)(1.0 / std::sqrt(ss / n + eps));
  for (int i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope(float* head, int rope_dim, int pos, float base, bool neox) {
  const int half = rope_dim / 2;
  for (int i = 0; i < half; ++i) {
    // theta computed in double: positions up to 128K need the precision.
    const double theta = (double)pos * std::pow((double)base, -2.0 * i / rope_dim);
    const float c = (float)std::cos(theta), s = (float)std::sin(theta);
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + half : 2 * i + 1;
    const float x0 = head[a], x1 = head[b];
    head[a] = x0 * c - x1 * s;
    head[b] = x0 * s + x1 * c;
  }
}

void rope_table(int rope_dim, int pos, float base, float* cos_sin) {
  const int half = rope_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double theta = (double)pos * std::pow((double)base, -2.0 * i / rope_dim);
    cos_sin[i] = (float)std::cos(theta);
    cos_sin[half + i] = (float)std::sin(theta);
  }
}

void rope_apply(float* head, int rope_dim, const float* cos_sin, bool neox) {
  const int half = rope_dim / 2;
  for (int i = 0; i < half; ++i) {
    const float c = cos_sin[i], s = cos_sin[half + i];
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + half : 2 * i + 1;
    const float x0 = head[a], x1 = head[b];
    head[a] = x0 * c - x1 * s;
    head[b] = x0 * s + x1 * c;
  }
}

OSCAR_CLONES_WIDE void swiglu(const float* gate, const float* up, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = silu_approx(gate[i]) * up[i];
}

void add_inplace(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

void softmax(float* x, int n) {
  float mx = -INFINITY;
  for (int i = 0; i < n; ++i) mx = std::fmax(mx, x[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = (float)(1.0 / sum);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

// Attention calls these per key row, compiled for AVX2 beside the portable
// build (OSCAR_CLONES, kernels/fast_math.h). (An avx512f clone measured slower:
// 110 vs 147 t/s pp512 on qwen3-0.6b, 2 threads, same run — these rows are
// too short for 16-lane vectors.)

OSCAR_CLONES float dot_f32(const float* a, const float* b, int n) {
  float s[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float t = 0;
  for (; i < n; ++i) t += a[i] * b[i];
  for (float v : s) t += v;
  return t;
}

OSCAR_CLONES void axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace oscar::kernels
