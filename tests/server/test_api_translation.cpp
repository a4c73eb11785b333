// Anthropic Messages and OpenAI Responses requests as the chat requests they
// become: roles, blocks/items, tools, tool results, reasoning history, and
// the fields that are refused.
#include <gtest/gtest.h>

#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/responses_request.h"

using namespace oscar::server;

namespace {

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 200;
}

TEST(AnthropicTranslation, ConversationWithThinkingToolUseAndResults) {
  const Json body = Json::parse(R"({
    "model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
    "stop_sequences": ["END"], "temperature": 0.5, "top_k": 3, "metadata": {"user_id": "u"},
    "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "any"}, "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "calling"}, {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"},
        {"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": [{"type": "text", "text": "boom"}]},
        {"type": "text", "text": "go on"}]}]})");
  const Json chat = anthropic_to_chat_body(body, false);
  const Json want_messages = Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "a\nb"},
    {"role": "assistant", "content": "calling", "reasoning_content": "hmm",
     "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
    {"role": "tool", "tool_call_id": "t1", "content": "42"},
    {"role": "tool", "tool_call_id": "t1", "content": "Error: boom"},
    {"role": "user", "content": "go on"}])");
  EXPECT_EQ(chat["messages"], want_messages);
  EXPECT_EQ(chat["tools"], Json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d",
                                         "parameters": {"type": "object"}}}])"));
  EXPECT_EQ(chat["tool_choice"], "required");
  EXPECT_EQ(chat["stop"], Json::array({"END"}));
  EXPECT_EQ(chat["max_tokens"], 64);
  EXPECT_EQ(chat["chat_template_kwargs"], Json({{"enable_thinking", true}}));
  const AnthropicRequest r = parse_anthropic_request(body, GenParams{}, 7);
  EXPECT_EQ(r.params.n_predict, 64);
  EXPECT_EQ(r.params.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.5f);
  EXPECT_TRUE(r.chat.parse_tool_calls);
}

TEST(AnthropicTranslation, RefusedInput) {
  const Json ok = {{"max_tokens", 8}, {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}};
  EXPECT_EQ(status_of([&] { anthropic_to_chat_body(ok, false); }), 200);
  auto with = [&](const char* key, Json v) {
    Json b = ok;
    b[key] = std::move(v);
    return status_of([&] { anthropic_to_chat_body(b, false); });
  };
  EXPECT_EQ(with("max_tokens", nullptr), 400);
  EXPECT_EQ(with("max_tokens", 1.5), 400);
  EXPECT_EQ(with("stop_sequences", Json::array({""})), 400);
  EXPECT_EQ(with("thinking", {{"type", "maybe"}}), 400);
  EXPECT_EQ(with("tools", Json::array({{{"type", "bash_20250124"}, {"name", "bash"}}})), 400);
  EXPECT_EQ(with("messages", Json::parse(R"([{"role": "user", "content": [{"type": "document"}]}])")), 400);
  EXPECT_EQ(with("messages", Json::parse(R"([{"role": "assistant", "content": [{"type": "tool_use", "id": "a",
    "name": "f", "input": {}}, {"type": "tool_use", "id": "a", "name": "f", "input": {}}]}])")), 400);
  EXPECT_EQ(with("messages", Json::parse(R"([{"role": "assistant", "content": [{"type": "tool_use", "id": "a",
    "name": "f", "input": []}]}])")), 400);
  EXPECT_EQ(with("messages", Json::parse(R"([{"role": "user", "content": [{"type": "tool_result",
    "tool_use_id": "a", "is_error": "yes"}]}])")), 400);
  // count_tokens needs no max_tokens.
  Json count = ok;
  count.erase("max_tokens");
  EXPECT_EQ(status_of([&] { anthropic_to_chat_body(count, true); }), 200);
}

TEST(ResponsesTranslation, ItemsBecomeChatMessages) {
  const Json body = Json::parse(R"({
    "instructions": "sys", "max_output_tokens": 32, "top_p": 0.5,
    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "f"},
    "input": [
      {"role": "developer", "content": "dev"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
      {"type": "reasoning", "id": "rs", "summary": [], "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},
      {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "one"},
      {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]})");
  const Json chat = responses_to_chat_body(body);
  const Json want = Json::parse(R"([
    {"role": "system", "content": "sys"},
    {"role": "system", "content": "dev"},
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "", "reasoning_content": "think", "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
      {"id": "c2", "type": "function", "function": {"name": "f", "arguments": {}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "one"},
    {"role": "tool", "tool_call_id": "c2", "content": "two"},
    {"role": "assistant", "content": "done"}])");
  EXPECT_EQ(chat["messages"], want);
  EXPECT_EQ(chat["max_tokens"], 32);
  EXPECT_EQ(chat["tool_choice"], "required");
  const ResponsesRequest r = parse_responses_request(body, GenParams{}, 1);
  EXPECT_EQ(r.echo["instructions"], "sys");
  EXPECT_EQ(r.echo["max_output_tokens"], 32);
  EXPECT_EQ(r.params.n_predict, 32);
}

TEST(ResponsesTranslation, StatelessAndRefusedInput) {
  const Json ok = {{"input", "hi"}};
  auto with = [&](const char* key, Json v) {
    Json b = ok;
    b[key] = std::move(v);
    return status_of([&] { responses_to_chat_body(b); });
  };
  EXPECT_EQ(status_of([&] { responses_to_chat_body(ok); }), 200);
  EXPECT_EQ(with("previous_response_id", "resp_1"), 400);
  EXPECT_EQ(with("conversation", "conv_1"), 400);
  EXPECT_EQ(with("background", true), 400);
  EXPECT_EQ(with("store", "yes"), 400);
  EXPECT_EQ(with("input", Json::array()), 400);
  EXPECT_EQ(with("input", Json::parse(R"([{"type": "item_reference", "id": "x"}])")), 400);
  EXPECT_EQ(with("input", Json::parse(R"([{"type": "function_call", "call_id": "a", "name": "f",
    "arguments": "[1]"}])")), 400);
  EXPECT_EQ(with("tools", Json::parse(R"([{"type": "file_search"}])")), 400);
  EXPECT_EQ(with("tool_choice", 3), 400);
}

}  // namespace
