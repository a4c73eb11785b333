// What the scheduler tests share: a tiny random qwen3 made once per suite,
// an engine per test, the independent greedy reference (one sequence of its
// own, the whole prompt in one batch, a plain Forward loop), greedy tasks,
// and collecting a task's events until it is done.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "client_test_util.h"
#include "engine.h"
#include "server/scheduler.h"

namespace oscar::testing {

class SchedulerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny -o " + dir_->file("m.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    s_.model = dir_->file("m.gguf");
    s_.n_threads = 2;
    engine_ = tools::Engine::load(s_, Logger::quiet());
  }

  // Greedy tokens for `prompt` alone, in a one-sequence cache of n_ctx
  // positions (default: just enough). Runs on the engine's thread pool: not
  // while a Scheduler over the same engine is working.
  std::vector<int32_t> reference(const std::vector<int32_t>& prompt, int n, int n_ctx = 0) {
    auto cache = engine_->make_cache(s_, 1, n_ctx > 0 ? n_ctx : (int)prompt.size() + n);
    runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
    std::vector<runtime::BatchToken> batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], 0, (int32_t)i, i + 1 == prompt.size()});
    std::vector<float> logits = fwd.eval(batch);
    std::vector<int32_t> out;
    int pos = (int)prompt.size();
    for (int k = 0; k < n; ++k) {
      int32_t best = 0;
      for (int v = 1; v < fwd.n_vocab(); ++v)
        if (logits[(size_t)v] > logits[(size_t)best]) best = v;
      out.push_back(best);
      if (k + 1 < n) logits = fwd.eval({{best, 0, pos++, true}});
    }
    return out;
  }

  static server::Task greedy_task(std::vector<int32_t> prompt, int n) {
    server::Task t;
    t.prompt = std::move(prompt);
    t.params.n_predict = n;
    t.params.ignore_eos = true;
    t.params.sampling.temperature = 0;
    t.channel = std::make_shared<server::Channel>();
    return t;
  }

  // A task's tokens until it is done (a failure after `limit`).
  static std::pair<std::vector<int32_t>, server::Done> collect(server::Channel& ch,
                                                               std::chrono::seconds limit = std::chrono::seconds(60)) {
    std::vector<int32_t> toks;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      for (auto& e : ch.wait(std::chrono::milliseconds(50))) {
        for (const auto& t : e.tokens) toks.push_back(t.token);
        if (e.done) return {toks, *e.done};
      }
    }
    ADD_FAILURE() << "task did not finish";
    return {toks, server::Done{}};
  }

  static inline TempDir* dir_ = nullptr;
  tools::RunSettings s_;
  std::unique_ptr<tools::Engine> engine_;
};

}  // namespace oscar::testing
