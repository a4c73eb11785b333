// Scheduler: room in the KV pool. Whether a prompt fits, prefixes shared
// with another slot or brought back from the host-memory cache, idle slots'
// caches dropped (least recently used first) when the pool is short, and
// the context shift of a generation that has no position left.
#include <algorithm>

#include "server/scheduler.h"
#include "server/scheduler_slot.h"

namespace oscar::server {

int Scheduler::idle_room(int seq) const {
  const kv::PageTable& pt = cache_.pages();
  if (pt.fixed()) return pt.pages_for(cfg_.n_ctx_slot);  // a split cache: the slot's own pages
  int room = pt.free_pages() + pt.pages_held(seq);
  for (const auto& o : slots_)
    if (!o->active && o->id != seq) room += pt.pages_held(o->id);
  return room;
}

bool Scheduler::prompt_fits(const Task& t, const Placement& place, int at_least) const {
  const kv::PageTable& pt = cache_.pages();
  const int n = std::max(at_least, (int)std::min(t.prompt.size() + 1, (size_t)cfg_.n_ctx_slot));
  const int pick = place.slot;
  // Pages left listed once idle slots are dropped and the slot cut back; a
  // page shared with a running slot stays.
  std::vector<int> keep((size_t)pt.n_seq(), 0);
  for (const auto& o : slots_) keep[(size_t)o->id] = o->active ? pt.pages_held(o->id) : 0;
  int have = 0;  // of the pages the prompt needs, those it gets without taking one
  if (place.donor >= 0) {
    have = cache_.shareable_pages(place.donor, (int)place.shared);
    int& d = keep[(size_t)place.donor];
    d = std::max(d, have);
  } else {
    const int kept = (int)(t.params.cache_prompt ? place.keep : 0);
    have = pt.pages_for(kept);
    keep[(size_t)pick] = have;
    // Kept pages from the first one it writes on that another slot lists
    // too are copied first (copy-on-write).
    const int listed = have;
    for (int i = std::min(kept, cache_.main_write_start(pick)) / pt.page_positions(); i < listed; ++i)
      have -= pt.shared(pick, i) ? 1 : 0;
  }
  return pt.pages_for(n) - have <= pt.free_after(keep);
}

size_t Scheduler::share_prefix(Slot& s, const Slot& donor, size_t n) {
  cache_.clear(s.id);
  const int got = cache_.share_prefix(s.id, donor.id, (int)n);
  s.cached.assign(donor.cached.begin(), donor.cached.begin() + got);
  if (got == 0) return 0;  // a sliding window's ring no longer holds what the prefix needs
  ++prefixes_shared_;
  log_.info("slot " + std::to_string(s.id) + " shares " + std::to_string(got) + " cached positions of slot " +
            std::to_string(donor.id) + " (" + std::to_string(cache_.shareable_pages(donor.id, got)) +
            " pages listed, the rest copied)");
  return (size_t)got;
}

size_t Scheduler::load_from_host(Slot& s, const HostPromptCache::Match& m) {
  cache_.clear(s.id);
  s.cached.clear();
  if (!reserve_dropping_idle(s.id, (int)m.entry->tokens.size(), s.id)) return 0;
  const size_t got = host_cache_.load(cache_, s.id, m);
  s.cached.assign(m.entry->tokens.begin(), m.entry->tokens.begin() + (long)got);
  log_.info("slot " + std::to_string(s.id) + " takes " + std::to_string(got) + " cached positions from host memory (" +
            std::to_string(m.entry->tokens.size()) + " stored)");
  return got;
}

bool Scheduler::reserve_dropping_idle(int seq, int n, int spare) {
  while (!cache_.reserve(seq, n)) {
    Slot* lru = nullptr;
    for (auto& o : slots_)
      if (!o->active && o->id != spare && cache_.pages().pages_held(o->id) > 0 &&
          (!lru || o->last_used < lru->last_used))
        lru = o.get();
    if (!lru) return false;
    const bool kept = host_cache_.save(cache_, lru->id, lru->cached);
    log_.info("KV pool short: dropping idle slot " + std::to_string(lru->id) + "'s " +
              std::to_string(lru->cached.size()) + " cached tokens" + (kept ? " (kept in host memory)" : ""));
    cache_.clear(lru->id);
    lru->cached.clear();
    ++slots_dropped_;  // published with the stats
  }
  return true;
}

void Scheduler::grow_or_stop_generations() {
  // Each generating slot's next token needs a page at every page boundary;
  // where the pool has none left even after dropping idle slots, that
  // generation ends as if it had reached its context ("length").
  for (auto& s : slots_) {
    if (!s->active || !s->generating) continue;
    const int n = (int)s->cached.size() + 1;
    if (reserve_dropping_idle(s->id, n, s->id)) continue;
    if (cfg_.context_shift && !s->replaying() && shift_context(*s)) continue;
    log_.warn("KV pool full (" + std::to_string(cache_.pool_positions()) + " positions): slot " +
              std::to_string(s->id) + " stops at " + std::to_string(n - 1) + " tokens (finish_reason length)");
    finish(*s, FinishReason::Length);
  }
}

bool Scheduler::shift_context(Slot& s) {
  // llama-server moves the kept keys to their new positions with a RoPE
  // delta. Here the kept tail is evaluated again instead (decision 0018): a
  // q2_0 row cannot be turned without decoding and re-quantizing it, and
  // sliding-window rings would need the same care; evaluating again is exact
  // for every cache type, for the price of one prompt chunk of about half
  // the context per shift.
  const GenParams& p = s.task.params;
  const int n = (int)s.cached.size();
  int n_keep = p.n_keep < 0 ? (int)s.task.prompt.size() : p.n_keep;
  if (tok_.vocab().add_bos()) ++n_keep;
  n_keep = std::max(0, std::min({n_keep, cfg_.n_ctx_slot - 4, n}));
  const int n_left = n - n_keep;
  const int n_discard = std::min(n_left, p.n_discard > 0 ? p.n_discard : n_left / 2);
  if (n_discard <= 0) return false;
  // A sliding-window layer may no longer hold what the kept prefix needs:
  // what the cache cannot keep is evaluated again too.
  const int kept = cache_.truncate(s.id, n_keep);
  std::vector<int32_t> replay(s.cached.begin() + kept, s.cached.begin() + n_keep);
  replay.insert(replay.end(), s.cached.begin() + n_keep + n_discard, s.cached.end());
  replay.push_back(s.pending);
  s.cached.resize((size_t)kept);
  if (cache_.unified() && !reserve_dropping_idle(s.id, kept + (int)replay.size(), s.id)) {
    cache_.clear(s.id);  // what it held is gone anyway: give the pages back
    s.cached.clear();
    s.shifted = true;    // the generation ends for want of context: "truncated"
    return false;
  }
  log_.warn("slot " + std::to_string(s.id) + " context shift: kept " + std::to_string(n_keep) + ", dropped " +
            std::to_string(n_discard) + ", evaluating " + std::to_string(replay.size()) + " tokens again");
  s.replay = std::move(replay);
  s.n_replayed = 0;
  s.shifted = true;
  ++context_shifts_;
  return true;
}

}  // namespace oscar::server
