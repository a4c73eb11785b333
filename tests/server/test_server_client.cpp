// oscar-server end to end with the official OpenAI Node client: API shapes,
// streaming, determinism under concurrency, cancellation, bad input, API
// keys, a bounded load test, the q2_0 (OSCAR) cache, and clean shutdown on
// SIGTERM. Models are random-weight ones from oscar-mkmodel.
#include <gtest/gtest.h>

#include "client_test_util.h"

using namespace oscar::testing;

namespace {

class ServerClient : public TinyModelClientSuite<ServerClient> {};

TEST_F(ServerClient, OpenAiApiSurface) {
  ServerProcess srv;
  // 4 slots of 2048 positions each (split: the model's context is 512): long
  // enough that cancelled generations are still running when cut.
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", model(), "-c", "8192", "-np", "4", "-t", "2", "--metrics",
                                     "--no-kv-unified"},
                                    dir_->file("api.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("api.test.mjs", srv, 4, 2048);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerClient, ApiKey) {
  ServerProcess srv;
  std::ofstream(dir_->file("keys.txt")) << "first-key\nsecret-key-123\n";
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", model(), "-c", "1024", "-np", "1", "-t", "2", "--metrics",
                                     "--api-key-file", dir_->file("keys.txt"), "-a", "my-model", "--no-webui",
                                     "--threads-http", "8", "--timeout", "30", "--jinja"},
                                    dir_->file("auth.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("auth.test.mjs", srv, 1, 1024, "OSCAR_API_KEY=secret-key-123");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerClient, LoadTest) {
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server", {"-m", model(), "-c", "4096", "-np", "8", "-t", "2"},
                                    dir_->file("load.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("load.mjs", srv, 8, 512, "OSCAR_LOAD_N=300 OSCAR_LOAD_C=8");
  std::printf("%s", out.c_str());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerClient, Q2CacheWithOscarEnvironment) {
  ServerProcess srv;
  // Small sink/recent tiers so a short generation already spans all three.
  const std::string err = srv.start(
      kBin + "/oscar-server",
      {"-m", model(), "-c", "2048", "-np", "4", "-t", "2", "-fa", "on", "--cache-type-k", "q2_0", "--cache-type-v",
       "q2_0", "--metrics"},
      dir_->file("q2.log"),
      {{"LLAMA_KV_FUSED_FA", "1"}, {"LLAMA_KV_NO_HADAMARD", "0"}, {"LLAMA_KV_CLIP_RATIO", "0.96"},
       {"LLAMA_KV_HP_SINK", "4"}, {"LLAMA_KV_HP_RECENT", "8"}});
  ASSERT_EQ(err, "");
  EXPECT_NE(srv.log().find("q2_0"), std::string::npos) << srv.log();
  const auto [rc, out] = run_node("q2.test.mjs", srv, 4, 512);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// The unified KV pool as the seeds' command uses it (-c, no -np): a model
// with a 4096-position context, -c 2048 over the default 4 slots; then the
// same with --no-kv-unified (2048 / 4 per slot).
TEST_F(ServerClient, UnifiedKvPoolAndSplit) {
  const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --ctx 4096 -o " + dir_->file("ctx4k.gguf"));
  ASSERT_EQ(r.first, 0) << r.second;
  for (bool split : {false, true}) {
    ServerProcess srv;
    std::vector<std::string> args = {"-m", dir_->file("ctx4k.gguf"), "-c", "2048", "-t", "2", "--cache-type-k", "q2_0",
                                     "--cache-type-v", "q2_0"};
    if (split) args.push_back("--no-kv-unified");
    const std::string err = srv.start(kBin + "/oscar-server", args, dir_->file(split ? "split.log" : "pool.log"));
    ASSERT_EQ(err, "");
    if (!split) {
      EXPECT_NE(srv.log().find("as q2_0"), std::string::npos) << srv.log();  // the pool's capacity line
    }
    const auto [rc, out] = run_node("kv_pool.test.mjs", srv, 4, split ? 512 : 2048, split ? "OSCAR_SPLIT=1" : "");
    EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
    EXPECT_EQ(srv.stop(), 0) << srv.log();
  }
}

// Shared prompt prefixes in the pool (the seeds' cache types and default
// f16 tiers): two conversations with a common 1500-token start, through the
// openai client's usage.prompt_tokens_details.cached_tokens.
TEST_F(ServerClient, SharedPromptPrefixIsCachedTokens) {
  const auto r = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --ctx 4096 -o " + dir_->file("share.gguf"));
  ASSERT_EQ(r.first, 0) << r.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir_->file("share.gguf"), "-c", "8192", "-t", "2", "--cache-type-k", "q2_0",
                                     "--cache-type-v", "q2_0", "--metrics"},
                                    dir_->file("share.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("kv_prefix_sharing.test.mjs", srv, 4, 4096);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_NE(srv.log().find("shares 1500 cached positions"), std::string::npos) << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(ServerClient, SigtermFinishesRunningStreamsThenExits) {
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server", {"-m", model(), "-c", "2048", "-np", "2", "-t", "2"},
                                    dir_->file("sig.log"));
  ASSERT_EQ(err, "");
  const std::string cmd = "cd '" + kJsDir + "' && OSCAR_URL=" + srv.url() + " timeout 60 node sigterm_client.mjs";
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char line[4096];
  while (fgets(line, sizeof line, p)) {
    out += line;
    if (std::string(line).rfind("STARTED", 0) == 0) srv.signal(SIGTERM);
  }
  const int st = pclose(p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  EXPECT_NE(out.find("COMPLETE finish=length"), std::string::npos) << out;
  EXPECT_EQ(srv.wait_exit(15000), 0) << srv.log();
}

// --kv-memory sizes the pool: the tiny model's f16 K and V cost 512 bytes a
// position (2 layers x 2 x 2 heads x 32 x 2 bytes), so 1 MiB holds 2048;
// a size that is not one, or one with --no-kv-unified, is refused by name.
TEST_F(ServerClient, KvMemorySizesThePool) {
  ServerProcess srv;
  ASSERT_EQ(srv.start(kBin + "/oscar-server", {"-m", model(), "--kv-memory", "1MiB", "-t", "2"},
                      dir_->file("kvmem.log")),
            "");
  EXPECT_NE(srv.log().find("one pool of 2048 positions"), std::string::npos) << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
  for (const std::string bad : {"--kv-memory 5XB", "--kv-memory -1GiB", "--kv-memory 1GiB --no-kv-unified"}) {
    const auto r = run_capture("timeout 30 " + kBin + "/oscar-server -m " + model() + " --port 0 " + bad);
    EXPECT_EQ(r.first, 1) << bad;
    EXPECT_NE(r.second.find("--kv-memory"), std::string::npos) << bad << ": " << r.second;
  }
}

TEST_F(ServerClient, StartupErrorsAreClear) {
  const auto r = run_capture("timeout 30 " + kBin + "/oscar-server -m /nonexistent.gguf --port 0");
  EXPECT_EQ(r.first, 1);
  EXPECT_NE(r.second.find("nonexistent"), std::string::npos) << r.second;
  const auto r2 = run_capture("timeout 30 " + kBin + "/oscar-server -m " + model() + " --port 0 -np 0");
  EXPECT_EQ(r2.first, 1);
  EXPECT_NE(r2.second.find("-np"), std::string::npos) << r2.second;
  const auto r3 = run_capture("timeout 30 " + kBin + "/oscar-server --bogus");
  EXPECT_EQ(r3.first, 1);
  EXPECT_NE(r3.second.find("--bogus"), std::string::npos) << r3.second;
}

}  // namespace
