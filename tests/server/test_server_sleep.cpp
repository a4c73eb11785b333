// --sleep-idle-seconds end to end: after the idle period oscar-server says
// is_sleeping in /props, its resident memory has dropped by about the
// weights' size, requests that need no model (tokenize, props) leave it
// asleep, and the next completion wakes it and answers exactly as before.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "client_test_util.h"

using namespace oscar::testing;
using Json = nlohmann::json;

namespace {

class ServerSleep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // 103 MiB of f32 weights: big enough that giving them back shows in the RSS.
    const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --embd 512 --layers 8 --ffn 2048 -o " +
                               dir_->file("m.gguf"));
    ASSERT_EQ(r.first, 0) << r.second;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static inline TempDir* dir_ = nullptr;
};

long rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long kib = -1;
  while (f >> key) {
    if (key == "VmRSS:") {
      f >> kib;
      break;
    }
    f.ignore(1 << 12, '\n');
  }
  return kib;
}

Json get(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path);
  return r && r->status == 200 ? Json::parse(r->body) : Json();
}
Json post(httplib::Client& c, const std::string& path, const Json& body) {
  auto r = c.Post(path, body.dump(), "application/json");
  return r && r->status == 200 ? Json::parse(r->body) : Json();
}

TEST_F(ServerSleep, IdleServerGivesMemoryBackAndWakesForTheNextRequest) {
  ServerProcess srv;
  ASSERT_EQ(srv.start(kBin + "/oscar-server",
                      {"-m", dir_->file("m.gguf"), "-c", "512", "-np", "1", "-t", "2", "--sleep-idle-seconds", "1"},
                      dir_->file("sleep.log")),
            "");
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(60, 0);
  const Json req = {{"prompt", "hello world"}, {"n_predict", 8}, {"temperature", 0}, {"ignore_eos", true}};
  const Json first = post(c, "/completion", req);
  ASSERT_TRUE(first.contains("content")) << srv.log();
  EXPECT_EQ(get(c, "/props")["is_sleeping"], false);
  const long awake_kib = rss_kib(srv.pid());

  bool sleeping = false;
  for (int i = 0; i < 200 && !sleeping; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sleeping = get(c, "/props")["is_sleeping"] == true;
  }
  ASSERT_TRUE(sleeping) << srv.log();
  const long asleep_kib = rss_kib(srv.pid());
  EXPECT_LT(asleep_kib, awake_kib - 80 * 1024) << "RSS awake " << awake_kib << " KiB, asleep " << asleep_kib;
  EXPECT_NE(srv.log().find("sleeping after 1 s without requests"), std::string::npos) << srv.log();

  // The tokenizer and template stay: no wake-up for them.
  const Json toks = post(c, "/tokenize", {{"content", "hello"}});
  EXPECT_FALSE(toks["tokens"].empty());
  EXPECT_EQ(get(c, "/props")["is_sleeping"], true);

  const Json again = post(c, "/completion", req);
  EXPECT_EQ(again["content"], first["content"]);
  EXPECT_EQ(again["timings"]["cache_n"], 0);  // the cached conversation went with the sleep
  EXPECT_EQ(get(c, "/props")["is_sleeping"], false);
  EXPECT_NE(srv.log().find("awake: weights and KV cache back"), std::string::npos) << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// With --embedding the embedder reads the same weights beside the
// scheduler: an embedding wakes a sleeping server, gets the vector it got
// before the sleep, and the server sleeps again afterwards.
TEST_F(ServerSleep, AnEmbeddingWakesTheWeightsItReads) {
  ServerProcess srv;
  ASSERT_EQ(srv.start(kBin + "/oscar-server",
                      {"-m", dir_->file("m.gguf"), "-c", "512", "-np", "1", "-t", "2", "--embedding",
                       "--sleep-idle-seconds", "1"},
                      dir_->file("sleep-embd.log")),
            "");
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(60, 0);
  auto wait_asleep = [&] {
    for (int i = 0; i < 200; ++i) {
      if (get(c, "/props")["is_sleeping"] == true) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  const Json req = {{"input", "hello world"}, {"model", "m"}};
  const Json first = post(c, "/v1/embeddings", req);
  ASSERT_TRUE(first.contains("data")) << srv.log();
  ASSERT_TRUE(wait_asleep()) << srv.log();
  const Json again = post(c, "/v1/embeddings", req);
  EXPECT_EQ(again["data"][0]["embedding"], first["data"][0]["embedding"]);
  EXPECT_NE(srv.log().find("awake: weights and KV cache back"), std::string::npos) << srv.log();
  EXPECT_TRUE(wait_asleep()) << "the server should sleep again after the embedding";
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerSleep, ZeroSecondsIsRefusedAsByLlamaServer) {
  const auto r = run_capture(kBin + "/oscar-server -m " + dir_->file("m.gguf") + " --sleep-idle-seconds 0");
  EXPECT_NE(r.first, 0);
  EXPECT_NE(r.second.find("--sleep-idle-seconds: cannot be 0"), std::string::npos) << r.second;
}

}  // namespace
