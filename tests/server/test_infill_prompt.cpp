// The /infill prompt, token by token: the repo-level FIM layout, llama-server's
// cuts of prefix, suffix and extra context, the SPM order and BOS placement,
// with vocabularies oscar-mkmodel --fim writes (and stories260K, which names no
// FIM tokens).
#include <gtest/gtest.h>

#include <filesystem>

#include "client_test_util.h"
#include "gguf/gguf_file.h"
#include "server/api_error.h"
#include "server/infill_prompt.h"

using namespace oscar;
using namespace oscar::server;
using oscar::testing::kBin;
using oscar::testing::run_capture;
using oscar::testing::TempDir;

namespace {

tok::Tokenizer make_tokenizer(const TempDir& dir, const std::string& arch, bool fim) {
  const std::string path = dir.file(arch + (fim ? "-fim" : "") + ".gguf");
  const auto r = run_capture(kBin + "/oscar-mkmodel --arch " + arch + " --preset tiny --layers 1 " +
                             (fim ? "--fim " : "") + "-o " + path);
  EXPECT_EQ(r.first, 0) << r.second;
  return tok::Tokenizer::from_metadata(gguf::GgufFile::open(path).metadata());
}

using Ids = std::vector<int32_t>;
Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

class InfillPrompt : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    qwen_ = new tok::Tokenizer(make_tokenizer(*dir_, "qwen3", true));
  }
  static void TearDownTestSuite() {
    delete qwen_;
    delete dir_;
  }
  Ids text(const std::string& s) const { return qwen_->tokenize(s, false, false); }
  static TempDir* dir_;
  static tok::Tokenizer* qwen_;
};
TempDir* InfillPrompt::dir_ = nullptr;
tok::Tokenizer* InfillPrompt::qwen_ = nullptr;

TEST_F(InfillPrompt, FimTokensComeFromTheGgufKeys) {
  const tok::FimTokens& f = qwen_->vocab().fim();
  EXPECT_EQ(f.pre, qwen_->vocab().find("<|fim_prefix|>"));
  EXPECT_EQ(f.suf, qwen_->vocab().find("<|fim_suffix|>"));
  EXPECT_EQ(f.mid, qwen_->vocab().find("<|fim_middle|>"));
  EXPECT_EQ(f.pad, qwen_->vocab().find("<|fim_pad|>"));
  EXPECT_EQ(f.rep, qwen_->vocab().find("<|repo_name|>"));
  EXPECT_EQ(f.sep, qwen_->vocab().find("<|file_sep|>"));
  EXPECT_NE(f.pre, tok::kNoToken);
  EXPECT_NO_THROW(check_fim_support(qwen_->vocab()));
}

TEST_F(InfillPrompt, RepoLevelLayout) {
  const Json body = {{"input_prefix", "def f(x):\n    "},
                     {"input_suffix", "\n    return y\n"},
                     {"prompt", "y = "},
                     {"input_extra", Json::array({{{"filename", "util.py"}, {"text", "X = 1\n"}}, {{"text", "Y"}}})}};
  const InfillInput in = parse_infill_input(body, *qwen_);
  const Ids got = assemble_infill_prompt(*qwen_, in, {2048, -1, 4096, false});
  const tok::FimTokens& f = qwen_->vocab().fim();
  const Ids want = cat({{f.rep}, text("myproject\n"), {f.sep}, text("util.py\n"), text("X = 1\n"), {f.sep},
                        text("tmp\n"), text("Y"), {f.sep}, text("filename\n"), {f.pre}, text("def f(x):\n    "),
                        qwen_->tokenize("y = ", false, true), {f.suf}, text("\n    return y\n"), {f.mid}});
  EXPECT_EQ(got, want);
  // Suffix first with --spm-infill.
  const Ids spm = assemble_infill_prompt(*qwen_, in, {2048, -1, 4096, true});
  const Ids want_spm = cat({{f.rep}, text("myproject\n"), {f.sep}, text("util.py\n"), text("X = 1\n"), {f.sep},
                            text("tmp\n"), text("Y"), {f.sep}, text("filename\n"), {f.suf}, text("\n    return y\n"),
                            {f.pre}, text("def f(x):\n    "), qwen_->tokenize("y = ", false, true), {f.mid}});
  EXPECT_EQ(spm, want_spm);
}

TEST_F(InfillPrompt, CutsFollowLlamaServer) {
  // Token-id inputs make the counts exact: 40 prefix ids, 40 suffix ids.
  Ids prefix, suffix;
  for (int i = 0; i < 40; ++i) prefix.push_back(10 + i), suffix.push_back(100 + i);
  const Json body = {{"input_prefix", prefix}, {"input_suffix", suffix}, {"prompt", ""},
                     {"input_extra", Json::array({{{"filename", "a"}, {"text", std::string(60, 'z')}}})}};
  const InfillInput in = parse_infill_input(body, *qwen_);
  // n_batch 16: the prefix keeps its last 3 * 16/4 = 12, the suffix its first 16/4 - 2 = 2; with
  // n_ctx 40 and n_predict 4 the extra context keeps its last 40 - 16 - 8 = 16 tokens.
  const Ids got = assemble_infill_prompt(*qwen_, in, {16, 4, 40, false});
  const tok::FimTokens& f = qwen_->vocab().fim();
  const Ids extra = cat({{f.rep}, text("myproject\n"), {f.sep}, text("a\n"), text(std::string(60, 'z')), {f.sep},
                         text("filename\n")});
  ASSERT_GE(extra.size(), 16u);
  const Ids want = cat({Ids(extra.end() - 16, extra.end()), {f.pre}, Ids(prefix.end() - 12, prefix.end()), {f.suf},
                        Ids(suffix.begin(), suffix.begin() + 2), {f.mid}});
  EXPECT_EQ(got, want);
  // A prompt eats into the suffix's share; no room leaves the suffix empty; n_predict -1 widens the extra.
  const Json body2 = {{"input_prefix", prefix}, {"input_suffix", suffix}, {"prompt", "ab"}};
  const InfillInput in2 = parse_infill_input(body2, *qwen_);
  const Ids p2 = qwen_->tokenize("ab", false, true);
  const Ids got2 = assemble_infill_prompt(*qwen_, in2, {16, -1, 17, false});
  const Ids extra2 = cat({{f.rep}, text("myproject\n"), {f.sep}, text("filename\n")});
  const size_t n_extra2 = std::min<size_t>(extra2.size(), 17 - 16 + 2);
  const size_t n_suf2 = std::max<int>(0, 4 - 2 - (int)p2.size());
  EXPECT_EQ(got2, cat({Ids(extra2.end() - (long)n_extra2, extra2.end()), {f.pre}, Ids(prefix.end() - 12, prefix.end()),
                       p2, {f.suf}, Ids(suffix.begin(), suffix.begin() + (long)n_suf2), {f.mid}}));
}

TEST_F(InfillPrompt, BosFollowsTheExtraContext) {
  const tok::Tokenizer llama = make_tokenizer(*dir_, "llama", true);
  ASSERT_TRUE(llama.vocab().add_bos());
  const InfillInput in = parse_infill_input({{"input_prefix", "a"}, {"input_suffix", "b"}}, llama);
  const Ids got = assemble_infill_prompt(llama, in, {2048, -1, 4096, false});
  const tok::FimTokens& f = llama.vocab().fim();
  const auto t = [&](const std::string& s) { return llama.tokenize(s, false, false); };
  EXPECT_EQ(got, cat({{f.rep}, t("myproject\n"), {f.sep}, t("filename\n"), {llama.vocab().bos()}, {f.pre}, t("a"),
                      {f.suf}, t("b"), {f.mid}}));
}

TEST_F(InfillPrompt, BadInputAndModelsWithoutFimTokens) {
  auto status = [&](const Json& body) {
    try {
      parse_infill_input(body, *qwen_);
    } catch (const ApiError& e) {
      return e.status();
    }
    return 200;
  };
  EXPECT_EQ(status({{"input_suffix", ""}}), 400);
  EXPECT_EQ(status({{"input_prefix", ""}}), 400);
  EXPECT_EQ(status({{"input_prefix", 3}, {"input_suffix", ""}}), 400);
  EXPECT_EQ(status({{"input_prefix", Json::array({-1})}, {"input_suffix", ""}}), 400);
  EXPECT_EQ(status({{"input_prefix", Json::array({1 << 20})}, {"input_suffix", ""}}), 400);
  EXPECT_EQ(status({{"input_prefix", ""}, {"input_suffix", ""}, {"input_extra", "x"}}), 400);
  EXPECT_EQ(status({{"input_prefix", ""}, {"input_suffix", ""}, {"input_extra", Json::array({{{"filename", "a"}}})}}), 400);
  EXPECT_EQ(status({{"input_prefix", ""}, {"input_suffix", ""}, {"prompt", 5}}), 400);
  EXPECT_EQ(status({{"input_prefix", Json::array({"a", 5})}, {"input_suffix", ""}}), 200);

  const tok::Tokenizer plain = make_tokenizer(*dir_, "qwen3", false);
  try {
    check_fim_support(plain.vocab());
    FAIL() << "no error for a vocabulary without FIM tokens";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("prefix token is missing"), std::string::npos) << e.what();
  }
  const std::string stories = std::string(OSCAR_TEST_DATA) + "/models/stories260K.gguf";
  if (std::filesystem::exists(stories)) {
    const auto t = tok::Tokenizer::from_metadata(gguf::GgufFile::open(stories).metadata());
    EXPECT_THROW(check_fim_support(t.vocab()), ApiError);
  }
}

}  // namespace
