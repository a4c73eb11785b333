// The KV cache as JSON for GET /props ("kv") and GET /slots (each slot's
// "kv"): types, bits per value, the f16 tiers, the rotation mode, and bytes
// used against what the same cached values would take in f16. The web UI's
// KV panel shows these numbers as they are.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kv/kv_cache.h"

namespace oscar::server {

// Bytes the values counted by u would take stored as f16 (2 bytes each).
double f16_equivalent_bytes(const kv::KvCache::Usage& u);

// One slot's (or all slots' summed) usage.
nlohmann::json kv_usage_json(const kv::KvCache::Usage& u);

// The cache's fixed layout (n_layer: the model's layer count) plus the usage
// summed over slots and the bytes allocated.
nlohmann::json kv_props_json(const kv::KvCache& cache, int n_layer, const std::string& rotations,
                             const kv::KvCache::Usage& total, size_t bytes_allocated);

}  // namespace oscar::server
