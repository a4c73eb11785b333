// Whether a quantized KV cache's settings leave room for its quantized
// (2-bit) tier. A quantized cache keeps the first `sink` and the last
// `recent` positions of a sequence in f16; only what lies between is
// stored quantized. With sink + recent >= a slot's positions (-c / -np),
// nothing is ever quantized and the cache silently costs f16 memory.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kv/kv_cache.h"

namespace oscar::server {

struct CacheTierReport {
  bool quantized = false;       // K or V uses a quantized type (tiers apply)
  int sink = 0, recent = 0;     // f16 tiers, positions
  int n_ctx_slot = 0;           // positions per slot
  int quantized_positions = 0;  // the most a full slot stores quantized
  std::string warning;          // empty when the quantized tier is usable
};

// The quantized tier is "tiny" below this share of a slot.
inline constexpr double kTinyQuantizedShare = 0.25;

// `n_ctx` and `n_parallel` only name -c and -np in the advice.
CacheTierReport check_cache_tiers(const kv::KvCacheConfig& cfg, int n_ctx, int n_parallel);
nlohmann::ordered_json to_json(const CacheTierReport& r);

}  // namespace oscar::server
