// Tokenizer unit tests on small in-memory vocabularies: BPE merge order,
// SentencePiece merges and byte fallback, special-token matching,
// detokenisation round trips, the streaming detokenizer and the errors for
// malformed metadata. No real test data needed.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace oscar::tok {
namespace {

using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

Value strings(const std::vector<std::string>& xs) {
  std::vector<Value> v;
  for (const auto& s : xs) v.push_back(Value::str(s));
  return Value::array(ValueType::STRING, std::move(v));
}
Value ints(const std::vector<int32_t>& xs) {
  std::vector<Value> v;
  for (int32_t x : xs) v.push_back(Value::i32(x));
  return Value::array(ValueType::INT32, std::move(v));
}
Value floats(const std::vector<float>& xs) {
  std::vector<Value> v;
  for (float x : xs) v.push_back(Value::f32(x));
  return Value::array(ValueType::FLOAT32, std::move(v));
}

// A byte-level vocabulary: the 256 byte characters, a few merges, and two
// added tokens (one control, one user-defined).
std::vector<KeyValue> byte_vocab() {
  std::vector<std::string> toks;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_unicode((uint8_t)b));
    toks.push_back(s);
    types.push_back(1);
  }
  const std::string G = "\xC4\xA0";  // "Ġ", the byte-level space
  for (std::string t : {std::string("he"), std::string("ll"), std::string("hell"), std::string("hello"),
                        G + "w", G + "wo", std::string("rl"), G + "wor"}) {
    toks.push_back(t);
    types.push_back(1);
  }
  toks.push_back("<|end|>");
  types.push_back(3);
  toks.push_back("<tool>");
  types.push_back(4);
  const std::vector<std::string> merges = {"h e", "l l", "he ll", "hell o", G + " w", G + "w o", "r l", G + "wo r"};
  return {{"tokenizer.ggml.model", Value::str("gpt2")},
          {"tokenizer.ggml.pre", Value::str("qwen2")},
          {"tokenizer.ggml.tokens", strings(toks)},
          {"tokenizer.ggml.token_type", ints(types)},
          {"tokenizer.ggml.merges", strings(merges)},
          {"tokenizer.ggml.eos_token_id", Value::u32((uint32_t)toks.size() - 2)}};
}

// A SentencePiece vocabulary: <unk>, <s>, </s>, byte tokens, and pieces
// whose scores decide the merge order.
std::vector<KeyValue> spm_vocab() {
  std::vector<std::string> toks = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    toks.push_back(buf);
    types.push_back(6);
    scores.push_back(0);
  }
  const std::vector<std::pair<std::string, float>> pieces = {
      {"\xE2\x96\x81", -1}, {"a", -2}, {"b", -3}, {"c", -4}, {"ab", -5}, {"bc", -1.5f}, {"\xE2\x96\x81" "a", -6}};
  for (const auto& [t, s] : pieces) {
    toks.push_back(t);
    types.push_back(1);
    scores.push_back(s);
  }
  return {{"tokenizer.ggml.model", Value::str("llama")},
          {"tokenizer.ggml.tokens", strings(toks)},
          {"tokenizer.ggml.scores", floats(scores)},
          {"tokenizer.ggml.token_type", ints(types)}};
}

// A Gemma 4 style vocabulary: code-point BPE with ranked merges, ▁ spaces,
// byte tokens and newline-run tokens that are plain (NORMAL) tokens, as in a
// GGUF made by llama.cpp's converter.
std::vector<KeyValue> gemma_vocab() {
  std::vector<std::string> toks = {"<pad>", "<eos>", "<bos>", "<unk>"};
  std::vector<int32_t> types = {3, 3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    toks.push_back(buf);
    types.push_back(6);
  }
  const std::string S = "\xE2\x96\x81";  // ▁
  for (const std::string& t : {S, std::string("a"), std::string("b"), S + "a", std::string("ab"), S + "ab",
                               std::string("\n"), std::string("\n\n")}) {
    toks.push_back(t);
    types.push_back(1);
  }
  std::vector<float> scores(toks.size(), 0.0f);
  return {{"tokenizer.ggml.model", Value::str("gemma4")},
          {"tokenizer.ggml.tokens", strings(toks)},
          {"tokenizer.ggml.scores", floats(scores)},
          {"tokenizer.ggml.token_type", ints(types)},
          {"tokenizer.ggml.merges", strings({"a b", S + " a", S + "a b", "\n \n"})},
          {"tokenizer.ggml.bos_token_id", Value::u32(2)},
          {"tokenizer.ggml.eos_token_id", Value::u32(1)},
          {"tokenizer.ggml.add_space_prefix", Value::boolean(false)}};
}

std::vector<std::string> texts(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::vector<std::string> out;
  for (TokenId id : ids) out.push_back(tok.vocab().text(id));
  return out;
}

TEST(Unicode, Gpt2ByteMapRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    uint8_t back = 0;
    ASSERT_TRUE(unicode_to_byte(byte_to_unicode((uint8_t)b), back)) << b;
    EXPECT_EQ(back, b);
  }
  EXPECT_EQ(byte_to_unicode(' '), 0x120u);  // "Ġ"
  EXPECT_EQ(byte_to_unicode('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(byte_to_unicode('A'), (char32_t)'A');
}

TEST(Unicode, IncompleteTail) {
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xC3\xA9"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\xA6"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\xA6\x99"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("\xE2\x96"), 2u);
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(nfc("cafe\xCC\x81"), "caf\xC3\xA9");  // e + combining acute -> é
  EXPECT_EQ(nfc("plain"), "plain");
}

TEST(ByteBpe, MergesByRank) {
  const Tokenizer tok = Tokenizer::from_metadata(byte_vocab());
  // "r l" (rank 6) fires before "Ġwo r" (rank 7) could, so "Ġwor" never forms.
  EXPECT_EQ(texts(tok, tok.tokenize("hello world", false, false)),
            (std::vector<std::string>{"hello", "\xC4\xA0wo", "rl", "d"}));
}

TEST(ByteBpe, SpecialTokens) {
  const Tokenizer tok = Tokenizer::from_metadata(byte_vocab());
  const TokenId end = tok.vocab().find("<|end|>");
  const TokenId tool = tok.vocab().find("<tool>");
  const auto with = tok.tokenize("hi<|end|><tool>", false, true);
  EXPECT_EQ(with, (std::vector<TokenId>{tok.vocab().find("h"), tok.vocab().find("i"), end, tool}));
  // Control tokens only on request; user-defined ones always.
  const auto without = tok.tokenize("<|end|><tool>", false, false);
  EXPECT_EQ(without.back(), tool);
  EXPECT_EQ(std::count(without.begin(), without.end(), end), 0);
  EXPECT_EQ(tok.detokenize(with), "hi<tool>");
  EXPECT_EQ(tok.detokenize(with, false, true), "hi<|end|><tool>");
  EXPECT_TRUE(tok.vocab().is_eog(end));
}

TEST(ByteBpe, LosslessOnArbitraryBytes) {
  const Tokenizer tok = Tokenizer::from_metadata(byte_vocab());
  std::mt19937 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    std::string s;
    const int n = (int)(rng() % 40);
    for (int i = 0; i < n; ++i) s += (char)(rng() % 256);
    // NFC is on for qwen2, so stick to ASCII-range and raw invalid bytes that
    // NFC leaves alone (invalid UTF-8 is passed through untouched).
    const auto ids = tok.tokenize(s, false, false);
    const std::string back = tok.detokenize(ids);
    if (nfc(s) == s) {
      EXPECT_EQ(back, s) << "iteration " << iter;
    }
  }
}

TEST(Spm, ScoreOrderDummyPrefixAndByteFallback) {
  const Tokenizer tok = Tokenizer::from_metadata(spm_vocab());
  // "abc": bc (-1.5) beats ab (-5); ▁ and a: ▁a (-6) forms after.
  EXPECT_EQ(texts(tok, tok.tokenize("abc", false, false)),
            (std::vector<std::string>{"\xE2\x96\x81" "a", "bc"}));
  // Characters with no piece fall back to their bytes.
  EXPECT_EQ(texts(tok, tok.tokenize("\xC3\xA9", false, false)),
            (std::vector<std::string>{"\xE2\x96\x81", "<0xC3>", "<0xA9>"}));
  const auto with_bos = tok.tokenize("ab", true, false);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos.front(), 1);
}

TEST(Spm, RoundTrip) {
  const Tokenizer tok = Tokenizer::from_metadata(spm_vocab());
  for (const std::string s : {"abc cab", " leading", "two  spaces", "h\xC3\xA9llo \xF0\x9F\xA6\x99", "x\ny"}) {
    EXPECT_EQ(tok.detokenize(tok.tokenize(s, false, false)), s);
    EXPECT_EQ(tok.detokenize(tok.tokenize(s, true, false), true), s);
  }
}

TEST(GemmaBpe, RanksNewlinesAndByteFallback) {
  const Tokenizer tok = Tokenizer::from_metadata(gemma_vocab());
  const std::string S = "\xE2\x96\x81";
  // "a b" (rank 0) fires before "▁ a" (rank 1): " ab" -> ▁ + ab, then "▁a b"
  // can no longer apply.
  EXPECT_EQ(texts(tok, tok.tokenize(" ab", false, false)), (std::vector<std::string>{S, "ab"}));
  EXPECT_EQ(texts(tok, tok.tokenize(" a", false, false)), (std::vector<std::string>{S + "a"}));
  // Newline runs are split off; no dummy prefix; unknown characters -> bytes.
  EXPECT_EQ(texts(tok, tok.tokenize("a\n\nb\xC3\xA9", false, false)),
            (std::vector<std::string>{"a", "\n\n", "b", "<0xC3>", "<0xA9>"}));
  const auto ids = tok.tokenize("ab \n\xC3\xA9", true, false);
  EXPECT_EQ(ids.front(), 2);  // Gemma adds BOS
  EXPECT_EQ(tok.detokenize(ids, true), "ab \n\xC3\xA9");
}

// Byte fallback makes SentencePiece-style vocabularies lossless even on
// malformed UTF-8 (a broken sequence must not swallow a following space).
TEST(Spm, LosslessOnArbitraryBytes) {
  const Tokenizer spm = Tokenizer::from_metadata(spm_vocab());
  const Tokenizer gemma = Tokenizer::from_metadata(gemma_vocab());
  std::mt19937 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s;
    const int n = (int)(rng() % 40);
    for (int i = 0; i < n; ++i) s += (rng() % 4 == 0) ? ' ' : (char)(rng() % 256);
    EXPECT_EQ(spm.detokenize(spm.tokenize(s, false, false)), s) << "iteration " << iter;
    EXPECT_EQ(gemma.detokenize(gemma.tokenize(s, false, false)), s) << "iteration " << iter;
  }
}

TEST(Stream, HoldsBackSplitCharacters) {
  const Tokenizer tok = Tokenizer::from_metadata(spm_vocab());
  // "é🦙" is byte-fallback only: one token per byte.
  const auto ids = tok.tokenize("\xC3\xA9\xF0\x9F\xA6\x99", false, false);
  ASSERT_EQ(ids.size(), 7u);  // ▁ + 2 + 4 bytes
  StreamDetokenizer st(tok);
  std::vector<std::string> chunks;
  for (TokenId id : ids) chunks.push_back(st.push(id));
  EXPECT_EQ(chunks[0], "");  // dummy-prefix space removed
  EXPECT_EQ(chunks[1], "");  // first byte of é held back
  EXPECT_EQ(chunks[2], "\xC3\xA9");
  EXPECT_EQ(chunks[3], "");
  EXPECT_EQ(chunks[4], "");
  EXPECT_EQ(chunks[5], "");
  EXPECT_EQ(chunks[6], "\xF0\x9F\xA6\x99");
  EXPECT_EQ(st.finish(), "");
}

TEST(Stream, ByteLevelAndUnfinishedTail) {
  const Tokenizer tok = Tokenizer::from_metadata(byte_vocab());
  StreamDetokenizer st(tok);
  std::string all;
  const auto ids = tok.tokenize("h\xC3\xA9!", false, false);
  for (TokenId id : ids) {
    const std::string c = st.push(id);
    EXPECT_EQ(utf8_incomplete_tail(c), 0u);
    all += c;
  }
  all += st.finish();
  EXPECT_EQ(all, "h\xC3\xA9!");
  // A sequence cut off at the end of generation still comes out on finish().
  StreamDetokenizer st2(tok);
  EXPECT_EQ(st2.push(tok.vocab().byte_token(0xE2)), "");
  EXPECT_EQ(st2.finish(), "\xE2");
}

// --- malformed metadata ---------------------------------------------------

std::string error_of(const std::vector<KeyValue>& kv) {
  try {
    Tokenizer::from_metadata(kv);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void set(std::vector<KeyValue>& kv, const std::string& key, Value v) {
  for (auto& p : kv)
    if (p.key == key) {
      p.value = std::move(v);
      return;
    }
  kv.push_back({key, std::move(v)});
}

void drop(std::vector<KeyValue>& kv, const std::string& key) {
  std::erase_if(kv, [&](const KeyValue& p) { return p.key == key; });
}

TEST(Malformed, ClearErrors) {
  auto expect_error = [](std::vector<KeyValue> kv, const std::string& needle) {
    const std::string e = error_of(kv);
    EXPECT_NE(e.find(needle), std::string::npos) << "error was: '" << e << "', wanted '" << needle << "'";
  };
  {
    auto kv = byte_vocab();
    drop(kv, "tokenizer.ggml.model");
    expect_error(kv, "'tokenizer.ggml.model' is missing");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.model", Value::str("bert"));
    expect_error(kv, "unsupported 'tokenizer.ggml.model' = 'bert'");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.model", Value::u32(3));
    expect_error(kv, "'tokenizer.ggml.model' must be a string");
  }
  {
    auto kv = byte_vocab();
    drop(kv, "tokenizer.ggml.tokens");
    expect_error(kv, "'tokenizer.ggml.tokens' is missing");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.tokens", ints({1, 2}));
    expect_error(kv, "'tokenizer.ggml.tokens' must be an array of string");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.token_type", ints({1, 1, 1}));
    expect_error(kv, "'tokenizer.ggml.token_type' has 3 entries");
  }
  {
    auto kv = byte_vocab();
    drop(kv, "tokenizer.ggml.merges");
    expect_error(kv, "'tokenizer.ggml.merges' is required");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.merges", strings({"nospace"}));
    expect_error(kv, "'tokenizer.ggml.merges' element 0");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.bos_token_id", Value::u32(999999));
    expect_error(kv, "'tokenizer.ggml.bos_token_id' = 999999 is outside the vocabulary");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.pre", Value::str("klingon"));
    expect_error(kv, "unsupported pre-tokenizer 'tokenizer.ggml.pre' = 'klingon'");
  }
  {
    auto kv = byte_vocab();
    set(kv, "tokenizer.ggml.add_bos_token", Value::boolean(true));
    expect_error(kv, "no BOS token");
  }
  {
    auto kv = spm_vocab();
    drop(kv, "tokenizer.ggml.scores");
    expect_error(kv, "'tokenizer.ggml.scores' is required");
  }
  {
    auto kv = spm_vocab();
    set(kv, "tokenizer.ggml.token_type", ints(std::vector<int32_t>(kv.size() > 0 ? 266 : 0, 9)));
    expect_error(kv, "unknown type 9");
  }
}

// --- tokenizer.json conversion ---------------------------------------------

TEST(HfJson, ConvertsSmallByteLevelTokenizer) {
  const std::string tj = R"({
    "added_tokens": [{"id": 5, "content": "<|x|>", "special": true},
                     {"id": 6, "content": "<tag>", "special": false}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated"},
      {"type": "ByteLevel", "use_regex": false}]},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120a": 4}, "merges": [["a", "b"], ["\u0120", "a"]]}
  })";
  const std::string cfg = R"({"eos_token": "<|x|>", "add_bos_token": false, "chat_template": "{{ x }}"})";
  const auto kv = vocab_metadata_from_hf_text(tj, cfg);
  const Tokenizer tok = Tokenizer::from_metadata(kv);
  EXPECT_EQ(tok.vocab().model(), "gpt2");
  EXPECT_EQ(tok.vocab().pre(), "qwen2");
  EXPECT_EQ(tok.vocab().eos(), 5);
  EXPECT_EQ(tok.vocab().type(5), TokenType::Control);
  EXPECT_EQ(tok.vocab().type(6), TokenType::UserDefined);
  EXPECT_EQ(tok.vocab().chat_template(), "{{ x }}");
  EXPECT_EQ(tok.tokenize("ab a<|x|><tag>", false, true), (std::vector<TokenId>{2, 4, 5, 6}));
}

TEST(HfJson, StreamedVocabAndMerges) {
  // Old-style "a b" merges, a "vocab" key elsewhere that must stay in the
  // tree, and nested arrays in other members.
  const std::string tj = R"({
    "extra": {"vocab": {"zz": 1}, "list": [[1, 2], [3]]},
    "pre_tokenizer": {"type": "ByteLevel", "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}
  })";
  const auto kv = vocab_metadata_from_hf_text(tj, "");
  const Tokenizer tok = Tokenizer::from_metadata(kv);
  EXPECT_EQ(tok.vocab().n_tokens(), 3u);
  EXPECT_EQ(tok.vocab().pre(), "gpt-2");
  EXPECT_EQ(tok.vocab().n_merges(), 1u);
  EXPECT_EQ(tok.tokenize("ab", false, false), (std::vector<TokenId>{2}));
}

TEST(HfJson, RejectsUnsupported) {
  auto err = [](const std::string& j) {
    try {
      vocab_metadata_from_hf_text(j, "");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"model": {"type": "WordPiece", "vocab": {}}})").find("WordPiece"), std::string::npos);
  EXPECT_NE(err(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                   "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "x+"}},
                   "decoder": {"type": "ByteLevel"}})")
                .find("pre-tokenizer regex"),
            std::string::npos);
  EXPECT_NE(err(R"({"model": {"type": "BPE", "vocab": {"a": "x"}}})").find("no integer id"), std::string::npos);
  EXPECT_NE(err(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}})").find("not a pair"),
            std::string::npos);
  EXPECT_THROW(vocab_metadata_from_hf("/nonexistent/tokenizer.json", ""), Error);
  // A field of the wrong JSON type is the file's error, not a crash (tokenizer_json_fuzz found it).
  EXPECT_NE(err(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                   "normalizer": {"type": ["Replace"]}})")
                .find("wrong JSON type"),
            std::string::npos);
}

}  // namespace
}  // namespace oscar::tok
