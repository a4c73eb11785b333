// Hyper-parameters of a loaded model. Architecture differences are data:
// each layer carries what it needs (head counts, head dim, Q/K norm, biases,
// RoPE, sliding window, KV sharing), so one transformer block function
// serves every architecture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oscar::model {

enum class RopeStyle {
  Normal,  // rotates adjacent pairs (x[2i], x[2i+1]): llama as converted to GGUF
  NeoX,    // rotates halves (x[i], x[i + d/2]): qwen2, qwen3, gemma
};

enum class FfnActivation {
  SiLU,      // SwiGLU: silu(gate) * up (llama, qwen)
  GeluTanh,  // GeGLU: gelu_tanh(gate) * up (gemma's gelu_pytorch_tanh)
};

struct LayerConfig {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;       // per head, for Q, K and V
  bool qk_norm = false;   // per-head RMSNorm on Q and K (qwen3, gemma)
  bool qkv_bias = false;  // biases on the Q, K, V projections (qwen2)
  float rope_base = 10000.0f;
  int rope_dim = 0;       // leading dims of each head that RoPE rotates
  RopeStyle rope_style = RopeStyle::Normal;
  // Linear RoPE scaling: positions are multiplied by this (gemma3's global
  // layers use 1/8 in the 4B/12B/27B models).
  float rope_freq_scale = 1.0f;
  // Pair i's frequency is divided by rope_freqs.weight[i] (Gemma 4's
  // proportional RoPE on global layers; 1e30 leaves a pair unrotated).
  bool rope_freq_factors = false;
  // Keys a query at position p sees: (p - sliding_window, p]; 0 = all.
  int sliding_window = 0;
  // Softmax scale of q.k; 0 means 1/sqrt(head_dim).
  float attn_scale = 0.0f;
  // Gemma 4: V gets an RMSNorm without weight before it is stored.
  bool v_norm = false;
  // Gemma 4 "k_eq_v" layers have no V projection: V is the raw K projection.
  bool v_from_k = false;
  // Layer whose KV cache this layer attends to (Gemma 4 shared-KV layers
  // reuse an earlier layer's); -1: its own.
  int kv_layer = -1;
  int n_ff = 0;           // FFN width of this layer; 0: ModelConfig::n_ff
  FfnActivation ffn_act = FfnActivation::SiLU;
  bool post_norms = false;  // RMSNorm on the attention and FFN outputs before the residual add (gemma)

  bool has_own_kv(int self) const { return kv_layer < 0 || kv_layer == self; }
  float kq_scale() const;
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
  float embd_scale = 1.0f;   // token embeddings are multiplied by this (gemma: sqrt(n_embd))
  float final_logit_softcap = 0.0f;  // logits = c * tanh(logits / c) when > 0
  int n_embd_per_layer = 0;  // Gemma 4 per-layer embedding width (0: none)
  std::vector<LayerConfig> layers;

  int max_head_dim() const;
  int max_kv_width() const;  // max over layers of n_head_kv * head_dim
  int max_q_width() const;   // max over layers of n_head * head_dim
  int max_ff() const;        // max over layers of their FFN width
  int max_window() const;    // largest sliding window (0: none)
  int ff_of(int layer) const { return layers[(size_t)layer].n_ff > 0 ? layers[(size_t)layer].n_ff : n_ff; }
};

}  // namespace oscar::model
