// Token-level view of a grammar over a small made-up vocabulary: the
// whole-vocabulary mask (trie walk) agrees with checking tokens one by one,
// tokens that split a UTF-8 character work, end-of-generation tokens are
// allowed exactly when the grammar is complete.
#include <gtest/gtest.h>

#include <random>

#include "grammar/token_constraint.h"
#include "grammar_test_util.h"

using namespace oscar::grammar;
using oscar::grammar::testing::compile;

namespace {

// id: 0 "{", 1 "}", 2 "\"", 3 "a", 4 "ab", 5 "b", 6 " ", 7 "\xC3", 8 "\xA9", 9 "\xC3\xA9",
// 10 "" (a control token), 11 EOS, 12 "{\"", 13 "\"}", 14 "ab" (duplicate text), 15 "x"
std::shared_ptr<const TokenTrie> vocab() {
  std::vector<std::string> b = {"{", "}", "\"", "a", "ab", "b", " ", "\xC3", "\xA9", "\xC3\xA9",
                                "", "</s>", "{\"", "\"}", "ab", "x"};
  return std::make_shared<const TokenTrie>(b, std::vector<int32_t>{11});
}

const char* kObj = "root ::= \"{\" \"\\\"\" [ab\\u00e9]* \"\\\"\" \"}\"";

std::vector<int32_t> mask_ids(const std::vector<uint64_t>& mask, size_t n) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < n; ++i)
    if (mask[i >> 6] >> (i & 63) & 1) out.push_back((int32_t)i);
  return out;
}

TEST(TokenConstraint, MaskAtStart) {
  TokenConstraint c(compile(kObj), vocab());
  EXPECT_EQ(mask_ids(c.allowed_mask(), 16), (std::vector<int32_t>{0, 12}));
  c.accept(12);
  // Inside the string: letters, é whole or its first byte, the closing quote.
  EXPECT_EQ(mask_ids(c.allowed_mask(), 16), (std::vector<int32_t>{2, 3, 4, 5, 7, 9, 13, 14}));
  c.accept(7);  // first byte of é: only its continuation may follow
  EXPECT_EQ(mask_ids(c.allowed_mask(), 16), (std::vector<int32_t>{8}));
  c.accept(8);
  c.accept(13);
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(mask_ids(c.allowed_mask(), 16), (std::vector<int32_t>{11}));
  EXPECT_THROW(c.accept(3), oscar::Error);
}

TEST(TokenConstraint, MaskAgreesWithPerTokenChecksOnRandomWalks) {
  const char* grammars[] = {
      kObj,
      "root ::= (\"a\" | \"ab\" \" \"?)+ \"x\"?",
      "root ::= [^x]{0,5} \"}\"",
  };
  std::mt19937 rng(7);
  for (const char* gbnf : grammars) {
    auto g = compile(gbnf);
    for (int walk = 0; walk < 30; ++walk) {
      TokenConstraint c(g, vocab());
      for (int step = 0; step < 12; ++step) {
        const std::vector<int32_t> allowed = mask_ids(c.allowed_mask(), 16);
        std::vector<int32_t> expected;
        for (int32_t id = 0; id < 16; ++id)
          if (c.allows(id)) expected.push_back(id);
        ASSERT_EQ(allowed, expected) << gbnf << " walk " << walk << " step " << step;
        if (allowed.empty() || (allowed.size() == 1 && allowed[0] == 11)) break;
        const int32_t pick = allowed[rng() % allowed.size()];
        if (pick == 11) break;
        c.accept(pick);
      }
    }
  }
}

TEST(TokenConstraint, EmptyAndControlTokensNeverAllowed) {
  TokenConstraint c(compile("root ::= \"a\"*"), vocab());
  EXPECT_FALSE(c.allows(10));
  EXPECT_TRUE(c.allows(11));  // "" is a sentence: may end at once
  EXPECT_FALSE(c.allows(-1));
  EXPECT_FALSE(c.allows(16));
}

}  // namespace

namespace {

// Masks computed under one generation are found by the next one under the
// same grammar (a shared MaskCache), and are the masks a fresh walk gives.
TEST(MaskCache, SharedAcrossGenerationsUnderOneGrammar) {
  auto g = compile(kObj);
  auto masks = std::make_shared<MaskCache>();
  TokenConstraint first(g, vocab(), masks);
  first.allowed_mask();
  first.accept(12);
  first.allowed_mask();
  EXPECT_EQ(masks->size(), 2u);
  EXPECT_EQ(masks->hits(), 0u);

  TokenConstraint second(g, vocab(), masks);
  const std::vector<int32_t> at_start = mask_ids(second.allowed_mask(), 16);
  second.accept(12);
  const std::vector<int32_t> in_string = mask_ids(second.allowed_mask(), 16);
  EXPECT_EQ(masks->hits(), 2u) << "both states were computed by the first generation";
  EXPECT_EQ(at_start, (std::vector<int32_t>{0, 12}));
  EXPECT_EQ(in_string, (std::vector<int32_t>{2, 3, 4, 5, 7, 9, 13, 14}));
  std::vector<uint64_t> fresh;
  second.compute_mask(fresh);
  EXPECT_EQ(mask_ids(fresh, 16), in_string);
}

// Stack ids are private to a matcher's pool: two generations in different
// states can hold the same ids. The shared cache must key masks by what the
// stacks contain, or the second generation is handed the first one's mask
// (the bug this test was written for: outputs that no longer parsed).
TEST(MaskCache, StatesWithTheSameStackIdsInDifferentMatchersDoNotShareMasks) {
  auto g = compile("root ::= \"{\" ( \"a\" [x]* | \"b\" [y]* ) \"}\"");
  auto v = std::make_shared<const TokenTrie>(std::vector<std::string>{"{", "}", "a", "b", "x", "y", "</s>"},
                                             std::vector<int32_t>{6});
  auto masks = std::make_shared<MaskCache>();
  TokenConstraint first(g, v, masks), second(g, v, masks);
  first.accept(0);
  first.accept(2);  // inside [x]*
  second.accept(0);
  second.accept(3);  // inside [y]*
  EXPECT_NE(first.matcher().state_key(), second.matcher().state_key());
  EXPECT_EQ(mask_ids(first.allowed_mask(), 7), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(mask_ids(second.allowed_mask(), 7), (std::vector<int32_t>{1, 5}));
  // The same state reached in another matcher has the same key.
  TokenConstraint third(g, v, masks);
  third.accept(0);
  third.accept(3);
  third.accept(5);
  EXPECT_EQ(third.matcher().state_key(), second.matcher().state_key());
}

TEST(MaskCache, DropsTheLeastRecentlyUsedBeyondItsCapacity) {
  MaskCache c(2);
  c.put("a", std::make_shared<TokenMask>(1, 1));
  c.put("b", std::make_shared<TokenMask>(1, 2));
  ASSERT_NE(c.find("a"), nullptr);  // a is now the most recent
  c.put("c", std::make_shared<TokenMask>(1, 3));
  EXPECT_EQ(c.find("b"), nullptr);
  ASSERT_NE(c.find("a"), nullptr);
  EXPECT_EQ((*c.find("c"))[0], 3u);
  EXPECT_EQ(c.size(), 2u);
}

// One cache per live grammar: the same grammar object gets the same cache,
// another grammar (even with the same text) its own, and a freed grammar's
// cache is not handed to a new grammar that reuses its address.
TEST(MaskStore, OneCachePerLiveGrammar) {
  MaskStore store(2);
  auto a = compile(kObj);
  auto b = compile(kObj);
  const auto ca = store.for_grammar(a);
  EXPECT_EQ(store.for_grammar(a), ca);
  EXPECT_NE(store.for_grammar(b), ca);
  ca->put("x", std::make_shared<TokenMask>(1, 1));
  const Grammar* old_address = a.get();
  a.reset();
  for (int i = 0; i < 50; ++i) {  // try to get the old address back
    auto c = compile(kObj);
    if (c.get() != old_address) continue;
    EXPECT_EQ(store.for_grammar(c)->find("x"), nullptr);
    break;
  }
  auto d = compile(kObj);
  store.for_grammar(d);
  EXPECT_LE(store.size(), 2u);
}

}  // namespace
