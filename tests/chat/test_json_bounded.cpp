// Bounded JSON parsing of outside text (model output, request fields): deep
// nesting is refused while parsing, so nothing recursive ever sees it.
#include <gtest/gtest.h>

#include "chat/json_io.h"
#include "chat/tool_call_parser.h"

using namespace oscar::chat;

namespace {
std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }
}  // namespace

TEST(JsonBounded, ParsesUpToTheLimitAndRefusesDeeper) {
  EXPECT_FALSE(parse_json_bounded(nested(128)).is_discarded());
  EXPECT_TRUE(parse_json_bounded(nested(129)).is_discarded());
  EXPECT_TRUE(parse_json_bounded(nested(3), 2).is_discarded());
  EXPECT_TRUE(parse_json_bounded("{\"a\":").is_discarded());
  EXPECT_EQ(parse_json_bounded("{\"a\":[1,2]}").at("a").size(), 2u);
}

// A model that writes a tool call nested 100,000 deep: before, the parsed
// arguments were copied recursively and overflowed the stack.
TEST(JsonBounded, DeepToolCallFromAModelIsNotACrash) {
  ToolCall call;
  const std::string deep = nested(100000);
  EXPECT_FALSE(parse_hermes_call("{\"name\":\"f\",\"arguments\":" + deep + "}", &call));
  ToolCall call2;
  std::string quoted = "{\"name\":\"f\",\"arguments\":\"" + deep + "\"}";
  EXPECT_TRUE(parse_hermes_call(quoted, &call2));
  EXPECT_TRUE(call2.arguments.is_string());  // left as text, not parsed
  ToolCall call3;
  EXPECT_TRUE(parse_hermes_call("<function=f>\n<parameter=x>\n" + deep + "\n</parameter>\n</function>", &call3));
  EXPECT_TRUE(call3.arguments.at("x").is_string());
}
