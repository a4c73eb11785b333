// Unit tests of the engine's pieces and of the ChatTemplate API. Expected
// strings were checked against Python 3 / jinja2 3.1.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "chat/json_io.h"
#include "chat/value.h"
#include "test_util.h"

namespace oscar::chat {
namespace {

using nlohmann::ordered_json;

TEST(JinjaValue, FloatReprMatchesPython) {
  EXPECT_EQ(format_float(1.0), "1.0");
  EXPECT_EQ(format_float(0.1), "0.1");
  EXPECT_EQ(format_float(1e16), "1e+16");
  EXPECT_EQ(format_float(1e15), "1000000000000000.0");
  EXPECT_EQ(format_float(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(format_float(0.0001), "0.0001");
  EXPECT_EQ(format_float(0.00001), "1e-05");
  EXPECT_EQ(format_float(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(format_float(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(format_float(5e-324), "5e-324");
  EXPECT_EQ(format_float(-0.0), "-0.0");
  EXPECT_EQ(format_float(INFINITY), "inf");
  EXPECT_EQ(format_float(-INFINITY), "-inf");
  EXPECT_EQ(format_float(NAN), "nan");
}

TEST(JinjaValue, StringReprMatchesPython) {
  EXPECT_EQ(repr_string("abc"), "'abc'");
  EXPECT_EQ(repr_string("it's"), "\"it's\"");
  EXPECT_EQ(repr_string("it's \"q\""), "'it\\'s \"q\"'");
  EXPECT_EQ(repr_string("a\nb\tc\\"), "'a\\nb\\tc\\\\'");
  EXPECT_EQ(repr_string("\x01\x7f"), "'\\x01\\x7f'");
  EXPECT_EQ(repr_string("é你👋"), "'é你👋'");
  EXPECT_EQ(repr_string("\xc2\xa0\xe2\x80\x8b"), "'\\xa0\\u200b'");
}

TEST(JinjaValue, JsonDumpMatchesPythonJsonDumps) {
  ordered_json j = ordered_json::parse(R"({"b": [1, 2.5, null, true], "a": {"x": "é\n\u0001"}, "e": [], "o": {}})");
  const Value v = value_from_json(j);
  JsonDumpOptions o;
  EXPECT_EQ(dump_json(v, o), R"({"b": [1, 2.5, null, true], "a": {"x": "é\n\u0001"}, "e": [], "o": {}})");
  o.sort_keys = true;
  EXPECT_EQ(dump_json(v, o), R"({"a": {"x": "é\n\u0001"}, "b": [1, 2.5, null, true], "e": [], "o": {}})");
  o = {};
  o.indent = "  ";
  EXPECT_EQ(dump_json(value_from_json(ordered_json::parse(R"({"a": [1, {}], "b": []})")), o),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  o = {};
  o.ensure_ascii = true;
  EXPECT_EQ(dump_json(Value("é👋\x7f"), o), "\"\\u00e9\\ud83d\\udc4b\\u007f\"");
  EXPECT_THROW(dump_json(Value(), JsonDumpOptions{}), TemplateError);
}

TEST(JinjaValue, EqualityFollowsPython) {
  EXPECT_TRUE(values_equal(Value(1), Value(1.0)));
  EXPECT_TRUE(values_equal(Value(true), Value(1)));
  EXPECT_FALSE(values_equal(Value("1"), Value(1)));
  EXPECT_FALSE(values_equal(Value::make_list({Value(1)}), Value::make_list({Value(1)}, true)));  // [1] != (1,)
  EXPECT_TRUE(values_equal(Value(), Value()));
  EXPECT_FALSE(values_equal(Value(), Value::none()));
}

TEST(ChatTemplateApi, DefaultsLikeTransformers) {
  // tools and documents are defined (as None); add_generation_prompt False.
  ChatTemplate t("{{ tools is defined }} {{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} "
                 "[{{ bos_token }}] {{ bos_token is defined }} [{{ eos_token }}]",
                 "", "</s>");
  EXPECT_EQ(t.render(ordered_json::object()), "True True True False [] False [</s>]");
}

TEST(ChatTemplateApi, ApplyAndExtraVariables) {
  ChatTemplate t("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}{% if enable_thinking is false %}/no_think{% endif %}",
                 "<s>", "</s>");
  ChatInputs in;
  in.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  in.add_generation_prompt = true;
  in.extra = {{"enable_thinking", false}};
  EXPECT_EQ(t.apply(in), "<s><user>hi<assistant>/no_think");
}

TEST(ChatTemplateApi, KeyOrderIsKeptWithOrderedJson) {
  ChatTemplate t("{{ x|tojson }}", "", "");
  ordered_json ctx;
  ctx["x"] = ordered_json::parse(R"({"z": 1, "a": 2})");
  EXPECT_EQ(t.render(ctx), R"({"z": 1, "a": 2})");
  nlohmann::json sorted = {{"x", {{"z", 1}, {"a", 2}}}};
  EXPECT_EQ(t.render(sorted), R"({"a": 2, "z": 1})");
}

TEST(ChatTemplateApi, SyntaxErrorsAtConstruction) {
  try {
    ChatTemplate t("ok\n{% for x in %}", "", "");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), "TemplateSyntaxError");
    EXPECT_EQ(e.line(), 2);
  }
}

TEST(ChatTemplateApi, ConcurrentRendersOfOneTemplate) {
  const ChatTemplate t("{% set ns = namespace(n=0) %}{% for i in range(1000) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
                       "", "");
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (int k = 0; k < 8; ++k) threads.emplace_back([&, k] { out[k] = t.render(ordered_json::object()); });
  for (auto& th : threads) th.join();
  for (const auto& o : out) EXPECT_EQ(o, "499500");
}

TEST(JinjaSemantics, LoopObjectInNestedLoops) {
  // Outer loop variables stay reachable through a saved name.
  EXPECT_EQ(testing::render("{% for a in 'ab' %}{% set outer = loop %}{% for b in 'xy' %}"
                            "{{ outer.index }}{{ loop.index }} {% endfor %}{% endfor %}"),
            "11 12 21 22 ");
}

TEST(JinjaSemantics, WhitespaceControlCombinations) {
  // Verified with jinja2 (trim_blocks + lstrip_blocks).
  EXPECT_EQ(testing::render("<ul>\n  {% for x in [1, 2] %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>"),
            "<ul>\n    <li>1</li>\n    <li>2</li>\n</ul>");
  EXPECT_EQ(testing::render("a\n  {%- if true %}\nb\n  {% endif -%}\n  c"), "ab\nc");
  EXPECT_EQ(testing::render("{% if true %}  x  {% endif %}"), "  x  ");
  EXPECT_EQ(testing::render("  {#- c #}\nx"), "x");
  EXPECT_EQ(testing::render("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");
}

}  // namespace
}  // namespace oscar::chat

namespace oscar::chat {
namespace {

// Where llama-server's template engine is more lenient than jinja2 and
// published templates depend on it (checked against llama.cpp's rendering
// of Firefunction v2 and Functionary v3.1 with no tools): an undefined
// variable concatenated to a string adds nothing, and none filtered by
// selectattr/rejectattr is an empty list. Other uses still fail as in jinja2.
TEST(JinjaLlamaServerShims, UndefinedConcatenatesAsEmptyAndNoneSelectsNothing) {
  using testing::render;
  EXPECT_EQ(render("{{ 'Available:' + '\\n' + functions }}|"), "Available:\n|");
  EXPECT_EQ(render("{{ nope + 'x' }}"), "x");
  EXPECT_EQ(render("{% set tools = none %}{{ tools | selectattr('type', 'equalto', 'code') | list | length > 0 }}"),
                   "False");
  EXPECT_EQ(render("{{ none | rejectattr('type') | list }}"), "[]");
  EXPECT_THROW(render("{{ nope + 1 }}"), TemplateError);
  EXPECT_THROW(render("{{ none | map('upper') | list }}"), TemplateError);
}

}  // namespace
}  // namespace oscar::chat
