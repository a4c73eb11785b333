#include "kv/kv_cache.h"

#include "core/error.h"

namespace oscar::kv {

TensorType parse_cache_type(const std::string& name) {
  static const TensorType kAllowed[] = {TensorType::F32, TensorType::F16, TensorType::BF16,
                                        TensorType::Q8_0, TensorType::Q4_0};
  auto t = parse_tensor_type(name);
  if (t)
    for (TensorType a : kAllowed)
      if (*t == a) return a;
  throw Error("unsupported KV cache type '" + name + "' (supported: f32 f16 bf16 q8_0 q4_0)");
}

KvCache::KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg,
                 const quant::QuantTable& table)
    : cfg_(cfg), qk_(&table.get(cfg.type_k, "KV cache K")), qv_(&table.get(cfg.type_v, "KV cache V")) {
  require(cfg.n_seq >= 1, "KV cache: need at least one sequence");
  require(cfg.n_ctx_seq >= 1, "KV cache: context per sequence must be positive");
  n_pos_.assign((size_t)cfg.n_seq, 0);
  layers_.resize(model.layers.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = model.layers[i];
    LayerStore& s = layers_[i];
    s.n_head_kv = l.n_head_kv;
    s.head_dim = l.head_dim;
    auto kr = row_bytes(cfg.type_k, (uint64_t)l.head_dim), vr = row_bytes(cfg.type_v, (uint64_t)l.head_dim);
    require(kr && vr, "KV cache: head dim " + std::to_string(l.head_dim) +
                          " is not a multiple of the block size of cache type " +
                          type_name(kr ? cfg.type_v : cfg.type_k));
    s.k_row = *kr;
    s.v_row = *vr;
    const size_t rows = (size_t)cfg.n_seq * (size_t)l.n_head_kv * (size_t)cfg.n_ctx_seq;
    // Left uninitialised on purpose: pages are committed only when written.
    s.k.reset(new uint8_t[rows * s.k_row]);
    s.v.reset(new uint8_t[rows * s.v_row]);
  }
}

void KvCache::check_seq(int seq) const {
  require(seq >= 0 && seq < cfg_.n_seq, "KV cache: sequence id " + std::to_string(seq) +
                                            " out of range [0, " + std::to_string(cfg_.n_seq) + ")");
}

int KvCache::n_pos(int seq) const {
  check_seq(seq);
  return n_pos_[(size_t)seq];
}

const uint8_t* KvCache::k_ptr(int seq, int layer, int head, int pos) const {
  const LayerStore& s = layers_[(size_t)layer];
  const size_t row = ((size_t)seq * s.n_head_kv + (size_t)head) * cfg_.n_ctx_seq + (size_t)pos;
  return s.k.get() + row * s.k_row;
}

const uint8_t* KvCache::v_ptr(int seq, int layer, int head, int pos) const {
  const LayerStore& s = layers_[(size_t)layer];
  const size_t row = ((size_t)seq * s.n_head_kv + (size_t)head) * cfg_.n_ctx_seq + (size_t)pos;
  return s.v.get() + row * s.v_row;
}

void KvCache::store(int seq, int layer, int pos, const float* k, const float* v) {
  check_seq(seq);
  require(pos >= 0 && pos < cfg_.n_ctx_seq,
          "KV cache: position " + std::to_string(pos) + " exceeds the context of " +
              std::to_string(cfg_.n_ctx_seq) + " per sequence");
  const LayerStore& s = layers_[(size_t)layer];
  for (int h = 0; h < s.n_head_kv; ++h) {
    qk_->quantize(k + (size_t)h * s.head_dim, const_cast<uint8_t*>(k_ptr(seq, layer, h, pos)), s.head_dim);
    qv_->quantize(v + (size_t)h * s.head_dim, const_cast<uint8_t*>(v_ptr(seq, layer, h, pos)), s.head_dim);
  }
}

void KvCache::commit(int seq, int n_pos) {
  check_seq(seq);
  require(n_pos >= 0 && n_pos <= cfg_.n_ctx_seq, "KV cache: commit beyond capacity");
  n_pos_[(size_t)seq] = n_pos;
}

void KvCache::read_k(int seq, int layer, int head, int pos, float* out) const {
  qk_->dequantize(k_ptr(seq, layer, head, pos), out, layers_[(size_t)layer].head_dim);
}

void KvCache::read_v(int seq, int layer, int head, int pos, float* out) const {
  qv_->dequantize(v_ptr(seq, layer, head, pos), out, layers_[(size_t)layer].head_dim);
}

void KvCache::clear(int seq) { truncate(seq, 0); }

void KvCache::truncate(int seq, int n_keep) {
  check_seq(seq);
  require(n_keep >= 0, "KV cache: negative truncation point");
  if (n_keep < n_pos_[(size_t)seq]) n_pos_[(size_t)seq] = n_keep;
}

size_t KvCache::bytes_allocated() const {
  size_t total = 0;
  for (const auto& s : layers_)
    total += (size_t)cfg_.n_seq * s.n_head_kv * cfg_.n_ctx_seq * (s.k_row + s.v_row);
  return total;
}

double KvCache::bytes_per_value() const {
  const auto& s = layers_.at(0);
  return (double)(s.k_row + s.v_row) / (2.0 * s.head_dim);
}

}  // namespace oscar::kv
