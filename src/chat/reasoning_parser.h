// Splits a thinking model's output into reasoning and answer as it streams:
// `<think>…</think>` (Qwen3, QwQ, DeepSeek-R1; also when the chat template
// already opened the think block in the prompt) and Gemma 4's thought
// channel (`<|channel>thought … <channel|>`). Text that might be the start
// of a marker is held back until the next piece decides, so a marker is
// never emitted, in part or whole.
#pragma once

#include <string>
#include <string_view>

namespace oscar::chat {

struct ReasoningFormat {
  std::string start;  // opens a reasoning block
  std::string end;    // closes it

  static ReasoningFormat think() { return {"<think>", "</think>"}; }
  static ReasoningFormat gemma4() { return {"<|channel>thought", "<channel|>"}; }
};

// True when `prompt` ends inside an open reasoning block (the template wrote
// the start marker for the model, as QwQ / DeepSeek-R1 / Qwen3.5 do), so the
// model's output begins as reasoning.
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningFormat& fmt);

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  // starts_in_reasoning: the prompt opened the block (see
  // prompt_opens_reasoning). Reasoning is reported without the markers and
  // without surrounding whitespace; the answer without the whitespace that
  // follows the end marker.
  explicit ReasoningParser(ReasoningFormat fmt, bool starts_in_reasoning = false);

  // Feeds one piece of generated text; returns what can be emitted now.
  ReasoningDelta feed(std::string_view piece);
  // End of generation: emits everything still held back.
  ReasoningDelta finish();

  bool in_reasoning() const { return in_reasoning_; }

 private:
  void process(bool final, ReasoningDelta& out);
  void emit_reasoning(std::string_view text, bool closing, ReasoningDelta& out);
  void emit_content(std::string_view text, ReasoningDelta& out);

  ReasoningFormat fmt_;
  std::string buf_;
  bool in_reasoning_;
  bool may_reopen_;             // a start marker right at the beginning is redundant
  bool skip_reasoning_space_;   // drop whitespace at the start of a block
  bool skip_content_space_ = false;  // drop whitespace after the end marker
  std::string pending_space_;   // trailing reasoning whitespace, held in case the block ends
};

}  // namespace oscar::chat
