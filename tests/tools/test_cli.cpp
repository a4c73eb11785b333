// oscar-cli end to end: completion with --dump-logits, and conversation mode
// (template rendering, prefix reuse across turns, thinking split).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/tmp_dir.h"

namespace {

using oscar::test::TmpDir;

namespace fs = std::filesystem;

// Runs a shell command; returns (exit status, stdout+stderr).
std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  return {WEXITSTATUS(st), out};
}

const std::string kBin = OSCAR_BIN_DIR;

TEST(Cli, DumpLogitsHasTheDocumentedLayout) {
  TmpDir t;
  ASSERT_EQ(sh(kBin + "/oscar-mkmodel --preset tiny -o " + t.file("m.gguf")).first, 0);
  auto [rc, out] = sh(kBin + "/oscar-cli -m " + t.file("m.gguf") + " -p 'the cat' -n 3 --temp 0 -no-cnv --dump-logits " + t.file("d.bin"));
  ASSERT_EQ(rc, 0) << out;
  std::ifstream f(t.file("d.bin"), std::ios::binary);
  int32_t n = 0, v = 0;
  f.read(reinterpret_cast<char*>(&n), 4);
  f.read(reinterpret_cast<char*>(&v), 4);
  EXPECT_GT(n, 3);  // the prompt positions plus evaluated generated tokens
  EXPECT_GT(v, 256);
  EXPECT_EQ((long)fs::file_size(t.file("d.bin")), 8L + 4L * n + 4L * n * v);
}

TEST(Cli, ConversationReusesThePrefixAndSplitsThinking) {
  TmpDir t;
  ASSERT_EQ(sh(kBin + "/oscar-mkmodel --preset tiny -o " + t.file("m.gguf")).first, 0);
  // ChatML whose generation prompt opens a think block, as thinking models' templates do.
  std::ofstream(t.file("think.jinja"))
      << "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
         "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}";
  const std::string base = "printf 'hello\\nhow are you\\n' | " + kBin + "/oscar-cli -m " + t.file("m.gguf") +
                           " -n 6 --seed 3 --chat-template-file " + t.file("think.jinja");
  auto [rc, out] = sh(base);
  ASSERT_EQ(rc, 0) << out;
  // Two turns; the second reuses the first turn's tokens from the cache.
  const auto first = out.find("reused from the cache");
  ASSERT_NE(first, std::string::npos) << out;
  const auto second = out.find("reused from the cache", first + 1);
  ASSERT_NE(second, std::string::npos) << out;
  const auto line_start = out.rfind("conversation:", second);
  const int reused = std::atoi(out.substr(out.find(", ", line_start) + 2).c_str());
  EXPECT_GT(reused, 5) << out;
  EXPECT_NE(out.find("[thinking]"), std::string::npos) << out;
  auto [rc2, out2] = sh(base + " --reasoning-format none");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_EQ(out2.find("[thinking]"), std::string::npos) << out2;
}

TEST(Cli, BadInputFailsClearly) {
  TmpDir t;
  auto [rc, out] = sh(kBin + "/oscar-cli -m " + t.file("missing.gguf") + " -p x");
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("cannot open"), std::string::npos) << out;
  ASSERT_EQ(sh(kBin + "/oscar-mkmodel --preset tiny -o " + t.file("m.gguf")).first, 0);
  EXPECT_EQ(sh(kBin + "/oscar-cli -m " + t.file("m.gguf") + " -p x -ctk q3_0").first, 1);
  EXPECT_EQ(sh(kBin + "/oscar-cli -m " + t.file("m.gguf") + " -p x --reasoning-format weird").first, 1);
  EXPECT_EQ(sh(kBin + "/oscar-cli -m " + t.file("m.gguf") + " -p x --bogus").first, 1);
}

}  // namespace
