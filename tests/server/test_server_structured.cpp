// Structured output end to end (tests/server/js/structured.test.mjs): a
// random-weight qwen3-shaped model with the real Qwen3 vocabulary and
// template, outputs validated by python3-jsonschema.
#include <gtest/gtest.h>

#include <filesystem>

#include "client_test_util.h"

using namespace oscar::testing;

TEST(ServerStructured, SchemasGrammarsAndForcedToolCallsThroughTheOpenAiClient) {
  const std::string tok = std::string(OSCAR_TEST_DATA) + "/tokenizers/qwen3/tokenizer.json";
  const std::string tmpl = std::string(OSCAR_TEST_DATA) + "/templates/Qwen-Qwen3-0.6B.jinja";
  if (!std::filesystem::exists(tok) || !std::filesystem::exists(tmpl)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << tok;
  const std::string why = node_client_missing();
  if (!why.empty()) GTEST_SKIP() << "oscar-server client tests skipped: " << why;
  TempDir dir;
  const auto mk = run_capture(kBin + "/oscar-mkmodel --preset tiny --layers 1 --type f16 --tokenizer-json " + tok +
                              " -o " + dir.file("m.gguf"));
  ASSERT_EQ(mk.first, 0) << mk.second;
  ServerProcess srv;
  const std::string err = srv.start(kBin + "/oscar-server",
                                    {"-m", dir.file("m.gguf"), "-c", "8192", "-np", "2", "-t", "2",
                                     "--chat-template-file", tmpl, "--jinja"},
                                    dir.file("s.log"));
  ASSERT_EQ(err, "");
  const std::string out_file = dir.file("outputs.json");
  const auto [rc, out] = run_node("structured.test.mjs", srv, 2, 4096, "OSCAR_STRUCTURED_OUT=" + out_file);
  EXPECT_EQ(rc, 0) << out << "\n--- server log ---\n" << srv.log();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
  const auto v = run_capture(std::string(OSCAR_PYTHON) + " " + OSCAR_SOURCE_DIR + "/tests/grammar/validate_json.py " + out_file);
  EXPECT_EQ(v.first, 0) << v.second;
  EXPECT_NE(v.second.find("validated"), std::string::npos) << v.second;
}
