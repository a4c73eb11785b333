#include "server/host_prompt_cache.h"

#include <algorithm>

#include "core/error.h"
#include "kv/seq_snapshot.h"
#include "kv/store_shape.h"
#include "server/prefix_reuse.h"

namespace oscar::server {

namespace {
// Whether `longer` starts with all of `prefix`.
bool starts_with(std::span<const int32_t> longer, std::span<const int32_t> prefix) {
  return longer.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), longer.begin());
}
}  // namespace

std::string host_cache_description(int64_t limit_bytes) {
  if (limit_bytes == 0) return "prompt cache in host memory: off (--cache-ram 0)";
  if (limit_bytes < 0) return "prompt cache in host memory: no size limit (--cache-ram -1)";
  return "prompt cache in host memory: up to " + std::to_string(limit_bytes >> 20) + " MiB (--cache-ram)";
}

bool HostPromptCache::save(const kv::KvCache& cache, int seq, std::span<const int32_t> tokens) {
  if (!enabled() || tokens.empty()) return false;
  if (cache.n_pos(seq) != (int)tokens.size()) return false;  // never expected; not worth failing a request for
  for (auto& e : entries_)
    if (starts_with(e->tokens, tokens)) {  // already kept, whole or as a prefix of a longer entry
      e->last_used = ++clock_;
      return false;
    }
  const int n = (int)tokens.size();
  auto entry = std::make_shared<Entry>();
  entry->splits = kv::sequence_splits(cache, seq, n);
  // The size first: a sequence larger than the whole budget is not copied at all.
  const std::vector<kv::StoreShape> shapes = kv::store_shapes(cache);
  size_t bytes = (tokens.size() + entry->splits.size()) * sizeof(int32_t);
  for (size_t i = 0; i < shapes.size(); ++i) bytes += (size_t)kv::store_rows_bytes(shapes[i], n, entry->splits[i]);
  if (stats_.limit_bytes > 0 && bytes > (size_t)stats_.limit_bytes) return false;
  entry->tokens.assign(tokens.begin(), tokens.end());
  kv::export_rows(cache, seq, n, entry->splits, entry->rows);
  entry->last_used = ++clock_;
  // Entries this one extends are covered by it (its state truncated there).
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (starts_with(tokens, (*it)->tokens)) {
      stats_.bytes -= (*it)->bytes();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  stats_.bytes += entry->bytes();
  entries_.push_back(std::move(entry));
  ++stats_.saved;
  if (stats_.limit_bytes > 0) evict_to(stats_.limit_bytes);
  stats_.entries = entries_.size();
  return true;
}

void HostPromptCache::evict_to(int64_t limit) {
  while (stats_.bytes > (size_t)limit && !entries_.empty()) {
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    stats_.bytes -= (*lru)->bytes();
    entries_.erase(lru);
    ++stats_.evicted;
  }
}

HostPromptCache::Match HostPromptCache::find(std::span<const int32_t> prompt, size_t better_than) const {
  Match best;
  best.keep = better_than;
  for (const auto& e : entries_) {
    const size_t n = reusable_prefix(e->tokens, prompt);
    if (n > best.keep || (best.entry && n == best.keep && e->last_used > best.entry->last_used)) {
      best.entry = e;
      best.keep = n;
    }
  }
  if (!best.entry) best.keep = 0;
  return best;
}

size_t HostPromptCache::load(kv::KvCache& cache, int seq, const Match& match) {
  require(match.entry != nullptr, "host prompt cache: nothing to load");
  const Entry& e = *match.entry;
  kv::import_sequence(cache, seq, (int)e.tokens.size(), e.splits, e.rows);
  ++stats_.hits;
  for (auto& kept : entries_)
    if (kept.get() == &e) kept->last_used = ++clock_;  // still here: now the most recent
  return (size_t)cache.truncate(seq, (int)match.keep);
}

}  // namespace oscar::server
