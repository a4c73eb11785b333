#include "kv/store_shape.h"

#include <algorithm>

namespace oscar::kv {

bool split_valid(const StoreShape& s, int n, int split) {
  if (n < 0) return false;
  if (s.ring > 0) return split >= std::max(0, n - s.ring) && split <= n;
  if (s.sink == 0 && s.recent == 0) return split == 0;
  if (n <= s.sink) return split == s.sink;  // TierStore keeps q_end at sink until the sink is full
  if (split < s.sink || split > n) return false;
  // Rows leave the recent window as soon as it is full (TierStore::store).
  return s.recent == 0 ? split == n : n - split <= s.recent;
}

uint64_t store_rows_bytes(const StoreShape& s, int n, int split) {
  const uint64_t f16_row = 2ull * (uint64_t)s.head_dim, main_row = (uint64_t)s.main_row_bytes;
  uint64_t per_head = 0;
  if (s.ring > 0)
    per_head = (uint64_t)(n - split) * main_row;
  else if (s.sink == 0 && s.recent == 0)
    per_head = (uint64_t)n * main_row;
  else if (n <= s.sink)
    per_head = (uint64_t)n * f16_row;
  else
    per_head = (uint64_t)s.sink * f16_row + (uint64_t)(split - s.sink) * main_row + (uint64_t)(n - split) * f16_row;
  return per_head * (uint64_t)s.n_head_kv;
}

}  // namespace oscar::kv
