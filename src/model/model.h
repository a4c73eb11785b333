// A loaded model: its configuration and its weights, used in place from the
// memory-mapped GGUF (small vectors such as norms are converted to f32 at
// load). Immutable after load, so any number of sessions may share it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "gguf/gguf_file.h"
#include "kernels/matmul.h"
#include "model/model_config.h"
#include "quant/quant.h"

namespace oscar::model {

struct LayerWeights {
  std::vector<float> attn_norm;       // (n_embd)
  std::vector<float> q_norm, k_norm;  // (head_dim), when qk_norm (k_norm only with own KV)
  std::vector<float> bq, bk, bv;      // (n_head*hd), (n_head_kv*hd) x2, when qkv_bias
  kernels::WeightMatrix wq;           // (n_head*hd, n_embd)
  kernels::WeightMatrix wk, wv;       // (n_head_kv*hd, n_embd); absent for shared-KV layers, wv for v_from_k
  kernels::WeightMatrix wo;           // (n_embd, n_head*hd)
  std::vector<float> post_attn_norm;  // (n_embd), when post_norms
  std::vector<float> ffn_norm;        // (n_embd)
  kernels::WeightMatrix ffn_gate, ffn_up;  // (n_ff of the layer, n_embd)
  kernels::WeightMatrix ffn_down;          // (n_embd, n_ff of the layer)
  std::vector<float> post_ffn_norm;   // (n_embd), when post_norms
  std::vector<float> rope_freqs;      // (rope_dim/2), when rope_freq_factors
  float out_scale = 1.0f;             // layer_output_scale (Gemma 4), 1 when absent
  // Gemma 4 per-layer embedding block, when n_embd_per_layer > 0.
  kernels::WeightMatrix ple_gate;     // (n_embd_per_layer, n_embd)   blk.N.inp_gate
  kernels::WeightMatrix ple_proj;     // (n_embd, n_embd_per_layer)   blk.N.proj
  std::vector<float> ple_post_norm;   // (n_embd)                      blk.N.post_norm
  // OSCAR rotations (head_dim x head_dim, row-major W: x' = W x), empty when
  // the file has none for this layer.
  std::vector<float> k_rot, v_rot;
};

struct ModelWeights {
  kernels::WeightMatrix tok_embd;  // (n_vocab, n_embd)
  std::vector<float> output_norm;  // (n_embd)
  kernels::WeightMatrix output;    // (n_vocab, n_embd); == tok_embd when tied
  // Gemma 4 per-layer embeddings, when n_embd_per_layer > 0 (P below).
  kernels::WeightMatrix ple_tok_embd;    // (n_vocab, n_layer * P)   per_layer_token_embd
  kernels::WeightMatrix ple_model_proj;  // (n_layer * P, n_embd)    per_layer_model_proj
  std::vector<float> ple_proj_norm;      // (P)                      per_layer_proj_norm
  std::vector<LayerWeights> layers;
};

class Model {
 public:
  // Loads and validates `path`: unknown architecture, missing or mis-shaped
  // tensors and keys, and unsupported tensor types get an Error naming them.
  // The weights are read into memory unless `how` asks for a mapping
  // (core/mapped_file.h says why loading is the default).
  static std::unique_ptr<Model> load(const std::string& path, const quant::QuantTable& table,
                                     const Logger& log,
                                     FileResidence how = FileResidence::kLoaded);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::GgufFile& file() const { return file_; }
  const quant::QuantTable& quant_table() const { return *table_; }
  // oscar-server's sleep: the weights' memory goes back to the system (no
  // forward pass may run until restore_weights()), then comes back, read
  // again from the file and repacked as at load, at the same addresses, so
  // every view of them stays valid. restore_weights throws Error when the
  // file has changed on disk.
  void release_weights();
  void restore_weights();

 private:
  explicit Model(gguf::GgufFile file) : file_(std::move(file)) {}
  gguf::GgufFile file_;
  const quant::QuantTable* table_ = nullptr;
  ModelConfig config_;
  ModelWeights weights_;
  friend class ModelLoader;
};

}  // namespace oscar::model
