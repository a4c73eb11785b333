// The unified KV pool at the sizes of issue 46, on a tiny random qwen3 with
// a 32K context: the seeds' settings (-c 16384, q2_0 K and V, default f16
// tiers, 4 slots over one pool) serve one 12K-token conversation, and one
// memory budget holds four 6K-token conversations at once as q2_0 pages
// where the same memory as f16 runs two at a time (the others wait in the
// queue). Every sequence's greedy tokens equal the same prompt decoded alone
// by a scheduler over a one-sequence split cache (the pre-pool layout), in
// the server's prompt chunks: with q2_0, a prompt evaluated in one batch
// reads its earlier positions at f32, whereas in chunks it reads earlier
// chunks through the 2-bit cache, which can change the greedy tokens of a
// random model (it does for one of the 6K prompts here); the chunked run
// alone is the single-sequence run the pool must reproduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "raw_http.h"
#include "scheduler_test_util.h"
#include "server/scheduler.h"

using namespace oscar;
using namespace oscar::server;

namespace {

class PoolScaleTest : public oscar::testing::SchedulerFixture {
 protected:
  // The fixture's model, with a 32K context (the seeds' -c 16384 is then a
  // pool smaller than what one conversation may reach).
  static void SetUpTestSuite() {
    dir_ = new oscar::testing::TempDir();
    const auto r = oscar::testing::run_capture(oscar::testing::kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --ctx 32768 -o " +
                                               dir_->file("m.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
  void SetUp() override {
    SchedulerFixture::SetUp();
    s_.cache_k = s_.cache_v = kv::CacheType::Q2_0;  // default tiers: sink 512, recent 2048
  }
  static std::vector<int32_t> prompt_of(int seed, int n) {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back((int32_t)((seed * 41 + i * 13 + (i / 211) * 7) % 250 + 3));
    return p;
  }
  // Submits every prompt at once; their tokens and finish records.
  static std::vector<std::pair<std::vector<int32_t>, Done>> run_together(Scheduler& sch,
                                                                          const std::vector<std::vector<int32_t>>& ps,
                                                                          int n_gen) {
    std::vector<std::shared_ptr<Channel>> chans;
    for (const auto& p : ps) {
      Task t = greedy_task(p, n_gen);
      chans.push_back(t.channel);
      sch.submit(std::move(t));
    }
    std::vector<std::pair<std::vector<int32_t>, Done>> out;
    for (auto& c : chans) out.push_back(collect(*c, std::chrono::seconds(120)));
    return out;
  }
  // The prompt's greedy tokens decoded alone: one slot, a split cache of just
  // enough positions, the same prompt chunks (-ub).
  std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int n_gen) {
    const int n_ctx = (int)prompt.size() + n_gen;
    auto cache = engine_->make_cache(s_, 1, n_ctx);
    EXPECT_FALSE(cache->unified());
    runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
    Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{1, n_ctx, kUbatch}, Logger::quiet());
    return run_together(sch, {prompt}, n_gen)[0].first;
  }
  // The most slots seen processing at once while `body` runs.
  template <class F>
  static int peak_processing(Scheduler& sch, F&& body) {
    std::atomic<bool> done{false};
    std::atomic<int> peak{0};
    std::thread watch([&] {
      while (!done.load()) {
        peak.store(std::max(peak.load(), sch.stats().processing));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    body();
    done.store(true);
    watch.join();
    return peak.load();
  }
  // Four 6000-token conversations submitted together into a pool that the
  // memory of an f16 pool of 16384 positions buys with the cache types in
  // s_ (as --kv-memory sizes it); each checked against its prompt alone.
  // Returns the most slots that processed at once.
  int four_conversations_in_16k_of_f16_memory(int expect_pool_at_least, int expect_pool_below) {
    const int n_ctx_model = 32768;
    tools::RunSettings f16 = s_;
    f16.cache_k = f16.cache_v = kv::CacheType::F16;
    const kv::KvCache::Footprint fp = kv::KvCache::footprint(
        engine_->model().config(), tools::kv_config(f16, 4, n_ctx_model), engine_->quant_table());
    const size_t bytes = fp.fixed_bytes + 16384 * fp.bytes_per_position;
    const int pool = engine_->pool_positions_for_memory(s_, 4, n_ctx_model, bytes);
    EXPECT_GE(pool, expect_pool_at_least);
    EXPECT_LT(pool, expect_pool_below);
    const int n_ctx_slot = std::min(n_ctx_model, pool);
    auto cache = engine_->make_cache(s_, 4, n_ctx_slot, pool);
    EXPECT_LE(cache->bytes_allocated(), bytes);
    runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
    Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{4, n_ctx_slot, kUbatch}, Logger::quiet());
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 4; ++i) prompts.push_back(prompt_of(10 + i, 6000));
    std::vector<std::pair<std::vector<int32_t>, Done>> got;
    const int peak = peak_processing(sch, [&] { got = run_together(sch, prompts, 6); });
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got[i].second.reason, FinishReason::Length) << "conversation " << i;
      EXPECT_EQ(got[i].first, alone(prompts[i], 6)) << "conversation " << i;
    }
    return peak;
  }
  static constexpr int kUbatch = 512;  // the server's default -ub
  static constexpr int kSixK = 24 * 256;  // pages of one 6006-position conversation
};

// -c 16384 with no -np: 4 slots over one 16384-position pool, each slot
// allowed the whole pool (the model's 32K context is larger). A 12K-token
// conversation (three times what -c / 4 would give a slot) is served and
// decodes as it does alone.
TEST_F(PoolScaleTest, SeedsSettingsServeA12KConversation) {
  auto cache = engine_->make_cache(s_, 4, 16384, 16384);
  ASSERT_TRUE(cache->unified());
  EXPECT_EQ(cache->pool_positions(), 16384);
  runtime::Forward fwd(engine_->model(), *cache, engine_->pool(), engine_->forward_options(s_));
  Scheduler sch(engine_->tokenizer(), *cache, fwd, SchedulerConfig{4, 16384, kUbatch}, Logger::quiet());
  const auto p = prompt_of(1, 12000);
  const auto got = run_together(sch, {p}, 8);
  EXPECT_EQ(got[0].second.reason, FinishReason::Length);
  EXPECT_EQ(sch.stats().kv_pool_used_positions, 47 * 256);  // 12008 positions
  EXPECT_EQ(got[0].first, alone(p, 8));
}

// The memory of a 16384-position f16 pool, as q2_0 pages (default f16
// tiers of 4 slots taken off first): room for more than four 6K
// conversations, which all run at once and none is dropped.
TEST_F(PoolScaleTest, FourConversationsOf6KRunTogetherInQ2Pages) {
  const int peak = four_conversations_in_16k_of_f16_memory(4 * kSixK, 1 << 30);
  EXPECT_EQ(peak, 4);
}

// The same memory as f16 holds 16384 positions: two 6K conversations at a
// time. The third and fourth wait in the queue (not refused: each fits the
// pool alone) and run when the first two are done, taking their idle pages.
TEST_F(PoolScaleTest, TheSameMemoryAsF16RunsTwoAndQueuesTheRest) {
  s_.cache_k = s_.cache_v = kv::CacheType::F16;
  const int peak = four_conversations_in_16k_of_f16_memory(16384, 16385);
  EXPECT_EQ(peak, 2);
}

using Json = nlohmann::json;

Json body_of(const std::string& raw) {
  const size_t at = raw.find("\r\n\r\n");
  return at == std::string::npos ? Json() : Json::parse(raw.substr(at + 4), nullptr, false);
}
Json get_json(int port, const std::string& path) {
  return body_of(oscar::testing::raw_exchange(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
}
double metric_value(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(text.c_str() + at + name.size() + 2);
}

// The seeds' command line itself (-c 16384, q2_0 K and V, no -np) on the
// server: 4 slots over one 16384-position pool, each allowed all of it; a
// 12K-token conversation decodes as it does alone. Then (default
// --cache-ram) four short prompts fill the other slots and overwrite its
// slot, so the conversation goes to host memory, and its next turn takes it
// back from there: all 12K positions cached, the hit counted in /props and
// /metrics.
TEST_F(PoolScaleTest, SeedsCommandOnTheServer) {
  oscar::testing::ServerProcess srv;
  ASSERT_EQ(srv.start(oscar::testing::kBin + "/oscar-server",
                      {"-m", s_.model, "-c", "16384", "--cache-type-k", "q2_0", "--cache-type-v", "q2_0", "-t", "2",
                       "--metrics"},
                      dir_->file("seeds.log")),
            "");
  const Json props = get_json(srv.port(), "/props");
  EXPECT_EQ(props["total_slots"], 4);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 16384);
  EXPECT_EQ(props["kv_pool"]["unified"], true);
  EXPECT_EQ(props["kv_pool"]["positions"], 16384);
  EXPECT_EQ(props["prompt_cache_ram"]["limit_mib"], 8192);
  EXPECT_NE(srv.log().find("prompt cache in host memory: up to 8192 MiB"), std::string::npos) << srv.log();

  auto complete = [&](const std::vector<int32_t>& prompt, int n) {
    const Json req = {{"prompt", prompt}, {"n_predict", n}, {"temperature", 0}, {"ignore_eos", true},
                      {"return_tokens", true}};
    return body_of(oscar::testing::raw_exchange(srv.port(), oscar::testing::post_json("/completion", req.dump()),
                                                60000));
  };
  const auto p = prompt_of(1, 12000);
  const Json r = complete(p, 8);
  ASSERT_TRUE(r.contains("tokens")) << r.dump().substr(0, 500);
  const std::vector<int32_t> toks = r["tokens"].get<std::vector<int32_t>>();
  for (int i = 0; i < 4; ++i) (void)complete(prompt_of(20 + i, 30), 2);  // the 4th overwrites the 12K slot
  std::vector<int32_t> next = p;
  next.insert(next.end(), toks.begin(), toks.end());
  const std::vector<int32_t> more = prompt_of(30, 40);
  next.insert(next.end(), more.begin(), more.end());
  const Json r2 = complete(next, 2);
  EXPECT_EQ(r2["timings"]["cache_n"], 12000 + 8 - 1) << r2.dump().substr(0, 500);
  const Json after = get_json(srv.port(), "/props");
  EXPECT_EQ(after["prompt_cache_ram"]["hits"], 1) << after["prompt_cache_ram"].dump();
  EXPECT_GE(after["prompt_cache_ram"]["entries"], 1);
  const std::string m =
      oscar::testing::raw_exchange(srv.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(metric_value(m, "oscar:prompt_cache_ram_hits_total"), 1) << m;
  EXPECT_GT(metric_value(m, "oscar:prompt_cache_ram_bytes"), 0) << m;
  EXPECT_EQ(srv.stop(), 0);
  EXPECT_EQ(toks, alone(p, 8));  // the server's threads are gone: the engine's pool is free
}

}  // namespace
