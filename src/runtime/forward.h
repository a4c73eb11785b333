// One forward pass of a batch of tokens (any mix of sequences) through a
// model, reading and extending the KV cache. Owns the scratch buffers so
// repeated calls allocate nothing once the largest batch has been seen.
// The work is split along the block's seams: forward.cpp (embedding, layer
// loop, FFN, output), forward_attention.cpp (the attention block),
// forward_ple.cpp (Gemma 4 per-layer embeddings).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attention/attention_kernels.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/rotation_plan.h"
#include "runtime/step_profile.h"

namespace oscar::runtime {

struct BatchToken {
  int32_t token = 0;
  int32_t seq = 0;
  int32_t pos = 0;      // must continue the sequence: first = kv.n_pos(seq), then +1
  bool logits = false;  // return this token's logits
};

// What the attention of one layer read and produced for a batch, handed to
// LayerObserver::on_attention before the batch's K/V enter the cache, so the
// cache holds exactly the rows the kernels read (read_k/read_v with the
// layer's index; a shared-KV layer reads its source layer's stores).
struct AttentionView {
  int n = 0;
  const int32_t* seq = nullptr;   // (n)
  const int32_t* pos = nullptr;   // (n)
  const int* n_cached = nullptr;  // (n) positions of the token's sequence cached before the batch
  // As the kernels read them, after the OSCAR rotations: q (n, n_head*hd),
  // the batch's own k and v (n, n_head_kv*hd), used at full precision.
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* out = nullptr;  // (n, n_head*hd) attention output, V rotation undone, before wo
  const kv::KvCache* cache = nullptr;
};

// Sees every layer's queries, keys and values of a batch after RoPE and
// before any OSCAR rotation: what calibration measures. Rows are per token,
// (n, n_head*hd) for q and (n, n_head_kv*hd) for k and v. A layer that
// shares another layer's KV (Gemma 4) is shown that layer's k and v.
// on_attention (optional) follows once the layer's attention is done.
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  virtual void on_qkv(int layer, const model::LayerConfig& l, int n, const int32_t* seq, const int32_t* pos,
                      const float* q, const float* k, const float* v) = 0;
  virtual void on_attention(int /*layer*/, const model::LayerConfig& /*l*/, const AttentionView& /*a*/) {}
};

struct ForwardOptions {
  // Rotations to apply (OSCAR); nullptr: the model's own rotation tensors.
  const RotationPlan* rotations = nullptr;
  // false: the reference attention path (LLAMA_KV_FUSED_FA=0).
  bool fused_attention = true;
  // Called once per layer per eval when set (not owned).
  LayerObserver* observer = nullptr;
  // Time per piece of every eval is added to it when set (not owned).
  StepProfile* profile = nullptr;
};

class Forward {
 public:
  Forward(const model::Model& model, kv::KvCache& cache, ThreadPool& pool, ForwardOptions opts = {});

  // Evaluates `batch` and commits its positions to the cache. Returns the
  // logits of the tokens marked `logits`, in batch order: (n_marked, n_vocab).
  // Throws Error (cache untouched) for a bad token id, sequence or position.
  const std::vector<float>& eval(const std::vector<BatchToken>& batch);

  int n_vocab() const { return model_.config().n_vocab; }
  int n_embd() const { return model_.config().n_embd; }
  // Token i of the last eval's batch (any token, marked for logits or not):
  // its final hidden state after the output norm, the vector the output
  // projection reads and embeddings pool (n_embd values into out). Valid
  // until the next eval.
  void output_hidden(int i, float* out) const;

 private:
  void validate(const std::vector<BatchToken>& batch, std::vector<int>& n_cached) const;
  void reserve_pages(const std::vector<BatchToken>& batch);
  void layer(int il, int n);
  void attention_block(int il, int n);  // x += attention(norm(x)) (+ post-norm)
  void ffn_block(int il, int n);        // x += ffn(norm(x)) (+ post-norm)
  void ple_inputs(const std::vector<BatchToken>& batch, int n);  // fills ple_in_
  void ple_block(int il, int n);        // x += per-layer embedding term
  void store_kv(int il, int n, const float* k, const float* v);
  // The per-head steps between the Q/K/V projections and attention (biases,
  // Q/K norms, RoPE; Gemma 4's V from K and V norm; with `hadamard`, the
  // data-free rotations) for heads [u0, u1) of the batch, counted token by
  // token, query heads before KV heads.
  void prepare_heads(int il, const float* rope, bool hadamard, size_t u0, size_t u1);
  // fn(i) for every token i < n: on the pool for a prompt's many tokens
  // (each one's norms and residual adds are independent), on this
  // thread for a few (decode), where waking the pool costs more.
  void for_tokens(int n, const std::function<void(int)>& fn);
  // x' = W x for `count` head vectors of d values in place (W: d x d, one of
  // the plan's matrices).
  void rotate_heads(const float* w, float* x, int count, int d);
  // The RoPE tables of the batch's n positions for layer l's setting (n rows
  // of rope_dim values, see rope_table_ext): made by the first layer of an
  // eval that asks, then shared by every layer with the same setting. Per
  // layer they cost ~64 pow/cos/sin per token, serial in a decode step.
  const float* rope_tables(const model::LayerConfig& l, const float* factors, int n);

  const model::Model& model_;
  kv::KvCache& cache_;
  ThreadPool& pool_;
  ForwardOptions opts_;
  ProfileClock clock_;
  RotationPlan own_rotations_;  // used when opts.rotations is null
  const RotationPlan* rot_;
  kernels::MatmulScratch mm_;
  const quant::QuantTraits* f32_;  // dense rotations go through the f32 matmul kernels
  // The attention kernels for the CPU the model's QuantTable was built for.
  attention::AttentionKernels attn_kernels_;
  std::vector<float> rot_tmp_;
  // Activations, row-major per token.
  std::vector<float> x_;     // (n, n_embd) residual stream
  std::vector<float> xn_;    // (n, n_embd) normed
  std::vector<float> q_, k_, v_;  // (n, q_width) / (n, kv_width)
  std::vector<float> att_;   // (n, q_width)
  std::vector<float> ff_a_, ff_b_;  // (n, max n_ff)
  std::vector<float> ple_in_;   // (n, n_layer * n_embd_per_layer) per-layer inputs
  std::vector<float> ple_a_;    // (n, n_embd_per_layer)
  std::vector<float> logits_;
  // Layers whose KV later layers share: their batch K/V (rotated, as stored)
  // are kept for the sharers and stored only after the last of them, so a
  // sliding ring is not overwritten under a sharer that still reads it.
  std::vector<bool> shared_src_;                  // per layer
  std::vector<std::vector<float>> kept_k_, kept_v_;          // per layer: (n, kv_width)
  std::vector<std::vector<float>> kept_k_raw_, kept_v_raw_;  // same, before rotation (observer)
  std::vector<int32_t> seq_, pos_;
  std::vector<int> n_cached_;
  struct RopeTables {
    int rope_dim;
    float base, freq_scale;
    const float* factors;
    std::vector<float> cos_sin;  // (n, rope_dim)
  };
  std::vector<RopeTables> rope_;  // the first n_rope_ are this eval's
  size_t n_rope_ = 0;
};

}  // namespace oscar::runtime
