// Elementwise and per-row operations of the transformer block. These are a
// small share of the time next to the matmuls; they are written to
// auto-vectorise and are their own reference.
#pragma once

#include <cstddef>
#include <cstdint>


namespace oscar::kernels {

// y = x / rms(x) * w over n values (y may alias x).
void rms_norm(const float* x, const float* w, float* y, int n, float eps);
// Sum of x[i]^2 in double.
double sum_squares(const float* x, int n);

// Rotary position embedding of one head vector in place: the first `rope_dim`
// values are rotated by angles pos * base^(-2i/rope_dim), in pairs chosen by
// `neox` (halves of the head) or adjacent pairs (llama's "normal" mode).
void rope(float* head, int rope_dim, int pos, float base, bool neox);
// The same in two steps, so every head of a token shares one table:
// cos_sin gets rope_dim values (rope_dim/2 cosines, then rope_dim/2 sines).
void rope_table(int rope_dim, int pos, float base, float* cos_sin);
void rope_apply(float* head, int rope_dim, const float* cos_sin, bool neox);

// out[i] = silu(gate[i]) * up[i]
void swiglu(const float* gate, const float* up, float* out, size_t n);

// x[i] += y[i]
void add_inplace(float* x, const float* y, size_t n);

// In-place softmax over n values; returns nothing, max-subtracted for stability.
void softmax(float* x, int n);

float dot_f32(const float* a, const float* b, int n);
// y += a * x
void axpy(float a, const float* x, float* y, int n);

}  // namespace oscar::kernels
