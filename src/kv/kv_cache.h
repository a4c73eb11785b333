// The KV cache of plain types (f32, f16, bf16, q8_0, q4_0; K and V chosen
// separately). Each sequence owns a fixed slice of n_ctx_seq positions per
// layer, laid out head-major, so attention for one KV head reads contiguous
// rows. A row is one (position, KV head): head_dim values in the cache type.
//
// The tiered OSCAR q2_0 cache plugs in behind the same store/read interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "model/model_config.h"
#include "quant/quant.h"

namespace oscar::kv {

struct KvCacheConfig {
  TensorType type_k = TensorType::F16;
  TensorType type_v = TensorType::F16;
  int n_seq = 1;       // independent sequences (server slots)
  int n_ctx_seq = 0;   // positions per sequence
};

// Parses a --cache-type value (f32 f16 bf16 q8_0 q4_0); throws Error otherwise.
TensorType parse_cache_type(const std::string& name);

class KvCache {
 public:
  KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg,
          const quant::QuantTable& table);

  const KvCacheConfig& config() const { return cfg_; }
  int n_seq() const { return cfg_.n_seq; }
  int capacity() const { return cfg_.n_ctx_seq; }
  // Number of positions stored for `seq` (positions 0 .. n-1).
  int n_pos(int seq) const;

  // Stores K and V of one position: k, v are (n_head_kv, head_dim) f32.
  // Positions must be appended in order (pos == n_pos(seq)).
  void store(int seq, int layer, int pos, const float* k, const float* v);
  // Marks positions stored in every layer as committed: n_pos(seq) = pos + 1.
  void commit(int seq, int n_pos);

  // Decodes the K (or V) row of (seq, layer, head, pos) into out (head_dim f32).
  void read_k(int seq, int layer, int head, int pos, float* out) const;
  void read_v(int seq, int layer, int head, int pos, float* out) const;

  // Sequence operations.
  void clear(int seq);                      // forget everything
  void truncate(int seq, int n_keep);       // keep positions [0, n_keep)

  size_t bytes_allocated() const;
  // Bytes per cached value (K and V averaged), e.g. 2.0 for f16.
  double bytes_per_value() const;

 private:
  struct LayerStore {
    int n_head_kv, head_dim;
    size_t k_row, v_row;  // bytes per row
    std::unique_ptr<uint8_t[]> k, v;  // (n_seq, n_head_kv, n_ctx_seq) rows
  };
  const uint8_t* k_ptr(int seq, int layer, int head, int pos) const;
  const uint8_t* v_ptr(int seq, int layer, int head, int pos) const;
  void check_seq(int seq) const;

  KvCacheConfig cfg_;
  const quant::QuantTraits* qk_;
  const quant::QuantTraits* qv_;
  std::vector<LayerStore> layers_;
  std::vector<int> n_pos_;
};

}  // namespace oscar::kv
