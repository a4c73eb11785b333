// oscar-tokenize end to end: output formats, flags and error exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tok_test_util.h"

namespace oscar::tok::testing {
namespace {

struct Result {
  int status;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(OSCAR_BIN_DIR) + "/oscar-tokenize " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string gpt2() { return shared_data() + "/vocab/ggml-vocab-gpt-2.gguf"; }

TEST(OscarTokenizeCli, IdsAndListing) {
  OSCAR_REQUIRE_SHARED_DATA();
  auto r = run("-m " + gpt2() + " -p 'Hello world' --ids");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "[15496, 995]\n");
  r = run("-m " + gpt2() + " -p 'Hello world'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, " 15496 -> 'Hello'\n   995 -> ' world'\n");
}

TEST(OscarTokenizeCli, SpecialTokensAndBos) {
  OSCAR_REQUIRE_SHARED_DATA();
  const std::string spm = shared_data() + "/vocab/ggml-vocab-llama-spm.gguf";
  auto r = run("-m " + spm + " -p 'Hello' --ids");
  EXPECT_EQ(r.out, "[1, 15043]\n");
  r = run("-m " + spm + " -p 'Hello' --ids --no-bos");
  EXPECT_EQ(r.out, "[15043]\n");
  // <|endoftext|> is a control token in GPT-2: parsed by default, text otherwise.
  r = run("-m " + gpt2() + " -p '<|endoftext|>' --ids");
  EXPECT_EQ(r.out, "[50256]\n");
  r = run("-m " + gpt2() + " -p '<|endoftext|>' --ids --no-parse-special");
  EXPECT_NE(r.out, "[50256]\n");
}

TEST(OscarTokenizeCli, FileInputAndTokenizerJson) {
  OSCAR_REQUIRE_SHARED_DATA();
  const std::string path = ::testing::TempDir() + "/oscar-tokenize-input.txt";
  {
    std::ofstream f(path, std::ios::binary);
    f << "Hello world";
  }
  auto r = run("-m " + gpt2() + " -f " + path + " --ids");
  EXPECT_EQ(r.out, "[15496, 995]\n");
  std::filesystem::remove(path);
  r = run("--tokenizer-json " + shared_data() + "/tokenizers/qwen3/tokenizer.json -p '<|im_start|>user' --ids");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "[151644, 872]\n");
}

TEST(OscarTokenizeCli, Errors) {
  auto r = run("-p x");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("-m MODEL.gguf"), std::string::npos);
  r = run("-m /nonexistent.gguf -p x");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("/nonexistent.gguf"), std::string::npos);
  r = run("--bogus");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unknown flag '--bogus'"), std::string::npos);
}

}  // namespace
}  // namespace oscar::tok::testing
