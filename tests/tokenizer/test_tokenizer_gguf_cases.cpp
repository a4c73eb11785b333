// Exact-match tests on llama.cpp's test vocabularies stored as GGUF files
// (testdata/vocab/ggml-vocab-{gpt-2,llama-spm}.gguf), read with the
// project's GGUF reader.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/hf_tokenizer_json.h"
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

// A vocabulary converted from tokenizer.json, written to a GGUF file (as
// oscar-mkmodel --tokenizer-json does) and read back, tokenizes the same.
void converted_through_file(const std::string& name, const std::string& vocab_case) {
  const std::string dir = shared_data() + "/tokenizers/" + name;
  const auto kv = vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json");
  const std::string path = ::testing::TempDir() + "/oscar-tok-" + name + ".gguf";
  {
    gguf::GgufWriter w(path);
    w.add_kv("general.architecture", gguf::Value::str("vocab-only"));
    for (const auto& p : kv) w.add_kv(p.key, p.value);
    w.finish();
  }
  const auto f = gguf::GgufFile::open(path);
  const Tokenizer tok = Tokenizer::from_metadata(f.metadata());
  const std::string base = shared_data() + "/vocab/" + vocab_case;
  EXPECT_EQ(check_cases(tok, base + ".inp", base + ".out"), (int)read_expected(base + ".out").size());
  EXPECT_FALSE(tok.vocab().chat_template().empty());
  std::filesystem::remove(path);
}

TEST(GgufVocab, Qwen3ConvertedThroughFile) {
  OSCAR_REQUIRE_SHARED_DATA();
  converted_through_file("qwen3", "ggml-vocab-qwen2.gguf");
}

TEST(GgufVocab, Gemma3ConvertedThroughFile) {
  OSCAR_REQUIRE_TEST_FILE("tokenizers/gemma3/tokenizer.json");
  converted_through_file("gemma3", "ggml-vocab-gemma-4.gguf");
}

}  // namespace
}  // namespace oscar::tok::testing
