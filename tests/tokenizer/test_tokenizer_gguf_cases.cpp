// Exact-match tests on llama.cpp's test vocabularies stored as GGUF files
// (../shared/data/vocab/ggml-vocab-{gpt-2,llama-spm}.gguf), read with the
// project's GGUF reader.
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "tok_test_util.h"

namespace oscar::tok::testing {
namespace {

Tokenizer load_gguf(const std::string& name) {
  const auto f = gguf::GgufFile::open(shared_data() + "/vocab/" + name);
  return Tokenizer::from_metadata(f.metadata());
}

TEST(GgufVocab, Gpt2Cases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const Tokenizer tok = load_gguf("ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(tok.vocab().kind(), VocabKind::ByteBpe);
  const std::string base = shared_data() + "/vocab/ggml-vocab-gpt-2.gguf";
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
}

TEST(GgufVocab, LlamaSpmCases) {
  OSCAR_REQUIRE_SHARED_DATA();
  const Tokenizer tok = load_gguf("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(tok.vocab().kind(), VocabKind::Spm);
  EXPECT_EQ(tok.vocab().bos(), 1);
  EXPECT_EQ(tok.vocab().eos(), 2);
  EXPECT_TRUE(tok.vocab().add_bos());
  const std::string base = shared_data() + "/vocab/ggml-vocab-llama-spm.gguf";
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
}

TEST(GgufVocab, LlamaSpmAddsBos) {
  OSCAR_REQUIRE_SHARED_DATA();
  const Tokenizer tok = load_gguf("ggml-vocab-llama-spm.gguf");
  const auto ids = tok.tokenize("Hello world", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(tok.detokenize(ids, /*remove_special=*/true), "Hello world");
}

}  // namespace
}  // namespace oscar::tok::testing
