#include "chat/chat_output_parser.h"

namespace oscar::chat {

ChatOutputFormat detect_output_format(std::string_view src) {
  ChatOutputFormat f;
  if (src.find("<|channel>") != std::string_view::npos)
    f.reasoning = ReasoningFormat::gemma4();
  else if (src.find("<think>") != std::string_view::npos || src.find("</think>") != std::string_view::npos)
    f.reasoning = ReasoningFormat::think();
  if (src.find("<|tool_call>") != std::string_view::npos)
    f.tools = ToolCallFormat::Gemma4;
  else if (src.find("<tool_call>") != std::string_view::npos)
    f.tools = ToolCallFormat::Hermes;
  return f;
}

ChatOutputParser::ChatOutputParser(const ChatOutputFormat& fmt, std::string_view prompt) {
  if (fmt.reasoning) reasoning_.emplace(*fmt.reasoning, prompt_opens_reasoning(prompt, *fmt.reasoning));
  if (fmt.tools) tools_.emplace(*fmt.tools);
}

void ChatOutputParser::route(ReasoningDelta r, bool final, ChatDelta& out) {
  out.reasoning += r.reasoning;
  if (!tools_) {
    out.content += r.content;
    return;
  }
  ToolCallDelta t = tools_->feed(r.content);
  if (final) {
    ToolCallDelta f = tools_->finish();
    t.content += f.content;
    for (auto& c : f.calls) t.calls.push_back(std::move(c));
  }
  out.content += t.content;
  for (auto& c : t.calls) out.tool_calls.push_back(std::move(c));
}

ChatDelta ChatOutputParser::feed(std::string_view piece) {
  ChatDelta out;
  if (reasoning_)
    route(reasoning_->feed(piece), false, out);
  else
    route(ReasoningDelta{{}, std::string(piece)}, false, out);
  return out;
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta out;
  route(reasoning_ ? reasoning_->finish() : ReasoningDelta{}, true, out);
  return out;
}

}  // namespace oscar::chat
