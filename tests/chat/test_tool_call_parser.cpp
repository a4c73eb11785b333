// Tool-call extraction over streams cut at every possible position.
#include <gtest/gtest.h>

#include <random>

#include "chat/chat_output_parser.h"
#include "chat/tool_call_parser.h"

namespace oscar::chat {
namespace {

using ojson = nlohmann::ordered_json;

struct Result {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};

Result run(const ChatOutputFormat& fmt, const std::string& prompt, const std::vector<std::string>& pieces) {
  ChatOutputParser p(fmt, prompt);
  Result r;
  auto add = [&](ChatDelta d) {
    r.reasoning += d.reasoning;
    r.content += d.content;
    for (auto& c : d.tool_calls) r.calls.push_back(std::move(c));
  };
  for (const auto& piece : pieces) add(p.feed(piece));
  add(p.finish());
  return r;
}

void expect_same(const Result& got, const Result& want, const std::string& how) {
  ASSERT_EQ(got.reasoning, want.reasoning) << how;
  ASSERT_EQ(got.content, want.content) << how;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << how;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    ASSERT_EQ(got.calls[i].name, want.calls[i].name) << how;
    ASSERT_EQ(got.calls[i].arguments.dump(), want.calls[i].arguments.dump()) << how;
  }
}

void check_all_splits(const ChatOutputFormat& fmt, const std::string& prompt, const std::string& text,
                      const Result& want) {
  expect_same(run(fmt, prompt, {text}), want, "whole");
  for (size_t i = 0; i <= text.size(); ++i)
    expect_same(run(fmt, prompt, {text.substr(0, i), text.substr(i)}), want, "split@" + std::to_string(i));
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  expect_same(run(fmt, prompt, bytes), want, "bytewise");
  std::mt19937 rng(7);
  for (int k = 0; k < 50; ++k) {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = 1 + rng() % 8;
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    expect_same(run(fmt, prompt, pieces), want, "random");
  }
}

ToolCall call(const std::string& name, const char* args) { return {name, ojson::parse(args)}; }

const ChatOutputFormat kHermes{std::nullopt, ToolCallFormat::Hermes};
const ChatOutputFormat kGemma{std::nullopt, ToolCallFormat::Gemma4};

TEST(ToolCallParser, HermesSingleCall) {
  check_all_splits(kHermes, "",
                   "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                   {"", "I'll check.\n", {call("get_weather", R"({"city": "Paris"})")}});
}

TEST(ToolCallParser, HermesTwoCallsAndStringArguments) {
  check_all_splits(kHermes, "",
                   "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2], \"y\": {\"z\": null}}}\n</tool_call>\n"
                   "<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"k\\\": \\\"é\\\"}\"}</tool_call>",
                   {"", "\n", {call("a", R"({"x": [1, 2], "y": {"z": null}})"), call("b", R"({"k": "é"})")}});
}

TEST(ToolCallParser, Qwen35FunctionTags) {
  check_all_splits(kHermes, "",
                   "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
                   "</parameter>\n</function>\n</tool_call>",
                   {"", "", {call("get_weather", R"({"city": "Paris", "days": 3})")}});
}

TEST(ToolCallParser, Gemma4Calls) {
  check_all_splits(kGemma, "",
                   "<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,metric:true,ratio:0.5,"
                   "opts:{unit:<|\"|>c<|\"|>},tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]}<tool_call|>"
                   "<|tool_call>call:noop{}<tool_call|>",
                   {"",
                    "",
                    {call("get_weather", R"({"city": "Paris, FR", "days": 3, "metric": true, "ratio": 0.5,
                                             "opts": {"unit": "c"}, "tags": ["a", "b"]})"),
                     call("noop", "{}")}});
}

TEST(ToolCallParser, MalformedAndUnterminatedCallsStayContent) {
  check_all_splits(kHermes, "", "x<tool_call>{not json}</tool_call>y", {"", "x<tool_call>{not json}</tool_call>y", {}});
  check_all_splits(kHermes, "", "x<tool_call>{\"name\": \"a\"", {"", "x<tool_call>{\"name\": \"a\"", {}});
  check_all_splits(kGemma, "", "<|tool_call>call:f{a:<|\"|>x}<tool_call|>", {"", "<|tool_call>call:f{a:<|\"|>x}<tool_call|>", {}});
  check_all_splits(kHermes, "", "plain text with <tool and </tool_call>", {"", "plain text with <tool and </tool_call>", {}});
}

TEST(ToolCallParser, ReasoningThenToolCall) {
  // Qwen3: the model thinks, then calls a tool; a call inside the reasoning
  // is reasoning, not a call.
  const ChatOutputFormat fmt{ReasoningFormat::think(), ToolCallFormat::Hermes};
  check_all_splits(fmt, "<|im_start|>assistant\n",
                   "<think>\nNeed weather; not <tool_call>x</tool_call> yet.\n</think>\n\n"
                   "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
                   {"Need weather; not <tool_call>x</tool_call> yet.", "", {call("get_weather", R"({"city": "Paris"})")}});
}

TEST(ToolCallParser, Gemma4ThinkingThenCall) {
  const ChatOutputFormat fmt{ReasoningFormat::gemma4(), ToolCallFormat::Gemma4};
  check_all_splits(fmt, "<|turn>model\n",
                   "<|channel>thought\nI should call it.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
                   {"I should call it.", "", {call("get_weather", R"({"city": "Paris"})")}});
}

TEST(ToolCallParser, DetectFormatFromTemplate) {
  ChatOutputFormat f = detect_output_format("{{ '<|turn>model\\n<|channel>thought\\n<channel|>' }} <|tool_call>");
  ASSERT_TRUE(f.reasoning && f.tools);
  EXPECT_EQ(f.reasoning->start, "<|channel>thought");
  EXPECT_EQ(*f.tools, ToolCallFormat::Gemma4);
  f = detect_output_format("<think> <tool_call>");
  EXPECT_EQ(f.reasoning->start, "<think>");
  EXPECT_EQ(*f.tools, ToolCallFormat::Hermes);
  f = detect_output_format("{{ bos_token }}<start_of_turn>");
  EXPECT_FALSE(f.reasoning);
  EXPECT_FALSE(f.tools);
}

}  // namespace
}  // namespace oscar::chat
