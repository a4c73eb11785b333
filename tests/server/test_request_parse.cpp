// Request validation: the fields read, their types and ranges, and the 400s
// for everything else.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/request_parse.h"

using namespace oscar::server;

namespace {

GenParams parse(const std::string& body, Api api = Api::Chat) {
  return parse_gen_params(parse_body(body), GenParams{}, api, 77);
}

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

}  // namespace

TEST(RequestParse, BodyMustBeAJsonObject) {
  EXPECT_EQ(status_of([] { parse_body("{"); }), 400);
  EXPECT_EQ(status_of([] { parse_body("[1]"); }), 400);
  EXPECT_EQ(status_of([] { parse_body(""); }), 400);
  EXPECT_EQ(status_of([] { parse_body("{\"a\": \"\xff\"}"); }), 400);  // invalid UTF-8
  EXPECT_EQ(status_of([] { parse_body("{\"a\": \"\xc3\x28\"}"); }), 400);
  EXPECT_EQ(status_of([] { parse_body("{\"a\": 1}"); }), 0);
}

TEST(RequestParse, SamplingFields) {
  const GenParams p = parse(R"({"temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.1, "seed": 42,
                                "presence_penalty": 0.5, "frequency_penalty": -0.5, "max_tokens": 12,
                                "stop": ["a", "b"], "unknown": {"x": 1}})");
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.9f);
  EXPECT_EQ(p.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.1f);
  EXPECT_EQ(p.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(p.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(p.n_predict, 12);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"a", "b"}));
}

TEST(RequestParse, SeedDefaultsToTheGivenOne) { EXPECT_EQ(parse("{}").sampling.seed, 77u); }

TEST(RequestParse, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(parse(R"({"max_tokens": 5, "max_completion_tokens": 9})").n_predict, 9);
  EXPECT_EQ(parse(R"({"n_predict": 3})", Api::Native).n_predict, 3);
  EXPECT_EQ(parse(R"({"n_predict": -1})", Api::Native).n_predict, -1);
}

TEST(RequestParse, WrongTypesAndRanges) {
  for (const char* body : {R"({"temperature": "hot"})", R"({"temperature": -1})", R"({"top_p": 2})",
                           R"({"top_k": 1.5})", R"({"max_tokens": -3})", R"({"max_tokens": "9"})",
                           R"({"stop": 5})", R"({"stop": [1]})", R"({"logprobs": 1})",
                           R"({"top_logprobs": 3})", R"({"logprobs": true, "top_logprobs": 50})",
                           R"({"logit_bias": 3})", R"({"logit_bias": {"abc": 1}})", R"({"seed": "x"})"})
    EXPECT_EQ(status_of([&] { parse(body); }), 400) << body;
}

TEST(RequestParse, LogprobsPerApi) {
  GenParams c = parse(R"({"logprobs": true, "top_logprobs": 2})");
  EXPECT_TRUE(c.logprobs);
  EXPECT_EQ(c.n_probs, 2);
  GenParams o = parse(R"({"logprobs": 3})", Api::Completions);
  EXPECT_TRUE(o.logprobs);
  EXPECT_EQ(o.n_probs, 3);
  GenParams n = parse(R"({"n_probs": 4})", Api::Native);
  EXPECT_EQ(n.n_probs, 4);
}

TEST(RequestParse, LogitBiasBothForms) {
  const GenParams a = parse(R"({"logit_bias": {"12": -100, "5": 2.5}})");
  ASSERT_EQ(a.sampling.logit_bias.size(), 2u);
  const GenParams b = parse(R"({"logit_bias": [[12, -100], [5, false]]})");
  ASSERT_EQ(b.sampling.logit_bias.size(), 2u);
  EXPECT_TRUE(std::isinf(b.sampling.logit_bias[1].second));
}

TEST(RequestParse, Messages) {
  const Json body = parse_body(R"({"messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}]})");
  const ChatRequest r = parse_chat_request(body);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
}

TEST(RequestParse, BadMessages) {
  for (const char* body :
       {R"({})", R"({"messages": []})", R"({"messages": "hi"})", R"({"messages": [1]})",
        R"({"messages": [{"content": "x"}]})", R"({"messages": [{"role": "bot", "content": "x"}]})",
        R"({"messages": [{"role": "user"}]})", R"({"messages": [{"role": "user", "content": 5}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
        R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})",
        R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
        R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "maybe"})",
        R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})"})
    EXPECT_EQ(status_of([&] { parse_chat_request(parse_body(body)); }), 400) << body;
}

TEST(RequestParse, ToolChoiceNoneDropsTools) {
  const char* tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  const ChatRequest a = parse_chat_request(parse_body(std::string(R"({"messages": [{"role": "user", "content": "x"}], )") + tools + "}"));
  EXPECT_TRUE(a.parse_tool_calls);
  EXPECT_TRUE(a.tools.is_array());
  const ChatRequest b = parse_chat_request(parse_body(
      std::string(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none", )") + tools + "}"));
  EXPECT_FALSE(b.parse_tool_calls);
  EXPECT_TRUE(b.tools.is_null());
}

TEST(RequestParse, Prompts) {
  EXPECT_EQ(parse_prompt(parse_body(R"({"prompt": "hi"})"), 10).text, "hi");
  EXPECT_EQ(parse_prompt(parse_body(R"({"prompt": ["hi"]})"), 10).text, "hi");
  const PromptInput t = parse_prompt(parse_body(R"({"prompt": [1, 2, 9]})"), 10);
  EXPECT_TRUE(t.is_tokens);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{1, 2, 9}));
  for (const char* body : {R"({})", R"({"prompt": 3})", R"({"prompt": [1, 10]})", R"({"prompt": [-1]})",
                           R"({"prompt": ["a", "b"]})", R"({"prompt": [1.5]})"})
    EXPECT_EQ(status_of([&] { parse_prompt(parse_body(body), 10); }), 400) << body;
}
