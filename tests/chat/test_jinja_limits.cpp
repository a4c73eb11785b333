// Hostile templates must end with a LimitError (or another TemplateError),
// never hang, exhaust memory or overflow the stack.
#include <gtest/gtest.h>

#include <chrono>

#include "test_util.h"

namespace oscar::chat {
namespace {

// Renders and returns the error kind ("" if it rendered), checking the
// render finished quickly.
std::string error_kind(const std::string& src, RenderLimits limits = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string kind;
  try {
    testing::render(src, nlohmann::ordered_json::object(), limits);
  } catch (const TemplateError& e) {
    kind = e.kind();
  }
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 20.0) << "hostile template took too long: " << src;
  return kind;
}

TEST(JinjaLimits, InfiniteMacroRecursion) {
  EXPECT_EQ(error_kind("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "LimitError");
}

TEST(JinjaLimits, MutualRecursionThroughCaller) {
  EXPECT_EQ(error_kind("{% macro a() %}{% call a() %}{{ caller() }}{% endcall %}{% endmacro %}"
                       "{% call a() %}x{% endcall %}"),
            "LimitError");
}

TEST(JinjaLimits, RecursiveLoopWithoutEnd) {
  EXPECT_EQ(error_kind("{% set x = [[]] %}{% for i in [1] recursive %}{{ loop([1]) }}{% endfor %}"), "LimitError");
}

TEST(JinjaLimits, HugeNestedLoops) {
  RenderLimits l;
  l.max_iterations = 200000;  // the default (2M) takes ~1 s; the mechanism is the same
  EXPECT_EQ(error_kind("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", l),
            "LimitError");
}

TEST(JinjaLimits, RangeCappedLikeSandbox) {
  EXPECT_EQ(error_kind("{{ range(10**9)|length }}"), "OverflowError");
}

TEST(JinjaLimits, EnormousOutput) {
  RenderLimits l;
  l.max_output_bytes = 1 << 20;
  EXPECT_EQ(error_kind("{% for a in range(100000) %}{{ 'x' * 100 }}{% endfor %}", l), "LimitError");
}

TEST(JinjaLimits, StringDoubling) {
  RenderLimits l;
  l.max_output_bytes = 1 << 20;
  EXPECT_EQ(error_kind("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", l),
            "LimitError");
}

TEST(JinjaLimits, StringRepetition) {
  EXPECT_EQ(error_kind("{{ 'x' * 1000000000000 }}"), "LimitError");
  EXPECT_EQ(error_kind("{{ [1, 2] * 1000000000000 }}"), "LimitError");
}

TEST(JinjaLimits, IntegerOverflowIsAnError) {
  EXPECT_EQ(error_kind("{{ 2 ** 200 }}"), "OverflowError");
  EXPECT_EQ(error_kind("{{ 9223372036854775807 + 1 }}"), "OverflowError");
  EXPECT_EQ(error_kind("{{ 99999999999999999999 }}"), "TemplateSyntaxError");
}

TEST(JinjaLimits, DeeplyNestedExpressionsAndBlocks) {
  EXPECT_EQ(error_kind(std::string(5000, '(') + "1" + std::string(5000, ')')), "");  // plain text
  EXPECT_EQ(error_kind("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), "TemplateSyntaxError");
  EXPECT_EQ(error_kind("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"), "TemplateSyntaxError");
  std::string nested;
  for (int i = 0; i < 5000; ++i) nested += "{% if true %}";
  EXPECT_EQ(error_kind(nested), "TemplateSyntaxError");
  EXPECT_EQ(error_kind("{{ " + std::string(5000, '-') + "1 }}"), "TemplateSyntaxError");
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_EQ(error_kind(nots + "1 }}"), "TemplateSyntaxError");
  std::string attrs = "{{ x";
  for (int i = 0; i < 20000; ++i) attrs += ".a";
  EXPECT_EQ(error_kind(attrs + " }}"), "TemplateSyntaxError");
  std::string sum = "{{ 1";
  for (int i = 0; i < 20000; ++i) sum += " + 1";
  EXPECT_EQ(error_kind(sum + " }}"), "TemplateSyntaxError");
  // Chains of realistic length are fine.
  std::string ok = "{{ 0";
  for (int i = 0; i < 100; ++i) ok += " + 1";
  EXPECT_EQ(error_kind(ok + " }}"), "");
}

TEST(JinjaLimits, SelfContainingNamespaceDoesNotRecurseForever) {
  EXPECT_EQ(error_kind("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "LimitError");
  EXPECT_EQ(error_kind("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}"), "TypeError");
}

TEST(JinjaLimits, FilterWorkCountsAgainstIterations) {
  RenderLimits l;
  l.max_iterations = 1000;
  EXPECT_EQ(error_kind("{{ range(5000)|map('string')|join }}", l), "LimitError");
  EXPECT_EQ(error_kind("{% for i in range(500) %}{% for j in range(500) %}{% endfor %}{% endfor %}", l), "LimitError");
}

TEST(JinjaLimits, ErrorsCarryTheTemplateLine) {
  try {
    testing::render("line1\n{% if true %}\n{{ 1 / 0 }}\n{% endif %}");
    FAIL() << "expected an error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), "ZeroDivisionError");
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("template line 3"), std::string::npos) << e.what();
  }
  try {
    testing::render("a\nb\n{% for x in y %}\n");
    FAIL() << "expected an error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), "TemplateSyntaxError");
    EXPECT_GE(e.line(), 3);
  }
  try {
    testing::render("\n\n\n{{ raise_exception('boom') }}");
    FAIL() << "expected an error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.python_style(), "TemplateError: boom");
    EXPECT_EQ(e.line(), 4);
  }
}

}  // namespace
}  // namespace oscar::chat

namespace oscar::chat {
namespace {

// Inputs the fuzzer found; each must fail cleanly with a TemplateError.
TEST(JinjaFuzzFindings, NonIntegerWhereAnIntegerIsNeeded) {
  EXPECT_EQ(error_kind("{{ 'a b'.split(' ', nope) }}"), "UndefinedError");
  EXPECT_EQ(error_kind("{{ 'a b'.split(' ', 1.5) }}"), "TypeError");
  EXPECT_EQ(error_kind("{{ 'x'.center('a') }}"), "TypeError");
  EXPECT_EQ(error_kind("{{ [1, 2]|batch('a')|list }}"), "TypeError");
  EXPECT_EQ(error_kind("{{ 'abc'[1:'x'] }}"), "TypeError");
  EXPECT_EQ(error_kind("{{ '%*d' % ('a', 1) }}"), "TypeError");
}

}  // namespace
}  // namespace oscar::chat

namespace oscar::chat {
namespace {

// Reference cycles through mutable objects are broken at the end of the
// render (checked for leaks by the sanitizer build).
TEST(JinjaFuzzFindings, CyclesAreFreed) {
  EXPECT_EQ(error_kind("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.d = {'x': [ns]} %}"), "");
  EXPECT_EQ(error_kind("{% for x in [1, 2] %}{{ loop.changed(loop) }}{% endfor %}"), "");
}

}  // namespace
}  // namespace oscar::chat
