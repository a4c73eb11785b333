#include "server/cache_tiers.h"

#include <algorithm>

#include "kv/cache_type.h"

namespace oscar::server {

CacheTierReport check_cache_tiers(const kv::KvCacheConfig& cfg, int n_ctx, int n_parallel) {
  CacheTierReport r;
  r.quantized = kv::is_quantized(cfg.type_k) || kv::is_quantized(cfg.type_v);
  r.n_ctx_slot = cfg.n_ctx_seq;
  if (!r.quantized) return r;
  r.sink = cfg.hp_sink;
  r.recent = cfg.hp_recent;
  r.quantized_positions = std::max(0, r.n_ctx_slot - r.sink - r.recent);
  const std::string numbers = "f16 sink " + std::to_string(r.sink) + " + recent " + std::to_string(r.recent) +
                              " positions vs " + std::to_string(r.n_ctx_slot) + " positions per slot (-c " +
                              std::to_string(n_ctx) + " / -np " + std::to_string(n_parallel) + ")";
  const std::string advice = "lower --kv-hp-sink/--kv-hp-recent (LLAMA_KV_HP_SINK/LLAMA_KV_HP_RECENT), "
                             "raise -c, or lower -np";
  const std::string type = std::string(kv::cache_type_name(kv::is_quantized(cfg.type_k) ? cfg.type_k : cfg.type_v));
  if (r.quantized_positions == 0) {
    r.warning = "the " + type + " tier is unreachable: " + numbers + ", so nothing is ever stored at " + type +
                " and the cache costs f16 memory; " + advice;
  } else if (r.quantized_positions < kTinyQuantizedShare * r.n_ctx_slot) {
    r.warning = "the " + type + " tier is tiny: " + numbers + " leave at most " +
                std::to_string(r.quantized_positions) + " positions of a slot to " + type + "; " + advice;
  }
  return r;
}

nlohmann::ordered_json to_json(const CacheTierReport& r) {
  nlohmann::ordered_json j = {{"quantized", r.quantized},
                              {"sink", r.sink},
                              {"recent", r.recent},
                              {"n_ctx_slot", r.n_ctx_slot},
                              {"max_quantized_positions", r.quantized_positions}};
  if (!r.warning.empty()) j["warning"] = r.warning;
  return j;
}

}  // namespace oscar::server
