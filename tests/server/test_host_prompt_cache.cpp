// --cache-ram: conversations that leave their slots (dropped for room in the
// KV pool, or overwritten by another prompt) are kept in host memory and
// imported again, into any slot, by a prompt that continues them
// (server/host_prompt_cache.h, docs/kv-pool.md). Tokens are checked against
// the independent greedy reference of scheduler_test_util.h; the q2_0 rows
// brought back are compared byte for byte with the rows the slot held.
#include <gtest/gtest.h>

#include "kv/seq_snapshot.h"
#include "scheduler_test_util.h"
#include "server/host_prompt_cache.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;

namespace {

std::vector<int32_t> prompt_of(int seed, int n) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((int32_t)((seed * 37 + i * 11 + (i / 89) * 5) % 250 + 3));
  return p;
}

std::vector<int32_t> join(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One slot's sequence as stored (kv/seq_snapshot.h).
struct Rows {
  std::vector<int32_t> tokens, splits;
  std::vector<uint8_t> bytes;
};

class HostPromptCacheTest : public oscar::testing::SchedulerFixture {
 protected:
  // A pool of 4 pages of 256 shared by 2 slots: two 600-token
  // conversations (3 pages each) cannot both stay in it.
  struct Server {
    std::unique_ptr<kv::KvCache> cache;
    std::unique_ptr<runtime::Forward> fwd;
    std::unique_ptr<Scheduler> sch;
  };
  Server start(int64_t host_cache_bytes, int n_slots = 2, int pool = 1024) {
    Server s;
    s.cache = engine_->make_cache(s_, n_slots, 1024, pool);
    s.fwd = std::make_unique<runtime::Forward>(engine_->model(), *s.cache, engine_->pool(), engine_->forward_options(s_));
    s.sch = std::make_unique<Scheduler>(engine_->tokenizer(), *s.cache, *s.fwd,
                                        SchedulerConfig{n_slots, 1024, 256, host_cache_bytes}, Logger::quiet());
    return s;
  }
  static std::pair<std::vector<int32_t>, Done> run(Scheduler& sch, const std::vector<int32_t>& prompt, int n,
                                                   int id_slot = -1) {
    Task t = greedy_task(prompt, n);
    t.id_slot = id_slot;
    auto ch = t.channel;
    sch.submit(std::move(t));
    return collect(*ch);
  }
  static Rows rows_of(Scheduler& sch, int slot) {
    Rows r;
    sch.with_idle_slot(slot, [&](SlotAccess& a) {
      r.tokens = a.tokens;
      r.splits = kv::sequence_splits(a.cache, a.seq, (int)a.tokens.size());
      kv::export_rows(a.cache, a.seq, (int)a.tokens.size(), r.splits, r.bytes);
    });
    return r;
  }
};

// a runs in slot 0; c then needs a's pages, so a's idle cache is dropped to
// host memory. a's next turn, sent to slot 1 (which holds c: c goes to host
// memory in turn), imports a from there: all of a and its answer but the
// last token (never evaluated) count as cached, and the tokens equal the
// whole new prompt run alone.
TEST_F(HostPromptCacheTest, DroppedSlotIsKeptInRamAndHitsInAnotherSlot) {
  Server srv = start(-1);
  Scheduler& sch = *srv.sch;
  const auto a = prompt_of(1, 600), c = prompt_of(2, 600);
  const auto [toks_a, done_a] = run(sch, a, 4);
  ASSERT_EQ(done_a.slot, 0);
  const auto [toks_c, done_c] = run(sch, c, 4);
  ASSERT_EQ(done_c.slot, 1);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 1u);
  EXPECT_EQ(sch.stats().host_cache.entries, 1u);
  EXPECT_GT(sch.stats().host_cache.bytes, 0u);

  const auto a2 = join(join(a, toks_a), prompt_of(3, 20));
  const auto [toks_a2, done_a2] = run(sch, a2, 4, 1);
  EXPECT_EQ(done_a2.slot, 1);
  EXPECT_EQ(done_a2.timings.n_cached, (int)(a.size() + toks_a.size()) - 1);
  const HostCacheStats h = sch.stats().host_cache;
  EXPECT_EQ(h.hits, 1u);
  EXPECT_EQ(h.saved, 2u);    // a (dropped), then c (overwritten by a2)
  EXPECT_EQ(h.entries, 2u);
  EXPECT_EQ(toks_a2, reference(a2, 4));
  EXPECT_EQ(toks_c, reference(c, 4));
}

// q2_0 with small f16 tiers (most of a conversation in 2-bit rows): what a
// hit brings back is, byte for byte, what the slot held (q2_0 blocks, f16
// sink and recent rows, the tier splits), in another slot.
TEST_F(HostPromptCacheTest, Q2RowsComeBackAsStored) {
  s_.cache_k = s_.cache_v = kv::CacheType::Q2_0;
  s_.kv_hp_sink = 64;
  s_.kv_hp_recent = 128;
  Server srv = start(-1);
  Scheduler& sch = *srv.sch;
  const auto a = prompt_of(4, 700);
  const auto [toks_a, done_a] = run(sch, a, 6);
  const Rows before = rows_of(sch, done_a.slot);
  ASSERT_EQ(before.tokens.size(), a.size() + 5);
  (void)run(sch, prompt_of(5, 600), 2);  // drops a to host memory
  ASSERT_EQ(sch.stats().host_cache.entries, 1u);
  // All of a's cached tokens and one more: the whole entry is reused. n_predict
  // 0 answers without evaluating anything, so the slot holds just the entry.
  const auto [toks, done] = run(sch, join(before.tokens, {7}), 0, 1 - done_a.slot);
  EXPECT_EQ(done.timings.n_cached, (int)before.tokens.size());
  const Rows after = rows_of(sch, 1 - done_a.slot);
  EXPECT_EQ(after.tokens, before.tokens);
  EXPECT_EQ(after.splits, before.splits);
  EXPECT_TRUE(after.bytes == before.bytes) << "restored rows differ from the stored ones";
}

// --cache-ram 0: a dropped conversation is gone; nothing is kept or hit.
TEST_F(HostPromptCacheTest, ZeroDisablesIt) {
  Server srv = start(0);
  Scheduler& sch = *srv.sch;
  const auto a = prompt_of(6, 600);
  const auto [toks_a, done_a] = run(sch, a, 4);
  (void)run(sch, prompt_of(7, 600), 4);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 1u);
  const auto [toks_a2, done_a2] = run(sch, join(a, toks_a), 2);
  EXPECT_EQ(done_a2.timings.n_cached, 0);
  const HostCacheStats h = sch.stats().host_cache;
  EXPECT_EQ(h.entries, 0u);
  EXPECT_EQ(h.saved, 0u);
  EXPECT_EQ(h.hits, 0u);
}

// A budget that holds one 600-token conversation but not two: when b is
// dropped after a, a (the least recently used) leaves host memory; b's next
// turn hits, a's does not.
TEST_F(HostPromptCacheTest, ByteLimitDropsTheLeastRecentlyUsedEntry) {
  size_t one = 0;
  {
    Server probe = start(-1);
    (void)run(*probe.sch, prompt_of(8, 600), 4);
    (void)run(*probe.sch, prompt_of(9, 600), 4);
    one = probe.sch->stats().host_cache.bytes;  // one 603-position entry
    ASSERT_GT(one, 0u);
  }
  Server srv = start((int64_t)(one * 3 / 2));
  Scheduler& sch = *srv.sch;
  const auto a = prompt_of(8, 600), b = prompt_of(9, 600), c = prompt_of(10, 600);
  const auto [toks_a, done_a] = run(sch, a, 4);
  const auto [toks_b, done_b] = run(sch, b, 4);  // drops a: kept
  const auto [toks_c, done_c] = run(sch, c, 4);  // drops b: kept, a evicted
  HostCacheStats h = sch.stats().host_cache;
  EXPECT_EQ(h.saved, 2u);
  EXPECT_EQ(h.evicted, 1u);
  EXPECT_EQ(h.entries, 1u);
  EXPECT_LE(h.bytes, one * 3 / 2);
  const auto b2 = join(b, toks_b);
  const auto [toks_b2, done_b2] = run(sch, b2, 2);
  EXPECT_EQ(done_b2.timings.n_cached, (int)b2.size() - 1);
  const auto [toks_a2, done_a2] = run(sch, join(a, toks_a), 2);
  EXPECT_EQ(done_a2.timings.n_cached, 0);
  EXPECT_EQ(sch.stats().host_cache.hits, 1u);
}

// The cache on its own: an entry that a longer one extends is replaced by
// it, saving what an entry already covers only refreshes that entry, and a
// sequence larger than the whole budget is not kept.
TEST_F(HostPromptCacheTest, EntriesCoverTheirPrefixes) {
  auto cache = engine_->make_cache(s_, 2, 512, 1024);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  const auto p = prompt_of(11, 300);
  auto fill = [&](int seq, size_t n) {
    std::vector<runtime::BatchToken> batch;
    ASSERT_TRUE(cache->reserve(seq, (int)n));
    for (size_t i = 0; i < n; ++i) batch.push_back({p[i], seq, (int32_t)i, i + 1 == n});
    fwd.eval(batch);
  };
  fill(0, 200);
  fill(1, 300);
  HostPromptCache host(-1);
  EXPECT_TRUE(host.save(*cache, 0, std::span(p).first(200)));
  EXPECT_TRUE(host.save(*cache, 1, p));                          // extends the first: replaces it
  EXPECT_EQ(host.stats().entries, 1u);
  EXPECT_FALSE(host.save(*cache, 0, std::span(p).first(200)));  // covered by the longer one
  const HostPromptCache::Match m = host.find(join(std::vector<int32_t>(p.begin(), p.begin() + 250), {1, 2}), 0);
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.keep, 250u);
  EXPECT_FALSE(host.find(p, 400).entry);  // no entry beats a slot's 400 positions

  HostPromptCache small((int64_t)host.stats().bytes - 1);
  EXPECT_FALSE(small.save(*cache, 1, p));
  EXPECT_EQ(small.stats().entries, 0u);
  EXPECT_EQ(small.stats().bytes, 0u);
}

}  // namespace
