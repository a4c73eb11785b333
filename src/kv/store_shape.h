// One TierStore (the K or V of a layer with its own KV) as a saved sequence
// sees it (seq_snapshot.h), and the arithmetic of its saved rows. Plain data
// and arithmetic only, so a file parser can check a saved sequence's sizes
// without a cache (server/slot_file.h, and its fuzz target).
#pragma once

#include <cstdint>

#include "kv/cache_type.h"

namespace oscar::kv {

// Two caches whose stores have equal shapes hold a sequence in the same bytes.
struct StoreShape {
  int layer = 0;
  bool is_v = false;
  CacheType main_type = CacheType::F16;
  int n_head_kv = 0, head_dim = 0;
  int main_row_bytes = 0;    // one row in the main type (q2_0: depends on its group size)
  int sink = 0, recent = 0;  // f16 tiers in effect (0 for float types and rings)
  int ring = 0;              // sliding-window ring slots (0: a global layer)
  bool operator==(const StoreShape&) const = default;
};

// Whether `split` (TierStore::split) is one a store of this shape can have
// with n positions stored: tiered, sink <= split <= n with at most `recent`
// positions after it (exactly sink while n <= sink); ring, the kept window
// [split, n) fits the ring; otherwise 0.
bool split_valid(const StoreShape& s, int n, int split);
// Bytes of one store's saved rows (all heads) for n positions and a valid split.
uint64_t store_rows_bytes(const StoreShape& s, int n, int split);
// The first position whose rows are saved (ring: the oldest kept; else 0).
inline int first_row(const StoreShape& s, int split) { return s.ring > 0 ? split : 0; }

}  // namespace oscar::kv
