// One sequence of a KvCache as bytes, for saving a server slot to disk and
// restoring it (server/slot_file.h holds the file around these bytes).
//
// The rows are copied AS STORED: a q2_0 main tier stays q2_0 blocks, the f16
// sink and recent tiers stay f16, sliding-window rings keep only the
// positions they still hold. Restoring them into a cache of the same shape
// (store_shapes() equal) gives back exactly the state that was saved,
// including where each store's tiers split, so decoding continues
// bit-identically.
//
// Layout of the rows: for each store in store_shapes() order, for each KV
// head, the rows of positions [first_row(store), n) back to back, each in
// the bytes of the tier that holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/cache_type.h"
#include "kv/kv_cache.h"
#include "kv/store_shape.h"

namespace oscar::kv {

// The shapes of the cache's stores: by layer (those with KV of their own), K before V.
std::vector<StoreShape> store_shapes(const KvCache& cache);

// Where each store's tiers split for positions [0, n) of seq (store_shapes() order).
std::vector<int32_t> sequence_splits(const KvCache& cache, int seq, int n);
// The rows of positions [0, n) of seq, appended to `out` (splits from sequence_splits()).
void export_rows(const KvCache& cache, int seq, int n, std::span<const int32_t> splits, std::vector<uint8_t>& out);

// Writes a saved sequence of n positions into seq, which must be empty and
// already hold pages for n positions (KvCache::reserve), then commits it.
// Throws Error (touching nothing) when the splits or the byte count do not
// match this cache's shapes.
void import_sequence(KvCache& cache, int seq, int n, std::span<const int32_t> splits,
                     std::span<const uint8_t> rows);

}  // namespace oscar::kv
