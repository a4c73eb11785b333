// Exact-match tests on real tokenizers converted in memory from Hugging Face
// tokenizer.json files (../shared/data/tokenizers), against the reference
// ids in tokenizers/*/cases.out and vocab/ggml-vocab-{qwen2,gemma-4}.gguf.out.
#include <gtest/gtest.h>

#include <memory>

#include "tok_test_util.h"
#include "tokenizer/hf_tokenizer_json.h"

namespace oscar::tok::testing {
namespace {

// Converting the 33 MB Gemma tokenizer.json takes a moment; do it once per
// suite rather than per test.
class HfTokenizers : public ::testing::Test {
 protected:
  static const Tokenizer& get(const std::string& name) {
    static std::unique_ptr<Tokenizer> qwen, gemma;
    auto& slot = name == "qwen3" ? qwen : gemma;
    if (!slot) {
      const std::string dir = shared_data() + "/tokenizers/" + name;
      slot = std::make_unique<Tokenizer>(Tokenizer::from_metadata(
          vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json")));
    }
    return *slot;
  }
};

TEST_F(HfTokenizers, Qwen3Cases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto& tok = get("qwen3");
  const auto expected = read_expected(shared_data() + "/tokenizers/qwen3/cases.out");
  EXPECT_EQ(check_cases(tok, shared_data() + "/tokenizers/cases.inp", shared_data() + "/tokenizers/qwen3/cases.out"),
            (int)expected.size());
}

TEST_F(HfTokenizers, Qwen2VocabCases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto& tok = get("qwen3");
  const std::string base = shared_data() + "/vocab/ggml-vocab-qwen2.gguf";
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
}

TEST_F(HfTokenizers, Gemma3Cases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto& tok = get("gemma3");
  const auto expected = read_expected(shared_data() + "/tokenizers/gemma3/cases.out");
  EXPECT_EQ(
      check_cases(tok, shared_data() + "/tokenizers/cases.inp", shared_data() + "/tokenizers/gemma3/cases.out"),
      (int)expected.size());
}

TEST_F(HfTokenizers, Gemma4VocabCases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto& tok = get("gemma3");
  const std::string base = shared_data() + "/vocab/ggml-vocab-gemma-4.gguf";
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
}

}  // namespace
}  // namespace oscar::tok::testing
