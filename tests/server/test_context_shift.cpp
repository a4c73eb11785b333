// --context-shift: a generation that fills its context keeps the first
// n_keep tokens, drops half of the rest (or n_discard), and goes on, as
// llama-server does. The reference is independent of the scheduler: at every
// step it evaluates the whole window the model should see (the kept tokens
// at their new positions) in a fresh cache, and applies llama-server's rule
// for which tokens are dropped. f32 caches keep both sides exact enough that
// greedy tokens agree.
#include <gtest/gtest.h>

#include "scheduler_test_util.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;

namespace {

class ContextShiftTest : public oscar::testing::SchedulerFixture {
 protected:
  void SetUp() override {
    SchedulerFixture::SetUp();
    s_.cache_k = s_.cache_v = kv::CacheType::F32;
  }

  static std::vector<int32_t> prompt_of(int seed, int n) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back((int32_t)((seed * 37 + i * 11) % 240 + 5));
    return p;
  }

  int32_t greedy_next(const std::vector<int32_t>& window) {
    auto cache = engine_->make_cache(s_, 1, (int)window.size());
    runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
    std::vector<runtime::BatchToken> batch;
    for (size_t i = 0; i < window.size(); ++i) batch.push_back({window[i], 0, (int32_t)i, i + 1 == window.size()});
    const std::vector<float>& logits = fwd.eval(batch);
    int32_t best = 0;
    for (int v = 1; v < fwd.n_vocab(); ++v)
      if (logits[(size_t)v] > logits[(size_t)best]) best = v;
    return best;
  }

  // llama-server's rule: when the next token has no position left, keep
  // n_keep tokens (+1 for BOS), drop n_discard (0: half of the rest) after them.
  struct Reference {
    std::vector<int32_t> tokens;
    int shifts = 0;
  };
  Reference reference_shifted(std::vector<int32_t> window, int n, int n_ctx, int n_keep, int n_discard) {
    Reference r;
    const int keep = n_keep + (engine_->tokenizer().vocab().add_bos() ? 1 : 0);
    for (int k = 0; k < n; ++k) {
      const int32_t t = greedy_next(window);
      r.tokens.push_back(t);
      if ((int)window.size() >= n_ctx) {
        const int left = (int)window.size() - keep;
        const int drop = n_discard > 0 ? n_discard : left / 2;
        window.erase(window.begin() + keep, window.begin() + keep + drop);
        ++r.shifts;
      }
      window.push_back(t);
    }
    return r;
  }

  static SchedulerConfig shifting(int n_slots, int n_ctx, int n_ubatch, bool on) {
    SchedulerConfig c{n_slots, n_ctx, n_ubatch};
    c.context_shift = on;
    return c;
  }

  Task task(std::vector<int32_t> prompt, int n, int n_keep, int n_discard = 0) {
    Task t = greedy_task(std::move(prompt), n);
    t.params.n_keep = n_keep;
    t.params.n_discard = n_discard;
    return t;
  }
};

// Two generations at once, each running 2.5 times past its 64-position
// context; the replayed tails span several 16-token batches next to the
// other slot's decoding.
TEST_F(ContextShiftTest, GenerationGoesOnWithTheKeptWindow) {
  const int n_ctx = 64, n = 130;
  auto cache = engine_->make_cache(s_, 2, n_ctx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, shifting(2, n_ctx, 16, true), Logger::quiet());
  const auto a = prompt_of(1, 20), b = prompt_of(2, 30);
  Task ta = task(a, n, 8), tb = task(b, n, -1, 10);  // b keeps its whole prompt, drops 10 at a time
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  sch.submit(std::move(tb));
  const auto [toks_a, done_a] = collect(*ca);
  const auto [toks_b, done_b] = collect(*cb);
  sch.shutdown();

  const Reference ref_a = reference_shifted(a, n, n_ctx, 8, 0);
  const Reference ref_b = reference_shifted(b, n, n_ctx, (int)b.size(), 10);
  EXPECT_EQ(toks_a, ref_a.tokens);
  EXPECT_EQ(toks_b, ref_b.tokens);
  EXPECT_EQ(done_a.reason, FinishReason::Length);  // n_predict reached
  EXPECT_TRUE(done_a.truncated);
  EXPECT_TRUE(done_b.truncated);
  EXPECT_GE(ref_a.shifts, 3);
  EXPECT_EQ(sch.stats().context_shifts, (uint64_t)(ref_a.shifts + ref_b.shifts));
}

// Off (the default), the same request ends when its context is full, with
// the tokens the shifted run produced up to that point.
TEST_F(ContextShiftTest, OffAFullContextEndsTheGeneration) {
  const int n_ctx = 64;
  auto cache = engine_->make_cache(s_, 1, n_ctx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, shifting(1, n_ctx, 16, false), Logger::quiet());
  const auto a = prompt_of(1, 20);
  Task ta = task(a, 130, 8);
  auto ca = ta.channel;
  sch.submit(std::move(ta));
  const auto [toks, done] = collect(*ca);
  sch.shutdown();
  const Reference ref = reference_shifted(a, 130, n_ctx, 8, 0);
  ASSERT_EQ(toks.size(), (size_t)(n_ctx - a.size() + 1));  // the last one has no position to be evaluated at
  EXPECT_EQ(toks, std::vector<int32_t>(ref.tokens.begin(), ref.tokens.begin() + (long)toks.size()));
  EXPECT_EQ(done.reason, FinishReason::Length);
  EXPECT_TRUE(done.truncated);
  EXPECT_EQ(sch.stats().context_shifts, 0u);
}

// A unified pool of two pages that two growing generations outgrow: with
// context shift the one that finds no page drops tokens and both run to
// their n_predict, instead of one ending with "length" early.
TEST_F(ContextShiftTest, AFullPoolShiftsInsteadOfStopping) {
  auto cache = engine_->make_cache(s_, 2, 512, 512);
  ASSERT_TRUE(cache->unified());
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, shifting(2, 512, 64, true), Logger::quiet());
  Task ta = task(prompt_of(5, 200), 120, 4), tb = task(prompt_of(6, 200), 120, 4);
  auto ca = ta.channel, cb = tb.channel;
  sch.submit(std::move(ta));
  sch.submit(std::move(tb));
  const auto [toks_a, done_a] = collect(*ca);
  const auto [toks_b, done_b] = collect(*cb);
  EXPECT_EQ(toks_a.size(), 120u);
  EXPECT_EQ(toks_b.size(), 120u);
  EXPECT_TRUE(done_a.truncated || done_b.truncated);
  EXPECT_GE(sch.stats().context_shifts, 1u);
  EXPECT_LE(sch.stats().kv_pool_used_positions, 512);
}

// Gemma's sliding-window layers keep a ring of the last positions only: by
// the time the context is full, the ring no longer holds the kept prefix, so
// the cache keeps less than n_keep and the shift evaluates those tokens again too.
class ContextShiftSlidingWindowTest : public ContextShiftTest {
 protected:
  static void SetUpTestSuite() {
    dir_ = new oscar::testing::TempDir();
    const auto r = oscar::testing::run_capture(oscar::testing::kBin +
                                               "/oscar-mkmodel --arch gemma3 --preset tiny --sliding-window 16 -o " +
                                               dir_->file("m.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
};

TEST_F(ContextShiftSlidingWindowTest, KeptTokensTheRingLostAreEvaluatedAgain) {
  const int n_ctx = 64, n = 100;
  s_.kv_swa_slack = 8;  // a ring of 24 positions: at 64, the first 40 are gone
  auto cache = engine_->make_cache(s_, 1, n_ctx);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, shifting(1, n_ctx, 16, true), Logger::quiet());
  const auto a = prompt_of(3, 24);
  Task ta = task(a, n, 12);
  auto ca = ta.channel;
  sch.submit(std::move(ta));
  const auto [toks, done] = collect(*ca);
  sch.shutdown();
  const Reference ref = reference_shifted(a, n, n_ctx, 12, 0);
  EXPECT_EQ(toks, ref.tokens);
  EXPECT_TRUE(done.truncated);
  EXPECT_GE(ref.shifts, 2);
}

}  // namespace
