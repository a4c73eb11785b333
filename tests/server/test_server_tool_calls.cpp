// Tool calls end to end through the official OpenAI Node client: a scripted
// model (oscar-mkmodel --script) that really generates a Qwen3-style tool
// call, served with the published Qwen3 template (testdata/).
#include <gtest/gtest.h>

#include <filesystem>

#include "client_test_util.h"

using namespace oscar::testing;

TEST(ServerToolCalls, ScriptedModelCallsAToolAndAnswersWithItsResult) {
  const std::string tmpl = std::string(OSCAR_TEST_DATA) + "/templates/Qwen-Qwen3-0.6B.jinja";
  if (!std::filesystem::exists(tmpl)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << tmpl << " not found";
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  TempDir dir;
  const std::string script = std::string(OSCAR_SOURCE_DIR) + "/tests/server/data/weather_agent.json";
  const auto mk = run_capture(kBin + "/oscar-mkmodel --preset tiny --layers 1 --ctx 4096 --type f32 --script " + script +
                              " -o " + dir.file("agent.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir.file("agent.gguf"), "-c", "4096", "-np", "2", "-t", "2",
                                     "--chat-template-file", tmpl, "--jinja"},
                                    dir.file("s.log"));
  ASSERT_EQ(err, "");
  const auto [rc, out] = run_node("tool_calls.test.mjs", srv, 2, 2048);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}
