// The request JSON depth limit: enforced while parsing, for bodies and for
// JSON embedded in string fields, at exactly kMaxRequestJsonDepth.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/request_json.h"
#include "server/request_parse.h"

using namespace oscar::server;

namespace {

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace

TEST(RequestJson, DepthUpToTheLimitParses) {
  const auto j = parse_request_json(nested_arrays(kMaxRequestJsonDepth));
  EXPECT_TRUE(j.is_array());
  // The body's own object counts as the first level.
  EXPECT_EQ(status_of([] { parse_body("{\"a\":" + nested_arrays(kMaxRequestJsonDepth - 1) + "}"); }), 0);
}

TEST(RequestJson, OneLevelDeeperIsA400) {
  EXPECT_EQ(status_of([] { parse_request_json(nested_arrays(kMaxRequestJsonDepth + 1)); }), 400);
  EXPECT_EQ(status_of([] { parse_body("{\"a\":" + nested_arrays(kMaxRequestJsonDepth) + "}"); }), 400);
}

TEST(RequestJson, HugeDepthIsRejectedWithoutRecursion) {
  // 1,000,000 levels: far past what a recursive parse or copy survives.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  try {
    parse_request_json(deep);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("deeper than 128"), std::string::npos) << e.what();
  }
}

TEST(RequestJson, MalformedBodyIsStillA400) {
  EXPECT_EQ(status_of([] { parse_request_json("{\"a\":"); }), 400);
  EXPECT_EQ(status_of([] { parse_request_json("\"\xff\""); }), 400);
}

TEST(RequestJson, EmbeddedJsonTextIsDepthLimitedToo) {
  EXPECT_FALSE(try_parse_embedded_json("not json", "x").has_value());
  EXPECT_EQ(try_parse_embedded_json("{\"a\":[1]}", "x")->at("a").size(), 1u);
  EXPECT_EQ(status_of([] { try_parse_embedded_json(nested_arrays(200000), "args"); }), 400);
}

TEST(RequestJson, DeepToolCallArgumentsTextIsA400) {
  const std::string body =
      R"({"messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":")" +
      nested_arrays(100000) + R"("}}]}]})";
  EXPECT_EQ(status_of([&] { parse_chat_request(parse_body(body)); }), 400);
}
