// The other APIs llama-server speaks (issue 38), end to end through the
// providers' official Node clients: Anthropic Messages (@anthropic-ai/sdk)
// and OpenAI Responses (openai) against a random-weight model on the q2_0
// (OSCAR) cache; thinking, tools and infill against a scripted model (with
// FIM tokens) served with the published Qwen3 template; embeddings against
// the NumPy reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "client_test_util.h"

using namespace oscar::testing;

namespace {

std::string sdk_missing() {
  const std::string why = node_client_missing();
  if (!why.empty()) return why;
  if (!std::filesystem::exists(kJsDir + "/node_modules/@anthropic-ai/sdk"))
    return "tests/server/js/node_modules/@anthropic-ai/sdk is missing (run scripts/setup-deps.sh)";
  return "";
}

const std::string kQwen3Template = std::string(OSCAR_TEST_DATA) + "/templates/Qwen-Qwen3-0.6B.jinja";

TEST(ServerOtherApis, MessagesResponsesEmbeddingsOnQ2Cache) {
  const std::string why = sdk_missing();
  if (!why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto mk = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny -o " + dir.file("tiny.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir.file("tiny.gguf"), "-c", "1024", "-np", "2", "-t", "2", "-fa", "on",
                                     "-ctk", "q2_0", "-ctv", "q2_0", "--embedding", "--api-key", "k-apis-123"},
                                    dir.file("s.log"));
  ASSERT_EQ(err, "");
  for (const char* script : {"anthropic.test.mjs", "responses.test.mjs", "embeddings.test.mjs",
                             "infill_missing.test.mjs"}) {
    // The key travels as Authorization: Bearer (openai) and as x-api-key (@anthropic-ai/sdk).
    const auto [rc, out] = run_node(script, srv, 2, 512, "OSCAR_API_KEY=k-apis-123");
    EXPECT_EQ(rc, 0) << script << "\n" << out << "\n--- server log ---\n" << srv.log();
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServerOtherApis, ScriptedModelThinkingToolsAndInfill) {
  if (!std::filesystem::exists(kQwen3Template)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << kQwen3Template;
  const std::string why = sdk_missing();
  if (!why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string script = std::string(OSCAR_SOURCE_DIR) + "/tests/server/data/thinking_agent.json";
  const auto mk = run_capture(kBin + "/oscar-mkmodel --preset tiny --layers 1 --ctx 4096 --type f32 --fim --script " + script +
                              " -o " + dir.file("agent.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir.file("agent.gguf"), "-c", "4096", "-np", "2", "-t", "2", "-ctk", "q2_0",
                                     "-ctv", "q2_0", "--chat-template-file", kQwen3Template, "--jinja",
                                     // /infill keeps n_ctx - n_batch + 2 tokens of extra context: room for some
                                     "-b", "512"},
                                    dir.file("s.log"));
  ASSERT_EQ(err, "");
  for (const char* script : {"anthropic_agent.test.mjs", "responses_agent.test.mjs", "embeddings_off.test.mjs",
                             "infill.test.mjs"}) {
    const auto [rc, out] = run_node(script, srv, 2, 2048);
    EXPECT_EQ(rc, 0) << script << "\n" << out << "\n--- server log ---\n" << srv.log();
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Every pooling against the NumPy reference forward pass (float64): a
// random f32 qwen3 served with --pooling none, mean, cls and last; the same
// model made with qwen3.pooling_type = cls (as embedding GGUFs carry it) and
// served without --pooling; and stories260K (llama), whose GGUF names no
// pooling, so it gets the default, last.
TEST(ServerOtherApis, EmbeddingPoolingMatchesNumpyReference) {
  const std::string stories = std::string(OSCAR_TEST_DATA) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(stories)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << stories;
  TempDir dir;
  const std::string tiny = dir.file("tiny32.gguf"), tiny_cls = dir.file("tiny32-cls.gguf");
  for (const std::string& extra : {std::string(" -o ") + tiny, std::string(" --pooling-type 2 -o ") + tiny_cls}) {
    const auto mk = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --type f32" + extra);
    ASSERT_EQ(mk.first, 0) << mk.second;
  }
  struct Served {
    std::string pooling, model, flag;  // flag: the --pooling given (empty: none)
    ServerProcess srv;
  };
  std::vector<Served> servers(6);
  const char* poolings[] = {"none", "mean", "cls", "last"};
  for (size_t i = 0; i < 4; ++i) {
    servers[i].pooling = servers[i].flag = poolings[i];
    servers[i].model = tiny;
  }
  servers[4].pooling = "cls";
  servers[4].model = tiny_cls;
  servers[5].pooling = "last";
  servers[5].model = stories;
  std::string args;
  for (size_t i = 0; i < servers.size(); ++i) {
    Served& s = servers[i];
    std::vector<std::string> flags = {"-m", s.model, "-c", "512", "-np", "1", "-t", "1", "--embedding"};
    if (!s.flag.empty()) flags.insert(flags.end(), {"--pooling", s.flag});
    const std::string err = s.srv.start(kBin + "/oscar-server", flags, dir.file("s" + std::to_string(i) + ".log"));
    ASSERT_EQ(err, "") << s.pooling;
    EXPECT_NE(s.srv.log().find("embeddings: pooling " + s.pooling), std::string::npos) << s.srv.log();
    args += " " + s.srv.url() + " " + s.pooling + " '" + s.model + "'";
  }
  const auto r = run_capture(std::string(OSCAR_PYTHON) + " " + OSCAR_SOURCE_DIR +
                             "/tests/server/embeddings_reference.py" + args);
  EXPECT_EQ(r.first, 0) << r.second;
  for (Served& s : servers) EXPECT_EQ(s.srv.stop(), 0) << s.srv.log();
}

}  // namespace
