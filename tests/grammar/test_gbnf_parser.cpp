// GBNF syntax: what parses, and the line:column of what does not.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar_test_util.h"

using namespace oscar::grammar;
using oscar::grammar::testing::compile;
using oscar::grammar::testing::full_match;

namespace {

// Parses and expects a GrammarError at (line, column) whose message contains `what`.
void expect_error(const std::string& text, int line, int col, const std::string& what) {
  try {
    parse_gbnf(text);
    ADD_FAILURE() << "parsed but should not: " << text;
  } catch (const GrammarError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), col) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(GbnfParser, AcceptsLlamaCppSyntax) {
  const char* json = R"(
# a comment line
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";
  auto g = compile(json);
  EXPECT_TRUE(full_match(g, R"({"a": [1, 2.5, "x\n", true, null], "b": {}})"));
  EXPECT_FALSE(full_match(g, R"({"a": })"));
}

TEST(GbnfParser, EscapesAndUnicode) {
  auto g = compile("root ::= \"\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\" [\\[\\]] \"ж\"");
  EXPECT_TRUE(full_match(g, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\\"]\xD0\xB6"));
  EXPECT_TRUE(full_match(g, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\\"[\xD0\xB6"));
  EXPECT_FALSE(full_match(g, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\\"x\xD0\xB6"));
}

TEST(GbnfParser, RulesMayBeUsedBeforeDefinitionAndSpanLines) {
  auto g = compile("root ::= a |\n  b\na ::= \"x\"  # trailing comment\nb ::= (\n  \"y\"\n  \"z\"\n)\n");
  EXPECT_TRUE(full_match(g, "x"));
  EXPECT_TRUE(full_match(g, "yz"));
  EXPECT_FALSE(full_match(g, "y"));
}

TEST(GbnfParser, ReportsLineAndColumn) {
  expect_error("root ::= \"a\"\nfoo ::= \"b\" )", 2, 13, "unexpected character ')'");
  expect_error("root ::= \"abc", 1, 14, "unterminated string");
  expect_error("root ::= [a-z", 1, 10, "unterminated character class");
  expect_error("root ::= (\"a\" | \"b\"\n", 2, 1, "expected ')'");
  expect_error("root ::= \"a\"\nx ::= y", 2, 7, "undefined rule 'y'");
  expect_error("root = \"a\"", 1, 6, "expected '::='");
  expect_error("root ::= * \"a\"", 1, 10, "nothing before it");
  expect_error("root ::= \"a\"{3,1}", 1, 18, "below its minimum");
  expect_error("root ::= \"\\q\"", 1, 11, "unknown escape");
  expect_error("root ::= \"\\x4\"", 1, 14, "hex digits");
  expect_error("root ::= [z-a]", 1, 14, "backwards");
  expect_error("root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice");
  expect_error("\n\n  ::= \"a\"", 3, 3, "expected a rule name");
  // Columns count characters, not bytes.
  expect_error("root ::= \"\xC3\xA9\xC3\xA9\" )", 1, 15, "unexpected character");
}

TEST(GbnfParser, RejectsUnusableGrammars) {
  expect_error("a ::= \"x\"", 0, 0, "no 'root' rule");
  expect_error("root ::= root \"a\" | \"b\"", 0, 0, "left recursion");
  expect_error("root ::= a\na ::= b \"x\"\nb ::= c? a\nc ::= \"c\"", 0, 0, "left recursion");
  expect_error("root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ",
               0, 0, "left recursion");
  expect_error("root ::= \"a\"{1000000}", 1, 14, "too large");
  expect_error("root ::= \"\xFF\"", 1, 11, "invalid UTF-8");
  // Deep nesting is refused, not a stack overflow.
  expect_error("root ::= " + std::string(100000, '('), 1, 510, "nested too deeply");
}

TEST(GbnfParser, RepeatingSomethingThatCanBeEmptyIsNotLeftRecursion) {
  // llama.cpp accepts these; the matcher must not loop on them.
  auto g = compile("root ::= ( [x]* )*");
  EXPECT_TRUE(full_match(g, ""));
  EXPECT_TRUE(full_match(g, "xx"));
  EXPECT_FALSE(full_match(g, "y"));
  auto h = compile("root ::= (\"a\"?)* \"b\"");
  EXPECT_TRUE(full_match(h, "aab"));
  EXPECT_FALSE(full_match(h, "aa"));
}

TEST(GbnfParser, EmptyAlternativesAndEmptyLiteral) {
  auto g = compile("root ::= \"\" | \"a\" |");
  EXPECT_TRUE(full_match(g, ""));
  EXPECT_TRUE(full_match(g, "a"));
  EXPECT_FALSE(full_match(g, "aa"));
}

}  // namespace
