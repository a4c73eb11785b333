// llama-server's --cache-ram: prompt caches kept in host memory, shared by
// all slots (docs/kv-pool.md, "Prompt cache in host memory").
//
// When a slot's cached conversation is about to be lost (its pages dropped
// for room, or its cache overwritten by a different prompt), the scheduler
// saves it here: the sequence's rows exported AS STORED (kv/seq_snapshot.h:
// q2_0 blocks stay q2_0, the f16 sink and recent tiers stay f16, with each
// store's tier split), keyed by its tokens. A later prompt whose longest
// reusable prefix is in an entry (and longer than any slot's) gets that
// entry imported into its slot and cut back to the prefix: exactly the state
// the original slot would have had, truncated there, as in-place reuse gives.
//
// Entries are bounded by a byte budget and dropped least recently used
// first. Scheduler thread only (no locking): the scheduler copies stats()
// into its published statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace oscar::server {

struct HostCacheStats {
  int64_t limit_bytes = 0;  // < 0: no limit; 0: off
  size_t entries = 0;
  size_t bytes = 0;         // rows + tokens + splits of every entry
  uint64_t saved = 0;       // sequences stored
  uint64_t hits = 0;        // prompts that took their prefix from an entry
  uint64_t evicted = 0;     // entries dropped for the byte limit
};

// The start-up log line for a --cache-ram budget (bytes; < 0 none, 0 off).
std::string host_cache_description(int64_t limit_bytes);

class HostPromptCache {
 public:
  struct Entry {
    std::vector<int32_t> tokens;  // the sequence holds exactly these positions
    std::vector<int32_t> splits;  // kv::sequence_splits() of the stored sequence
    std::vector<uint8_t> rows;    // kv::export_rows()
    uint64_t last_used = 0;
    size_t bytes() const { return rows.size() + (tokens.size() + splits.size()) * sizeof(int32_t); }
  };
  // A prompt's best entry. The entry stays alive while a Match holds it,
  // even if the LRU drops it meanwhile (saving another slot while pages are
  // reserved for the import).
  struct Match {
    std::shared_ptr<const Entry> entry;  // null: no entry shares a prefix long enough
    size_t keep = 0;                     // positions of it the prompt reuses
  };

  // limit_bytes < 0: no limit; 0: the cache is off (saves and finds nothing).
  explicit HostPromptCache(int64_t limit_bytes) { stats_.limit_bytes = limit_bytes; }

  bool enabled() const { return stats_.limit_bytes != 0; }

  // Stores seq's positions, which must be exactly `tokens` (cache.n_pos(seq)
  // == tokens.size()). Nothing is stored when an entry already holds these
  // tokens or more after them (it covers this one), or when the sequence
  // alone exceeds the limit; entries this one covers are replaced. Then the
  // least recently used entries go until the limit holds. Returns whether
  // the sequence was stored.
  bool save(const kv::KvCache& cache, int seq, std::span<const int32_t> tokens);

  // The entry with the longest reusable prefix of `prompt`
  // (prefix_reuse.h), if that is longer than `better_than`; ties go to the
  // most recently used entry.
  Match find(std::span<const int32_t> prompt, size_t better_than) const;

  // Writes the match's entry into empty sequence seq (which must hold pages
  // for all of its positions: KvCache::reserve) and cuts it back to
  // match.keep. Returns the positions kept: match.keep, or fewer when a
  // sliding window's ring no longer holds what that position needs
  // (KvCache::truncate).
  size_t load(kv::KvCache& cache, int seq, const Match& match);

  const HostCacheStats& stats() const { return stats_; }
  // Drops every entry (oscar-server's sleep gives the memory back); not
  // counted as evictions, which are for the byte limit.
  void clear() {
    entries_.clear();
    stats_.entries = 0;
    stats_.bytes = 0;
  }

 private:
  void evict_to(int64_t limit);  // drops least recently used entries until bytes <= limit

  std::list<std::shared_ptr<Entry>> entries_;
  uint64_t clock_ = 0;
  HostCacheStats stats_;
};

}  // namespace oscar::server
