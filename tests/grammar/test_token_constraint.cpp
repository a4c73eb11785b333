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
