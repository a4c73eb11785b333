// Token masks over real vocabularies (testdata/): SentencePiece with <0xNN>
// byte-fallback tokens (llama-spm) and byte-level BPE (Qwen3). Each allowed
// token is checked against the grammar through its detokenized text, so the
// token-byte mapping is tested, not just the trie.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf_file.h"
#include "grammar/gbnf_text.h"
#include "grammar/token_constraint.h"
#include "grammar/vocab_bytes.h"
#include "grammar_test_util.h"
#include "tokenizer/hf_tokenizer_json.h"

using namespace oscar;
using oscar::grammar::testing::compile;

namespace {

std::string data(const std::string& rel) { return std::string(OSCAR_TEST_DATA) + "/" + rel; }

// Every allowed token's text keeps "prefix + text" a prefix of some sentence:
// here, of the single sentence `target`.
void check_single_sentence(const tok::Tokenizer& tok, const std::string& target) {
  auto g = compile("root ::= " + grammar::gbnf_literal(target));
  grammar::TokenConstraint c(g, grammar::make_token_trie(tok));
  std::string out;
  int steps = 0;
  while (!c.complete() && steps++ < 64) {
    const auto& mask = c.allowed_mask();
    int32_t longest = -1;
    size_t n_allowed = 0;
    for (size_t id = 0; id < tok.vocab().n_tokens(); ++id) {
      if (!(mask[id >> 6] >> (id & 63) & 1)) continue;
      n_allowed++;
      const std::string piece = tok.token_to_piece((tok::TokenId)id);
      ASSERT_EQ(target.compare(out.size(), piece.size(), piece), 0)
          << "token " << id << " '" << piece << "' allowed after '" << out << "'";
      if (longest < 0 || piece.size() > tok.token_to_piece(longest).size()) longest = (int32_t)id;
    }
    ASSERT_GT(n_allowed, 0u) << "nothing allowed after '" << out << "'";
    // Advance by the longest allowed piece.
    c.accept(longest);
    out += tok.token_to_piece(longest);
  }
  EXPECT_EQ(out, target);
  EXPECT_TRUE(c.allows(tok.vocab().eog_ids().at(0)));
}

TEST(RealVocab, SentencePieceByteFallback) {
  const std::string path = data("vocab/ggml-vocab-llama-spm.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "test data absent (see testdata/README.md): " << path;
  const auto f = gguf::GgufFile::open(path);
  const tok::Tokenizer tok = tok::Tokenizer::from_metadata(f.metadata());
  // The emoji has no piece of its own: only byte-fallback tokens spell it.
  check_single_sentence(tok, " Hello \xF0\x9F\xA6\x99 w\xC3\xB6rld");
  // A lone byte token is allowed where the grammar's code point starts with it.
  auto g = compile("root ::= [\\U0001F980-\\U0001F9FF]");
  grammar::TokenConstraint c(g, grammar::make_token_trie(tok));
  const tok::TokenId f0 = tok.vocab().byte_token(0xF0);
  ASSERT_NE(f0, tok::kNoToken);
  EXPECT_TRUE(c.allows(f0));
  EXPECT_FALSE(c.allows(tok.vocab().byte_token(0xE2)));
}

TEST(RealVocab, Qwen3ByteLevelBpe) {
  const std::string dir = data("tokenizers/qwen3");
  if (!std::filesystem::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "test data absent (see testdata/README.md): " << dir;
  const tok::Tokenizer tok = tok::Tokenizer::from_metadata(
      tok::vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json"));
  check_single_sentence(tok, "{\"name\": \"J\xC3\xBCrgen\", \"emoji\": \"\xF0\x9F\xA6\x99\"}");
  // Control tokens (<|im_start|>) print nothing and are never allowed.
  auto g = compile("root ::= .*");
  grammar::TokenConstraint c(g, grammar::make_token_trie(tok));
  const tok::TokenId im_start = tok.vocab().find("<|im_start|>");
  ASSERT_NE(im_start, tok::kNoToken);
  EXPECT_FALSE(c.allows(im_start));
}

}  // namespace
