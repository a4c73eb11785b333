// Gemma 4 per-layer embeddings (E2B/E4B). Facts (HF modeling_gemma4
// get_per_layer_inputs / project_per_layer_inputs / decoder layer, and
// llama.cpp's gemma4 graph):
//   inputs (per token, per layer l, width P = n_embd_per_layer):
//     tok_l  = per_layer_token_embd[token][l] * sqrt(P)
//     proj_l = RMSNorm_w(per_layer_model_proj . e / sqrt(n_embd))[l]   (e: the scaled embedding)
//     in_l   = (proj_l + tok_l) / sqrt(2)
//   after layer l's FFN residual:
//     x += RMSNorm_w(proj_l . (gelu_tanh(inp_gate_l . x) * in_l))
#include <cmath>

#include "kernels/ops.h"
#include "runtime/forward.h"
#include "runtime/layer_ops.h"

namespace oscar::runtime {

void Forward::ple_inputs(const std::vector<BatchToken>& batch, int n) {
  const model::ModelConfig& c = model_.config();
  const model::ModelWeights& w = model_.weights();
  const size_t E = (size_t)c.n_embd, P = (size_t)c.n_embd_per_layer, LP = P * (size_t)c.n_layer;
  ple_in_.resize((size_t)n * LP);
  ple_a_.resize((size_t)n * std::max(P, LP));
  // Projection of the (scaled) embeddings: (n, L*P).
  kernels::matmul(w.ple_model_proj, x_.data(), E, n, ple_in_.data(), LP, pool_, mm_);
  const float proj_scale = 1.0f / std::sqrt((float)c.n_embd), tok_scale = std::sqrt((float)P);
  const float mix = 1.0f / std::sqrt(2.0f);
  for (int i = 0; i < n; ++i) {
    float* in = &ple_in_[(size_t)i * LP];
    float* tok = &ple_a_[(size_t)i * LP];
    kernels::dequantize_row(w.ple_tok_embd, batch[(size_t)i].token, tok);
    for (size_t l = 0; l < (size_t)c.n_layer; ++l) {
      float* s = in + l * P;
      scale(s, P, proj_scale);
      kernels::rms_norm(s, w.ple_proj_norm.data(), s, (int)P, c.rms_eps);
      for (size_t j = 0; j < P; ++j) s[j] = (s[j] + tok[l * P + j] * tok_scale) * mix;
    }
  }
}

void Forward::ple_block(int il, int n) {
  const model::ModelConfig& c = model_.config();
  const model::LayerWeights& lw = model_.weights().layers[(size_t)il];
  const size_t E = (size_t)c.n_embd, P = (size_t)c.n_embd_per_layer, LP = P * (size_t)c.n_layer;
  kernels::matmul(lw.ple_gate, x_.data(), E, n, ple_a_.data(), P, pool_, mm_);
  for (int i = 0; i < n; ++i) {
    float* g = &ple_a_[(size_t)i * P];
    const float* in = &ple_in_[(size_t)i * LP + (size_t)il * P];
    geglu(g, in, g, P);
  }
  kernels::matmul(lw.ple_proj, ple_a_.data(), P, n, xn_.data(), E, pool_, mm_);
  for (int i = 0; i < n; ++i)
    kernels::rms_norm(&xn_[i * E], lw.ple_post_norm.data(), &xn_[i * E], c.n_embd, c.rms_eps);
  kernels::add_inplace(x_.data(), xn_.data(), (size_t)n * E);
}

}  // namespace oscar::runtime
