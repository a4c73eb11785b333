#include "kv/kv_cache.h"

#include <cstdio>

#include "core/error.h"

namespace oscar::kv {

KvCache::KvCache(const model::ModelConfig& model, const KvCacheConfig& cfg, const quant::QuantTable& table)
    : cfg_(cfg) {
  require(cfg.n_seq >= 1, "KV cache: need at least one sequence");
  require(cfg.n_ctx_seq >= 1, "KV cache: context per sequence must be positive");
  require(cfg.hp_sink >= 0 && cfg.hp_recent >= 0, "KV cache: tier sizes must not be negative");
  n_pos_.assign((size_t)cfg.n_seq, 0);
  for (const auto& l : model.layers) {
    const RowCodec f16(CacheType::F16, l.head_dim, table, {});
    const RowCodec ck(cfg.type_k, l.head_dim, table, cfg.q2_k), cv(cfg.type_v, l.head_dim, table, cfg.q2_v);
    k_.push_back(std::make_unique<TierStore>(ck, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, cfg.hp_sink, cfg.hp_recent));
    v_.push_back(std::make_unique<TierStore>(cv, f16, cfg.n_seq, l.n_head_kv, cfg.n_ctx_seq, cfg.hp_sink, cfg.hp_recent));
    head_dim_.push_back(l.head_dim);
    n_head_kv_.push_back(l.n_head_kv);
  }
}

void KvCache::check_seq(int seq) const {
  require(seq >= 0 && seq < cfg_.n_seq, "KV cache: sequence id " + std::to_string(seq) + " out of range [0, " +
                                            std::to_string(cfg_.n_seq) + ")");
}

int KvCache::n_pos(int seq) const {
  check_seq(seq);
  return n_pos_[(size_t)seq];
}

void KvCache::store(int seq, int layer, int pos, const float* k, const float* v) {
  check_seq(seq);
  require(pos >= 0 && pos < cfg_.n_ctx_seq, "KV cache: position " + std::to_string(pos) +
                                                " exceeds the context of " + std::to_string(cfg_.n_ctx_seq) +
                                                " per sequence");
  k_[(size_t)layer]->store(seq, pos, k);
  v_[(size_t)layer]->store(seq, pos, v);
}

void KvCache::commit(int seq, int n_pos) {
  check_seq(seq);
  require(n_pos >= 0 && n_pos <= cfg_.n_ctx_seq, "KV cache: commit beyond capacity");
  n_pos_[(size_t)seq] = n_pos;
}

void KvCache::read_k(int seq, int layer, int head, int pos, float* out) const {
  k_[(size_t)layer]->read(seq, head, pos, out);
}
void KvCache::read_v(int seq, int layer, int head, int pos, float* out) const {
  v_[(size_t)layer]->read(seq, head, pos, out);
}

void KvCache::clear(int seq) { truncate(seq, 0); }

void KvCache::truncate(int seq, int n_keep) {
  check_seq(seq);
  require(n_keep >= 0, "KV cache: negative truncation point");
  if (n_keep >= n_pos_[(size_t)seq]) return;
  n_pos_[(size_t)seq] = n_keep;
  for (auto& s : k_) s->truncate(seq, n_keep);
  for (auto& s : v_) s->truncate(seq, n_keep);
}

size_t KvCache::bytes_allocated() const {
  size_t total = 0;
  for (const auto& s : k_) total += s->bytes_allocated();
  for (const auto& s : v_) total += s->bytes_allocated();
  return total;
}

KvCache::Usage KvCache::usage(int seq) const {
  check_seq(seq);
  Usage u;
  const int n = n_pos_[(size_t)seq];
  double values = 0, main_bits = 0;
  int stores = 0;
  for (size_t l = 0; l < k_.size(); ++l) {
    const double d = head_dim_[l], heads = n_head_kv_[l];
    for (const TierStore* s : {k_[l].get(), v_[l].get()}) {
      const auto c = s->counts(seq, n);
      const double row = (double)s->main_codec().row_bytes();
      u.bytes += (size_t)(heads * ((double)c.main * row + (double)(c.sink + c.recent) * d * 2.0));
      values += heads * n * d;
      main_bits += 8.0 * row / d;
      ++stores;
      if (s == k_[l].get()) {
        u.sink_cells += c.sink;
        u.main_cells += c.main;
        u.recent_cells += c.recent;
      }
    }
  }
  u.bits_per_value = values > 0 ? 8.0 * (double)u.bytes / values : 0;
  u.main_bits_per_value = stores > 0 ? main_bits / stores : 0;
  return u;
}

std::string KvCache::describe() const {
  char buf[256];
  const auto& k0 = *k_.at(0);
  const double kbits = 8.0 * (double)k0.main_codec().row_bytes() / k0.main_codec().dim();
  const auto& v0 = *v_.at(0);
  const double vbits = 8.0 * (double)v0.main_codec().row_bytes() / v0.main_codec().dim();
  std::snprintf(buf, sizeof buf,
                "KV cache: K %s (%.2f bits/value), V %s (%.2f bits/value), %d seq x %d positions, "
                "f16 sink %d + recent %d, %.1f MiB allocated",
                cache_type_name(cfg_.type_k), kbits, cache_type_name(cfg_.type_v), vbits, cfg_.n_seq,
                cfg_.n_ctx_seq, k0.tiered() || v0.tiered() ? cfg_.hp_sink : 0,
                k0.tiered() || v0.tiered() ? cfg_.hp_recent : 0, (double)bytes_allocated() / (1 << 20));
  return buf;
}

}  // namespace oscar::kv
