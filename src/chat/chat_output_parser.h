// The full output parser of a chat turn: reasoning split first, then tool
// calls in the answer part. Picks the formats from the chat template.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning_parser.h"
#include "chat/tool_call_parser.h"

namespace oscar::chat {

struct ChatOutputFormat {
  std::optional<ReasoningFormat> reasoning;  // none: no reasoning split
  std::optional<ToolCallFormat> tools;       // none: no tool-call parsing
};

// Guesses the formats a template's model uses from the markers its source
// mentions (Gemma 4 channel/tool tokens, <think>, <tool_call>).
ChatOutputFormat detect_output_format(std::string_view template_source);

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class ChatOutputParser {
 public:
  // `prompt`: the rendered prompt, to see whether it opened a reasoning block.
  ChatOutputParser(const ChatOutputFormat& fmt, std::string_view prompt = {});
  ChatDelta feed(std::string_view piece);
  ChatDelta finish();

 private:
  void route(ReasoningDelta r, bool final, ChatDelta& out);

  std::optional<ReasoningParser> reasoning_;
  std::optional<ToolCallParser> tools_;
};

}  // namespace oscar::chat
