// oscar-server on the real trained stories260K model through the official
// OpenAI Node client: generated text, stop strings, streaming, prefix reuse.
#include <gtest/gtest.h>

#include <filesystem>

#include "client_test_util.h"

using namespace oscar::testing;

TEST(ServerStories, RealModelThroughOpenAiClient) {
  const std::string model = std::string(OSCAR_SHARED_DATA) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "shared data absent: " << model << " not found";
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
