// Extracts tool calls from a chat model's output as it streams:
//  - Hermes / Qwen3: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//    (and Qwen3.5's <tool_call><function=NAME><parameter=P>v</parameter>…)
//  - Gemma 4: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>
// Text outside calls is passed through as content; text that may be the
// start of a call marker is held back, so markers never leak into content.
// A call is reported once its end marker has arrived.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace oscar::chat {

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

enum class ToolCallFormat { Hermes, Gemma4 };

struct ToolCallDelta {
  std::string content;
  std::vector<ToolCall> calls;
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat fmt);

  ToolCallDelta feed(std::string_view piece);
  // End of generation: held-back text and an unterminated call are returned
  // as content (nothing the model wrote is dropped).
  ToolCallDelta finish();

 private:
  void process(bool final, ToolCallDelta& out);

  ToolCallFormat fmt_;
  std::string start_, end_;
  std::string buf_;
  bool in_call_ = false;
};

// Parses the body of one call (between the markers); false if malformed.
bool parse_hermes_call(std::string_view body, ToolCall* out);
bool parse_gemma4_call(std::string_view body, ToolCall* out);
// Gemma 4's argument notation ({k:<|"|>s<|"|>,n:[1,true]}) as JSON.
bool parse_gemma4_value(std::string_view text, size_t* pos, nlohmann::ordered_json* out, int depth = 0);

}  // namespace oscar::chat
