#include "kv/seq_snapshot.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace oscar::kv {

namespace {

// Calls f(store, shape) for every store with rows of its own, in the order
// of store_shapes(): by layer, K before V.
template <class Cache, class F>
void for_each_store(Cache& cache, F&& f) {
  for (int l = 0; l < (int)cache.n_layers(); ++l) {
    if (!cache.has_own_store(l)) continue;
    f(l, false);
    f(l, true);
  }
}

StoreShape shape_of(const TierStore& s, int layer, bool is_v) {
  StoreShape sh;
  sh.layer = layer;
  sh.is_v = is_v;
  sh.main_type = s.main_codec().type();
  sh.n_head_kv = s.n_head_kv();
  sh.head_dim = s.main_codec().dim();
  sh.main_row_bytes = (int)s.main_codec().row_bytes();
  sh.sink = s.sink();
  sh.recent = s.recent();
  sh.ring = s.ring();
  return sh;
}

}  // namespace

std::vector<StoreShape> store_shapes(const KvCache& cache) {
  std::vector<StoreShape> out;
  for_each_store(cache, [&](int l, bool v) { out.push_back(shape_of(v ? cache.v_store(l) : cache.k_store(l), l, v)); });
  return out;
}

std::vector<int32_t> sequence_splits(const KvCache& cache, int seq, int n) {
  require(n >= 0 && n <= cache.n_pos(seq), "KV snapshot: more positions asked for than the sequence holds");
  std::vector<int32_t> splits;
  for_each_store(cache, [&](int l, bool v) { splits.push_back((v ? cache.v_store(l) : cache.k_store(l)).split(seq, n)); });
  return splits;
}

void export_rows(const KvCache& cache, int seq, int n, std::span<const int32_t> splits, std::vector<uint8_t>& out) {
  const std::vector<StoreShape> shapes = store_shapes(cache);
  require(n >= 0 && n <= cache.n_pos(seq) && splits.size() == shapes.size(), "KV snapshot: export does not match the cache");
  uint64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) total += store_rows_bytes(shapes[i], n, splits[i]);
  size_t at = out.size();
  out.resize(at + (size_t)total);
  size_t i = 0;
  for_each_store(cache, [&](int l, bool v) {
    const TierStore& s = v ? cache.v_store(l) : cache.k_store(l);
    const int begin = first_row(shapes[i], splits[i]);
    ++i;
    for (int h = 0; h < s.n_head_kv(); ++h)
      for (int p = begin; p < n; ++p) {
        const size_t b = s.stored_row_bytes(seq, p);
        std::memcpy(out.data() + at, s.stored_row(seq, h, p), b);
        at += b;
      }
  });
  require(at == out.size(), "KV snapshot: row bytes do not add up");  // a bug, never the input
}

void import_sequence(KvCache& cache, int seq, int n, std::span<const int32_t> splits,
                     std::span<const uint8_t> rows) {
  const std::vector<StoreShape> shapes = store_shapes(cache);
  require(cache.n_pos(seq) == 0, "KV snapshot: the sequence to restore into is not empty");
  require(n >= 0 && n <= cache.capacity(), "KV snapshot: more positions than a sequence may hold");
  require(cache.pages().pages_held(seq) * cache.pages().page_positions() >= n,
          "KV snapshot: the sequence has no pages for the positions to restore");
  require(splits.size() == shapes.size(), "KV snapshot: store count does not match the cache");
  uint64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    require(split_valid(shapes[i], n, splits[i]),
            [&] { return "KV snapshot: invalid tier split " + std::to_string(splits[i]) + " for store " + std::to_string(i); });
    total += store_rows_bytes(shapes[i], n, splits[i]);
  }
  require(total == rows.size(), "KV snapshot: row bytes do not match the cache's shapes");
  size_t at = 0, i = 0;
  for_each_store(cache, [&](int l, bool v) {
    TierStore& s = v ? cache.v_store_mut(l) : cache.k_store_mut(l);
    s.set_split(seq, splits[i]);
    const int begin = first_row(shapes[i], splits[i]);
    ++i;
    for (int h = 0; h < s.n_head_kv(); ++h)
      for (int p = begin; p < n; ++p) {
        const size_t b = s.stored_row_bytes(seq, p);
        std::memcpy(s.stored_row(seq, h, p), rows.data() + at, b);
        at += b;
      }
  });
  cache.commit(seq, n);
}

}  // namespace oscar::kv
