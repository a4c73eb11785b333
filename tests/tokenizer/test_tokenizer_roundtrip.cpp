// Round trips on the real vocabularies: detokenize(tokenize(x)) == x for
// every case text where the tokenizer is lossless, and the streaming
// detokenizer yields the same text in chunks that are each valid UTF-8.
#include <gtest/gtest.h>

#include <memory>

#include "gguf/gguf_file.h"
#include "tok_test_util.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/unicode.h"

namespace oscar::tok::testing {
namespace {

struct Named {
  std::string name;
  std::unique_ptr<Tokenizer> tok;
};

std::unique_ptr<Tokenizer> from_gguf(const std::string& file) {
  const auto f = gguf::GgufFile::open(shared_data() + "/vocab/" + file);
  return std::make_unique<Tokenizer>(Tokenizer::from_metadata(f.metadata()));
}

std::unique_ptr<Tokenizer> from_hf(const std::string& name) {
  const std::string dir = shared_data() + "/tokenizers/" + name;
  return std::make_unique<Tokenizer>(
      Tokenizer::from_metadata(vocab_metadata_from_hf(dir + "/tokenizer.json", dir + "/tokenizer_config.json")));
}

std::vector<std::string> all_case_texts() {
  auto a = read_cases(shared_data() + "/tokenizers/cases.inp");
  const auto b = read_cases(shared_data() + "/vocab/ggml-vocab-gemma-4.gguf.inp");
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void check_round_trips(const Tokenizer& tok, const std::string& name) {
  int checked = 0;
  for (const std::string& text : all_case_texts()) {
    // NFC may legitimately change text; only NFC-stable texts must survive.
    if (tok.normalizes() && nfc(text) != text) continue;
    // Special tokens parsed from text are rendered back with render_special.
    const auto ids = tok.tokenize(text, false, true);
    EXPECT_EQ(tok.detokenize(ids, false, true), text) << name << ": '" << text << "'";
    // The same with BOS/EOS added and removed again.
    const auto ids2 = tok.tokenize(text, true, true);
    EXPECT_EQ(tok.detokenize(ids2, true, true), text) << name << " (with specials): '" << text << "'";

    StreamDetokenizer stream(tok, true);
    std::string streamed;
    for (TokenId id : ids) {
      const std::string chunk = stream.push(id);
      EXPECT_TRUE(is_valid_utf8(chunk)) << name << ": invalid chunk in '" << text << "'";
      streamed += chunk;
    }
    streamed += stream.finish();
    EXPECT_EQ(streamed, text) << name << " (streamed)";
    ++checked;
  }
  EXPECT_GT(checked, 40) << name;
}

TEST(RoundTrip, Gpt2) {
  OSCAR_REQUIRE_SHARED_DATA();
  check_round_trips(*from_gguf("ggml-vocab-gpt-2.gguf"), "gpt-2");
}

TEST(RoundTrip, LlamaSpm) {
  OSCAR_REQUIRE_SHARED_DATA();
  check_round_trips(*from_gguf("ggml-vocab-llama-spm.gguf"), "llama-spm");
}

TEST(RoundTrip, Qwen3) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto tok = from_hf("qwen3");
  EXPECT_TRUE(tok->normalizes());
  check_round_trips(*tok, "qwen3");
}

TEST(RoundTrip, Gemma3) {
  OSCAR_REQUIRE_TEST_FILE("tokenizers/gemma3/tokenizer.json");
  check_round_trips(*from_hf("gemma3"), "gemma3");
}

// A multi-byte character that the vocabulary splits across byte tokens is
// only emitted once complete.
TEST(RoundTrip, StreamSplitsInsideCharacters) {
  OSCAR_REQUIRE_SHARED_DATA();
  const auto tok = from_gguf("ggml-vocab-gpt-2.gguf");
  const std::string text = "\xF0\x9F\xA6\x99";  // 🦙: several byte-level tokens in GPT-2
  const auto ids = tok->tokenize(text, false, false);
  ASSERT_GT(ids.size(), 1u);
  StreamDetokenizer stream(*tok);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(stream.push(ids[i]), "") << i;
  EXPECT_EQ(stream.push(ids.back()), text);
  EXPECT_EQ(stream.finish(), "");
}

}  // namespace
}  // namespace oscar::tok::testing
