#include "server/kv_report.h"

namespace oscar::server {

double f16_equivalent_bytes(const kv::KvCache::Usage& u) {
  // bits_per_value averages over every cached K and V value, so
  // bytes * 8 / bits_per_value counts them.
  if (u.bits_per_value <= 0) return 0;
  return (double)u.bytes * 8.0 / u.bits_per_value * 2.0;
}

nlohmann::json kv_usage_json(const kv::KvCache::Usage& u) {
  return {{"bytes_used", u.bytes},
          {"bytes_f16_equivalent", (long long)(f16_equivalent_bytes(u) + 0.5)},
          {"bits_per_value", u.bits_per_value},
          {"sink_cells", u.sink_cells},
          {"main_cells", u.main_cells},
          {"recent_cells", u.recent_cells},
          {"ring_cells", u.ring_cells}};
}

nlohmann::json kv_props_json(const kv::KvCache& cache, int n_layer, const std::string& rotations,
                             const kv::KvCache::Usage& total, size_t bytes_allocated) {
  const auto& cfg = cache.config();
  // The main tier's rate: the first global layer with its own store (the
  // same layer the start-up log line describes).
  double bits_k = 0, bits_v = 0;
  bool tiered = false;
  int sliding = 0;
  for (int l = 0; l < n_layer; ++l) {
    if (!cache.has_own_store(l)) continue;
    if (cache.window(l) > 0) {
      ++sliding;
      continue;
    }
    if (bits_k > 0) continue;
    const kv::RowCodec& k = cache.k_store(l).main_codec();
    const kv::RowCodec& v = cache.v_store(l).main_codec();
    bits_k = 8.0 * (double)k.row_bytes() / k.dim();
    bits_v = 8.0 * (double)v.row_bytes() / v.dim();
    tiered = cache.k_store(l).tiered() || cache.v_store(l).tiered();
  }
  nlohmann::json j = kv_usage_json(total);
  j["type_k"] = kv::cache_type_name(cfg.type_k);
  j["type_v"] = kv::cache_type_name(cfg.type_v);
  j["bits_per_value_k"] = bits_k;
  j["bits_per_value_v"] = bits_v;
  j["sink"] = tiered ? cfg.hp_sink : 0;
  j["recent"] = tiered ? cfg.hp_recent : 0;
  j["rotations"] = rotations;
  j["sliding_window_layers"] = sliding;
  j["n_seq"] = cfg.n_seq;
  j["n_ctx_seq"] = cfg.n_ctx_seq;
  j["bytes_allocated"] = bytes_allocated;
  return j;
}

}  // namespace oscar::server
