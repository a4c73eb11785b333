// oscar-mkmodel --script: the written model's greedy continuation follows the
// script's chains (checked by running it with oscar-cli), switches to the
// after-marker chains wherever the marker sits in the context, ends with EOS
// elsewhere, and malformed scripts are refused with a reason.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/tmp_dir.h"

namespace {

using oscar::test::TmpDir;

namespace fs = std::filesystem;

// Runs a shell command; returns (exit status, output). stderr is kept only
// when asked, so oscar-cli's stdout (prompt + generated text) stays exact.
std::pair<int, std::string> sh(const std::string& cmd, bool with_stderr = true) {
  std::string out;
  FILE* p = ::popen((cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  return {WEXITSTATUS(st), out};
}

const std::string kBin = OSCAR_BIN_DIR;

const char* const kScript = R"({
  "marker": "<result>",
  "chains": [["\n", "<tool_call>", "\n{\"name\": \"f\", ", "\"arguments\": {}}\n", "</tool_call>", "<|im_end|>"],
             ["?", " Let me", " check.", "<|im_end|>"]],
  "chains_after_marker": [["\n", "Done", ", it is 3.", "<|im_end|>"]]
})";

// Greedy continuation of `prompt` (oscar-cli prints the prompt, the text and a newline).
std::string continuation(const std::string& model, const std::string& prompt) {
  const std::string quoted = "'" + prompt + "'";  // prompts below hold no single quote
  auto [rc, out] = sh("printf %s " + quoted + " > " + model + ".prompt && " + kBin + "/oscar-cli -m " + model +
                          " -f " + model + ".prompt -n 40 --temp 0 -no-cnv",
                      false);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.rfind(prompt, 0), 0u) << out;
  return out.substr(std::min(prompt.size(), out.size()));
}

TEST(MkmodelScript, GreedyDecodingFollowsTheChains) {
  TmpDir t;
  const std::string model = t.file("s.gguf");
  auto [rc, out] = sh(kBin + "/oscar-mkmodel --preset tiny --type f32 --script " + t.write("s.json", kScript) +
                      " -o " + model);
  ASSERT_EQ(rc, 0) << out;
  // 292 default tokens + 6 new pieces ("\n", "?" and the tool-call markers exist) + the marker.
  EXPECT_NE(out.find("vocab 299"), std::string::npos) << out;
  EXPECT_NE(out.find("embd 320"), std::string::npos) << out;  // one dimension per token, one for the marker

  EXPECT_EQ(continuation(model, "What now\n"), "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n");
  EXPECT_EQ(continuation(model, "What now?"), " Let me check.\n");
  EXPECT_EQ(continuation(model, "What now"), "\n");  // unscripted: EOS at once
  // The marker switches the "\n" branch wherever it is, even hundreds of tokens back.
  std::string filler;
  for (int i = 0; i < 60; ++i) filler += " and so on";
  EXPECT_EQ(continuation(model, "<result>3</result>" + filler + "\n"), "Done, it is 3.\n");
  // Other chains do not depend on it.
  EXPECT_EQ(continuation(model, "<result>3</result>?"), " Let me check.\n");
}

TEST(MkmodelScript, RefusesScriptsItCannotFollow) {
  TmpDir t;
  auto fails = [&](const std::string& script, const std::string& flags, const std::string& why) {
    auto [rc, out] = sh(kBin + "/oscar-mkmodel " + flags + " --script " + t.write("x.json", script) +
                        " -o " + t.file("x.gguf"));
    EXPECT_EQ(rc, 1) << script;
    EXPECT_NE(out.find(why), std::string::npos) << out;
  };
  // One token cannot lead to two different ones.
  fails(R"({"chains": [["a", "b", "c"], ["a", "d"]]})", "", "followed by two different tokens");
  fails(R"({"chains": [["x", "q", "r", "q", "s"]]})", "", "followed by two different tokens");
  fails(R"({"chains_after_marker": [["a", "b"]]})", "", "needs a 'marker'");
  fails(R"({"chains": [["a"]]})", "", "at least two pieces");
  fails(R"({"chain": [["a", "b"]]})", "", "unknown key");
  fails("[1, 2", "", "not a JSON object");
  fails(R"({"chains": [["a", "b"]]})", "--tied", "no --tied");
  fails(R"({"chains": [["a", "b"]]})", "--arch llama", "qwen3");
}

}  // namespace
