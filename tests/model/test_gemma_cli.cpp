// A Gemma 4 model runs in oscar-cli's conversation mode with the real
// Gemma 4 chat template and the real Gemma tokenizer: two turns, the second
// reusing the cached prefix (cut back inside the sliding-window rings).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  return {WEXITSTATUS(st), out};
}

TEST(GemmaCli, Gemma4ConversationWithTheRealTemplate) {
  const fs::path data = OSCAR_TEST_DATA;
  const fs::path tok = data / "tokenizers/gemma3/tokenizer.json";
  const fs::path tmpl = data / "templates/google-gemma-4-31B-it.jinja";
  if (!fs::exists(tok) || !fs::exists(tmpl)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << tok << ", " << tmpl;
  const fs::path dir = fs::temp_directory_path() / ("oscar-gemma-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bin = OSCAR_BIN_DIR, model = (dir / "g4.gguf").string();
  auto [rc0, out0] = sh(bin + "/oscar-mkmodel --arch gemma4 --preset tiny --type q8_0 --embd 64 --per-layer-embd 0 --tokenizer-json " +
                        tok.string() + " -o " + model);
  ASSERT_EQ(rc0, 0) << out0;
  auto [rc, out] = sh("printf 'Hello there, how are you?\\nTell me more.\\n' | " + bin + "/oscar-cli -m " + model +
                      " -cnv --chat-template-file " + tmpl.string() + " -n 12 -c 256 --temp 0");
  fs::remove_all(dir);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("sliding-window layers"), std::string::npos) << out;
  // Turn 1 evaluates everything; turn 2 reuses the start of the first.
  const size_t t1 = out.find("conversation: "), t2 = out.find("conversation: ", t1 + 1);
  ASSERT_NE(t2, std::string::npos) << out;
  const std::string line1 = out.substr(t1, out.find('\n', t1) - t1), line2 = out.substr(t2, out.find('\n', t2) - t2);
  EXPECT_NE(line1.find(", 0 reused from the cache"), std::string::npos) << line1;
  EXPECT_EQ(line2.find(", 0 reused from the cache"), std::string::npos) << line2;
}

}  // namespace
