// Which strings a grammar accepts, after llama.cpp's grammar integration
// cases: a "failing" string is either rejected on the way or incomplete at
// its end. Every case is also run byte by byte, so multi-byte characters
// split between inputs are covered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar_test_util.h"

using oscar::grammar::testing::compile;
using oscar::grammar::testing::full_match;
using oscar::grammar::testing::full_match_bytewise;

namespace {

void check(const std::string& gbnf, const std::vector<std::string>& pass, const std::vector<std::string>& fail) {
  auto g = compile(gbnf);
  for (const auto& s : pass) {
    EXPECT_TRUE(full_match(g, s)) << "should accept: '" << s << "' under\n" << gbnf;
    EXPECT_TRUE(full_match_bytewise(g, s)) << "bytewise, should accept: '" << s << "'";
  }
  for (const auto& s : fail) {
    EXPECT_FALSE(full_match(g, s)) << "should reject: '" << s << "' under\n" << gbnf;
    EXPECT_FALSE(full_match_bytewise(g, s)) << "bytewise, should reject: '" << s << "'";
  }
}

TEST(GrammarConformance, SimpleExpression) {
  check(R"g(
    root ::= expr
    expr ::= term ("+" term)*
    term ::= number
    number ::= [0-9]+)g",
        {"42", "1+2+3+4+5", "123+456"}, {"+", "/ 3", "1+2+3+4+5+", "12a45"});
}

TEST(GrammarConformance, MediumComplexity) {
  check(R"g(
    root ::= expression
    expression ::= term ws (("+"|"-") ws term)*
    term ::= factor ws (("*"|"/") ws factor)*
    factor ::= number | variable | "(" expression ")" | function-call
    number ::= [0-9]+
    variable ::= [a-zA-Z_][a-zA-Z0-9_]*
    function-call ::= variable ws "(" (expression ("," ws expression)*)? ")"
    ws ::= [ \t\n\r]?)g",
        {"42", "1*2*3*4*5", "x", "x+10", "x1+y2", "(a+b)*(c-d)", "func()", "func(x,y+2)", "a*(b+c)-d/e",
         "f(g(x),h(y,z))", "x + 10", "(a + b) * (c - d)", "func(x, y + 2)", "f(g(x), h(y, z))",
         "123*456*789-123/456+789*123"},
        {"+", "/ 3x", "x + + y", "a * / b", "func(,)", "func(x y)", "(a + b", "x + y)", "a + b * (c - d", "42 +",
         "x +", "func(", "func(x, y + 2", "a * (b + c) - d /", "f(g(x), h(y, z)"});
}

TEST(GrammarConformance, AnyCharIsOneCodePoint) {
  check(R"g(root ::= ... "abc" ...)g",
        {"abcabcabc", "aaaabcccc", "\xF0\x9F\x94\xB5\xF0\x9F\x9F\xA0\xE2\x9C\x85" "abc" "\xE2\x9D\x8C\xF0\x9F\x9F\xA0\xF0\x9F\x94\xB5"},
        {"aaabcccc", "aaaaabcccc", "aaaabccc", "aaaabccccc",
         "\xF0\x9F\x94\xB5\xF0\x9F\x9F\xA0" "abc" "\xF0\x9F\x9F\xA0\xF0\x9F\x94\xB5"});
}

TEST(GrammarConformance, Quantifiers) {
  check(R"g(root ::= "a"*)g", {"", "a", "aaaaa", std::string(60, 'a')}, {"b", "ab", "aab", "ba", std::string(60, 'a') + "b"});
  check(R"g(root ::= "a"+)g", {"a", "aaaaa", std::string(60, 'a')}, {"", "b", "ab", "aab", "ba"});
  check(R"g(root ::= "a"?)g", {"", "a"}, {"b", "ab", "aa", "ba"});
  check(R"g(
    root ::= cons+ vowel* cons? (vowel cons)*
    vowel ::= [aeiouy]
    cons ::= [bcdfghjklmnpqrstvwxyz])g",
        {"yes", "no", "noyes", "crwth", "four", "bryyyy"}, {"yess", "yesno", "forty", "catyyy"});
}

TEST(GrammarConformance, BoundedRepetition) {
  check("root ::= [ab]{4}", {"aaaa", "bbbb", "abab"}, {"a", "b", "aaaaa"});
  check("root ::= [ab]{4,}", {"aaaa", "aaaaab", "bbbb", "ababab"}, {"", "aba"});
  check("root ::= [ab]{0,4}", {"", "a", "aa", "aaa", "aaab"}, {"aaaaa"});
  check("root ::= (\"0x\" [A-F0-9]{2} \" \"?){3,5}",
        {"0xFF 0x12 0xAB", "0xFF 0x12 0xAB 0x00 0x00"}, {"", "0xFF", "0xFF 0x12", "0xFF 0x12 0xAB 0x00 0x00 0x00"});
  check("root ::= \"a\"{ 2 , 3 }", {"aa", "aaa"}, {"a", "aaaa"});
}

TEST(GrammarConformance, CharacterClasses) {
  check(R"g(root ::= [^a-z0-9"]+)g", {"ABC", "\xC3\xA9!", "\xF0\x9F\x98\x80"}, {"a", "A1", "\"", ""});
  check(R"g(root ::= [a-] [-b])g", {"a-", "-b", "--"}, {"ab-"});
  check(R"g(root ::= [\u00e0-\u00ff]+)g", {"\xC3\xA0\xC3\xBF"}, {"\xC3\x9F", "a"});
  check(R"g(root ::= .+)g", {"x", "\xE4\xB8\xAD\xE6\x96\x87"}, {""});
}

TEST(GrammarConformance, InvalidUtf8IsRejected) {
  auto g = compile("root ::= .*");
  EXPECT_FALSE(full_match(g, "\x80"));          // stray continuation byte
  EXPECT_FALSE(full_match(g, "\xC0\xAF"));      // overlong
  EXPECT_FALSE(full_match(g, "\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(full_match(g, "\xF5\x80\x80\x80"));
  EXPECT_FALSE(full_match(g, "\xE4\xB8"));      // truncated: not complete yet
  EXPECT_TRUE(full_match(g, "\xE4\xB8\xAD"));
}

TEST(GrammarConformance, PartialCodePointIsPrunedEarly) {
  // Only "é" (C3 A9) is allowed: a lead byte that cannot start it fails at
  // once, the right lead byte is accepted before its continuation arrives.
  oscar::grammar::Matcher m(compile("root ::= \"\xC3\xA9\""));
  EXPECT_FALSE(m.accepts("\xC4"));
  EXPECT_FALSE(m.accepts("\xE3"));
  EXPECT_TRUE(m.accepts("\xC3"));
  ASSERT_TRUE(m.accept("\xC3"));
  EXPECT_FALSE(m.complete());
  EXPECT_FALSE(m.accepts("\xAA"));
  ASSERT_TRUE(m.accept("\xA9"));
  EXPECT_TRUE(m.complete());
}

TEST(GrammarConformance, RejectedInputLeavesStateUnchanged) {
  oscar::grammar::Matcher m(compile(R"g(root ::= "ab" | "ac")g"));
  ASSERT_TRUE(m.accept("a"));
  EXPECT_FALSE(m.accept("bx"));
  EXPECT_TRUE(m.accept("c"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.can_continue());
}

}  // namespace
