// The scheduler over a unified KV pool (one page pool for every slot): a
// conversation may be longer than -c / -np, slots share the pool, a request
// that does not fit waits, idle slots' caches are dropped least recently
// used first, and a generation the pool cannot grow ends with "length". The
// tokens are checked against an independent reference: each prompt decoded
// greedily on its own in a split (one-sequence) cache, with a plain Forward
// loop.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "scheduler_test_util.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;
using namespace std::chrono_literals;

namespace {

class PoolSchedulerTest : public oscar::testing::SchedulerFixture {
 protected:
  static std::vector<int32_t> prompt_of(int seed, int n) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back((int32_t)((seed * 31 + i * 7 + (i / 97) * 13) % 250 + 3));
    return p;
  }

  // Runs the tasks together and checks every one against its reference.
  void expect_all_equal_alone(Scheduler& sch, const std::vector<std::vector<int32_t>>& prompts, int n_gen) {
    std::vector<std::shared_ptr<Channel>> chans;
    for (const auto& p : prompts) {
      Task t = greedy_task(p, n_gen);
      chans.push_back(t.channel);
      sch.submit(std::move(t));
    }
    // Every task first: the references below run on the engine's thread
    // pool, which the scheduler's forward passes use too (one user at a time).
    std::vector<std::vector<int32_t>> got;
    std::vector<FinishReason> reasons;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto [toks, done] = collect(*chans[i]);
      got.push_back(std::move(toks));
      reasons.push_back(done.reason);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(reasons[i], FinishReason::Length) << "prompt " << i;
      EXPECT_EQ(got[i], reference(prompts[i], n_gen)) << "prompt " << i;
    }
  }

};

// -c 2048 -np 4: a split cache would give each slot 512 positions; the pool
// lets one conversation of 1500 tokens use most of it.
TEST_F(PoolSchedulerTest, OneSequenceLongerThanItsSplitShare) {
  auto cache = engine_->make_cache(s_, 4, 2048, 2048);
  ASSERT_TRUE(cache->unified());
  EXPECT_EQ(cache->pool_positions(), 2048);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{4, 2048, 256}, Logger::quiet());
  expect_all_equal_alone(sch, {prompt_of(1, 1500)}, 6);
  EXPECT_EQ(sch.stats().kv_pool_used_positions, 1536);  // 1506 positions in pages of 256
}

// The same memory as an f16 pool of 2048 positions holds, as q2_0 pages:
// four conversations of 700 tokens (each beyond 2048 / 4) decode together,
// where f16 would hold only 2048 positions in all.
TEST_F(PoolSchedulerTest, FourSequencesShareAQ2PoolThatF16CouldNotHold) {
  const int n_ctx_seq = 1024;
  const kv::KvCache::Footprint f16 =
      kv::KvCache::footprint(engine_->model().config(), tools::kv_config(s_, 4, n_ctx_seq), engine_->quant_table());
  const size_t bytes = f16.fixed_bytes + 2048 * f16.bytes_per_position;
  tools::RunSettings q2 = s_;
  q2.cache_k = q2.cache_v = kv::CacheType::Q2_0;
  q2.kv_hp_sink = 64;    // small f16 tiers, so most of each sequence is 2-bit
  q2.kv_hp_recent = 128;
  const int pool = engine_->pool_positions_for_memory(q2, 4, n_ctx_seq, bytes);
  EXPECT_GE(pool, 4 * 768) << "q2_0 pages should hold several times the f16 positions";
  EXPECT_EQ(engine_->pool_positions_for_memory(s_, 4, n_ctx_seq, bytes), 2048);

  s_ = q2;
  auto cache = engine_->make_cache(s_, 4, n_ctx_seq, pool);
  EXPECT_LE(cache->bytes_allocated(), bytes);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{4, n_ctx_seq, 128}, Logger::quiet());
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(prompt_of(10 + i, 700 + 3 * i));
  expect_all_equal_alone(sch, prompts, 5);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 0u);
}

// A pool of 4 pages and 2 slots: the second 600-token request waits until
// the first is done, then takes the first slot's idle pages (least
// recently used first), whose cached tokens are no longer reusable.
TEST_F(PoolSchedulerTest, ShortPoolQueuesThenDropsTheIdleSlot) {
  auto cache = engine_->make_cache(s_, 2, 1024, 1024);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{2, 1024, 256}, Logger::quiet());
  const auto a = prompt_of(3, 600), b = prompt_of(4, 600);
  Task ta = greedy_task(a, 4), tb = greedy_task(b, 4);
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  sch.submit(std::move(tb));
  const auto [toks_a, done_a] = collect(*ca);
  const auto [toks_b, done_b] = collect(*cb);
  EXPECT_EQ(toks_a, reference(a, 4));
  EXPECT_EQ(toks_b, reference(b, 4));
  // b waited in the queue, then took a's pages: both prompts need 3 of the
  // 4 pages, so b could only start once a had finished and its idle slot
  // was dropped. (Comparing b's queue time with a's prompt time is not a
  // proof: b may be submitted after a has started, on a loaded machine.)
  EXPECT_GT(done_b.timings.queue_ms, 0.0);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 1u);
  // a's cache is gone: asking again reuses nothing.
  Task again = greedy_task(a, 2);
  auto cg = again.channel;
  sch.submit(std::move(again));
  EXPECT_EQ(collect(*cg).second.timings.n_cached, 0);
}

// Two generations that outgrow a 2-page pool together: the first to need a
// page it cannot have ends with "length" (its tokens so far intact); its
// slot, now idle, gives its pages to the other, which runs to the end.
TEST_F(PoolSchedulerTest, PoolExhaustedMidGenerationEndsWithLength) {
  auto cache = engine_->make_cache(s_, 2, 512, 512);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{2, 512, 64}, Logger::quiet());
  const auto a = prompt_of(5, 200), b = prompt_of(6, 200);
  Task ta = greedy_task(a, 100), tb = greedy_task(b, 100);
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  sch.submit(std::move(tb));
  const auto [toks_a, done_a] = collect(*ca);
  const auto [toks_b, done_b] = collect(*cb);
  EXPECT_EQ(done_a.reason, FinishReason::Length);
  ASSERT_LT(toks_a.size(), 100u);
  const auto ref_a = reference(a, 100);
  EXPECT_EQ(toks_a, std::vector<int32_t>(ref_a.begin(), ref_a.begin() + (long)toks_a.size()));
  EXPECT_EQ(toks_b, reference(b, 100));
  EXPECT_EQ(sch.stats().kv_slots_dropped, 1u);
}

// Shared prompt prefixes (docs/kv-pool.md). A q2_0 pool with small f16
// tiers (sink 64, recent 128), so most of a shared prefix sits in q2_0 pages.
class PrefixSharingTest : public PoolSchedulerTest {
 protected:
  void SetUp() override {
    PoolSchedulerTest::SetUp();
    s_.cache_k = s_.cache_v = kv::CacheType::Q2_0;
    s_.kv_hp_sink = 64;
    s_.kv_hp_recent = 128;
  }
  static std::vector<int32_t> join(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  // Waits for the first generated token (the task then decodes on).
  static std::vector<int32_t> first_tokens(Channel& ch) {
    std::vector<int32_t> toks;
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (toks.empty() && std::chrono::steady_clock::now() < end)
      for (auto& e : ch.wait(20ms)) {
        for (const auto& t : e.tokens) toks.push_back(t.token);
        if (e.done) ADD_FAILURE() << "finished before a second request could share its prefix";
      }
    return toks;
  }
  void running_slot_shares(int shared_pages);
};

// Two requests with a common 1200-token prefix, the second arriving while
// the first generates: the second lists the first's finished pages of the
// prefix (4 pages of 256) and copies the rest of it, reports the 1200
// reused positions as cached, and both give the greedy tokens of each
// prompt run alone (a split one-sequence cache, no sharing). The pool
// holds the shared pages once.
TEST_F(PrefixSharingTest, RunningSlotsPrefixIsSharedAndOutputsMatchAlone) {
  for (kv::CacheType type : {kv::CacheType::Q2_0, kv::CacheType::F16}) {
    SCOPED_TRACE(kv::cache_type_name(type));
    s_.cache_k = s_.cache_v = type;
    running_slot_shares(4);  // 1200 / 256 whole pages either way
  }
}

void PrefixSharingTest::running_slot_shares(int shared_pages) {
  auto cache = engine_->make_cache(s_, 2, 2048, 4096);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{2, 2048, 128}, Logger::quiet());
  const auto prefix = prompt_of(20, 1200);
  const auto a = join(prefix, prompt_of(21, 100)), b = join(prefix, prompt_of(22, 150));
  // a decodes 600 tokens (tens of ms on the tiny model; 60 were over before
  // the test thread could submit b on an idle machine), so b arrives while
  // a runs.
  Task ta = greedy_task(a, 600), tb = greedy_task(b, 8);
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  std::vector<int32_t> toks_a = first_tokens(*ca);
  sch.submit(std::move(tb));
  const auto [toks_b, done_b] = collect(*cb);
  const SchedulerStats while_both = sch.stats();
  const std::vector<SlotInfo> slots = sch.slots();
  const auto [rest_a, done_a] = collect(*ca);
  toks_a.insert(toks_a.end(), rest_a.begin(), rest_a.end());

  EXPECT_EQ(done_b.timings.n_cached, 1200);
  EXPECT_EQ(done_a.timings.n_cached, 0);
  EXPECT_EQ(while_both.kv_prefixes_shared, 1u);
  EXPECT_EQ(while_both.kv_pool_shared_positions, shared_pages * 256);
  int held = 0;
  for (const SlotInfo& si : slots) held += si.kv_positions_held;
  EXPECT_EQ(while_both.kv_pool_used_positions, held - shared_pages * 256);
  EXPECT_LT(while_both.kv_pool_used_positions, (int)(a.size() + b.size()));
  // References only now: they use the engine's thread pool, as the scheduler does.
  EXPECT_EQ(toks_a, reference(a, 600));
  EXPECT_EQ(toks_b, reference(b, 8));
}

// An idle conversation's cache is not cut back for another prompt that
// shares only its beginning: the new prompt goes to an empty slot and
// shares the prefix, so the first conversation's next turn still finds all
// of its tokens cached.
TEST_F(PrefixSharingTest, IdleConversationKeepsItsCacheWhenAnotherSharesItsPrefix) {
  // f16: a2 reuses a's slot in place, and with q2_0 a prompt evaluated on
  // top of a cached prefix (in place, shared or not) can pick other greedy
  // tokens on this random model than the whole prompt in one batch does.
  s_.cache_k = s_.cache_v = kv::CacheType::F16;
  auto cache = engine_->make_cache(s_, 2, 2048, 4096);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{2, 2048, 256}, Logger::quiet());
  const auto prefix = prompt_of(30, 900);
  const auto a = join(prefix, prompt_of(31, 200)), b = join(prefix, prompt_of(32, 50));
  auto run = [&](const std::vector<int32_t>& p, int n) {
    Task t = greedy_task(p, n);
    auto ch = t.channel;
    sch.submit(std::move(t));
    return collect(*ch);
  };
  const auto [toks_a, done_a] = run(a, 4);
  const auto [toks_b, done_b] = run(b, 4);
  EXPECT_EQ(done_b.timings.n_cached, 900);
  EXPECT_NE(done_b.slot, done_a.slot);
  // a's next turn: a, its answer, more text. All of a and its answer but the
  // last token (never evaluated) is still cached in a's slot.
  const auto a2 = join(join(a, toks_a), prompt_of(33, 20));
  const auto [toks_a2, done_a2] = run(a2, 4);
  EXPECT_EQ(done_a2.slot, done_a.slot);
  EXPECT_EQ(done_a2.timings.n_cached, (int)(a.size() + toks_a.size()) - 1);
  EXPECT_EQ(toks_b, reference(b, 4));
  EXPECT_EQ(toks_a2, reference(a2, 4));
}

// A short pool (10 pages): a's idle cache is dropped (least recently used)
// to make room for c while b, which shares a's first pages, still holds
// them. Dropping a frees only its own pages; b's tokens are intact.
TEST_F(PrefixSharingTest, DroppingTheDonorKeepsPagesAnotherSlotLists) {
  auto cache = engine_->make_cache(s_, 3, 2048, 2560);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{3, 2048, 256}, Logger::quiet());
  const auto prefix = prompt_of(40, 1200);
  const auto a = join(prefix, prompt_of(41, 100)), b = join(prefix, prompt_of(42, 150)), c = prompt_of(43, 600);
  Task ta = greedy_task(a, 2);
  auto ca = ta.channel;
  sch.submit(std::move(ta));
  const auto [toks_a, done_a] = collect(*ca);
  Task tb = greedy_task(b, 100), tc = greedy_task(c, 4);
  auto cb = tb.channel, cc = tc.channel;
  sch.submit(std::move(tb));
  (void)first_tokens(*cb);
  // Stats are published after the step that sent the token.
  for (int i = 0; i < 200 && sch.stats().kv_prefixes_shared == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(sch.stats().kv_pool_shared_positions, 4 * 256);
  sch.submit(std::move(tc));
  const auto [toks_c, done_c] = collect(*cc);
  auto [toks_b, done_b] = collect(*cb);
  EXPECT_EQ(done_b.timings.n_cached, 1200);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 1u);
  EXPECT_EQ(sch.stats().kv_pool_shared_positions, 0);  // a's references are gone
  const auto ref_b = reference(b, 100);
  // b's first token came before (first_tokens): compare the rest.
  EXPECT_EQ(toks_b, std::vector<int32_t>(ref_b.end() - (long)toks_b.size(), ref_b.end()));
  EXPECT_EQ(toks_c, reference(c, 4));
}

}  // namespace

namespace {

// A pool of 8 pages: a running 1300-token conversation holds 6, so a second
// 1300-token prompt fits only by listing the 4 pages of their common
// 1200-token prefix: it runs at once instead of waiting for the first.
TEST_F(PrefixSharingTest, SharingLetsAPromptFitThatWouldOtherwiseWait) {
  auto cache = engine_->make_cache(s_, 2, 2048, 2048);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{2, 2048, 128}, Logger::quiet());
  const auto prefix = prompt_of(50, 1200);
  const auto a = join(prefix, prompt_of(51, 100)), b = join(prefix, prompt_of(52, 100));
  Task ta = greedy_task(a, 150), tb = greedy_task(b, 8);
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  std::vector<int32_t> toks_a = first_tokens(*ca);
  sch.submit(std::move(tb));
  const auto [toks_b, done_b] = collect(*cb);
  const auto [rest_a, done_a] = collect(*ca);
  toks_a.insert(toks_a.end(), rest_a.begin(), rest_a.end());
  // b got its slot at once, not after a's 150 decode steps.
  EXPECT_LT(done_b.timings.queue_ms, done_a.timings.predicted_ms / 4);
  EXPECT_EQ(done_b.timings.n_cached, 1200);
  EXPECT_EQ(sch.stats().kv_slots_dropped, 0u);
  EXPECT_EQ(toks_a, reference(a, 150));
  EXPECT_EQ(toks_b, reference(b, 8));
}

}  // namespace
