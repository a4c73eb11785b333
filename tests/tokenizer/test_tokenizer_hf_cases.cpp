// Exact-match tests on real tokenizers converted in memory from Hugging Face
// tokenizer.json files (testdata/tokenizers; Gemma 3 only in ../shared/data), against the reference
// ids in tokenizers/*/cases.out and vocab/ggml-vocab-{qwen2,gemma-4}.gguf.out.
// One test per tokenizer: CTest runs each test in its own process and the
// 33 MB Gemma tokenizer.json takes seconds to convert.
#include <gtest/gtest.h>

#include "tok_test_util.h"
#include "tokenizer/hf_tokenizer_json.h"

namespace oscar::tok::testing {
namespace {

Tokenizer load(const std::string& name) {
  const std::string dir = shared_data() + "/tokenizers/" + name;
  return Tokenizer::from_metadata(vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json"));
}

void check_both(const Tokenizer& tok, const std::string& name, const std::string& vocab_case) {
  const std::string out = shared_data() + "/tokenizers/" + name + "/cases.out";
  EXPECT_EQ(check_cases(tok, shared_data() + "/tokenizers/cases.inp", out), (int)read_expected(out).size());
  const std::string base = shared_data() + "/vocab/" + vocab_case;
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
}

TEST(HfTokenizers, Qwen3) {
  OSCAR_REQUIRE_SHARED_DATA();
  const Tokenizer tok = load("qwen3");
  EXPECT_EQ(tok.vocab().model(), "gpt2");
  EXPECT_EQ(tok.vocab().pre(), "qwen2");
  EXPECT_FALSE(tok.vocab().add_bos());
  EXPECT_EQ(tok.vocab().eos(), tok.vocab().find("<|im_end|>"));
  EXPECT_TRUE(tok.vocab().is_eog(tok.vocab().find("<|endoftext|>")));
  check_both(tok, "qwen3", "ggml-vocab-qwen2.gguf");
}

TEST(HfTokenizers, Gemma3) {
  OSCAR_REQUIRE_TEST_FILE("tokenizers/gemma3/tokenizer.json");
  const Tokenizer tok = load("gemma3");
  EXPECT_EQ(tok.vocab().model(), "gemma4");
  EXPECT_TRUE(tok.vocab().add_bos());
  EXPECT_EQ(tok.vocab().bos(), 2);
  EXPECT_FALSE(tok.vocab().add_space_prefix());
  EXPECT_TRUE(tok.vocab().is_eog(tok.vocab().find("<end_of_turn>")));
  check_both(tok, "gemma3", "ggml-vocab-gemma-4.gguf");
}

}  // namespace
}  // namespace oscar::tok::testing
