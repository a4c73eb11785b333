// Attention of a batch of query tokens over their sequences' cached positions
// plus the batch's own earlier tokens (causal). Cached rows are read as
// stored; the batch's K and V are used at full precision, as the design
// requires ("tokens of the batch attend to each other at full precision").
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model_config.h"

namespace oscar::attention {

struct AttentionKernels;  // attention_kernels.h

struct BatchView {
  int n_tokens = 0;
  const int32_t* seq = nullptr;  // (n_tokens)
  const int32_t* pos = nullptr;  // (n_tokens)
  const float* q = nullptr;      // (n_tokens, n_head * head_dim), post-RoPE
  const float* k = nullptr;      // (n_tokens, n_head_kv * head_dim), post-RoPE
  const float* v = nullptr;      // (n_tokens, n_head_kv * head_dim)
  const int* n_cached = nullptr; // per token: cached positions of its sequence before the batch
};

// The first position a query at `pos` sees: sliding-window layers see the
// last `sliding_window` positions including their own (keys in
// (pos - window, pos]), other layers everything.
inline int window_start(const model::LayerConfig& layer, int pos) {
  return layer.sliding_window > 0 ? std::max(0, pos - layer.sliding_window + 1) : 0;
}

// Both paths scale q.k by layer.kq_scale() and read the cache of the layer
// `layer_index` (for a shared-KV layer, the store of the layer it shares).

// Reference path (LLAMA_KV_FUSED_FA=0): decodes every cached row to f32,
// materialises the scores and applies a plain softmax.
// out: (n_tokens, n_head * head_dim)
void attend_reference(const model::LayerConfig& layer, int layer_index, const kv::KvCache& cache,
                      const BatchView& batch, float* out, ThreadPool& pool);

// Fused path: reads each tier in place (q2_0 scores from the 2-bit codes),
// online softmax, one pass per KV head and token (or tile of a prompt's
// consecutive tokens) shared by all their query heads, and long contexts
// split across threads and merged (flash-decoding).
//
// prompt_tiles: tiles of several tokens take the heads-in-lanes kernels
// (prompt_tile.h) where the CPU has them; off, the per-row kernels serve
// them too (kept to compare the two in tests and benchmarks).
struct FusedOptions {
  bool prompt_tiles = true;
};
// kernels: the table of the CPU to run on (attention_kernels.h).
void attend_fused(const model::LayerConfig& layer, int layer_index, const kv::KvCache& cache,
                  const BatchView& batch, float* out, ThreadPool& pool, const AttentionKernels& kernels,
                  const FusedOptions& options = {});

}  // namespace oscar::attention
