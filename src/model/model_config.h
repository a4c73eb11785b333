// Hyper-parameters of a loaded model. Architecture differences are data:
// each layer carries what it needs (head counts, head dim, Q/K norm, biases,
// RoPE), so one transformer block function serves every architecture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::model {

enum class RopeStyle {
  Normal,  // rotates adjacent pairs (x[2i], x[2i+1]): llama as converted to GGUF
  NeoX,    // rotates halves (x[i], x[i + d/2]): qwen2, qwen3, gemma
};

struct LayerConfig {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;       // per head, for Q, K and V
  bool qk_norm = false;   // per-head RMSNorm on Q and K (qwen3)
  bool qkv_bias = false;  // biases on the Q, K, V projections (qwen2)
  float rope_base = 10000.0f;
  int rope_dim = 0;       // leading dims of each head that RoPE rotates
  RopeStyle rope_style = RopeStyle::Normal;
};

struct ModelConfig {
  std::string arch;
  std::string name;
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_ff = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-6f;
  bool tied_output = false;  // output projection reuses token_embd
  std::vector<LayerConfig> layers;

  int max_head_dim() const;
  int max_kv_width() const;  // max over layers of n_head_kv * head_dim
  int max_q_width() const;   // max over layers of n_head * head_dim
};

}  // namespace oscar::model
