// --sleep-idle-seconds at the scheduler: with nothing to do for the idle
// period it drops the cached conversations, gives the KV memory back and
// runs the sleep hook (here, as in oscar-server, the model's weights go);
// the next request runs the wake hook first and gets exactly the tokens of
// an independent reference computed before any sleep. A wake that fails
// fails the waiting requests with the reason, and the next one tries again.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "scheduler_test_util.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;
using namespace std::chrono_literals;

namespace {

class SchedulerSleepTest : public oscar::testing::SchedulerFixture {
 protected:
  static std::vector<int32_t> prompt() { return {5, 17, 29, 41, 53, 65, 77, 89, 101, 113}; }

  static bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  // Slots of 256 positions that sleep after `after` idle, giving the
  // engine's weights back (as oscar-server does) and counting it.
  SchedulerConfig sleeping_config(int n_slots, std::chrono::milliseconds after, std::atomic<int>& sleeps,
                                  std::atomic<int>& wakes) {
    SchedulerConfig cfg{n_slots, 256, 64};
    cfg.sleep_after = after;
    cfg.sleep = [this, &sleeps] { ++sleeps, engine_->release_weights(); };
    cfg.wake = [this, &wakes] { ++wakes, engine_->restore_weights(); };
    return cfg;
  }

  // Whether every byte of the model's first tensor reads zero (its memory given back).
  bool weights_gone() const {
    const auto& f = engine_->model().file();
    const auto bytes = f.tensor_data(f.tensors().front());
    return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
  }
};

TEST_F(SchedulerSleepTest, IdleSchedulerSleepsAndTheNextRequestWakesIt) {
  ASSERT_EQ(engine_->model().file().residence(), FileResidence::kLoaded);
  const std::vector<int32_t> want = reference(prompt(), 8);
  auto cache = engine_->make_cache(s_, 2, 256);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  std::atomic<int> sleeps{0}, wakes{0};
  const SchedulerConfig cfg = sleeping_config(2, 200ms, sleeps, wakes);
  Scheduler sch(engine_->tokenizer(), *cache, fwd, cfg, Logger::quiet());

  Task a = greedy_task(prompt(), 8);
  auto ca = a.channel;
  sch.submit(std::move(a));
  EXPECT_EQ(collect(*ca).first, want);
  EXPECT_EQ(sch.slots()[0].n_cached + sch.slots()[1].n_cached, (int)prompt().size() + 7);

  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));
  EXPECT_EQ(sleeps.load(), 1);
  EXPECT_EQ(wakes.load(), 0);
  EXPECT_TRUE(weights_gone());
  for (const SlotInfo& s : sch.slots()) EXPECT_EQ(s.n_cached, 0) << "slot " << s.id;
  EXPECT_EQ(sch.stats().kv.bytes, 0u);

  Task b = greedy_task(prompt(), 8);
  auto cb = b.channel;
  sch.submit(std::move(b));
  const auto [toks, done] = collect(*cb);
  EXPECT_EQ(toks, want);
  EXPECT_EQ(done.timings.n_cached, 0);  // the cached conversation went with the sleep
  EXPECT_EQ(wakes.load(), 1);
  EXPECT_FALSE(weights_gone());
  EXPECT_EQ(sch.stats().sleeps, 1u);
  // And it sleeps again after the next idle period.
  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));
  EXPECT_EQ(sleeps.load(), 2);
}

TEST_F(SchedulerSleepTest, AFailedWakeFailsTheWaitingRequestAndTheNextOneRetries) {
  const std::vector<int32_t> want = reference(prompt(), 4);
  auto cache = engine_->make_cache(s_, 1, 256);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  std::atomic<int> wakes{0};
  SchedulerConfig cfg{1, 256, 64};
  cfg.sleep_after = 100ms;
  cfg.sleep = [&] { engine_->release_weights(); };
  cfg.wake = [&] {
    if (++wakes == 1) throw std::runtime_error("disk unplugged");
    engine_->restore_weights();
  };
  Scheduler sch(engine_->tokenizer(), *cache, fwd, cfg, Logger::quiet());
  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));

  Task a = greedy_task(prompt(), 4);
  auto ca = a.channel;
  sch.submit(std::move(a));
  const auto [toks_a, done_a] = collect(*ca);
  EXPECT_TRUE(toks_a.empty());
  EXPECT_EQ(done_a.reason, FinishReason::Error);
  EXPECT_NE(done_a.error.find("disk unplugged"), std::string::npos) << done_a.error;
  EXPECT_TRUE(sch.stats().sleeping);

  Task b = greedy_task(prompt(), 4);
  auto cb = b.channel;
  sch.submit(std::move(b));
  EXPECT_EQ(collect(*cb).first, want);
  EXPECT_EQ(wakes.load(), 2);
}

// Work on the weights outside the scheduler (the embedder) wakes them,
// holds the sleep off while it runs, and lets it come a period later.
TEST_F(SchedulerSleepTest, KeepAwakeWakesTheWeightsAndHoldsTheSleepOff) {
  auto cache = engine_->make_cache(s_, 1, 256);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  std::atomic<int> sleeps{0}, wakes{0};
  const SchedulerConfig cfg = sleeping_config(1, 100ms, sleeps, wakes);
  Scheduler sch(engine_->tokenizer(), *cache, fwd, cfg, Logger::quiet());
  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));
  ASSERT_TRUE(weights_gone());
  {
    const auto guard = sch.keep_awake();
    EXPECT_EQ(wakes.load(), 1);
    EXPECT_FALSE(weights_gone());
    std::this_thread::sleep_for(350ms);  // several idle periods, but in use
    EXPECT_EQ(sleeps.load(), 1);
    EXPECT_FALSE(sch.stats().sleeping);
  }
  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));
  EXPECT_EQ(sleeps.load(), 2);
}

// Q4_K and Q6_K matrices are repacked 16 rows at a time when loaded; the
// copy read again on waking must be repacked again, or the kernels would
// read the file's layout as theirs.
class SchedulerSleepRepackedTest : public SchedulerSleepTest {
 protected:
  static void SetUpTestSuite() {
    dir_ = new oscar::testing::TempDir();
    const auto r = oscar::testing::run_capture(oscar::testing::kBin +
                                               "/oscar-mkmodel --arch qwen3 --preset tiny --embd 256 --ffn 512 "
                                               "--type q4_k_m -o " + dir_->file("m.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
};

TEST_F(SchedulerSleepRepackedTest, RepackedWeightsAreRepackedAgainOnWaking) {
  const std::vector<int32_t> want = reference(prompt(), 12);
  auto cache = engine_->make_cache(s_, 1, 256);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  SchedulerConfig cfg{1, 256, 64};
  cfg.sleep_after = 100ms;
  cfg.sleep = [&] { engine_->release_weights(); };
  cfg.wake = [&] { engine_->restore_weights(); };
  Scheduler sch(engine_->tokenizer(), *cache, fwd, cfg, Logger::quiet());
  ASSERT_TRUE(wait_until([&] { return sch.stats().sleeping; }));
  Task a = greedy_task(prompt(), 12);
  auto ca = a.channel;
  sch.submit(std::move(a));
  EXPECT_EQ(collect(*ca).first, want);
}

}  // namespace
