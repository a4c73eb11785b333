// Every template x case of testdata/templates/expected.json (what
// transformers renders) must come out byte-identically; error entries must
// fail with the same exception class and message.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "test_util.h"

namespace oscar::chat {
namespace {

using nlohmann::ordered_json;

const std::string kDir = std::string(OSCAR_TEST_DATA) + "/templates";

// Special tokens of each model family, as transformers passes them.
std::pair<std::string, std::string> tokens_for(const std::string& tmpl) {
  if (tmpl.rfind("Qwen", 0) == 0) return {"", "<|im_end|>"};
  if (tmpl.rfind("deepseek", 0) == 0) return {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"};
  if (tmpl.rfind("google", 0) == 0) return {"<bos>", "<eos>"};
  if (tmpl.rfind("meta-llama", 0) == 0) return {"<|begin_of_text|>", "<|eot_id|>"};
  return {"", ""};
}

TEST(ChatTemplates, ExpectedJsonRendersByteIdentically) {
  if (!std::filesystem::exists(kDir + "/expected.json"))
    GTEST_SKIP() << "test data not found at " << kDir << " (see testdata/README.md)";
  const ordered_json expected = ordered_json::parse(testing::read_file(kDir + "/expected.json"));
  const ordered_json cases = ordered_json::parse(testing::read_file(kDir + "/cases.json"));
  int checked = 0;
  std::vector<std::string> missing;  // templates the repository may not carry (testdata/README.md)
  for (auto t = expected.begin(); t != expected.end(); ++t) {
    if (!std::filesystem::exists(kDir + "/" + t.key())) {
      missing.push_back(t.key());
      continue;
    }
    const auto [bos, eos] = tokens_for(t.key());
    ChatTemplateOptions opt;
    opt.now = [] {
      std::tm tm{};
      tm.tm_year = 126, tm.tm_mon = 0, tm.tm_mday = 2, tm.tm_hour = 3, tm.tm_min = 4, tm.tm_sec = 5;
      std::mktime(&tm);
      return tm;
    };
    std::unique_ptr<ChatTemplate> tmpl;
    ASSERT_NO_THROW(tmpl = std::make_unique<ChatTemplate>(testing::read_file(kDir + "/" + t.key()), bos, eos, opt))
        << t.key();
    for (const auto& c : cases) {
      const std::string id = c["id"];
      ASSERT_TRUE(t.value().contains(id)) << t.key() << " lacks case " << id;
      const ordered_json& want = t.value()[id];
      ChatInputs in;
      in.messages = c["messages"];
      if (c.contains("tools")) in.tools = c["tools"];
      in.add_generation_prompt = c.value("add_generation_prompt", false);
      if (c.contains("extra")) in.extra = c["extra"];
      SCOPED_TRACE(t.key() + " / " + id);
      if (want.is_string()) {
        std::string got;
        ASSERT_NO_THROW(got = tmpl->apply(in));
        EXPECT_EQ(got, want.get<std::string>());
      } else {
        try {
          const std::string got = tmpl->apply(in);
          ADD_FAILURE() << "expected error " << want.dump() << " but rendered: " << got;
        } catch (const TemplateError& e) {
          EXPECT_EQ(e.python_style(), want["error"].get<std::string>()) << e.what();
          EXPECT_GT(e.line(), 0);
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked + 10 * (int)missing.size(), 70);
  for (const auto& m : missing)
    std::cout << "not checked: " << m << " is not in testdata/ (not redistributable, see testdata/README.md)"
              << " nor in ../shared/data\n";
}

TEST(ChatTemplates, ToolRendersExpectedJsonFormat) {
  if (!std::filesystem::exists(kDir + "/expected.json"))
    GTEST_SKIP() << "test data not found at " << kDir << " (see testdata/README.md)";
  const std::string exe = std::string(OSCAR_BIN_DIR) + "/oscar-template";
  if (!std::filesystem::exists(exe)) GTEST_SKIP() << "oscar-template not built at " << exe;
  const std::string out_path = ::testing::TempDir() + "/oscar_template_out.json";
  const std::string cmd = "'" + exe + "' --template '" + kDir + "/google-gemma-4-31B-it.jinja' --cases '" + kDir +
                          "/cases.json' --bos '<bos>' --eos '<eos>' > '" + out_path + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const ordered_json got = ordered_json::parse(testing::read_file(out_path));
  const ordered_json expected = ordered_json::parse(testing::read_file(kDir + "/expected.json"));
  EXPECT_EQ(got["google-gemma-4-31B-it.jinja"], expected["google-gemma-4-31B-it.jinja"]);
}

}  // namespace
}  // namespace oscar::chat
