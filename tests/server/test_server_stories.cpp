// oscar-server on the real trained stories260K model through the official
// OpenAI Node client: generated text, stop strings, streaming, prefix reuse.
#include <gtest/gtest.h>

#include <httplib.h>

#include <filesystem>

#include "client_test_util.h"

using namespace oscar::testing;

TEST(ServerStories, RealModelThroughOpenAiClient) {
  const std::string model = std::string(OSCAR_TEST_DATA) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << model << " not found";
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  TempDir dir;
  ServerProcess srv;
  const std::string err =
      srv.start(kBin + "/oscar-server", {"-m", model, "-c", "1024", "-np", "2", "-t", "2"}, dir.file("s.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("stories.test.mjs", srv, 2, 512);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// A random-weight qwen3 with the real Qwen3 vocabulary and QwQ's template.
TEST(ServerStories, Qwen3VocabularyThinkingTemplateAndTools) {
  const std::string tokenizer = std::string(OSCAR_TEST_DATA) + "/tokenizers/qwen3/tokenizer.json";
  const std::string tmpl = std::string(OSCAR_TEST_DATA) + "/templates/Qwen-QwQ-32B.jinja";
  if (!std::filesystem::exists(tokenizer) || !std::filesystem::exists(tmpl))
    GTEST_SKIP() << "test data absent (see testdata/README.md): " << tokenizer << " or " << tmpl << " not found";
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  TempDir dir;
  const auto mk = run_capture(kBin + "/oscar-mkmodel --arch qwen3 --preset tiny --type q8_0 --tokenizer-json " +
                              tokenizer + " -o " + dir.file("q.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  {
    // /health answers 503 while the 151k-token vocabulary is being built, then 200.
    ServerProcess srv;
    const std::string err =
        srv.start(kBin + "/oscar-server", {"-m", dir.file("q.gguf"), "-c", "1024", "-np", "1", "-t", "2"},
                  dir.file("health.log"), {}, 60000, "listening on http://127.0.0.1:");
    ASSERT_EQ(err, "");
    httplib::Client cli("127.0.0.1", srv.port());
    bool saw_loading = false, saw_ready = false;
    for (int i = 0; i < 3000 && !saw_ready; ++i) {
      auto r = cli.Get("/health");
      if (r && r->status == 503) {
        saw_loading = true;
        EXPECT_NE(r->body.find("\"unavailable_error\""), std::string::npos) << r->body;
        auto m = cli.Get("/v1/models");  // everything else waits for the model too
        if (m && m->status != 200) {
          EXPECT_EQ(m->status, 503);
        }
      }
      if (r && r->status == 200) saw_ready = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(saw_loading) << "never saw /health 503 during loading";
    EXPECT_TRUE(saw_ready) << srv.log();
    EXPECT_EQ(srv.stop(), 0) << srv.log();
  }
  for (const std::string format : {"deepseek", "none"}) {
    ServerProcess srv;
    const std::string err = srv.start(kBin + "/oscar-server",
                                      {"-m", dir.file("q.gguf"), "-c", "4096", "-np", "2", "-t", "2",
                                       "--chat-template-file", tmpl, "--jinja", "--reasoning-format", format},
                                      dir.file("q-" + format + ".log"));
    ASSERT_EQ(err, "");
    const auto [rc, out] = run_node("qwen3.test.mjs", srv, 2, 2048, "OSCAR_REASONING=" + format);
    EXPECT_EQ(rc, 0) << "--reasoning-format " << format << "\n" << out << "\n--- server log ---\n" << srv.log();
    EXPECT_EQ(srv.stop(), 0) << srv.log();
  }
}

// A tiny random-weight Gemma 4 with the real Gemma vocabulary and the
// published Gemma 4 template (the second seed's --chat-template-file).
TEST(ServerStories, Gemma4WithItsPublishedTemplate) {
  const std::string data = OSCAR_TEST_DATA;
  const std::string tokenizer = data + "/tokenizers/gemma3/tokenizer.json";
  const std::string tmpl = data + "/templates/google-gemma-4-31B-it.jinja";
  if (!std::filesystem::exists(tokenizer) || !std::filesystem::exists(tmpl))
    GTEST_SKIP() << "test data absent (see testdata/README.md): " << tokenizer << " or " << tmpl << " not found";
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  TempDir dir;
  const auto mk = run_capture(kBin + "/oscar-mkmodel --arch gemma4 --preset tiny --type q8_0 --tokenizer-json " +
                              tokenizer + " -o " + dir.file("g.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir.file("g.gguf"), "-c", "2048", "-np", "2", "-t", "2",
                                     "--chat-template-file", tmpl, "--jinja", "-ctk", "q2_0", "-ctv", "q2_0"},
                                    dir.file("g.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("gemma4.test.mjs", srv, 2, 1024, "OSCAR_TEMPLATES_DIR=" + data + "/templates");
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}
