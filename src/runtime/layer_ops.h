// Per-row operations the transformer block needs beyond kernels/ops.h:
// the Gemma variants (GeGLU with tanh GELU, weightless RMSNorm, logit
// soft-capping) and a RoPE table with linear scaling and per-pair frequency
// factors. Like kernels/ops, these are a small share of the time and are
// their own reference.
#pragma once

#include <cstddef>

namespace oscar::runtime {

// out[i] = gelu_tanh(gate[i]) * up[i]  (out may alias gate), gelu with the
// tanh approximation (PyTorch's gelu(approximate="tanh"))
void geglu(const float* gate, const float* up, float* out, size_t n);

// y = x / rms(x) over n values, no weight (y may alias x).
void rms_norm_plain(const float* x, float* y, int n, float eps);

// x[i] = cap * tanh(x[i] / cap)
void softcap(float* x, size_t n, float cap);

// x[i] *= s
void scale(float* x, size_t n, float s);

// cos_sin gets rope_dim values (rope_dim/2 cosines, then rope_dim/2 sines)
// of the angles pos * freq_scale * base^(-2i/rope_dim) / factors[i]
// (factors may be null: all 1), computed in double.
void rope_table_ext(int rope_dim, int pos, float base, float freq_scale, const float* factors, float* cos_sin);

}  // namespace oscar::runtime
