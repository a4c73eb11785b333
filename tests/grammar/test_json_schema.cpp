// JSON Schema -> GBNF: accepted and rejected texts per schema (after
// llama.cpp's schema integration cases), errors that name the unsupported
// part, and outputs sampled under random logits validated by an external
// validator (python3-jsonschema).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_to_gbnf.h"
#include "grammar_test_util.h"
#include "sampling/sampler.h"

using oscar::grammar::json_schema_to_gbnf;
using oscar::grammar::testing::compile;
using oscar::grammar::testing::full_match;
using Json = nlohmann::ordered_json;

namespace {

void check_schema(const std::string& schema, const std::vector<std::string>& pass, const std::vector<std::string>& fail) {
  const std::string gbnf = json_schema_to_gbnf(Json::parse(schema));
  auto g = compile(gbnf);
  for (const auto& s : pass) EXPECT_TRUE(full_match(g, s)) << "should accept " << s << "\nschema " << schema << "\n" << gbnf;
  for (const auto& s : fail) EXPECT_FALSE(full_match(g, s)) << "should reject " << s << "\nschema " << schema << "\n" << gbnf;
}

TEST(JsonSchema, ConstFortyTwo) {
  // The issue's case: asked for the constant "42", nothing else may come out.
  check_schema(R"({"const": "42"})", {R"("42")", R"("42" )"}, {"42", R"("43")", R"("42"x)", ""});
}

TEST(JsonSchema, EmptySchemaIsAnyObject) {
  check_schema("{}", {"{}", R"({"foo": "bar"})"}, {"", "[]", "null", R"("")", "true"});
}

TEST(JsonSchema, Strings) {
  check_schema(R"({"type": "string"})", {R"("foo")", R"("")", R"("a\"b\\c\u00e9")"}, {"{}", R"("foo": "bar")", "\"a\nb\""});
  check_schema(R"({"type": "string", "minLength": 3})", {R"("foo")", R"("foobar")"}, {R"("")", R"("fo")"});
  check_schema(R"({"type": "string", "minLength": 1, "maxLength": 4})", {R"("f")", R"("barf")"}, {R"("")", R"("barfo")"});
  check_schema(R"({"type": "string", "pattern": "^[a-z]+@(x|yz)\\.com$"})", {R"("ab@x.com")", R"("q@yz.com")"},
               {R"("ab@y.com")", R"("@x.com")", R"("ab@x.comm")"});
  check_schema(R"({"type": "string", "pattern": "ab?c{2}"})", {R"("acc")", R"("xxabccyy")"}, {R"("abc")"});
  check_schema(R"({"type": "string", "pattern": "^\\d{3}-\\w+$"})", {R"("123-ab_9")"}, {R"("12-ab")", R"("123-")"});
}

TEST(JsonSchema, Formats) {
  check_schema(R"({"items": [{"format": "date"}, {"format": "uuid"}, {"format": "time"}, {"format": "date-time"}]})",
               {R"(["2012-04-23", "12345678-1234-1234-1234-1234567890ab", "18:25:43.511Z", "2012-04-23T18:25:43.511Z"])"},
               {R"(["foo", "bar"])", R"(["12345678-1234-1234-1234-1234567890ab"])", R"(["2012-13-23", "12345678-1234-1234-1234-1234567890ab", "18:25:43Z", "2012-04-23T18:25:43Z"])"});
}

TEST(JsonSchema, Integers) {
  check_schema(R"({"type": "integer"})", {"0", "-12", "1234567890"}, {"01", "1.5", "-", "1e3"});
  check_schema(R"({"type": "integer", "minimum": 17, "maximum": 342})", {"17", "99", "100", "299", "342"},
               {"16", "343", "1000", "0", "-17", "017"});
  check_schema(R"({"type": "integer", "minimum": -120, "maximum": -7})", {"-120", "-7", "-99", "-10"},
               {"-6", "-121", "0", "7", "-0"});
  check_schema(R"({"type": "integer", "exclusiveMinimum": 0})", {"1", "9", "10", "12345"}, {"0", "-1"});
  check_schema(R"({"type": "integer", "maximum": 5})", {"5", "0", "-1000"}, {"6", "10"});
  check_schema(R"({"type": "integer", "minimum": 1000})", {"1000", "9999", "10000", "123456789"}, {"999", "0", "-1000"});
}

TEST(JsonSchema, NumbersWithBounds) {
  check_schema(R"({"type": "number", "minimum": -5, "maximum": 5})", {"0", "-5", "5", "4.999", "-4.5", "5.000", "-0.5"},
               {"5.1", "-5.01", "6", "-6", "1e3"});
  check_schema(R"({"type": "number", "minimum": 0})", {"0", "0.5", "100.25"}, {"-0.5", "-1"});
  check_schema(R"({"type": "number"})", {"0", "-1.5e10", "3.25E-3"}, {"+1", ".5", "1."});
}

TEST(JsonSchema, ObjectsRequiredOptionalAdditional) {
  const char* s = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
                     "required": ["b"], "additionalProperties": false})";
  check_schema(s, {R"({"b": "x"})", R"({"a": 1, "b": "x"})", R"({"a": 1, "b": "x", "c": true})", R"({"b": "x", "c": false})"},
               {"{}", R"({"a": 1})", R"({"b": "x", "d": 1})", R"({"b": "x",})", R"({"c": true, "b": "x"})"});
  check_schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "number"}})",
               {"{}", R"({"a": 1})", R"({"a": 1, "z": 2.5})", R"({"z": 2.5, "y": 1})"}, {R"({"z": "s"})"});
  check_schema(R"({"type": "object", "properties": {}})", {"{}"}, {R"({"a": 1})"});
}

TEST(JsonSchema, ArraysAndTuples) {
  check_schema(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2})",
               {"[true]", "[true, false]"}, {"[]", "[true, true, true]", "[1]"});
  check_schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false})",
               {R"([1, "a"])"}, {"[1]", R"([1, "a", 2])", R"(["a", 1])"});
  check_schema(R"({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "maxItems": 3})",
               {"[1]", R"([1, "a", "b"])"}, {R"([1, "a", "b", "c"])", R"([1, 2])"});
  check_schema(R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"});
}

TEST(JsonSchema, CompositionRefsNullable) {
  check_schema(R"({"anyOf": [{"type": "integer"}, {"type": "null"}]})", {"1", "null"}, {R"("x")"});
  check_schema(R"({"type": ["string", "null"]})", {R"("x")", "null"}, {"1"});
  check_schema(R"({"type": "integer", "nullable": true})", {"1", "null"}, {R"("x")"});
  check_schema(R"({"enum": ["red", 1, null, {"a": [true]}]})", {R"("red")", "1", "null", R"({"a":[true]})"}, {R"("blue")", "2"});
  check_schema(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"b": {"const": 2}}, "required": ["b"]}]})",
               {R"({"a": 1, "b": 2})"}, {R"({"a": 1})", R"({"b": 2})"});
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
                          "$ref": "#/$defs/node"})";
  check_schema(tree, {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3}]})"}, {R"({"kids": []})", R"({"v": 1, "kids": [{}]})"});
}

void expect_schema_error(const std::string& schema, const std::string& what) {
  try {
    json_schema_to_gbnf(Json::parse(schema));
    ADD_FAILURE() << "converted but should not: " << schema;
  } catch (const oscar::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(JsonSchema, UnsupportedOrInvalidSchemasNameThePart) {
  expect_schema_error(R"({"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 3}}})", "#/properties/a: unsupported keyword 'multipleOf'");
  expect_schema_error(R"({"not": {"type": "string"}})", "unsupported keyword 'not'");
  expect_schema_error(R"({"type": "strin"})", "unknown type 'strin'");
  expect_schema_error(R"({"type": "string", "format": "email"})", "format 'email' is not supported");
  expect_schema_error(R"({"$ref": "http://example.com/s.json"})", "only local $ref");
  expect_schema_error(R"({"$ref": "#/$defs/missing"})", "does not resolve");
  expect_schema_error(R"({"type": "string", "pattern": "(?=a)b"})", "lookaround");
  expect_schema_error(R"({"type": "integer", "minimum": 5, "maximum": 1})", "no integer satisfies");
  expect_schema_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "required property 'b'");
  expect_schema_error(R"({"type": "array", "minItems": -1})", "'minItems' must be a non-negative integer");
  expect_schema_error("false", "matches nothing");
  expect_schema_error("[1]", "must be an object or a boolean");
}

TEST(JsonSchema, JsonObjectGrammar) {
  auto g = compile(oscar::grammar::json_object_gbnf());
  EXPECT_TRUE(full_match(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_FALSE(full_match(g, "[1]"));
  EXPECT_FALSE(full_match(g, R"({"a": })"));
}

// --- sampled outputs validate ---------------------------------------------

// Every byte as a token, plus random multi-character pieces of JSON-ish text.
std::vector<std::string> json_vocab(uint32_t seed) {
  std::vector<std::string> v = {""};  // id 0: EOS
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, (char)b));
  const std::vector<std::string> atoms = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "b", "x", "0", "1",
                                          "9", "-", ".", "e", "true", "null", "\\", "\xC3\xA9", "T", "Z", "@"};
  std::mt19937 rng(seed);
  while (v.size() < 3000) {
    std::string s;
    const int n = 2 + (int)(rng() % 4);
    for (int i = 0; i < n; ++i) s += atoms[rng() % atoms.size()];
    v.push_back(s);
  }
  return v;
}

std::string sample_text(const std::shared_ptr<const oscar::grammar::Grammar>& g,
                        const std::shared_ptr<const oscar::grammar::TokenTrie>& trie, const std::vector<std::string>& vocab,
                        uint32_t seed, bool& ended) {
  oscar::sampling::SamplerSettings s;
  s.grammar = g;
  s.seed = seed;
  s.temperature = 1.0f;
  oscar::sampling::Sampler smp(s, trie);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> logits(vocab.size());
  std::string out;
  ended = false;
  for (int i = 0; i < 4000; ++i) {
    for (auto& x : logits) x = d(rng);
    const int32_t t = smp.sample(logits.data(), (int)logits.size());
    smp.accept(t);
    if (t == 0) {
      ended = true;
      break;
    }
    out += vocab[(size_t)t];
  }
  return out;
}

TEST(JsonSchema, SampledOutputsValidateWithJsonschema) {
  const std::vector<std::string> schemas = {
      R"({"const": "42"})",
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
          "age": {"type": "integer", "minimum": 0, "maximum": 150},
          "email": {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.com$"},
          "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 4},
          "active": {"type": "boolean"}}, "required": ["name", "age"], "additionalProperties": false})",
      R"({"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "number", "minimum": -5, "maximum": 5},
          "y": {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 100}}, "required": ["x", "y"]}},
          "type": "object", "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pt"}]},
          "c": {"type": ["string", "null"], "maxLength": 5}}, "required": ["a", "b", "c"]})",
      R"({"type": "array", "prefixItems": [{"type": "string", "format": "date"}, {"type": "string", "format": "uuid"},
          {"type": "string", "format": "date-time"}], "items": {"type": "integer"}, "maxItems": 5})",
      R"({"allOf": [{"type": "object", "properties": {"kind": {"enum": ["x", 1, null, true]}}, "required": ["kind"]},
          {"properties": {"n": {"type": "integer", "minimum": 10}}}]})",
      R"({"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 4}, "minItems": 2, "maxItems": 3})",
      R"({"type": "array", "items": {"type": "integer", "minimum": -120, "maximum": -7}, "minItems": 1, "maxItems": 6})",
      R"({"type": "object", "additionalProperties": {"type": "number"}})",
      R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 1}}, "required": ["v"]}}, "$ref": "#/$defs/node"})",
      R"({"type": "object", "properties": {"q": {"type": "string", "pattern": "^(ab|c)+\\d?$"}, "n": {"type": "null"}}, "required": ["q", "n"]})",
  };
  const auto vocab = json_vocab(11);
  auto trie = std::make_shared<const oscar::grammar::TokenTrie>(vocab, std::vector<int32_t>{0});
  Json cases = Json::array();
  for (const auto& schema : schemas) {
    auto g = compile(json_schema_to_gbnf(Json::parse(schema)));
    Json outputs = Json::array();
    for (uint32_t seed = 0; seed < 15; ++seed) {
      bool ended = false;
      const std::string text = sample_text(g, trie, vocab, seed, ended);
      EXPECT_TRUE(ended) << "no end of generation for " << schema << " seed " << seed << ": " << text.substr(0, 200);
      outputs.push_back(text);
    }
    cases.push_back({{"schema", Json::parse(schema)}, {"outputs", outputs}});
  }
  const std::string path = ::testing::TempDir() + "/grammar_json_outputs.json";
  std::ofstream(path) << cases.dump();
  const std::string cmd = std::string(OSCAR_PYTHON) + " " + OSCAR_SOURCE_DIR + "/tests/grammar/validate_json.py " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "python3-jsonschema rejected outputs (see above); is it installed? "
                                            "scripts/setup-deps.sh installs it";
}

}  // namespace
