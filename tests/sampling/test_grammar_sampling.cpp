// The sampler under a grammar: every generated string is a sentence of the
// grammar and ends with end-of-generation; the fast path (checking the most
// likely tokens one by one) picks exactly what masking the logits would.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "sampling/sampler.h"

namespace oscar::sampling {
namespace {

constexpr int32_t kEos = 0;

// A vocabulary of short random strings over a few letters, "é" and its two
// bytes apart, "{", "}", ",", '"', plus EOS at id 0.
std::vector<std::string> make_vocab(int n, uint32_t seed) {
  const std::vector<std::string> atoms = {"a", "b", "c", "x", "{", "}", ",", "\"", " ", "\xC3\xA9", "\xC3", "\xA9"};
  std::mt19937 rng(seed);
  std::vector<std::string> v = {""};
  for (const auto& a : atoms) v.push_back(a);
  while ((int)v.size() < n) {
    std::string s;
    const int len = 1 + (int)(rng() % 4);
    for (int i = 0; i < len; ++i) s += atoms[rng() % atoms.size()];
    v.push_back(s);
  }
  return v;
}

std::shared_ptr<const grammar::TokenTrie> trie(const std::vector<std::string>& v) {
  return std::make_shared<const grammar::TokenTrie>(v, std::vector<int32_t>{kEos});
}

std::vector<float> random_logits(std::mt19937& rng, int n) {
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> l((size_t)n);
  for (auto& x : l) x = d(rng);
  return l;
}

// Generates until EOS (or a cap); returns the text and whether EOS ended it.
std::pair<std::string, bool> generate(const SamplerSettings& s, const std::vector<std::string>& vocab, uint32_t seed) {
  Sampler smp(s, trie(vocab));
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < 200; ++i) {
    const auto l = random_logits(rng, (int)vocab.size());
    const int32_t t = smp.sample(l.data(), (int)vocab.size());
    smp.accept(t);
    if (t == kEos) return {out, true};
    out += vocab[(size_t)t];
  }
  return {out, false};
}

const char* kList = R"g(
root ::= "{" item ("," " "? item)* "}"
item ::= "\"" [abcé]{1,6} "\""
)g";

TEST(GrammarSampling, OutputsAreSentencesOfTheGrammar) {
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(kList));
  const auto vocab = make_vocab(300, 1);
  for (int mode = 0; mode < 3; ++mode) {
    for (uint32_t seed = 0; seed < 40; ++seed) {
      SamplerSettings s;
      s.grammar = g;
      s.seed = seed;
      if (mode == 0) s.temperature = 0;  // greedy
      if (mode == 2) s.top_k = 0;        // full mask path
      const auto [text, ended] = generate(s, vocab, seed * 7 + 1);
      grammar::Matcher m(g);
      EXPECT_TRUE(m.accept(text) && m.complete()) << "mode " << mode << " seed " << seed << ": " << text;
      // The random logits favour nothing; the list still has to close, and
      // once it does only EOS is allowed.
      if (m.complete() && !m.can_continue()) {
        EXPECT_TRUE(ended) << text;
      }
    }
  }
}

TEST(GrammarSampling, FastPathEqualsMaskingTheLogits) {
  // root ::= [abc]+ : a token is allowed iff all its bytes are a, b or c.
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= [abc]+"));
  const auto vocab = make_vocab(400, 2);
  for (int top_k : {1, 3, 40}) {
    SamplerSettings s;
    s.top_k = top_k;
    s.seed = 99;
    SamplerSettings with_grammar = s;
    with_grammar.grammar = g;
    Sampler a(with_grammar, trie(vocab)), b(s);
    std::mt19937 rng(5);
    for (int i = 0; i < 100; ++i) {
      auto l = random_logits(rng, (int)vocab.size());
      l[kEos] = -INFINITY;
      auto masked = l;
      for (size_t id = 1; id < vocab.size(); ++id)
        if (vocab[id].find_first_not_of("abc") != std::string::npos) masked[id] = -INFINITY;
      const int32_t ta = a.sample(l.data(), (int)l.size());
      const int32_t tb = b.sample(masked.data(), (int)l.size());
      ASSERT_EQ(ta, tb) << "top_k " << top_k << " step " << i;
      a.accept(ta);
      b.accept(tb);
    }
  }
}

TEST(GrammarSampling, PromptTokensDoNotAdvanceTheGrammar) {
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= \"x\""));
  const auto vocab = make_vocab(50, 3);
  SamplerSettings s;
  s.grammar = g;
  s.temperature = 0;
  Sampler smp(s, trie(vocab));
  smp.accept(1);  // "a" from the prompt: history only
  std::vector<float> l(vocab.size(), 0.0f);
  const int32_t t = smp.sample(l.data(), (int)l.size());
  EXPECT_EQ(vocab[(size_t)t], "x");
  smp.accept(t);
  EXPECT_TRUE(smp.grammar_complete());
  EXPECT_EQ(smp.sample(l.data(), (int)l.size()), kEos);
}

TEST(GrammarSampling, NoAllowedTokenEndsGeneration) {
  // The vocabulary cannot spell "q": end instead of breaking the grammar.
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= \"q\""));
  const auto vocab = make_vocab(50, 4);
  SamplerSettings s;
  s.grammar = g;
  Sampler smp(s, trie(vocab));
  std::vector<float> l(vocab.size(), 1.0f);
  EXPECT_EQ(smp.sample(l.data(), (int)l.size()), kEos);
}

TEST(GrammarSampling, LogitRowsPaddedBeyondTheVocabularyNeverPickPadding) {
  // Models often pad the output row past the tokenizer's tokens.
  auto g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= [abc]+"));
  const auto vocab = make_vocab(60, 5);
  for (int top_k : {0, 40}) {
    SamplerSettings s;
    s.grammar = g;
    s.top_k = top_k;
    Sampler smp(s, trie(vocab));
    std::vector<float> l(vocab.size() + 100, 0.0f);
    for (size_t i = vocab.size(); i < l.size(); ++i) l[i] = 50.0f;  // padding wins without the grammar
    const int32_t t = smp.sample(l.data(), (int)l.size());
    ASSERT_LT((size_t)t, vocab.size());
    EXPECT_EQ(vocab[(size_t)t].find_first_not_of("abc"), std::string::npos) << vocab[(size_t)t];
  }
}

TEST(GrammarSampling, GrammarWithoutVocabularyIsAnError) {
  SamplerSettings s;
  s.grammar = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= \"q\""));
  EXPECT_THROW(Sampler{s}, Error);
}

}  // namespace
}  // namespace oscar::sampling
