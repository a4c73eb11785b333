// The continuous-batching scheduler against an independent reference: each
// prompt decoded greedily on its own, one sequence, with a plain Forward
// loop. Batching slots together, chunking prompts, queueing beyond the free
// slots and reusing cached prefixes must not change a single token.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "scheduler_test_util.h"
#include "server/api_error.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;
using namespace std::chrono_literals;

namespace {

class SchedulerTest : public oscar::testing::SchedulerFixture {
 protected:
  // Greedy tokens for `prompt`, one sequence, no scheduler.
  std::vector<int32_t> reference(const std::vector<int32_t>& prompt, int n) {
    return SchedulerFixture::reference(prompt, n, kCtx);
  }
  // Collects a task's tokens until it is done.
  static std::pair<std::vector<int32_t>, Done> collect(Channel& ch) { return SchedulerFixture::collect(ch, 30s); }

  static std::vector<int32_t> prompt_of(int seed, int n) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back((int32_t)((seed * 31 + i * 7) % 250 + 3));
    return p;
  }

  static constexpr int kCtx = 128;
};

TEST_F(SchedulerTest, BatchedChunkedQueuedEqualsAlone) {
  const int n_gen = 12;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back(prompt_of(i, 3 + 9 * i));  // up to 39 tokens
  std::vector<std::vector<int32_t>> expected;
  for (const auto& p : prompts) expected.push_back(reference(p, n_gen));

  // 3 slots for 5 tasks (two wait in the queue); 7-token steps, so prompts
  // are split into chunks that share steps with other slots' decoding.
  auto cache = engine_->make_cache(s_, 3, kCtx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{3, kCtx, 7}, Logger::quiet());
  std::vector<std::shared_ptr<Channel>> chans;
  for (const auto& p : prompts) {
    Task t = greedy_task(p, n_gen);
    chans.push_back(t.channel);
    sch.submit(std::move(t));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto [toks, done] = collect(*chans[i]);
    EXPECT_EQ(toks, expected[i]) << "prompt " << i;
    EXPECT_EQ(done.reason, FinishReason::Length);
    EXPECT_EQ(done.timings.n_prompt, (int)prompts[i].size());
    EXPECT_EQ(done.timings.n_predicted, n_gen);
  }
  sch.shutdown();
  const SchedulerStats st = sch.stats();
  EXPECT_EQ(st.requests_total, prompts.size());
  EXPECT_EQ(st.predicted_tokens_total, (uint64_t)(prompts.size() * n_gen));
}

TEST_F(SchedulerTest, PrefixReuseKeepsTokensAndCountsCachedPositions) {
  auto cache = engine_->make_cache(s_, 1, kCtx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, kCtx, 16}, Logger::quiet());
  const std::vector<int32_t> a = prompt_of(1, 20);
  std::vector<int32_t> b = a;
  for (int32_t t : prompt_of(2, 6)) b.push_back(t);

  Task ta = greedy_task(a, 4);
  auto ca = ta.channel;
  sch.submit(std::move(ta));
  const auto [toks_a, done_a] = collect(*ca);
  EXPECT_EQ(done_a.timings.n_cached, 0);

  Task tb = greedy_task(b, 8);
  auto cb = tb.channel;
  sch.submit(std::move(tb));
  const auto [toks_b, done_b] = collect(*cb);
  // The whole of `a` is reused (the slot also holds a's generated tokens, which b does not share).
  EXPECT_EQ(done_b.timings.n_cached, (int)a.size());
  EXPECT_EQ(toks_b, reference(b, 8));

  // cache_prompt off: nothing reused, same tokens.
  Task tc = greedy_task(b, 8);
  tc.params.cache_prompt = false;
  auto cc = tc.channel;
  sch.submit(std::move(tc));
  const auto [toks_c, done_c] = collect(*cc);
  EXPECT_EQ(done_c.timings.n_cached, 0);
  EXPECT_EQ(toks_c, toks_b);
}

TEST_F(SchedulerTest, CancelFreesTheSlotForTheNextTask) {
  auto cache = engine_->make_cache(s_, 1, kCtx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, kCtx, 16}, Logger::quiet());
  Task long_task = greedy_task(prompt_of(3, 5), -1);  // until the slot's context is full
  auto cl = long_task.channel;
  Task next = greedy_task(prompt_of(4, 5), 3);
  auto cn = next.channel;
  sch.submit(std::move(long_task));
  sch.submit(std::move(next));  // queued behind the long one (one slot)
  // Wait for the first tokens, then cancel.
  bool got = false;
  for (int i = 0; i < 200 && !got; ++i)
    for (auto& e : cl->wait(20ms)) got = got || !e.tokens.empty();
  ASSERT_TRUE(got);
  cl->cancel();
  const auto [toks_l, done_l] = collect(*cl);
  EXPECT_EQ(done_l.reason, FinishReason::Cancelled);
  EXPECT_LT(done_l.timings.n_predicted, kCtx - 5);
  const auto [toks_n, done_n] = collect(*cn);
  EXPECT_EQ(toks_n, reference(prompt_of(4, 5), 3));
  EXPECT_EQ(sch.stats().requests_cancelled, 1u);
}

TEST_F(SchedulerTest, ContextFullEndsWithLength) {
  auto cache = engine_->make_cache(s_, 1, 16);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, 16, 16}, Logger::quiet());
  Task t = greedy_task(prompt_of(5, 10), -1);
  auto c = t.channel;
  sch.submit(std::move(t));
  const auto [toks, done] = collect(*c);
  EXPECT_EQ(done.reason, FinishReason::Length);
  // 10 prompt positions + 6 fed-back tokens fill 16; the 7th token is sampled from the last logits.
  EXPECT_EQ((int)toks.size(), 16 - 10 + 1);
}

TEST_F(SchedulerTest, ShutdownRefusesNewTasks) {
  auto cache = engine_->make_cache(s_, 1, kCtx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, kCtx, 16}, Logger::quiet());
  sch.shutdown();
  EXPECT_THROW(sch.submit(greedy_task({1, 2}, 1)), ApiError);
}

}  // namespace

namespace {

TEST_F(SchedulerTest, CancelAllEndsRunningAndQueuedTasks) {
  auto cache = engine_->make_cache(s_, 1, kCtx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, kCtx, 16}, Logger::quiet());
  Task a = greedy_task(prompt_of(6, 5), -1), b = greedy_task(prompt_of(7, 5), -1);
  auto ca = a.channel, cb = b.channel;
  sch.submit(std::move(a));
  sch.submit(std::move(b));
  sch.cancel_all();
  EXPECT_EQ(collect(*ca).second.reason, FinishReason::Cancelled);
  EXPECT_EQ(collect(*cb).second.reason, FinishReason::Cancelled);
  sch.shutdown();  // returns: nothing is left running
  EXPECT_EQ(sch.stats().requests_cancelled, 2u);
}

}  // namespace
