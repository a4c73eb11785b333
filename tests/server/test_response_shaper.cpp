// Response shaping: the chat shaper turns a token stream holding reasoning
// and a Hermes tool call into OpenAI's reasoning_content and tool_calls,
// streamed and whole alike; completions and native shapes carry usage.
#include <gtest/gtest.h>

#include "server/response_shaper.h"
#include "server/shaper_test_util.h"

using namespace oscar::server;
using oscar::chat::ChatOutputFormat;
using oscar::chat::ReasoningFormat;
using oscar::chat::ToolCallFormat;

namespace {

std::vector<Event> events_for(const std::vector<std::string>& pieces, FinishReason reason, int n_prompt) {
  std::vector<Event> out;
  for (const auto& p : pieces) {
    Event e;
    TokenOut t;
    t.text = p;
    e.tokens.push_back(t);
    out.push_back(e);
  }
  Event last;
  Done d;
  d.reason = reason;
  d.timings.n_prompt = n_prompt;
  d.timings.n_predicted = (int)pieces.size();
  last.done = d;
  out.push_back(last);
  return out;
}

ShaperInfo info() { return basic_info("id-1", "m", 1000, true, false, 0); }

}  // namespace

TEST(ChatShaper, ReasoningAndToolCallStreamedAndWhole) {
  ChatOutputFormat fmt;
  fmt.reasoning = ReasoningFormat::think();
  fmt.tools = ToolCallFormat::Hermes;
  const std::vector<std::string> pieces = {"<thi", "nk>plan it", "</think>", "Sure. ", "<tool_call>\n{\"name\": \"get",
                                           "_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool", "_call>"};
  auto shaper = make_chat_shaper(info(), fmt, "");
  std::string reasoning, content;
  Json streamed_calls = Json::array();
  Json finish;
  bool usage_seen = false;
  for (const Event& e : events_for(pieces, FinishReason::Stop, 11))
    for (const Json& c : shaper->chunks(e)) {
      EXPECT_EQ(c["object"], "chat.completion.chunk");
      if (c.contains("usage")) {
        usage_seen = true;
        EXPECT_EQ(c["usage"]["prompt_tokens"], 11);
        EXPECT_EQ(c["usage"]["completion_tokens"], (int)pieces.size());
        EXPECT_TRUE(c["choices"].empty());
        continue;
      }
      const Json& d = c["choices"][0]["delta"];
      if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
      if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const auto& tc : d["tool_calls"]) streamed_calls.push_back(tc);
      if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
  EXPECT_TRUE(usage_seen);
  EXPECT_EQ(reasoning, "plan it");
  EXPECT_EQ(content, "Sure. ");
  ASSERT_EQ(streamed_calls.size(), 1u);
  EXPECT_EQ(streamed_calls[0]["index"], 0);
  EXPECT_EQ(streamed_calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(streamed_calls[0]["function"]["arguments"].get<std::string>())["city"], "Paris");
  EXPECT_EQ(finish, "tool_calls");

  const Json whole = shaper->response();
  EXPECT_EQ(whole["object"], "chat.completion");
  const Json& msg = whole["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "plan it");
  EXPECT_EQ(msg["content"], "Sure. ");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(whole["usage"]["total_tokens"], 11 + (int)pieces.size());
}

TEST(ChatShaper, PlainAnswerLengthFinish) {
  auto shaper = make_chat_shaper(info(), ChatOutputFormat{}, "");
  for (const Event& e : events_for({"Hel", "lo"}, FinishReason::Length, 3)) shaper->chunks(e);
  const Json r = shaper->response();
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hello");
  EXPECT_FALSE(r["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST(CompletionsShaper, TextAndUsage) {
  auto shaper = make_completions_shaper(info());
  std::string text;
  for (const Event& e : events_for({"a", "b", "c"}, FinishReason::Stop, 2))
    for (const Json& c : shaper->chunks(e))
      if (!c["choices"].empty()) text += c["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "abc");
  const Json r = shaper->response();
  EXPECT_EQ(r["choices"][0]["text"], "abc");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
}

TEST(NativeShaper, StopTypes) {
  auto shaper = make_native_shaper(info(), Json::object());
  auto ev = events_for({"x"}, FinishReason::Stop, 1);
  ev.back().done->stop_word = "END";
  for (const Event& e : ev) shaper->chunks(e);
  const Json r = shaper->response();
  EXPECT_EQ(r["content"], "x");
  EXPECT_EQ(r["stop_type"], "word");
  EXPECT_EQ(r["stopping_word"], "END");
  EXPECT_EQ(r["tokens_predicted"], 1);
  EXPECT_FALSE(shaper->done_marker());
}
